//! A table created from a query (`CREATE TABLE ... AS`, `SELECT ... INTO`,
//! `CREATE MATERIALIZED VIEW ... AS`, also under `EXPLAIN ANALYZE`) over
//! sharded rows: every database runs the statement and fills its own part
//! of the new table from the rows it holds. That is the table one Postgres
//! would create only when
//! - the config shards the new table (a `[[sharded_tables]]` entry naming
//!   it, or a column-only entry whose column the query outputs) by a key
//!   column the query keeps as a plain pass-through of a sharded table's
//!   key in the same key space (type, hash, shard count, placement): each
//!   row is then created on the database its key hashes to; and
//! - the query's rows are the disjoint union of what each database computes
//!   from its own rows, what a fan-out would simply concatenate: no
//!   aggregate, DISTINCT ON or GROUP BY across shards unless grouped by a
//!   sharding key, no LIMIT or OFFSET, no window function or set operation
//!   ([`crate::merge`] says which; an ORDER BY, and a DISTINCT of rows that
//!   keep the key, change nothing here).
//!
//! Joins and sublinks are checked by routing (rules 12 and 13), and what
//! the names alone decide (a new omnisharded table from sharded rows, a
//! sharded one from copies) by rule 14 ([`crate::route::schema`]); this is
//! the rest, read from the statement's text like
//! [`crate::split::check_insert_select`]. [`kept_key`] is the check of one
//! query and key column, for callers that register a table created
//! elsewhere (a materialized view read from the catalog).

use parser_ffi::protobuf::{self as pb, node::Node as N};
use parser_ffi::ParseError;

use crate::extract::ExtractError;
use crate::merge::Unmergeable;
use crate::route::schema::needs_query_check;
use crate::route::tables::{classify, entry_names, TableClass};
use crate::sharding::{KeySpace, Sharding};
use crate::summary::{SchemaChange, TableRef};

/// The key a created table keeps: a sharded table's key column (as the
/// query names the table), passed through as the new table's key column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptKey {
    /// The sharded table whose key the query passes through.
    pub table: TableRef,
    /// That table's key column.
    pub column: String,
    /// Its key space (the new table's must be the same).
    pub keys: KeySpace,
}

/// Why a table created from a query over sharded rows would not be the
/// table one Postgres creates; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreateAsError {
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view): the query does not output {column} by name, the column the config shards {table} by; name {column} in its select list as a plain sharding key column of a table it reads (k, or t.k AS {column}), or shard {table} by a column it keeps"
    )]
    NoKeyColumn { table: String, column: String },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view): its column {column}, which the config shards {table} by, is not the sharding key of a sharded table the query reads passed through unchanged (a plain k, t.k AS {column}, or * of such a table, not computed, not from a level with LIMIT, a window function or a set operation), so rows would be created on shards their keys do not hash to; select the source's sharding key as {column}"
    )]
    NotAKey { table: String, column: String },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view): its column {column} passes through {read}'s sharding key {read_column}, which is not co-located with {table} (another data type, hash, shard count or placement), so rows would be created on shards their keys do not hash to; shard {table} like {read} in [[sharded_tables]], RELOAD, then create it"
    )]
    NotCoLocated {
        table: String,
        column: String,
        read: String,
        read_column: String,
    },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view): {why}; each shard would fill its part of {table} from its own rows only"
    )]
    NotExact { table: String, why: NotExact },
    #[error(
        "CREATE TABLE {table} AS (or SELECT INTO, or a materialized view) reads no sharded table, but its column {column} would make {table} sharded by the column-only [[sharded_tables]] entry for {column}: every shard would fill it with the same rows, and reads would return each row once per shard; list {table} in [[omnisharded_tables]], RELOAD, then create it"
    )]
    KeyFromCopies { table: String, column: String },
    #[error("the statement could not be read: {0}")]
    Unreadable(#[from] ParseError),
    #[error("the statement could not be read: {0}")]
    Unsummarized(#[from] ExtractError),
}

/// Why a query's rows are not exactly what each database computes from
/// its own rows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotExact {
    #[error("its query is not a SELECT")]
    NotASelect,
    #[error("its rows need combining across shards (an aggregate, GROUP BY or DISTINCT ON not on a sharding key, LIMIT or OFFSET)")]
    NeedsMerge,
    #[error(transparent)]
    Unmergeable(#[from] Unmergeable),
}

/// Check the statement `sql` (one statement): `Ok(None)` when it creates
/// no table from a query that needs checking (see
/// [`crate::route::schema::needs_query_check`]), the key the new table
/// keeps when it may run on every database, an error otherwise.
pub fn check(sql: &str, sharding: &Sharding) -> Result<Option<KeptKey>, CreateAsError> {
    let tree = parser_ffi::parse_protobuf(sql)?;
    let summary = crate::extract::summarize_protobuf(&tree)?;
    let ([stmt], [raw]) = (summary.statements.as_slice(), tree.stmts.as_slice()) else {
        return Ok(None);
    };
    let Some(SchemaChange::CreateAs { table, .. }) = stmt.schema_change.as_deref() else {
        return Ok(None);
    };
    let copies = !needs_query_check(stmt, sharding);
    if copies && !(sharding.unlisted_by_columns && classify(table, sharding) == TableClass::Unknown)
    {
        return Ok(None);
    }
    let Some((query, colnames)) = raw
        .stmt
        .as_ref()
        .and_then(|s| s.node.as_ref())
        .and_then(created)
    else {
        return Ok(None);
    };
    let colnames: Vec<&str> = colnames.iter().filter_map(string).collect();
    let name = table.name.clone();
    let Some((column, keys)) = key_column(table, query, &colnames, copies, sharding)? else {
        return Ok(None);
    };
    exact(query, sharding).map_err(|why| CreateAsError::NotExact {
        table: name.clone(),
        why,
    })?;
    let kept = kept_key(query, &colnames, column, &stmt.tables, sharding)
        .map_err(|err| named_in(err, &name, query, &colnames))?;
    if kept.keys != *keys {
        return Err(CreateAsError::NotCoLocated {
            table: name,
            column: column.to_owned(),
            read: kept.table.name.clone(),
            read_column: kept.column.clone(),
        });
    }
    Ok(Some(kept))
}

/// The key column the config shards the new `table` by, and its key
/// space: an entry naming it, else (unlisted) the first column-only entry
/// whose column the query outputs by name; `None` when the statement needs
/// no check (`copies`: it reads no sharded table, and no entry keys it).
fn key_column<'s>(
    table: &TableRef,
    query: &N,
    colnames: &[&str],
    copies: bool,
    sharding: &'s Sharding,
) -> Result<Option<(&'s str, &'s KeySpace)>, CreateAsError> {
    if let Some(entry) = sharding
        .tables
        .iter()
        .find(|entry| entry_names(entry, table))
    {
        return Ok(Some((entry.column.as_str(), &entry.keys)));
    }
    let outputs = output_names(query, colnames);
    let entry = sharding
        .tables
        .iter()
        .filter(|entry| entry.name.is_none())
        .find(|entry| outputs.contains(&entry.column.as_str()));
    match (entry, copies) {
        (None, true) => Ok(None),
        (Some(entry), true) => Err(CreateAsError::KeyFromCopies {
            table: table.name.clone(),
            column: entry.column.clone(),
        }),
        (Some(entry), false) => Ok(Some((entry.column.as_str(), &entry.keys))),
        (None, false) => Err(CreateAsError::NoKeyColumn {
            table: table.name.clone(),
            column: sharding.key_columns().join(" or "),
        }),
    }
}

/// A [`kept_key`] error of the new table `name`: a key column the query
/// does not output at all has no column to keep.
fn named_in(err: CreateAsError, name: &str, query: &N, colnames: &[&str]) -> CreateAsError {
    match err {
        CreateAsError::NotAKey { column, .. }
            if !output_names(query, colnames).contains(&column.as_str()) && !has_star(query) =>
        {
            CreateAsError::NoKeyColumn {
                table: name.to_owned(),
                column,
            }
        }
        CreateAsError::NotAKey { column, .. } => CreateAsError::NotAKey {
            table: name.to_owned(),
            column,
        },
        other => other,
    }
}

/// The key that output column `column` of `query` (renamed by `colnames`)
/// keeps: a plain pass-through of a sharded table's key column, in one key
/// space (`tables`: the statement's, as its summary lists them). Says
/// nothing of whether the query's rows are exact per shard.
pub fn kept_key(
    query: &N,
    colnames: &[&str],
    column: &str,
    tables: &[TableRef],
    sharding: &Sharding,
) -> Result<KeptKey, CreateAsError> {
    let not_a_key = || CreateAsError::NotAKey {
        table: String::new(),
        column: column.to_owned(),
    };
    let sources = crate::extract::protobuf::output_source(query, colnames, column, tables);
    let mut kept: Option<KeptKey> = None;
    for source in sources {
        let owners: Vec<&TableRef> = match &source.table {
            Some(qualifier) => tables
                .iter()
                .find(|t| t.alias.as_deref() == Some(qualifier))
                .or_else(|| tables.iter().find(|t| t.name == *qualifier))
                .into_iter()
                .collect(),
            None => tables.iter().collect(),
        };
        for owner in owners {
            let unknown = match classify(owner, sharding) {
                TableClass::Sharded => false,
                TableClass::Unknown => true,
                _ => continue,
            };
            let entry = sharding.tables.iter().find(|entry| {
                entry.column == source.column
                    && match unknown {
                        false => entry_names(entry, owner),
                        true => entry.name.is_none(),
                    }
            });
            let Some(entry) = entry else {
                continue;
            };
            match &kept {
                Some(found) if found.keys != entry.keys => return Err(not_a_key()),
                Some(_) => {}
                None => {
                    kept = Some(KeptKey {
                        table: owner.clone(),
                        column: entry.column.clone(),
                        keys: entry.keys.clone(),
                    })
                }
            }
        }
    }
    kept.ok_or_else(not_a_key)
}

/// The query a statement creates a table from, and the new table's column
/// names (`CREATE TABLE t (a, b) AS ...`).
fn created(root: &N) -> Option<(&N, &[pb::Node])> {
    match root {
        N::ExplainStmt(explain) => created(explain.query.as_deref()?.node.as_ref()?),
        N::CreateTableAsStmt(create) => {
            let into = create.into.as_deref()?;
            Some((create.query.as_deref()?.node.as_ref()?, &into.col_names))
        }
        N::SelectStmt(select) => {
            let mut arm: &pb::SelectStmt = select;
            while arm.into_clause.is_none() && arm.op() != pb::SetOperation::SetopNone {
                arm = arm.larg.as_deref()?;
            }
            Some((root, &arm.into_clause.as_deref()?.col_names))
        }
        _ => None,
    }
}

/// Whether the query's rows are exactly what each database computes from
/// its own rows: `Err` names what is not.
fn exact(query: &N, sharding: &Sharding) -> Result<(), NotExact> {
    let N::SelectStmt(select) = query else {
        return Err(NotExact::NotASelect);
    };
    let mut select = select.as_ref().clone();
    select.into_clause = None;
    if select.limit_count.is_none() && select.limit_offset.is_none() {
        // Row order is no property of a table.
        select.sort_clause.clear();
    }
    if select.distinct_clause.iter().all(|d| d.node.is_none()) {
        // DISTINCT rows that keep the key: duplicates share a shard.
        select.distinct_clause.clear();
    }
    match crate::merge::select_needs_merge(&mut select, sharding) {
        Ok(false) => Ok(()),
        Ok(true) => Err(NotExact::NeedsMerge),
        Err(why) => Err(why.into()),
    }
}

/// The names the query certainly outputs: its select list's plain columns
/// and `AS` names, renamed by `colnames` (not what a `*` stands for).
fn output_names<'a>(query: &'a N, colnames: &[&'a str]) -> Vec<&'a str> {
    let N::SelectStmt(select) = query else {
        return Vec::new();
    };
    let mut arm: &pb::SelectStmt = select;
    while arm.op() != pb::SetOperation::SetopNone {
        match arm.larg.as_deref() {
            Some(left) => arm = left,
            None => return Vec::new(),
        }
    }
    let mut names = Vec::new();
    for (position, target) in arm.target_list.iter().enumerate() {
        let Some(N::ResTarget(target)) = &target.node else {
            continue;
        };
        let own = match target.val.as_deref().and_then(|v| v.node.as_ref()) {
            _ if !target.name.is_empty() => Some(target.name.as_str()),
            Some(N::ColumnRef(column)) => column.fields.last().and_then(string),
            _ => None,
        };
        let star = matches!(target.val.as_deref().and_then(|v| v.node.as_ref()),
            Some(N::ColumnRef(column)) if matches!(column.fields.last().and_then(|f| f.node.as_ref()), Some(N::AStar(_))));
        match colnames.get(position) {
            Some(_) if star => break,
            Some(&renamed) => names.push(renamed),
            None => names.extend(own),
        }
    }
    names
}

fn has_star(query: &N) -> bool {
    let N::SelectStmt(select) = query else {
        return false;
    };
    select.target_list.iter().any(|target| {
        matches!(&target.node, Some(N::ResTarget(t)) if matches!(
            t.val.as_deref().and_then(|v| v.node.as_ref()),
            Some(N::ColumnRef(c)) if matches!(c.fields.last().and_then(|f| f.node.as_ref()), Some(N::AStar(_)))
        ))
    })
}

fn string(node: &pb::Node) -> Option<&str> {
    match &node.node {
        Some(N::String(s)) => Some(s.sval.as_str()),
        _ => None,
    }
}
