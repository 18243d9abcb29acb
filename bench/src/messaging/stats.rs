//! What a workload's tasks count while they run: live message and error
//! counters (shared, read by the progress line), per-task latency
//! histograms merged at the end, and each task's outcome.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Counters every task of one workload run updates, and the flags that stop them.
#[derive(Debug)]
pub struct Live {
    /// The run's clock: message headers carry microseconds since this.
    pub epoch: Instant,
    pub written: AtomicU64,
    pub read: AtomicU64,
    pub errors: AtomicU64,
    /// Latencies are recorded only while this is set (the timed window).
    pub measuring: AtomicBool,
    /// Writers finish their current transaction and return.
    pub stop_writers: AtomicBool,
    /// Set once every writer has returned: a reader that then finds nothing
    /// new has read everything.
    pub writers_done: AtomicBool,
    /// Readers return at once (the drain took too long).
    pub stop_readers: AtomicBool,
    /// Messages committed per partition (pub/sub) or inserted (queue).
    pub per_partition: Vec<AtomicU64>,
}

impl Live {
    pub fn new(partitions: usize) -> Arc<Live> {
        Arc::new(Live {
            epoch: Instant::now(),
            written: AtomicU64::new(0),
            read: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            measuring: AtomicBool::new(true),
            stop_writers: AtomicBool::new(false),
            writers_done: AtomicBool::new(false),
            stop_readers: AtomicBool::new(false),
            per_partition: (0..partitions).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Microseconds since the epoch.
    pub fn now_us(&self) -> i64 {
        i64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(i64::MAX)
    }

    pub fn flag(flag: &AtomicBool) -> bool {
        flag.load(Ordering::Relaxed)
    }

    pub fn count(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Count `n` messages committed to partition `p`.
    pub fn committed(&self, p: i64, n: u64) {
        if let Some(counter) = usize::try_from(p)
            .ok()
            .and_then(|p| self.per_partition.get(p))
        {
            Live::add(counter, n);
        }
    }
}

/// Write, read and end-to-end latency in microseconds.
#[derive(Debug, Clone)]
pub struct Latencies {
    pub write: Histogram<u64>,
    pub read: Histogram<u64>,
    pub e2e: Histogram<u64>,
}

impl Latencies {
    pub fn new() -> Result<Latencies> {
        // 1 µs to one hour, three significant digits.
        let histogram = || {
            Histogram::new_with_bounds(1, 3_600_000_000, 3).context("create a latency histogram")
        };
        Ok(Latencies {
            write: histogram()?,
            read: histogram()?,
            e2e: histogram()?,
        })
    }

    pub fn merge(&mut self, other: &Latencies) -> Result<()> {
        self.write.add(&other.write).context("merge histograms")?;
        self.read.add(&other.read).context("merge histograms")?;
        self.e2e.add(&other.e2e).context("merge histograms")?;
        Ok(())
    }
}

/// Record `elapsed` in `histogram` (microseconds, saturating).
pub fn record(histogram: &mut Histogram<u64>, elapsed: Duration) {
    histogram.saturating_record(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX));
}

/// Percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Percentiles {
    pub samples: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    pub fn of(histogram: &Histogram<u64>) -> Percentiles {
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            samples: histogram.len(),
            p50_ms: ms(histogram.value_at_quantile(0.50)),
            p95_ms: ms(histogram.value_at_quantile(0.95)),
            p99_ms: ms(histogram.value_at_quantile(0.99)),
            max_ms: ms(histogram.max()),
        }
    }
}

/// How one client task ended.
#[derive(Debug)]
pub struct TaskOutcome {
    /// `writer 2`, `reader g1/p5`, ...
    pub name: String,
    pub latencies: Latencies,
    /// Statements that failed (the task rolled back and went on).
    pub errors: u64,
    pub first_error: Option<String>,
    /// Why the task gave up, if it did.
    pub failure: Option<String>,
    /// Gaps, duplicates and misplaced messages the task saw (the first few).
    pub violations: Vec<String>,
    pub violation_count: u64,
    /// A pub/sub reader's (group, partition, next offset to read) at the end.
    pub position: Option<(i32, i64, i64)>,
}

/// Most violations a task keeps the text of.
const KEPT_VIOLATIONS: usize = 5;

/// Statement errors after which a task gives up.
const MAX_ERRORS: u64 = 1000;

impl TaskOutcome {
    pub fn new(name: String) -> Result<TaskOutcome> {
        Ok(TaskOutcome {
            name,
            latencies: Latencies::new()?,
            errors: 0,
            first_error: None,
            failure: None,
            violations: Vec::new(),
            violation_count: 0,
            position: None,
        })
    }

    /// Count a failed transaction; `false` when the task should give up
    /// (its connection is gone, or too many errors).
    pub fn error(&mut self, live: &Live, err: &anyhow::Error, closed: bool) -> bool {
        Live::add(&live.errors, 1);
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(format!("{err:#}"));
        }
        if closed || self.errors >= MAX_ERRORS {
            self.failure = Some(format!(
                "{} gave up after {} errors: {err:#}",
                self.name, self.errors
            ));
            return false;
        }
        true
    }

    pub fn violation(&mut self, what: String) {
        self.violation_count += 1;
        if self.violations.len() < KEPT_VIOLATIONS {
            self.violations.push(format!("{}: {what}", self.name));
        }
    }
}

/// Print a progress line every `every` until `done` is set.
pub async fn progress(label: String, live: Arc<Live>, every: Duration, done: Arc<AtomicBool>) {
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    let (mut last_written, mut last_read, mut last_at) = (0, 0, Instant::now());
    while !Live::flag(&done) {
        ticker.tick().await;
        if Live::flag(&done) || !Live::flag(&live.measuring) {
            break;
        }
        let (written, read) = (Live::count(&live.written), Live::count(&live.read));
        let now = Instant::now();
        let span = now.duration_since(last_at).as_secs_f64().max(1e-9);
        let total = live.epoch.elapsed().as_secs_f64().max(1e-9);
        println!(
            "  [{label}] {:>4.0}s  written {:>8.0} msg/s (avg {:>8.0})  read {:>8.0} msg/s (avg {:>8.0})  errors {}",
            total,
            (written - last_written) as f64 / span,
            written as f64 / total,
            (read - last_read) as f64 / span,
            read as f64 / total,
            Live::count(&live.errors),
        );
        (last_written, last_read, last_at) = (written, read, now);
    }
}
