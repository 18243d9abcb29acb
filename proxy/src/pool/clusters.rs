//! The running config and the pools built from it, by (cluster, user):
//! installed whole by RELOAD or SIGHUP (pools whose settings and server are
//! unchanged are kept with their connections), and a generation, bumped by
//! every change, that sessions compare to know when to look again.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use router::config::{Cluster, Config, Database, PoolSettings, Role, User};

pub mod freshness;
pub mod keyless;
pub mod overlay;
mod passthrough;

pub use passthrough::{passthrough_user, PassthroughError};

use self::overlay::Overlay;

use super::balancer::ShardPools;
use super::roles::ShardRoles;
use super::{Pool, PoolId, Seat};
use crate::conn::server::ServerTarget;
use crate::lock::lock;
use crate::metrics::Metrics;

/// The pools of one (cluster, user): one set per shard, by shard number.
pub type ClusterPools = Arc<Vec<ShardPools>>;

/// The running config and its pools.
#[derive(Debug)]
pub struct Clusters {
    config: RwLock<Arc<Config>>,
    pools: RwLock<HashMap<(String, String), ClusterPools>>,
    /// Bumped by every config change, so sessions know to look pools up
    /// again.
    generation: AtomicU64,
    next_server_id: Arc<AtomicU64>,
    /// Users logged in through `passthrough_auth`, by (cluster, user): the
    /// entries their pools are built from, with the password the server
    /// last accepted (`passthrough.rs`). Locked after `pools`.
    passthrough: Mutex<HashMap<(String, String), User>>,
    /// The roles of each shard of `auto` servers, by (cluster, shard),
    /// kept across reloads that leave its servers and checks alone.
    roles: Mutex<HashMap<(String, usize), Arc<ShardRoles>>>,
    /// Where shard moves put logical shards: laid over every config
    /// installed (`overlay.rs`).
    overlay: Mutex<Overlay>,
    /// Until when this instance may serve keyless statements on each
    /// cluster's plain tables (`freshness.rs`).
    pub freshness: freshness::Freshness,
    /// The sessions that may run statements routed before a move's marker
    /// was installed, by cluster and routing generation (`keyless.rs`).
    pub keyless: keyless::KeylessFlights,
}

impl Clusters {
    /// No pools yet, `config` running: [`install`](Self::install) builds
    /// them.
    pub fn new(config: Arc<Config>) -> Clusters {
        Clusters {
            config: RwLock::new(config),
            pools: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
            next_server_id: Arc::new(AtomicU64::new(1)),
            passthrough: Mutex::new(HashMap::new()),
            roles: Mutex::new(HashMap::new()),
            overlay: Mutex::new(Overlay::default()),
            freshness: freshness::Freshness::default(),
            keyless: keyless::KeylessFlights::default(),
        }
    }

    pub fn config(&self) -> Arc<Config> {
        Arc::clone(&read(&self.config))
    }

    /// Bumped by every change of the config or the pools.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Install `config` (as [`keep_sharding`](Self::keep_sharding) made
    /// it): pools whose settings and server are unchanged are kept (with
    /// their connections); the others are rebuilt (their histograms
    /// registered with `metrics`). Clients keep the pools they hold until
    /// they next check a server out.
    pub fn install(&self, config: Arc<Config>, metrics: &Metrics) {
        let mut pools = write(&self.pools);
        let started = self.install_roles(&config);
        let mut passthrough = lock(&self.passthrough);
        // Passthrough users stay while passthrough is on, their cluster
        // exists and users.toml does not list them now.
        passthrough.retain(|(cluster, user), _| {
            config.general.passthrough_auth.is_enabled()
                && config.clusters.contains_key(cluster)
                && config.user(user, cluster).is_none()
        });
        let mut next = HashMap::new();
        for user in config.users.iter().chain(passthrough.values()) {
            let Some(cluster) = config.clusters.get(&user.database) else {
                continue;
            };
            let key = (user.database.clone(), user.name.clone());
            let shards = self.cluster_pools(&config, user, cluster, pools.get(&key), metrics);
            next.insert(key, shards);
        }
        drop(passthrough);
        for (key, old) in pools.iter() {
            if !next.contains_key(key) {
                old.iter()
                    .flat_map(ShardPools::all)
                    .for_each(|p| p.close_idle());
            }
        }
        *pools = next;
        *write(&self.config) = config;
        self.generation.fetch_add(1, Ordering::Release);
        // After the pools: the monitor logs in through them.
        started.iter().for_each(super::monitor::start);
    }

    /// The roles of `config`'s shards of `auto` servers: the running ones
    /// where the servers and checks are the same, else new ones (returned,
    /// for their monitors to start once the pools are made).
    fn install_roles(&self, config: &Config) -> Vec<Arc<ShardRoles>> {
        let mut roles = lock(&self.roles);
        let mut next = HashMap::new();
        let mut started = Vec::new();
        let checks = config.general.lsn_checks();
        for (name, cluster) in &config.clusters {
            for (shard, primary) in cluster.shards.iter().enumerate() {
                if primary.role != Role::Auto {
                    continue;
                }
                let replicas = cluster.replicas.get(shard).map_or(&[][..], Vec::as_slice);
                let servers: Vec<(String, u16)> = std::iter::once(primary)
                    .chain(replicas)
                    .map(|db| (db.host.clone(), db.port))
                    .collect();
                let key = (name.clone(), shard);
                let kept = roles.get(&key).filter(|r| r.same_as(&servers, checks));
                let shard_roles = match kept {
                    Some(kept) => Arc::clone(kept),
                    None => {
                        let made = ShardRoles::new(name, shard, &servers, checks);
                        started.push(Arc::clone(&made));
                        made
                    }
                };
                next.insert(key, shard_roles);
            }
        }
        *roles = next;
        started
    }

    /// The roles of every shard of `auto` servers, by cluster and shard.
    pub fn all_roles(&self) -> Vec<Arc<ShardRoles>> {
        let mut all: Vec<_> = lock(&self.roles).values().cloned().collect();
        all.sort_by(|a, b| (&a.cluster, a.shard).cmp(&(&b.cluster, b.shard)));
        all
    }

    /// Install `next`, the running config with clusters' sharding models
    /// changed (what the catalog says: `schema.rs`), unless the config was
    /// replaced since `expected` was read; whether it was installed.
    /// `before` runs once it is, before the generation says so (the AST
    /// cache is cleared there, so no session plans against the old model
    /// after it).
    pub fn replace_sharding(
        &self,
        expected: &Arc<Config>,
        next: Arc<Config>,
        before: impl FnOnce(),
    ) -> bool {
        let mut config = write(&self.config);
        if !Arc::ptr_eq(&config, expected) {
            return false;
        }
        *config = next;
        before();
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    /// The pools of `user` on `cluster`, one set per shard: `old`'s where
    /// their settings and server are unchanged.
    fn cluster_pools(
        &self,
        config: &Config,
        user: &User,
        cluster: &Cluster,
        old: Option<&ClusterPools>,
        metrics: &Metrics,
    ) -> ClusterPools {
        let shards: Vec<ShardPools> = cluster
            .shards
            .iter()
            .enumerate()
            .map(|(i, db)| {
                let old: Vec<&Arc<Pool>> = old
                    .and_then(|o| o.get(i))
                    .map(|o| o.all().collect())
                    .unwrap_or_default();
                let roles = lock(&self.roles).get(&(cluster.name.clone(), i)).cloned();
                let replicas = cluster.replicas.get(i).map_or(&[][..], Vec::as_slice);
                let pools: Vec<Arc<Pool>> = std::iter::once(db)
                    .chain(replicas)
                    .enumerate()
                    .map(|(j, db)| {
                        let seat = roles.as_ref().map(|roles| Seat {
                            roles: Arc::clone(roles),
                            index: j,
                        });
                        self.pool(config, user, (i, db, seat), old.get(j).copied(), metrics)
                    })
                    .collect();
                let general = &config.general;
                let (strategy, split) = (general.load_balancing_strategy, general.read_write_split);
                ShardPools::with_roles(pools, roles, strategy, split)
            })
            .collect();
        Arc::new(shards)
    }

    /// The pool for `user` on database `db` of shard `shard`: `old` when
    /// its settings and server are unchanged, else a new one (`old`'s idle
    /// connections closed).
    fn pool(
        &self,
        config: &Config,
        user: &User,
        (shard, db, seat): (usize, &Database, Option<Seat>),
        old: Option<&Arc<Pool>>,
        metrics: &Metrics,
    ) -> Arc<Pool> {
        let settings = config.pool_settings(user, db);
        let target = target(db, &settings);
        match old {
            Some(pool)
                if pool.settings == settings
                    && pool.target == target
                    && pool.role == db.role
                    && pool.same_seat(seat.as_ref()) =>
            {
                return Arc::clone(pool);
            }
            Some(pool) => pool.close_idle(),
            None => {}
        }
        let id = PoolId {
            cluster: user.database.clone(),
            user: user.name.clone(),
            shard,
            role: db.role,
            seat,
        };
        let next_id = Arc::clone(&self.next_server_id);
        Pool::new(id, target, settings, next_id, metrics)
    }

    /// `config` with each cluster's sharding model shared with the running
    /// config's where it is unchanged (the AST cache's entries keep their
    /// routing plans by model: `router::cache::Entry::route`), and whether
    /// one changed (the cache must then be planned anew).
    pub fn keep_sharding(&self, config: Arc<Config>) -> (Arc<Config>, bool) {
        let old = self.config();
        let mut changed = false;
        let mut kept = (*config).clone();
        let overlay = self.overlay();
        for (name, cluster) in kept.clusters.iter_mut() {
            // Moved shards stay where their moves put them; a move under
            // way keeps its marker.
            let before = old.clusters.get(name).map(|b| &*b.sharding);
            overlay::lay_over(&overlay, name, before, &mut cluster.sharding);
            // The catalog read stays until it is read again (RELOAD asks).
            if let Some(known) = old.clusters.get(name).map(|b| &b.sharding.catalog) {
                Arc::make_mut(&mut cluster.sharding)
                    .catalog
                    .clone_from(known);
            }
            match old.clusters.get(name) {
                Some(before) if before.sharding == cluster.sharding => {
                    cluster.sharding = Arc::clone(&before.sharding);
                }
                Some(_) => changed = true,
                None => {}
            }
        }
        (Arc::new(kept), changed)
    }

    /// What is known of where moves put logical shards.
    pub fn overlay(&self) -> Overlay {
        lock(&self.overlay).clone()
    }

    /// [`Overlay::epoch`] now.
    pub fn overlay_epoch(&self) -> u64 {
        lock(&self.overlay).epoch()
    }

    /// Change what is known of where moves put logical shards (the
    /// running config is not changed: see `Shared::place`).
    pub fn update_overlay(&self, change: impl FnOnce(&mut Overlay)) {
        change(&mut lock(&self.overlay));
    }

    /// The pools for `user` on `cluster`.
    pub fn pools(&self, cluster: &str, user: &str) -> Option<ClusterPools> {
        read(&self.pools)
            .get(&(cluster.to_owned(), user.to_owned()))
            .cloned()
    }

    /// The pools of every database with more than one shard, by database
    /// and user (sorted).
    pub fn sharded_pools(&self) -> Vec<(String, Vec<(String, ClusterPools)>)> {
        let pools = read(&self.pools);
        let mut by_database: BTreeMap<String, Vec<(String, ClusterPools)>> = BTreeMap::new();
        for ((database, user), shards) in pools.iter() {
            if shards.len() > 1 {
                let users = by_database.entry(database.clone()).or_default();
                users.push((user.clone(), Arc::clone(shards)));
            }
        }
        let mut out: Vec<_> = by_database.into_iter().collect();
        for (_, users) in &mut out {
            users.sort_by(|a, b| a.0.cmp(&b.0));
        }
        out
    }

    /// Every pool, sorted by cluster, user and shard.
    pub fn all_pools(&self) -> Vec<Arc<Pool>> {
        let pools = read(&self.pools);
        let mut keys: Vec<_> = pools.keys().collect();
        keys.sort();
        keys.into_iter()
            .flat_map(|k| pools[k].iter().flat_map(ShardPools::all).cloned())
            .collect()
    }
}

/// Where and as whom a pool with `settings` logs in on `db`.
fn target(db: &Database, settings: &PoolSettings) -> ServerTarget {
    ServerTarget {
        host: db.host.clone(),
        port: db.port,
        database: db.server_database().to_owned(),
        user: settings.server_user.clone(),
        password: settings.server_password.clone(),
        replication: false,
    }
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    match lock.read() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    match lock.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
