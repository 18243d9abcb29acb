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
//! Clusters never read yet have no deadline (the config rules).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// Per cluster: its deadline, shared with the cluster's sessions.
#[derive(Debug)]
pub struct Freshness {
    clusters: RwLock<HashMap<String, Arc<Deadline>>>,
    /// What deadlines count from.
    base: Instant,
}

impl Default for Freshness {
    fn default() -> Freshness {
        Freshness {
            clusters: RwLock::default(),
            base: Instant::now(),
        }
    }
}

/// One cluster's deadline and whether its lapse has been installed (the
/// stale marker of `overlay.rs`). Both change only under the map's write
/// lock ([`Freshness::renew`], [`Freshness::lapse`]); a session reads them
/// without it, before each routing ([`Deadline::lapsed_unmarked`]), and
/// confirms a lapse under the lock.
#[derive(Debug)]
pub struct Deadline {
    /// Nanoseconds from `base`; `u64::MAX` until the cluster is first read.
    until: AtomicU64,
    lapsed: AtomicBool,
    base: Instant,
}

impl Deadline {
    fn new(base: Instant) -> Deadline {
        Deadline {
            until: AtomicU64::new(u64::MAX),
            lapsed: AtomicBool::new(false),
            base,
        }
    }

    fn since_base(&self, at: Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.base).as_nanos();
        u64::try_from(nanos).unwrap_or(u64::MAX - 1)
    }

    /// Whether the deadline has passed at `now` and its lapse is not yet
    /// marked (the caller marks it: [`Freshness::lapse`]). Two loads, no
    /// lock: what the session checks before each routing.
    pub fn lapsed_unmarked(&self, now: Instant) -> bool {
        !self.lapsed.load(Ordering::Acquire)
            && self.since_base(now) >= self.until.load(Ordering::Acquire)
    }
}

impl Freshness {
    /// `cluster`'s deadline, for its sessions to keep (created, with no
    /// deadline yet, if the cluster was never read).
    pub fn deadline(&self, cluster: &str) -> Arc<Deadline> {
        let known = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(cluster)
            .cloned();
        known.unwrap_or_else(|| {
            let mut clusters = self
                .clusters
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let entry = clusters.entry(cluster.to_owned());
            Arc::clone(entry.or_insert_with(|| Arc::new(Deadline::new(self.base))))
        })
    }

    /// A read of `cluster` succeeded: keyless statements may be served
    /// until `until`. Whether the cluster was marked lapsed (the marker
    /// is to be taken off).
    pub fn renew(&self, cluster: &str, until: Instant) -> bool {
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = clusters.entry(cluster.to_owned());
        let deadline = entry.or_insert_with(|| Arc::new(Deadline::new(self.base)));
        let until = deadline.since_base(until);
        deadline.until.store(until, Ordering::Release);
        deadline.lapsed.swap(false, Ordering::AcqRel)
    }

    /// Whether `cluster`'s deadline has passed and its lapse is not yet
    /// marked (sessions ask their [`Deadline`] instead).
    pub fn lapsed_unmarked(&self, cluster: &str, now: Instant) -> bool {
        let clusters = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        clusters
            .get(cluster)
            .is_some_and(|d| d.lapsed_unmarked(now))
    }

    /// Mark `cluster`'s deadline passed (unless a read renewed it
    /// meanwhile); whether it was marked now.
    pub fn lapse(&self, cluster: &str, now: Instant) -> bool {
        let clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match clusters.get(cluster) {
            Some(d) if d.lapsed_unmarked(now) => {
                d.lapsed.store(true, Ordering::Release);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_deadline_lapses_once_and_a_read_renews_it() {
        let fresh = Freshness::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        assert!(
            !fresh.lapsed_unmarked("c", later),
            "never read: no deadline"
        );
        assert!(!fresh.renew("c", now + Duration::from_secs(1)));
        assert!(!fresh.lapsed_unmarked("c", now));
        assert!(fresh.lapsed_unmarked("c", later));
        assert!(!fresh.lapsed_unmarked("other", later));
        assert!(fresh.lapse("c", later));
        assert!(!fresh.lapse("c", later), "marked once");
        assert!(!fresh.lapsed_unmarked("c", later));
        assert!(fresh.renew("c", later + Duration::from_secs(1)), "unmark");
        assert!(!fresh.lapsed_unmarked("c", later));
        assert!(!fresh.lapse("c", later), "renewed before the lapse");
    }

    #[test]
    fn a_sessions_deadline_is_the_clusters() {
        let fresh = Freshness::default();
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        let kept = fresh.deadline("c");
        assert!(!kept.lapsed_unmarked(later), "never read: no deadline");
        fresh.renew("c", now + Duration::from_secs(1));
        assert!(!kept.lapsed_unmarked(now));
        assert!(kept.lapsed_unmarked(later));
        assert!(fresh.lapse("c", later));
        assert!(!kept.lapsed_unmarked(later), "marked");
        assert!(fresh.renew("c", later + Duration::from_secs(1)));
        assert!(!kept.lapsed_unmarked(later));
        assert!(Arc::ptr_eq(&kept, &fresh.deadline("c")));
    }
}
