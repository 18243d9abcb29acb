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
use std::sync::RwLock;
use std::time::Instant;

/// Per cluster: the deadline, and whether its lapse has been installed
/// (the stale marker of `overlay.rs`).
#[derive(Debug, Default)]
pub struct Freshness {
    clusters: RwLock<HashMap<String, Deadline>>,
}

#[derive(Debug, Clone, Copy)]
struct Deadline {
    until: Instant,
    lapsed: bool,
}

impl Freshness {
    /// A read of `cluster` succeeded: keyless statements may be served
    /// until `until`. Whether the cluster was marked lapsed (the marker
    /// is to be taken off).
    pub fn renew(&self, cluster: &str, until: Instant) -> bool {
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = clusters.insert(
            cluster.to_owned(),
            Deadline {
                until,
                lapsed: false,
            },
        );
        before.is_some_and(|d| d.lapsed)
    }

    /// Whether `cluster`'s deadline has passed and its lapse is not yet
    /// marked (the caller marks it: [`Freshness::lapse`]).
    pub fn lapsed_unmarked(&self, cluster: &str, now: Instant) -> bool {
        let clusters = self
            .clusters
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        clusters
            .get(cluster)
            .is_some_and(|d| !d.lapsed && now >= d.until)
    }

    /// Mark `cluster`'s deadline passed (unless a read renewed it
    /// meanwhile); whether it was marked now.
    pub fn lapse(&self, cluster: &str, now: Instant) -> bool {
        let mut clusters = self
            .clusters
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match clusters.get_mut(cluster) {
            Some(d) if !d.lapsed && now >= d.until => {
                d.lapsed = true;
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
}
