//! Data-modifying WITH queries (rule 11): each runs whatever the rest of
//! the statement does, so the statement must run on every database that
//! holds rows it updates or deletes, and on exactly the one its INSERT's
//! rows belong to; an omnisharded table it writes must get the same rows on
//! every copy, so the statement may read no sharded table.

use crate::sharding::Sharding;
use crate::summary::{StatementSummary, TableRef};

use super::keys::{restrict, Compiled, Keys, Restriction};
use super::shard_set::ShardSet;
use super::tables::{classify, entry_names, TableClass};
use super::{describe, to_route, ParamValue, Route, RouteError};

/// A data-modifying WITH query on a sharded (or unknown) table, compiled.
#[derive(Debug, Clone)]
pub(super) struct Write {
    conditions: Vec<Compiled>,
    /// An INSERT or MERGE: its rows must land on their database only.
    inserts: bool,
    table: String,
}

impl Write {
    pub(super) fn is_fixed(&self) -> bool {
        self.conditions.iter().all(Compiled::is_fixed)
    }
}

/// The key changes and omnisharded writes rule 11 refuses in `stmt`'s
/// data-modifying WITH queries.
pub(super) fn check(stmt: &StatementSummary, sharding: &Sharding) -> Result<(), RouteError> {
    for write in &stmt.cte_writes {
        let class = classify(&write.table, sharding);
        let key = sharding.tables.iter().find(|entry| {
            let keys = match class {
                TableClass::Sharded => entry_names(entry, &write.table),
                TableClass::Unknown => entry.name.is_none(),
                _ => false,
            };
            keys && write.set_columns.contains(&entry.column)
        });
        if let Some(entry) = key {
            return Err(RouteError::ShardingKeyChange {
                table: write.table.name.clone(),
                column: entry.column.clone(),
            });
        }
        if class == TableClass::Omnisharded {
            if let Some((read, what)) = sharded_read(stmt, &write.table, sharding) {
                return Err(RouteError::OmnishardedWithSharded {
                    table: write.table.name.clone(),
                    read: read.name.clone(),
                    what,
                });
            }
        }
    }
    Ok(())
}

/// The first table of `stmt` other than `written` whose rows are not on
/// every database, and what it is.
fn sharded_read<'a>(
    stmt: &'a StatementSummary,
    written: &TableRef,
    sharding: &Sharding,
) -> Option<(&'a TableRef, &'static str)> {
    stmt.tables
        .iter()
        .filter(|t| (t.schema.as_deref(), &t.name) != (written.schema.as_deref(), &written.name))
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

/// The data-modifying WITH queries of `stmt` on sharded or unknown tables
/// (a family member's pins the statement to its database already).
pub(super) fn plan(
    stmt: &StatementSummary,
    sharding: &Sharding,
    tables: &[TableRef],
) -> Vec<Write> {
    let keys = Keys {
        tables,
        sharding,
        only: None,
    };
    stmt.cte_writes
        .iter()
        .filter(|write| {
            matches!(
                classify(&write.table, sharding),
                TableClass::Sharded | TableClass::Unknown
            )
        })
        .map(|write| Write {
            conditions: write
                .conditions
                .iter()
                .map(|condition| keys.compile(condition, 0))
                .collect(),
            inserts: write.inserts,
            table: write.table.name.clone(),
        })
        .collect()
}

/// Where a statement with data-modifying WITH queries `writes` runs, given
/// where its own levels put it (`route`; `pinned`: exactly there, as an
/// INSERT's rows): on every database a write's rows may be on, and exactly
/// on the one an INSERT's rows belong to; an error when those disagree.
pub(super) fn cover(
    writes: &[Write],
    route: Route,
    pinned: bool,
    params: &[ParamValue<'_>],
    sharding: &Sharding,
) -> Result<(Route, bool), RouteError> {
    if writes.is_empty() {
        return Ok((route, pinned));
    }
    let databases = sharding.databases;
    let main = match &route {
        Route::Any => ShardSet::empty(databases),
        Route::All => ShardSet::full(databases),
        Route::Shard(s) => ShardSet::single(databases, *s),
        Route::Shards(shards) => {
            let mut set = ShardSet::empty(databases);
            shards.iter().for_each(|&s| set.insert(s));
            set
        }
    };
    let (mut exact, mut needed) = match pinned {
        true => (Some((main, None::<&str>)), ShardSet::empty(databases)),
        false => (None, main),
    };
    for write in writes {
        let without_key = || RouteError::WriteInCteWithoutKey {
            table: write.table.clone(),
        };
        match restrict(&write.conditions, params, sharding, None)? {
            Restriction::Nothing(_) => {}
            Restriction::Free if write.inserts => return Err(without_key()),
            Restriction::Free => needed = ShardSet::full(databases),
            Restriction::Set(set) if write.inserts => {
                if set.len() > 1 {
                    return Err(without_key());
                }
                match &exact {
                    None => exact = Some((set, Some(write.table.as_str()))),
                    Some((there, _)) if *there == set => {}
                    Some((there, _)) => {
                        return Err(RouteError::CteWriteElsewhere {
                            table: write.table.clone(),
                            needs: describe(&to_route(&set, databases)),
                            rest: describe(&to_route(there, databases)),
                        })
                    }
                }
            }
            Restriction::Set(set) => needed.union_with(&set),
        }
    }
    match exact {
        None if needed.is_empty() => Ok((Route::Any, pinned)),
        None => Ok((to_route(&needed, databases), pinned)),
        Some((there, table)) => {
            let mut outside = needed.clone();
            outside.intersect_with(&there);
            if outside.len() != needed.len() {
                return Err(RouteError::CteWriteElsewhere {
                    table: table.unwrap_or("the statement's target").to_owned(),
                    needs: describe(&to_route(&there, databases)),
                    rest: describe(&to_route(&needed, databases)),
                });
            }
            Ok((to_route(&there, databases), true))
        }
    }
}
