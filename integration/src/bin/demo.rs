//! `pgshard-demo`: a local cluster of real Postgres shards behind pgshard.
//!
//! Starts (or restarts) two Postgres servers (`wal_level = logical`) whose
//! data lives in `.demo/` at the repository root, creates the demo user and
//! one database per shard, with a table `orders` sharded by `tenant_id` over
//! 8 logical shards (`shard_count = 8`, placed 4 per database: the way to
//! make a cluster that can grow). Each database's `orders` is partitioned by
//! hash with one partition per logical shard placed there, so a row routed to
//! the wrong database is refused. Writes `.demo/pgdog.toml`,
//! `.demo/users.toml` and a pgbench script for `orders`, and serves them with
//! pgshard on 127.0.0.1:6432 until Ctrl-C, when the servers are stopped (data
//! is kept).
//!
//! Once pgshard listens, the demo moves a logical shard online
//! (`demo/show_move.rs`): it writes a keyed row, asks the admin console to
//! `MOVE SHARD s TO n OF orders`, prints SHOW MOVES until the move is done and
//! SHOW PLACEMENT, and reads the row again, now answered by the other
//! database. Each run moves the shard to the database it is not on.
//!
//! Two clusters: `pgshard` (both shards, `orders` sharded) and `pgbench`
//! (one unsharded database on the first server), where pgbench's own tables
//! work as on a single Postgres.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use integration::{PasswordEncryption, PgServer, ServerOptions};

#[path = "demo/show_move.rs"]
mod show_move;

const SHARDS: usize = 2;
/// `orders`'s logical shards: many more than databases, so that shards can
/// move when a database is added (docs/resharding.md).
const SHARD_COUNT: usize = 8;
/// The superuser login the mover uses (`CREATE SUBSCRIPTION` needs one);
/// the servers trust `postgres` on 127.0.0.1.
const MOVER: &str = "mover";
/// The demo's ports: the first server's (15432, the next server's after
/// it), pgshard's (6432) and Prometheus / OpenMetrics (`openmetrics_port`,
/// 9930: not 9090, Prometheus's own). `PGSHARD_DEMO_SERVER_PORT`,
/// `PGSHARD_DEMO_PORT` and `PGSHARD_DEMO_METRICS_PORT` change them (the
/// demo's test runs it on free ports), `PGSHARD_DEMO_DIR` the data dir.
#[derive(Clone, Copy)]
struct Ports {
    server: u16,
    proxy: u16,
    metrics: u16,
}

fn ports() -> Ports {
    let port = |name: &str, default: u16| {
        std::env::var(name)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(default)
    };
    Ports {
        server: port("PGSHARD_DEMO_SERVER_PORT", 15432),
        proxy: port("PGSHARD_DEMO_PORT", 6432),
        metrics: port("PGSHARD_DEMO_METRICS_PORT", 9930),
    }
}
/// Not "pgshard": a role named like pgshard's own schema on the shards
/// would find that schema first in its search_path (`"$user", public`).
const USER: &str = "app";
const PASSWORD: &str = "app";
/// The demo's login before it was renamed: its objects go to [`USER`].
const OLD_USER: &str = "pgshard";
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
    let demo =
        std::env::var_os("PGSHARD_DEMO_DIR").map_or_else(|| root.join(".demo"), PathBuf::from);
    let Ports {
        server: first_server_port,
        proxy: proxy_port,
        ..
    } = ports();
    let mut servers = Vec::new();
    for shard in 0..SHARDS {
        let port = first_server_port + shard as u16;
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            bail!("port {port} is taken (another demo still running?); stop it and try again");
        }
        let settings = [
            ("wal_level", "logical"),
            ("max_replication_slots", "8"),
            ("max_wal_senders", "8"),
            ("max_logical_replication_workers", "4"),
            ("max_worker_processes", "16"),
        ];
        let server = PgServer::start_with(ServerOptions {
            data_dir: Some(demo.join(format!("shard_{shard}"))),
            port: Some(port),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
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
        .chain(std::iter::once(format!(
            "[[users]]\nname = \"{MOVER}\"\ndatabase = \"{SHARDED}\"\npassword = \"{MOVER}\"\n\
             server_user = \"postgres\"\n"
        )))
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
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", proxy_port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{proxy_port}"))?;
        print_hints(&demo, &bench_script);
        let paths = Some((demo.join("pgdog.toml"), demo.join("users.toml")));
        let state = proxy::state::State::new(config, paths);
        // The source's old partition goes soon after the switch (60 s by
        // default), so that the demo's move is done in seconds.
        state
            .moves
            .set_cleanup_delay(std::time::Duration::from_secs(3));
        tokio::spawn(async move {
            if let Err(error) = show_move::run(proxy_port, USER, PASSWORD).await {
                eprintln!("the demo's shard move: {error:#}");
            }
        });
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
    adopt_old_user(server, &database)?;
    server.psql(
        &database,
        &format!(
            "CREATE TABLE IF NOT EXISTS demo_shard (shard int NOT NULL);\
             TRUNCATE demo_shard; INSERT INTO demo_shard VALUES ({shard});\
             ALTER TABLE demo_shard OWNER TO {USER}"
        ),
    )?;
    create_orders(server, &database, shard)?;
    if shard == 0 {
        let exists = server.psql(
            "postgres",
            &format!("SELECT 1 FROM pg_database WHERE datname = '{PGBENCH}'"),
        )?;
        if exists.is_empty() {
            server.create_database(PGBENCH, Some(USER))?;
        }
        adopt_old_user(server, PGBENCH)?;
    }
    Ok(())
}

/// Data kept by a demo of before the rename: what its login owned in
/// `database` (the database, `orders`, pgbench's tables) goes to [`USER`].
fn adopt_old_user(server: &PgServer, database: &str) -> anyhow::Result<()> {
    let old = server.psql(
        "postgres",
        &format!("SELECT 1 FROM pg_roles WHERE rolname = '{OLD_USER}'"),
    )?;
    if !old.trim().is_empty() {
        server.psql(database, &format!("REASSIGN OWNED BY {OLD_USER} TO {USER}"))?;
    }
    Ok(())
}

/// `orders`, unless an earlier run made it (moves may have changed which
/// partitions are here since): partitioned by hash with one partition per
/// logical shard placed on this database, exactly the rows pgshard's
/// `postgres` hasher sends here. Ids are stepped per database (1, 3, 5, ...
/// on the first, 2, 4, 6, ... on the second), so moved rows never meet an
/// id of the target's. A table of the demo's first layout (one partition
/// per database) is dropped first.
fn create_orders(server: &PgServer, database: &str, shard: usize) -> anyhow::Result<()> {
    let old = server.psql(
        database,
        "SELECT 1 FROM pg_class WHERE relname LIKE 'orders\\_shard\\_%'",
    )?;
    if !old.is_empty() {
        server.psql(database, "DROP TABLE orders CASCADE")?;
    }
    let exists = server.psql(database, "SELECT to_regclass('orders')")?;
    if !exists.trim().is_empty() {
        return Ok(());
    }
    let partitions: String = (0..SHARD_COUNT)
        .filter(|s| s % SHARDS == shard)
        .map(|s| {
            format!(
                "CREATE TABLE orders_p{s} PARTITION OF orders \
                 FOR VALUES WITH (MODULUS {SHARD_COUNT}, REMAINDER {s}); "
            )
        })
        .collect();
    server.psql(
        database,
        &format!(
            "SET ROLE {USER}; \
             CREATE TABLE orders (tenant_id bigint NOT NULL, id bigserial, \
               item text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), \
               PRIMARY KEY (tenant_id, id)) PARTITION BY HASH (tenant_id); \
             ALTER SEQUENCE orders_id_seq INCREMENT BY {SHARDS} RESTART WITH {}; {partitions}",
            shard + 1
        ),
    )?;
    Ok(())
}

/// What to try, printed once pgshard listens.
fn print_hints(demo: &Path, bench_script: &Path) {
    let Ports {
        server: first_server_port,
        proxy: proxy_port,
        metrics: metrics_port,
    } = ports();
    let last_server = first_server_port + SHARDS as u16 - 1;
    let psql = format!("PGPASSWORD={PASSWORD} psql -h 127.0.0.1 -p {proxy_port} -U {USER}");
    let pgbench = format!("PGPASSWORD={PASSWORD} pgbench -h 127.0.0.1 -p {proxy_port} -U {USER}");
    println!();
    println!("pgshard demo: {SHARDS} Postgres shards (ports {first_server_port}-{last_server}) behind pgshard on 127.0.0.1:{proxy_port}");
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
        "    PGPASSWORD={PASSWORD} psql -h 127.0.0.1 -p {first_server_port} -U {USER} shard_0 -c \"SELECT * FROM orders\""
    );
    println!(
        "  tables the config does not name are omnisharded (a copy on every shard): a read goes to"
    );
    println!("  one shard, in turn; demo_shard says which (run it twice):  SELECT current_database(), shard FROM demo_shard;");
    println!("    or pin a session:  SET pgdog.shard = 1;   or pick by key:  SET pgdog.sharding_key = '42';");
    println!();
    println!("  admin:    PGPASSWORD=admin psql -h 127.0.0.1 -p {proxy_port} -U admin admin -c 'SHOW POOLS'");
    println!("            (also SHOW HELP, SHOW QUERY_CACHE, SHOW STATS, SHOW CLIENTS, RECONNECT, PAUSE {SHARDED})");
    println!("            moves: SHOW PLACEMENT, MOVE SHARD <s> TO <database> OF orders, SHOW MOVES, CANCEL MOVE");
    println!(
        "  metrics:  curl http://127.0.0.1:{metrics_port}/metrics  (Prometheus / OpenMetrics text)"
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
    let Ports {
        proxy: proxy_port,
        metrics: metrics_port,
        ..
    } = ports();
    let mut text = format!(
        "# Written by pgshard-demo; see pgdog.toml.example for what each key means.\n\
         [general]\nhost = \"127.0.0.1\"\nport = {proxy_port}\nworkers = 2\n\
         default_pool_size = 10\npooler_mode = \"transaction\"\nshutdown_timeout = 5000\n\
         openmetrics_port = {metrics_port}\nopenmetrics_namespace = \"pgshard\"\n\
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
    let placement: Vec<usize> = (0..SHARD_COUNT).map(|s| s % SHARDS).collect();
    text.push_str(&format!(
        "\n# orders rows live in the logical shard their tenant_id hashes to (Postgres's\n\
         # PARTITION BY HASH function), one of {SHARD_COUNT}, placed on the databases by\n\
         # `placement`: each database's orders table holds the partitions MODULUS\n\
         # {SHARD_COUNT}, REMAINDER <shard> of the logical shards placed there. A move\n\
         # (MOVE SHARD, REBALANCE) carries a partition to another database.\n\
         [[sharded_tables]]\ndatabase = \"{SHARDED}\"\nname = \"orders\"\ncolumn = \"tenant_id\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\nshard_count = {SHARD_COUNT}\n\
         placement = {placement:?}\n"
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
