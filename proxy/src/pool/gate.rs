//! What holds checkouts back: PAUSE (of every database or one), KILL of a
//! database and MAINTENANCE hold sessions of the databases they name until
//! they are let go; a move's cutover holds the statements that touch the
//! logical shards it moves ([`ShardHolds`]); pgshard shutting down ends the
//! waits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// What PAUSE, PAUSE db, KILL db and MAINTENANCE ON hold: sessions of a
/// held database check no server out until it is let go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paused {
    /// PAUSE (every database), until RESUME.
    pub all: bool,
    /// MAINTENANCE ON (every database), until MAINTENANCE OFF.
    pub maintenance: bool,
    /// MAINTENANCE ON db, until MAINTENANCE OFF db (or OFF).
    pub maintenance_databases: BTreeSet<String>,
    /// PAUSE db and KILL db, until RESUME db (or RESUME).
    pub databases: BTreeSet<String>,
}

impl Paused {
    /// Whether sessions of `database` must wait.
    pub fn holds(&self, database: &str) -> bool {
        self.all
            || self.maintenance
            || self.databases.contains(database)
            || self.maintenance_databases.contains(database)
    }
}

/// The switches checkouts look at.
#[derive(Debug)]
pub struct Gate {
    /// PAUSE, KILL, MAINTENANCE: no new server checkouts for the held
    /// databases until they are let go.
    pub paused: watch::Sender<Paused>,
    /// SHUTDOWN or SIGTERM: stop accepting, drain, exit.
    pub shutdown: watch::Sender<bool>,
    /// A move's cutover: statements that touch its logical shards wait.
    pub shards: ShardHolds,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            paused: watch::Sender::new(Paused::default()),
            shutdown: watch::Sender::new(false),
            shards: ShardHolds::default(),
        }
    }
}

impl Gate {
    /// Whether sessions of `database` must wait now.
    pub fn holds(&self, database: &str) -> bool {
        self.paused.borrow().holds(database)
    }

    /// Wait while `database` is held (PAUSE, KILL, MAINTENANCE); `false`
    /// if pgshard started shutting down instead.
    pub async fn wait_resumed(&self, database: &str) -> bool {
        let mut paused = self.paused.subscribe();
        let mut shutdown = self.shutdown.subscribe();
        tokio::select! {
            _ = paused.wait_for(|p| !p.holds(database)) => !self.is_shutting_down(),
            _ = shutdown.wait_for(|s| *s) => false,
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Wait at most `timeout` while the moving shards of `cluster` are
    /// held; `true` once they are let go (`false`: the time ran out, or
    /// pgshard started shutting down).
    pub async fn wait_shards_released(&self, cluster: &str, timeout: Duration) -> bool {
        let mut holds = self.shards.state.subscribe();
        let mut shutdown = self.shutdown.subscribe();
        let released = async {
            tokio::select! {
                _ = holds.wait_for(|h| !h.get(cluster).is_some_and(|c| c.held)) => true,
                _ = shutdown.wait_for(|s| *s) => false,
            }
        };
        tokio::time::timeout(timeout, released)
            .await
            .unwrap_or(false)
    }
}

/// The hold of one cluster's moving logical shards (the router's marker,
/// `router::sharding::Moving`, says which they are and which statements
/// touch them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardHold {
    /// The cutover holds them: statements that touch them wait (those of
    /// a transaction already counted in `inflight` excepted).
    pub held: bool,
    /// Sessions whose transaction touches them now; the cutover waits for
    /// none to be left.
    pub inflight: usize,
}

/// Holds per cluster, and the transactions in flight on the moving
/// shards. Registering and holding take the same lock, so a transaction
/// is either counted before the hold (and the cutover waits for it) or
/// sees the hold (and waits itself).
#[derive(Debug, Clone, Default)]
pub struct ShardHolds {
    state: Arc<watch::Sender<BTreeMap<String, ShardHold>>>,
}

/// A session's transaction counted in flight on `cluster`'s moving
/// shards, until dropped.
#[derive(Debug)]
pub struct InFlight {
    holds: ShardHolds,
    cluster: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.holds.state.send_if_modified(|holds| {
            let Some(hold) = holds.get_mut(&self.cluster) else {
                return false;
            };
            hold.inflight = hold.inflight.saturating_sub(1);
            let drained = hold.inflight == 0;
            if drained && !hold.held {
                holds.remove(&self.cluster);
            }
            drained
        });
    }
}

impl ShardHolds {
    /// Count a transaction of `cluster` in flight on its moving shards;
    /// `None` (nothing counted) while they are held.
    pub fn enter(&self, cluster: &str) -> Option<InFlight> {
        let mut entered = false;
        self.state.send_if_modified(|holds| {
            let hold = holds.entry(cluster.to_owned()).or_default();
            if !hold.held {
                hold.inflight += 1;
                entered = true;
            }
            false
        });
        entered.then(|| InFlight {
            holds: self.clone(),
            cluster: cluster.to_owned(),
        })
    }

    /// Hold (or let go) the statements that touch `cluster`'s moving
    /// shards. Statements held re-route when let go.
    pub fn set_held(&self, cluster: &str, held: bool) {
        self.state.send_modify(|holds| {
            let hold = holds.entry(cluster.to_owned()).or_default();
            hold.held = held;
            if !held && hold.inflight == 0 {
                holds.remove(cluster);
            }
        });
    }

    /// The hold of `cluster` now.
    pub fn get(&self, cluster: &str) -> ShardHold {
        self.state
            .borrow()
            .get(cluster)
            .copied()
            .unwrap_or_default()
    }

    /// Wait at most `timeout` for no transaction to be in flight on
    /// `cluster`'s moving shards; whether none is.
    pub async fn drained(&self, cluster: &str, timeout: Duration) -> bool {
        let mut holds = self.state.subscribe();
        let drained = async {
            holds
                .wait_for(|h| h.get(cluster).is_none_or(|c| c.inflight == 0))
                .await
                .is_ok()
        };
        tokio::time::timeout(timeout, drained)
            .await
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hold_waits_for_the_transactions_counted_before_it() {
        let holds = ShardHolds::default();
        let first = holds.enter("c");
        assert!(first.is_some());
        assert_eq!(holds.get("c").inflight, 1);
        holds.set_held("c", true);
        assert!(holds.enter("c").is_none(), "held: nothing more is counted");
        assert!(
            holds.enter("other").is_some(),
            "other clusters are not held"
        );
        assert!(!holds.drained("c", Duration::from_millis(20)).await);
        drop(first);
        assert!(holds.drained("c", Duration::from_millis(20)).await);
        holds.set_held("c", false);
        assert_eq!(holds.get("c"), ShardHold::default());
        assert!(holds.enter("c").is_some());
    }

    #[tokio::test]
    async fn a_held_statement_waits_until_let_go_or_its_time_runs_out() {
        let gate = Gate::default();
        assert!(
            gate.wait_shards_released("c", Duration::from_millis(1))
                .await
        );
        gate.shards.set_held("c", true);
        assert!(
            !gate
                .wait_shards_released("c", Duration::from_millis(20))
                .await
        );
        let shards = gate.shards.clone();
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            shards.set_held("c", false);
        });
        assert!(gate.wait_shards_released("c", Duration::from_secs(5)).await);
        assert!(release.await.is_ok());
    }
}
