//! Online moves of logical shards between databases (issue 33): `MOVE
//! SHARD` (admin console) checks a request against the running config
//! (`plan.rs`) and hands it to the supervisor task ([`run`], spawned next
//! to the catalog reader), which runs a job's moves (one, or REBALANCE's
//! rounds) in turn:
//! - `mover.rs`: checks, schema on the target, publication and slot with
//!   an exported snapshot, the copy under it, catch-up by a native
//!   subscription on the target (`instances.rs`: before plain tables'
//!   rows are copied, every live pgshard instance marks the move);
//! - `cutover.rs`: hold, fence the source, wait for its mark on the target,
//!   switch, place the shard on the target in the running config, let go;
//! - `cleanup.rs`: subscription, publication and slot, and the source's
//!   old tables after the cleanup delay.
//!
//! The phases are `state.rs`'s; each is recorded on the databases
//! (`store.rs`) and in [`Moves`] (SHOW MOVES, the metrics, a progress log
//! line every few seconds); `rollback.rs` undoes a move that failed or
//! was cancelled (CANCEL MOVE) before its switch. `rebalance.rs` plans
//! REBALANCE's moves; `overlay.rs` reads where the databases say logical
//! shards are (at start-up and every poll: other instances' switches), on
//! `readers.rs`' connections;
//! `recover.rs` finishes or rolls back moves a stopped process left;
//! `save.rs` writes `cutover_save_config`'s placement; `marker.rs` keeps
//! the router's moving marker of the moves under way. Table families,
//! plain tables (`plain.rs`: the shard's rows, a row filter, a trigger
//! fence) and tables partitioned by hash (`partitioned.rs`: the shard's
//! partition, attached on the target at the switch) move.

mod cleanup;
mod cutover;
mod db;
pub mod fault;
mod instances;
mod marker;
mod mover;
mod moves;
pub mod overlay;
mod partitioned;
mod plain;
pub mod plan;
mod readers;
pub mod rebalance;
mod recover;
mod rollback;
pub mod save;
mod sql;
pub mod state;
pub mod store;
mod stub;

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::lock::lock;
use crate::session::Shared;

use self::db::Link;
use self::fault::Fault;
use self::mover::Made;
use self::plan::{MoveError, Plan};
use self::state::Phase;

pub use self::moves::{Job, MoveStatus, Moves};

/// How often a running move logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Run the moves asked for, a job at a time (its rounds in turn, the moves
/// of a round together), until the process ends; and, beside them, read
/// where the databases say logical shards are and take over moves other
/// processes left behind (`overlay.rs`, `recover.rs`).
pub async fn run(shared: Arc<Shared>, moves: Arc<Moves>) {
    let Some(mut requests) = lock(&moves.receiver).take() else {
        return;
    };
    tokio::spawn(recover::watch(Arc::clone(&shared), Arc::clone(&moves)));
    while let Some(job) = requests.recv().await {
        let mut failed: Option<String> = None;
        for round in job {
            if let Some(first) = &failed {
                for plan in &round {
                    let why = format!("not run: move {first} of the same job failed");
                    moves.finished(&plan.id, Some(why));
                }
                continue;
            }
            let mut runs = tokio::task::JoinSet::new();
            for plan in round {
                let (shared, moves) = (Arc::clone(&shared), Arc::clone(&moves));
                runs.spawn(async move { (one(&shared, &moves, &plan).await, plan.id) });
            }
            while let Some(done) = runs.join_next().await {
                if let Ok((false, id)) = done {
                    failed.get_or_insert(id);
                }
            }
        }
    }
}

/// Run one move to its switch (or its end); whether it did not fail.
async fn one(shared: &Arc<Shared>, moves: &Arc<Moves>, plan: &Plan) -> bool {
    if moves.cancelled(&plan.id) {
        moves.finished(&plan.id, Some(MoveError::Cancelled.to_string()));
        return false;
    }
    info!(
        id = plan.id,
        "move of logical shard {} of group {} from database {} to {} started",
        plan.shard,
        plan.group,
        plan.source,
        plan.target
    );
    let progress = async {
        loop {
            tokio::time::sleep(PROGRESS_EVERY).await;
            log_progress(moves, &plan.id);
        }
    };
    let outcome = tokio::select! {
        outcome = drive(shared, moves, plan) => outcome,
        () = progress => Ok(()),
    };
    match outcome {
        Ok(()) => true,
        Err(error) => {
            warn!(
                id = plan.id,
                "move of logical shard {} failed: {error}", plan.shard
            );
            moves.finished(&plan.id, Some(error.to_string()));
            false
        }
    }
}

fn log_progress(moves: &Moves, id: &str) {
    if let Some(s) = moves.list().into_iter().find(|m| m.id == id) {
        info!(
            id,
            step = s.phase.as_str(),
            rows_copied = s.rows_copied,
            lag_bytes = s.lag_bytes,
            elapsed_s = s.started.elapsed().as_secs(),
            "move of logical shard {} from database {} to {}",
            s.shard,
            s.source,
            s.target
        );
    }
}

/// Renew move `id`'s heartbeat on its databases until dropped.
async fn heartbeat(link: &Link, plan: &Plan, moves: &Moves) {
    let mut conns: Vec<Option<db::Db>> = vec![None, None];
    loop {
        tokio::time::sleep(moves.lease() / 3).await;
        for (slot, database) in conns.iter_mut().zip([plan.source, plan.target]) {
            if slot.is_none() {
                *slot = link.connect(database).await.ok();
            }
            if let Some(db) = slot {
                if db
                    .run("renew the heartbeat", &store::heartbeat(&plan.id))
                    .await
                    .is_err()
                {
                    *slot = None;
                }
            }
        }
    }
}

/// One move, start to switch (the old tables go later); rolled back when
/// it fails before its switch.
async fn drive(shared: &Arc<Shared>, moves: &Arc<Moves>, plan: &Plan) -> Result<(), MoveError> {
    let link = Link::find(shared, plan).await?;
    let mut made = Made::default();
    let result = tokio::select! {
        result = forward(shared, moves, plan, &link, &mut made) => result,
        () = heartbeat(&link, plan, moves) => Ok(()),
    };
    if let Err(error) = &result {
        let switched = moves.phase(&plan.id).is_some_and(Phase::switched);
        if !switched {
            rollback::rollback(shared, moves, &link, plan, &made, error).await;
        }
    }
    result
}

async fn forward(
    shared: &Arc<Shared>,
    moves: &Arc<Moves>,
    plan: &Plan,
    link: &Link,
    made: &mut Made,
) -> Result<(), MoveError> {
    let config = shared.config();
    let general = &config.general;
    let placement = config
        .clusters
        .get(&plan.cluster)
        .and_then(|c| c.sharding.group(plan.group).map(|g| g.placement.to_vec()))
        .unwrap_or_default();
    let first_pin;
    (made.tables, first_pin) = mover::prepare(link, plan, &placement, moves).await?;
    moves.check(&plan.id)?;
    // From here on, routes say whether they touch the shard (the hold
    // counts the transactions in flight on it).
    marker::mark_moving(shared, moves, plan);
    let mut a = link.connect(plan.source).await?;
    let mut b = link.connect(plan.target).await?;
    let full = general.resharding_replica_identity_full;
    (made.plain, made.parts) = partitioned::tables(plan, full, &mut a, &mut b).await?;
    record_tables(plan, &made.tables, &mut [&mut a, &mut b]).await?;
    step(moves, plan, Phase::Schema, &mut [&mut a, &mut b]).await?;
    made.on_target = true;
    mover::schema(link, plan.source, &made.tables, "pre-data", &mut b).await?;
    partitioned::create(&mut b, plan, &made.parts).await?;
    let fence_parts = partitioned::fence_triggers(plan, &made.parts);
    plain::install(&mut a, plan, &made.plain, fence_parts).await?;
    step(moves, plan, Phase::Marking, &mut [&mut a, &mut b]).await?;
    if !made.plain.is_empty() {
        // Copied rows of plain tables are seen by keyless statements on
        // the target: every instance must refuse those first.
        instances::wait_marked(shared, plan, moves, first_pin, &mut a).await?;
    }
    step(moves, plan, Phase::Slot, &mut [&mut a, &mut b]).await?;
    made.stream = true;
    let (walsender, snapshot) = mover::stream(link, plan, made, &mut a).await?;
    fault::park(moves, &plan.id, Fault::AfterSlot).await?;
    step(moves, plan, Phase::Copy, &mut [&mut a, &mut b]).await?;
    let format = general.resharding_copy_format;
    let copies = plain::copies(plan, &made.whole(), &made.plain)?;
    mover::copy(link, plan, &copies, &snapshot, format, moves).await?;
    // The exported snapshot is no longer needed.
    walsender.conn.terminate().await;
    mover::schema(link, plan.source, &made.tables, "post-data", &mut b).await?;
    step(moves, plan, Phase::Catchup, &mut [&mut a, &mut b]).await?;
    made.subscription = true;
    mover::subscribe(link, plan, format, &mut b).await?;
    fault::park(moves, &plan.id, Fault::MidCatchup).await?;
    mover::catch_up(
        plan,
        general.cutover_traffic_stop_threshold,
        moves,
        &mut a,
        &mut b,
    )
    .await?;
    let waited = cutover::cutover(shared, link, plan, made, moves).await?;
    switched(shared, moves, plan, link, made, waited).await
}

/// From the switch: log it, save the config when asked, drop the stream
/// and leave the old tables and rows for the cleanup.
async fn switched(
    shared: &Arc<Shared>,
    moves: &Arc<Moves>,
    plan: &Plan,
    link: &Link,
    made: &mut Made,
    waited: Duration,
) -> Result<(), MoveError> {
    moves.update(&plan.id, |s| {
        s.phase = Phase::Switched;
        s.max_wait = Some(waited);
    });
    info!(
        id = plan.id,
        "logical shard {} switched to database {}; statements held {} ms",
        plan.shard,
        plan.target,
        waited.as_millis()
    );
    save_config(shared, moves, plan);
    fault::park(moves, &plan.id, Fault::AfterSwitch).await?;
    let (mut a, mut b) = (
        link.connect(plan.source).await?,
        link.connect(plan.target).await?,
    );
    cleanup::drop_stream(plan, &mut a, &mut b).await?;
    step(moves, plan, Phase::Cleanup, &mut [&mut a, &mut b]).await?;
    moves.update(&plan.id, |s| s.lag_bytes = None);
    cleanup::finish_later(
        (Arc::clone(shared), link.clone()),
        plan.clone(),
        std::mem::take(made),
        moves.cleanup_delay(),
        Arc::clone(moves),
    );
    Ok(())
}

/// Record the tables the move carries on its databases (whoever finishes
/// or undoes it needs them).
async fn record_tables(
    plan: &Plan,
    tables: &[mover::Table],
    dbs: &mut [&mut db::Db],
) -> Result<(), MoveError> {
    let tables: Vec<(String, String)> = tables
        .iter()
        .map(|t| (t.schema.clone(), t.name.clone()))
        .collect();
    let sql = store::record_tables(&plan.id, &tables);
    for db in dbs.iter_mut() {
        db.run("record the tables", &sql).await?;
    }
    Ok(())
}

/// With `cutover_save_config`, the placement in force written into
/// `pgdog.toml` (a failure is logged: the switch stands).
fn save_config(shared: &Shared, moves: &Moves, plan: &Plan) {
    let config = shared.config();
    if !config.general.cutover_save_config {
        return;
    }
    let Some(path) = &moves.config_file else {
        warn!(
            id = plan.id,
            "cutover_save_config: no config file to write (the config was given in memory)"
        );
        return;
    };
    let placement = config
        .clusters
        .get(&plan.cluster)
        .and_then(|c| c.sharding.group(plan.group).map(|g| g.placement.to_vec()))
        .unwrap_or_default();
    match save::save(path, &plan.cluster, plan.group, &placement) {
        Ok(()) => info!(
            id = plan.id,
            "cutover_save_config: placement of group {} written to {} (the old file is {})",
            plan.group,
            path.display(),
            save::backup_path(path).display()
        ),
        Err(error) => warn!(id = plan.id, "cutover_save_config: {error}"),
    }
}

/// Record `phase` on the databases and in `moves` (unless CANCEL MOVE
/// asked the move to stop).
async fn step(
    moves: &Moves,
    plan: &Plan,
    phase: Phase,
    dbs: &mut [&mut db::Db],
) -> Result<(), MoveError> {
    moves.check(&plan.id)?;
    for db in dbs.iter_mut() {
        db.run("record the phase", &store::set_phase(&plan.id, phase))
            .await?;
    }
    moves.set_phase(&plan.id, phase);
    Ok(())
}
