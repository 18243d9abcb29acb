//! The sessions that may run statements routed under an earlier routing
//! state of a cluster with plain sharded tables, counted by routing
//! generation: before an instance acknowledges a move (and before the
//! mover's own process goes past its mark), every session counted before
//! the move's marker was installed must have gone idle, so that no keyless
//! statement routed without the marker reaches a database once the move
//! copies rows (`reshard/instances.rs` says why that is exact).
//!
//! A session takes a [`Flight`] before it routes (`Session::follow_config`,
//! before it looks at the installed sharding model) and keeps it until its
//! statements end, or, once it routed one to every database, until it is
//! idle (no transaction either: `session/holds.rs`); dropping the session
//! drops it too, so errors, cancellations and disconnects give it back. Whoever installs a marker calls [`KeylessFlights::advance`]
//! after installing it and waits for [`KeylessFlights::drained`] below the
//! generation it returns: a session counted at a later generation took
//! its count after the marker was installed, so it routes with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// Per cluster: the current generation, and the sessions counted at each.
#[derive(Debug, Default)]
struct Counts {
    generation: u64,
    open: BTreeMap<u64, usize>,
}

impl Counts {
    /// Whether no session is counted below `boundary`.
    fn drained(&self, boundary: u64) -> bool {
        self.open.range(..boundary).next().is_none()
    }
}

/// The counts of every cluster.
#[derive(Debug, Clone, Default)]
pub struct KeylessFlights {
    state: Arc<watch::Sender<HashMap<String, Counts>>>,
}

/// A session counted at a generation of its cluster, until dropped.
#[derive(Debug)]
pub struct Flight {
    flights: KeylessFlights,
    cluster: String,
    generation: u64,
}

impl Flight {
    /// The generation the session was counted at.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        self.flights.state.send_if_modified(|clusters| {
            let Some(counts) = clusters.get_mut(&self.cluster) else {
                return false;
            };
            let Some(open) = counts.open.get_mut(&self.generation) else {
                return false;
            };
            *open = open.saturating_sub(1);
            if *open > 0 {
                return false;
            }
            counts.open.remove(&self.generation);
            // Only the end of a generation can let a waiter go.
            true
        });
    }
}

impl KeylessFlights {
    /// Count a session of `cluster` at its current generation.
    pub fn enter(&self, cluster: &str) -> Flight {
        let mut generation = 0;
        self.state.send_if_modified(|clusters| {
            if !clusters.contains_key(cluster) {
                clusters.insert(cluster.to_owned(), Counts::default());
            }
            if let Some(counts) = clusters.get_mut(cluster) {
                generation = counts.generation;
                *counts.open.entry(generation).or_default() += 1;
            }
            false
        });
        Flight {
            flights: self.clone(),
            cluster: cluster.to_owned(),
            generation,
        }
    }

    /// Begin a new generation of `cluster` (after a marker was installed);
    /// the sessions counted before it are those below the returned
    /// boundary.
    pub fn advance(&self, cluster: &str) -> u64 {
        let mut boundary = 0;
        self.state.send_if_modified(|clusters| {
            let counts = clusters.entry(cluster.to_owned()).or_default();
            counts.generation += 1;
            boundary = counts.generation;
            false
        });
        boundary
    }

    /// Whether no session of `cluster` is counted below `boundary` now.
    pub fn drained_now(&self, cluster: &str, boundary: u64) -> bool {
        self.state
            .borrow()
            .get(cluster)
            .is_none_or(|c| c.drained(boundary))
    }

    /// Wait at most `timeout` until no session of `cluster` is counted
    /// below `boundary`; whether none is.
    pub async fn drained(&self, cluster: &str, boundary: u64, timeout: Duration) -> bool {
        let mut clusters = self.state.subscribe();
        let drained = async {
            clusters
                .wait_for(|c| c.get(cluster).is_none_or(|c| c.drained(boundary)))
                .await
                .is_ok()
        };
        tokio::time::timeout(timeout, drained)
            .await
            .unwrap_or(false)
    }

    /// The sessions of `cluster` counted now, at any generation.
    pub fn open(&self, cluster: &str) -> usize {
        self.state
            .borrow()
            .get(cluster)
            .map_or(0, |c| c.open.values().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHORT: Duration = Duration::from_millis(20);

    #[tokio::test]
    async fn a_boundary_waits_for_the_sessions_counted_before_it_only() {
        let flights = KeylessFlights::default();
        let before = flights.enter("c");
        let other = flights.enter("other");
        let boundary = flights.advance("c");
        assert_eq!(before.generation() + 1, boundary);
        let after = flights.enter("c");
        assert_eq!(after.generation(), boundary, "counted after the advance");
        assert!(!flights.drained_now("c", boundary));
        assert!(!flights.drained("c", boundary, SHORT).await);
        assert!(
            flights.drained_now("c", before.generation()),
            "nothing below the older boundary"
        );
        drop(before);
        assert!(
            flights.drained_now("c", boundary),
            "a later one does not count"
        );
        assert!(flights.drained("c", boundary, SHORT).await);
        assert!(!flights.drained_now("c", boundary + 1));
        assert_eq!(flights.open("c"), 1);
        assert!(flights.drained_now("other", 0));
        assert!(!flights.drained_now("other", flights.advance("other")));
        drop((after, other));
        assert_eq!((flights.open("c"), flights.open("other")), (0, 0));
        assert!(flights.drained_now("never", 7), "a cluster never counted");
    }

    #[tokio::test]
    async fn a_waiter_is_let_go_when_the_last_old_session_leaves() {
        let flights = KeylessFlights::default();
        let old = [flights.enter("c"), flights.enter("c")];
        let first = flights.advance("c");
        let middle = flights.enter("c");
        let second = flights.advance("c");
        let waiter = {
            let flights = flights.clone();
            tokio::spawn(async move { flights.drained("c", second, Duration::from_secs(5)).await })
        };
        let [a, b] = old;
        drop(a);
        tokio::time::sleep(SHORT).await;
        assert!(!waiter.is_finished(), "one old session is left");
        drop(b);
        assert!(flights.drained_now("c", first));
        assert!(!flights.drained_now("c", second), "the middle one counts");
        drop(middle);
        assert!(matches!(waiter.await, Ok(true)));
    }
}
