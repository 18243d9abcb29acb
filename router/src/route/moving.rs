//! Routes while logical shards move ([`crate::sharding::Moving`]): whether
//! a route touches a moving logical shard, and the refusals of schema
//! changes and of keyless statements on tables of a moving group.
//!
//! A statement that names a table of a moving group is planned a second
//! time against [`Sharding::shadow`], where each moving logical shard sits
//! on a database of its own (one past the last). Routed through it, the
//! statement names that database exactly when one of its keys (in its
//! conditions, sublinks, CTE writes, function arguments, family tables)
//! falls into a moving shard, or when it has no key and goes everywhere.
//! Every placement of the real route goes through the same functions, so
//! the two cannot disagree on which keys a statement has. The shadow is
//! planned only while a move is under way, and only for statements on the
//! moving group's tables: otherwise a plan carries nothing and a route
//! costs nothing more.

use std::sync::Arc;

use crate::sharding::{KeySpace, Sharding};
use crate::summary::{StatementKind, StatementSummary, Summary, TableRef};

use super::tables::{classify, entry_names, TableClass};
use super::{Decision, Overrides, Route, RouteError};

/// What routing a statement needs to know about the moves under way (the
/// statement planned against [`MovingPlan::shadow`] is kept beside it, in
/// `plan.rs`).
#[derive(Debug, Clone)]
pub(super) struct MovingPlan {
    /// The model with the moving shards on their own database.
    pub(super) shadow: Arc<Sharding>,
    /// The database each moving shard is on now.
    sources: Vec<usize>,
    /// The refusal for a route without the key, when a table it names
    /// refuses keyless statements.
    keyless: Option<RouteError>,
    /// The refusal of a schema change.
    schema_change: Option<RouteError>,
}

/// A table of the statement whose key space has a move under way.
struct Marked<'s> {
    table: &'s TableRef,
    column: &'s str,
    keys: &'s KeySpace,
}

impl MovingPlan {
    /// `None` when the statement names no table of a moving group (or
    /// nothing moves).
    pub(super) fn new(stmt: &StatementSummary, sharding: &Sharding) -> Option<MovingPlan> {
        if !sharding.moving() {
            return None;
        }
        let marked = marked(stmt, sharding);
        marked.first()?;
        // A marker that names no shard (the proxy has not read the moves
        // lately) refuses keyless statements only.
        let schema_change = marked
            .iter()
            .find(|m| m.keys.moving.as_ref().is_some_and(|m| !m.shards.is_empty()))
            .filter(|_| stmt.kind == StatementKind::Ddl)
            .map(|first| RouteError::SchemaChangeDuringMove {
                table: table_name(first.table),
                group: first.keys.group().to_string(),
                shards: shard_list(first.keys),
            });
        let shadow = sharding.shadow()?;
        let mut sources: Vec<usize> = marked
            .iter()
            .flat_map(|m| {
                let keys = m.keys;
                let shards = keys.moving.iter().flat_map(|moving| moving.shards.iter());
                shards.filter_map(|&s| keys.placement.get(s).copied())
            })
            .collect();
        sources.sort_unstable();
        sources.dedup();
        let keyless = marked
            .iter()
            .find(|m| m.keys.moving.as_ref().is_some_and(|m| m.refuse_keyless))
            .map(
                |m| match m.keys.moving.as_ref().and_then(|m| m.unread.as_ref()) {
                    Some(why) => RouteError::KeylessUnread {
                        table: table_name(m.table),
                        column: m.column.to_owned(),
                        why: why.clone(),
                    },
                    None => RouteError::KeylessDuringMove {
                        table: table_name(m.table),
                        column: m.column.to_owned(),
                        group: m.keys.group().to_string(),
                        shards: shard_list(m.keys),
                    },
                },
            );
        Some(MovingPlan {
            shadow: Arc::new(shadow),
            sources,
            keyless,
            schema_change,
        })
    }

    /// The refusal of the statement whatever its parameters: a schema
    /// change on a table of a moving group.
    pub(super) fn refusal(&self) -> Option<&RouteError> {
        self.schema_change.as_ref()
    }

    /// Whether `decision` (the statement's route with these overrides)
    /// touches a moving logical shard, given `shadow`, its route through
    /// [`MovingPlan::shadow`]; an error when it has no key and a table it
    /// names refuses that during the move. Conservative: a route the
    /// shadow cannot make touches.
    pub(super) fn touches(
        &self,
        overrides: &Overrides,
        decision: &Decision,
        shadow: Result<Decision, RouteError>,
    ) -> Result<bool, RouteError> {
        if overrides.shard.is_some() {
            // The client picked the database: it touches the moving
            // shards when it is where they are.
            return Ok(match &decision.routed.route {
                Route::Shard(d) => self.sources.contains(d),
                _ => true,
            });
        }
        let phantom = self.shadow.databases - 1;
        match shadow {
            Err(_) => Ok(true),
            Ok(shadow) => match shadow.routed.route {
                Route::All => match &self.keyless {
                    Some(err) => Err(err.clone()),
                    None => Ok(true),
                },
                Route::Shard(d) => Ok(d == phantom),
                Route::Shards(set) => Ok(set.contains(&phantom)),
                Route::Any => Ok(false),
            },
        }
    }
}

/// Whether a statement of `summary` names a table of a group with a move
/// under way: the statements the proxy splits by row itself (COPY FROM,
/// a row move, a split INSERT in the extended protocol) are held as
/// touching the moving shards when they do.
pub fn names_moving(summary: &Summary, sharding: &Sharding) -> bool {
    sharding.moving()
        && summary
            .statements
            .iter()
            .any(|stmt| !marked(stmt, sharding).is_empty())
}

/// The tables of `stmt` keyed in a key space with a move under way, in
/// the order the statement names them.
fn marked<'s>(stmt: &'s StatementSummary, sharding: &'s Sharding) -> Vec<Marked<'s>> {
    let mut out = Vec::new();
    for table in &stmt.tables {
        match classify(table, sharding) {
            TableClass::Family { family, .. } => {
                if family.keys.moving.is_some() {
                    out.push(Marked {
                        table,
                        column: "(the table's number)",
                        keys: &family.keys,
                    });
                }
            }
            class @ (TableClass::Sharded | TableClass::Unknown) => {
                let entries = sharding.tables.iter().filter(|entry| {
                    entry.keys.moving.is_some()
                        && match class {
                            TableClass::Sharded => entry_names(entry, table),
                            _ => entry.name.is_none(),
                        }
                });
                out.extend(entries.map(|entry| Marked {
                    table,
                    column: &entry.column,
                    keys: &entry.keys,
                }));
            }
            TableClass::Omnisharded | TableClass::Catalog => {}
        }
    }
    out
}

fn table_name(table: &TableRef) -> String {
    match &table.schema {
        Some(schema) => format!("{schema}.{}", table.name),
        None => table.name.clone(),
    }
}

fn shard_list(keys: &KeySpace) -> String {
    keys.moving
        .as_ref()
        .map(|moving| moving.shard_list())
        .unwrap_or_default()
}
