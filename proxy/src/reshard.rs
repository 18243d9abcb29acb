//! Online moves of logical shards between databases (issue 33): `MOVE
//! SHARD` (admin console) checks a request against the running config
//! (`plan.rs`) and hands it to the supervisor task ([`run`], spawned next
//! to the catalog reader), which runs one move at a time:
//! - `mover.rs`: checks, schema on the target, publication and slot with
//!   an exported snapshot, the copy under it, catch-up by a native
//!   subscription on the target;
//! - `cutover.rs`: hold, fence the source, wait for its mark on the target,
//!   switch, place the shard on the target in the running config, let go;
//! - `cleanup.rs`: subscription, publication and slot, and the source's
//!   old tables after the cleanup delay.
//!
//! The phases are `state.rs`'s; each is recorded on the databases
//! (`store.rs`) and in [`Moves`] (SHOW MOVES, the metrics, a progress log
//! line every few seconds); `rollback.rs` undoes a move that failed
//! before its switch. Table families, plain tables (`plain.rs`: the
//! shard's rows, a row filter, a trigger fence) and tables partitioned by
//! hash (`partitioned.rs`: the shard's partition, attached on the target
//! at the switch) move so far; resuming a
//! move after a restart, CANCEL MOVE and REBALANCE come in later steps.

mod cleanup;
mod cutover;
mod db;
mod mover;
mod partitioned;
mod plain;
pub mod plan;
mod rollback;
mod sql;
pub mod state;
pub mod store;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use router::config::Config;
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::lock::lock;
use crate::session::Shared;

use self::db::Link;
use self::mover::Made;
use self::plan::{MoveError, Plan, Request};
use self::state::Phase;

/// How often a running move logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// How long the source's old tables are kept after the switch, by default.
const CLEANUP_DELAY: Duration = Duration::from_secs(60);

/// One move as SHOW MOVES shows it.
#[derive(Debug, Clone)]
pub struct MoveStatus {
    pub id: String,
    pub cluster: String,
    pub group: String,
    pub shard: usize,
    pub source: usize,
    pub target: usize,
    pub phase: Phase,
    pub rows_copied: u64,
    /// The slot's lag behind the source's WAL, while catching up.
    pub lag_bytes: Option<u64>,
    pub started: Instant,
    pub finished: Option<Instant>,
    /// How long the cutover held statements (the longest any waited).
    pub max_wait: Option<Duration>,
    pub error: Option<String>,
}

/// The moves of this process, and the supervisor's request channel.
#[derive(Debug)]
pub struct Moves {
    sender: mpsc::UnboundedSender<Plan>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Plan>>>,
    moves: Mutex<Vec<MoveStatus>>,
    cleanup_delay_ms: AtomicU64,
}

impl Default for Moves {
    fn default() -> Moves {
        let (sender, receiver) = mpsc::unbounded_channel();
        Moves {
            sender,
            receiver: Mutex::new(Some(receiver)),
            moves: Mutex::new(Vec::new()),
            cleanup_delay_ms: AtomicU64::new(
                u64::try_from(CLEANUP_DELAY.as_millis()).unwrap_or(60_000),
            ),
        }
    }
}

impl Moves {
    /// Check `request` against `config` and queue the move; its id.
    pub fn submit(&self, config: &Config, request: &Request) -> Result<String, MoveError> {
        let id = format!("m{:08x}", rand::random::<u32>());
        let plan = plan::plan(config, request, id.clone())?;
        let mut moves = lock(&self.moves);
        if let Some(busy) = moves
            .iter()
            .find(|m| m.cluster == plan.cluster && !m.phase.switched() && !m.phase.is_final())
        {
            return Err(MoveError::Busy(busy.id.clone(), plan.cluster));
        }
        moves.push(MoveStatus {
            id: id.clone(),
            cluster: plan.cluster.clone(),
            group: plan.group.to_string(),
            shard: plan.shard,
            source: plan.source,
            target: plan.target,
            phase: Phase::Planned,
            rows_copied: 0,
            lag_bytes: None,
            started: Instant::now(),
            finished: None,
            max_wait: None,
            error: None,
        });
        drop(moves);
        self.sender.send(plan).map_err(|_| {
            MoveError::Check("the mover has stopped (pgshard is shutting down)".to_owned())
        })?;
        Ok(id)
    }

    /// Every move of this process, oldest first.
    pub fn list(&self) -> Vec<MoveStatus> {
        lock(&self.moves).clone()
    }

    /// How long the source's old tables are kept after a switch (60 s;
    /// tests shorten it).
    pub fn set_cleanup_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.cleanup_delay_ms.store(ms, Ordering::Relaxed);
    }

    fn cleanup_delay(&self) -> Duration {
        Duration::from_millis(self.cleanup_delay_ms.load(Ordering::Relaxed))
    }

    fn update(&self, id: &str, change: impl FnOnce(&mut MoveStatus)) {
        if let Some(status) = lock(&self.moves).iter_mut().find(|m| m.id == id) {
            change(status);
        }
    }

    fn set_phase(&self, id: &str, phase: Phase) {
        self.update(id, |s| s.phase = phase);
    }

    fn finished(&self, id: &str, error: Option<String>) {
        self.update(id, |s| {
            s.lag_bytes = None;
            if error.is_some() && !s.phase.switched() {
                s.phase = Phase::Failed;
                s.finished = Some(Instant::now());
            } else if error.is_none() {
                s.finished = Some(Instant::now());
            }
            if error.is_some() {
                s.error = error;
            }
        });
    }

    fn row(&self, plan: &Plan) -> store::MoveRow {
        store::MoveRow {
            id: plan.id.clone(),
            cluster: plan.cluster.clone(),
            group: plan.group.to_string(),
            shard: plan.shard,
            source: plan.source,
            target: plan.target,
        }
    }
}

/// Run the moves asked for, one at a time, until the process ends.
pub async fn run(shared: Arc<Shared>, moves: Arc<Moves>) {
    let Some(mut requests) = lock(&moves.receiver).take() else {
        return;
    };
    while let Some(plan) = requests.recv().await {
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
                log_progress(&moves, &plan.id);
            }
        };
        let outcome = tokio::select! {
            outcome = drive(&shared, &moves, &plan) => outcome,
            () = progress => Ok(()),
        };
        if let Err(error) = outcome {
            warn!(
                id = plan.id,
                "move of logical shard {} failed: {error}", plan.shard
            );
            moves.finished(&plan.id, Some(error.to_string()));
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

/// One move, start to switch (the old tables go later); rolled back when
/// it fails before its switch.
async fn drive(shared: &Arc<Shared>, moves: &Arc<Moves>, plan: &Plan) -> Result<(), MoveError> {
    let link = Link::find(shared, plan).await?;
    let mut made = Made::default();
    let result = forward(shared, moves, plan, &link, &mut made).await;
    if let Err(error) = &result {
        let switched = moves
            .list()
            .iter()
            .any(|m| m.id == plan.id && m.phase.switched());
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
    made.tables = mover::prepare(link, plan, &placement, moves).await?;
    // From here on, routes say whether they touch the shard (the hold
    // counts the transactions in flight on it).
    plain::mark_moving(shared, moves, plan);
    let mut a = link.connect(plan.source).await?;
    let mut b = link.connect(plan.target).await?;
    let full = general.resharding_replica_identity_full;
    (made.plain, made.parts) = partitioned::tables(plan, full, &mut a, &mut b).await?;
    step(moves, plan, Phase::Schema, &mut [&mut a, &mut b]).await?;
    made.on_target = true;
    mover::schema(link, plan.source, &made.tables, "pre-data", &mut b).await?;
    partitioned::create(&mut b, plan, &made.parts).await?;
    let fence_parts = partitioned::fence_triggers(plan, &made.parts);
    plain::install(&mut a, plan, &made.plain, fence_parts).await?;
    step(moves, plan, Phase::Slot, &mut [&mut a, &mut b]).await?;
    made.stream = true;
    let (walsender, snapshot) = mover::stream(link, plan, made, &mut a).await?;
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
    mover::catch_up(
        plan,
        general.cutover_traffic_stop_threshold,
        moves,
        &mut a,
        &mut b,
    )
    .await?;
    let waited = cutover::cutover(shared, link, plan, made, moves).await?;
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

/// Record `phase` on the databases and in `moves`.
async fn step(
    moves: &Moves,
    plan: &Plan,
    phase: Phase,
    dbs: &mut [&mut db::Db],
) -> Result<(), MoveError> {
    for db in dbs.iter_mut() {
        db.run("record the phase", &store::set_phase(&plan.id, phase))
            .await?;
    }
    moves.set_phase(&plan.id, phase);
    Ok(())
}
