//! The clusters the driver suite runs real client drivers against: one
//! Postgres behind pgshard in transaction or session mode; two shard
//! databases behind it, each holding only its own hash partition of the
//! sharded table `drv_items`, so a misrouted row fails loudly; or two empty
//! shard databases with only a column-only `[[sharded_tables]]` entry (`id`),
//! where the drivers create their own tables (issue 39).

use std::fmt;
use std::str::FromStr;

use crate::{HarnessError, PasswordEncryption, PgServer, ServerOptions, TestProxy};

/// The user drivers log in as (SCRAM), the cluster they connect to, and the
/// admin console's credentials.
pub const USER: &str = "app";
pub const PASSWORD: &str = "app-pw";
pub const DATABASE: &str = "prod";
pub const ADMIN_USER: &str = "admin";
pub const ADMIN_PASSWORD: &str = "admin-pw";
/// Server connections per pool: small, so concurrent clients share them.
pub const POOL_SIZE: usize = 4;

/// Which cluster: what the driver checks are told in `PGSHARD_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One Postgres, transaction pooling.
    Transaction,
    /// One Postgres, session pooling.
    Session,
    /// Two shards, transaction pooling; `drv_items` sharded by `id`.
    Sharded,
    /// Two shards, transaction pooling, no table: every table the drivers
    /// create with an `id` column is sharded by it (bigint), the others
    /// are omnisharded.
    Columns,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Transaction,
        Mode::Session,
        Mode::Sharded,
        Mode::Columns,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Transaction => "transaction",
            Mode::Session => "session",
            Mode::Sharded => "sharded",
            Mode::Columns => "columns",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Mode, UnknownMode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMode(s.to_owned()))
    }
}

/// A mode name that is not one of [`Mode::ALL`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode {0:?} (transaction, session, sharded or columns)")]
pub struct UnknownMode(String);

/// Servers plus pgshard in front of them; the proxy stops first on drop.
#[derive(Debug)]
pub struct DriverCluster {
    pub mode: Mode,
    pub proxy: TestProxy,
    pub servers: Vec<PgServer>,
}

impl DriverCluster {
    pub fn start(mode: Mode) -> Result<DriverCluster, HarnessError> {
        let n = if matches!(mode, Mode::Sharded | Mode::Columns) {
            2
        } else {
            1
        };
        let servers = PgServer::start_many(n, &ServerOptions::default())?;
        let mut databases = String::new();
        for (i, server) in servers.iter().enumerate() {
            server.create_user(USER, PASSWORD, PasswordEncryption::ScramSha256)?;
            let db = format!("shard_{i}");
            server.create_database(&db, Some(USER))?;
            let part = if n > 1 {
                format!(" PARTITION BY HASH (id); CREATE TABLE drv_items_on_shard PARTITION OF drv_items FOR VALUES WITH (MODULUS {n}, REMAINDER {i})")
            } else {
                String::new()
            };
            if mode != Mode::Columns {
                server.psql(
                    &db,
                    &format!("SET ROLE {USER}; CREATE TABLE drv_items (id bigint PRIMARY KEY, val text){part}"),
                )?;
            }
            databases.push_str(&format!(
                "[[databases]]\nname = \"{DATABASE}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"{db}\"\nshard = {i}\n",
                server.port()
            ));
        }
        let pooler_mode = if mode == Mode::Session {
            "session"
        } else {
            "transaction"
        };
        let sharding = match mode {
            Mode::Sharded => format!("[[sharded_tables]]\ndatabase = \"{DATABASE}\"\nname = \"drv_items\"\ncolumn = \"id\"\ndata_type = \"bigint\"\n"),
            Mode::Columns => format!("[[sharded_tables]]\ndatabase = \"{DATABASE}\"\ncolumn = \"id\"\ndata_type = \"bigint\"\n"),
            Mode::Transaction | Mode::Session => String::new(),
        };
        let pgdog = format!(
            "[general]\nshutdown_timeout = 1000\npooler_mode = \"{pooler_mode}\"\ndefault_pool_size = {POOL_SIZE}\ncheckout_timeout = 20000\n\
             [admin]\npassword = \"{ADMIN_PASSWORD}\"\n{databases}\n{sharding}"
        );
        let users = format!(
            "[[users]]\nname = \"{USER}\"\ndatabase = \"{DATABASE}\"\npassword = \"{PASSWORD}\"\n"
        );
        let proxy = TestProxy::start(&pgdog, &users)?;
        Ok(DriverCluster {
            mode,
            proxy,
            servers,
        })
    }

    /// What a driver check reads from its environment.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PGSHARD_HOST", "127.0.0.1".to_owned()),
            ("PGSHARD_PORT", self.proxy.port().to_string()),
            ("PGSHARD_USER", USER.to_owned()),
            ("PGSHARD_PASSWORD", PASSWORD.to_owned()),
            ("PGSHARD_DATABASE", DATABASE.to_owned()),
            ("PGSHARD_ADMIN_USER", ADMIN_USER.to_owned()),
            ("PGSHARD_ADMIN_PASSWORD", ADMIN_PASSWORD.to_owned()),
            ("PGSHARD_MODE", self.mode.name().to_owned()),
            ("PGSHARD_POOL_SIZE", POOL_SIZE.to_string()),
            ("PGSHARD_SHARDS", self.servers.len().to_string()),
            (
                "PGSHARD_SHARD_PORTS",
                self.servers
                    .iter()
                    .map(|s| s.port().to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ]
    }
}
