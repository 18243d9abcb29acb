//! `pgshard-demo`: a local cluster of real Postgres shards behind pgshard.
//!
//! Starts (or restarts) two Postgres servers whose data lives in `.demo/` at the
//! repository root, creates the demo user and one database per shard, writes
//! `.demo/pgdog.toml` and `.demo/users.toml`, and serves them with pgshard on
//! 127.0.0.1:6432 until Ctrl-C, when the servers are stopped (data is kept).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use integration::{PasswordEncryption, PgServer, ServerOptions};

const SHARDS: usize = 2;
const FIRST_SERVER_PORT: u16 = 15432;
const PROXY_PORT: u16 = 6432;
const USER: &str = "pgshard";
const PASSWORD: &str = "pgshard";

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let root = repo_root()?;
    let demo = root.join(".demo");
    let mut servers = Vec::new();
    for shard in 0..SHARDS {
        let port = FIRST_SERVER_PORT + shard as u16;
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            bail!("port {port} is taken (another demo still running?); stop it and try again");
        }
        let server = PgServer::start_with(ServerOptions {
            data_dir: Some(demo.join(format!("shard_{shard}"))),
            port: Some(port),
            ..ServerOptions::default()
        })
        .with_context(|| format!("starting Postgres for shard {shard}"))?;
        prepare(&server, shard)?;
        servers.push(server);
    }

    let pgdog_toml = demo_config(&servers);
    let users_toml = format!(
        "[[users]]\nname = \"{USER}\"\ndatabase = \"pgshard\"\npassword = \"{PASSWORD}\"\n"
    );
    std::fs::write(demo.join("pgdog.toml"), &pgdog_toml)?;
    std::fs::write(demo.join("users.toml"), &users_toml)?;
    let config = Arc::new(router::config::Config::from_toml(&pgdog_toml, &users_toml)?);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", PROXY_PORT))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{PROXY_PORT}"))?;
        println!();
        println!("pgshard demo: {SHARDS} Postgres shards (ports {FIRST_SERVER_PORT}-{}) behind pgshard on 127.0.0.1:{PROXY_PORT}", FIRST_SERVER_PORT + SHARDS as u16 - 1);
        println!("config: {}/pgdog.toml and users.toml", demo.display());
        println!();
        println!("  connect:  PGPASSWORD={PASSWORD} psql -h 127.0.0.1 -p {PROXY_PORT} -U {USER} pgshard");
        println!("  try:      SELECT current_database(), shard FROM demo_shard;");
        println!("  admin:    PGPASSWORD=admin psql -h 127.0.0.1 -p {PROXY_PORT} -U admin admin -c 'SHOW POOLS'");
        println!("  bench:    PGPASSWORD={PASSWORD} pgbench -h 127.0.0.1 -p {PROXY_PORT} -U {USER} -i pgshard");
        println!();
        println!("pgshard pools server connections in transaction mode; every cluster");
        println!("statement goes to shard 0 until routing by key arrives with the router.");
        println!("Ctrl-C stops the demo.");
        let paths = Some((demo.join("pgdog.toml"), demo.join("users.toml")));
        let state = proxy::state::State::new(config, paths);
        proxy::server::run_with_state(listener, state, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
        anyhow::Ok(())
    })?;
    drop(servers);
    println!("demo stopped; data kept in {}", demo.display());
    Ok(())
}

/// Create the demo user, the shard's database and a table saying which shard it
/// is, unless an earlier run already did.
fn prepare(server: &PgServer, shard: usize) -> anyhow::Result<()> {
    let database = format!("shard_{shard}");
    let exists = server.psql(
        "postgres",
        &format!("SELECT 1 FROM pg_roles WHERE rolname = '{USER}'"),
    )?;
    if exists.is_empty() {
        server.create_user(USER, PASSWORD, PasswordEncryption::ScramSha256)?;
    }
    let exists = server.psql(
        "postgres",
        &format!("SELECT 1 FROM pg_database WHERE datname = '{database}'"),
    )?;
    if exists.is_empty() {
        server.create_database(&database, Some(USER))?;
    }
    server.psql(
        &database,
        &format!(
            "CREATE TABLE IF NOT EXISTS demo_shard (shard int NOT NULL);\
             TRUNCATE demo_shard; INSERT INTO demo_shard VALUES ({shard});\
             ALTER TABLE demo_shard OWNER TO {USER}"
        ),
    )?;
    Ok(())
}

fn demo_config(servers: &[PgServer]) -> String {
    let mut text = String::from(
        "# Written by pgshard-demo; see pgdog.toml.example for what each key means.\n\
         [general]\nhost = \"127.0.0.1\"\nport = 6432\nworkers = 2\n\
         default_pool_size = 10\npooler_mode = \"transaction\"\nshutdown_timeout = 5000\n\
         \n[admin]\npassword = \"admin\"\n",
    );
    for (shard, server) in servers.iter().enumerate() {
        text.push_str(&format!(
            "\n[[databases]]\nname = \"pgshard\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_{shard}\"\nshard = {shard}\n",
            server.port()
        ));
    }
    text
}

/// The workspace root: the demo keeps its data in `<root>/.demo` (git-ignored).
fn repo_root() -> anyhow::Result<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("integration crate has no parent directory")
}
