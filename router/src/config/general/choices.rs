//! The closed choices of the pooling keys of `[general]`: `pooler_mode` and
//! `auth_type` (which databases and users may override), `passthrough_auth`,
//! and the replica keys `load_balancing_strategy` and `read_write_split`.

use serde::{Deserialize, Serialize};

/// How long a client holds a server connection (`pooler_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolerMode {
    /// The client holds a server connection for one transaction (or for one
    /// statement outside a transaction), then it goes back to the pool.
    #[default]
    Transaction,
    /// The client holds a server connection for its whole session.
    Session,
}

impl PoolerMode {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolerMode::Transaction => "transaction",
            PoolerMode::Session => "session",
        }
    }
}

/// How pgshard checks a client's password (`auth_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthType {
    /// SCRAM-SHA-256 (RFC 7677): the password never crosses the wire.
    #[default]
    Scram,
    /// Postgres's MD5 challenge.
    Md5,
    /// Cleartext password; use only under TLS.
    Plain,
    /// No password: any client naming a listed user is let in.
    Trust,
}

impl AuthType {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthType::Scram => "scram",
            AuthType::Md5 => "md5",
            AuthType::Plain => "plain",
            AuthType::Trust => "trust",
        }
    }

    /// Whether a user authenticated this way needs a password in `users.toml`.
    pub fn needs_password(self) -> bool {
        self != AuthType::Trust
    }
}

/// How reads are spread over the databases that may serve them
/// (`load_balancing_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalancingStrategy {
    /// A database picked at random for each checkout.
    #[default]
    Random,
    /// Each database in turn.
    RoundRobin,
    /// The database whose pool has the fewest connections checked out.
    LeastActiveConnections,
}

impl LoadBalancingStrategy {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadBalancingStrategy::Random => "random",
            LoadBalancingStrategy::RoundRobin => "round_robin",
            LoadBalancingStrategy::LeastActiveConnections => "least_active_connections",
        }
    }
}

/// Whether the primary serves reads too (`read_write_split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadWriteSplit {
    /// Reads go to the replicas and the primary alike.
    #[default]
    IncludePrimary,
    /// Reads go to the replicas only (to the primary when the shard has
    /// none).
    ExcludePrimary,
    /// Reads go to the replicas, and to the primary as well while a replica
    /// is banned.
    IncludePrimaryIfReplicaBanned,
}

impl ReadWriteSplit {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadWriteSplit::IncludePrimary => "include_primary",
            ReadWriteSplit::ExcludePrimary => "exclude_primary",
            ReadWriteSplit::IncludePrimaryIfReplicaBanned => "include_primary_if_replica_banned",
        }
    }
}

/// Whether clients that `users.toml` does not list may log in with their
/// own password, which pgshard checks by logging into the server with it
/// (`passthrough_auth`, PgDog's key and values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PassthroughAuth {
    /// Only `users.toml`'s users log in.
    #[default]
    Disabled,
    /// Passthrough for clients on TLS or the Unix socket (the password
    /// crosses the connection in cleartext); needs `tls_certificate`.
    /// PgDog's `enabled_allow_change` is another name for it: pgshard
    /// checks every login against the server, so a changed password works
    /// at once.
    #[serde(alias = "enabled_allow_change")]
    Enabled,
    /// Passthrough on any connection, unencrypted ones too.
    /// (`enabled_plain_allow_change`: another name for it.)
    #[serde(alias = "enabled_plain_allow_change")]
    EnabledPlain,
}

impl PassthroughAuth {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            PassthroughAuth::Disabled => "disabled",
            PassthroughAuth::Enabled => "enabled",
            PassthroughAuth::EnabledPlain => "enabled_plain",
        }
    }

    pub fn is_enabled(self) -> bool {
        self != PassthroughAuth::Disabled
    }
}
