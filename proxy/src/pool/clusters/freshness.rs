//! How long this instance may serve keyless statements on a cluster's
//! plain sharded tables: until its last complete read of the cluster's
//! move records (`reshard/overlay.rs`) is older than the bound it
//! advertised with that read (`pgshard.instances.fresh_ms`). A mover that
//! finds an instance's read older than that counts the instance as gone
//! and copies rows without its acknowledgement; so an instance past its
//! deadline (stalled, or its databases unreadable from it) refuses those
//! statements until a read succeeds again. Sessions check the deadline
//! before each routing (`Session::follow_config`): a process frozen past
//! it refuses on its first statement, before any timer of its own runs.
//! A cluster with plain sharded tables never read yet (its databases did
//! not answer since start-up, or RELOAD added it) has lapsed from the
//! start: its config alone cannot say that no move copies rows. Its first
//! statements wait for the first read ([`Freshness::first_read`], bounded)
//! before they are routed.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::lock::lock;

/// Per cluster: the deadline, and whether its lapse has been installed
/// (the stale marker of `overlay.rs`).
#[derive(Debug, Default)]
pub struct Freshness {
    clusters: RwLock<HashMap<String, Deadline>>,
    /// Bumped by every read that renews a deadline (first reads wait on it).
    reads: watch::Sender<u64>,
    /// Per cluster never read: until when its statements wait for the
    /// first read (from the first statement that waited).
    first_waits: Mutex<HashMap<String, Instant>>,
}

#[derive(Debug, Clone, Default)]
struct Deadline {
    /// When the last read that succeeded began, and until when it lets
    /// keyless statements be served (`None`: never read).
    read: Option<(Instant, Instant)>,
    lapsed: bool,
    /// Why the reads since the last that succeeded failed (the last
    /// failure: the database and its error, naming no host or port).
    failed: Option<String>,
}

impl Deadline {
    /// Whether it has passed at `now` (never read: when `never_read`
    /// counts).
    fn passed(&self, now: Instant, never_read: bool) -> bool {
        self.read.map_or(never_read, |(_, until)| now >= until)
    }
}

impl Freshness {
    /// A read of `cluster` begun at `begun` succeeded: keyless statements
    /// may be served until `until`. Whether the cluster was marked lapsed
    /// (the marker is to be taken off).
    pub fn renew(&self, cluster: &str, begun: Instant, until: Instant) -> bool {
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = clusters.insert(
            cluster.to_owned(),
            Deadline {
                read: Some((begun, until)),
                lapsed: false,
                failed: None,
            },
        );
        self.reads.send_modify(|n| *n = n.wrapping_add(1));
        before.is_some_and(|d| d.lapsed)
    }

    /// A read of `cluster` failed, as `why` says; whether the cluster is
    /// marked lapsed with another reason (its marker's reason is to be
    /// renewed).
    pub fn fail(&self, cluster: &str, why: &str) -> bool {
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let deadline = clusters.entry(cluster.to_owned()).or_default();
        let changed = deadline.failed.as_deref() != Some(why);
        deadline.failed = Some(why.to_owned());
        deadline.lapsed && changed
    }

    /// Why `cluster`'s keyless statements are refused at `now`, with
    /// `bound` the freshness bound: the last failure and how long ago the
    /// last read that succeeded began, for the refusal.
    pub fn why(&self, cluster: &str, now: Instant, bound: Duration) -> String {
        let clusters = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let deadline = clusters.get(cluster).cloned().unwrap_or_default();
        reason(&deadline, now, bound)
    }

    /// Whether `cluster`'s deadline has passed (or, with `never_read`
    /// counting, it was never read) and its lapse is not yet marked (the
    /// caller marks it: [`Freshness::lapse`]).
    pub fn lapsed_unmarked(&self, cluster: &str, now: Instant, never_read: bool) -> bool {
        let clusters = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match clusters.get(cluster) {
            Some(d) => !d.lapsed && d.passed(now, never_read),
            None => never_read,
        }
    }

    /// Mark `cluster`'s deadline passed (unless a read renewed it
    /// meanwhile), or, with `never_read`, a cluster never read; whether it
    /// was marked now.
    pub fn lapse(&self, cluster: &str, now: Instant, never_read: bool) -> bool {
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match clusters.get_mut(cluster) {
            Some(d) if !d.lapsed && d.passed(now, never_read) => {
                d.lapsed = true;
                true
            }
            None if never_read => {
                let lapsed = Deadline {
                    lapsed: true,
                    ..Deadline::default()
                };
                clusters.insert(cluster.to_owned(), lapsed);
                true
            }
            _ => false,
        }
    }

    /// Whether a read of `cluster` ever succeeded.
    pub fn ever_read(&self, cluster: &str) -> bool {
        let clusters = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        clusters.get(cluster).is_some_and(|d| d.read.is_some())
    }

    /// Wait for the first read of `cluster`, at most `bound` after the
    /// first statement that waited for it (later ones wait only what is
    /// left of that); whether it came.
    pub async fn first_read(&self, cluster: &str, bound: Duration) -> bool {
        let mut reads = self.reads.subscribe();
        if self.ever_read(cluster) {
            return true;
        }
        let until = *lock(&self.first_waits)
            .entry(cluster.to_owned())
            .or_insert_with(|| Instant::now() + bound);
        let read = reads.wait_for(|_| self.ever_read(cluster));
        let came = tokio::time::timeout_at(until.into(), read).await;
        came.is_ok_and(|r| r.is_ok())
    }
}

/// The refusal's reason: which database's read failed and how, or that
/// the reads are late; and how long ago the last read that succeeded began.
fn reason(deadline: &Deadline, now: Instant, bound: Duration) -> String {
    let ago = deadline
        .read
        .map(|(begun, _)| now.saturating_duration_since(begun).as_millis());
    match (&deadline.failed, ago) {
        (Some(failed), Some(ago)) => format!(
            "its reads fail: {failed}; the last that succeeded began {ago} ms ago"
        ),
        (Some(failed), None) => {
            format!("its reads fail: {failed}; none has succeeded since it started")
        }
        (None, Some(ago)) => format!(
            "its reads are late: the last that succeeded began {ago} ms ago, past the {} ms of resharding_freshness_timeout",
            bound.as_millis()
        ),
        (None, None) => "no read has finished since it started".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_lapses_once_and_a_read_renews_it() {
        let fresh = Freshness::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        assert!(
            !fresh.lapsed_unmarked("c", later, false),
            "never read, not counted: no deadline"
        );
        assert!(!fresh.renew("c", now, now + Duration::from_secs(1)));
        assert!(!fresh.lapsed_unmarked("c", now, true));
        assert!(fresh.lapsed_unmarked("c", later, true));
        assert!(!fresh.lapsed_unmarked("other", later, false));
        assert!(fresh.lapse("c", later, true));
        assert!(!fresh.lapse("c", later, true), "marked once");
        assert!(!fresh.lapsed_unmarked("c", later, true));
        assert!(fresh.ever_read("c"), "lapsed after a read");
        assert!(
            fresh.renew("c", later, later + Duration::from_secs(1)),
            "unmark"
        );
        assert!(!fresh.lapsed_unmarked("c", later, true));
        assert!(!fresh.lapse("c", later, true), "renewed before the lapse");
    }

    #[test]
    fn a_cluster_never_read_is_lapsed_from_the_start() {
        let fresh = Freshness::default();
        let now = Instant::now();
        assert!(fresh.lapsed_unmarked("c", now, true));
        assert!(!fresh.lapse("c", now, false), "not counted: nothing marked");
        assert!(fresh.lapse("c", now, true));
        assert!(!fresh.lapsed_unmarked("c", now, true), "marked once");
        assert!(!fresh.ever_read("c"));
        assert!(
            fresh.renew("c", now, now + Duration::from_secs(1)),
            "unmark"
        );
        assert!(fresh.ever_read("c"));
    }

    #[tokio::test]
    async fn the_first_read_is_waited_for_within_one_bound() {
        let fresh = std::sync::Arc::new(Freshness::default());
        let bound = Duration::from_millis(100);
        let begun = Instant::now();
        assert!(!fresh.first_read("c", bound).await, "no read came");
        assert!(begun.elapsed() >= bound);
        let again = Instant::now();
        assert!(!fresh.first_read("c", bound).await);
        assert!(
            again.elapsed() < bound,
            "the bound runs from the first wait"
        );
        let waiter = {
            let fresh = std::sync::Arc::clone(&fresh);
            tokio::spawn(async move { fresh.first_read("d", Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        fresh.renew("d", Instant::now(), Instant::now() + Duration::from_secs(1));
        assert!(matches!(waiter.await, Ok(true)));
        assert!(fresh.first_read("d", bound).await, "read already");
    }

    #[test]
    fn a_refusal_says_which_read_failed_or_that_reads_are_late() {
        let fresh = Freshness::default();
        let bound = Duration::from_secs(10);
        let begun = Instant::now();
        let at = |ms| begun + Duration::from_millis(ms);
        assert_eq!(
            fresh.why("c", begun, bound),
            "no read has finished since it started"
        );
        let refused = "database 1: cannot connect: Connection refused (os error 111)";
        assert!(!fresh.fail("c", refused), "not lapsed");
        assert!(!fresh.ever_read("c"), "a failure is no read");
        assert!(fresh.lapsed_unmarked("c", begun, true));
        assert_eq!(
            fresh.why("c", begun, bound),
            format!("its reads fail: {refused}; none has succeeded since it started")
        );
        assert!(fresh.lapse("c", begun, true));
        assert!(!fresh.fail("c", refused), "the same reason");
        let late = "database 1: no answer within 1000 ms (connect_timeout)";
        assert!(fresh.fail("c", late), "lapsed, another reason");
        assert!(fresh.renew("c", at(0), at(10_000)), "unmark");
        assert_eq!(
            fresh.why("c", at(10_250), bound),
            "its reads are late: the last that succeeded began 10250 ms ago, past the 10000 ms \
             of resharding_freshness_timeout"
        );
        assert!(!fresh.fail("c", refused), "not lapsed");
        assert_eq!(
            fresh.why("c", at(12_000), bound),
            format!("its reads fail: {refused}; the last that succeeded began 12000 ms ago")
        );
        assert!(!fresh.lapsed_unmarked("c", at(9_999), true));
        assert!(fresh.lapse("c", at(10_000), false));
        assert!(fresh.fail("c", late));
    }
}
