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
//!
//! A shard of `role = "auto"` servers has no written primary: which server
//! is the primary, and which are replicas, is what its roles say now
//! (`roles.rs`). With no primary (it is down, or none is out of recovery
//! yet), a write waits, round after round of the monitor's checks, up to
//! `checkout_timeout` for one, then fails with 57P03; it is never sent to
//! a server that is not the primary. A primary that cannot be reached has
//! the monitor check at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use router::config::{LoadBalancingStrategy, ReadWriteSplit};

use super::roles::{RoleNow, ShardRoles};
use super::{Pool, PoolError, Pooled};

/// One shard's pools for one user.
#[derive(Debug)]
pub struct ShardPools {
    /// The shard's pools: with written roles the primary's first, then the
    /// replicas'; with `auto` roles in the file's order.
    pools: Vec<Arc<Pool>>,
    /// The roles of an `auto` shard's servers, by index in `pools`.
    roles: Option<Arc<ShardRoles>>,
    strategy: LoadBalancingStrategy,
    split: ReadWriteSplit,
    /// Round-robin position.
    next: AtomicUsize,
}

impl ShardPools {
    /// A shard with written roles: `primary` and `replicas`.
    pub fn new(
        primary: Arc<Pool>,
        replicas: Vec<Arc<Pool>>,
        strategy: LoadBalancingStrategy,
        split: ReadWriteSplit,
    ) -> ShardPools {
        let mut pools = vec![primary];
        pools.extend(replicas);
        ShardPools::with_roles(pools, None, strategy, split)
    }

    /// A shard's pools (never empty): with written roles (`roles` none)
    /// the primary's first, else those of `auto` servers, whose roles are
    /// `roles`' by index.
    pub fn with_roles(
        pools: Vec<Arc<Pool>>,
        roles: Option<Arc<ShardRoles>>,
        strategy: LoadBalancingStrategy,
        split: ReadWriteSplit,
    ) -> ShardPools {
        ShardPools {
            pools,
            roles,
            strategy,
            split,
            next: AtomicUsize::new(0),
        }
    }

    /// The primary's pool, then the replicas' (for `auto` roles: the
    /// file's order).
    pub fn all(&self) -> impl Iterator<Item = &Arc<Pool>> {
        self.pools.iter()
    }

    /// The first pool (its settings are the shard's).
    pub fn first(&self) -> &Arc<Pool> {
        &self.pools[0]
    }

    /// The primary's pool now: none while an `auto` shard has no primary.
    pub fn primary(&self) -> Option<&Arc<Pool>> {
        match &self.roles {
            None => self.pools.first(),
            Some(roles) => roles.primary().and_then(|p| self.pools.get(p)),
        }
    }

    /// The pool to log in through when any server of the shard will do
    /// (login reports, catalog reads): the primary's, else a replica's,
    /// else the first.
    pub fn preferred(&self) -> &Arc<Pool> {
        self.primary()
            .or_else(|| self.replicas().next())
            .unwrap_or(&self.pools[0])
    }

    /// The roles of an `auto` shard.
    pub fn roles(&self) -> Option<&Arc<ShardRoles>> {
        self.roles.as_ref()
    }

    /// The shard has more than one server, so reads may go elsewhere than
    /// writes.
    pub fn has_replicas(&self) -> bool {
        self.pools.len() > 1
    }

    /// The pools serving reads now (replicas, banned or not).
    fn replicas(&self) -> impl Iterator<Item = &Arc<Pool>> {
        let written = self.roles.is_none();
        self.pools
            .iter()
            .enumerate()
            .filter(move |(i, pool)| {
                if written {
                    *i > 0
                } else {
                    pool.serves() == RoleNow::Replica
                }
            })
            .map(|(_, pool)| pool)
    }

    /// A server at once, without waiting or connecting: an idle connection
    /// of the primary's pool when the primary serves this checkout and has
    /// one ready (the common case, which needs no future and no list of
    /// candidates); `None` sends the caller to [`checkout`](Self::checkout).
    /// `now`: the caller's clock reading; see [`Pool::checkout_now`].
    pub fn checkout_now(&self, read: bool, now: std::time::Instant) -> Option<Pooled> {
        if read && self.has_replicas() {
            return None;
        }
        self.primary()?.checkout_now(now)
    }

    /// A server for a statement: a read (`read`) may go to a replica.
    pub async fn checkout(&self, read: bool) -> Result<Pooled, PoolError> {
        let candidates = self.candidates(read);
        if candidates.is_empty() {
            return self.checkout_primary().await;
        }
        let last = candidates.len().saturating_sub(1);
        for (i, pool) in candidates.iter().enumerate() {
            match pool.checkout().await {
                Ok(server) => return Ok(server),
                // The pool banned itself if it is a replica; try the next.
                Err(PoolError::Server(_)) if i < last => continue,
                Err(PoolError::Server(_)) if self.roles.is_some() => break,
                Err(err) => return Err(err),
            }
        }
        self.checkout_primary().await
    }

    /// The primary's server; for an `auto` shard, waiting up to
    /// `checkout_timeout` for a primary that can be reached.
    async fn checkout_primary(&self) -> Result<Pooled, PoolError> {
        let Some(roles) = &self.roles else {
            return self.pools[0].checkout().await;
        };
        let timeout = self.pools[0].settings.checkout_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut unreachable = false;
        loop {
            let round = roles.rounds();
            if let Some(pool) = self.primary() {
                match pool.checkout().await {
                    Err(PoolError::Server(_)) => {
                        unreachable = true;
                        roles.request_check();
                    }
                    done => return done,
                }
            }
            if !roles.wait_round_after(round, deadline).await
                || tokio::time::Instant::now() >= deadline
            {
                return Err(PoolError::NoPrimary {
                    waited: timeout,
                    unreachable,
                });
            }
        }
    }

    /// The pools to try, in order: the balancer's pick first, the other
    /// eligible ones after it, and the primary last when it is not one
    /// (none while an `auto` shard has no primary).
    fn candidates(&self, read: bool) -> Vec<Arc<Pool>> {
        let primary = self.primary();
        if !read || !self.has_replicas() {
            return primary.into_iter().cloned().collect();
        }
        let mut eligible: Vec<Arc<Pool>> = self
            .replicas()
            .filter(|pool| !pool.is_banned())
            .cloned()
            .collect();
        let any_banned = eligible.len() < self.replicas().count();
        let with_primary = match self.split {
            ReadWriteSplit::IncludePrimary => true,
            ReadWriteSplit::ExcludePrimary => eligible.is_empty(),
            ReadWriteSplit::IncludePrimaryIfReplicaBanned => any_banned,
        };
        let primary = primary.cloned();
        if with_primary {
            eligible.extend(primary.clone());
        }
        let first = self.pick(&eligible);
        eligible.rotate_left(first);
        if !with_primary {
            eligible.extend(primary);
        }
        eligible
    }

    /// The index in `eligible` the strategy picks (0 when it is empty).
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
        let all: Vec<_> = pools.all().cloned().collect();
        let shard = ShardPools::new(
            Arc::clone(&all[0]),
            all[1..].to_vec(),
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
        shard.pools[1].ban("test");
        assert!(shard.pools[1].is_banned());
        assert_eq!(ports(&shard.candidates(true)), [3, 1]);
        shard.pools[2].ban("test");
        // Every replica banned: reads go to the primary.
        assert_eq!(ports(&shard.candidates(true)), [1]);

        let (_state, shard) = one_shard(
            "load_balancing_strategy = \"round_robin\"\n\
             read_write_split = \"include_primary_if_replica_banned\"",
        );
        assert_eq!(ports(&shard.candidates(true)).len(), 3);
        assert_eq!(ports(&shard.candidates(true))[2], 1);
        shard.pools[2].ban("test");
        let mut firsts: Vec<u16> = (0..4).map(|_| ports(&shard.candidates(true))[0]).collect();
        firsts.sort_unstable();
        assert_eq!(firsts, [1, 1, 2, 2]);
    }

    #[tokio::test]
    async fn a_primary_is_never_banned_and_bans_expire() {
        let (_state, shard) = one_shard("ban_timeout = 50");
        shard.pools[0].ban("test");
        assert!(!shard.pools[0].is_banned());
        shard.pools[1].ban("test");
        assert!(shard.pools[1].is_banned());
        tokio::time::sleep(std::time::Duration::from_millis(80)).await;
        assert!(!shard.pools[1].is_banned());
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
