//! What the shards' catalog says of unlisted tables, on clusters with
//! column-only `[[sharded_tables]]` entries and `unlisted_tables =
//! "omnisharded"`: the tables that have none of those entries' columns are
//! omnisharded (`router::sharding::KeylessTables`), as PgDog decides with
//! its schema cache. Read from shard 0's primary at start, after DDL comes
//! back through pgshard (and again a little later: DDL inside a transaction
//! shows in the catalog only once it commits), after RELOAD, and every
//! minute; installed as a new config snapshot when it changed, so sessions
//! route by it from their next checkout and the AST cache is planned anew.
//! Until a table shows in the catalog it is sharded by a key pgshard does
//! not know: writes without a key are refused, never sent everywhere.

use std::sync::Arc;
use std::time::Duration;

use router::config::Config;
use router::sharding::KeylessTables;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::state::State;

/// How long after DDL the catalog is read again (for DDL inside a
/// transaction that commits afterwards).
const AFTER_DDL: Duration = Duration::from_secs(2);

/// How often the catalog is read when nothing asks sooner (DDL made
/// behind pgshard's back).
const EVERY: Duration = Duration::from_secs(60);

/// Keep the clusters' keyless tables current until the process ends.
pub async fn run(state: Arc<State>) {
    let mut again: Option<Instant> = None;
    loop {
        refresh(&state).await;
        let next = again.unwrap_or_else(|| Instant::now() + EVERY);
        tokio::select! {
            () = state.schema_changed.notified() => {
                again = Some(Instant::now() + AFTER_DDL);
                // Several DDL statements in a row make one read.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            () = tokio::time::sleep_until(next) => again = None,
        }
    }
}

/// Read the catalog of every cluster that needs it; install what changed.
pub async fn refresh(state: &State) {
    let config = state.config();
    let mut next: Option<Config> = None;
    for (name, cluster) in &config.clusters {
        if !cluster.sharding.unlisted_by_columns {
            continue;
        }
        let Some(keyless) = read_keyless(state, name, &cluster.sharding.key_columns()).await else {
            continue;
        };
        if cluster.sharding.keyless.as_deref() == Some(&keyless) {
            continue;
        }
        debug!(
            cluster = name,
            tables = keyless.tables.len(),
            "unlisted tables without a key column"
        );
        let mut sharding = (*cluster.sharding).clone();
        sharding.keyless = Some(Arc::new(keyless));
        let next = next.get_or_insert_with(|| (*config).clone());
        if let Some(cluster) = next.clusters.get_mut(name) {
            cluster.sharding = Arc::new(sharding);
        }
    }
    if let Some(next) = next {
        state.replace_sharding(&config, Arc::new(next));
    }
}

/// The tables of `cluster` that have none of `columns`, from shard 0's
/// catalog (any user's pool of it will do); `None` when it cannot be read.
async fn read_keyless(state: &State, cluster: &str, columns: &[&str]) -> Option<KeylessTables> {
    let pools = state
        .sharded_pools()
        .into_iter()
        .find(|(database, _)| database == cluster)?
        .1;
    let pool = Arc::clone(&pools.first()?.1.first()?.primary);
    let mut server = pool.checkout().await.ok()?;
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
    let answer = server.conn.query(&sql).await.ok()?;
    pool.checkin(server);
    if let Some((code, message)) = answer.error {
        warn!(
            cluster,
            code, message, "cannot read which tables have a sharding key column"
        );
        return None;
    }
    let mut keyless = KeylessTables::default();
    for row in answer.rows {
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
    Some(keyless)
}
