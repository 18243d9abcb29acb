//! `[[databases]]` of `pgdog.toml` and the clusters they form.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Deserialize;

use super::{invalid, ConfigError, DefaultPlacement, PoolerMode, Redacted, Warning};
use crate::sharding::Sharding;

/// What a database does for its shard (`role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Serves writes, transactions and (per `read_write_split`) reads.
    #[default]
    Primary,
    /// A streaming replica: serves reads outside transactions.
    Replica,
    /// Found at run time (failover): a monitor asks each server of the
    /// shard whether it is in recovery (`proxy/src/pool/roles.rs`). A shard
    /// is all `auto` or has none.
    Auto,
}

impl Role {
    /// The name used in the config file and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Replica => "replica",
            Role::Auto => "auto",
        }
    }
}

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
    /// Primary or replica of its shard.
    #[serde(default)]
    pub role: Role,
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
            role,
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
            .field("role", role)
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
    /// Each shard's primary, indexed by shard number (contiguous from 0);
    /// for a shard of `auto` entries, its first (role `Auto`: which one is
    /// the primary is found at run time).
    pub shards: Vec<Database>,
    /// Each shard's replicas, indexed like `shards` (empty without
    /// replicas); a shard of `auto` entries has its others here.
    pub replicas: Vec<Vec<Database>>,
    /// How statements of this cluster are routed: its sharded tables, table
    /// families and omnisharded tables (`databases` = `shards.len()`). A
    /// cluster that no `[[sharded_tables]]` entry names still has one, with no
    /// tables.
    pub sharding: Arc<Sharding>,
    /// The cluster's `[[sharded_tables]]` entries that give no `placement`
    /// (RELOAD may not change their number of databases: `reload.rs`).
    pub default_placement: Vec<DefaultPlacement>,
}

/// The databases of one shard as written: entry index and database.
#[derive(Default)]
struct ShardEntries {
    primary: Option<(usize, Database)>,
    replicas: Vec<(usize, Database)>,
}

/// Group `[[databases]]` into clusters and check their shard numbers form
/// 0..n, each shard with one primary, or all `auto` (see [`Role::Auto`]; a
/// shard of replicas only gets its first replica as primary, with a
/// warning).
pub(super) fn clusters(
    databases: Vec<Database>,
    warnings: &mut Vec<Warning>,
) -> Result<BTreeMap<String, Cluster>, ConfigError> {
    if databases.is_empty() {
        return Err(invalid(
            "pgdog.toml",
            "databases".to_owned(),
            "at least one [[databases]] entry is required".to_owned(),
        ));
    }
    // Shard numbers come from the file: keep them in a map, not a Vec indexed by
    // them, so `shard = 4000000000` is a gap error rather than a huge allocation.
    let mut slots: BTreeMap<String, BTreeMap<usize, ShardEntries>> = BTreeMap::new();
    for (i, db) in databases.into_iter().enumerate() {
        if db.host.is_empty() {
            return Err(invalid(
                "pgdog.toml",
                format!("databases[{i}].host"),
                "must not be empty".to_owned(),
            ));
        }
        let entries = slots
            .entry(db.name.clone())
            .or_default()
            .entry(db.shard)
            .or_default();
        place(entries, i, db)?;
    }
    let mut clusters = BTreeMap::new();
    for (name, shards) in slots {
        let mut primaries = Vec::with_capacity(shards.len());
        let mut replicas = Vec::with_capacity(shards.len());
        for (expected, (shard, entries)) in shards.into_iter().enumerate() {
            if shard != expected {
                return Err(invalid(
                    "pgdog.toml",
                    "databases".to_owned(),
                    format!("cluster {name:?} has no shard {expected}: shard numbers must run from 0 without gaps"),
                ));
            }
            let ShardEntries {
                primary,
                replicas: mut rest,
            } = entries;
            let primary = match primary {
                Some((_, db)) => db,
                None => promote(&name, shard, &mut rest, warnings),
            };
            all_auto_or_none(&name, shard, &primary, &rest)?;
            primaries.push(primary);
            replicas.push(rest.into_iter().map(|(_, db)| db).collect());
        }
        // The tables are filled in by `sharded_tables::resolve`, once every
        // cluster's size is known.
        let sharding = Arc::new(Sharding {
            databases: primaries.len(),
            ..Sharding::default()
        });
        clusters.insert(
            name.clone(),
            Cluster {
                name,
                shards: primaries,
                replicas,
                sharding,
                default_placement: Vec::new(),
            },
        );
    }
    Ok(clusters)
}

/// File entry `i` under its shard: a second primary is an error; `auto`
/// entries wait with the replicas until the shard is complete.
fn place(entries: &mut ShardEntries, i: usize, db: Database) -> Result<(), ConfigError> {
    match (db.role, &entries.primary) {
        (Role::Primary, Some((first, _))) => Err(invalid(
            "pgdog.toml",
            format!("databases[{i}].shard"),
            format!(
                "cluster {:?} already has shard {} (databases[{first}]); a replica needs role = \"replica\"",
                db.name, db.shard
            ),
        )),
        (Role::Primary, None) => {
            entries.primary = Some((i, db));
            Ok(())
        }
        _ => {
            entries.replicas.push((i, db));
            Ok(())
        }
    }
}

/// The primary of a shard whose entries name none: its first `auto` entry
/// (which stays `auto`: the monitor finds the primary), else its first
/// replica (which then takes writes, with a warning). `rest` is never
/// empty: the shard exists because an entry named it.
fn promote(
    cluster: &str,
    shard: usize,
    rest: &mut Vec<(usize, Database)>,
    warnings: &mut Vec<Warning>,
) -> Database {
    let at = rest
        .iter()
        .position(|(_, db)| db.role == Role::Auto)
        .unwrap_or(0);
    let (i, mut db) = rest.remove(at);
    if db.role != Role::Auto {
        warnings.push(Warning::new(
            format!("databases[{i}].role"),
            format!("shard {shard} of {cluster:?} has no primary: this replica gets its writes and transactions too"),
        ));
        db.role = Role::Primary;
    }
    db
}

/// A shard's roles are all found at run time (`auto`) or all written: a
/// written primary beside `auto` entries would take writes the monitor
/// may send elsewhere.
fn all_auto_or_none(
    cluster: &str,
    shard: usize,
    primary: &Database,
    rest: &[(usize, Database)],
) -> Result<(), ConfigError> {
    let auto = primary.role == Role::Auto;
    match rest.iter().find(|(_, db)| (db.role == Role::Auto) != auto) {
        None => Ok(()),
        Some((i, db)) => Err(invalid(
            "pgdog.toml",
            format!("databases[{i}].role"),
            format!(
                "shard {shard} of {cluster:?} mixes \"auto\" with \"{}\": give every entry of the shard role = \"auto\" (roles found at run time) or none",
                if auto { db.role.as_str() } else { "primary" }
            ),
        )),
    }
}
