//! The operator's side of shard moves (issue 33, step 9), against real
//! Postgres 15 servers with `wal_level = logical` and a table family:
//! - a moved shard stays moved: across RELOAD, in a second pgshard that
//!   did not run the move (it polls the databases), in an instance started
//!   afterwards, and in `pgdog.toml` with `cutover_save_config`; SHOW
//!   PLACEMENT says which move put it there;
//! - CANCEL MOVE rolls a move back before its switch and is refused after;
//! - a move interrupted by a crash of pgshard (after the slot, mid
//!   catch-up, after the switch) is rolled back or finished by the next
//!   instance: no row lost or doubled, no slot, publication or
//!   subscription left;
//! - REBALANCE after a third database is added moves 4 of 12 logical
//!   shards to it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::USERS;
use integration::{PgServer, ServerOptions, TestProxy};
use proxy::reshard::fault::Fault;
use router::hash::logical_shard;
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};
use tokio_postgres::Client;

const SHARD_COUNT: usize = 8;
const TABLES: i64 = 16;

fn family(placement: &str) -> String {
    format!(
        "[[sharded_tables]]\ndatabase = \"prod\"\nname_prefix = \"events_p\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\nshard_count = {SHARD_COUNT}\n{placement}"
    )
}

fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"mover\"\ndatabase = \"prod\"\npassword = \"mover-pw\"\n\
         server_user = \"postgres\"\n"
    )
}

fn logical_servers(n: usize) -> Vec<PgServer> {
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
    common::servers_with(n, &options)
}

fn shard_of(table: i64, count: usize) -> usize {
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
fn create_tables(servers: &[PgServer], tables: i64, count: usize, placement: &[usize]) {
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

async fn superuser(server: &PgServer, i: usize) -> Client {
    common::connect_str(&server.conninfo("postgres", None, &format!("shard_{i}")))
        .await
        .unwrap()
}

async fn count(client: &Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

async fn admin(proxy: &TestProxy) -> Client {
    common::connect(proxy.port(), "admin", "admin-pw", "admin")
        .await
        .unwrap()
}

async fn app(proxy: &TestProxy) -> Client {
    common::connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// SHOW MOVES's row of move `id`, once `done(step)` holds (at most 90 s).
async fn wait_move(
    admin: &Client,
    id: &str,
    done: impl Fn(&str) -> bool,
) -> HashMap<String, String> {
    let begun = Instant::now();
    loop {
        let rows = common::rows(admin, "SHOW MOVES").await;
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

/// SHOW PLACEMENT: (placed_on, from) per logical shard.
async fn placement(admin: &Client) -> Vec<(usize, String)> {
    common::rows(admin, "SHOW PLACEMENT")
        .await
        .into_iter()
        .map(|r| (r["placed_on"].parse().unwrap(), r["from"].clone()))
        .collect()
}

/// Nothing of any move's stream is left on `a` and `b`.
async fn no_stream_left(a: &Client, b: &Client) {
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
async fn rows_of(client: &Client, t: i64) -> i64 {
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
fn start(config: &str) -> TestProxy {
    let proxy = TestProxy::start(config, &users()).unwrap();
    let moves = &proxy.state().moves;
    moves.set_cleanup_delay(Duration::from_millis(300));
    moves.set_poll_interval(Duration::from_millis(100));
    proxy
}

fn default_placement() -> Vec<usize> {
    (0..SHARD_COUNT).map(|s| s % 2).collect()
}

/// A logical shard on database 0 holding at least one table, and its
/// tables.
fn moving_shard() -> (usize, Vec<i64>) {
    let shard = (0..SHARD_COUNT)
        .filter(|s| s % 2 == 0)
        .find(|&s| (0..TABLES).any(|t| shard_of(t, SHARD_COUNT) == s))
        .unwrap();
    let tables = (0..TABLES)
        .filter(|&t| shard_of(t, SHARD_COUNT) == shard)
        .collect();
    (shard, tables)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_moved_shard_stays_moved_across_reload_restart_and_instances() {
    let servers = logical_servers(2);
    create_tables(&servers, TABLES, SHARD_COUNT, &default_placement());
    let (shard, tables) = moving_shard();
    let config = common::sharded_config(&servers, "cutover_save_config = true", &family(""));
    let first = start(&config);
    let second = start(&config);
    let (admin1, admin2) = (admin(&first).await, admin(&second).await);
    let id = common::rows(&admin1, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    let status = wait_move(&admin1, &id, |s| s == "done" || s == "failed").await;
    assert_eq!(status["step"], "done", "{status:?}");
    let from = format!("move {id}");
    assert_eq!(placement(&admin1).await[shard], (1, from.clone()));
    // The second instance learns it from the databases within a poll.
    let begun = Instant::now();
    while placement(&admin2).await[shard].0 != 1 {
        assert!(
            begun.elapsed() < Duration::from_secs(10),
            "the second instance polls"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(placement(&admin2).await[shard], (1, from.clone()));
    let t = tables[0];
    let insert = format!("INSERT INTO events_p{t} (k) VALUES (-1)");
    app(&second).await.simple_query(&insert).await.unwrap();
    let b = superuser(&servers[1], 1).await;
    assert_eq!(rows_of(&b, t).await, 101);
    // cutover_save_config wrote the placement, and kept the old file.
    let (pgdog, _) = first.state().config_paths.clone().unwrap();
    let written = std::fs::read_to_string(&pgdog).unwrap();
    let mut want = default_placement();
    want[shard] = 1;
    let line = format!("placement = {want:?}");
    assert!(written.contains(&line), "{written}");
    assert_eq!(
        std::fs::read_to_string(pgdog.with_file_name("pgdog.bak.toml")).unwrap(),
        config
    );
    // RELOAD of a file without the placement keeps the shard where it is.
    first.rewrite_config(&config, &users()).unwrap();
    common::rows(&admin1, "RELOAD").await;
    assert_eq!(placement(&admin1).await[shard], (1, from.clone()));
    app(&first).await.simple_query(&insert).await.unwrap();
    assert_eq!(rows_of(&b, t).await, 102);
    // An instance started afterwards reads it before serving.
    drop((admin1, admin2));
    drop((first, second));
    let third = start(&config);
    let admin3 = admin(&third).await;
    assert_eq!(placement(&admin3).await[shard], (1, from));
    let other = (0..SHARD_COUNT).find(|&s| s != shard).unwrap();
    assert_eq!(placement(&admin3).await[other].1, "file");
    app(&third).await.simple_query(&insert).await.unwrap();
    assert_eq!(rows_of(&b, t).await, 103);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_rolls_back_before_the_switch_and_is_refused_after() {
    let servers = logical_servers(2);
    create_tables(&servers, TABLES, SHARD_COUNT, &default_placement());
    let (shard, tables) = moving_shard();
    let config = common::sharded_config(&servers, "", &family(""));
    let proxy = start(&config);
    let admin = admin(&proxy).await;
    proxy.state().moves.inject(Fault::MidCatchup);
    let id = common::rows(&admin, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    wait_move(&admin, &id, |s| s == "catchup").await;
    let cancelled = common::rows(&admin, "CANCEL MOVE").await;
    assert_eq!(cancelled[0]["id"], id);
    let status = wait_move(&admin, &id, |s| s == "failed").await;
    assert!(
        status["error"].contains("cancelled by CANCEL MOVE"),
        "{status:?}"
    );
    let (a, b) = (
        superuser(&servers[0], 0).await,
        superuser(&servers[1], 1).await,
    );
    no_stream_left(&a, &b).await;
    for &t in &tables {
        assert_eq!(rows_of(&a, t).await, 100, "events_p{t} stays on database 0");
        assert_eq!(rows_of(&b, t).await, -1, "events_p{t} is not on database 1");
    }
    let err = admin
        .simple_query(&format!("CANCEL MOVE {id}"))
        .await
        .unwrap_err();
    assert!(
        err.as_db_error()
            .unwrap()
            .message()
            .contains("has ended (failed)"),
        "{err:?}"
    );
    let err = admin.simple_query("CANCEL MOVE").await.unwrap_err();
    assert_eq!(err.as_db_error().unwrap().message(), "no move is under way");
    // After its switch, a move can only finish.
    proxy.state().moves.clear_fault(Fault::MidCatchup);
    proxy.state().moves.inject(Fault::AfterSwitch);
    let id = common::rows(&admin, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    wait_move(&admin, &id, |s| s == "switched").await;
    let err = admin
        .simple_query(&format!("CANCEL MOVE {id}"))
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("55000"));
    assert!(
        err.as_db_error()
            .unwrap()
            .message()
            .ends_with("it can only finish"),
        "{err:?}"
    );
}

/// Crash pgshard with a move parked at `fault`; the next instance rolls
/// it back (or finishes it, after the switch).
async fn crash_at(fault: Fault, parked: &str) {
    let servers = logical_servers(2);
    create_tables(&servers, TABLES, SHARD_COUNT, &default_placement());
    let (shard, tables) = moving_shard();
    let config = common::sharded_config(&servers, "", &family(""));
    let proxy = start(&config);
    let admin1 = admin(&proxy).await;
    proxy.state().moves.inject(fault);
    let id = common::rows(&admin1, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    wait_move(&admin1, &id, |s| s == parked).await;
    // Writes acknowledged before the crash.
    let client = app(&proxy).await;
    for &t in &tables {
        let sql = format!("INSERT INTO events_p{t} (k) VALUES (-1), (-2)");
        client.simple_query(&sql).await.unwrap();
    }
    drop((client, admin1));
    proxy.crash();
    let next = start(&config);
    next.state().moves.set_lease(Duration::from_millis(300));
    let admin2 = admin(&next).await;
    let switched = fault == Fault::AfterSwitch;
    let status = wait_move(&admin2, &id, |s| s == "done" || s == "failed").await;
    let (a, b) = (
        superuser(&servers[0], 0).await,
        superuser(&servers[1], 1).await,
    );
    no_stream_left(&a, &b).await;
    let (home, away) = if switched { (&b, &a) } else { (&a, &b) };
    if switched {
        assert_eq!(status["step"], "done", "{status:?}");
    } else {
        assert_eq!(status["step"], "failed", "{status:?}");
        assert!(status["error"].contains("interrupted"), "{status:?}");
    }
    for &t in &tables {
        assert_eq!(rows_of(home, t).await, 102, "events_p{t}: every row, once");
        assert_eq!(rows_of(away, t).await, -1, "events_p{t} is on one database");
        let distinct = count(home, &format!("SELECT count(DISTINCT id) FROM events_p{t}")).await;
        assert_eq!(distinct, 102);
    }
    let moved = count(
        &a,
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'pgshard_moved'",
    )
    .await;
    assert_eq!(moved, 0);
    let owner = if switched { 1 } else { 0 };
    assert_eq!(placement(&admin2).await[shard].0, owner);
    // Routed where the rows are.
    let t = tables[0];
    let sql = format!("SELECT count(*) FROM events_p{t}");
    let through: i64 = app(&next).await.query_one(&sql, &[]).await.unwrap().get(0);
    assert_eq!(through, 102);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_slot_rolls_the_move_back() {
    crash_at(Fault::AfterSlot, "slot").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_mid_catch_up_rolls_the_move_back() {
    crash_at(Fault::MidCatchup, "catchup").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_switch_finishes_the_move() {
    crash_at(Fault::AfterSwitch, "switched").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rebalance_moves_four_of_twelve_shards_to_a_new_database() {
    const COUNT: usize = 12;
    let servers = logical_servers(3);
    let two: Vec<usize> = (0..COUNT).map(|s| s % 2).collect();
    create_tables(&servers[..2], 24, COUNT, &two);
    let explicit =
        family(&format!("placement = {two:?}\n")).replace("shard_count = 8", "shard_count = 12");
    let before = common::sharded_config(&servers[..2], "", &explicit);
    let proxy = start(&before);
    let admin = admin(&proxy).await;
    assert!(
        common::rows(&admin, "REBALANCE").await.is_empty(),
        "balanced already"
    );
    let after = common::sharded_config(&servers, "", &explicit);
    proxy.rewrite_config(&after, &users()).unwrap();
    common::rows(&admin, "RELOAD").await;
    let err = admin
        .simple_query("REBALANCE prod PARALLEL 2")
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"));
    let planned = common::rows(&admin, "REBALANCE prod").await;
    assert_eq!(planned.len(), 4, "{planned:?}");
    assert!(planned.iter().all(|m| m["target"] == "2"), "{planned:?}");
    for m in &planned {
        let status = wait_move(&admin, &m["id"], |s| s == "done" || s == "failed").await;
        assert_eq!(status["step"], "done", "{status:?}");
    }
    let placed = placement(&admin).await;
    for database in 0..3 {
        let held = placed.iter().filter(|(d, _)| *d == database).count();
        assert_eq!(held, 4, "database {database}: {placed:?}");
    }
    let c = superuser(&servers[2], 2).await;
    for t in (0..24).filter(|&t| placed[shard_of(t, COUNT)].0 == 2) {
        assert_eq!(rows_of(&c, t).await, 100, "events_p{t} on database 2");
    }
    assert!(common::rows(&admin, "REBALANCE").await.is_empty());
}
