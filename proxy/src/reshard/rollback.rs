//! Undoing a move that failed before its switch: the hold let go, then on
//! fresh connections (the move's own may be
//! what broke) the subscription, the fence, the publication and slot, the
//! tables (and partitions) made on the target and the plain tables' rows
//! copied there and fence triggers dropped, each on its own (what fails is
//! logged), and the move recorded failed on both databases; then the
//! moving marker cleared.

use tracing::warn;

use crate::session::Shared;

use super::db::Link;
use super::mover::Made;
use super::plan::{MoveError, Plan};
use super::sql::ident;
use super::{cleanup, cutover, marker, partitioned, plain, store, Moves};

/// Undo what a move made before its switch (each step on its own: what
/// fails is logged), and record it failed with `error`.
pub async fn rollback(
    shared: &Shared,
    moves: &Moves,
    link: &Link,
    plan: &Plan,
    made: &Made,
    error: &MoveError,
) {
    // The cutover lets its hold go before it returns; this is for a move
    // stopped otherwise. Another move of the cluster cutting over now owns
    // the hold: leave it.
    if let Some(_turn) = moves.try_cutover_turn(&plan.cluster) {
        shared.gate.shards.set_held(&plan.cluster, false);
    }
    for (database, what, sql) in undo_statements(plan, made, error) {
        let done = match link.connect(database).await {
            Ok(mut db) => db.run(what, &sql).await,
            Err(e) => Err(e),
        };
        if let Err(e) = done {
            warn!(id = plan.id, "rolling the move back: {e}");
        }
    }
    // The slot goes once the subscription's walsender has let it go.
    if made.stream {
        let dropped = match link.connect(plan.source).await {
            Ok(mut a) => cleanup::drop_slot_waiting(plan, &mut a).await,
            Err(e) => Err(e),
        };
        if let Err(e) = dropped {
            warn!(id = plan.id, "rolling the move back: {e}");
        }
    }
    // Keyless statements on plain tables and partitioned parents stay
    // refused until the target's copy of the shard is gone.
    // (The group's other moves keep their shards marked.)
    shared.clusters.update_overlay(|o| o.end(&plan.id));
    marker::unmark(shared, moves, plan);
}

/// What undoes the move on each database, in order: (database, what for
/// the log, statement).
fn undo_statements(
    plan: &Plan,
    made: &Made,
    error: &MoveError,
) -> Vec<(usize, &'static str, String)> {
    let name = plan.stream_name();
    let mut undo: Vec<(usize, &'static str, String)> = Vec::new();
    if made.subscription {
        undo.extend(
            cleanup::unsubscribe(&name)
                .into_iter()
                .map(|sql| (plan.target, "drop the subscription", sql)),
        );
    }
    if made.fenced {
        undo.push((plan.source, "unfence", cutover::unfence(plan, made)));
    }
    if made.stream {
        undo.push((
            plan.source,
            "drop the publication",
            format!("DROP PUBLICATION IF EXISTS {}", ident(&name)),
        ));
        undo.push((plan.source, "drop the slot", cleanup::drop_slot(&name)));
    }
    if made.on_target {
        for table in &made.tables {
            undo.push((
                plan.target,
                "drop a copied table",
                format!("DROP TABLE IF EXISTS {}", table.sql()),
            ));
        }
    }
    undo.extend(row_undo(plan, made));
    for database in [plan.source, plan.target] {
        undo.push((
            database,
            "record the failure",
            store::fail(&plan.id, &error.to_string()),
        ));
        undo.push((database, "forget the marks", store::forget_marks(&plan.id)));
    }
    undo
}

/// The plain tables' and partitions' part of a rollback: on the source
/// the fence triggers (under a lock timeout), on the target the copied
/// rows and partitions.
fn row_undo(plan: &Plan, made: &Made) -> Vec<(usize, &'static str, String)> {
    let (mut source, mut target) = match plain::undo(plan, &made.plain) {
        Ok(statements) => statements,
        Err(e) => {
            warn!(id = plan.id, "rolling the move back: {e}");
            (Vec::new(), Vec::new())
        }
    };
    let (part_source, part_target) = partitioned::undo(plan, &made.parts);
    // The guard row (plain::undo's last statement) goes last.
    let guard = source.pop();
    source.extend(part_source);
    source.extend(guard);
    target.extend(part_target);
    let mut undo: Vec<(usize, &'static str, String)> = source
        .into_iter()
        .map(|sql| {
            (
                plan.source,
                "drop the fence",
                format!("SET lock_timeout = '5s'; {sql}"),
            )
        })
        .collect();
    if made.on_target {
        undo.extend(
            target
                .into_iter()
                .map(|sql| (plan.target, "undo the copy", sql)),
        );
    }
    undo
}
