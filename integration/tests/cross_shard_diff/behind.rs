//! The generated SELECTs read through names (issue 38): as a view's query
//! (`CREATE VIEW` through pgshard and on the reference, then `SELECT *`
//! from the view, which pgshard routes and merges as the view's query) and
//! inside a SQL function (`SELECT` of a function that counts the
//! statement's rows, which pgshard must refuse when the statement reads
//! sharded tables: each shard would count its own rows). Judged as the
//! statements themselves are: the reference's answer exactly, or 0A000.

use super::generator::{Case, Category};

/// The statements that make the name, the case that reads through it, and
/// the statement that drops it.
pub struct Behind {
    pub create: String,
    pub case: Case,
    pub drop: String,
}

/// `case` read through a view named after `index`. A view does not pass
/// its ORDER BY on: the rows are compared as a multiset.
pub fn view(index: usize, case: &Case) -> Behind {
    let name = format!("diff_view_{index}");
    Behind {
        create: format!("CREATE VIEW {name} AS {}", case.sql),
        case: Case::new(Category::View, format!("SELECT * FROM {name}"), false),
        drop: format!("DROP VIEW {name}"),
    }
}

/// `case`'s row count read through a SQL function named after `index`.
pub fn function(index: usize, case: &Case) -> Behind {
    let name = format!("diff_count_{index}");
    Behind {
        create: format!(
            "CREATE FUNCTION {name}() RETURNS bigint LANGUAGE sql AS $body$ SELECT count(*) FROM ({}) s $body$",
            case.sql
        ),
        case: Case::new(Category::Function, format!("SELECT {name}()"), true),
        drop: format!("DROP FUNCTION {name}()"),
    }
}
