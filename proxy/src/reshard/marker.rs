//! The router's moving marker (`router::sharding::Moving`) of a placement
//! group: which logical shards of it are moving, so that routes say
//! whether they touch them (the cutover's hold counts and holds those),
//! and whether keyless statements on its tables are refused. Moves running
//! together (REBALANCE ... PARALLEL) compute and set it under
//! `Moves::marking`, each move's shard kept from its start to its end.

use crate::session::Shared;

use super::plan::Plan;
use super::Moves;

/// The shards the router's moving marker should name for `plan`'s group:
/// those of its other moves that are marked and have not ended (a family
/// move's until its switch; with plain tables, until the move ends: one
/// that switched keeps its rows on two databases until its cleanup);
/// `plan`'s own when `with_this`. Computed and set under
/// `Moves::marking`, as moves of a REBALANCE ... PARALLEL run together.
pub fn marker(moves: &Moves, plan: &Plan, with_this: bool) -> Vec<usize> {
    let group = plan.group.to_string();
    let mut shards: Vec<usize> = moves
        .list()
        .into_iter()
        .filter(|m| m.cluster == plan.cluster && m.group == group && m.id != plan.id)
        .filter(|m| m.marked && !m.phase.is_final())
        .filter(|m| !plan.tables.is_empty() || !m.phase.switched())
        .map(|m| m.shard)
        .collect();
    if with_this {
        shards.push(plan.shard);
    }
    shards
}

/// Mark the plan's shard moving in the running config (with the group's
/// other unfinished moves): routes say whether they touch it, schema
/// changes on the group are refused, and with plain tables keyless
/// statements too (from the copy on, the shard's rows are on both
/// databases).
pub fn mark_moving(shared: &Shared, moves: &Moves, plan: &Plan) {
    let _marking = moves.marking();
    moves.update(&plan.id, |s| s.marked = true);
    let marker = marker(moves, plan, true);
    shared.set_moving(&plan.cluster, plan.group, &marker, !plan.tables.is_empty());
}

/// Take `plan`'s shard out of the moving marker (it ended, or switched
/// and keeps no rows on two databases), keeping the group's other moves'.
pub fn unmark(shared: &Shared, moves: &Moves, plan: &Plan) {
    let _marking = moves.marking();
    moves.update(&plan.id, |s| s.marked = false);
    let marker = marker(moves, plan, false);
    shared.set_moving(&plan.cluster, plan.group, &marker, !plan.tables.is_empty());
}
