//! `INSERT INTO sharded (...) SELECT ...`: each database runs the whole
//! statement over the rows it holds, so it is right only when every row it
//! writes belongs to it (Citus's "co-located INSERT ... SELECT"): the
//! target's key is taken from a sharding key of the source with the same
//! key space (the row stays where its source row is), or is one literal
//! whose database is the only one the statement runs on. A LIMIT, OFFSET
//! or window function would apply per database: refused when it runs on
//! several. Anything else could write a row on a database its key does not
//! hash to, where keyed reads would never find it (PgDog #1096): refused.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::{row_key_value, target, SplitError};
use crate::hash;
use crate::merge::keys::KeyColumns;
use crate::sharding::{KeySpace, ShardedTable, Sharding};

/// Where an arm of the SELECT puts its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// On the database that holds the source row.
    Stay,
    /// All on this database.
    On(usize),
}

/// Check the INSERT `sql` that runs on `databases`; anything but an INSERT
/// ... SELECT into a sharded table passes.
pub fn check_insert_select(
    sql: &str,
    sharding: &Sharding,
    databases: &[usize],
) -> Result<(), SplitError> {
    let tree = parser_ffi::parse_protobuf(sql)?;
    let [raw] = tree.stmts.as_slice() else {
        return Ok(());
    };
    let Some(N::InsertStmt(insert)) = raw.stmt.as_ref().and_then(|s| s.node.as_ref()) else {
        return Ok(());
    };
    let Some(N::SelectStmt(select)) = insert.select_stmt.as_deref().and_then(|s| s.node.as_ref())
    else {
        return Ok(());
    };
    if !select.values_lists.is_empty() {
        return Ok(());
    }
    let (entry, table, column) =
        match (target(insert, sharding), insert.cols.is_empty()) {
            (Ok((entry, table)), false) => {
                let Some(column) = insert.cols.iter().position(
                    |c| matches!(&c.node, Some(N::ResTarget(t)) if t.name == entry.column),
                ) else {
                    // No key at all: routing refuses it.
                    return Ok(());
                };
                (entry, table, column)
            }
            (found, true) => match unlisted(insert, found.ok(), sharding) {
                Unlisted::NotSharded => return Ok(()),
                Unlisted::Found(entry, table, column) => (entry, table, column),
                Unlisted::Unknown(table) => {
                    return Err(SplitError::InsertSelect {
                        table,
                        why: InsertSelectError::NoColumnList,
                    })
                }
            },
            (Err(_), false) => return Ok(()),
        };
    let refuse = |why: InsertSelectError| SplitError::InsertSelect {
        table: table.clone(),
        why,
    };
    match arm(select, column, entry, sharding, databases.len() > 1).map_err(&refuse)? {
        Rows::Stay => Ok(()),
        Rows::On(database) if databases == [database] => Ok(()),
        Rows::On(database) => Err(refuse(InsertSelectError::OneShard {
            database,
            reads: databases
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        })),
    }
}

/// The target of an INSERT ... SELECT without a column list, whose
/// SELECT's columns fill the table's in order (Postgres's rule).
enum Unlisted<'s> {
    /// Not a sharded table.
    NotSharded,
    /// Its entry, name and the place of the sharding key among its columns
    /// (the catalog's).
    Found(&'s ShardedTable, String, usize),
    /// Perhaps sharded, but the catalog does not say where its key is.
    Unknown(String),
}

/// Where an INSERT without a column list (`insert`) takes its sharding key
/// from: `named`, the `[[sharded_tables]]` entry that names its table if
/// one does; else an entry by column alone whose column the table has.
fn unlisted<'s>(
    insert: &pb::InsertStmt,
    named: Option<(&'s ShardedTable, String)>,
    sharding: &'s Sharding,
) -> Unlisted<'s> {
    let Some(relation) = insert.relation.as_ref() else {
        return Unlisted::NotSharded;
    };
    let name = relation.relname.clone();
    let schema = (!relation.schemaname.is_empty()).then_some(relation.schemaname.as_str());
    let columns = sharding
        .catalog
        .as_deref()
        .and_then(|catalog| catalog.table(schema, &relation.relname))
        .map(|table| table.columns.as_slice());
    let place = |column: &str| columns?.iter().position(|c| c == column);
    if let Some((entry, table)) = named {
        return match place(&entry.column) {
            Some(at) => Unlisted::Found(entry, table, at),
            None => Unlisted::Unknown(table),
        };
    }
    let (_, may_be) = crate::route::tables::target_table(relation, sharding);
    if may_be.is_none() {
        return Unlisted::NotSharded;
    }
    let mut by_column = sharding.tables.iter().filter(|e| e.name.is_none());
    match columns {
        None if sharding.tables.iter().any(|e| e.name.is_none()) => Unlisted::Unknown(name),
        None => Unlisted::NotSharded,
        Some(_) => match by_column.find_map(|e| Some((e, place(&e.column)?))) {
            Some((entry, at)) => Unlisted::Found(entry, name, at),
            None => Unlisted::NotSharded,
        },
    }
}

/// Why an INSERT ... SELECT into a sharded table would not keep each row
/// on its shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InsertSelectError {
    #[error("INSERT ... SELECT with UNION, INTERSECT or EXCEPT (other than UNION ALL) into a sharded table is not supported: each shard would combine only its own rows")]
    SetOperation,
    #[error("an empty UNION arm")]
    EmptyArm,
    #[error("the arms of the UNION ALL put their rows on different shards")]
    ArmsDiffer,
    #[error("INSERT ... SELECT with LIMIT, OFFSET or a window clause that runs on several shards would apply it per shard: add the sharding key to the WHERE clause")]
    CutPerShard,
    #[error("the SELECT has no column for the sharding key")]
    NoKeyColumn,
    #[error("INSERT ... SELECT without a column list into a sharded table whose columns pgshard's catalog does not list: it cannot tell which of the SELECT's columns is the sharding key (list the target's columns)")]
    NoColumnList,
    #[error("INSERT ... SELECT takes {column} from a sharding key that is not co-located with it (another data type or mapping)")]
    NotCoLocated { column: String },
    #[error("no shard is configured for its sharding key")]
    NoShard,
    #[error("INSERT ... SELECT must take {column} from the sharding key of a co-located source table (or a literal): any other value may belong to another shard than the one computing the row")]
    NotFromKey { column: String },
    #[error("INSERT ... SELECT gives every row the sharding key of shard {database} but reads shard(s) {reads}: add the key to the SELECT's WHERE clause")]
    OneShard { database: usize, reads: String },
}

/// Where one SELECT (or each arm of a UNION ALL) puts its rows.
fn arm(
    select: &pb::SelectStmt,
    column: usize,
    entry: &ShardedTable,
    sharding: &Sharding,
    several: bool,
) -> Result<Rows, InsertSelectError> {
    if select.op != pb::SetOperation::SetopNone as i32 {
        if select.op != pb::SetOperation::SetopUnion as i32 || !select.all {
            return Err(InsertSelectError::SetOperation);
        }
        let left = select.larg.as_deref().ok_or(InsertSelectError::EmptyArm)?;
        let right = select.rarg.as_deref().ok_or(InsertSelectError::EmptyArm)?;
        let (a, b) = (
            arm(left, column, entry, sharding, several)?,
            arm(right, column, entry, sharding, several)?,
        );
        return match a == b {
            true => Ok(a),
            false => Err(InsertSelectError::ArmsDiffer),
        };
    }
    let cuts = select.limit_count.is_some()
        || select.limit_offset.is_some()
        || !select.window_clause.is_empty();
    if several && cuts {
        return Err(InsertSelectError::CutPerShard);
    }
    let value = select
        .target_list
        .get(column)
        .and_then(|t| match &t.node {
            Some(N::ResTarget(t)) => t.val.as_deref(),
            _ => None,
        })
        .ok_or(InsertSelectError::NoKeyColumn)?;
    let keys = KeyColumns::of(select, sharding);
    if let Some(space) = keys.key_space(Some(value)) {
        return match co_located(space, &entry.keys) {
            true => Ok(Rows::Stay),
            false => Err(InsertSelectError::NotCoLocated {
                column: entry.column.clone(),
            }),
        };
    }
    if let Ok(key) = row_key_value(value, entry, &[]) {
        return hash::database(&entry.keys, &key)
            .map(Rows::On)
            .ok_or(InsertSelectError::NoShard);
    }
    Err(InsertSelectError::NotFromKey {
        column: entry.column.clone(),
    })
}

/// Equal values map to the same database under both.
fn co_located(a: &KeySpace, b: &KeySpace) -> bool {
    a == b
}
