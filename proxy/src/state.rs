//! Process-wide state shared by every session: the current config snapshot,
//! the pools built from it, the client registry (cancel keys, SHOW CLIENTS),
//! the statement registry, and the PAUSE / shutdown switches.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

use router::config::{Config, Database, Role, User};
use tokio::sync::watch;

use crate::auth::scram::ScramSecret;
use crate::balancer::ShardPools;
use crate::conn::cancel::CancelTargets;
use crate::conn::server::ServerTarget;
use crate::interrupt::Interrupt;
use crate::lock::lock;
use crate::metrics::{Metrics, PoolLabels};
use crate::pool::{Pool, PoolId};
use crate::session::statements::Registry;

/// Client states for SHOW CLIENTS.
pub const CLIENT_IDLE: u8 = 0;
pub const CLIENT_ACTIVE: u8 = 1;
pub const CLIENT_WAITING: u8 = 2;

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

/// One connected client, as others may see it.
#[derive(Debug)]
pub struct ClientInfo {
    pub process_id: u32,
    pub secret: u32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub addr: Option<SocketAddr>,
    pub connected_at: SystemTime,
    pub state: AtomicU8,
    /// The server running this client's query right now, if any (see
    /// [`CancelTargets`]).
    pub cancel: CancelTargets,
    /// The client socket's file descriptor (SHOW FDS).
    pub fd: Option<i32>,
    /// KILL, and the session's wake-up when pgshard shuts down.
    pub interrupt: Interrupt,
}

/// The pools of one (cluster, user): one set per shard, by shard number.
pub type ClusterPools = Arc<Vec<ShardPools>>;

/// Shared by all sessions.
#[derive(Debug)]
pub struct State {
    config: RwLock<Arc<Config>>,
    pools: RwLock<HashMap<(String, String), ClusterPools>>,
    pub statements: Registry,
    clients: Mutex<HashMap<u32, Arc<ClientInfo>>>,
    /// PAUSE, KILL, MAINTENANCE: no new server checkouts for the held
    /// databases until they are let go.
    pub paused: watch::Sender<Paused>,
    /// SHUTDOWN or SIGTERM: stop accepting, drain, exit.
    pub shutdown: watch::Sender<bool>,
    pub started: Instant,
    next_server_id: Arc<AtomicU64>,
    /// The files RELOAD reads (none when the config came from memory).
    pub config_paths: Option<(PathBuf, PathBuf)>,
    /// Bumped by every config change, so sessions know to look pools up again.
    pub generation: AtomicU64,
    /// SCRAM secrets derived from configured passwords (4096 HMAC rounds
    /// each: derived once, not per login), by password.
    scram_secrets: Mutex<HashMap<String, Arc<ScramSecret>>>,
    mock_key: [u8; 32],
    /// Parsed statements and their routing summaries, shared by every client.
    pub cache: router::cache::AstCache,
    /// Round-robin position for statements any shard can run.
    pub any_shard: AtomicUsize,
    /// What the metrics endpoint counts as it happens.
    pub metrics: Metrics,
    /// Per database (cluster name): whether its shards order text in byte
    /// order (a C-like collation), learned on the first cross-shard merge
    /// that compares text.
    pub bytewise_text: Mutex<HashMap<String, bool>>,
    /// Per (database, table as written): the table's columns in order, as
    /// a shard's catalog lists them (INSERT and COPY without a column
    /// list). Forgotten on DDL through pgshard and on RELOAD.
    pub table_columns: Mutex<TableColumns>,
    /// Two-phase commit's transaction ids, decision log and what it knows
    /// of the shards.
    pub two_phase: crate::two_phase::Coordinator,
    /// Asks for the shards' catalog to be read (`schema.rs`) after DDL and
    /// RELOAD; sessions wait for the read before routing.
    pub catalog: crate::catalog_epoch::CatalogEpoch,
}

impl State {
    /// Forget every table's columns (the schema may have changed).
    pub fn forget_table_columns(&self) {
        if let Ok(mut known) = self.table_columns.lock() {
            known.columns.clear();
            known.generation += 1;
        }
    }
}

/// Tables' columns in order, by (database, table as written).
#[derive(Debug, Default)]
pub struct TableColumns {
    pub columns: HashMap<(String, String), Arc<Vec<String>>>,
    /// Bumped by every forget: columns read from a catalog before it are
    /// not kept (the DDL may have committed after they were read).
    pub generation: u64,
}

impl TableColumns {
    /// Keep `columns` of `key`, read when the generation was `generation`.
    pub fn keep(&mut self, generation: u64, key: (String, String), columns: Arc<Vec<String>>) {
        if generation == self.generation {
            self.columns.insert(key, columns);
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    match lock.read() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    match lock.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl State {
    /// State for `config`; must run inside a tokio runtime (pools spawn
    /// their maintenance tasks).
    pub fn new(config: Arc<Config>, config_paths: Option<(PathBuf, PathBuf)>) -> Arc<State> {
        let state = Arc::new(State {
            config: RwLock::new(Arc::clone(&config)),
            pools: RwLock::new(HashMap::new()),
            statements: Registry::default(),
            clients: Mutex::new(HashMap::new()),
            paused: watch::Sender::new(Paused::default()),
            shutdown: watch::Sender::new(false),
            started: Instant::now(),
            next_server_id: Arc::new(AtomicU64::new(1)),
            config_paths,
            generation: AtomicU64::new(0),
            scram_secrets: Mutex::new(HashMap::new()),
            mock_key: rand::random(),
            cache: router::cache::AstCache::new(
                config.general.query_cache_limit,
                config.general.query_cache_max_bytes,
            ),
            any_shard: AtomicUsize::new(0),
            bytewise_text: Mutex::new(HashMap::new()),
            table_columns: Mutex::new(TableColumns::default()),
            two_phase: crate::two_phase::Coordinator::new(
                crate::two_phase::log::DecisionLog::open(
                    &config.general.two_phase_commit_wal_dir,
                    config.general.two_phase_commit_wal_segment_size,
                ),
            ),
            metrics: Metrics::default(),
            catalog: crate::catalog_epoch::CatalogEpoch::default(),
        });
        state.apply_config(config);
        state
    }

    pub fn config(&self) -> Arc<Config> {
        Arc::clone(&read(&self.config))
    }

    /// Install a new config: pools whose settings and server are unchanged
    /// are kept (with their connections); the others are rebuilt. Clients
    /// keep the pools they hold until they next check a server out.
    pub fn apply_config(&self, config: Arc<Config>) {
        let config = self.keep_sharding(config);
        self.forget_table_columns();
        self.cache.resize(
            config.general.query_cache_limit,
            config.general.query_cache_max_bytes,
        );
        let mut pools = write(&self.pools);
        let mut next = HashMap::new();
        for user in &config.users {
            let Some(cluster) = config.clusters.get(&user.database) else {
                continue;
            };
            let key = (user.database.clone(), user.name.clone());
            let old = pools.get(&key);
            let shards: Vec<ShardPools> = cluster
                .shards
                .iter()
                .enumerate()
                .map(|(i, db)| {
                    let old = old.and_then(|o| o.get(i));
                    let primary = self.pool(&config, user, (i, db), old.map(|o| &o.primary));
                    let replicas = cluster.replicas.get(i).map_or(&[][..], Vec::as_slice);
                    let replicas = replicas
                        .iter()
                        .enumerate()
                        .map(|(j, db)| {
                            let old = old.and_then(|o| o.replicas.get(j));
                            self.pool(&config, user, (i, db), old)
                        })
                        .collect();
                    let general = &config.general;
                    ShardPools::new(
                        primary,
                        replicas,
                        general.load_balancing_strategy,
                        general.read_write_split,
                    )
                })
                .collect();
            next.insert(key, Arc::new(shards));
        }
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
    }

    /// Install `next`, the running config with clusters' sharding models
    /// changed (what the catalog says: `schema.rs`), unless the config was
    /// replaced since `expected` was read. Cache entries are planned anew;
    /// sessions take the new models at their next checkout.
    pub fn replace_sharding(&self, expected: &Arc<Config>, next: Arc<Config>) -> bool {
        let mut config = write(&self.config);
        if !Arc::ptr_eq(&config, expected) {
            return false;
        }
        *config = next;
        self.cache.clear();
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    /// The pool for `user` on database `db` of shard `shard`: `old` when
    /// its settings and server are unchanged, else a new one (`old`'s idle
    /// connections closed).
    fn pool(
        &self,
        config: &Config,
        user: &User,
        (shard, db): (usize, &Database),
        old: Option<&Arc<Pool>>,
    ) -> Arc<Pool> {
        let settings = config.pool_settings(user, db);
        let target = ServerTarget {
            host: db.host.clone(),
            port: db.port,
            database: db.server_database().to_owned(),
            user: settings.server_user.clone(),
            password: settings.server_password.clone(),
        };
        match old {
            Some(pool)
                if pool.settings == settings && pool.target == target && pool.role == db.role =>
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
            role: if db.role == Role::Replica {
                Role::Replica
            } else {
                Role::Primary
            },
        };
        let labels = PoolLabels::new(&id, &target);
        let histograms = self.metrics.pool_histograms(&labels);
        Pool::new(
            id,
            target,
            settings,
            Arc::clone(&self.next_server_id),
            histograms,
        )
    }

    /// `config` with each cluster's sharding model shared with the running
    /// config where it is unchanged: cache entries keep their routing plans
    /// by model (see `router::cache::Entry::route`). When a model changed,
    /// the cache is cleared so that entries are planned against the new one.
    fn keep_sharding(&self, config: Arc<Config>) -> Arc<Config> {
        let old = self.config();
        let mut changed = false;
        let mut kept = (*config).clone();
        for (name, cluster) in kept.clusters.iter_mut() {
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
        if changed {
            self.cache.clear();
        }
        Arc::new(kept)
    }

    /// A SCRAM secret for a user that does not exist: its salt is the same
    /// on every attempt (derived from the name and a per-process key, as
    /// Postgres does) so that salts do not reveal which users exist; the
    /// keys are random, so no proof ever matches.
    pub fn mock_scram_secret(&self, user: &str) -> ScramSecret {
        use sha2::Digest;
        let digest = sha2::Sha256::new()
            .chain_update(self.mock_key)
            .chain_update(user.as_bytes())
            .finalize();
        ScramSecret {
            iterations: crate::auth::scram::DEFAULT_ITERATIONS,
            salt: digest[..16].to_vec(),
            stored_key: rand::random(),
            server_key: rand::random(),
        }
    }

    /// The SCRAM secret for a configured password.
    pub fn scram_secret(&self, password: &str) -> Arc<ScramSecret> {
        if let Some(secret) = lock(&self.scram_secrets).get(password) {
            return Arc::clone(secret);
        }
        let secret = Arc::new(ScramSecret::generate(password));
        lock(&self.scram_secrets).insert(password.to_owned(), Arc::clone(&secret));
        secret
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
        let mut by_database: std::collections::BTreeMap<String, Vec<(String, ClusterPools)>> =
            Default::default();
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

    /// Register a client under a fresh cancel key.
    pub fn register_client(&self, mut info: ClientInfo) -> Arc<ClientInfo> {
        let mut clients = lock(&self.clients);
        loop {
            let process_id = rand::random::<u32>() & 0x7fff_ffff;
            if process_id != 0 && !clients.contains_key(&process_id) {
                info.process_id = process_id;
                info.secret = rand::random::<u32>();
                let info = Arc::new(info);
                clients.insert(process_id, Arc::clone(&info));
                return info;
            }
        }
    }

    pub fn unregister_client(&self, process_id: u32) {
        lock(&self.clients).remove(&process_id);
    }

    pub fn client(&self, process_id: u32) -> Option<Arc<ClientInfo>> {
        lock(&self.clients).get(&process_id).cloned()
    }

    pub fn clients(&self) -> Vec<Arc<ClientInfo>> {
        let mut all: Vec<_> = lock(&self.clients).values().cloned().collect();
        all.sort_by_key(|c| c.connected_at);
        all
    }

    pub fn client_count(&self) -> usize {
        lock(&self.clients).len()
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

    /// Start shutting down: no new clients, and sessions without a server
    /// end (each is woken to see it).
    pub fn shut_down(&self) {
        self.shutdown.send_replace(true);
        for client in self.clients() {
            client.interrupt.wake();
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Mark a client's state for SHOW CLIENTS.
    pub fn set_client_state(info: &ClientInfo, state: u8) {
        info.state.store(state, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(tables: &str) -> Arc<Config> {
        let pgdog = format!(
            "[[databases]]\nname = \"db\"\nhost = \"127.0.0.1\"\nshard = 0\n\
             [[databases]]\nname = \"db\"\nhost = \"127.0.0.1\"\nshard = 1\n{tables}"
        );
        let users = "[[users]]\nname = \"u\"\ndatabase = \"db\"\npassword = \"p\"\n";
        match Config::from_toml(&pgdog, users) {
            Ok(config) => Arc::new(config),
            Err(err) => panic!("test config: {err}"),
        }
    }

    fn sharding(state: &State) -> Arc<router::sharding::Sharding> {
        match state.config().clusters.get("db") {
            Some(cluster) => Arc::clone(&cluster.sharding),
            None => panic!("no cluster db"),
        }
    }

    #[tokio::test]
    async fn reloads_keep_unchanged_sharding_and_clear_the_cache_on_changes() {
        let keyed = "[[sharded_tables]]\ndatabase = \"db\"\nname = \"t\"\ncolumn = \"id\"\n";
        let state = State::new(config(keyed), None);
        let before = sharding(&state);
        assert!(state
            .cache
            .lookup(
                "SELECT * FROM t WHERE id = $1",
                router::sharding::ParserEngine::ZeroCopy,
            )
            .is_ok());
        // The same model in a new config: the same Arc, the cache kept.
        state.apply_config(config(keyed));
        assert!(Arc::ptr_eq(&before, &sharding(&state)));
        assert_eq!(state.cache.stats().entries, 1);
        // Another model: entries would route with plans for the old one.
        state.apply_config(config(&keyed.replace("\"id\"", "\"other\"")));
        assert!(!Arc::ptr_eq(&before, &sharding(&state)));
        assert_eq!(state.cache.stats().entries, 0);
    }
}
