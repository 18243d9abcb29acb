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
//! 3. `ON CONFLICT`, `RETURNING` and `OVERRIDING` make it *staged*
//!    ([`InsertSelect::staged`]): the rows go by COPY into a stage table on
//!    each shard, and each shard runs the client's INSERT from its stage
//!    ([`InsertSelect::shard_insert_sql`]: the clauses deparsed unchanged). An
//!    `ON CONFLICT` into a sharded table must have a conflict target that
//!    includes the sharding key (`ON CONFLICT (key, ...)`, or `ON
//!    CONSTRAINT` of such a constraint, which the proxy checks in the
//!    catalog: [`Conflict::Constraint`]), so that rows that conflict are
//!    always on one shard. Refused, with the reason: a table of a family.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};
use parser_ffi::ParseError;

use crate::route::tables::{classify, entry_names, TableClass};
use crate::sharding::Sharding;
use crate::summary::TableRef;

/// An INSERT ... SELECT planned to move its rows to their shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertSelect {
    /// The target as written, quoted (`"public"."orders"`).
    pub table: String,
    /// The target as written, unquoted, for messages and the catalog.
    pub table_name: String,
    /// The target's schema as written, quoted.
    pub schema: Option<String>,
    /// The column list as written, quoted; `None`: none was written.
    pub columns: Option<Vec<String>>,
    /// The SELECT the rows come from (deparsed; the INSERT's WITH moved
    /// onto it).
    pub select_sql: String,
    /// The target holds a copy of every row on every database.
    pub copies: bool,
    /// `OVERRIDING SYSTEM VALUE` or `OVERRIDING USER VALUE`, as written.
    pub overriding: Option<&'static str>,
    /// The INSERT up to its column list, deparsed (`INSERT INTO t AS a`).
    pub head: String,
    /// Its `ON CONFLICT ...` and `RETURNING ...`, deparsed (with a leading
    /// space; empty without either).
    pub tail: String,
    /// It has a RETURNING list.
    pub returning: bool,
    /// What its ON CONFLICT's target leaves to check.
    pub conflict: Conflict,
}

/// What an ON CONFLICT into a sharded table leaves to check (rule 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// Nothing: no ON CONFLICT, an omnisharded target, or a target list
    /// that names the sharding key.
    Checked,
    /// `ON CONFLICT ON CONSTRAINT name`: its columns must include one of
    /// `keys` (the table's sharding key candidates).
    Constraint { name: String, keys: Vec<String> },
}

/// Why an INSERT ... SELECT does not take this path.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum NotMoved {
    #[error("{0}")]
    Parse(ParseError),
    #[error("not one INSERT ... SELECT")]
    NotInsertSelect,
    #[error(
        "its rows can be sent to their shards with ON CONFLICT only when its ON CONFLICT \
         target includes the sharding key (ON CONFLICT (key, ...))"
    )]
    ConflictWithoutKey,
    #[error("its column list names a part of a column ({0}), which cannot be written by row")]
    Indirection(String),
    #[error(
        "{0} is a table of a family or a system catalog, not a table whose rows are split by key"
    )]
    Family(String),
    #[error("the SELECT could not be written back: {0}")]
    Deparse(ParseError),
    #[error("its ON CONFLICT or RETURNING could not be written back")]
    Unwritable,
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
    let overriding = overriding(insert.r#override);
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
    let conflict = match copies {
        true => Conflict::Checked,
        false => conflict(&insert, &reference, sharding)?,
    };
    let (head, tail) = head_and_tail(&insert, tree.version)?;
    let returning = insert
        .returning_clause
        .as_ref()
        .is_some_and(|r| !r.exprs.is_empty());
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
    let select_sql = deparse_select(select, tree.version)?;
    Ok(InsertSelect {
        schema: reference.schema.as_deref().map(quote),
        table,
        table_name,
        columns,
        select_sql,
        copies,
        overriding,
        head,
        tail,
        returning,
        conflict,
    })
}

/// The OVERRIDING clause of an INSERT (`kind`), as written.
fn overriding(kind: i32) -> Option<&'static str> {
    match kind {
        k if k == pb::OverridingKind::OverridingSystemValue as i32 => {
            Some("OVERRIDING SYSTEM VALUE")
        }
        k if k == pb::OverridingKind::OverridingUserValue as i32 => Some("OVERRIDING USER VALUE"),
        _ => None,
    }
}

/// The SELECT the coordinator runs, deparsed.
fn deparse_select(select: pb::SelectStmt, version: i32) -> Result<String, NotMoved> {
    let tree = pb::ParseResult {
        version,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(pb::Node {
                node: Some(NodeEnum::SelectStmt(Box::new(select))),
            })),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    parser_ffi::deparse_protobuf(&tree).map_err(NotMoved::Deparse)
}

/// The INSERT without its column list and rows (`INSERT INTO t AS a`), and
/// its ON CONFLICT and RETURNING clauses (with a leading space), each
/// deparsed: the statement with them less the statement without them.
fn head_and_tail(insert: &pb::InsertStmt, version: i32) -> Result<(String, String), NotMoved> {
    let deparse = |on_conflict_clause, returning_clause| {
        let bare = pb::InsertStmt {
            relation: insert.relation.clone(),
            on_conflict_clause,
            returning_clause,
            r#override: pb::OverridingKind::OverridingNotSet as i32,
            ..Default::default()
        };
        let tree = pb::ParseResult {
            version,
            stmts: vec![pb::RawStmt {
                stmt: Some(Box::new(pb::Node {
                    node: Some(NodeEnum::InsertStmt(Box::new(bare))),
                })),
                stmt_location: 0,
                stmt_len: 0,
            }],
        };
        parser_ffi::deparse_protobuf(&tree).map_err(NotMoved::Deparse)
    };
    let bare = deparse(None, None)?;
    let full = deparse(
        insert.on_conflict_clause.clone(),
        insert.returning_clause.clone(),
    )?;
    let tail = full.strip_prefix(&bare).ok_or(NotMoved::Unwritable)?;
    let head = bare
        .strip_suffix(" DEFAULT VALUES")
        .ok_or(NotMoved::Unwritable)?;
    Ok((head.to_owned(), tail.to_owned()))
}

/// Rule 3: an ON CONFLICT into a sharded table names the sharding key in
/// its target, or names a constraint for the proxy to check.
fn conflict(
    insert: &pb::InsertStmt,
    table: &TableRef,
    sharding: &Sharding,
) -> Result<Conflict, NotMoved> {
    let Some(clause) = &insert.on_conflict_clause else {
        return Ok(Conflict::Checked);
    };
    let named: Vec<String> = sharding
        .tables
        .iter()
        .filter(|e| entry_names(e, table))
        .map(|e| e.column.clone())
        .collect();
    // No entry names it: a column-only entry's column keys it.
    let keys = match named.is_empty() {
        false => named,
        true => sharding
            .tables
            .iter()
            .filter(|e| e.name.is_none())
            .map(|e| e.column.clone())
            .collect(),
    };
    let Some(infer) = &clause.infer else {
        return Err(NotMoved::ConflictWithoutKey);
    };
    if !infer.conname.is_empty() {
        let name = infer.conname.clone();
        return Ok(Conflict::Constraint { name, keys });
    }
    let names_key = infer.index_elems.iter().any(|e| match &e.node {
        Some(NodeEnum::IndexElem(elem)) => keys.contains(&elem.name),
        _ => false,
    });
    match names_key {
        true => Ok(Conflict::Checked),
        false => Err(NotMoved::ConflictWithoutKey),
    }
}

impl InsertSelect {
    /// Its rows go into a stage table on each shard first (rule 3).
    pub fn staged(&self) -> bool {
        self.overriding.is_some() || !self.tail.is_empty()
    }

    /// The stage table on a shard (`stage`, in the target's schema when
    /// it is written): like the coordinator's, but not a temp table (a
    /// transaction that touched one cannot PREPARE), unlogged, and dropped
    /// in the transaction that made it ([`Self::shard_drop_sql`]).
    pub fn shard_stage_sql(&self, stage: &str, columns: &[String]) -> String {
        format!(
            "CREATE UNLOGGED TABLE {} AS SELECT {} FROM {} WITH NO DATA",
            self.shard_stage(stage),
            columns.join(", "),
            self.table
        )
    }

    /// The COPY that fills the shard's stage.
    pub fn shard_copy_sql(&self, stage: &str, columns: &[String]) -> String {
        format!(
            "COPY {} ({}) FROM STDIN",
            self.shard_stage(stage),
            columns.join(", ")
        )
    }

    /// The client's INSERT from the shard's stage.
    pub fn shard_insert_sql(&self, stage: &str, columns: &[String]) -> String {
        let columns = columns.join(", ");
        let overriding = self.overriding.map(|o| format!(" {o}")).unwrap_or_default();
        let stage = self.shard_stage(stage);
        format!(
            "{} ({columns}){overriding} SELECT {columns} FROM {stage}{}",
            self.head, self.tail
        )
    }

    /// The shard's stage dropped (in the transaction that made it).
    pub fn shard_drop_sql(&self, stage: &str) -> String {
        format!("DROP TABLE {}", self.shard_stage(stage))
    }

    /// The shard's stage table, quoted, in the target's schema if written.
    fn shard_stage(&self, stage: &str) -> String {
        match &self.schema {
            Some(schema) => format!("{schema}.{}", quote(stage)),
            None => quote(stage),
        }
    }

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
