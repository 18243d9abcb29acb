//! `passthrough_auth`: a client that `users.toml` does not list logs in
//! with its own password, which is checked by logging into the cluster's
//! first primary with it (the server asks for whatever its `pg_hba.conf`
//! says: SCRAM-SHA-256, MD5, cleartext). Only then are pools made for the
//! (cluster, user), logging in with that password; a login with another
//! password the server accepts (it was changed with ALTER ROLE) rebuilds
//! them with the new one. The checking login is kept as the first pool's
//! idle connection. A refused login makes nothing and keeps nothing.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use router::config::{Config, User};

use super::{read, write, Clusters};
use crate::conn::server::{ServerConn, ServerError};
use crate::lock::lock;
use crate::metrics::Metrics;

/// Why a passthrough login did not get pools.
#[derive(Debug, thiserror::Error)]
pub enum PassthroughError {
    /// The server refused the login or could not be reached.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// The config changed meanwhile: passthrough is off, the cluster is
    /// gone or users.toml now lists the user.
    #[error("passthrough authentication is not available for this user now")]
    Unavailable,
}

/// The `[[users]]` entry a passthrough user's pools are built from: the
/// client's name and password used on the servers as they are.
pub fn passthrough_user(cluster: &str, user: &str, password: &str) -> User {
    User {
        name: user.to_owned(),
        database: cluster.to_owned(),
        password: None,
        pool_size: None,
        min_pool_size: None,
        pooler_mode: None,
        server_user: Some(user.to_owned()),
        server_password: Some(password.to_owned()),
        auth_type: None,
    }
}

/// Whether `config` lets `user` of `cluster` log in through passthrough.
fn admits(config: &Config, cluster: &str, user: &str) -> bool {
    config.general.passthrough_auth.is_enabled()
        && config.clusters.contains_key(cluster)
        && config.user(user, cluster).is_none()
}

impl Clusters {
    /// Check `password` for `user` of `cluster` by logging into the
    /// cluster's first primary with it; once the server accepts it, the
    /// (cluster, user) pools log in with it (made, or rebuilt when they had
    /// another password). Every login asks the server: nothing is cached
    /// between logins but the pools.
    pub async fn passthrough_login(
        &self,
        cluster: &str,
        user: &str,
        password: &str,
        metrics: &Metrics,
    ) -> Result<(), PassthroughError> {
        let config = self.config();
        if !admits(&config, cluster, user) {
            return Err(PassthroughError::Unavailable);
        }
        let Some(first) = config.clusters.get(cluster).and_then(|c| c.shards.first()) else {
            return Err(PassthroughError::Unavailable);
        };
        let entry = passthrough_user(cluster, user, password);
        let settings = config.pool_settings(&entry, first);
        let target = super::target(first, &settings);
        let id = self.next_server_id.fetch_add(1, Ordering::Relaxed);
        let conn = ServerConn::connect(&target, settings.connect_timeout, id).await?;
        self.install_passthrough(entry, conn, metrics)
    }

    /// Pools for `entry`, a passthrough user whose password the server
    /// just accepted on `conn`: kept when they log in with it already,
    /// else made anew (the generation bumped when they replace others, so
    /// sessions take the new ones). `conn` becomes an idle connection of
    /// the first primary's pool.
    fn install_passthrough(
        &self,
        entry: User,
        conn: Box<ServerConn>,
        metrics: &Metrics,
    ) -> Result<(), PassthroughError> {
        let mut pools = write(&self.pools);
        let config = Arc::clone(&read(&self.config));
        let key = (entry.database.clone(), entry.name.clone());
        let Some(cluster) = config.clusters.get(&entry.database) else {
            return Err(PassthroughError::Unavailable);
        };
        if !admits(&config, &key.0, &key.1) {
            return Err(PassthroughError::Unavailable);
        }
        let mut passthrough = lock(&self.passthrough);
        let shards = match (passthrough.get(&key), pools.get(&key)) {
            (Some(known), Some(shards)) if *known == entry => Arc::clone(shards),
            (_, old) => {
                let replaced = old.is_some();
                let shards = self.cluster_pools(&config, &entry, cluster, old, metrics);
                pools.insert(key.clone(), Arc::clone(&shards));
                passthrough.insert(key, entry);
                if replaced {
                    self.generation.fetch_add(1, Ordering::Release);
                }
                shards
            }
        };
        drop(passthrough);
        drop(pools);
        if let Some(first) = shards.first() {
            // The login was on shard 0's first server (`check` above).
            first.first().adopt(conn);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passthrough_admits_unlisted_users_of_clusters_while_on() {
        let databases = "[[databases]]\nname = \"prod\"\nhost = \"h\"\n";
        let users = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";
        let cases = [
            ("enabled_plain", "pt", "prod", true),
            ("enabled_plain", "app", "prod", false),
            ("enabled_plain", "pt", "other", false),
            ("disabled", "pt", "prod", false),
        ];
        for (setting, user, cluster, admitted) in cases {
            let pgdog = format!("[general]\npassthrough_auth = \"{setting}\"\n{databases}");
            let config = Config::from_toml(&pgdog, users).unwrap();
            assert_eq!(
                admits(&config, cluster, user),
                admitted,
                "{setting} {user} {cluster}"
            );
        }
        // The client's own name and password, whatever the database entry
        // logs in as for listed users.
        let entry = passthrough_user("prod", "pt", "pw");
        let databases = format!("{databases}user = \"owner\"\npassword = \"owner-pw\"\n");
        let config = Config::from_toml(&databases, users).unwrap();
        let settings = config.pool_settings(&entry, &config.clusters["prod"].shards[0]);
        assert_eq!(settings.server_user, "pt");
        assert_eq!(settings.server_password.as_deref(), Some("pw"));
    }
}
