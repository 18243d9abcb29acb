//! A statement whose route depends on its key values (rules 5-7, 9, 12):
//! planned once per statement and config ([`plan_keyed`]: conditions
//! compiled, the unrestricted route and the multi-database errors settled),
//! decided per Bind ([`Keyed::decide`]).

use crate::sharding::Sharding;
use crate::summary::{StatementKind, StatementSummary, TableRef};

use super::cte_writes;
use super::facts::TableFacts;
use super::key_values;
use super::keys::{restrict, Compiled, Keys, Restriction};
use super::shard_set::ShardSet;
use super::sublinks::{self, Placed};
use super::tables::entry_names;
use super::{describe, join, to_route, Decision, ParamValue, Route, RouteError, Routed};

/// A statement on sharded tables whose conditions read parameters.
#[derive(Debug, Clone)]
pub(super) struct Keyed {
    /// One per query level that restricts the statement's rows.
    conditions: Vec<Compiled>,
    /// The intersection of the family tables' databases.
    families: Option<ShardSet>,
    /// Where it goes when no condition restricts it (rule 7).
    free: Result<(Route, bool), RouteError>,
    /// For an INSERT or MERGE whose rows would go to several databases:
    /// the error, unless it reads other sharded tables (rule 6). `None`
    /// for other statements.
    several: Option<Several>,
    /// A restricted statement must run on exactly its databases.
    pinned: bool,
    /// The common shape, `key = $n` alone: routed without building shard
    /// sets (see [`Keyed::decide`]).
    single: Option<Single>,
    /// Sublinks whose rows must live on one database, which the statement
    /// then runs on alone (rule 12).
    placed: Vec<Placed>,
    /// `None` when the statement reads sharded tables outside its sublinks;
    /// else where it goes when no sublink places it.
    unsharded: Option<Route>,
    /// Its data-modifying WITH queries on sharded tables, which run
    /// wherever it runs (rule 11).
    writes: Vec<cte_writes::Write>,
}

/// `key = $n` with one key space, the statement's only restriction.
#[derive(Debug, Clone, Copy)]
struct Single {
    n: u16,
    entry: usize,
    data_type: crate::sharding::DataType,
}

#[derive(Debug, Clone)]
enum Several {
    /// A multi-row INSERT into this table.
    Insert(String),
    Error(RouteError),
}

impl Keyed {
    /// A statement whose own levels read no sharded table, placed by its
    /// sublinks (rule 12) and its data-modifying WITH queries' `writes`.
    pub(super) fn placed_only(
        placed: Vec<Placed>,
        unsharded: Route,
        writes: Vec<cte_writes::Write>,
    ) -> Box<Keyed> {
        Box::new(Keyed {
            conditions: Vec::new(),
            families: None,
            free: Ok((unsharded.clone(), false)),
            several: None,
            pinned: false,
            single: None,
            placed,
            unsharded: Some(unsharded),
            writes,
        })
    }

    /// Whether no parameter can change where it goes.
    pub(super) fn is_fixed(&self) -> bool {
        self.conditions.iter().all(Compiled::is_fixed)
            && self.placed.iter().all(Placed::is_fixed)
            && self.writes.iter().all(cte_writes::Write::is_fixed)
    }

    pub(super) fn decide(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        write: bool,
    ) -> Result<Decision, RouteError> {
        let databases = sharding.databases;
        if !self.placed.is_empty() {
            return self.decide_placed(params, sharding, write);
        }
        if let Some(single) = self.single {
            // One value, one database: the set would hold just it. A value
            // that restricts nothing (NULL, missing) takes the general path.
            if let Some(database) = key_values::param_database(
                single.n,
                single.entry,
                single.data_type,
                params,
                sharding,
            )? {
                return Ok(Decision {
                    routed: Routed {
                        route: Route::Shard(database),
                        write,
                        touches_moving: false,
                    },
                    pinned: self.pinned,
                });
            }
        }
        let restriction = restrict(&self.conditions, params, sharding, self.families.clone())?;
        let (route, pinned) = self.main_route(restriction, databases)?;
        let (route, pinned) = cte_writes::cover(&self.writes, route, pinned, params, sharding)?;
        self.finish(route, pinned, sharding, write)
    }

    /// Where the statement's own levels put it.
    fn main_route(
        &self,
        restriction: Restriction,
        databases: usize,
    ) -> Result<(Route, bool), RouteError> {
        Ok(match restriction {
            Restriction::Set(set) => {
                if set.len() > 1 {
                    match &self.several {
                        None => {}
                        Some(Several::Insert(table)) => {
                            return Err(RouteError::MultiRowInsert {
                                table: table.clone(),
                                shards: join(set.iter()),
                            })
                        }
                        Some(Several::Error(err)) => return Err(err.clone()),
                    }
                }
                (to_route(&set, databases), self.pinned)
            }
            Restriction::Nothing(lowest) => (Route::Shard(lowest.unwrap_or(0)), false),
            Restriction::Free => self.free.clone()?,
        })
    }

    /// Rule 12: the statement's own route must be the one database its
    /// placed sublinks need (or read no sharded table, or match no row).
    fn decide_placed(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        write: bool,
    ) -> Result<Decision, RouteError> {
        let databases = sharding.databases;
        let restriction = match self.unsharded {
            None => Some(restrict(
                &self.conditions,
                params,
                sharding,
                self.families.clone(),
            )?),
            Some(_) => None,
        };
        let need = sublinks::database(&self.placed, params, sharding)?;
        let (route, pinned) = match (need, restriction) {
            (None, None) => (self.unsharded.clone().unwrap_or(Route::Any), false),
            (None, Some(restriction)) => self.main_route(restriction, databases)?,
            (Some((database, _)), None | Some(Restriction::Nothing(_))) => {
                (Route::Shard(database), true)
            }
            (Some((database, sublink)), Some(restriction)) => {
                let (route, _) = self.main_route(restriction, databases)?;
                if route != Route::Shard(database) {
                    return Err(sublink.elsewhere(format!("shard {database}"), describe(&route)));
                }
                (route, true)
            }
        };
        let (route, pinned) = cte_writes::cover(&self.writes, route, pinned, params, sharding)?;
        self.finish(route, pinned, sharding, write)
    }

    /// Apply `cross_shard_disabled` (rule 9).
    fn finish(
        &self,
        route: Route,
        pinned: bool,
        sharding: &Sharding,
        write: bool,
    ) -> Result<Decision, RouteError> {
        let databases = sharding.databases;
        if sharding.cross_shard_disabled {
            let count = match &route {
                Route::Shards(shards) => shards.len(),
                Route::All => databases,
                Route::Shard(_) | Route::Any => 1,
            };
            if count > 1 {
                return Err(RouteError::CrossShardDisabled { count });
            }
        }
        Ok(Decision {
            routed: Routed {
                route,
                write,
                touches_moving: false,
            },
            pinned,
        })
    }
}

/// Rules 4-12 for a statement whose own levels read sharded tables:
/// `facts` of those levels' `tables`, and the sublinks that place it.
pub(super) fn plan_keyed(
    stmt: &StatementSummary,
    sharding: &Sharding,
    facts: &TableFacts<'_>,
    tables: &[TableRef],
    placed: Vec<Placed>,
) -> Result<Box<Keyed>, RouteError> {
    let (table, unknown) = facts.first_sharded.unwrap_or(("", false));
    let is_insert = matches!(stmt.kind, StatementKind::Insert);
    let is_merge = matches!(stmt.kind, StatementKind::Merge);
    if is_insert && stmt.insert_without_columns && facts.target_sharded {
        return Err(without_key(stmt, sharding, table, unknown));
    }
    let several = match (is_insert, is_merge) {
        _ if facts.reads_sharded => None,
        (true, _) => Some(Several::Insert(table.to_owned())),
        (_, true) => Some(Several::Error(without_key(stmt, sharding, table, unknown))),
        _ => None,
    };
    let keys = Keys {
        tables,
        sharding,
        only: None,
    };
    let conditions: Vec<Compiled> = stmt
        .conditions
        .iter()
        .map(|condition| keys.compile(condition, 0))
        .collect();
    // Most statements have no data-modifying WITH query: no call.
    let writes = match stmt.cte_writes.is_empty() {
        true => Vec::new(),
        false => cte_writes::plan(stmt, sharding, tables),
    };
    let single = match (conditions.as_slice(), &facts.families) {
        _ if !placed.is_empty() || !writes.is_empty() => None,
        ([only], None) => Single::of(only),
        _ => None,
    };
    // Boxed where it is built: a Keyed is a few hundred bytes, and the
    // plan keeps it boxed (returned bare, it was copied twice more).
    Ok(Box::new(Keyed {
        conditions,
        single,
        families: facts.families.clone(),
        free: free(stmt, sharding, facts),
        several,
        pinned: facts.families.is_some()
            || matches!(
                stmt.kind,
                StatementKind::Insert | StatementKind::Merge | StatementKind::Copy { .. }
            ),
        placed,
        unsharded: None,
        writes,
    }))
}

/// Where a statement on sharded tables goes when no condition restricts
/// it (rule 7).
fn free(
    stmt: &StatementSummary,
    sharding: &Sharding,
    facts: &TableFacts<'_>,
) -> Result<(Route, bool), RouteError> {
    let (table, unknown) = facts.first_sharded.unwrap_or(("", false));
    match stmt.kind {
        // Each database copies its own rows: only sound when the rows come
        // from (co-located) sharded tables.
        StatementKind::Insert | StatementKind::Merge if facts.reads_sharded => {
            Ok((Route::All, false))
        }
        StatementKind::Insert | StatementKind::Merge => {
            Err(without_key(stmt, sharding, table, unknown))
        }
        // A column-only entry may shard it by a column the COPY's rows
        // carry (the proxy reads which from the table's columns).
        StatementKind::Copy { to: false }
            if unknown && sharding.tables.iter().all(|e| e.name.is_some()) =>
        {
            Err(RouteError::UnknownTableWrite {
                statement: "COPY",
                table: table.to_owned(),
            })
        }
        StatementKind::Copy { to: false } => Err(RouteError::CopyIntoSharded {
            table: table.to_owned(),
        }),
        _ => Ok((Route::All, false)),
    }
}

impl Single {
    /// `key = $n` in one key space, if `condition` is that.
    fn of(condition: &Compiled) -> Option<Single> {
        match condition {
            Compiled::Param {
                n,
                array: false,
                keys,
                then_free: false,
            } => match keys.as_slice() {
                &[(entry, data_type)] => Some(Single {
                    n: *n,
                    entry,
                    data_type,
                }),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The error for an INSERT or MERGE into `table` that names no usable key.
fn without_key(
    stmt: &StatementSummary,
    sharding: &Sharding,
    table: &str,
    unknown: bool,
) -> RouteError {
    let is_merge = matches!(stmt.kind, StatementKind::Merge);
    let column = stmt
        .tables
        .iter()
        .filter(|t| t.name == table)
        .find_map(|t| sharding.tables.iter().find(|e| entry_names(e, t)))
        .map(|entry| entry.column.clone());
    match column {
        Some(column) if !unknown && is_merge => RouteError::MergeWithoutKey {
            table: table.to_owned(),
            column,
        },
        Some(column) if !unknown => RouteError::InsertWithoutKey {
            table: table.to_owned(),
            column,
        },
        _ => RouteError::UnknownTableWrite {
            statement: if is_merge { "MERGE" } else { "INSERT" },
            table: table.to_owned(),
        },
    }
}
