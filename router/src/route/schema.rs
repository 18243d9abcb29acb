//! Rule 14: schema changes that would leave a table's rows where its name
//! or key no longer says they are. The config places a table by its name
//! (a `[[sharded_tables]]` entry, a family, `[[omnisharded_tables]]`) and
//! its key column; renaming the table, or renaming, dropping or adding
//! that column, would make pgshard look for the rows elsewhere than where
//! they are. A table created from a query (`CREATE TABLE AS`, `SELECT
//! INTO`, a materialized view) is filled by each database from the rows it
//! holds, which is right only when the new table is placed as those rows
//! are: sharded from sharded rows (the key kept, checked with the query by
//! [`crate::create_as`]), omnisharded from rows every database holds.

use crate::sharding::{KeySpace, Sharding};
use crate::summary::{SchemaChange, StatementSummary, TableRef};

use super::key_values;
use super::tables::{classify, entry_names, TableClass};
use super::RouteError;

/// What the new table of a `CREATE TABLE AS` needs checked with its query
/// (the key it keeps, whether its rows are exact per shard): see
/// [`crate::create_as::check`].
pub fn needs_query_check(stmt: &StatementSummary, sharding: &Sharding) -> bool {
    let Some(SchemaChange::CreateAs {
        table,
        matview,
        with_data,
    }) = stmt.schema_change.as_deref()
    else {
        return false;
    };
    (*with_data || *matview)
        && sharding.databases > 1
        && matches!(
            classify(table, sharding),
            TableClass::Sharded | TableClass::Unknown
        )
        && reads_sharded(stmt, table, sharding).is_some()
}

/// Rule 14 for `stmt`'s schema change, if it has one.
pub(super) fn check(stmt: &StatementSummary, sharding: &Sharding) -> Result<(), RouteError> {
    match stmt.schema_change.as_deref() {
        None | Some(SchemaChange::Refresh { .. }) => Ok(()),
        Some(SchemaChange::RenameTable { table, to }) => rename(table, to, sharding),
        Some(SchemaChange::Columns {
            table,
            renamed,
            dropped,
            added,
        }) => {
            let changes = renamed
                .iter()
                .flat_map(|(from, to)| [("rename", from), ("rename to", to)])
                .chain(dropped.iter().map(|column| ("drop", column)))
                .chain(added.iter().map(|column| ("add", column)));
            for (change, column) in changes {
                key_column(table, change, column, sharding)?;
            }
            Ok(())
        }
        Some(SchemaChange::CreateAs {
            table,
            matview,
            with_data,
        }) if *with_data || *matview => create_as(stmt, table, sharding),
        Some(SchemaChange::CreateAs { .. }) => Ok(()),
    }
}

/// Where a table's rows are, as far as a rename may not change it.
#[derive(Debug, PartialEq)]
enum Placement<'s> {
    /// No entry names it, in a cluster where its columns may shard it (or
    /// `unlisted_tables = "sharded"`): placed as its columns say, which a
    /// rename keeps.
    Unlisted,
    /// A copy on every database (`[[omnisharded_tables]]`, a catalog).
    Copies,
    /// Sharded by these (column, key space)s.
    Keyed(Vec<(&'s str, &'s KeySpace)>),
    /// A family member: every row on this database.
    On(usize),
}

fn placement<'s>(table: &TableRef, sharding: &'s Sharding) -> Placement<'s> {
    match classify(table, sharding) {
        TableClass::Sharded => {
            let mut keys: Vec<(&str, &KeySpace)> = sharding
                .tables
                .iter()
                .filter(|entry| entry_names(entry, table))
                .map(|entry| (entry.column.as_str(), &entry.keys))
                .collect();
            keys.sort_by(|a, b| a.0.cmp(b.0));
            Placement::Keyed(keys)
        }
        TableClass::Family { family, key } => {
            let key = crate::sharding::Key::Int(key);
            match key_values::database(sharding, &family.keys, &key, String::new) {
                Ok(database) => Placement::On(database),
                // A member with no database: nothing can be placed there.
                Err(_) => Placement::Keyed(Vec::new()),
            }
        }
        TableClass::Catalog => Placement::Copies,
        TableClass::Omnisharded if listed_omnisharded(table, sharding) => Placement::Copies,
        // Unlisted tables are copies by the `unlisted_tables` rule alone
        // when no column-only entry can shard them.
        TableClass::Omnisharded if sharding.unlisted_omnisharded => Placement::Copies,
        TableClass::Omnisharded | TableClass::Unknown => Placement::Unlisted,
    }
}

fn listed_omnisharded(table: &TableRef, sharding: &Sharding) -> bool {
    sharding.omnisharded.iter().any(|(schema, name)| {
        *name == table.name
            && super::tables::schema_matches(schema.as_deref(), table.schema.as_deref())
    })
}

/// How an error names what a table is.
fn what(table: &TableRef, sharding: &Sharding) -> String {
    match classify(table, sharding) {
        TableClass::Sharded => {
            let columns: Vec<&str> = sharding
                .tables
                .iter()
                .filter(|entry| entry_names(entry, table))
                .map(|entry| entry.column.as_str())
                .collect();
            format!(
                "is sharded by {} (a [[sharded_tables]] entry names it)",
                columns.join(", ")
            )
        }
        TableClass::Family { family, .. } => {
            format!("is a member of table family {}", family.prefix)
        }
        TableClass::Catalog => "is a system catalog".to_owned(),
        TableClass::Omnisharded if listed_omnisharded(table, sharding) => {
            "is omnisharded ([[omnisharded_tables]] names it)".to_owned()
        }
        TableClass::Omnisharded => {
            "is not in the sharding config, so omnisharded (a copy on every shard)".to_owned()
        }
        TableClass::Unknown => {
            "is not in the sharding config (so is treated as sharded by a key pgshard does not know)"
                .to_owned()
        }
    }
}

fn name(table: &TableRef) -> String {
    match &table.schema {
        Some(schema) => format!("{schema}.{}", table.name),
        None => table.name.clone(),
    }
}

/// A rename (or SET SCHEMA) must leave the table placed as it was.
fn rename(table: &TableRef, to: &TableRef, sharding: &Sharding) -> Result<(), RouteError> {
    if placement(table, sharding) == placement(to, sharding) {
        return Ok(());
    }
    Err(RouteError::RenameMovesRows {
        table: name(table),
        what: what(table, sharding),
        to: name(to),
        to_what: what(to, sharding),
    })
}

/// A column change must not touch the key column that places `table`.
fn key_column(
    table: &TableRef,
    change: &'static str,
    column: &str,
    sharding: &Sharding,
) -> Result<(), RouteError> {
    let keyed = match classify(table, sharding) {
        // Its own entries' columns; adding one it lacks cannot happen.
        TableClass::Sharded => {
            change != "add"
                && change != "rename to"
                && sharding
                    .tables
                    .iter()
                    .any(|entry| entry_names(entry, table) && entry.column == column)
        }
        // An unlisted table is sharded by a column-only entry's column when
        // it has it, omnisharded (or keyless) when it has none.
        TableClass::Unknown | TableClass::Omnisharded if !listed_omnisharded(table, sharding) => {
            sharding
                .tables
                .iter()
                .any(|entry| entry.name.is_none() && entry.column == column)
        }
        _ => false,
    };
    if !keyed {
        return Ok(());
    }
    // A table the catalog shows without any key column: every database
    // holds all its rows, and the column would shard it.
    let copies = classify(table, sharding) == TableClass::Omnisharded;
    if copies && (change == "add" || change == "rename to") {
        let table = name(table);
        let how = match change {
            "add" => format!("adding column {column} to {table}"),
            _ => format!("renaming a column of {table} to {column}"),
        };
        return Err(RouteError::KeyColumnToCopies {
            table,
            how,
            column: column.to_owned(),
        });
    }
    let how = match change {
        "rename" => format!("renaming column {column}"),
        "rename to" => format!("renaming a column to {column}"),
        "drop" => format!("dropping column {column}"),
        _ => format!("adding column {column}"),
    };
    Err(RouteError::KeyColumnChange {
        table: name(table),
        how,
        column: column.to_owned(),
    })
}

/// The first table `stmt` reads (other than `created`) whose rows are not
/// on every database, and what it is.
fn reads_sharded<'a>(
    stmt: &'a StatementSummary,
    created: &TableRef,
    sharding: &Sharding,
) -> Option<(&'a TableRef, &'static str)> {
    stmt.tables
        .iter()
        .filter(|t| (t.schema.as_deref(), &t.name) != (created.schema.as_deref(), &created.name))
        .find_map(|t| {
            let what = match classify(t, sharding) {
                TableClass::Sharded => "is sharded",
                TableClass::Unknown => "is not in the sharding config (so is treated as sharded)",
                TableClass::Family { .. } => "is a sharded table family",
                TableClass::Omnisharded | TableClass::Catalog => return None,
            };
            Some((t, what))
        })
}

/// A table filled from a query: placed as the rows that fill it are.
fn create_as(
    stmt: &StatementSummary,
    created: &TableRef,
    sharding: &Sharding,
) -> Result<(), RouteError> {
    let read = reads_sharded(stmt, created, sharding);
    let class = classify(created, sharding);
    match (class, read) {
        (TableClass::Omnisharded | TableClass::Catalog, Some((read, read_what))) => {
            Err(RouteError::CreateAsCopies {
                table: name(created),
                what: what(created, sharding),
                read: name(read),
                read_what,
            })
        }
        (TableClass::Family { .. }, Some((read, read_what))) => Err(RouteError::CreateAsCopies {
            table: name(created),
            what: what(created, sharding),
            read: name(read),
            read_what,
        }),
        (TableClass::Sharded, None) => Err(RouteError::CreateAsFromCopies {
            table: name(created),
            what: what(created, sharding),
        }),
        (TableClass::Unknown, None) if !sharding.unlisted_by_columns => {
            Err(RouteError::CreateAsFromCopies {
                table: name(created),
                what: what(created, sharding),
            })
        }
        (TableClass::Unknown, Some((read, read_what)))
            if sharding.tables.iter().all(|entry| entry.name.is_some()) =>
        {
            Err(RouteError::CreateAsWithoutKey {
                table: name(created),
                read: name(read),
                read_what,
            })
        }
        // Sharded from sharded rows: the key and the query are checked with
        // the statement's text (`create_as::check`). An unlisted table from
        // copies in a cluster with column-only entries: the same check
        // tells whether it gets a key column (then refused).
        _ => Ok(()),
    }
}
