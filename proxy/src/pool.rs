//! Server connection pools, one per (cluster, user, shard database): bounded
//! by `pool_size` with a fair (FIFO) wait and a checkout timeout, with idle
//! connections reused most-recently-used first, and a maintenance task that
//! keeps `min_pool_size` open and retires idle, expired and dead connections.
//! Health checks and replica bans are `pool/health.rs`'s; which pool of a
//! shard serves a checkout is `pool/balancer.rs`'s; the roles of a shard's
//! `auto` servers `pool/roles.rs`'s, found by `pool/monitor.rs`; the pools of the
//! running config, by cluster and user, `pool/clusters.rs`'s; what holds
//! checkouts back (PAUSE, shutdown) `pool/gate.rs`'s.

pub mod balancer;
pub mod clusters;
mod error;
pub mod gate;
mod health;
mod maintenance;
pub mod monitor;
mod places;
mod report;
pub mod roles;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use router::config::{PoolSettings, Role};
use tracing::{debug, warn};

use crate::conn::server::{ServerConn, ServerTarget};
use crate::conn::settings::ParamSet;
use crate::lock::lock;
use crate::metrics::{Metrics, PoolHistograms, PoolLabels};
use crate::protocol::backend::TransactionStatus;
pub use error::PoolError;
use places::{Place, Places, Unplaced};
pub use report::{CheckedOut, IdleServer, Listing};
use roles::RoleNow;
pub use roles::Seat;

impl PoolLabels {
    fn of_pool(cluster: &str, user: &str, shard: usize, role: Role, target: &ServerTarget) -> Self {
        PoolLabels {
            cluster: cluster.to_owned(),
            user: user.to_owned(),
            shard: shard.to_string(),
            role: role.as_str().to_owned(),
            host: format!("{}:{}", target.host, target.port),
        }
    }
}

/// Counters behind SHOW POOLS and SHOW STATS.
#[derive(Debug, Default)]
pub struct PoolStats {
    pub waiting: AtomicUsize,
    pub xact_count: AtomicU64,
    pub query_count: AtomicU64,
    pub bytes_received: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub xact_time_us: AtomicU64,
    pub wait_time_us: AtomicU64,
    pub max_wait_us: AtomicU64,
    pub errors: AtomicU64,
    /// Times the pool was banned (replicas).
    pub bans: AtomicU64,
}

/// Which pool: cluster, user, shard, the database's role as written, and
/// where an `auto` one's role is found at run time (`seat`).
#[derive(Debug, Clone)]
pub struct PoolId {
    pub cluster: String,
    pub user: String,
    pub shard: usize,
    pub role: Role,
    pub seat: Option<Seat>,
}

/// One pool.
pub struct Pool {
    pub cluster: String,
    pub user: String,
    pub shard: usize,
    /// Primary, replica or auto, as written (only replicas are banned).
    pub role: Role,
    /// An `auto` server's place in its shard's roles.
    seat: Option<Seat>,
    pub target: ServerTarget,
    pub settings: PoolSettings,
    /// One per connection checked out or opening, at most `pool_size`.
    places: Arc<Places>,
    idle: Mutex<Vec<Idle>>,
    /// Connections handed out at least once and not closed since, by id;
    /// which are checked out now (`pool/report.rs`).
    listed: report::Listed,
    /// RECONNECT: connections created before this point (nanoseconds
    /// after `born`; 0: none) are closed when next given back or found idle.
    retire_before_ns: AtomicU64,
    born: Instant,
    pub stats: PoolStats,
    /// Checkout wait and transaction time, for the metrics endpoint.
    pub histograms: PoolHistograms,
    next_id: Arc<AtomicU64>,
    /// ParameterStatus values a server reports for a client's startup
    /// settings, so logins with settings seen before need no server.
    login_reports: Mutex<HashMap<ParamSet, LoginReport>>,
    /// Banned (serves no reads) until then: `pool/health.rs`.
    banned_until: Mutex<Option<Instant>>,
}

/// The ParameterStatus (name, value) pairs a server reported.
pub type LoginReport = Arc<Vec<(String, String)>>;

/// Distinct startup settings remembered per pool.
const LOGIN_REPORTS_LIMIT: usize = 256;

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("cluster", &self.cluster)
            .field("user", &self.user)
            .field("shard", &self.shard)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

/// A connection the pool holds idle, and what it knows of it.
#[derive(Debug)]
struct Idle {
    /// Boxed, as in [`Pooled`]: a checkout moves a pointer, not the struct.
    conn: Box<ServerConn>,
    entry: Entry,
}

/// What a pool knows of one of its connections besides the connection:
/// its entry among the pool's connections (SHOW SERVERS), from the first
/// time the pool hands it out until it is dropped, and when
/// `server_lifetime` retires it.
#[derive(Debug, Default)]
struct Entry {
    listing: Option<Listing>,
    expires: Option<Instant>,
}

/// A checked-out server connection. Give it back with [`Pool::checkin`];
/// dropping it instead closes the connection and frees its place.
#[derive(Debug)]
pub struct Pooled {
    pub conn: Box<ServerConn>,
    entry: Entry,
    /// When it was handed out (a transaction's time, in transaction mode).
    pub checked_out_at: Instant,
    serves: RoleNow,
    pool: Arc<Pool>,
    _place: Place,
}

/// A checkout waiting for a place, counted in SHOW POOLS `cl_waiting`
/// until it ends, however it does: a place, a timeout, or its client
/// leaving (the checkout dropped mid-wait).
struct Waiting<'a>(&'a PoolStats);

impl<'a> Waiting<'a> {
    fn new(stats: &'a PoolStats) -> Waiting<'a> {
        stats.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(stats)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pooled {
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// Its server's role when handed out: only a primary's takes writes.
    pub fn serves(&self) -> RoleNow {
        self.serves
    }

    /// The connection and its pool, borrowed together.
    pub fn parts(&mut self) -> (&mut ServerConn, &Arc<Pool>) {
        (&mut self.conn, &self.pool)
    }
}

impl Pool {
    /// A pool, with its maintenance task running on the current runtime.
    pub fn new(
        id: PoolId,
        target: ServerTarget,
        settings: PoolSettings,
        next_id: Arc<AtomicU64>,
        metrics: &Metrics,
    ) -> Arc<Pool> {
        let PoolId {
            cluster,
            user,
            shard,
            role,
            seat,
        } = id;
        let (places, sweep) = Places::new(settings.pool_size, settings.checkout_timeout);
        let labels = PoolLabels::of_pool(&cluster, &user, shard, role, &target);
        let histograms = metrics.pool_histograms(&labels);
        let pool = Arc::new(Pool {
            cluster,
            user,
            shard,
            role,
            seat,
            target,
            places,
            settings,
            idle: Mutex::new(Vec::new()),
            listed: Arc::default(),
            retire_before_ns: AtomicU64::new(0),
            born: Instant::now(),
            stats: PoolStats::default(),
            histograms,
            next_id,
            login_reports: Mutex::new(HashMap::new()),
            banned_until: Mutex::new(None),
        });
        tokio::spawn(sweep);
        tokio::spawn(maintenance::maintain(Arc::downgrade(&pool)));
        tokio::spawn(health::watch(Arc::downgrade(&pool)));
        if let Some(seat) = &pool.seat {
            seat.roles.register(seat.index, &pool);
        }
        pool
    }

    /// The labels of the pool's metrics.
    pub fn labels(&self) -> PoolLabels {
        PoolLabels::of_pool(
            &self.cluster,
            &self.user,
            self.shard,
            self.role,
            &self.target,
        )
    }

    /// A server connection: an idle one if any (checked first when it sat
    /// idle past `healthcheck_interval`), else a new one while the pool is
    /// below its size, else wait (first come, first served) up to
    /// `checkout_timeout`. A replica whose server cannot be reached is
    /// banned.
    pub async fn checkout(self: &Arc<Self>) -> Result<Pooled, PoolError> {
        let (place, mut now) = match self.places.try_take() {
            Some(place) => {
                self.histograms.observe_wait(Duration::ZERO);
                (place, Instant::now())
            }
            None => self.wait_for_place().await?,
        };
        while let Some(mut idle) = self.take_idle() {
            if idle.conn.is_broken_while_idle() || self.expired(&idle.conn, &idle.entry, now) {
                debug!(server = idle.conn.id, "retiring a pooled server connection");
                continue;
            }
            if self.check_due(&idle.conn, now) {
                let passed = self.check(&mut idle.conn).await;
                now = Instant::now();
                if !passed {
                    continue;
                }
            }
            return Ok(self.hand_out(idle, place, now));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = ServerConn::connect(&self.target, self.settings.connect_timeout, id)
            .await
            .inspect_err(|err| {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                warn!(%err, cluster = %self.cluster, shard = self.shard, "server connection failed");
                self.ban("cannot connect");
            })?;
        let idle = Idle {
            conn,
            entry: Entry::default(),
        };
        Ok(self.hand_out(idle, place, Instant::now()))
    }

    /// An idle connection now, if a place is free and one is ready to use
    /// (alive, not expired, no health check due); `None` otherwise, and
    /// nothing changed: [`checkout`](Self::checkout) does the rest.
    pub fn checkout_now(self: &Arc<Self>, now: Instant) -> Option<Pooled> {
        let place = self.places.try_take()?;
        while let Some(mut taken) = self.take_idle() {
            if taken.conn.is_broken_while_idle() || self.expired(&taken.conn, &taken.entry, now) {
                debug!(
                    server = taken.conn.id,
                    "retiring a pooled server connection"
                );
                continue;
            }
            if self.check_due(&taken.conn, now) {
                // The slow path checks it (and finds it first).
                let mut idle = lock(&self.idle);
                let next = if self.settings.round_robin {
                    0
                } else {
                    idle.len()
                };
                idle.insert(next, taken);
                return None;
            }
            self.histograms.observe_wait(Duration::ZERO);
            return Some(self.hand_out(taken, place, now));
        }
        None
    }

    /// Wait in line for a place, up to `checkout_timeout`; the place and
    /// the time it came (two clock reads per wait).
    async fn wait_for_place(self: &Arc<Self>) -> Result<(Place, Instant), PoolError> {
        let started = Instant::now();
        let waiting = Waiting::new(&self.stats);
        let wait = self.places.take(started).await;
        drop(waiting);
        let now = Instant::now();
        let waited = now.saturating_duration_since(started);
        self.histograms.observe_wait(waited);
        let waited = waited.as_micros() as u64;
        self.stats.wait_time_us.fetch_add(waited, Ordering::Relaxed);
        self.stats.max_wait_us.fetch_max(waited, Ordering::Relaxed);
        match wait {
            Ok(place) => Ok((place, now)),
            Err(Unplaced::Closed) => Err(PoolError::Closed),
            Err(Unplaced::TimedOut) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                Err(PoolError::Timeout(self.settings.checkout_timeout))
            }
        }
    }

    /// The most recently used idle connection that lives on this worker
    /// thread, else the most recently used one, moved to this thread (one
    /// that cannot be moved is dropped, and the next one tried); with
    /// `server_round_robin`, the least recently used, moved here if need be.
    fn take_idle(&self) -> Option<Idle> {
        let here = crate::conn::worker::current();
        let round_robin = self.settings.round_robin;
        loop {
            let taken = {
                let mut idle = lock(&self.idle);
                if round_robin {
                    // The oldest, wherever it lives: preferring this
                    // thread's would hand one connection out again and
                    // again.
                    if idle.is_empty() {
                        return None;
                    }
                    idle.remove(0)
                } else {
                    match idle.iter().rposition(|i| i.conn.home() == here) {
                        Some(at) => return Some(idle.remove(at)),
                        None => idle.pop()?,
                    }
                }
            };
            match taken.conn.settle_here() {
                Ok(conn) => {
                    return Some(Idle {
                        conn,
                        entry: taken.entry,
                    })
                }
                Err(err) => debug!(%err, "cannot move a pooled server connection to this thread"),
            }
        }
    }

    fn hand_out(self: &Arc<Self>, idle: Idle, place: Place, now: Instant) -> Pooled {
        let Idle { conn, mut entry } = idle;
        match &entry.listing {
            Some(listing) => listing.set_out(true),
            None => {
                let listing = Listing::new(&self.listed, &conn);
                listing.set_out(true);
                entry.listing = Some(listing);
                entry.expires = self.expiry(&conn);
            }
        }
        Pooled {
            checked_out_at: now,
            serves: self.serves(),
            conn,
            entry,
            pool: Arc::clone(self),
            _place: place,
        }
    }

    /// Return a connection that is idle (ReadyForQuery `I`, nothing pending)
    /// and clean; anything else must be dropped instead.
    pub fn checkin(&self, pooled: Pooled) {
        self.checkin_at(pooled, Instant::now());
    }

    /// [`checkin`](Self::checkin) with the time now, which the caller read.
    pub fn checkin_at(&self, pooled: Pooled, now: Instant) {
        let Pooled {
            mut conn,
            entry,
            _place,
            ..
        } = pooled;
        if let Some(listing) = &entry.listing {
            listing.set_out(false);
        }
        if conn.status() != TransactionStatus::Idle
            || conn.dirty
            || self.expired(&conn, &entry, now)
        {
            return;
        }
        conn.last_used = now;
        lock(&self.idle).push(Idle { conn, entry });
        // The place is given back after the push, so a waiter always finds
        // either this connection or room for a new one.
        drop(_place);
    }

    /// Keep `conn`, opened to this pool's target outside the pool (the
    /// server login that checked a passthrough password), as an idle
    /// connection if the pool has room for it; else it is closed.
    pub fn adopt(self: &Arc<Self>, conn: Box<ServerConn>) {
        let Some(place) = self.places.try_take() else {
            return;
        };
        // `servers()` counts the place just taken.
        if self.servers() > self.settings.pool_size {
            return;
        }
        let idle = Idle {
            conn,
            entry: Entry::default(),
        };
        let now = Instant::now();
        self.checkin_at(self.hand_out(idle, place, now), now);
    }

    /// How long the pool has existed (SHOW STATS' per-second averages).
    pub fn age(&self) -> Duration {
        self.born.elapsed()
    }

    /// `settings`, or the equal set an earlier login with the same
    /// settings left here: shared, so comparing a client's settings with a
    /// server's (on every checkout) is mostly comparing two pointers.
    pub fn shared_settings(&self, settings: ParamSet) -> ParamSet {
        lock(&self.login_reports)
            .get_key_value(&settings)
            .map_or(settings, |(shared, _)| shared.clone())
    }

    /// What a server reported (ParameterStatus) for these startup settings,
    /// if a login with the same settings happened before.
    pub fn login_report(&self, settings: &ParamSet) -> Option<LoginReport> {
        lock(&self.login_reports).get(settings).cloned()
    }

    pub fn remember_login_report(&self, settings: ParamSet, report: Vec<(String, String)>) {
        let mut reports = lock(&self.login_reports);
        if reports.len() >= LOGIN_REPORTS_LIMIT {
            reports.clear();
        }
        reports.insert(settings, Arc::new(report));
    }

    /// Connections checked out right now.
    pub fn active(&self) -> usize {
        self.places.taken()
    }

    pub fn idle_count(&self) -> usize {
        lock(&self.idle).len()
    }

    /// Close every idle connection (RELOAD of a changed pool, SHUTDOWN).
    pub fn close_idle(&self) {
        lock(&self.idle).clear();
    }

    /// Server connections open or opening: checked out plus idle.
    pub fn servers(&self) -> usize {
        self.active() + self.idle_count()
    }
}
