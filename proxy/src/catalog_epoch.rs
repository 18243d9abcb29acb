//! When the shards' catalog must be read again before a statement is routed:
//! schema changes through pgshard (DDL, and the COMMIT of a transaction that
//! ran DDL) ask for a read; `schema.rs` reads and installs the catalog and
//! says which request its read answers; sessions wait, before routing, until
//! every request made so far has been answered (or a bounded time passed),
//! so that a view, function or sequence created by one statement is looked
//! behind by the next statement of any client.
//!
//! A read answers the requests made before it started: a request made while
//! a read runs (its DDL may have committed after the read looked) is
//! answered by the next read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{watch, Notify};

/// How long a session waits for a read before routing anyway (the
/// database read from may be down; routing then uses what was known).
const MOST_WAIT: Duration = Duration::from_secs(5);

/// Requests for catalog reads and the reads that answered them.
#[derive(Debug)]
pub struct CatalogEpoch {
    /// Requests made so far (starts at 1: the read at start).
    requested: AtomicU64,
    /// The latest request a finished read answered, for waiters.
    answered: watch::Sender<u64>,
    /// The same, read without a lock on the hot path.
    answered_now: AtomicU64,
    /// Wakes the reader.
    pub wake: Notify,
}

impl Default for CatalogEpoch {
    fn default() -> Self {
        CatalogEpoch {
            requested: AtomicU64::new(1),
            answered: watch::Sender::new(0),
            answered_now: AtomicU64::new(0),
            wake: Notify::new(),
        }
    }
}

impl CatalogEpoch {
    /// Ask for a read (the schema changed).
    pub fn request(&self) {
        self.requested.fetch_add(1, Ordering::AcqRel);
        self.wake.notify_one();
    }

    /// The request a read starting now answers.
    pub fn starting(&self) -> u64 {
        self.requested.load(Ordering::Acquire)
    }

    /// A read that started at `request` finished (installed or failed).
    pub fn answered(&self, request: u64) {
        self.answered_now.fetch_max(request, Ordering::AcqRel);
        self.answered.send_if_modified(|latest| {
            let newer = request > *latest;
            if newer {
                *latest = request;
            }
            newer
        });
    }

    /// Whether every request made so far is answered.
    pub fn current(&self) -> bool {
        self.answered_now.load(Ordering::Acquire) >= self.requested.load(Ordering::Acquire)
    }

    /// Wait until the requests made so far are answered, at most
    /// [`MOST_WAIT`]; `false` when the wait ran out.
    pub async fn wait(&self) -> bool {
        self.wait_at_most(MOST_WAIT).await
    }

    async fn wait_at_most(&self, most: Duration) -> bool {
        let want = self.requested.load(Ordering::Acquire);
        let mut answered = self.answered.subscribe();
        let waited = tokio::time::timeout(most, answered.wait_for(|latest| *latest >= want)).await;
        matches!(waited, Ok(Ok(_)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_answer_the_requests_made_before_they_start() {
        let epoch = CatalogEpoch::default();
        assert!(!epoch.current(), "the read at start is owed");
        let first = epoch.starting();
        epoch.request();
        epoch.answered(first);
        assert!(
            !epoch.current(),
            "a request made during a read waits for the next"
        );
        let second = epoch.starting();
        epoch.answered(second);
        assert!(epoch.current());
        assert!(epoch.wait().await);
        // An older read finishing late changes nothing.
        epoch.answered(first);
        assert!(epoch.current());
    }

    #[tokio::test]
    async fn waiting_ends_when_a_read_answers_or_the_time_runs_out() {
        let epoch = std::sync::Arc::new(CatalogEpoch::default());
        let reader = std::sync::Arc::clone(&epoch);
        let read = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            reader.answered(reader.starting());
        });
        assert!(epoch.wait().await);
        read.await.unwrap();
        epoch.request();
        let short = Duration::from_millis(20);
        assert!(
            !epoch.wait_at_most(short).await,
            "nobody read: the wait runs out"
        );
    }
}
