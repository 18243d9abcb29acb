//! The configuration model: `pgdog.toml` + `users.toml` parsed, validated and
//! turned into one immutable [`Config`] snapshot.
//!
//! The format is PgDog's. Keys pgshard implements are read into the model;
//! PgDog's documented keys it does not implement yet are accepted and listed
//! in [`Config::warnings`] (`config/compat.rs`), which the proxy logs at load;
//! any other key fails loading with its path (`general.pool_sizee: unknown
//! field`), so a typo never silently falls back to a default. Loading and validation are one step:
//! a [`Config`] that exists is one pgshard can run, and every validation error
//! names the key to fix (`users[2].password: ...`).
//!
//! Code map: [`General`] and its enums live in `config/general.rs`, [`Database`]
//! and [`Cluster`] in `config/database.rs`, [`User`] and [`Admin`] in
//! `config/user.rs`, PgDog's keys accepted with a warning in
//! `config/compat.rs`, PgDog's resharding keys' meaning and checks in
//! `config/resharding.rs`, what RELOAD may not change in
//! `config/reload.rs`, the per-pool resolver [`Config::pool_settings`] in
//! `config/pool_settings.rs`, the cross-key rules in `config/validate.rs`, and
//! `[[sharded_tables]]`, `[[sharded_mappings]]` and `[[omnisharded_tables]]`,
//! resolved into each cluster's [`crate::sharding::Sharding`], in
//! `config/sharded_tables.rs`; `[[sharded_functions]]` in
//! `config/sharded_functions.rs`.

mod compat;
mod cross_shard;
mod database;
mod general;
mod pool_settings;
mod reload;
mod resharding;
mod rewrite;
mod sharded_functions;
mod sharded_tables;
mod unix_socket;
mod user;
mod validate;

#[cfg(test)]
mod compat_tests;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod mapping_tests;
#[cfg(test)]
mod sharded_tables_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

pub use cross_shard::{
    CrossShardFinish, GatherLimit, DEFAULT_GATHER_BYTES, DEFAULT_GATHER_ROWS, DEFAULT_MERGE_MEMORY,
    MIN_MERGE_MEMORY,
};
pub use database::{Cluster, Database, Role};
pub use general::{
    AuthType, General, LoadBalancingStrategy, LogFormat, LsnChecks, PassthroughAuth, PoolerMode,
    ReadWriteSplit,
};
pub use pool_settings::{HealthSettings, PoolSettings};
pub use reload::DefaultPlacement;
pub use resharding::{CopyFormat, CutoverTimeoutAction, READ_INTERVAL};
pub use rewrite::{Policy, Rewrite};
pub use sharded_tables::MAX_SHARD_COUNT;
pub use unix_socket::{socket_file_name, UnixSocketMode};
pub use user::{Admin, User};

/// What is wrong with a configuration, naming the file and the key path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The TOML could not be read into the model (syntax, unknown key, bad type).
    #[error("{file}: {path}: {message}")]
    Parse {
        file: &'static str,
        path: String,
        message: String,
    },
    /// The TOML was well formed but describes something pgshard cannot run.
    #[error("{file}: {path}: {message}")]
    Invalid {
        file: &'static str,
        path: String,
        message: String,
    },
}

/// A key pgshard accepted without doing what PgDog does with it (or a
/// value it replaced), for the log at load: `pgdog.toml: general.dry_run:
/// accepted, not supported yet (ignored)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {path}: {message}")]
pub struct Warning {
    pub file: &'static str,
    pub path: String,
    pub message: String,
}

impl Warning {
    /// A warning about `pgdog.toml`.
    pub(crate) fn new(path: String, message: String) -> Warning {
        Warning {
            file: "pgdog.toml",
            path,
            message,
        }
    }

    /// A warning about `users.toml`.
    pub(crate) fn users(path: String, message: String) -> Warning {
        Warning {
            file: "users.toml",
            path,
            message,
        }
    }
}

/// The whole of `pgdog.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PgdogFile {
    #[serde(default)]
    general: General,
    #[serde(default)]
    databases: Vec<Database>,
    #[serde(default)]
    admin: Admin,
    #[serde(default)]
    sharded_tables: Vec<sharded_tables::ShardedTableEntry>,
    #[serde(default)]
    sharded_mappings: Vec<sharded_tables::ShardedMappingEntry>,
    #[serde(default)]
    omnisharded_tables: Vec<sharded_tables::OmnishardedEntry>,
    #[serde(default)]
    sharded_functions: Vec<sharded_functions::ShardedFunctionEntry>,
    #[serde(default)]
    rewrite: Rewrite,
}

/// The whole of `users.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersFile {
    #[serde(default)]
    users: Vec<User>,
}

/// A validated configuration snapshot. Immutable: a reload builds a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub general: General,
    /// Clusters by name.
    pub clusters: BTreeMap<String, Cluster>,
    pub users: Vec<User>,
    /// The admin console (`[admin]`).
    pub admin: Admin,
    /// `[rewrite]`: which statements pgshard rewrites.
    pub rewrite: Rewrite,
    /// PgDog keys accepted but not (fully) supported, in file order.
    pub warnings: Vec<Warning>,
}

impl Config {
    /// Parse and validate the contents of `pgdog.toml` and `users.toml`.
    pub fn from_toml(pgdog_toml: &str, users_toml: &str) -> Result<Config, ConfigError> {
        let mut warnings = Vec::new();
        let pgdog: PgdogFile = parse("pgdog.toml", pgdog_toml, &mut warnings)?;
        let users: UsersFile = parse("users.toml", users_toml, &mut warnings)?;
        validate::general(&pgdog.general)?;
        resharding::validate(&pgdog.general)?;
        cross_shard::check(&pgdog.general)?;
        validate::databases(&pgdog.general, &pgdog.databases)?;
        let mut clusters = database::clusters(pgdog.databases, &mut warnings)?;
        sharded_tables::resolve(
            &pgdog.general,
            &mut clusters,
            pgdog.sharded_tables,
            pgdog.sharded_mappings,
            pgdog.omnisharded_tables,
        )?;
        sharded_functions::resolve(&mut clusters, pgdog.sharded_functions)?;
        cross_shard::check_coordinator(&pgdog.general, &clusters)?;
        validate::admin(&pgdog.admin, &clusters)?;
        validate::users(&pgdog.general, &clusters, &users.users)?;
        pgdog.rewrite.warnings(&mut warnings);
        let mut config = Config {
            general: pgdog.general,
            clusters,
            users: users.users,
            admin: pgdog.admin,
            rewrite: pgdog.rewrite,
            warnings: Vec::new(),
        };
        pool_settings::schema_clash(&config, &mut warnings);
        config.warnings = warnings;
        Ok(config)
    }

    /// The `[[users]]` entry for `user` connecting to cluster `database`.
    pub fn user(&self, user: &str, database: &str) -> Option<&User> {
        self.users
            .iter()
            .find(|u| u.name == user && u.database == database)
    }

    /// How pgshard authenticates `user`: its own `auth_type`, else `general.auth_type`.
    pub fn auth_type(&self, user: &User) -> AuthType {
        user.auth_type.unwrap_or(self.general.auth_type)
    }
}

/// Keys whose values are secrets: a parse error on them must not echo the value.
fn is_secret_key(path: &str) -> bool {
    path.ends_with("password")
}

/// Read one file: TOML, then PgDog's accepted-but-unsupported keys taken
/// out (with a warning each), then the rest into the model.
fn parse<T: for<'de> Deserialize<'de>>(
    file: &'static str,
    text: &str,
    warnings: &mut Vec<Warning>,
) -> Result<T, ConfigError> {
    let mut table: toml::Table = text.parse().map_err(|err: toml::de::Error| {
        let line = err
            .span()
            .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
        ConfigError::Parse {
            file,
            path: line.map(|line| format!("line {line}")).unwrap_or_default(),
            message: err.message().to_owned(),
        }
    })?;
    compat::accept(file, &mut table, warnings);
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        // serde's type errors quote the offending value ("invalid type: integer
        // `1234`"); for a password that value is the secret itself.
        let message = if is_secret_key(&path) {
            "invalid value, expected a string (the value is not shown: it is a secret)".to_owned()
        } else {
            inner.message().to_owned()
        };
        ConfigError::Parse {
            file,
            path,
            message,
        }
    })
}

fn invalid(file: &'static str, path: String, message: String) -> ConfigError {
    ConfigError::Invalid {
        file,
        path,
        message,
    }
}

/// Debug-prints an optional secret as `Some(<redacted>)` or `None`, so a
/// `{:?}` of a config type can reach a log without leaking a password.
struct Redacted<'a>(&'a Option<String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(_) => f.write_str("Some(<redacted>)"),
            None => f.write_str("None"),
        }
    }
}
