//! Routing in two steps: what a statement's tables and key columns are
//! under one sharding config ([`StatementPlan::new`], once per statement and
//! config), then where it goes with this Bind's parameters and overrides
//! ([`StatementPlan::decide`], per execution). Everything that does not
//! depend on parameter values (table classification, column resolution,
//! key-space lookup, literal keys, the errors of rules 7 and 11) is settled
//! in the first step, so a cached statement routes with a hash and a few
//! branches.

use crate::sharding::{KeySpace, Sharding};
use crate::summary::{StatementKind, StatementSummary, Summary};

use super::behind::Behind;
use super::body::{creates_from_query, plan_body, Body};
use super::joins::{self, JoinPlan};
use super::key_values::{self, type_name};
use super::moving::MovingPlan;
use super::tables::{entry_names, Classes, TableClass};
use super::{combine, Decision, Overrides, ParamValue, Route, RouteError, Routed};

/// A statement string planned against one sharding config. Route it with
/// the same config it was planned with (a cache keeps the pair together);
/// with another, keys it cannot resolve restrict nothing.
#[derive(Debug, Clone)]
pub struct RoutePlan {
    statements: Vec<StatementPlan>,
}

impl RoutePlan {
    pub fn new(summary: &Summary, sharding: &Sharding) -> RoutePlan {
        RoutePlan {
            statements: summary
                .statements
                .iter()
                .map(|stmt| StatementPlan::new(stmt, sharding))
                .collect(),
        }
    }

    /// Where the statement string goes (see [`super::route_all`]).
    pub fn route(
        &self,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
        sharding: &Sharding,
    ) -> Result<Routed, RouteError> {
        if let [only] = self.statements.as_slice() {
            return only
                .decide(params, overrides, sharding)
                .map(|decision| decision.routed);
        }
        let mut out = Decision {
            routed: Routed {
                route: Route::Any,
                write: false,
                touches_moving: false,
            },
            pinned: false,
        };
        for stmt in &self.statements {
            let next = stmt.decide(params, overrides, sharding)?;
            out = combine(out, next, sharding.databases)?;
        }
        Ok(out.routed)
    }
}

/// One statement planned against one config.
#[derive(Debug, Clone)]
pub(crate) struct StatementPlan {
    /// Rule 1: transaction control and session statements go `Any`,
    /// whatever the overrides say.
    control: bool,
    write: bool,
    /// The key space a `pgdog.sharding_key` override is read in (rule 2).
    override_space: Option<Space>,
    /// Rules 3-12, without overrides.
    body: Body,
    /// Rule 13: the join levels to check once the route is known; a fixed
    /// error if one can never be exact.
    joins: Option<Box<Result<JoinPlan, RouteError>>>,
    /// Rule 14: what stands behind the names it uses.
    behind: Option<Box<Behind>>,
    /// Rule 17: the moves under way its tables take part in, and the
    /// statement planned against their shadow model.
    moving: Option<Box<(MovingPlan, StatementPlan)>>,
}

/// A key space of the config, by index.
#[derive(Debug, Clone, Copy)]
enum Space {
    Table(usize),
    Family(usize),
}

impl Space {
    fn get(self, sharding: &Sharding) -> Option<&KeySpace> {
        match self {
            Space::Table(i) => sharding.tables.get(i).map(|entry| &entry.keys),
            Space::Family(i) => sharding.families.get(i).map(|family| &family.keys),
        }
    }
}

impl StatementPlan {
    pub(crate) fn new(stmt: &StatementSummary, sharding: &Sharding) -> StatementPlan {
        let control = matches!(
            stmt.kind,
            StatementKind::Begin
                | StatementKind::Commit
                | StatementKind::Rollback
                | StatementKind::TransactionOther
                | StatementKind::Session
                | StatementKind::SetShard(_)
                | StatementKind::SetShardingKey(_)
        );
        let write = stmt.write || stmt.locking;
        if control {
            return StatementPlan {
                control,
                write,
                override_space: None,
                body: Body::Fixed(Ok(Decision {
                    routed: Routed {
                        route: Route::Any,
                        write: false,
                        touches_moving: false,
                    },
                    pinned: false,
                })),
                joins: None,
                behind: None,
                moving: None,
            };
        }
        // What each table is, once for every rule below.
        let classes = Classes::of(stmt, sharding);
        let moving = MovingPlan::new(stmt, sharding).map(|moving| {
            let shadow = StatementPlan::new(stmt, &moving.shadow);
            Box::new((moving, shadow))
        });
        let override_space = override_key_space(stmt, &classes, sharding);
        if let Some(err) = moving.as_ref().and_then(|m| m.0.refusal()).cloned() {
            // Rule 17: refused whatever its parameters (overrides still
            // pick a database).
            return StatementPlan {
                control,
                write,
                override_space,
                body: Body::Fixed(Err(err)),
                joins: None,
                behind: None,
                moving,
            };
        }
        StatementPlan {
            control,
            write,
            override_space,
            body: plan_body(stmt, &classes, sharding, write),
            // Rule 13, after rule 3 (one database) and never for schema
            // changes (a view's joins run where the view is read).
            joins: if sharding.databases <= 1
                || (matches!(stmt.kind, StatementKind::Ddl) && !creates_from_query(stmt))
            {
                None
            } else {
                joins::plan(stmt, sharding).transpose().map(Box::new)
            },
            behind: Behind::plan(stmt, sharding),
            moving,
        }
    }

    pub(crate) fn decide(
        &self,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
        sharding: &Sharding,
    ) -> Result<Decision, RouteError> {
        // Nothing moving (always, but during a move): its result as it
        // is, written where the caller wants it (unwrapping and wrapping
        // it again cost the prepared path 40 instructions,
        // `bench/route_instructions.sh`).
        let Some((moving, shadow)) = self.moving.as_deref() else {
            return self.decide_route(params, overrides, sharding);
        };
        let mut decision = self.decide_route(params, overrides, sharding)?;
        let through_shadow = shadow.decide(params, overrides, &moving.shadow);
        decision.routed.touches_moving = moving.touches(overrides, &decision, through_shadow)?;
        Ok(decision)
    }

    /// Rules 1-16: where it goes.
    fn decide_route(
        &self,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
        sharding: &Sharding,
    ) -> Result<Decision, RouteError> {
        let done = |route: Route, pinned: bool| Decision {
            routed: Routed {
                route,
                write: self.write,
                touches_moving: false,
            },
            pinned,
        };
        if self.control {
            return Ok(Decision {
                routed: Routed {
                    route: Route::Any,
                    write: false,
                    touches_moving: false,
                },
                pinned: false,
            });
        }
        let databases = sharding.databases;
        if let Some(shard) = overrides.shard {
            if shard >= databases {
                return Err(RouteError::NoSuchShard { shard, databases });
            }
            return Ok(done(Route::Shard(shard), true));
        }
        if let Some(value) = &overrides.sharding_key {
            let key_space = self
                .override_space
                .and_then(|space| space.get(sharding))
                .ok_or(RouteError::NoKeySpace)?;
            let key = crate::hash::parse_text(key_space.data_type, value).map_err(|reason| {
                RouteError::BadKey {
                    column: "pgdog.sharding_key".to_owned(),
                    data_type: type_name(key_space.data_type),
                    reason,
                }
            })?;
            let shard = key_values::database(sharding, key_space, &key, || {
                "pgdog.sharding_key".to_owned()
            })?;
            return Ok(done(Route::Shard(shard), true));
        }
        let mut decision = match &self.body {
            Body::Fixed(decision) => decision.clone(),
            Body::Keyed(keyed) => keyed.decide(params, sharding, self.write),
        }?;
        if let Some(behind) = &self.behind {
            let route = std::mem::replace(&mut decision.routed.route, Route::Any);
            let before = route.clone();
            decision.routed.route = behind.apply(route, params, sharding)?;
            if decision.routed.route != before {
                // Placed on the database a function's key or a sequence
                // needs, or on every one (it writes omnisharded tables).
                decision.pinned = true;
                decision.routed.write |= decision.routed.route == Route::All;
            }
        }
        match self.joins.as_deref() {
            None => {}
            Some(Ok(joins)) => joins.check(params, sharding, &decision.routed.route)?,
            Some(Err(err)) => return Err(err.clone()),
        }
        Ok(decision)
    }
}

/// The key space a `pgdog.sharding_key` value is typed and hashed with
/// (`classes`: what the statement's tables are).
fn override_key_space(
    stmt: &StatementSummary,
    classes: &Classes<'_>,
    sharding: &Sharding,
) -> Option<Space> {
    // A table is `Sharded` exactly when an entry names it.
    let named = classes
        .zip(stmt)
        .filter(|(_, class)| *class == TableClass::Sharded)
        .find_map(|(t, _)| sharding.tables.iter().position(|e| entry_names(e, t)));
    if let Some(index) = named {
        return Some(Space::Table(index));
    }
    let family = classes.tables.iter().find_map(|class| match class {
        TableClass::Family { family, .. } => sharding
            .families
            .iter()
            .position(|f| std::ptr::eq(f, *family)),
        _ => None,
    });
    if let Some(index) = family {
        return Some(Space::Family(index));
    }
    if !sharding.tables.is_empty() {
        Some(Space::Table(0))
    } else if !sharding.families.is_empty() {
        Some(Space::Family(0))
    } else {
        None
    }
}
