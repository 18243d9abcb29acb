//! The databases of one shard for one user: its primary's pool and its
//! replicas', and which of them serves a checkout. Writes, transactions and
//! anything not known to be a read go to the primary. A read goes to a
//! replica that is not banned, picked by `load_balancing_strategy`, or to the
//! primary as well when `read_write_split` says so (`include_primary`, or
//! `include_primary_if_replica_banned` while one is banned). When every
//! replica is banned, reads go to the primary whatever the split. A
//! candidate whose server cannot be reached (it is banned then) passes the
//! checkout to the next, the primary last, so a replica going down costs a
//! client only the statements it had in flight there.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use router::config::{LoadBalancingStrategy, ReadWriteSplit};

use super::{Pool, PoolError, Pooled};

/// One shard's pools for one user.
#[derive(Debug)]
pub struct ShardPools {
    pub primary: Arc<Pool>,
    pub replicas: Vec<Arc<Pool>>,
    strategy: LoadBalancingStrategy,
    split: ReadWriteSplit,
    /// Round-robin position.
    next: AtomicUsize,
}

impl ShardPools {
    pub fn new(
        primary: Arc<Pool>,
        replicas: Vec<Arc<Pool>>,
        strategy: LoadBalancingStrategy,
        split: ReadWriteSplit,
    ) -> ShardPools {
        ShardPools {
            primary,
            replicas,
            strategy,
            split,
            next: AtomicUsize::new(0),
        }
    }

    /// The primary's pool, then the replicas'.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Pool>> {
        std::iter::once(&self.primary).chain(&self.replicas)
    }

    /// A server for a statement: a read (`read`) may go to a replica.
    /// A server at once, without waiting or connecting: an idle connection
    /// of the primary's pool when the primary serves this checkout and has
    /// one ready (the common case, which needs no future and no list of
    /// candidates); `None` sends the caller to [`checkout`](Self::checkout).
    /// An idle primary connection now (`now`: the caller's clock reading),
    /// when the read may not go to a replica; see [`Pool::checkout_now`].
    pub fn checkout_now(&self, read: bool, now: std::time::Instant) -> Option<Pooled> {
        if read && !self.replicas.is_empty() {
            return None;
        }
        self.primary.checkout_now(now)
    }

    pub async fn checkout(&self, read: bool) -> Result<Pooled, PoolError> {
        let candidates = self.candidates(read);
        let last = candidates.len().saturating_sub(1);
        for (i, pool) in candidates.iter().enumerate() {
            match pool.checkout().await {
                Ok(server) => return Ok(server),
                // The pool banned itself if it is a replica; try the next.
                Err(PoolError::Server(_)) if i < last => continue,
                Err(err) => return Err(err),
            }
        }
        self.primary.checkout().await
    }

    /// The pools to try, in order: the balancer's pick first, the other
    /// eligible ones after it, and the primary last when it is not one.
    fn candidates(&self, read: bool) -> Vec<Arc<Pool>> {
        if !read || self.replicas.is_empty() {
            return vec![Arc::clone(&self.primary)];
        }
        let mut eligible: Vec<Arc<Pool>> = self
            .replicas
            .iter()
            .filter(|pool| !pool.is_banned())
            .cloned()
            .collect();
        let any_banned = eligible.len() < self.replicas.len();
        let with_primary = match self.split {
            ReadWriteSplit::IncludePrimary => true,
            ReadWriteSplit::ExcludePrimary => eligible.is_empty(),
            ReadWriteSplit::IncludePrimaryIfReplicaBanned => any_banned,
        };
        if with_primary {
            eligible.push(Arc::clone(&self.primary));
        }
        let first = self.pick(&eligible);
        eligible.rotate_left(first);
        if !with_primary {
            eligible.push(Arc::clone(&self.primary));
        }
        eligible
    }

    /// The index in `eligible` (never empty) the strategy picks.
    fn pick(&self, eligible: &[Arc<Pool>]) -> usize {
        let n = eligible.len().max(1);
        match self.strategy {
            LoadBalancingStrategy::Random => rand::random::<u32>() as usize % n,
            LoadBalancingStrategy::RoundRobin => self.next.fetch_add(1, Ordering::Relaxed) % n,
            LoadBalancingStrategy::LeastActiveConnections => eligible
                .iter()
                .enumerate()
                .min_by_key(|(_, pool)| pool.active() + pool.stats.waiting.load(Ordering::Relaxed))
                .map_or(0, |(i, _)| i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::State;
    use router::config::Config;

    /// One shard: a primary on port 1, replicas on ports 2 and 3 (nothing
    /// listens: no test here connects).
    fn one_shard(general: &str) -> (Arc<State>, ShardPools) {
        let mut pgdog = format!("[general]\n{general}\n");
        for (port, role) in [(1, "primary"), (2, "replica"), (3, "replica")] {
            pgdog.push_str(&format!(
                "[[databases]]\nname = \"db\"\nhost = \"127.0.0.1\"\nport = {port}\nrole = \"{role}\"\n"
            ));
        }
        let users = "[[users]]\nname = \"u\"\ndatabase = \"db\"\npassword = \"p\"\n";
        let config = match Config::from_toml(&pgdog, users) {
            Ok(config) => Arc::new(config),
            Err(err) => panic!("{err}"),
        };
        let state = State::new(config, None);
        let Some(pools) = state.pools("db", "u") else {
            panic!("no pools");
        };
        let pools = &pools[0];
        let shard = ShardPools::new(
            Arc::clone(&pools.primary),
            pools.replicas.clone(),
            pools.strategy,
            pools.split,
        );
        (state, shard)
    }

    fn ports(pools: &[Arc<Pool>]) -> Vec<u16> {
        pools.iter().map(|p| p.target.port).collect()
    }

    #[tokio::test]
    async fn writes_go_to_the_primary_reads_round_robin() {
        let (_state, shard) = one_shard("load_balancing_strategy = \"round_robin\"");
        assert_eq!(ports(&shard.candidates(false)), [1]);
        let firsts: Vec<u16> = (0..6).map(|_| ports(&shard.candidates(true))[0]).collect();
        assert_eq!(firsts, [2, 3, 1, 2, 3, 1]);
        assert_eq!(ports(&shard.candidates(true)), [2, 3, 1]);
    }

    #[tokio::test]
    async fn the_split_decides_about_the_primary() {
        let (_state, shard) = one_shard(
            "load_balancing_strategy = \"round_robin\"\nread_write_split = \"exclude_primary\"",
        );
        assert_eq!(ports(&shard.candidates(true)), [2, 3, 1]);
        assert_eq!(ports(&shard.candidates(true)), [3, 2, 1]);
        shard.replicas[0].ban("test");
        assert!(shard.replicas[0].is_banned());
        assert_eq!(ports(&shard.candidates(true)), [3, 1]);
        shard.replicas[1].ban("test");
        // Every replica banned: reads go to the primary.
        assert_eq!(ports(&shard.candidates(true)), [1]);

        let (_state, shard) = one_shard(
            "load_balancing_strategy = \"round_robin\"\n\
             read_write_split = \"include_primary_if_replica_banned\"",
        );
        assert_eq!(ports(&shard.candidates(true)).len(), 3);
        assert_eq!(ports(&shard.candidates(true))[2], 1);
        shard.replicas[1].ban("test");
        let mut firsts: Vec<u16> = (0..4).map(|_| ports(&shard.candidates(true))[0]).collect();
        firsts.sort_unstable();
        assert_eq!(firsts, [1, 1, 2, 2]);
    }

    #[tokio::test]
    async fn a_primary_is_never_banned_and_bans_expire() {
        let (_state, shard) = one_shard("ban_timeout = 50");
        shard.primary.ban("test");
        assert!(!shard.primary.is_banned());
        shard.replicas[0].ban("test");
        assert!(shard.replicas[0].is_banned());
        tokio::time::sleep(std::time::Duration::from_millis(80)).await;
        assert!(!shard.replicas[0].is_banned());
    }

    #[tokio::test]
    async fn least_active_connections_and_random_pick_among_the_eligible() {
        let (_state, shard) = one_shard("load_balancing_strategy = \"least_active_connections\"");
        // Nothing is checked out anywhere: the first eligible one.
        assert_eq!(ports(&shard.candidates(true)), [2, 3, 1]);
        let (_state, shard) = one_shard("read_write_split = \"exclude_primary\"");
        for _ in 0..20 {
            let candidates = ports(&shard.candidates(true));
            assert!(candidates[0] == 2 || candidates[0] == 3, "{candidates:?}");
            assert_eq!(candidates[2], 1);
        }
    }
}
