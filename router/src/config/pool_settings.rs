//! Resolving the settings of one pool (one user on one shard database) from
//! the user, the database and `[general]`, most specific first.

use std::fmt;
use std::time::Duration;

use super::{Config, Database, General, PoolerMode, Redacted, User, Warning};

/// Everything a pool for one (user, shard database) pair needs from the config.
///
/// `Debug` prints `server_password` as `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct PoolSettings {
    /// Most server connections the pool opens (at least 1).
    pub pool_size: usize,
    /// Server connections kept open even when idle (at most `pool_size`).
    pub min_pool_size: usize,
    pub pooler_mode: PoolerMode,
    /// The login pgshard uses on the server.
    pub server_user: String,
    /// The password for that login, if any.
    pub server_password: Option<String>,
    pub checkout_timeout: Duration,
    /// `None`: idle connections are never closed.
    pub idle_timeout: Option<Duration>,
    /// `None`: connections are never retired for age.
    pub server_lifetime: Option<Duration>,
    /// Idle connections handed out oldest first (`server_round_robin`),
    /// not most recently used first.
    pub round_robin: bool,
    pub connect_timeout: Duration,
    /// `None`: queries run without a time limit.
    pub query_timeout: Option<Duration>,
    /// Health checks and bans (`[general]`'s `healthcheck_*`, `ban_timeout`).
    pub health: HealthSettings,
}

/// How a pool checks its database and how long a failed replica is banned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthSettings {
    /// A reused connection idle longer than this is checked first.
    pub interval: Duration,
    /// Background checks of the database; `None`: none.
    pub idle_interval: Option<Duration>,
    /// Wait before the first background check.
    pub idle_delay: Duration,
    /// A check slower than this failed.
    pub timeout: Duration,
    /// How long a failed replica serves no reads.
    pub ban_timeout: Duration,
}

impl fmt::Debug for PoolSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured so that a new field cannot be forgotten here.
        let PoolSettings {
            pool_size,
            min_pool_size,
            pooler_mode,
            server_user,
            server_password,
            checkout_timeout,
            idle_timeout,
            server_lifetime,
            round_robin,
            connect_timeout,
            query_timeout,
            health,
        } = self;
        f.debug_struct("PoolSettings")
            .field("pool_size", pool_size)
            .field("min_pool_size", min_pool_size)
            .field("pooler_mode", pooler_mode)
            .field("server_user", server_user)
            .field("server_password", &Redacted(server_password))
            .field("checkout_timeout", checkout_timeout)
            .field("idle_timeout", idle_timeout)
            .field("server_lifetime", server_lifetime)
            .field("round_robin", round_robin)
            .field("connect_timeout", connect_timeout)
            .field("query_timeout", query_timeout)
            .field("health", health)
            .finish()
    }
}

impl Config {
    /// The settings of the pool serving `user` on `shard` (one of the
    /// `shards` of the user's cluster). Each setting comes from the user if it
    /// sets it, else from the database, else from `[general]`. The server login
    /// is the user's `server_user`/`server_password`, else the database's
    /// `user`/`password`, else the client's own name and password.
    pub fn pool_settings(&self, user: &User, shard: &Database) -> PoolSettings {
        let general = &self.general;
        let (pool_size, min_pool_size) = pool_sizes(general, shard, Some(user));
        PoolSettings {
            pool_size,
            min_pool_size,
            pooler_mode: user
                .pooler_mode
                .or(shard.pooler_mode)
                .unwrap_or(general.pooler_mode),
            server_user: user
                .server_user
                .as_ref()
                .or(shard.user.as_ref())
                .unwrap_or(&user.name)
                .clone(),
            server_password: user
                .server_password
                .as_ref()
                .or(shard.password.as_ref())
                .or(user.password.as_ref())
                .cloned(),
            checkout_timeout: general.checkout_timeout(),
            idle_timeout: general.idle_timeout(),
            server_lifetime: general.server_lifetime(),
            round_robin: general.server_round_robin,
            connect_timeout: general.connect_timeout(),
            query_timeout: general.query_timeout(),
            health: HealthSettings {
                interval: general.healthcheck_interval(),
                idle_interval: general.idle_healthcheck_interval(),
                idle_delay: general.idle_healthcheck_delay(),
                timeout: general.healthcheck_timeout(),
                ban_timeout: general.ban_timeout(),
            },
        }
    }

    /// The server logins of `cluster`'s pools (each user's, on each shard's
    /// primary), sorted, once each: the roles pgshard's own tables on the
    /// shards are granted to (two-phase commit's decisions are written by
    /// the client's server login, inside its transaction).
    pub fn server_roles(&self, cluster: &str) -> Vec<String> {
        let Some(shards) = self.clusters.get(cluster).map(|c| &c.shards) else {
            return Vec::new();
        };
        let mut roles: Vec<String> = self
            .users
            .iter()
            .filter(|user| user.database == cluster)
            .flat_map(|user| {
                shards
                    .iter()
                    .map(|shard| self.pool_settings(user, shard).server_user)
            })
            .collect();
        roles.sort();
        roles.dedup();
        roles
    }
}

/// The schema pgshard keeps its own tables in on the shards.
const OWN_SCHEMA: &str = "pgshard";

/// A server login named like pgshard's schema finds that schema first in
/// Postgres's default `search_path` (`"$user", public`): its unqualified
/// CREATE TABLE would go there (or fail: the schema is not its own) once
/// pgshard made the schema (a shard move, two-phase commit).
pub(super) fn schema_clash(config: &Config, warnings: &mut Vec<Warning>) {
    for cluster in config.clusters.keys() {
        if config.server_roles(cluster).iter().any(|r| r == OWN_SCHEMA) {
            warnings.push(Warning::users(
                format!("users (database {cluster})"),
                format!(
                    "a server login named \"{OWN_SCHEMA}\" has pgshard's schema {OWN_SCHEMA} (made on the \
                     shards by two-phase commit and shard moves) first in Postgres's default search_path \
                     (\"$user\", public): its unqualified CREATE TABLE would go into that schema; \
                     use another role name, or set search_path for the role (ALTER ROLE {OWN_SCHEMA} SET \
                     search_path = public)"
                ),
            ));
        }
    }
}

/// `(pool_size, min_pool_size)` for `user` (or for no particular user) on
/// `database`. Shared with validation so that what is checked is what is used.
pub(super) fn pool_sizes(
    general: &General,
    database: &Database,
    user: Option<&User>,
) -> (usize, usize) {
    let pool_size = user
        .and_then(|u| u.pool_size)
        .or(database.pool_size)
        .unwrap_or(general.default_pool_size);
    let min_pool_size = user
        .and_then(|u| u.min_pool_size)
        .or(database.min_pool_size)
        .unwrap_or(general.min_pool_size);
    (pool_size, min_pool_size)
}
