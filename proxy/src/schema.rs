//! What the shards' catalog says, for routing, read from shard 0's primary
//! of every sharded cluster:
//! - what stands behind names (`router::catalog`): views and their queries,
//!   functions and what their bodies reach, triggers, sequences;
//! - on clusters with column-only `[[sharded_tables]]` entries and
//!   `unlisted_tables = "omnisharded"`: which unlisted tables have none of
//!   those entries' columns, and are therefore omnisharded
//!   (`router::sharding::KeylessTables`), as PgDog decides with its schema
//!   cache. Until a table shows in the catalog it is sharded by a key
//!   pgshard does not know: writes without a key are refused.
//!
//! Read at start, when DDL comes back through pgshard (sessions wait for
//! that read before routing their next statement: `catalog_epoch.rs`), again
//! a little later (DDL inside a transaction shows in the catalog only once
//! it commits), after RELOAD, and every minute; installed as a new config
//! snapshot when it changed, so sessions route by it from their next
//! statement and the AST cache is planned anew.

use std::sync::Arc;
use std::time::Duration;

use router::config::Config;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::conn::server::ServerConn;
use crate::execute::catalog;
use crate::protocol::backend::TransactionStatus;
use crate::state::State;

/// How long after DDL the catalog is read again (for DDL inside a
/// transaction that commits afterwards).
const AFTER_DDL: Duration = Duration::from_secs(2);

/// How often the catalog is read when nothing asks sooner (DDL made
/// behind pgshard's back).
const EVERY: Duration = Duration::from_secs(60);

/// Keep the clusters' catalogs current until the process ends.
pub async fn run(state: Arc<State>) {
    let mut again: Option<Instant> = None;
    let mut readers = Readers::default();
    loop {
        let request = state.catalog.starting();
        refresh(&state, &mut readers).await;
        state.catalog.answered(request);
        let next = again.unwrap_or_else(|| Instant::now() + EVERY);
        tokio::select! {
            () = state.catalog.wake.notified() => {
                again = Some(Instant::now() + AFTER_DDL);
                // DDL statements sent together make one read.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            () = tokio::time::sleep_until(next) => again = None,
        }
    }
}

/// The connection each cluster's catalog is read through: one of the
/// reader's own to shard 0's primary, outside the pools, so that reading
/// after every schema change moves no pooled connection (clients find the
/// servers they prepared statements on where they left them).
#[derive(Default)]
struct Readers(std::collections::HashMap<String, Box<ServerConn>>);

impl Readers {
    /// `cluster`'s reader, connected now if it has none (or lost it).
    async fn get(&mut self, state: &State, cluster: &str) -> Option<&mut Box<ServerConn>> {
        let idle = |conn: &ServerConn| conn.status() == TransactionStatus::Idle;
        if !self.0.get(cluster).is_some_and(|conn| idle(conn)) {
            let pools = state
                .sharded_pools()
                .into_iter()
                .find(|(database, _)| database == cluster)?
                .1;
            let pool = Arc::clone(pools.first()?.1.first()?.preferred());
            let timeout = pool.settings.connect_timeout;
            match ServerConn::connect(&pool.target, timeout, 0).await {
                Ok(conn) => {
                    self.0.insert(cluster.to_owned(), conn);
                }
                Err(err) => {
                    warn!(cluster, %err, "cannot connect to read the catalog");
                    self.0.remove(cluster);
                    return None;
                }
            }
        }
        self.0.get_mut(cluster)
    }
}

/// Read the catalog of every sharded cluster; install what changed.
async fn refresh(state: &State, readers: &mut Readers) {
    let config = state.config();
    let mut next: Option<Config> = None;
    for (name, cluster) in &config.clusters {
        if cluster.sharding.databases <= 1 {
            continue;
        }
        let Some(conn) = readers.get(state, name).await else {
            continue;
        };
        let read = match catalog::read_on(conn, &cluster.sharding).await {
            Ok(read) => read,
            Err(error) => {
                warn!(cluster = name, %error, "cannot read the catalog");
                // Connected afresh for the next read.
                readers.0.remove(name);
                continue;
            }
        };
        let keyless = read
            .keyless
            .map(Arc::new)
            .or_else(|| cluster.sharding.keyless.clone());
        let catalog = Some(Arc::new(read.catalog));
        if cluster.sharding.keyless == keyless && cluster.sharding.catalog == catalog {
            continue;
        }
        debug!(cluster = name, "the catalog changed");
        let mut sharding = (*cluster.sharding).clone();
        sharding.keyless = keyless;
        sharding.catalog = catalog;
        let next = next.get_or_insert_with(|| (*config).clone());
        if let Some(cluster) = next.clusters.get_mut(name) {
            cluster.sharding = Arc::new(sharding);
        }
    }
    if let Some(next) = next {
        state.replace_sharding(&config, Arc::new(next));
    }
}
