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

mod catalog_rows;

use std::sync::Arc;
use std::time::Duration;

use router::catalog::Catalog;
use router::config::Config;
use router::sharding::{KeylessTables, Sharding};
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::server_conn::ServerConn;
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
        let idle = |conn: &ServerConn| conn.status == b'I';
        if !self.0.get(cluster).is_some_and(|conn| idle(conn)) {
            let pools = state
                .sharded_pools()
                .into_iter()
                .find(|(database, _)| database == cluster)?
                .1;
            let pool = Arc::clone(&pools.first()?.1.first()?.primary);
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
        let read = read_on(conn, &cluster.sharding).await;
        let Ok(read) = read.map_err(|(what, code, message)| {
            warn!(cluster = name, code, message, "cannot read {what}");
            conn.status = b'E';
        }) else {
            continue;
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

/// What one cluster's catalog says.
struct Read {
    /// `None` when the cluster has no column-only entries.
    keyless: Option<KeylessTables>,
    catalog: Catalog,
}

/// `sharding` as the catalog `conn` sees says it is: inside a transaction,
/// with the schema changes the transaction made (a session reads its own
/// this way until they commit). `None` when it cannot be read.
pub async fn sharding_on(conn: &mut ServerConn, sharding: &Sharding) -> Option<Sharding> {
    let read = read_on(conn, sharding).await.ok()?;
    let mut sharding = sharding.clone();
    if read.keyless.is_some() {
        sharding.keyless = read.keyless.map(Arc::new);
    }
    sharding.catalog = Some(Arc::new(read.catalog));
    Some(sharding)
}

/// Why a read failed: what was read, and the server's error.
type Failure = (&'static str, String, String);

/// What `conn` shows of the cluster's catalog.
async fn read_on(conn: &mut ServerConn, sharding: &Sharding) -> Result<Read, Failure> {
    let keyless = if sharding.unlisted_by_columns {
        Some(read_keyless(conn, &sharding.key_columns()).await?)
    } else {
        None
    };
    let what = "the catalog (views, functions, triggers, sequences)";
    let rows = rows(conn, catalog_rows::QUERY, what).await?;
    let rows = rows.iter().filter_map(|values| catalog_rows::row(values));
    let catalog = Catalog::from_rows_reusing(rows, sharding.catalog.as_deref());
    Ok(Read { keyless, catalog })
}

/// Run `sql` on `conn`; its rows.
async fn rows(
    conn: &mut ServerConn,
    sql: &str,
    what: &'static str,
) -> Result<Vec<Vec<Option<String>>>, Failure> {
    let lost = || (what, "08006".to_owned(), "connection lost".to_owned());
    let answer = conn.query(sql).await.map_err(|_| lost())?;
    match answer.error {
        Some((code, message)) => Err((what, code, message)),
        None => Ok(answer.rows),
    }
}

/// The tables that have none of `columns`.
async fn read_keyless(conn: &mut ServerConn, columns: &[&str]) -> Result<KeylessTables, Failure> {
    let list = columns
        .iter()
        .map(|c| format!("'{}'", c.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT n.nspname, c.relname, EXISTS (SELECT 1 FROM pg_attribute a \
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
         AND a.attname IN ({list})) \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') \
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
         AND n.nspname NOT LIKE 'pg_toast%'"
    );
    let rows = rows(conn, &sql, "which tables have a sharding key column").await?;
    let mut keyless = KeylessTables::default();
    for row in rows {
        let (Some(Some(schema)), Some(Some(name)), Some(Some(keyed))) =
            (row.first(), row.get(1), row.get(2))
        else {
            continue;
        };
        if keyed == "t" {
            keyless.keyed_names.insert(name.clone());
        } else {
            keyless.tables.insert((schema.clone(), name.clone()));
        }
    }
    Ok(keyless)
}
