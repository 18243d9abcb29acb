//! Rule 13: joins. Postgres joins, on each database, the rows that
//! database holds, so a query level that joins sharded tables (or unknown
//! or family ones, or subqueries and CTEs reading them) answers exactly only
//! when the rows it pairs up live on the same database: when its items are
//! connected by equalities between co-located sharding keys, or all
//! restricted to one database. [`plan`] connects each level's items once
//! per statement and config; [`JoinPlan::check`] evaluates, per execution,
//! where the parts of a level that are not connected live.

mod connect;
mod items;

use crate::sharding::Sharding;
use crate::summary::StatementSummary;

use super::keys::{restrict, Compiled, Restriction};
use super::shard_set::ShardSet;
use super::{ParamValue, Route, RouteError};
use connect::Level;

/// The levels of a statement whose parts must be checked per execution.
#[derive(Debug, Clone)]
pub(super) struct JoinPlan {
    levels: Vec<LevelPlan>,
}

/// A level whose sharded items are not all connected, or that preserves
/// rows every database holds in an outer join with sharded rows.
#[derive(Debug, Clone)]
struct LevelPlan {
    /// Its connected parts (at least one).
    parts: Vec<Part>,
    /// The sharded item an outer join matches with rows every database
    /// holds, keeping those rows: then the statement must run on one
    /// database, which every part is restricted to.
    everywhere: Option<Label>,
}

/// Items of a level connected by co-located keys: their rows meet on one
/// database. Where they live: the level's condition as it names their
/// tables, their derived items' own conditions and their family tables.
#[derive(Debug, Clone)]
struct Part {
    conditions: Vec<Compiled>,
    families: Option<ShardSet>,
    /// Its family tables and derived items live on no common database: it
    /// pairs no rows.
    empty: bool,
    label: Label,
}

/// A sharded item, as an error names it.
#[derive(Debug, Clone)]
struct Label {
    table: String,
    what: &'static str,
}

const SHARDED: &str = "is sharded";
const UNKNOWN: &str = "is not in the sharding config (so is treated as sharded)";
const FAMILY: &str = "is a sharded table family";
const OPAQUE: &str =
    "may read sharded tables (it names too many tables, or a CTE name defined twice, to tell)";

/// The levels of `stmt` to check per execution; an error if some level can
/// never be exact.
pub(super) fn plan(
    stmt: &StatementSummary,
    sharding: &Sharding,
) -> Result<Option<JoinPlan>, RouteError> {
    let Some(joins) = stmt.joins.as_deref() else {
        return Ok(None);
    };
    let mut levels = Vec::new();
    for level in &joins.levels {
        if let Some(plan) = Level::new(level, sharding)?.plan()? {
            levels.push(plan);
        }
    }
    Ok((!levels.is_empty()).then_some(JoinPlan { levels }))
}

impl JoinPlan {
    /// Whether the levels are exact with these parameters when the
    /// statement runs on `route`.
    pub(super) fn check(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        route: &Route,
    ) -> Result<(), RouteError> {
        self.levels
            .iter()
            .try_for_each(|level| level.check(params, sharding, route))
    }
}

impl LevelPlan {
    fn check(
        &self,
        params: &[ParamValue<'_>],
        sharding: &Sharding,
        route: &Route,
    ) -> Result<(), RouteError> {
        // The parts that may pair rows, and the databases they live on
        // (`None`: anywhere).
        let mut live: Vec<(Option<ShardSet>, &Part)> = Vec::new();
        for part in &self.parts {
            if part.empty {
                continue;
            }
            match restrict(&part.conditions, params, sharding, part.families.clone())? {
                // No row of it matches: it pairs nothing wherever it runs.
                Restriction::Nothing(_) => {}
                Restriction::Free => live.push((None, part)),
                Restriction::Set(set) => live.push((Some(set), part)),
            }
        }
        let single = |set: &Option<ShardSet>| match set {
            Some(set) if set.len() == 1 => set.first(),
            _ => None,
        };
        if let Some(label) = &self.everywhere {
            let on_one = match route {
                Route::Shard(database) => {
                    live.iter().all(|(set, _)| single(set) == Some(*database))
                }
                _ => false,
            };
            if !on_one {
                return Err(RouteError::OuterJoinEverywhere {
                    table: label.table.clone(),
                    what: label.what,
                });
            }
            return Ok(());
        }
        let Some(((first_set, first), rest)) = live.split_first() else {
            return Ok(());
        };
        let database = single(first_set);
        let other = rest
            .iter()
            .find(|(set, _)| database.is_none() || single(set) != database);
        match other {
            Some((_, second)) => Err(RouteError::JoinWithoutKey {
                first: first.label.table.clone(),
                first_what: first.label.what,
                second: second.label.table.clone(),
                second_what: second.label.what,
            }),
            None => Ok(()),
        }
    }
}
