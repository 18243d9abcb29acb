//! Shared set-up for the proxy's integration tests: real Postgres servers,
//! users on them, and pgshard in front with a config built per test.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use integration::{PasswordEncryption, PgServer, ServerOptions, TestProxy};

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
    let servers = PgServer::start_many(n, &ServerOptions::default()).unwrap();
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
