//! After a move's switch: the subscription (detached from its slot first,
//! so that dropping it needs no connection to the source), the
//! publication and the slot go at once; the source's old tables of the
//! shard (in `pgshard_moved`, where no one routes), its rows of plain
//! tables (`plain.rs`) and its partitions (`partitioned.rs`: detached
//! concurrently, dropped) after the cleanup delay, which leaves other pgshard
//! instances time to learn the new placement while their stale writes
//! still fail there. Keyless statements on plain and partitioned tables
//! are served again once their old rows are gone.

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::session::Shared;

use super::db::{Db, Link};
use super::mover::{Made, MOVED_SCHEMA};
use super::plan::{MoveError, Plan};
use super::sql::{ident, literal, qualified};
use super::state::Phase;
use super::stub;
use super::{marker, partitioned, plain};
use super::{store, Moves};

/// The statements that drop subscription `name` without touching its slot.
pub fn unsubscribe(name: &str) -> Vec<String> {
    let name = ident(name);
    vec![
        format!("ALTER SUBSCRIPTION {name} DISABLE"),
        format!("ALTER SUBSCRIPTION {name} SET (slot_name = NONE)"),
        format!("DROP SUBSCRIPTION {name}"),
    ]
}

/// The statement that drops slot `name` unless a walsender still uses it.
pub fn drop_slot(name: &str) -> String {
    format!(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots \
         WHERE slot_name = {} AND NOT active",
        literal(name)
    )
}

/// Drop the subscription, the publication and the slot.
pub async fn drop_stream(plan: &Plan, a: &mut Db, b: &mut Db) -> Result<(), MoveError> {
    let name = plan.stream_name();
    for sql in unsubscribe(&name) {
        b.run("drop the subscription", &sql).await?;
    }
    a.run(
        "drop the publication",
        &format!("DROP PUBLICATION IF EXISTS {}", ident(&name)),
    )
    .await?;
    drop_slot_waiting(plan, a).await
}

/// Drop the move's slot on the source, once no walsender uses it (at most
/// 10 s).
pub async fn drop_slot_waiting(plan: &Plan, a: &mut Db) -> Result<(), MoveError> {
    let name = plan.stream_name();
    // The subscription's walsender on the source ends a moment after
    // the subscription is disabled; the slot goes once it has.
    let left = format!(
        "SELECT active FROM pg_replication_slots WHERE slot_name = {}",
        literal(&name)
    );
    for _ in 0..200 {
        a.run("drop the slot", &drop_slot(&name)).await?;
        if a.value("drop the slot", &left).await?.is_none() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(MoveError::Check(format!(
        "slot {name} on database {} is still in use after 10 s: drop it by hand (pg_drop_replication_slot)",
        plan.source
    )))
}

/// After `delay`, drop the source's old tables and rows and the marks,
/// and record the move done (on its own task: the next move need not
/// wait).
pub fn finish_later(
    (shared, link): (Arc<Shared>, Link),
    plan: Plan,
    made: Made,
    delay: Duration,
    moves: Arc<Moves>,
) {
    tokio::spawn(async move {
        // The move stays this process's meanwhile (its heartbeat renewed):
        // no other instance takes it over.
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = super::heartbeat(&link, &plan, &moves) => {}
        }
        match finish(&link, &plan, &made).await {
            Ok(rows) => {
                moves.set_phase(&plan.id, Phase::Done);
                moves.finished(&plan.id, None);
                shared.clusters.update_overlay(|o| o.end(&plan.id));
                shared.relay(&plan.cluster);
                if made.row_fence() {
                    marker::unmark(&shared, &moves, &plan);
                }
                info!(
                    id = plan.id,
                    "move done: the old tables and {rows} rows of logical shard {} dropped on database {}",
                    plan.shard,
                    plan.source
                );
            }
            Err(error) => {
                warn!(
                    id = plan.id,
                    "move switched, but its cleanup failed: {error}"
                );
                moves.update(&plan.id, |s| s.error = Some(format!("cleanup: {error}")));
            }
        }
    });
}

pub(super) async fn finish(link: &Link, plan: &Plan, made: &Made) -> Result<u64, MoveError> {
    let mut a = link.connect(plan.source).await?;
    let rows = plain::clean_source(&mut a, plan, &made.plain).await?;
    partitioned::clean_source(&mut a, &made.parts).await?;
    let mut drop: Vec<String> = made
        .tables
        .iter()
        .flat_map(|t| {
            [
                stub::drop_stub(t),
                format!("DROP TABLE IF EXISTS {}", qualified(MOVED_SCHEMA, &t.name)),
            ]
        })
        .collect();
    drop.push(store::forget_marks(&plan.id));
    drop.push(store::set_phase(&plan.id, Phase::Done));
    a.run("drop the old tables", &drop.join("; ")).await?;
    let mut b = link.connect(plan.target).await?;
    let done = format!(
        "{}; {}",
        store::forget_marks(&plan.id),
        store::set_phase(&plan.id, Phase::Done)
    );
    b.run("record the move done", &done).await?;
    Ok(rows)
}
