//! Helpers of the shard move tests (`shard_move_ops`): Postgres servers
//! with `wal_level = logical`, a table family `events_p<t>` (one table per
//! key) placed by logical shard, the `mover` user (a superuser login), and
//! what the tests read back (SHOW MOVES, SHOW PLACEMENT, what is left of a
//! move's stream, where a table's rows are); the pgshard that a crash test
//! stops mid-move ([`First`]: in this process, or its own for SIGKILL) and
//! a write held by the cutover when it stops ([`held_write`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use integration::child_proxy::free_port;
use integration::{ChildProxy, PgServer, ServerOptions, TestProxy};
use proxy::reshard::fault::Fault;
use router::hash::logical_shard;
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};
use tokio_postgres::Client;

use super::USERS;

pub const SHARD_COUNT: usize = 8;
pub const TABLES: i64 = 16;

pub fn family(placement: &str) -> String {
    format!(
        "[[sharded_tables]]\ndatabase = \"prod\"\nname_prefix = \"events_p\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\nshard_count = {SHARD_COUNT}\n{placement}"
    )
}

pub fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"mover\"\ndatabase = \"prod\"\npassword = \"mover-pw\"\n\
         server_user = \"postgres\"\n"
    )
}

pub fn logical_servers(n: usize) -> Vec<PgServer> {
    let settings = [
        ("wal_level", "logical"),
        ("max_replication_slots", "8"),
        ("max_wal_senders", "8"),
        ("max_logical_replication_workers", "4"),
        ("max_worker_processes", "16"),
    ];
    let options = ServerOptions {
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ServerOptions::default()
    };
    super::servers_with(n, &options)
}

pub fn shard_of(table: i64, count: usize) -> usize {
    let keys = KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: count,
        },
        placement: vec![0; count],
        moving: None,
    };
    logical_shard(&keys, &Key::Int(table)).unwrap()
}

/// `events_p<t>` for `t < tables`, each on the database `placement` gives
/// its logical shard, with 100 rows.
pub fn create_tables(servers: &[PgServer], tables: i64, count: usize, placement: &[usize]) {
    for t in 0..tables {
        let database = placement[shard_of(t, count)];
        servers[database]
            .psql(
                &format!("shard_{database}"),
                &format!(
                    "SET ROLE app; CREATE TABLE events_p{t} (id bigserial PRIMARY KEY, k bigint NOT NULL); \
                     INSERT INTO events_p{t} (k) SELECT g FROM generate_series(1, 100) g"
                ),
            )
            .unwrap();
    }
}

pub async fn superuser(server: &PgServer, i: usize) -> Client {
    super::connect_str(&server.conninfo("postgres", None, &format!("shard_{i}")))
        .await
        .unwrap()
}

pub async fn count(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

pub async fn admin(proxy: &TestProxy) -> Client {
    super::connect(proxy.port(), "admin", "admin-pw", "admin")
        .await
        .unwrap()
}

pub async fn app(proxy: &TestProxy) -> Client {
    super::connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// SHOW MOVES's row of move `id`, once `done(step)` holds (at most 90 s).
pub async fn wait_move(
    admin: &Client,
    id: &str,
    done: impl Fn(&str) -> bool,
) -> HashMap<String, String> {
    let begun = Instant::now();
    loop {
        let rows = super::rows(admin, "SHOW MOVES").await;
        if let Some(row) = rows.into_iter().find(|r| r["id"] == id) {
            if done(&row["step"]) {
                return row;
            }
            assert!(begun.elapsed() < Duration::from_secs(90), "{row:?}");
        }
        assert!(begun.elapsed() < Duration::from_secs(90), "no move {id}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// SHOW MOVES's row of move `id` once it is parked at step `parked` (a
/// move shows `copy` before its copy begins: parked mid copy, it has
/// copied rows).
pub async fn wait_parked(admin: &Client, id: &str, parked: &str) -> HashMap<String, String> {
    let begun = Instant::now();
    loop {
        let row = wait_move(admin, id, |s| s == parked).await;
        if parked != "copy" || row["rows_copied"] != "0" {
            return row;
        }
        assert!(begun.elapsed() < Duration::from_secs(90), "{row:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SHOW PLACEMENT: (placed_on, from) per logical shard.
pub async fn placement(admin: &Client) -> Vec<(usize, String)> {
    super::rows(admin, "SHOW PLACEMENT")
        .await
        .into_iter()
        .map(|r| (r["placed_on"].parse().unwrap(), r["from"].clone()))
        .collect()
}

/// Nothing of any move's stream is left on `a` and `b`.
pub async fn no_stream_left(a: &Client, b: &Client) {
    for client in [a, b] {
        assert_eq!(
            count(client, "SELECT count(*) FROM pg_replication_slots").await,
            0
        );
        assert_eq!(
            count(client, "SELECT count(*) FROM pg_publication").await,
            0
        );
        assert_eq!(
            count(client, "SELECT count(*) FROM pg_subscription").await,
            0
        );
    }
}

/// Rows of `events_p<t>` on `client` (-1 when the table is not there).
pub async fn rows_of(client: &Client, t: i64) -> i64 {
    let there = count(
        client,
        &format!("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 'events_p{t}'"),
    )
    .await;
    if there == 0 {
        return -1;
    }
    count(client, &format!("SELECT count(*) FROM events_p{t}")).await
}

/// Start pgshard on `config`, with short timings.
pub fn start(config: &str) -> TestProxy {
    let proxy = TestProxy::start(config, &users()).unwrap();
    let moves = &proxy.state().moves;
    moves.set_cleanup_delay(Duration::from_millis(300));
    moves.set_poll_interval(Duration::from_millis(100));
    proxy
}

pub fn default_placement() -> Vec<usize> {
    (0..SHARD_COUNT).map(|s| s % 2).collect()
}

/// A logical shard on database 0 holding at least one table, and its
/// tables.
pub fn moving_shard() -> (usize, Vec<i64>) {
    let shard = (0..SHARD_COUNT)
        .filter(|s| s % 2 == 0)
        .find(|&s| (0..TABLES).any(|t| shard_of(t, SHARD_COUNT) == s))
        .unwrap();
    let tables = (0..TABLES)
        .filter(|&t| shard_of(t, SHARD_COUNT) == shard)
        .collect();
    (shard, tables)
}

/// The pgshard that runs a move and is stopped mid-way: in this process
/// (stopped as by a crash: every task dropped), or in its own (SIGKILL).
pub enum First {
    InProcess(TestProxy),
    Child(ChildProxy),
}

impl First {
    /// pgshard on `config` with moves parked at `fault` (in its own
    /// process with `sigkill`), and the port it serves on.
    pub async fn start(config: &str, fault: Fault, sigkill: bool) -> (First, u16) {
        if !sigkill {
            let proxy = start(config);
            proxy.state().moves.inject(fault);
            let port = proxy.port();
            return (First::InProcess(proxy), port);
        }
        let port = free_port().unwrap();
        let config = config.replacen("[general]\n", &format!("[general]\nport = {port}\n"), 1);
        let binary = std::path::Path::new(env!("CARGO_BIN_EXE_pgshard-child"));
        let child = ChildProxy::start(binary, &config, &users(), Some(fault.name())).unwrap();
        let begun = Instant::now();
        while super::connect(port, "admin", "admin-pw", "admin")
            .await
            .is_err()
        {
            assert!(
                begun.elapsed() < Duration::from_secs(20),
                "pgshard-child serves"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (First::Child(child), port)
    }

    /// Stop it at once: crashed in this process, or SIGKILL.
    pub fn stop(self) {
        match self {
            First::InProcess(proxy) => proxy.crash(),
            First::Child(child) => child.kill(),
        }
    }
}

/// Send `sql` on `client` (its own task) and check that it is held: still
/// unanswered half a second later.
pub async fn held_write(
    client: Client,
    sql: String,
) -> tokio::task::JoinHandle<Result<(), tokio_postgres::Error>> {
    let write = tokio::spawn(async move { client.simple_query(&sql).await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !write.is_finished(),
        "the write waits for the cutover's hold"
    );
    write
}

/// The held write ended when pgshard died without running: its
/// connection closed (SIGKILL), or 57P01 (stopped in this process: the
/// drain's shutdown lets held statements go with that error).
pub async fn never_answered(write: tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>) {
    let err = write.await.unwrap().unwrap_err();
    match err.as_db_error() {
        Some(db) => {
            assert_eq!(db.code().code(), "57P01", "{err:?}");
            assert!(db.message().contains("nothing ran"), "{err:?}");
            println!("the held write got: 57P01 {}", db.message());
        }
        None => println!("the held write got: {err}"),
    }
}
