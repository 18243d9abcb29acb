//! What pgshard counts as it runs, for Prometheus / OpenMetrics: route
//! decisions, errors by SQLSTATE class, and pool wait, transaction and
//! query times as histograms (a pool keeps its histogram handles, a
//! route's counter is fetched once). `openmetrics.rs` exposes them, with
//! what the pools and the AST cache report at each scrape.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

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
    /// Gathered from the shards and finished on the coordinator database
    /// (`cross_shard_finish = "coordinator"`).
    Coordinator,
}

impl RouteKind {
    const ALL: [RouteKind; 6] = [
        RouteKind::One,
        RouteKind::Any,
        RouteKind::Several,
        RouteKind::All,
        RouteKind::Refused,
        RouteKind::Coordinator,
    ];

    pub fn label(self) -> &'static str {
        match self {
            RouteKind::One => "one",
            RouteKind::Any => "any",
            RouteKind::Several => "several",
            RouteKind::All => "all",
            RouteKind::Refused => "refused",
            RouteKind::Coordinator => "coordinator",
        }
    }
}

/// What is counted as it happens (the rest is read at scrape time).
#[derive(Debug)]
pub struct Metrics {
    routes: Family<RouteLabels, Counter>,
    /// `routes`' counters in [`RouteKind::ALL`] order, fetched once: a
    /// route costs one atomic add.
    route_counters: [Counter; 6],
    errors: Family<ClassLabels, Counter>,
    wait: Family<PoolLabels, Seconds>,
    transaction: Family<PoolLabels, Seconds>,
    query: Family<PoolLabels, Seconds>,
    /// Statements that waited for a move's cutover (a hold on the logical
    /// shards they touch).
    move_held: Counter,
    /// Rows and bytes (DataRow bodies) gathered from the shards to finish
    /// statements on the coordinator.
    gathered_rows: Counter,
    gathered_bytes: Counter,
    /// How long those waited.
    move_hold_wait: Seconds,
    /// Parts of prepared split INSERTs whose statement was written and
    /// registered, and those that found one kept for their shape.
    split_parts_written: Counter,
    split_parts_reused: Counter,
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
            move_held: Counter::default(),
            gathered_rows: Counter::default(),
            gathered_bytes: Counter::default(),
            move_hold_wait: Seconds::default(),
            split_parts_written: Counter::default(),
            split_parts_reused: Counter::default(),
        }
    }
}

impl Metrics {
    /// Register what is counted as it happens with `registry` (for a
    /// scrape: `openmetrics.rs`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "routes",
            "Statements routed on sharded clusters, by route",
            self.routes.clone(),
        );
        registry.register(
            "errors",
            "ErrorResponses sent to clients, by SQLSTATE class",
            self.errors.clone(),
        );
        registry.register(
            "pool_wait_seconds",
            "Time clients waited to check a server out",
            self.wait.clone(),
        );
        registry.register(
            "pool_transaction_seconds",
            "Time a client held a server (a transaction in transaction mode)",
            self.transaction.clone(),
        );
        registry.register(
            "pool_query_seconds",
            "Time servers took to answer a request (a query, or messages up to a Sync)",
            self.query.clone(),
        );
        registry.register(
            "move_held_statements",
            "Statements held while a move switched the logical shards they touch to another database",
            self.move_held.clone(),
        );
        registry.register(
            "move_hold_wait_seconds",
            "Time statements held by a move's cutover waited",
            self.move_hold_wait.clone(),
        );
        registry.register(
            "split_part_statements_written",
            "Shards' parts of prepared split INSERTs whose statement was written and registered",
            self.split_parts_written.clone(),
        );
        registry.register(
            "split_part_statements_reused",
            "Shards' parts of prepared split INSERTs that bound a statement kept for their shape",
            self.split_parts_reused.clone(),
        );
        registry.register(
            "gathered_rows",
            "Rows gathered from the shards to finish statements on the coordinator",
            self.gathered_rows.clone(),
        );
        registry.register(
            "gathered_bytes",
            "Bytes (row values) gathered from the shards to finish statements on the coordinator",
            self.gathered_bytes.clone(),
        );
    }

    /// A statement finished on the coordinator gathered `rows` rows of
    /// `bytes` bytes.
    pub fn gathered(&self, rows: u64, bytes: u64) {
        self.gathered_rows.inc_by(rows);
        self.gathered_bytes.inc_by(bytes);
    }

    /// A prepared split INSERT's part bound a statement kept for its shape
    /// (`reused`) or one written and registered for it.
    pub fn split_part(&self, reused: bool) {
        match reused {
            true => self.split_parts_reused.inc(),
            false => self.split_parts_written.inc(),
        };
    }

    /// (parts' statements written, reused).
    pub fn split_parts(&self) -> (u64, u64) {
        (
            self.split_parts_written.get(),
            self.split_parts_reused.get(),
        )
    }

    /// A statement was held by a move's cutover; it waited `waited`.
    pub fn move_held(&self, waited: Duration) {
        self.move_held.inc();
        self.move_hold_wait.observe(waited);
    }

    /// (statements held by a move's cutover, their total wait).
    pub fn move_holds(&self) -> (u64, Duration) {
        (self.move_held.get(), self.move_hold_wait.totals().1)
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text;

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
