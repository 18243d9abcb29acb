//! Rules 3-12 for one statement that is not transaction control, without
//! overrides, planned once per statement and config into a [`Body`]: a
//! decision no parameter value can change (an error included), or a
//! [`Keyed`] statement whose route the bound key values decide.

use crate::sharding::Sharding;
use crate::summary::{SchemaChange, StatementKind, StatementSummary, Sublinks};

use super::cte_writes;
use super::facts::{classified_facts, table_facts, TableFacts};
use super::keyed::{plan_keyed, Keyed};
use super::schema;
use super::sublinks;
use super::tables::{entry_names, Classes, TableClass};
use super::{to_route, Decision, Route, RouteError, Routed};

#[derive(Debug, Clone)]
pub(super) enum Body {
    /// Known without parameters.
    Fixed(Result<Decision, RouteError>),
    /// Depends on the key values.
    Keyed(Box<Keyed>),
}

/// Rules 3-11 for a statement that is not transaction control, without
/// overrides: fixed where parameter values cannot change the outcome.
/// `classes`: what the statement's tables are.
pub(super) fn plan_body(
    stmt: &StatementSummary,
    classes: &Classes<'_>,
    sharding: &Sharding,
    write: bool,
) -> Body {
    body(stmt, classes, sharding, write).unwrap_or_else(|err| Body::Fixed(Err(err)))
}

fn body(
    stmt: &StatementSummary,
    classes: &Classes<'_>,
    sharding: &Sharding,
    write: bool,
) -> Result<Body, RouteError> {
    let databases = sharding.databases;
    let done = |route: Route, pinned: bool| {
        Ok(Body::Fixed(Ok(Decision {
            routed: Routed {
                route,
                write,
                touches_moving: false,
            },
            pinned,
        })))
    };
    let ddl = matches!(stmt.kind, StatementKind::Ddl);
    if databases <= 1 {
        let route = if stmt.tables.is_empty() && !ddl {
            Route::Any
        } else if databases == 1 {
            Route::Shard(0)
        } else {
            Route::All
        };
        return done(route, false);
    }
    let target = stmt.target.as_ref().zip(classes.target);
    let facts = classified_facts(target, classes.zip(stmt), sharding)?;
    check_write_target(stmt, classes.target, &facts, sharding)?;
    cte_writes::check(stmt, sharding)?;
    schema::check(stmt, sharding)?;
    create_as_sublinks(stmt, sharding, &facts)?;
    let unsharded = match stmt.kind {
        StatementKind::Ddl => Route::All,
        _ if stmt.tables.is_empty() || !stmt.write => Route::Any,
        _ => Route::All,
    };
    match stmt.sublinks.as_deref() {
        // Schema changes do not run their sublinks here (a view's run where
        // the view is read).
        Some(sublinks) if !ddl => with_sublinks(stmt, sharding, write, &facts, sublinks, unsharded),
        _ if !facts.touches_sharded => done(unsharded, false),
        _ if ddl => {
            // Every database holds a part of a sharded table, so schema
            // changes go everywhere; a family table lives on its own
            // database only.
            let route = match &facts.families {
                Some(set) => to_route(set, databases),
                None => Route::All,
            };
            done(route, facts.families.is_some())
        }
        _ => {
            let keyed = plan_keyed(stmt, sharding, &facts, &stmt.tables, Vec::new())?;
            Ok(settle(keyed, sharding, write))
        }
    }
}

/// Rule 12: the statement's own levels are those outside its sublinks,
/// and the sublinks that must live on one database place it.
fn with_sublinks(
    stmt: &StatementSummary,
    sharding: &Sharding,
    write: bool,
    facts: &TableFacts<'_>,
    sublinks: &Sublinks,
    unsharded: Route,
) -> Result<Body, RouteError> {
    let outside = &sublinks.tables_outside;
    let main = table_facts(stmt.target.as_ref(), outside, sharding)?;
    let first = facts.first_sharded.map(|(table, unknown)| {
        let what = if unknown {
            "is not in the sharding config (so is treated as sharded)"
        } else {
            "is sharded"
        };
        (table, what)
    });
    let first = first.or(facts.first_read);
    let placed = sublinks::plan(stmt, sublinks, sharding, first)?;
    let keyed = match (main.touches_sharded, placed.is_empty()) {
        (false, true) => {
            return Ok(Body::Fixed(Ok(Decision {
                routed: Routed {
                    route: unsharded,
                    write,
                    touches_moving: false,
                },
                pinned: false,
            })))
        }
        (false, false) => {
            Keyed::placed_only(placed, unsharded, cte_writes::plan(stmt, sharding, outside))
        }
        (true, _) => plan_keyed(stmt, sharding, &main, outside, placed)?,
    };
    Ok(settle(keyed, sharding, write))
}

/// A schema change that runs its query: CREATE TABLE AS, SELECT INTO, a
/// materialized view (rules 12 and 13 apply to that query).
pub(super) fn creates_from_query(stmt: &StatementSummary) -> bool {
    matches!(
        stmt.schema_change.as_deref(),
        Some(SchemaChange::CreateAs { with_data, matview, .. }) if *with_data || *matview
    )
}

/// Rule 12 for CREATE TABLE AS: it runs on every database, so a sublink
/// over sharded rows must be correlated (none can place it on one).
fn create_as_sublinks(
    stmt: &StatementSummary,
    sharding: &Sharding,
    facts: &TableFacts<'_>,
) -> Result<(), RouteError> {
    let (Some(sublinks), true) = (stmt.sublinks.as_deref(), creates_from_query(stmt)) else {
        return Ok(());
    };
    let Some(SchemaChange::CreateAs { table, .. }) = stmt.schema_change.as_deref() else {
        return Ok(());
    };
    let placed = sublinks::plan(stmt, sublinks, sharding, facts.first_read)?;
    match placed.first() {
        Some(sublink) => {
            let (read, what) = sublink.read();
            Err(RouteError::CreateAsSubquery {
                table: table.name.clone(),
                read: read.to_owned(),
                what,
            })
        }
        None => Ok(()),
    }
}

/// A fixed body if no parameter can change the outcome.
fn settle(keyed: Box<Keyed>, sharding: &Sharding, write: bool) -> Body {
    if keyed.is_fixed() {
        // No parameter to wait for: settle it now.
        return Body::Fixed(keyed.decide(&[], sharding, write));
    }
    Body::Keyed(keyed)
}

/// Rule 11: refuse writes that would leave rows where they do not belong
/// (`class`: the target's).
fn check_write_target(
    stmt: &StatementSummary,
    class: Option<TableClass<'_>>,
    facts: &TableFacts<'_>,
    sharding: &Sharding,
) -> Result<(), RouteError> {
    let (Some(target), Some(class)) = (&stmt.target, class) else {
        return Ok(());
    };
    if !stmt.set_columns.is_empty() {
        let key = sharding.tables.iter().find(|entry| {
            let keys_target = match class {
                TableClass::Sharded => entry_names(entry, target),
                TableClass::Unknown => entry.name.is_none(),
                _ => false,
            };
            keys_target && stmt.set_columns.contains(&entry.column)
        });
        if let Some(entry) = key {
            return Err(RouteError::ShardingKeyChange {
                table: target.name.clone(),
                column: entry.column.clone(),
            });
        }
    }
    if class == TableClass::Omnisharded {
        if let Some((read, what)) = facts.first_read {
            return Err(RouteError::OmnishardedFromSharded {
                table: target.name.clone(),
                read: read.to_owned(),
                what,
            });
        }
    }
    Ok(())
}
