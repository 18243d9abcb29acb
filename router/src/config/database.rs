//! `[[databases]]` of `pgdog.toml` and the clusters they form.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;

use super::{invalid, ConfigError, PoolerMode, Redacted};
use crate::sharding::Sharding;

/// One `[[databases]]` entry: a real Postgres database serving one shard of a cluster.
///
/// `Debug` prints `password` as `<redacted>`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Database {
    /// The cluster name clients connect to.
    pub name: String,
    pub host: String,
    #[serde(default = "default_postgres_port")]
    pub port: u16,
    /// The database's name on the server; defaults to `name`.
    pub database_name: Option<String>,
    /// Shard number within the cluster, 0-based.
    #[serde(default)]
    pub shard: usize,
    /// The login pgshard uses on this server, instead of the client's user name
    /// (a user's `server_user` still wins).
    pub user: Option<String>,
    /// The password for that login (a user's `server_password` still wins).
    pub password: Option<String>,
    /// Overrides `general.default_pool_size` for pools on this server.
    pub pool_size: Option<usize>,
    /// Overrides `general.min_pool_size` for pools on this server.
    pub min_pool_size: Option<usize>,
    /// Overrides `general.pooler_mode` for pools on this server.
    pub pooler_mode: Option<PoolerMode>,
}

impl Database {
    /// The database name to ask the server for.
    pub fn server_database(&self) -> &str {
        self.database_name.as_deref().unwrap_or(&self.name)
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured so that a new field cannot be forgotten here.
        let Database {
            name,
            host,
            port,
            database_name,
            shard,
            user,
            password,
            pool_size,
            min_pool_size,
            pooler_mode,
        } = self;
        f.debug_struct("Database")
            .field("name", name)
            .field("host", host)
            .field("port", port)
            .field("database_name", database_name)
            .field("shard", shard)
            .field("user", user)
            .field("password", &Redacted(password))
            .field("pool_size", pool_size)
            .field("min_pool_size", min_pool_size)
            .field("pooler_mode", pooler_mode)
            .finish()
    }
}

fn default_postgres_port() -> u16 {
    5432
}

/// A cluster: what one client-facing database name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub name: String,
    /// Shard databases, indexed by shard number (contiguous from 0).
    pub shards: Vec<Database>,
    /// How statements of this cluster are routed: its sharded tables, table
    /// families and omnisharded tables (`databases` = `shards.len()`). A
    /// cluster that no `[[sharded_tables]]` entry names still has one, with no
    /// tables.
    pub sharding: Arc<Sharding>,
}

/// Group `[[databases]]` into clusters and check their shard numbers form 0..n.
pub(super) fn clusters(databases: Vec<Database>) -> Result<BTreeMap<String, Cluster>, ConfigError> {
    if databases.is_empty() {
        return Err(invalid(
            "pgdog.toml",
            "databases".to_owned(),
            "at least one [[databases]] entry is required".to_owned(),
        ));
    }
    // Shard numbers come from the file: keep them in a map, not a Vec indexed by
    // them, so `shard = 4000000000` is a gap error rather than a huge allocation.
    let mut slots: BTreeMap<String, BTreeMap<usize, (usize, Database)>> = BTreeMap::new();
    for (i, db) in databases.into_iter().enumerate() {
        if db.host.is_empty() {
            return Err(invalid(
                "pgdog.toml",
                format!("databases[{i}].host"),
                "must not be empty".to_owned(),
            ));
        }
        let shards = slots.entry(db.name.clone()).or_default();
        if let Some((first, _)) = shards.get(&db.shard) {
            return Err(invalid(
                "pgdog.toml",
                format!("databases[{i}].shard"),
                format!(
                    "cluster {:?} already has shard {} (databases[{first}])",
                    db.name, db.shard
                ),
            ));
        }
        shards.insert(db.shard, (i, db));
    }
    let mut clusters = BTreeMap::new();
    for (name, shards) in slots {
        let mut complete = Vec::with_capacity(shards.len());
        for (expected, (shard, (_, db))) in shards.into_iter().enumerate() {
            if shard != expected {
                return Err(invalid(
                    "pgdog.toml",
                    "databases".to_owned(),
                    format!("cluster {name:?} has no shard {expected}: shard numbers must run from 0 without gaps"),
                ));
            }
            complete.push(db);
        }
        // The tables are filled in by `sharded_tables::resolve`, once every
        // cluster's size is known.
        let sharding = Arc::new(Sharding {
            databases: complete.len(),
            ..Sharding::default()
        });
        clusters.insert(
            name.clone(),
            Cluster {
                name,
                shards: complete,
                sharding,
            },
        );
    }
    Ok(clusters)
}
