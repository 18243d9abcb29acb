//! The configuration model: `pgdog.toml` + `users.toml` parsed, validated and
//! turned into one immutable [`Config`] snapshot.
//!
//! The format is PgDog's. Only keys that pgshard acts on today are accepted; any
//! other key fails loading with its path (`databases[1].pool_size: unknown field`),
//! so a config never silently promises a feature that is not there.

use std::collections::BTreeMap;

use serde::Deserialize;

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

/// `[general]`: settings of the pooler process itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct General {
    /// Address to listen on.
    pub host: String,
    /// TCP port to listen on.
    pub port: u16,
    /// Tokio worker threads; 0 runs everything on one thread.
    pub workers: usize,
}

impl Default for General {
    fn default() -> Self {
        General {
            host: "0.0.0.0".to_owned(),
            port: 6432,
            workers: 2,
        }
    }
}

/// One `[[databases]]` entry: a real Postgres database serving one shard of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
}

impl Database {
    /// The database name to ask the server for.
    pub fn server_database(&self) -> &str {
        self.database_name.as_deref().unwrap_or(&self.name)
    }
}

fn default_postgres_port() -> u16 {
    5432
}

/// One `[[users]]` entry of `users.toml`: who may connect to which cluster.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    /// The cluster (`databases.name`) this user may connect to.
    pub database: String,
    /// The user's password. While pgshard relays authentication to Postgres
    /// (pass-through stage) the server checks it, not pgshard.
    pub password: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PgdogFile {
    #[serde(default)]
    general: General,
    #[serde(default)]
    databases: Vec<Database>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersFile {
    #[serde(default)]
    users: Vec<User>,
}

/// A cluster: what one client-facing database name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub name: String,
    /// Shard databases, indexed by shard number (contiguous from 0).
    pub shards: Vec<Database>,
}

/// A validated configuration snapshot. Immutable: a reload builds a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub general: General,
    /// Clusters by name.
    pub clusters: BTreeMap<String, Cluster>,
    pub users: Vec<User>,
}

impl Config {
    /// Parse and validate the contents of `pgdog.toml` and `users.toml`.
    pub fn from_toml(pgdog_toml: &str, users_toml: &str) -> Result<Config, ConfigError> {
        let pgdog: PgdogFile = parse("pgdog.toml", pgdog_toml)?;
        let users: UsersFile = parse("users.toml", users_toml)?;
        let clusters = clusters(pgdog.databases)?;
        for (i, user) in users.users.iter().enumerate() {
            if !clusters.contains_key(&user.database) {
                return Err(invalid(
                    "users.toml",
                    format!("users[{i}].database"),
                    format!("no [[databases]] entry is named {:?}", user.database),
                ));
            }
        }
        Ok(Config {
            general: pgdog.general,
            clusters,
            users: users.users,
        })
    }

    /// The `[[users]]` entry for `user` connecting to cluster `database`.
    pub fn user(&self, user: &str, database: &str) -> Option<&User> {
        self.users
            .iter()
            .find(|u| u.name == user && u.database == database)
    }
}

fn parse<T: for<'de> Deserialize<'de>>(file: &'static str, text: &str) -> Result<T, ConfigError> {
    let deserializer = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        ConfigError::Parse {
            file,
            path,
            message: inner.message().to_owned(),
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

/// Group `[[databases]]` into clusters and check their shard numbers form 0..n.
fn clusters(databases: Vec<Database>) -> Result<BTreeMap<String, Cluster>, ConfigError> {
    if databases.is_empty() {
        return Err(invalid(
            "pgdog.toml",
            "databases".to_owned(),
            "at least one [[databases]] entry is required".to_owned(),
        ));
    }
    let mut slots: BTreeMap<String, Vec<Option<(usize, Database)>>> = BTreeMap::new();
    for (i, db) in databases.into_iter().enumerate() {
        if db.host.is_empty() {
            return Err(invalid(
                "pgdog.toml",
                format!("databases[{i}].host"),
                "must not be empty".to_owned(),
            ));
        }
        let shards = slots.entry(db.name.clone()).or_default();
        if shards.len() <= db.shard {
            shards.resize_with(db.shard + 1, || None);
        }
        if let Some((first, _)) = &shards[db.shard] {
            return Err(invalid(
                "pgdog.toml",
                format!("databases[{i}].shard"),
                format!(
                    "cluster {:?} already has shard {} (databases[{first}])",
                    db.name, db.shard
                ),
            ));
        }
        let shard = db.shard;
        shards[shard] = Some((i, db));
    }
    let mut clusters = BTreeMap::new();
    for (name, shards) in slots {
        let mut complete = Vec::with_capacity(shards.len());
        for (shard, slot) in shards.into_iter().enumerate() {
            match slot {
                Some((_, db)) => complete.push(db),
                None => {
                    return Err(invalid(
                        "pgdog.toml",
                        "databases".to_owned(),
                        format!("cluster {name:?} has no shard {shard}: shard numbers must run from 0 without gaps"),
                    ))
                }
            }
        }
        clusters.insert(
            name.clone(),
            Cluster {
                name,
                shards: complete,
            },
        );
    }
    Ok(clusters)
}

#[cfg(test)]
mod tests {
    use super::*;

    const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";

    fn load(pgdog: &str) -> Result<Config, ConfigError> {
        Config::from_toml(pgdog, USERS)
    }

    #[test]
    fn two_shards_form_one_cluster() {
        let config = load(
            r#"
            [general]
            port = 7000
            [[databases]]
            name = "prod"
            host = "10.0.0.2"
            shard = 1
            database_name = "prod_1"
            [[databases]]
            name = "prod"
            host = "10.0.0.1"
            "#,
        )
        .unwrap();
        assert_eq!(config.general.port, 7000);
        assert_eq!(config.general.host, "0.0.0.0");
        let prod = &config.clusters["prod"];
        assert_eq!(prod.shards.len(), 2);
        assert_eq!(prod.shards[0].host, "10.0.0.1");
        assert_eq!(prod.shards[0].server_database(), "prod");
        assert_eq!(prod.shards[1].server_database(), "prod_1");
        assert_eq!(prod.shards[1].port, 5432);
        assert!(config.user("app", "prod").is_some());
        assert!(config.user("app", "other").is_none());
    }

    #[test]
    fn unknown_key_names_its_path() {
        let err = load(
            "[[databases]]\nname = \"prod\"\nhost = \"h\"\n[[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 1\nsharde = 2\n",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("pgdog.toml: databases[1].sharde"),
            "{text}"
        );
        assert!(text.contains("unknown field"), "{text}");
    }

    #[test]
    fn bad_value_names_its_path() {
        let err = load("[general]\nport = 70000\n[[databases]]\nname = \"prod\"\nhost = \"h\"\n")
            .unwrap_err();
        assert!(
            err.to_string().starts_with("pgdog.toml: general.port"),
            "{err}"
        );
    }

    #[test]
    fn shard_gap_fails_at_load() {
        let err = load("[[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 1\n").unwrap_err();
        assert!(err.to_string().contains("has no shard 0"), "{err}");
    }

    #[test]
    fn duplicate_shard_fails_at_load() {
        let err = load("[[databases]]\nname = \"prod\"\nhost = \"a\"\n[[databases]]\nname = \"prod\"\nhost = \"b\"\n")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "pgdog.toml: databases[1].shard: cluster \"prod\" already has shard 0 (databases[0])"
        );
    }

    #[test]
    fn no_databases_fails() {
        assert!(load("").unwrap_err().to_string().contains("at least one"));
    }

    #[test]
    fn user_of_unknown_cluster_fails() {
        let err = Config::from_toml(
            "[[databases]]\nname = \"prod\"\nhost = \"h\"\n",
            "[[users]]\nname = \"app\"\ndatabase = \"nope\"\n",
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("users.toml: users[0].database"),
            "{err}"
        );
    }

    #[test]
    fn the_example_files_load() {
        let pgdog = include_str!("../../pgdog.toml.example");
        let users = include_str!("../../users.toml.example");
        let config = Config::from_toml(pgdog, users).unwrap();
        assert_eq!(config.clusters["pgshard"].shards.len(), 2);
    }
}
