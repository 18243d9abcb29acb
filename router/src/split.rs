//! A multi-row INSERT whose rows belong to several shards, split into one
//! INSERT per shard (PgDog's `split_inserts`): each `VALUES` row goes to
//! the database its sharding key hashes to, in the order the client wrote
//! them. Pure: from pg_query's protobuf tree, each part deparsed.
//!
//! What splits: `INSERT INTO t (cols) VALUES (...), (...)` into a
//! configured sharded table whose key column is in the column list with a
//! literal value (optionally cast) in every row. `ON CONFLICT` only with a
//! conflict target that includes the key (a conflict is then always
//! between rows of one shard). `RETURNING` rows come back in the client's
//! row order (the proxy interleaves the shards' rows by `rows`), so it is
//! refused with `ON CONFLICT`, where rows may return no row. Anything else
//! is refused with the reason.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use crate::hash;
use crate::route::tables::{classify, entry_names, TableClass};
use crate::sharding::{Key, ShardedTable, Sharding};
use crate::summary::TableRef;

/// One INSERT per database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub parts: Vec<Part>,
    /// The statement returns rows (RETURNING).
    pub returning: bool,
}

/// The rows of one database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub database: usize,
    pub sql: String,
    /// The client's row numbers (0-based) this INSERT holds, in order.
    pub rows: Vec<usize>,
}

/// Why an INSERT cannot be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("a multi-row INSERT whose rows go to several shards can be split only when {0}")]
    Unsupported(&'static str),
    #[error("row {row} of the INSERT into {table}: {why}")]
    Row {
        row: usize,
        table: String,
        why: String,
    },
    #[error("INSERT INTO {table} ... SELECT: {why}")]
    InsertSelect { table: String, why: String },
    #[error("the INSERT could not be analysed for splitting: {0}")]
    Unreadable(String),
}

use SplitError::Unsupported;

/// Split the INSERT `sql` by shard of `sharding`.
pub fn split_insert(sql: &str, sharding: &Sharding) -> Result<Split, SplitError> {
    let mut tree =
        parser_ffi::parse_protobuf(sql).map_err(|e| SplitError::Unreadable(e.to_string()))?;
    let insert = match tree.stmts.as_slice() {
        [raw] => match raw.stmt.as_ref().and_then(|s| s.node.as_ref()) {
            Some(N::InsertStmt(insert)) => insert.as_ref().clone(),
            _ => return Err(Unsupported("it is one INSERT statement")),
        },
        _ => return Err(Unsupported("it is sent alone (one statement per query)")),
    };
    let (entry, table) = target(&insert, sharding)?;
    let column = insert
        .cols
        .iter()
        .position(|c| matches!(&c.node, Some(N::ResTarget(t)) if t.name == entry.column))
        .ok_or(Unsupported("its column list names the sharding key"))?;
    check_conflict(&insert, &entry.column)?;
    let values = values_lists(&insert)?;
    let mut parts: Vec<Part> = Vec::new();
    for (row, list) in values.iter().enumerate() {
        let key = row_key(list, column, entry).map_err(|why| SplitError::Row {
            row: row + 1,
            table: table.clone(),
            why,
        })?;
        let database = hash::database(&entry.keys, &key).ok_or_else(|| SplitError::Row {
            row: row + 1,
            table: table.clone(),
            why: "no shard is configured for its sharding key".into(),
        })?;
        match parts.iter_mut().find(|p| p.database == database) {
            Some(part) => part.rows.push(row),
            None => parts.push(Part {
                database,
                sql: String::new(),
                rows: vec![row],
            }),
        }
    }
    for part in &mut parts {
        let lists = part.rows.iter().map(|&r| values[r].clone()).collect();
        set_values(&mut tree, lists);
        part.sql = parser_ffi::deparse_protobuf(&tree)
            .map_err(|e| SplitError::Unreadable(e.to_string()))?;
    }
    Ok(Split {
        parts,
        returning: insert
            .returning_clause
            .as_ref()
            .is_some_and(|r| !r.exprs.is_empty()),
    })
}

/// The target table's `[[sharded_tables]]` entry, and its name.
fn target<'s>(
    insert: &pb::InsertStmt,
    sharding: &'s Sharding,
) -> Result<(&'s ShardedTable, String), SplitError> {
    let relation = insert
        .relation
        .as_ref()
        .ok_or(SplitError::Unreadable("no target table".into()))?;
    let table = TableRef {
        schema: (!relation.schemaname.is_empty()).then(|| relation.schemaname.clone()),
        name: relation.relname.clone(),
        alias: None,
    };
    let named = match classify(&table, sharding) {
        TableClass::Sharded => true,
        TableClass::Unknown => false,
        _ => return Err(Unsupported("its table is sharded by a key column")),
    };
    let entry = sharding
        .tables
        .iter()
        .find(|e| match named {
            true => entry_names(e, &table),
            false => e.name.is_none() && insert_names(insert, &e.column),
        })
        .ok_or(Unsupported("its table is sharded by a key column"))?;
    Ok((entry, relation.relname.clone()))
}

fn insert_names(insert: &pb::InsertStmt, column: &str) -> bool {
    insert
        .cols
        .iter()
        .any(|c| matches!(&c.node, Some(N::ResTarget(t)) if t.name == column))
}

/// `ON CONFLICT` must name the key in its target, and then RETURNING
/// (which may skip rows) is refused.
fn check_conflict(insert: &pb::InsertStmt, key: &str) -> Result<(), SplitError> {
    let Some(conflict) = &insert.on_conflict_clause else {
        return Ok(());
    };
    let names_key = conflict.infer.as_ref().is_some_and(|infer| {
        infer.index_elems.iter().any(|e| match &e.node {
            Some(N::IndexElem(elem)) => elem.name == key,
            _ => false,
        })
    });
    if !names_key {
        return Err(Unsupported(
            "its ON CONFLICT target includes the sharding key (ON CONFLICT (key, ...))",
        ));
    }
    if insert
        .returning_clause
        .as_ref()
        .is_some_and(|r| !r.exprs.is_empty())
    {
        return Err(Unsupported(
            "it does not combine ON CONFLICT with RETURNING (skipped rows would shift the returned rows)",
        ));
    }
    Ok(())
}

/// The VALUES rows (each a `List` node).
fn values_lists(insert: &pb::InsertStmt) -> Result<Vec<pb::Node>, SplitError> {
    let select = match insert.select_stmt.as_deref().and_then(|s| s.node.as_ref()) {
        Some(N::SelectStmt(select)) => select,
        _ => return Err(Unsupported("its rows are a VALUES list")),
    };
    let plain = select.target_list.is_empty()
        && select.from_clause.is_empty()
        && select.with_clause.is_none()
        && select.sort_clause.is_empty()
        && select.limit_count.is_none()
        && insert.with_clause.is_none();
    if select.values_lists.is_empty() || !plain {
        return Err(Unsupported("its rows are a VALUES list"));
    }
    Ok(select.values_lists.clone())
}

/// Replace the (only) INSERT's VALUES rows.
fn set_values(tree: &mut pb::ParseResult, lists: Vec<pb::Node>) {
    let Some(N::InsertStmt(insert)) = tree
        .stmts
        .first_mut()
        .and_then(|raw| raw.stmt.as_mut())
        .and_then(|s| s.node.as_mut())
    else {
        return;
    };
    if let Some(N::SelectStmt(select)) = insert.select_stmt.as_mut().and_then(|s| s.node.as_mut()) {
        select.values_lists = lists;
    }
}

/// The sharding key of one VALUES row: a literal, optionally cast.
fn row_key(list: &pb::Node, column: usize, entry: &ShardedTable) -> Result<Key, String> {
    let Some(N::List(list)) = &list.node else {
        return Err("not a row of values".into());
    };
    let value = list
        .items
        .get(column)
        .ok_or("it has no value for the sharding key")?;
    row_key_value(value, entry)
}

/// A sharding key written as a literal, optionally cast.
fn row_key_value(value: &pb::Node, entry: &ShardedTable) -> Result<Key, String> {
    let mut value = value;
    while let Some(N::TypeCast(cast)) = &value.node {
        value = cast.arg.as_deref().ok_or("an empty cast")?;
    }
    let data_type = entry.keys.data_type;
    let parsed = match &value.node {
        Some(N::AConst(constant)) if constant.isnull => {
            return Err(format!("its sharding key {} is NULL", entry.column))
        }
        Some(N::AConst(constant)) => match &constant.val {
            Some(pb::a_const::Val::Ival(i)) => hash::parse_text(data_type, &i.ival.to_string()),
            Some(pb::a_const::Val::Fval(f)) => hash::parse_text(data_type, &f.fval),
            Some(pb::a_const::Val::Sval(s)) => hash::parse_text(data_type, &s.sval),
            _ => return Err("its sharding key is not a number or a string".into()),
        },
        Some(N::AExpr(e)) if is_negation(e) => {
            match e.rexpr.as_deref().and_then(|r| r.node.as_ref()) {
                Some(N::AConst(pb::AConst {
                    val: Some(pb::a_const::Val::Ival(i)),
                    ..
                })) => hash::parse_text(data_type, &(-i64::from(i.ival)).to_string()),
                _ => return Err("its sharding key is an expression".into()),
            }
        }
        _ => {
            return Err(format!(
                "its sharding key {} is not a literal (a parameter or an expression)",
                entry.column
            ))
        }
    };
    parsed.map_err(|e| format!("its sharding key {}: {e}", entry.column))
}

/// `- 5` as the parser gives a negative literal in some positions.
fn is_negation(e: &pb::AExpr) -> bool {
    e.lexpr.is_none()
        && matches!(e.name.as_slice(), [pb::Node { node: Some(N::String(s)) }] if s.sval == "-")
}

mod insert_select;

pub use insert_select::check_insert_select;

#[cfg(test)]
mod tests;
