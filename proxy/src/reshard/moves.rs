//! The moves of this process as SHOW MOVES shows them, the supervisor's
//! queue (a job is rounds of moves: `MOVE SHARD` one, `REBALANCE` many),
//! `CANCEL MOVE`'s requests, the faults tests inject, and the timings
//! tests shorten (cleanup delay, lease, poll interval).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use router::config::Config;
use tokio::sync::mpsc;

use crate::lock::lock;

use super::fault::Fault;
use super::plan::{self, MoveError, Plan, Request};
use super::state::Phase;
use super::store;

/// How long the source's old tables are kept after the switch, by default.
const CLEANUP_DELAY: Duration = Duration::from_secs(60);

/// How long a move's owner may go without renewing its heartbeat before
/// another instance finishes or rolls the move back, by default.
const LEASE: Duration = Duration::from_secs(30);

/// How long a move waits for the other pgshard instances to mark it
/// before it fails, by default.
const MARK_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the databases are asked where logical shards are (and
/// whether a move was left behind), by default.
const POLL: Duration = router::config::READ_INTERVAL;

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
    /// Found on the databases, left by a stopped pgshard, and finished or
    /// rolled back by this one.
    pub taken_over: bool,
    /// Its shard is in the router's moving marker (from the move's start
    /// until it ends: `marker::marker`).
    pub marked: bool,
    /// The pgshard instances the `marking` step waits for
    /// (`instances.rs`).
    pub waiting_for: Vec<String>,
}

/// Moves to run: rounds, each round's moves together, a round after the
/// one before it has finished.
pub type Job = Vec<Vec<Plan>>;

/// The moves of this process, and the supervisor's request channel.
#[derive(Debug)]
pub struct Moves {
    sender: mpsc::UnboundedSender<Job>,
    pub(super) receiver: Mutex<Option<mpsc::UnboundedReceiver<Job>>>,
    moves: Mutex<Vec<MoveStatus>>,
    cancelled: Mutex<HashSet<String>>,
    faults: Mutex<HashSet<Fault>>,
    cleanup_delay_ms: AtomicU64,
    lease_ms: AtomicU64,
    poll_ms: AtomicU64,
    mark_timeout_ms: AtomicU64,
    /// This process, as `pgshard.moves.owner` names it.
    pub owner: String,
    /// `pgdog.toml`, for `cutover_save_config`.
    pub config_file: Option<PathBuf>,
    /// The placement was read from the databases at start-up.
    read_at_start: std::sync::atomic::AtomicBool,
    /// Taken while a moving marker is computed and set, so that moves
    /// running together do not drop each other's shards from it.
    marking: Mutex<()>,
    /// Per cluster: the cutover's turn. The hold is per cluster (every
    /// moving shard of it), so moves running together cut over one at a
    /// time: a held statement waits for one cutover, never several.
    cutovers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Default for Moves {
    fn default() -> Moves {
        Moves::new(None)
    }
}

impl Moves {
    /// No moves yet; `config_file` is `pgdog.toml` when there is one.
    pub fn new(config_file: Option<PathBuf>) -> Moves {
        let (sender, receiver) = mpsc::unbounded_channel();
        Moves {
            sender,
            receiver: Mutex::new(Some(receiver)),
            moves: Mutex::new(Vec::new()),
            cancelled: Mutex::new(HashSet::new()),
            faults: Mutex::new(HashSet::new()),
            cleanup_delay_ms: AtomicU64::new(ms(CLEANUP_DELAY)),
            lease_ms: AtomicU64::new(ms(LEASE)),
            poll_ms: AtomicU64::new(ms(POLL)),
            mark_timeout_ms: AtomicU64::new(ms(MARK_TIMEOUT)),
            owner: format!("p{:08x}", rand::random::<u32>()),
            config_file,
            read_at_start: std::sync::atomic::AtomicBool::new(false),
            marking: Mutex::new(()),
            cutovers: Mutex::new(HashMap::new()),
        }
    }

    /// Check `request` against `config` and queue the move; its id.
    pub fn submit(&self, config: &Config, request: &Request) -> Result<String, MoveError> {
        let plan = plan::plan(config, request, new_id())?;
        let id = plan.id.clone();
        self.queue(vec![vec![plan]])?;
        Ok(id)
    }

    /// Queue `job` (listed at once, as planned) unless a move of one of
    /// its clusters is under way.
    pub fn queue(&self, job: Job) -> Result<(), MoveError> {
        let mut moves = lock(&self.moves);
        for plan in job.iter().flatten() {
            if let Some(busy) = moves
                .iter()
                .find(|m| m.cluster == plan.cluster && !m.phase.switched() && !m.phase.is_final())
            {
                return Err(MoveError::Busy(busy.id.clone(), plan.cluster.clone()));
            }
        }
        for plan in job.iter().flatten() {
            moves.push(MoveStatus {
                id: plan.id.clone(),
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
                taken_over: false,
                marked: false,
                waiting_for: Vec::new(),
            });
        }
        drop(moves);
        self.sender.send(job).map_err(|_| {
            MoveError::Check("the mover has stopped (pgshard is shutting down)".to_owned())
        })
    }

    /// A move found on the databases (left by another process), listed
    /// here while this process finishes or undoes it.
    pub(super) fn adopt(&self, status: MoveStatus) {
        let mut moves = lock(&self.moves);
        if !moves.iter().any(|m| m.id == status.id) {
            moves.push(status);
        }
    }

    /// Every move of this process, oldest first.
    pub fn list(&self) -> Vec<MoveStatus> {
        lock(&self.moves).clone()
    }

    /// Ask move `id` (the only one under way when `None`) to stop and roll
    /// back; its id. Refused once it has switched or ended.
    pub fn cancel(&self, id: Option<&str>) -> Result<String, MoveError> {
        let moves = lock(&self.moves);
        let status = match id {
            Some(id) => moves
                .iter()
                .find(|m| m.id == id)
                .ok_or_else(|| MoveError::Check(format!("no move {id} (SHOW MOVES)")))?,
            None => {
                let mut running = moves.iter().filter(|m| !m.phase.is_final());
                match (running.next(), running.next()) {
                    (Some(one), None) => one,
                    (None, _) => return Err(MoveError::Check("no move is under way".to_owned())),
                    (Some(_), Some(_)) => {
                        let ids: Vec<&str> = moves
                            .iter()
                            .filter(|m| !m.phase.is_final())
                            .map(|m| m.id.as_str())
                            .collect();
                        return Err(MoveError::Check(format!(
                            "several moves are under way ({}): CANCEL MOVE <id>",
                            ids.join(", ")
                        )));
                    }
                }
            }
        };
        if status.phase.is_final() {
            return Err(MoveError::Check(format!(
                "move {} has ended ({})",
                status.id, status.phase
            )));
        }
        if status.phase.switched() {
            return Err(MoveError::Check(format!(
                "move {} has switched logical shard {} to database {}; it can only finish",
                status.id, status.shard, status.target
            )));
        }
        let id = status.id.clone();
        drop(moves);
        lock(&self.cancelled).insert(id.clone());
        Ok(id)
    }

    /// Whether CANCEL MOVE asked move `id` to stop.
    pub fn cancelled(&self, id: &str) -> bool {
        lock(&self.cancelled).contains(id)
    }

    /// `Err(Cancelled)` when CANCEL MOVE asked move `id` to stop.
    pub fn check(&self, id: &str) -> Result<(), MoveError> {
        if self.cancelled(id) {
            return Err(MoveError::Cancelled);
        }
        Ok(())
    }

    /// Whether this is the start-up read of the placement (`true` once).
    pub fn first_read(&self) -> bool {
        !self.read_at_start.swap(true, Ordering::SeqCst)
    }

    /// Park every later move at `fault` (tests: the process is then
    /// crashed there).
    pub fn inject(&self, fault: Fault) {
        lock(&self.faults).insert(fault);
    }

    /// Stop parking moves at `fault` (those parked there go on).
    pub fn clear_fault(&self, fault: Fault) {
        lock(&self.faults).remove(&fault);
    }

    /// Whether moves park at `fault`.
    pub(super) fn faulty(&self, fault: Fault) -> bool {
        lock(&self.faults).contains(&fault)
    }

    /// How long the source's old tables are kept after a switch (60 s;
    /// tests shorten it).
    pub fn set_cleanup_delay(&self, delay: Duration) {
        self.cleanup_delay_ms.store(ms(delay), Ordering::Relaxed);
    }

    pub(super) fn cleanup_delay(&self) -> Duration {
        Duration::from_millis(self.cleanup_delay_ms.load(Ordering::Relaxed))
    }

    /// How long a move's owner may go silent before another instance
    /// takes the move over (30 s; tests shorten it).
    pub fn set_lease(&self, lease: Duration) {
        self.lease_ms.store(ms(lease), Ordering::Relaxed);
    }

    pub(super) fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms.load(Ordering::Relaxed))
    }

    /// How often the databases are asked where logical shards are (1 s;
    /// tests change it).
    pub fn set_poll_interval(&self, every: Duration) {
        self.poll_ms.store(ms(every), Ordering::Relaxed);
    }

    pub(super) fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_ms.load(Ordering::Relaxed).max(10))
    }

    /// How long a move waits for the other instances to mark it (30 s;
    /// tests shorten it).
    pub fn set_mark_timeout(&self, timeout: Duration) {
        self.mark_timeout_ms.store(ms(timeout), Ordering::Relaxed);
    }

    pub(super) fn mark_timeout(&self) -> Duration {
        Duration::from_millis(self.mark_timeout_ms.load(Ordering::Relaxed))
    }

    /// Held while a moving marker is computed and set.
    pub(super) fn marking(&self) -> MutexGuard<'_, ()> {
        lock(&self.marking)
    }

    fn turn(&self, cluster: &str) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(lock(&self.cutovers).entry(cluster.to_owned()).or_default())
    }

    /// Wait for `cluster`'s cutover turn: no other move of it holds
    /// statements until the guard is dropped.
    pub(super) async fn cutover_turn(&self, cluster: &str) -> tokio::sync::OwnedMutexGuard<()> {
        self.turn(cluster).lock_owned().await
    }

    /// `cluster`'s cutover turn, if no move of it is cutting over now.
    pub(super) fn try_cutover_turn(
        &self,
        cluster: &str,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        self.turn(cluster).try_lock_owned().ok()
    }

    pub(super) fn update(&self, id: &str, change: impl FnOnce(&mut MoveStatus)) {
        if let Some(status) = lock(&self.moves).iter_mut().find(|m| m.id == id) {
            change(status);
        }
    }

    pub(super) fn set_phase(&self, id: &str, phase: Phase) {
        self.update(id, |s| s.phase = phase);
    }

    pub(super) fn phase(&self, id: &str) -> Option<Phase> {
        lock(&self.moves)
            .iter()
            .find(|m| m.id == id)
            .map(|m| m.phase)
    }

    pub(super) fn finished(&self, id: &str, error: Option<String>) {
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

    pub(super) fn row(&self, plan: &Plan) -> store::MoveRow {
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

/// A new move id: `m` and 8 hex digits.
pub fn new_id() -> String {
    format!("m{:08x}", rand::random::<u32>())
}
