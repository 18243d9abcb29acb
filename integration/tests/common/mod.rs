//! Shared set-up for the proxy's integration tests: real Postgres servers,
//! users on them, and pgshard in front with a config built per test.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use integration::{PasswordEncryption, PgServer, ServerOptions, TestProxy};

pub mod wire;

/// Servers plus the proxy in front of them. Fields drop in order: the proxy
/// first, then the servers.
pub struct Cluster {
    pub proxy: TestProxy,
    pub servers: Vec<PgServer>,
    pub databases: String,
    pub general: String,
}

/// Users every server has: `app` (SCRAM) owning database `shard_<i>`, and
/// `md5user` with an MD5 secret.
pub fn servers(n: usize) -> Vec<PgServer> {
    servers_with(n, &ServerOptions::default())
}

/// `[[databases]]` entries for cluster `prod` over `servers`.
pub fn databases(servers: &[PgServer]) -> String {
    let mut databases = String::new();
    for (i, server) in servers.iter().enumerate() {
        databases.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_{i}\"\nshard = {i}\n",
            server.port()
        ));
    }
    databases
}

/// The default users.toml: `app` with SCRAM.
pub const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"app-pw\"\n";

/// The admin section every test config carries.
pub const ADMIN: &str = "[admin]\npassword = \"admin-pw\"\n";

impl Cluster {
    /// One server behind pgshard, with `general` lines added to `[general]`.
    pub fn start(general: &str) -> Cluster {
        Cluster::start_with(1, general, USERS)
    }

    pub fn start_with(n: usize, general: &str, users: &str) -> Cluster {
        let servers = servers(n);
        let databases = databases(&servers);
        let general = format!("[general]\nshutdown_timeout = 1000\n{general}\n");
        let proxy = TestProxy::start(&format!("{general}{ADMIN}{databases}"), users).unwrap();
        Cluster {
            proxy,
            servers,
            databases,
            general,
        }
    }

    pub fn port(&self) -> u16 {
        self.proxy.port()
    }

    pub async fn connect(&self) -> tokio_postgres::Client {
        connect(self.port(), "app", "app-pw", "prod").await.unwrap()
    }

    pub async fn admin(&self) -> tokio_postgres::Client {
        connect(self.port(), "admin", "admin-pw", "admin")
            .await
            .unwrap()
    }
}

pub async fn connect(
    port: u16,
    user: &str,
    password: &str,
    database: &str,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    connect_str(&format!(
        "host=127.0.0.1 port={port} user={user} password={password} dbname={database}"
    ))
    .await
}

pub async fn connect_str(conninfo: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// The SQLSTATE of an error, for assertions.
pub fn code(err: &tokio_postgres::Error) -> Option<&str> {
    err.code().map(|c| c.code())
}

/// The values of a simple query's rows, column `col`.
pub async fn column(client: &tokio_postgres::Client, sql: &str, col: &str) -> Vec<String> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(col).map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// Connect as `app` and keep the connection object, to read notifications.
pub async fn connect_raw(
    port: u16,
) -> (
    tokio_postgres::Client,
    tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>,
) {
    tokio_postgres::connect(
        &format!("host=127.0.0.1 port={port} user=app password=app-pw dbname=prod"),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap()
}

/// Like [`servers`], on servers started with `options`. `md5user` can log in
/// over TCP only with `HostAuth::Md5` (or `Password`): a `scram-sha-256`
/// line in pg_hba.conf refuses roles whose secret is MD5.
pub fn servers_with(n: usize, options: &ServerOptions) -> Vec<PgServer> {
    let servers = PgServer::start_many(n, options).unwrap();
    for (i, server) in servers.iter().enumerate() {
        server
            .create_user("app", "app-pw", PasswordEncryption::ScramSha256)
            .unwrap();
        server
            .create_user("md5user", "md5-pw", PasswordEncryption::Md5)
            .unwrap();
        server
            .create_database(&format!("shard_{i}"), Some("app"))
            .unwrap();
        server
            .psql(
                &format!("shard_{i}"),
                &format!(
                    "CREATE TABLE whoami AS SELECT {i} AS shard; ALTER TABLE whoami OWNER TO app;\
                     GRANT ALL ON SCHEMA public TO md5user; GRANT SELECT ON whoami TO md5user"
                ),
            )
            .unwrap();
    }
    servers
}

impl Cluster {
    /// pgshard in front of servers the caller started (see [`servers_with`]).
    pub fn start_on(servers: Vec<PgServer>, general: &str, users: &str) -> Cluster {
        let databases = databases(&servers);
        let general = format!("[general]\nshutdown_timeout = 1000\n{general}\n");
        let proxy = TestProxy::start(&format!("{general}{ADMIN}{databases}"), users).unwrap();
        Cluster {
            proxy,
            servers,
            databases,
            general,
        }
    }

    /// Rewrite the config files a RELOAD reads, with `general` as the
    /// `[general]` section (header included) and the cluster's databases.
    pub fn rewrite_config(&self, general: &str, users: &str) {
        self.proxy
            .rewrite_config(&format!("{general}{ADMIN}{}", self.databases), users)
            .unwrap();
    }
}

/// Every row of a simple query, as column name to text value (NULL as "").
pub async fn rows(
    client: &tokio_postgres::Client,
    sql: &str,
) -> Vec<std::collections::HashMap<String, String>> {
    client
        .simple_query(sql)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                row.columns()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (c.name().to_owned(), row.get(i).unwrap_or("").to_owned()))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

static PROXY_PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PANIC_HOOK: std::sync::Once = std::sync::Once::new();

/// Count panics on tokio worker threads from now on: the in-process proxy's
/// tasks run there (tests run on their own threads), and a panicking client
/// task would otherwise go unnoticed, as tokio catches it.
pub fn watch_proxy_panics() {
    PANIC_HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("tokio-runtime-worker") {
                PROXY_PANICS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            default(info);
        }));
    });
}

/// Panics seen on proxy threads since [`watch_proxy_panics`].
pub fn proxy_panics() -> usize {
    PROXY_PANICS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Run psql as `app` against the proxy on `port` with `sslmode`; returns its
/// trimmed stdout, failing the test (with psql's stderr) if psql fails.
pub fn psql(port: u16, sslmode: &str, sql: &str) -> String {
    let bins = integration::PgBinaries::find().unwrap();
    let output = std::process::Command::new(bins.bindir().join("psql"))
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .args(["-U", "app", "-d", "prod", "-c", sql])
        .env("PGPASSWORD", "app-pw")
        .env("PGSSLMODE", sslmode)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}
