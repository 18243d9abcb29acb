//! Prometheus / OpenMetrics: what pgshard counts as it runs (route
//! decisions, errors by SQLSTATE class, pool wait and transaction times as
//! histograms) and, at each scrape, what the pools and the AST cache report,
//! exposed at `GET /metrics` on `openmetrics_port`.
//!
//! The exposition is `prometheus-client`'s; the HTTP side is a few lines of
//! our own over tokio (one route, one method, `Connection: close`), which
//! costs less than an HTTP framework's dependency tree.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{text, EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, info};

use crate::conn::server::ServerTarget;
use crate::pool::{Pool, PoolId};
use crate::state::State;

/// The labels of a pool's metrics.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PoolLabels {
    pub cluster: String,
    pub user: String,
    pub shard: String,
    pub role: String,
    /// The database's server, `host:port` (a shard's replicas differ only
    /// there).
    pub host: String,
}

impl PoolLabels {
    pub fn new(id: &PoolId, target: &ServerTarget) -> PoolLabels {
        PoolLabels {
            cluster: id.cluster.clone(),
            user: id.user.clone(),
            shard: id.shard.to_string(),
            role: id.role.as_str().to_owned(),
            host: format!("{}:{}", target.host, target.port),
        }
    }

    pub fn of(pool: &Pool) -> PoolLabels {
        let id = PoolId {
            cluster: pool.cluster.clone(),
            user: pool.user.clone(),
            shard: pool.shard,
            role: pool.role,
        };
        PoolLabels::new(&id, &pool.target)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    route: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ClassLabels {
    class: String,
}

/// Where the router sent a statement on a sharded cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKind {
    /// One shard, by its key.
    One,
    /// Any shard (no key needed).
    Any,
    /// Some of the shards.
    Several,
    /// Every shard.
    All,
    /// Refused: no exact route (a 0A000 to the client).
    Refused,
}

impl RouteKind {
    const ALL: [RouteKind; 5] = [
        RouteKind::One,
        RouteKind::Any,
        RouteKind::Several,
        RouteKind::All,
        RouteKind::Refused,
    ];

    pub fn label(self) -> &'static str {
        match self {
            RouteKind::One => "one",
            RouteKind::Any => "any",
            RouteKind::Several => "several",
            RouteKind::All => "all",
            RouteKind::Refused => "refused",
        }
    }
}

/// What is counted as it happens (the rest is read at scrape time).
#[derive(Debug)]
pub struct Metrics {
    routes: Family<RouteLabels, Counter>,
    /// `routes`' counters in [`RouteKind::ALL`] order, fetched once: a
    /// route costs one atomic add.
    route_counters: [Counter; 5],
    errors: Family<ClassLabels, Counter>,
    wait: Family<PoolLabels, Seconds>,
    transaction: Family<PoolLabels, Seconds>,
    query: Family<PoolLabels, Seconds>,
}

/// Finite buckets of [`Seconds`]: 100 µs doubling up to ~52 s.
const BUCKETS: usize = 20;
const FIRST_BUCKET_NS: u64 = 100_000;

/// A histogram of durations whose observation is three relaxed atomic
/// adds. prometheus-client's `Histogram` takes a write lock per
/// observation, which every checkout of a pool would contend for.
#[derive(Debug, Clone, Default)]
pub struct Seconds(Arc<SecondsInner>);

#[derive(Debug, Default)]
struct SecondsInner {
    /// Per-bucket counts; the last one is `+Inf`.
    buckets: [AtomicU64; BUCKETS + 1],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Seconds {
    /// Observations so far and their sum.
    pub fn totals(&self) -> (u64, Duration) {
        (
            self.0.count.load(Ordering::Relaxed),
            Duration::from_nanos(self.0.sum_ns.load(Ordering::Relaxed)),
        )
    }

    pub fn observe(&self, duration: Duration) {
        let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let index = (0..BUCKETS)
            .find(|&i| ns <= FIRST_BUCKET_NS << i)
            .unwrap_or(BUCKETS);
        self.0.buckets[index].fetch_add(1, Ordering::Relaxed);
        self.0.count.fetch_add(1, Ordering::Relaxed);
        self.0.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

impl TypedMetric for Seconds {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Seconds {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let buckets: Vec<(f64, u64)> = self
            .0
            .buckets
            .iter()
            .enumerate()
            .map(|(i, count)| {
                // prometheus-client writes `f64::MAX` as `+Inf`.
                let bound = match i {
                    BUCKETS => f64::MAX,
                    i => (FIRST_BUCKET_NS << i) as f64 / 1e9,
                };
                (bound, count.load(Ordering::Relaxed))
            })
            .collect();
        let count = self.0.count.load(Ordering::Relaxed);
        let sum = self.0.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let routes = Family::<RouteLabels, Counter>::default();
        let route_counters = RouteKind::ALL.map(|kind| {
            routes
                .get_or_create(&RouteLabels {
                    route: kind.label(),
                })
                .clone()
        });
        Metrics {
            routes,
            route_counters,
            errors: Family::default(),
            wait: Family::default(),
            transaction: Family::default(),
            query: Family::default(),
        }
    }
}

impl Metrics {
    pub fn route(&self, kind: RouteKind) {
        self.route_counters[kind as usize].inc();
    }

    /// An ErrorResponse sent to a client, by the class (first two
    /// characters) of its SQLSTATE.
    pub fn error(&self, sqlstate: &[u8]) {
        let class = String::from_utf8_lossy(sqlstate.get(..2).unwrap_or(b"??")).into_owned();
        self.errors.get_or_create(&ClassLabels { class }).inc();
    }

    /// The histograms a pool observes into (kept by the pool: observing
    /// costs no label lookup).
    pub fn pool_histograms(&self, labels: &PoolLabels) -> PoolHistograms {
        PoolHistograms {
            wait: self.wait.get_or_create(labels).clone(),
            transaction: self.transaction.get_or_create(labels).clone(),
            query: self.query.get_or_create(labels).clone(),
        }
    }
}

/// A pool's histograms: checkout wait, how long a client held a server
/// (a transaction in transaction mode), and how long servers took to
/// answer a request (a query, or extended-protocol messages up to a Sync).
#[derive(Debug, Clone)]
pub struct PoolHistograms {
    pub wait: Seconds,
    pub transaction: Seconds,
    pub query: Seconds,
}

impl PoolHistograms {
    pub fn observe_wait(&self, wait: Duration) {
        self.wait.observe(wait);
    }

    pub fn observe_transaction(&self, held: Duration) {
        self.transaction.observe(held);
    }

    pub fn observe_query(&self, took: Duration) {
        self.query.observe(took);
    }
}

/// The exposition text of every metric now.
pub fn render(state: &State) -> String {
    let config = state.config();
    let mut registry = match &config.general.openmetrics_namespace {
        Some(namespace) => Registry::with_prefix(namespace.as_str()),
        None => Registry::default(),
    };
    register_pools(&mut registry, state);
    register_cache(&mut registry, state);
    let clients = Gauge::<i64>::default();
    clients.set(gauge(state.client_count()));
    registry.register("clients", "Client connections", clients);
    let metrics = &state.metrics;
    registry.register(
        "routes",
        "Statements routed on sharded clusters, by route",
        metrics.routes.clone(),
    );
    registry.register(
        "errors",
        "ErrorResponses sent to clients, by SQLSTATE class",
        metrics.errors.clone(),
    );
    registry.register(
        "pool_wait_seconds",
        "Time clients waited to check a server out",
        metrics.wait.clone(),
    );
    registry.register(
        "pool_transaction_seconds",
        "Time a client held a server (a transaction in transaction mode)",
        metrics.transaction.clone(),
    );
    registry.register(
        "pool_query_seconds",
        "Time servers took to answer a request (a query, or messages up to a Sync)",
        metrics.query.clone(),
    );
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = text::encode(&mut out, &registry);
    out
}

fn gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn register_pools(registry: &mut Registry, state: &State) {
    let gauges = [
        ("pool_clients_active", "Clients holding a server"),
        ("pool_clients_waiting", "Clients waiting for a server"),
        ("pool_servers_active", "Server connections checked out"),
        ("pool_servers_idle", "Server connections idle in the pool"),
        (
            "pool_banned",
            "1 while the database is banned from serving reads",
        ),
    ]
    .map(|(name, help)| (name, help, Family::<PoolLabels, Gauge>::default()));
    let counters = [
        ("pool_transactions", "Transactions run"),
        ("pool_queries", "Queries run"),
        ("pool_received_bytes", "Bytes received from clients"),
        ("pool_sent_bytes", "Bytes sent to clients"),
        (
            "pool_bans",
            "Times the database was banned from serving reads",
        ),
    ]
    .map(|(name, help)| (name, help, Family::<PoolLabels, Counter>::default()));
    for pool in state.all_pools() {
        let labels = PoolLabels::of(&pool);
        let stats = &pool.stats;
        let now = [
            pool.active_clients(),
            stats.waiting.load(Ordering::Relaxed),
            pool.active(),
            pool.idle_count(),
            usize::from(pool.is_banned()),
        ];
        for ((_, _, family), value) in gauges.iter().zip(now) {
            family.get_or_create(&labels).set(gauge(value));
        }
        let totals = [
            &stats.xact_count,
            &stats.query_count,
            &stats.bytes_received,
            &stats.bytes_sent,
            &stats.bans,
        ];
        for ((_, _, family), total) in counters.iter().zip(totals) {
            family
                .get_or_create(&labels)
                .inc_by(total.load(Ordering::Relaxed));
        }
    }
    for (name, help, family) in gauges {
        registry.register(name, help, family);
    }
    for (name, help, family) in counters {
        registry.register(name, help, family);
    }
}

fn register_cache(registry: &mut Registry, state: &State) {
    let stats = state.cache.stats();
    for (name, help, total) in [
        (
            "query_cache_hits",
            "AST cache lookups served without parsing",
            stats.hits,
        ),
        (
            "query_cache_misses",
            "AST cache lookups that parsed",
            stats.misses,
        ),
        (
            "query_cache_evictions",
            "AST cache entries evicted",
            stats.evictions,
        ),
    ] {
        let counter = Counter::<u64>::default();
        counter.inc_by(total);
        registry.register(name, help, counter);
    }
    for (name, help, value) in [
        ("query_cache_entries", "AST cache entries", stats.entries),
        (
            "query_cache_bytes",
            "AST cache size, estimated bytes",
            stats.bytes,
        ),
    ] {
        let now = Gauge::<i64>::default();
        now.set(gauge(value));
        registry.register(name, help, now);
    }
}

/// Serve `GET /metrics` on `listener` until `state` shuts down.
pub async fn serve(listener: TcpListener, state: Arc<State>) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "metrics at http://{addr}/metrics");
    }
    let mut shutdown = state.shutdown.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => if let Ok((stream, _)) = accepted {
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    if let Err(err) = answer(stream, &state).await {
                        debug!(%err, "metrics request failed");
                    }
                });
            },
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// Most bytes of a request head read; scrapers send a few hundred.
const MAX_REQUEST_HEAD: usize = 8 * 1024;

async fn answer(mut stream: TcpStream, state: &State) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_HEAD {
            if stream.read_buf(&mut head).await? == 0 {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let request_line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = request_line.split(|&b| b == b' ');
    let (method, path) = (parts.next(), parts.next());
    let path = path.map(|p| p.split(|&b| b == b'?').next().unwrap_or_default());
    let (status, content_type, body) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            render(state),
        ),
        (Some(b"GET"), _) => ("404 Not Found", "text/plain", "try /metrics\n".to_owned()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_owned(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes_and_routes_are_labelled() {
        let metrics = Metrics::default();
        metrics.error(b"42P01");
        metrics.error(b"42601");
        metrics.error(b"0A000");
        metrics.route(RouteKind::One);
        let mut registry = Registry::default();
        registry.register("errors", "e", metrics.errors.clone());
        registry.register("routes", "r", metrics.routes.clone());
        let mut out = String::new();
        text::encode(&mut out, &registry).unwrap();
        assert!(out.contains("errors_total{class=\"42\"} 2"), "{out}");
        assert!(out.contains("errors_total{class=\"0A\"} 1"), "{out}");
        assert!(out.contains("routes_total{route=\"one\"} 1"), "{out}");
    }

    #[test]
    fn durations_fall_in_cumulative_buckets() {
        let seconds = Seconds::default();
        for ms in [0, 1, 1, 30_000, 100_000] {
            seconds.observe(Duration::from_millis(ms));
        }
        let mut registry = Registry::default();
        registry.register("wait_seconds", "w", seconds.clone());
        let mut out = String::new();
        text::encode(&mut out, &registry).unwrap();
        for line in [
            "wait_seconds_sum 130.002",
            "wait_seconds_count 5",
            "wait_seconds_bucket{le=\"0.0001\"} 1",
            // 1 ms falls in the (0.8 ms, 1.6 ms] bucket.
            "wait_seconds_bucket{le=\"0.0008\"} 1",
            "wait_seconds_bucket{le=\"0.0016\"} 3",
            "wait_seconds_bucket{le=\"26.2144\"} 3",
            "wait_seconds_bucket{le=\"52.4288\"} 4",
            "wait_seconds_bucket{le=\"+Inf\"} 5",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in:\n{out}");
        }
    }
}
