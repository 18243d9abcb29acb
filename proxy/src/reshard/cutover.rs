//! A move's cutover: statements touching the moving logical shard are
//! held (`pool::gate::ShardHolds`) and those in flight drain; the source
//! is fenced in one transaction (its family tables of the shard go to
//! schema `pgshard_moved`, so a stale writer gets "relation does not
//! exist"; its plain tables' fence row is set, which waits for the
//! transactions that wrote the shard's rows and makes later writes fail
//! (`plain.rs`; the shard's partitions have the same fence); and a mark
//! row is written); once the mark shows on the target, everything the
//! source committed for the shard is there, and the switch commits on the
//! target (sequences stepped past the source's, its partitions attached,
//! the shard recorded as the target's). Then the running config places the shard on the
//! target and the held statements go on, routed there.
//!
//! Held statements wait at most `cutover_timeout`: a cutover that cannot
//! finish before then is abandoned (the source unfenced, traffic let go to
//! it) and tried again after `resharding_replication_retry_min_delay`, up
//! to `resharding_replication_retry_max_attempts` times.

use std::time::Duration;

use tokio::time::Instant;

use crate::pool::clusters::overlay::{Marker, Placed};
use crate::session::Shared;

use super::db::{Db, Link};
use super::fault::{self, Fault};
use super::mover::{Made, Table, MOVED_SCHEMA};
use super::plan::{MoveError, Plan};
use super::sql::{ident, literal, qualified};
use super::state::Phase;
use super::stub;
use super::{marker, partitioned, plain};
use super::{store, Moves};

/// Why an attempt stopped.
enum Stop {
    /// Not in time: let traffic go back to the source and try again.
    Abandon(String),
    /// For good.
    Fail(MoveError),
}

impl From<MoveError> for Stop {
    fn from(error: MoveError) -> Stop {
        Stop::Fail(error)
    }
}

/// Cut over; the longest any statement was held.
pub async fn cutover(
    shared: &Shared,
    link: &Link,
    plan: &Plan,
    made: &mut Made,
    moves: &Moves,
) -> Result<Duration, MoveError> {
    let general = &shared.config().general;
    let timeout = general.cutover_timeout();
    // 0: no limit.
    let attempts = match general.resharding_replication_retry_max_attempts {
        0 => usize::MAX,
        n => n,
    };
    let backoff = general.resharding_replication_retry_min_delay();
    let mut last = String::new();
    // The longest hold of an attempt, abandoned ones included.
    let mut longest = Duration::ZERO;
    for attempt in 1..=attempts {
        moves.check(&plan.id)?;
        let mut a = link.connect(plan.source).await?;
        let mut b = link.connect(plan.target).await?;
        // Moves running together (REBALANCE ... PARALLEL) cut over one at
        // a time: the hold is the cluster's.
        let turn = moves.cutover_turn(&plan.cluster).await;
        moves.set_phase(&plan.id, Phase::Holding);
        let held = Instant::now();
        shared.gate.shards.set_held(&plan.cluster, true);
        // Held statements give up at `timeout`; finish well before.
        let deadline =
            held + timeout.saturating_sub((timeout / 10).min(Duration::from_millis(200)));
        let stop = match attempt_once(
            shared,
            plan,
            made,
            moves,
            (&mut a, &mut b),
            (deadline, attempt),
        )
        .await
        {
            Ok(()) => {
                let waited = held.elapsed().max(longest);
                switched(shared, plan, moves);
                drop(turn);
                return Ok(waited);
            }
            Err(stop) => stop,
        };
        longest = longest.max(held.elapsed());
        if made.fenced {
            let undo = format!(
                "{}; {}",
                unfence(plan, made),
                store::set_phase(&plan.id, Phase::Catchup)
            );
            let unfenced = a.run("unfence", &undo).await;
            shared.gate.shards.set_held(&plan.cluster, false);
            unfenced?;
            made.fenced = false;
        } else {
            shared.gate.shards.set_held(&plan.cluster, false);
        }
        moves.set_phase(&plan.id, Phase::Catchup);
        drop(turn);
        match stop {
            Stop::Fail(error) => return Err(error),
            Stop::Abandon(why) => last = why,
        }
        tracing::warn!(
            id = plan.id,
            attempt,
            "cutover abandoned, traffic back on database {}: {last}",
            plan.source
        );
        tokio::time::sleep(backoff).await;
    }
    Err(MoveError::Cutover { attempts, last })
}

/// After the switch committed: the shard placed on the target in the
/// running config, the hold let go, the move `switched` (before the next
/// move's cutover may start).
fn switched(shared: &Shared, plan: &Plan, moves: &Moves) {
    // Plain tables keep refusing keyless statements until the source's
    // rows are cleaned up.
    let refuse = !plan.tables.is_empty();
    let marking = moves.marking();
    let marker = marker::marker(moves, plan, refuse);
    switch_placement(shared, plan, &marker, refuse);
    drop(marking);
    shared.gate.shards.set_held(&plan.cluster, false);
    moves.set_phase(&plan.id, Phase::Switched);
}

/// One try: drain, fence, wait for the mark, switch.
async fn attempt_once(
    shared: &Shared,
    plan: &Plan,
    made: &mut Made,
    moves: &Moves,
    (a, b): (&mut Db, &mut Db),
    (deadline, attempt): (Instant, usize),
) -> Result<(), Stop> {
    let left = || deadline.saturating_duration_since(Instant::now());
    if !shared.gate.shards.drained(&plan.cluster, left()).await {
        return Err(Stop::Abandon(
            "transactions on the shard stayed open".to_owned(),
        ));
    }
    let sequences = sequences(a, &made.tables).await?;
    let seq = u32::try_from(attempt).unwrap_or(u32::MAX);
    let mut fence = vec![
        format!(
            "SELECT set_config('lock_timeout', '{}ms', true)",
            left().as_millis().max(1)
        ),
        format!("CREATE SCHEMA IF NOT EXISTS {}", ident(MOVED_SCHEMA)),
    ];
    for table in &made.tables {
        fence.push(format!(
            "ALTER TABLE {} SET SCHEMA {}",
            table.sql(),
            ident(MOVED_SCHEMA)
        ));
        fence.push(stub::stub(table, &plan.id));
    }
    let group = plan.group.to_string();
    if made.row_fence() {
        fence.push(plain::fence(plan));
    }
    fence.push(store::set_phase(&plan.id, Phase::Fenced));
    fence.push(store::give_up(&group, plan.shard));
    fence.push(store::mark(&plan.id, seq));
    if let Err(error) = a.run("fence", &fence.join("; ")).await {
        return Err(Stop::Abandon(error.to_string()));
    }
    made.fenced = true;
    moves.set_phase(&plan.id, Phase::Fenced);
    loop {
        if b.value("wait for the fence mark", &store::mark_seen(&plan.id, seq))
            .await?
            .is_some()
        {
            break;
        }
        moves.check(&plan.id)?;
        if left().is_zero() {
            return Err(Stop::Abandon(format!(
                "database {} had not applied the fence mark yet",
                plan.target
            )));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    fault::park(moves, &plan.id, Fault::WhileHolding).await?;
    let mut switch: Vec<String> = sequences
        .iter()
        .map(|(name, value)| format!("SELECT setval({}, {value})", literal(name)))
        .collect();
    if made.row_fence() {
        switch.push(plain::take_back(plan));
    }
    switch.extend(partitioned::attach(plan, &made.parts));
    switch.push(store::take(&group, plan.shard, &plan.id));
    switch.push(store::set_phase(&plan.id, Phase::Switched));
    // The last moment CANCEL MOVE can stop the move.
    moves.check(&plan.id)?;
    b.run("switch", &switch.join("; ")).await?;
    Ok(())
}

/// The sequences the moving tables' columns own on the source (serial and
/// identity), with their last values: the target's are set past them.
async fn sequences(a: &mut Db, tables: &[Table]) -> Result<Vec<(String, i64)>, MoveError> {
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    let oids: Vec<String> = tables
        .iter()
        .map(|t| format!("{}::regclass", literal(&t.sql())))
        .collect();
    let sql = format!(
        "SELECT quote_ident(ps.schemaname) || '.' || quote_ident(ps.sequencename), ps.last_value \
         FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S' \
         JOIN pg_namespace n ON n.oid = s.relnamespace \
         JOIN pg_sequences ps ON ps.schemaname = n.nspname AND ps.sequencename = s.relname \
         WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass \
         AND d.deptype IN ('a', 'i') AND d.refobjid IN ({}) AND ps.last_value IS NOT NULL",
        oids.join(", ")
    );
    Ok(a.rows("read the sequences", &sql)
        .await?
        .into_iter()
        .filter_map(|r| match r.as_slice() {
            [Some(name), Some(value)] => Some((name.clone(), value.parse().ok()?)),
            _ => None,
        })
        .collect())
}

/// The statements that put the source's fenced tables back, lift its
/// plain tables' fence (and restore its record of the shard).
pub fn unfence(plan: &Plan, made: &Made) -> String {
    let mut sql: Vec<String> = made
        .tables
        .iter()
        .flat_map(|t| {
            [
                stub::drop_stub(t),
                format!(
                    "ALTER TABLE IF EXISTS {} SET SCHEMA {}",
                    qualified(MOVED_SCHEMA, &t.name),
                    ident(&t.schema)
                ),
            ]
        })
        .collect();
    if made.row_fence() {
        sql.push(plain::unfence(plan));
    }
    sql.push(store::take(&plan.group.to_string(), plan.shard, "unfenced"));
    sql.join("; ")
}

/// The running config with the shard placed on the target in every
/// member of its group, and this process's moving marker of the group set
/// to `marker` (empty: cleared), keyless statements refused when
/// `refuse_keyless`, in one change.
fn switch_placement(shared: &Shared, plan: &Plan, marker: &[usize], refuse_keyless: bool) {
    // Recorded first, so that a RELOAD from here on keeps the shard there.
    shared.clusters.update_overlay(|overlay| {
        let placed = Placed {
            database: plan.target,
            since: plan.id.clone(),
        };
        overlay.place(&plan.cluster, plan.group, plan.shard, placed);
        let marker = Marker {
            shards: marker.to_vec(),
            refuse_keyless,
        };
        overlay.mark(&plan.cluster, plan.group, marker);
    });
    shared.relay(&plan.cluster);
}
