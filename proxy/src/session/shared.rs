//! What every session shares, as the handles of the layers below: the
//! running config and its pools, the switches that hold checkouts back,
//! the AST cache, the statement registry, what is counted, the catalog
//! reads asked for, two-phase commit's coordinator, and what sessions learn
//! of the shards (tables' columns, their text order). The listener and the
//! admin console reach it through `State`, which adds the client registry.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use router::cache::AstCache;
use router::config::Config;
use router::sharding::GroupId;

use super::statements::Registry;
use crate::catalog_epoch::CatalogEpoch;
use crate::execute::two_phase::log::DecisionLog;
use crate::execute::two_phase::Coordinator;
use crate::lock::lock;
use crate::metrics::Metrics;
use crate::pool::clusters::overlay::{Marker, Recorded};
use crate::pool::clusters::{ClusterPools, Clusters};
use crate::pool::gate::Gate;
use crate::pool::Pool;
use crate::pubsub::PubSub;
use crate::unique_ids::{SystemClock, UniqueIds};

/// Shared by all sessions.
#[derive(Debug)]
pub struct Shared {
    /// The running config and the pools built from it.
    pub clusters: Clusters,
    /// PAUSE, KILL, MAINTENANCE and shutdown.
    pub gate: Gate,
    /// Parsed statements and their routing summaries, shared by every
    /// client.
    pub cache: AstCache,
    pub statements: Registry,
    /// What the metrics endpoint counts as it happens.
    pub metrics: Metrics,
    /// Asks for the shards' catalog to be read (`schema.rs`) after DDL and
    /// RELOAD; sessions wait for the read before routing.
    pub catalog: CatalogEpoch,
    /// Two-phase commit's transaction ids, decision log and what it knows
    /// of the shards.
    pub two_phase: Coordinator,
    /// Per (database, table as written): the table's columns in order, as
    /// a shard's catalog lists them (INSERT and COPY without a column
    /// list). Forgotten on DDL through pgshard and on RELOAD.
    pub table_columns: Mutex<TableColumns>,
    /// Per database (cluster name): whether its shards order text in byte
    /// order (a C-like collation), learned on the first cross-shard merge
    /// that compares text.
    pub bytewise_text: Mutex<HashMap<String, bool>>,
    /// Round-robin position for statements any shard can run.
    pub any_shard: AtomicUsize,
    /// `pgdog.unique_id()`'s generator (node id and layout read at start).
    pub unique_ids: UniqueIds,
    /// LISTEN/NOTIFY in transaction mode: the relay's listening
    /// connections and who listens on what.
    pub pubsub: Arc<PubSub>,
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

impl Shared {
    /// What sessions share under `config`; must run inside a tokio runtime
    /// (pools spawn their maintenance tasks).
    pub fn new(config: Arc<Config>) -> Shared {
        let general = &config.general;
        let shared = Shared {
            clusters: Clusters::new(Arc::clone(&config)),
            gate: Gate::default(),
            cache: AstCache::new(general.query_cache_limit, general.query_cache_max_bytes),
            statements: Registry::default(),
            metrics: Metrics::default(),
            catalog: CatalogEpoch::default(),
            two_phase: Coordinator::new(match &general.two_phase_commit_wal_dir {
                Some(dir) => DecisionLog::open(
                    dir,
                    general.two_phase_commit_wal_segment_size,
                    general.two_phase_commit_wal_fsync,
                ),
                None => DecisionLog::off(),
            }),
            table_columns: Mutex::new(TableColumns::default()),
            bytewise_text: Mutex::new(HashMap::new()),
            any_shard: AtomicUsize::new(0),
            unique_ids: UniqueIds::new(
                general.unique_id_function,
                general.node_id.unwrap_or(0),
                general.unique_id_min,
                Arc::new(SystemClock),
            ),
            pubsub: Arc::new(PubSub::default()),
        };
        shared.apply_config(config);
        shared
    }

    pub fn config(&self) -> Arc<Config> {
        self.clusters.config()
    }

    /// Install a new config: pools whose settings and server are unchanged
    /// are kept (with their connections); the others are rebuilt. Clients
    /// keep the pools they hold until they next check a server out. When a
    /// cluster's sharding model changed, the AST cache is planned anew.
    pub fn apply_config(&self, config: Arc<Config>) {
        let (config, changed) = self.clusters.keep_sharding(config);
        if changed {
            self.cache.clear();
        }
        self.forget_table_columns();
        self.cache.resize(
            config.general.query_cache_limit,
            config.general.query_cache_max_bytes,
        );
        self.clusters.install(config, &self.metrics);
    }

    /// Install `next`, the running config with clusters' sharding models
    /// changed (what the catalog says: `schema.rs`), unless the config was
    /// replaced since `expected` was read. Cache entries are planned anew;
    /// sessions take the new models at their next checkout.
    pub fn replace_sharding(&self, expected: &Arc<Config>, next: Arc<Config>) -> bool {
        self.clusters
            .replace_sharding(expected, next, || self.cache.clear())
    }

    /// Mark logical shards `shards` of placement group `group` of
    /// `cluster` as moving by this process (`shards` empty: clear its
    /// marker; the moves the databases record unfinished stay marked):
    /// routes then report whether they touch them, and the cutover's hold
    /// (`gate.shards`) holds those that do. Refuses keyless statements on
    /// the group's `[[sharded_tables]]` when `refuse_keyless`. `false`
    /// when the cluster has no such group. (The mover sets it; tests use
    /// it to hold statements.)
    pub fn set_moving(
        &self,
        cluster: &str,
        group: GroupId,
        shards: &[usize],
        refuse_keyless: bool,
    ) -> bool {
        let config = self.config();
        let Some(running) = config.clusters.get(cluster) else {
            return false;
        };
        if running.sharding.group(group).is_none() {
            return false;
        }
        let marker = Marker {
            shards: shards.to_vec(),
            refuse_keyless,
        };
        self.clusters
            .update_overlay(|o| o.mark(cluster, group, marker));
        self.relay(cluster);
        true
    }

    /// The moves `cluster`'s databases record unfinished (the others:
    /// none) mark their shards moving; whether that changed a marker.
    pub fn set_recorded_moving(&self, cluster: &str, moves: Vec<Recorded>) -> bool {
        self.clusters
            .update_overlay(|o| o.set_recorded(cluster, moves));
        self.relay(cluster)
    }

    /// A read of `cluster`'s move records begun at `begun` succeeded: its
    /// keyless statements may be served until `until` (`freshness.rs`).
    pub fn read_fresh(&self, cluster: &str, begun: std::time::Instant, until: std::time::Instant) {
        if self.clusters.freshness.renew(cluster, begun, until) {
            self.clusters.update_overlay(|o| {
                o.set_lapsed(cluster, None);
            });
            self.relay(cluster);
        }
    }

    /// A read of `cluster`'s move records failed, as `why` says (the
    /// database and its error, no host or port): kept for the refusal of
    /// keyless statements, renewed in it when the cluster is refusing them
    /// and the reason changed.
    pub fn read_failed(&self, cluster: &str, why: &str) {
        if self.clusters.freshness.fail(cluster, why) {
            self.mark_lapsed(cluster, std::time::Instant::now());
        }
    }

    /// Before routing a statement of `cluster`: when its last read of the
    /// move records is too old (or, with `plain` tables, it was never
    /// read), mark every shard of its plain tables' groups moving (keyless
    /// statements refused, saying why) until a read succeeds.
    pub fn check_fresh(&self, cluster: &str, plain: bool) {
        let now = std::time::Instant::now();
        if self.clusters.freshness.lapsed_unmarked(cluster, now, plain)
            && self.clusters.freshness.lapse(cluster, now, plain)
        {
            let why = self.mark_lapsed(cluster, now);
            tracing::warn!(
                cluster,
                "the moves under way were not read lately ({why}): keyless statements on sharded tables are refused until they are"
            );
        }
    }

    /// Install `cluster`'s unread marker with the reason as of `now`; the
    /// reason.
    fn mark_lapsed(&self, cluster: &str, now: std::time::Instant) -> String {
        let bound = self.config().general.resharding_freshness_timeout();
        let why = self.clusters.freshness.why(cluster, now, bound);
        self.clusters.update_overlay(|o| {
            o.set_lapsed(cluster, Some(why.clone()));
        });
        self.relay(cluster);
        why
    }

    /// Install `cluster`'s sharding model with what the overlay knows laid
    /// over it (placements, markers); whether that changed it.
    pub fn relay(&self, cluster: &str) -> bool {
        loop {
            let config = self.config();
            let Some(running) = config.clusters.get(cluster) else {
                return false;
            };
            // Read after the config: whoever installs last has read the
            // overlay after every change installed before it.
            let overlay = self.clusters.overlay();
            let placed = overlay.apply(cluster, &running.sharding);
            let sharding = overlay.mark_over(cluster, placed.as_ref().unwrap_or(&running.sharding));
            if sharding == *running.sharding {
                return false;
            }
            let mut next = (*config).clone();
            if let Some(next) = next.clusters.get_mut(cluster) {
                next.sharding = Arc::new(sharding);
            }
            if self.replace_sharding(&config, Arc::new(next)) {
                return true;
            }
        }
    }

    /// Record where moves put logical shards of `cluster` (`change`) and
    /// place them so in the running config; whether that changed a
    /// placement.
    pub fn update_placement(
        &self,
        cluster: &str,
        change: impl FnOnce(&mut crate::pool::clusters::overlay::Overlay),
    ) -> bool {
        self.clusters.update_overlay(change);
        let overlay = self.clusters.overlay();
        loop {
            let config = self.config();
            let Some(running) = config.clusters.get(cluster) else {
                return false;
            };
            let Some(sharding) = overlay.apply(cluster, &running.sharding) else {
                return false;
            };
            let mut next = (*config).clone();
            if let Some(next) = next.clusters.get_mut(cluster) {
                next.sharding = Arc::new(sharding);
            }
            if self.replace_sharding(&config, Arc::new(next)) {
                return true;
            }
        }
    }

    /// The pools for `user` on `cluster`.
    pub fn pools(&self, cluster: &str, user: &str) -> Option<ClusterPools> {
        self.clusters.pools(cluster, user)
    }

    /// The pools of every database with more than one shard, by database
    /// and user (sorted).
    pub fn sharded_pools(&self) -> Vec<(String, Vec<(String, ClusterPools)>)> {
        self.clusters.sharded_pools()
    }

    /// Every pool, sorted by cluster, user and shard.
    pub fn all_pools(&self) -> Vec<Arc<Pool>> {
        self.clusters.all_pools()
    }

    /// The roles of every shard of `auto` servers, by cluster and shard.
    pub fn all_roles(&self) -> Vec<Arc<crate::pool::roles::ShardRoles>> {
        self.clusters.all_roles()
    }

    pub fn is_shutting_down(&self) -> bool {
        self.gate.is_shutting_down()
    }

    /// Forget every table's columns (the schema may have changed).
    pub fn forget_table_columns(&self) {
        let mut known = lock(&self.table_columns);
        known.columns.clear();
        known.generation += 1;
    }

    /// The schema changed (a CREATE, ALTER, DROP... went through pgshard):
    /// shared statements analysed before it may be stale, so they are
    /// retired, tables' columns are read again, and the catalog too.
    pub fn retire_on_ddl(&self) {
        self.statements.retire_all();
        self.forget_table_columns();
        self.catalog.request();
    }
}
