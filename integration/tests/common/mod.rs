//! Shared set-up for the proxy's integration tests: real Postgres servers,
//! users on them, and pgshard in front with a config built per test.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use integration::{PasswordEncryption, PgServer, ServerOptions, TestProxy};

pub mod copies;
pub mod moves;
pub mod wire;

/// Servers plus the proxy in front of them. Fields drop in order: the proxy
/// first, then the servers. Before that, a test that ends without a panic
/// checks that the copies of every omnisharded table are equal on every
/// shard (see [`copies`]), unless it said why they differ on purpose.
pub struct Cluster {
    pub proxy: TestProxy,
    pub servers: Vec<PgServer>,
    pub databases: String,
    pub general: String,
    /// Why the test leaves omnisharded copies different, if it does.
    pub copies_differ: Option<&'static str>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() || self.copies_differ.is_some() {
            return;
        }
        let Some((shards, sharding)) = copies::prod_shards(&self.proxy, &self.servers) else {
            return;
        };
        let different = copies::differences_blocking(shards, sharding);
        assert!(
            different.is_empty(),
            "omnisharded tables whose copies differ across shards at the end of the test: {}",
            different.join(", ")
        );
    }
}

/// Fail when an omnisharded table of `cluster` has copies that differ
/// across its shards (what dropping the cluster checks too).
pub async fn assert_copies_equal(cluster: &Cluster) {
    copies::assert_equal(&cluster.proxy, &cluster.servers).await;
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
            copies_differ: None,
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
            copies_differ: None,
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
    psql_as(port, ("app", "app-pw", "prod"), sslmode, sql)
}

/// [`psql`] as `(user, password, database)`.
pub fn psql_as(port: u16, login: (&str, &str, &str), sslmode: &str, sql: &str) -> String {
    let (user, password, database) = login;
    let bins = integration::PgBinaries::find().unwrap();
    let output = std::process::Command::new(bins.bindir().join("psql"))
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .args(["-U", user, "-d", database, "-c", sql])
        .env("PGPASSWORD", password)
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

// ---------------------------------------------------------------------------
// Sharded clusters: each shard database holds only its own hash partition of
// the sharded tables, so a row pgshard sends to the wrong shard is refused by
// Postgres ("no partition of relation ... found for row") instead of being
// stored where nobody will look for it.

/// The sharding sections for cluster `prod`: `orders` by `tenant_id`,
/// `counters` and `consumer_offsets` by `partition_id` (co-located: same
/// type, hasher and shard count), the table family `events_p<N>` keyed by
/// `N`, and the omnisharded `countries`.
pub const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"orders\"
column = \"tenant_id\"
data_type = \"bigint\"
hasher = \"postgres\"

[[sharded_tables]]
database = \"prod\"
name = \"counters\"
column = \"partition_id\"
data_type = \"bigint\"
hasher = \"postgres\"

[[sharded_tables]]
database = \"prod\"
name = \"consumer_offsets\"
column = \"partition_id\"
data_type = \"bigint\"
hasher = \"postgres\"

[[sharded_tables]]
database = \"prod\"
name_prefix = \"events_p\"
data_type = \"bigint\"
hasher = \"postgres\"

[[omnisharded_tables]]
database = \"prod\"
tables = [\"countries\"]
";

/// A whole `pgdog.toml` for cluster `prod` over `servers`: `general` lines
/// in `[general]`, then admin, databases and `sharding` sections.
pub fn sharded_config(servers: &[PgServer], general: &str, sharding: &str) -> String {
    format!(
        "[general]\nshutdown_timeout = 1000\n{general}\n{ADMIN}{}\n{sharding}",
        databases(servers)
    )
}

/// The `[general]` line of the shard move tests: the least freshness bound
/// (3 s), so that a cluster's first move waits 3.5 s before it marks, not
/// the default's 10.5 s (a test of the default says it).
pub const QUICK_FRESHNESS: &str = "resharding_freshness_timeout = 3000";

/// [`sharded_config`] with [`QUICK_FRESHNESS`].
pub fn moves_config(servers: &[PgServer], general: &str, sharding: &str) -> String {
    sharded_config(servers, &format!("{QUICK_FRESHNESS}\n{general}"), sharding)
}

/// Create the sharded schema on every server (owned by `app`): on shard `i`
/// of `n`, `orders`, `counters` and `consumer_offsets` are hash-partitioned
/// parents with the single partition `MODULUS n, REMAINDER i`; `countries`
/// is a plain table on each.
pub fn create_sharded_schema(servers: &[PgServer]) {
    let n = servers.len();
    for (i, server) in servers.iter().enumerate() {
        let part = format!("FOR VALUES WITH (MODULUS {n}, REMAINDER {i})");
        server
            .psql(
                &format!("shard_{i}"),
                &format!(
                    "SET ROLE app;\
                     CREATE TABLE orders (tenant_id bigint NOT NULL, id bigint NOT NULL, item text NOT NULL,\
                       PRIMARY KEY (tenant_id, id)) PARTITION BY HASH (tenant_id);\
                     CREATE TABLE orders_on_shard PARTITION OF orders {part};\
                     CREATE TABLE counters (partition_id bigint PRIMARY KEY, next bigint NOT NULL DEFAULT 0)\
                       PARTITION BY HASH (partition_id);\
                     CREATE TABLE counters_on_shard PARTITION OF counters {part};\
                     CREATE TABLE consumer_offsets (group_id text NOT NULL, partition_id bigint NOT NULL,\
                       off bigint NOT NULL DEFAULT 0, PRIMARY KEY (group_id, partition_id))\
                       PARTITION BY HASH (partition_id);\
                     CREATE TABLE consumer_offsets_on_shard PARTITION OF consumer_offsets {part};\
                     CREATE TABLE countries (code text PRIMARY KEY, name text NOT NULL)"
                ),
            )
            .unwrap();
    }
}

/// Users `app` (SCRAM) and `raw`, trusted, so wire-level clients need no
/// password exchange.
pub fn raw_users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"raw\"\ndatabase = \"prod\"\nauth_type = \"trust\"\n\
         server_user = \"app\"\nserver_password = \"app-pw\"\n"
    )
}

/// A `tenant_id` on shard 0 and one on shard 1 of a 2-shard cluster.
pub async fn keys_on_both_shards(cluster: &Cluster) -> (i64, i64) {
    let direct = cluster.shard(0).await;
    let mut keys = [None, None];
    for key in 1..100i64 {
        let shard = postgres_hash_shard(&direct, key, 2).await;
        keys[shard].get_or_insert(key);
    }
    let [Some(a), Some(b)] = keys else {
        panic!("no keys for both shards")
    };
    (a, b)
}

impl Cluster {
    /// `n` fresh servers with the sharded schema ([`create_sharded_schema`])
    /// behind pgshard, users from [`raw_users`], `general` lines and
    /// `SHARDING` plus `extra` sections.
    pub fn start_sharded_raw(n: usize, general: &str, extra: &str) -> Cluster {
        let servers = servers(n);
        create_sharded_schema(&servers);
        let sharding = format!("{SHARDING}\n{extra}");
        let config = sharded_config(&servers, general, &sharding);
        Cluster {
            proxy: TestProxy::start(&config, &raw_users()).unwrap(),
            databases: databases(&servers),
            general: format!("[general]\n{general}\n"),
            servers,
            copies_differ: None,
        }
    }

    /// pgshard over `servers` (see [`servers`] and [`create_sharded_schema`])
    /// with `sharding` sections after the databases.
    pub fn start_sharded(servers: Vec<PgServer>, general: &str, sharding: &str) -> Cluster {
        let proxy = TestProxy::start(&sharded_config(&servers, general, sharding), USERS).unwrap();
        Cluster {
            proxy,
            databases: databases(&servers),
            general: format!("[general]\nshutdown_timeout = 1000\n{general}\n"),
            servers,
            copies_differ: None,
        }
    }

    /// A direct connection (as `app`, no pgshard) to database `shard_<i>`.
    pub async fn shard(&self, i: usize) -> tokio_postgres::Client {
        connect(
            self.servers[i].port(),
            "app",
            "app-pw",
            &format!("shard_{i}"),
        )
        .await
        .unwrap()
    }

    /// Direct connections to every shard, in shard order.
    pub async fn shards(&self) -> Vec<tokio_postgres::Client> {
        let mut shards = Vec::new();
        for i in 0..self.servers.len() {
            shards.push(self.shard(i).await);
        }
        shards
    }
}

/// The database a bigint key goes to under the `postgres` hasher with
/// `n` shards (default placement), computed by Postgres itself (any server
/// will do): `hashint8extended` with the partitioning seed, then
/// `hash_combine64(0, h)`, unsigned, modulo `n` (DESIGN.md §2).
pub async fn postgres_hash_shard(client: &tokio_postgres::Client, key: i64, n: usize) -> usize {
    let sql = format!(
        "SELECT (((hashint8extended({key}::bigint, 8816678312871386365)::numeric \
         + 18446744073709551616 + 5305509591434766563) % 18446744073709551616) % {n})::int AS shard"
    );
    column(client, &sql, "shard").await[0].parse().unwrap()
}

/// A bind parameter sent in text format (tokio-postgres sends its own types
/// in binary), as libpq-based drivers and lib/pq send most values.
#[derive(Debug)]
pub struct TextParam(pub String);

impl tokio_postgres::types::ToSql for TextParam {
    fn to_sql(
        &self,
        _ty: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(tokio_postgres::types::IsNull::No)
    }

    fn accepts(_ty: &tokio_postgres::types::Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &tokio_postgres::types::Type) -> tokio_postgres::types::Format {
        tokio_postgres::types::Format::Text
    }

    tokio_postgres::types::to_sql_checked!();
}

/// An error's SQLSTATE and message (or its text when it is not a server
/// error), for failure reports.
pub fn describe(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} {}", db.code().code(), db.message()),
        None => err.to_string(),
    }
}

/// A throwaway self-signed certificate for localhost in `dir`, and the
/// `[general]` lines that give it to pgshard.
pub fn self_signed_tls(dir: &std::path::Path) -> String {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    format!(
        "tls_certificate = {:?}\ntls_private_key = {:?}",
        cert.display().to_string(),
        key.display().to_string()
    )
}
