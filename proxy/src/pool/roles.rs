//! The roles of a shard's `role = "auto"` servers, as the monitor
//! (`pool/monitor.rs`) last found them, shared by every user's pools of the
//! shard: which server takes writes now, which serve reads, which are down
//! or fenced. What one round of checks decides is a pure function
//! ([`decide`]):
//!
//! 1. A server out of recovery (`pg_is_in_recovery()` false) *claims* the
//!    primary role; one in recovery is a replica; one whose check failed
//!    (no connection, an error, no answer within `lsn_check_timeout`) is
//!    down.
//! 2. One claimant: it is the primary.
//! 3. Several claimants (split brain: an old primary back as a standalone
//!    beside the promoted replica): the current primary stays unless
//!    another claimant is on a later timeline (promoted after it); with no
//!    current primary, the claimant with the highest (timeline, WAL
//!    position) wins, the first listed on a tie. The others are *fenced*:
//!    no writes, no reads (their data went another way).
//! 4. No claimant: no primary. Writes wait for one (`balancer.rs`).
//!
//! A server whose role changed has its pools' connections closed (idle ones
//! now, checked-out ones when given back), so a connection opened under one
//! role never serves another.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use router::config::{LsnChecks, Role};
use tokio::sync::Notify;
use tracing::{info, warn};

use super::Pool;
use crate::conn::server::ServerTarget;
use crate::lock::lock;

/// A server's role now, as pgshard uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RoleNow {
    /// Not checked yet: serves nothing.
    Unknown = 0,
    /// Takes writes, transactions and (per `read_write_split`) reads.
    Primary = 1,
    /// In recovery: serves reads.
    Replica = 2,
    /// Its last check failed: serves nothing.
    Down = 3,
    /// Claims to be a primary while another one was chosen: serves nothing.
    Fenced = 4,
}

impl RoleNow {
    pub fn as_str(self) -> &'static str {
        match self {
            RoleNow::Unknown => "unknown",
            RoleNow::Primary => "primary",
            RoleNow::Replica => "replica",
            RoleNow::Down => "down",
            RoleNow::Fenced => "fenced",
        }
    }

    /// Every value, for the metrics' state set.
    pub const ALL: [RoleNow; 5] = [
        RoleNow::Unknown,
        RoleNow::Primary,
        RoleNow::Replica,
        RoleNow::Down,
        RoleNow::Fenced,
    ];

    fn from_u8(value: u8) -> RoleNow {
        match value {
            1 => RoleNow::Primary,
            2 => RoleNow::Replica,
            3 => RoleNow::Down,
            4 => RoleNow::Fenced,
            _ => RoleNow::Unknown,
        }
    }
}

/// What one check of a server saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Out of recovery: its timeline and `pg_current_wal_lsn()`.
    Primary { timeline: u32, lsn: u64 },
    /// In recovery: `pg_last_wal_replay_lsn()`.
    Replica { lsn: u64 },
    /// The check failed: why.
    Down(String),
}

/// Who is the primary after a round, and each server's role: the rules of
/// the module doc. `current`: the primary before the round.
pub fn decide(current: Option<usize>, seen: &[Seen]) -> (Option<usize>, Vec<RoleNow>) {
    let claimants: Vec<(usize, (u32, u64))> = seen
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Seen::Primary { timeline, lsn } => Some((i, (*timeline, *lsn))),
            _ => None,
        })
        .collect();
    // The highest rank, the first listed on a tie.
    let best = |among: &mut dyn Iterator<Item = &(usize, (u32, u64))>| {
        among
            .fold(None::<(usize, (u32, u64))>, |best, &(i, rank)| match best {
                Some((_, top)) if top >= rank => best,
                _ => Some((i, rank)),
            })
            .map(|(i, _)| i)
    };
    let kept = current.and_then(|c| claimants.iter().find(|(i, _)| *i == c));
    let primary = match kept {
        Some(&(c, (timeline, _))) => {
            best(&mut claimants.iter().filter(|(_, (t, _))| *t > timeline)).or(Some(c))
        }
        None => best(&mut claimants.iter()),
    };
    let roles = seen
        .iter()
        .enumerate()
        .map(|(i, s)| match s {
            Seen::Primary { .. } if Some(i) == primary => RoleNow::Primary,
            Seen::Primary { .. } => RoleNow::Fenced,
            Seen::Replica { .. } => RoleNow::Replica,
            Seen::Down(_) => RoleNow::Down,
        })
        .collect();
    (primary, roles)
}

/// Where an `auto` server's role is kept: its shard's roles and its index
/// there.
#[derive(Debug, Clone)]
pub struct Seat {
    pub roles: Arc<ShardRoles>,
    pub index: usize,
}

impl Pool {
    /// Whether the pool's `auto` seat is `seat` (the same shard roles and
    /// index), or neither has one.
    pub fn same_seat(&self, seat: Option<&Seat>) -> bool {
        match (&self.seat, seat) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(&a.roles, &b.roles) && a.index == b.index,
            _ => false,
        }
    }

    /// Its server's role now: as written, or as the monitor last found it.
    pub fn serves(&self) -> RoleNow {
        match (&self.seat, self.role) {
            (Some(seat), _) => seat.roles.found(seat.index),
            (None, Role::Replica) => RoleNow::Replica,
            (None, _) => RoleNow::Primary,
        }
    }
}

/// No primary, in [`ShardRoles`]' index.
const NONE: usize = usize::MAX;

/// One `auto` server of the shard: its role and what its last check saw.
#[derive(Debug)]
pub struct ServerState {
    pub host: String,
    pub port: u16,
    found: AtomicU8,
    /// Its WAL position: written (primary) or replayed (replica); 0 unknown.
    lsn: AtomicU64,
    /// Its timeline while it claims the primary role; 0 otherwise.
    timeline: AtomicU32,
    /// Bytes of WAL a replica is behind the primary; `u64::MAX` unknown.
    lag: AtomicU64,
    /// When its last check ended, and why it failed if it did.
    last: Mutex<(Option<Instant>, Option<String>)>,
    /// Its pools, one per user, for the monitor's logins and for closing
    /// their connections when the role changes.
    pools: Mutex<Vec<Weak<Pool>>>,
}

/// What a report shows of one server (SHOW REPLICATION).
#[derive(Debug, Clone)]
pub struct ServerReport {
    pub host: String,
    pub port: u16,
    pub found: RoleNow,
    pub lsn: Option<u64>,
    pub timeline: Option<u32>,
    pub lag_bytes: Option<u64>,
    pub checked_ago: Option<Duration>,
    pub error: Option<String>,
}

/// The roles of one shard's `auto` servers, in the file's order.
#[derive(Debug)]
pub struct ShardRoles {
    pub cluster: String,
    pub shard: usize,
    pub checks: LsnChecks,
    servers: Vec<ServerState>,
    primary: AtomicUsize,
    /// Rounds of checks done; waiters are woken after each.
    rounds: AtomicU64,
    round_done: Notify,
    /// A checkout could not reach the primary: check now.
    recheck: Notify,
    /// Times the primary moved from one server to another.
    failovers: AtomicU64,
    /// The last primary there was (a failover is counted against it).
    last_primary: AtomicUsize,
}

impl ShardRoles {
    pub fn new(
        cluster: &str,
        shard: usize,
        servers: &[(String, u16)],
        checks: LsnChecks,
    ) -> Arc<ShardRoles> {
        let servers = servers
            .iter()
            .map(|(host, port)| ServerState {
                host: host.clone(),
                port: *port,
                found: AtomicU8::new(RoleNow::Unknown as u8),
                lsn: AtomicU64::new(0),
                timeline: AtomicU32::new(0),
                lag: AtomicU64::new(u64::MAX),
                last: Mutex::new((None, None)),
                pools: Mutex::new(Vec::new()),
            })
            .collect();
        Arc::new(ShardRoles {
            cluster: cluster.to_owned(),
            shard,
            checks,
            servers,
            primary: AtomicUsize::new(NONE),
            rounds: AtomicU64::new(0),
            round_done: Notify::new(),
            recheck: Notify::new(),
            failovers: AtomicU64::new(0),
            last_primary: AtomicUsize::new(NONE),
        })
    }

    /// Same servers, same checks.
    pub fn same_as(&self, servers: &[(String, u16)], checks: LsnChecks) -> bool {
        self.checks == checks
            && self.servers.len() == servers.len()
            && self
                .servers
                .iter()
                .zip(servers)
                .all(|(s, (host, port))| s.host == *host && s.port == *port)
    }

    /// How many servers the shard has (never 0).
    pub fn servers(&self) -> usize {
        self.servers.len()
    }

    /// The server writes go to now.
    pub fn primary(&self) -> Option<usize> {
        Some(self.primary.load(Ordering::Acquire)).filter(|&p| p != NONE)
    }

    /// Server `i`'s role now.
    pub fn found(&self, i: usize) -> RoleNow {
        self.servers.get(i).map_or(RoleNow::Unknown, |s| {
            RoleNow::from_u8(s.found.load(Ordering::Acquire))
        })
    }

    pub fn failovers(&self) -> u64 {
        self.failovers.load(Ordering::Relaxed)
    }

    pub fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Acquire)
    }

    /// Wait until a round after `round` is done, or `deadline`; whether one
    /// was.
    pub async fn wait_round_after(&self, round: u64, deadline: tokio::time::Instant) -> bool {
        loop {
            let done = self.round_done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.rounds() > round {
                return true;
            }
            if tokio::time::timeout_at(deadline, done).await.is_err() {
                return self.rounds() > round;
            }
        }
    }

    /// A checkout could not reach the primary: have the monitor check now.
    pub fn request_check(&self) {
        self.recheck.notify_one();
    }

    pub(super) async fn check_requested(&self) {
        self.recheck.notified().await;
    }

    /// Server `i`'s pool for one user: its connections are closed when the
    /// role changes; the monitor logs in with the first one's login.
    pub fn register(&self, i: usize, pool: &Arc<Pool>) {
        if let Some(server) = self.servers.get(i) {
            let mut pools = lock(&server.pools);
            pools.retain(|p| p.strong_count() > 0);
            pools.push(Arc::downgrade(pool));
        }
    }

    /// Where the monitor logs in to check server `i`: a live pool's target.
    pub(super) fn target(&self, i: usize) -> Option<(ServerTarget, Duration)> {
        let server = self.servers.get(i)?;
        let pools = lock(&server.pools);
        pools
            .iter()
            .find_map(Weak::upgrade)
            .map(|p| (p.target.clone(), p.settings.connect_timeout))
    }

    /// Record one round of checks (`seen`, by server) and decide (the
    /// module doc's rules): the servers whose role changed get their pools'
    /// connections closed, waiters are woken.
    pub(super) fn apply(&self, seen: &[Seen]) {
        let (primary, roles) = decide(self.primary(), seen);
        let primary_lsn = primary.and_then(|p| match seen.get(p) {
            Some(Seen::Primary { lsn, .. }) => Some(*lsn),
            _ => None,
        });
        let now = Instant::now();
        for ((server, role), s) in self.servers.iter().zip(&roles).zip(seen) {
            let (lsn, timeline, error) = match s {
                Seen::Primary { timeline, lsn } => (*lsn, *timeline, None),
                Seen::Replica { lsn } => (*lsn, 0, None),
                Seen::Down(why) => (0, 0, Some(why.clone())),
            };
            let lag = match (s, primary_lsn) {
                (Seen::Replica { lsn }, Some(top)) => top.saturating_sub(*lsn),
                _ => u64::MAX,
            };
            server.lsn.store(lsn, Ordering::Relaxed);
            server.timeline.store(timeline, Ordering::Relaxed);
            server.lag.store(lag, Ordering::Relaxed);
            *lock(&server.last) = (Some(now), error);
            let before = RoleNow::from_u8(server.found.swap(*role as u8, Ordering::AcqRel));
            if before != *role {
                self.role_changed(server, before, *role, s);
            }
        }
        self.primary
            .store(primary.unwrap_or(NONE), Ordering::Release);
        if let Some(p) = primary {
            let last = self.last_primary.swap(p, Ordering::AcqRel);
            if last != NONE && last != p {
                self.failovers.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.rounds.fetch_add(1, Ordering::AcqRel);
        self.round_done.notify_waiters();
    }

    /// `server`'s role went from `before` to `now`: log it and close its
    /// pools' connections.
    fn role_changed(&self, server: &ServerState, before: RoleNow, now: RoleNow, seen: &Seen) {
        let addr = format!("{}:{}", server.host, server.port);
        let (cluster, shard) = (&self.cluster, self.shard);
        match (now, seen) {
            (RoleNow::Fenced, _) => {
                warn!(%cluster, shard, server = %addr, "two servers claim the primary role (split brain): this one gets no writes and no reads")
            }
            (RoleNow::Down, Seen::Down(why)) => {
                warn!(%cluster, shard, server = %addr, was = before.as_str(), "server check failed: {why}")
            }
            _ => {
                info!(%cluster, shard, server = %addr, was = before.as_str(), now = now.as_str(), "server role changed")
            }
        }
        for pool in lock(&server.pools).iter().filter_map(Weak::upgrade) {
            pool.reconnect();
        }
    }

    /// Each server as a report shows it.
    pub fn report(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|s| {
                let (checked, error) = lock(&s.last).clone();
                let lsn = s.lsn.load(Ordering::Relaxed);
                let timeline = s.timeline.load(Ordering::Relaxed);
                let lag = s.lag.load(Ordering::Relaxed);
                ServerReport {
                    host: s.host.clone(),
                    port: s.port,
                    found: RoleNow::from_u8(s.found.load(Ordering::Acquire)),
                    lsn: (lsn != 0).then_some(lsn),
                    timeline: (timeline != 0).then_some(timeline),
                    lag_bytes: (lag != u64::MAX).then_some(lag),
                    checked_ago: checked.map(|t| t.elapsed()),
                    error,
                }
            })
            .collect()
    }
}

/// An LSN as Postgres prints it (`16/B374D848`).
pub fn lsn_text(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// An LSN as Postgres prints it, as a number.
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (high, low) = text.split_once('/')?;
    let high = u64::from_str_radix(high, 16).ok()?;
    let low = u64::from_str_radix(low, 16).ok()?;
    (high <= u64::from(u32::MAX) && low <= u64::from(u32::MAX)).then_some(high << 32 | low)
}

#[cfg(test)]
mod tests;
