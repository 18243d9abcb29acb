//! `pgshard-demo`: a local cluster of real Postgres shards behind pgshard.
//!
//! Starts (or restarts) two Postgres servers whose data lives in `.demo/` at the
//! repository root, creates the demo user and one database per shard, with a
//! table `orders` sharded by `tenant_id` (each shard holds only its own hash
//! partition, so a row routed to the wrong shard is refused), writes
//! `.demo/pgdog.toml`, `.demo/users.toml` and a pgbench script for `orders`,
//! and serves them with pgshard on 127.0.0.1:6432 until Ctrl-C, when the
//! servers are stopped (data is kept).
//!
//! Two clusters: `pgshard` (both shards, `orders` sharded) and `pgbench`
//! (one unsharded database on the first server), where pgbench's own tables
//! work as on a single Postgres.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use integration::{PasswordEncryption, PgServer, ServerOptions};

const SHARDS: usize = 2;
const FIRST_SERVER_PORT: u16 = 15432;
const PROXY_PORT: u16 = 6432;
/// Prometheus / OpenMetrics (`openmetrics_port`): not 9090, Prometheus's own.
const METRICS_PORT: u16 = 9930;
const USER: &str = "pgshard";
const PASSWORD: &str = "pgshard";
/// The sharded cluster clients connect to.
const SHARDED: &str = "pgshard";
/// An unsharded cluster (one database on the first server) for pgbench's
/// own tables: `pgbench -i` inserts rows without a sharding key, which a
/// sharded cluster refuses.
const PGBENCH: &str = "pgbench";

/// A pgbench script for the sharded cluster: each transaction is one tenant's
/// insert and read, routed to that tenant's shard.
const ORDERS_BENCH: &str = "\\set tenant random(1, 100000)\n\
BEGIN;\n\
INSERT INTO orders (tenant_id, item) VALUES (:tenant, 'pgbench');\n\
SELECT id, item FROM orders WHERE tenant_id = :tenant;\n\
END;\n";

fn main() -> anyhow::Result<()> {
    proxy::logging::init(router::config::LogFormat::Text).context("cannot set up logging")?;
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

    let pgdog_toml = demo_config(&servers, &demo.join("2pc"));
    let users_toml = [SHARDED, PGBENCH]
        .iter()
        .map(|database| {
            format!(
                "[[users]]\nname = \"{USER}\"\ndatabase = \"{database}\"\npassword = \"{PASSWORD}\"\n"
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(demo.join("pgdog.toml"), &pgdog_toml)?;
    std::fs::write(demo.join("users.toml"), &users_toml)?;
    let bench_script = demo.join("orders.sql");
    std::fs::write(&bench_script, ORDERS_BENCH)?;
    let config = Arc::new(router::config::Config::from_toml(&pgdog_toml, &users_toml)?);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", PROXY_PORT))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{PROXY_PORT}"))?;
        print_hints(&demo, &bench_script);
        let paths = Some((demo.join("pgdog.toml"), demo.join("users.toml")));
        let state = proxy::state::State::new(config, paths);
        proxy::listener::run_with_state(listener, state, async {
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
    // `orders` is hash-partitioned on every shard with only this shard's
    // partition: exactly the rows pgshard's `postgres` hasher sends here.
    server.psql(
        &database,
        &format!(
            "SET ROLE {USER}; \
             CREATE TABLE IF NOT EXISTS orders (tenant_id bigint NOT NULL, id bigserial, \
               item text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), \
               PRIMARY KEY (tenant_id, id)) PARTITION BY HASH (tenant_id); \
             CREATE TABLE IF NOT EXISTS orders_shard_{shard} PARTITION OF orders \
               FOR VALUES WITH (MODULUS {SHARDS}, REMAINDER {shard})"
        ),
    )?;
    if shard == 0 {
        let exists = server.psql(
            "postgres",
            &format!("SELECT 1 FROM pg_database WHERE datname = '{PGBENCH}'"),
        )?;
        if exists.is_empty() {
            server.create_database(PGBENCH, Some(USER))?;
        }
    }
    Ok(())
}

/// What to try, printed once pgshard listens.
fn print_hints(demo: &Path, bench_script: &Path) {
    let last_server = FIRST_SERVER_PORT + SHARDS as u16 - 1;
    let psql = format!("PGPASSWORD={PASSWORD} psql -h 127.0.0.1 -p {PROXY_PORT} -U {USER}");
    let pgbench = format!("PGPASSWORD={PASSWORD} pgbench -h 127.0.0.1 -p {PROXY_PORT} -U {USER}");
    println!();
    println!("pgshard demo: {SHARDS} Postgres shards (ports {FIRST_SERVER_PORT}-{last_server}) behind pgshard on 127.0.0.1:{PROXY_PORT}");
    println!("config: {}/pgdog.toml and users.toml", demo.display());
    println!();
    println!("  connect:  {psql} {SHARDED}");
    println!();
    println!("  orders is sharded by tenant_id (bigint, postgres hasher); a keyed statement goes to one shard:");
    println!(
        "    {psql} {SHARDED} -c \"INSERT INTO orders (tenant_id, item) VALUES (42, 'book')\""
    );
    println!("    {psql} {SHARDED} -c \"SELECT * FROM orders WHERE tenant_id = 42\"");
    println!("  a keyless read runs on every shard (rows concatenated):");
    println!("    {psql} {SHARDED} -c \"SELECT * FROM orders\"");
    println!("  where did the rows go? read one shard with a comment (or directly on its server):");
    for shard in 0..SHARDS {
        println!("    {psql} {SHARDED} -c \"/* pgdog_shard: {shard} */ SELECT * FROM orders\"");
    }
    println!(
        "    PGPASSWORD={PASSWORD} psql -h 127.0.0.1 -p {FIRST_SERVER_PORT} -U {USER} shard_0 -c \"SELECT * FROM orders\""
    );
    println!(
        "  tables the config does not name are omnisharded (a copy on every shard): a read goes to"
    );
    println!("  one shard, in turn; demo_shard says which (run it twice):  SELECT current_database(), shard FROM demo_shard;");
    println!("    or pin a session:  SET pgdog.shard = 1;   or pick by key:  SET pgdog.sharding_key = '42';");
    println!();
    println!("  admin:    PGPASSWORD=admin psql -h 127.0.0.1 -p {PROXY_PORT} -U admin admin -c 'SHOW POOLS'");
    println!("            (also SHOW HELP, SHOW QUERY_CACHE, SHOW STATS, SHOW CLIENTS, RECONNECT, PAUSE {SHARDED})");
    println!(
        "  metrics:  curl http://127.0.0.1:{METRICS_PORT}/metrics  (Prometheus / OpenMetrics text)"
    );
    println!("  bench (sharded orders, keyed transactions):");
    println!(
        "    {pgbench} -n -f {} -c 8 -j 2 -T 10 {SHARDED}",
        bench_script.display()
    );
    println!("  pgbench's own tables, sharded (transactions span shards: two-phase commit):");
    println!("    {pgbench} -i {SHARDED}");
    println!("    {pgbench} -c 8 -j 2 -T 10 {SHARDED}");
    println!("  and unsharded, in the cluster {PGBENCH} on shard 0's server:");
    println!("    {pgbench} -i {PGBENCH}");
    println!("    {pgbench} -c 8 -j 2 -T 10 -M prepared {PGBENCH}");
    println!();
    println!("pgshard pools server connections in transaction mode and routes each");
    println!("statement by its sharding key. Ctrl-C stops the demo.");
}

fn demo_config(servers: &[PgServer], wal_dir: &Path) -> String {
    let mut text = format!(
        "# Written by pgshard-demo; see pgdog.toml.example for what each key means.\n\
         [general]\nhost = \"127.0.0.1\"\nport = 6432\nworkers = 2\n\
         default_pool_size = 10\npooler_mode = \"transaction\"\nshutdown_timeout = 5000\n\
         openmetrics_port = {METRICS_PORT}\nopenmetrics_namespace = \"pgshard\"\n\
         two_phase_commit = true\ntwo_phase_commit_wal_dir = \"{}\"\n\
         \n[admin]\npassword = \"admin\"\n",
        wal_dir.display()
    );
    for (shard, server) in servers.iter().enumerate() {
        text.push_str(&format!(
            "\n[[databases]]\nname = \"{SHARDED}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_{shard}\"\nshard = {shard}\n",
            server.port()
        ));
    }
    if let Some(first) = servers.first() {
        text.push_str(&format!(
            "\n[[databases]]\nname = \"{PGBENCH}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"{PGBENCH}\"\nshard = 0\n",
            first.port()
        ));
    }
    text.push_str(&format!(
        "\n# orders rows live on the shard their tenant_id hashes to (Postgres's\n\
         # PARTITION BY HASH function: each shard's orders table holds exactly the\n\
         # hash partition MODULUS {SHARDS}, REMAINDER <shard>).\n\
         [[sharded_tables]]\ndatabase = \"{SHARDED}\"\nname = \"orders\"\ncolumn = \"tenant_id\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\n"
    ));
    text.push_str("\n# pgbench's tables, each by its first key: `pgbench -i` and its TPC-B-like\n# script work on the sharded cluster (transactions span shards).\n");
    for (table, column) in [
        ("pgbench_accounts", "aid"),
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_history", "aid"),
    ] {
        text.push_str(&format!(
            "[[sharded_tables]]\ndatabase = \"{SHARDED}\"\nname = \"{table}\"\ncolumn = \"{column}\"\ndata_type = \"integer\"\n"
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
