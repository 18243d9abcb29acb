//! `INSERT INTO <sharded or omnisharded> [(cols)] SELECT ...` whose rows
//! may belong on other shards than the ones that read them (issue 34):
//! the SELECT runs first, through the coordinator path
//! ([`crate::gather`]), its rows are written on the coordinator into a
//! stage table with the target's column types (so Postgres's own
//! assignment casts and errors apply, and each key is then the column's
//! type), and the stage's rows go by `COPY ... FROM STDIN` to the shards
//! their keys hash to ([`crate::copy`]'s row splitter; an omnisharded
//! target gets every row on every shard). Pure: it plans from the
//! statement's text and the sharding config; the proxy runs the plan
//! (`proxy/src/session/insert_select.rs`).
//!
//! Rules:
//! 1. One INSERT whose rows come from a SELECT (not VALUES), into a table
//!    the config shards, copies on every database, or does not list
//!    (a column-only entry may key it). A WITH on the INSERT moves onto
//!    its SELECT (when the SELECT has none).
//! 2. Its column list, when written, names plain columns (no `a[1]`, no
//!    `c.f`). Without one, the proxy takes the first N of the table's
//!    columns, N the SELECT's, as Postgres does.
//! 3. Refused, with the reason: `ON CONFLICT`, `RETURNING` and
//!    `OVERRIDING` (not done on this path yet), a table of a family.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};
use parser_ffi::ParseError;

use crate::route::tables::{classify, TableClass};
use crate::sharding::Sharding;
use crate::summary::TableRef;

/// An INSERT ... SELECT planned to move its rows to their shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertSelect {
    /// The target as written, quoted (`"public"."orders"`).
    pub table: String,
    /// The target as written, unquoted, for messages and the catalog.
    pub table_name: String,
    /// The column list as written, quoted; `None`: none was written.
    pub columns: Option<Vec<String>>,
    /// The SELECT the rows come from (deparsed; the INSERT's WITH moved
    /// onto it).
    pub select_sql: String,
    /// The target holds a copy of every row on every database.
    pub copies: bool,
}

/// Why an INSERT ... SELECT does not take this path.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum NotMoved {
    #[error("{0}")]
    Parse(ParseError),
    #[error("not one INSERT ... SELECT")]
    NotInsertSelect,
    #[error("ON CONFLICT is not done yet when the rows go to their shards from a SELECT")]
    OnConflict,
    #[error("RETURNING is not done yet when the rows go to their shards from a SELECT")]
    Returning,
    #[error("OVERRIDING is not done yet when the rows go to their shards from a SELECT")]
    Overriding,
    #[error("its column list names a part of a column ({0}), which cannot be written by row")]
    Indirection(String),
    #[error(
        "{0} is a table of a family or a system catalog, not a table whose rows are split by key"
    )]
    Family(String),
    #[error("the SELECT could not be written back: {0}")]
    Deparse(ParseError),
}

/// `sql` is one INSERT whose rows come from a SELECT (not VALUES).
pub fn is_insert_select(sql: &str) -> bool {
    let Ok(tree) = parser_ffi::parse_protobuf(sql) else {
        return false;
    };
    let [raw] = tree.stmts.as_slice() else {
        return false;
    };
    let Some(NodeEnum::InsertStmt(insert)) = raw.stmt.as_deref().and_then(|s| s.node.as_ref())
    else {
        return false;
    };
    matches!(
        insert.select_stmt.as_deref().and_then(|s| s.node.as_ref()),
        Some(NodeEnum::SelectStmt(select)) if select.values_lists.is_empty()
    )
}

/// Plan `sql` (rules 1-3).
pub fn plan(sql: &str, sharding: &Sharding) -> Result<InsertSelect, NotMoved> {
    let tree = parser_ffi::parse_protobuf(sql).map_err(NotMoved::Parse)?;
    let [raw] = tree.stmts.as_slice() else {
        return Err(NotMoved::NotInsertSelect);
    };
    let Some(NodeEnum::InsertStmt(insert)) = raw.stmt.as_deref().and_then(|s| s.node.as_ref())
    else {
        return Err(NotMoved::NotInsertSelect);
    };
    let insert = insert.as_ref().clone();
    let mut select = match insert.select_stmt.as_deref().and_then(|s| s.node.as_ref()) {
        Some(NodeEnum::SelectStmt(select)) if select.values_lists.is_empty() => {
            select.as_ref().clone()
        }
        _ => return Err(NotMoved::NotInsertSelect),
    };
    if insert.on_conflict_clause.is_some() {
        return Err(NotMoved::OnConflict);
    }
    if insert.returning_clause.is_some() {
        return Err(NotMoved::Returning);
    }
    let not_set = [
        pb::OverridingKind::Undefined as i32,
        pb::OverridingKind::OverridingNotSet as i32,
    ];
    if !not_set.contains(&insert.r#override) {
        return Err(NotMoved::Overriding);
    }
    let relation = insert.relation.as_ref().ok_or(NotMoved::NotInsertSelect)?;
    let reference = TableRef {
        schema: (!relation.schemaname.is_empty()).then(|| relation.schemaname.clone()),
        name: relation.relname.clone(),
        alias: None,
    };
    let (table, table_name) = match &reference.schema {
        Some(schema) => (
            format!("{}.{}", quote(schema), quote(&reference.name)),
            format!("{schema}.{}", reference.name),
        ),
        None => (quote(&reference.name), reference.name.clone()),
    };
    let copies = match classify(&reference, sharding) {
        TableClass::Sharded | TableClass::Unknown => false,
        TableClass::Omnisharded => true,
        TableClass::Family { .. } | TableClass::Catalog => {
            return Err(NotMoved::Family(table_name))
        }
    };
    let columns = match insert.cols.is_empty() {
        true => None,
        false => Some(columns(&insert.cols)?),
    };
    if let Some(with) = insert.with_clause {
        if select.with_clause.is_some() {
            return Err(NotMoved::NotInsertSelect);
        }
        select.with_clause = Some(with);
    }
    let select_tree = pb::ParseResult {
        version: tree.version,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(pb::Node {
                node: Some(NodeEnum::SelectStmt(Box::new(select))),
            })),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    let select_sql = parser_ffi::deparse_protobuf(&select_tree).map_err(NotMoved::Deparse)?;
    Ok(InsertSelect {
        table,
        table_name,
        columns,
        select_sql,
        copies,
    })
}

impl InsertSelect {
    /// The COPY that writes `columns` (quoted) of the target on a shard.
    pub fn copy_sql(&self, columns: &[String]) -> String {
        format!("COPY {} ({}) FROM STDIN", self.table, columns.join(", "))
    }

    /// The stage table on the coordinator: `columns` (quoted) of the
    /// target, their types and typmods the target's, no constraints, no
    /// defaults (the shards apply theirs to the columns not written).
    pub fn stage_sql(&self, stage: &str, columns: &[String]) -> String {
        format!(
            "CREATE TEMP TABLE pg_temp.{stage} ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA",
            columns.join(", "),
            self.table
        )
    }

    /// The SELECT's rows (`finish`: the SELECT as the coordinator runs
    /// it) into the stage: Postgres's own assignment to its columns.
    pub fn fill_sql(stage: &str, finish: &str) -> String {
        format!("INSERT INTO pg_temp.{stage} {finish}")
    }
}

/// The quoted names of an INSERT's column list (rule 2).
fn columns(cols: &[pb::Node]) -> Result<Vec<String>, NotMoved> {
    cols.iter()
        .map(|col| match &col.node {
            Some(NodeEnum::ResTarget(target)) if target.indirection.is_empty() => {
                Ok(quote(&target.name))
            }
            Some(NodeEnum::ResTarget(target)) => Err(NotMoved::Indirection(target.name.clone())),
            _ => Err(NotMoved::NotInsertSelect),
        })
        .collect()
}

/// `name` as a quoted identifier.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests;
