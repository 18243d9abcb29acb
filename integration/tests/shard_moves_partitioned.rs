//! Moving a logical shard of a table partitioned by hash (issue 33, step
//! 7): `orders` is `PARTITION BY HASH (id)` on each of two real Postgres
//! 15 servers (`wal_level = logical`), with `shard_count = 4` logical
//! shards as partitions `MODULUS 4`, each database holding the partitions
//! of the shards placed on it. `MOVE SHARD` moves one shard's partition
//! from database 0 to 1 while clients insert, update and delete keyed rows
//! through pgshard the whole time: no write fails, none is lost, and
//! afterwards each row is in exactly one database, the one the new
//! placement names (the partition attached to database 1's parent, which
//! takes the shard's new rows). Between the switch and the cleanup a
//! stale write made directly on database 0's old partition is refused by
//! the fence (55000) and keyless statements are refused (0A000); after
//! the cleanup the old partition is gone (a stale INSERT there finds no
//! partition, 23514), keyless reads are served again and exact, and no
//! slot, publication or subscription is left. Database 1 has every
//! partition (`pgbench --partitions`' layout): its empty partition of the
//! moving shard is replaced. Also: one holding a row is refused, and the
//! failed move leaves nothing behind; a move whose cutover fails after the target's
//! partition was made is rolled back, leaving nothing behind either; a
//! partition moved there and back is served by database 0 again.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::moves::logical_servers;

mod shard_moves_partitioned {
    pub mod clients;
}

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Cluster, USERS};
use integration::{PgServer, TestProxy};
use router::hash::logical_shard;
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};
use shard_moves_partitioned::clients::{check_orders, writers, Log};

const SHARD_COUNT: usize = 4;
/// Orders made before the move: ids 1 to ORDERS.
const ORDERS: i64 = 2000;

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"orders\"
column = \"id\"
data_type = \"bigint\"
shard_count = 4
";

/// Database 1's partition of logical shard 2 in the layout with every
/// partition on every database (`pgbench --partitions`).
const EVERY: &str = "CREATE TABLE orders_two PARTITION OF orders \
                     FOR VALUES WITH (MODULUS 4, REMAINDER 2); ";

/// No table `orders_2` (the target's partition: not made, or dropped).
const GONE: &str = "SELECT count(*) FROM pg_class WHERE relname = 'orders_2'";

fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"mover\"\ndatabase = \"prod\"\npassword = \"mover-pw\"\n\
         server_user = \"postgres\"\n"
    )
}

fn shard_of(id: i64) -> usize {
    let keys = KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: SHARD_COUNT,
        },
        placement: (0..SHARD_COUNT).map(|s| s % 2).collect(),
        moving: None,
    };
    logical_shard(&keys, &Key::Int(id)).unwrap()
}

/// The database that holds `id` once `moving` is on database 1.
fn home(id: i64, moving: usize) -> usize {
    match shard_of(id) {
        s if s == moving => 1,
        s => s % 2,
    }
}

async fn superuser(server: &PgServer, database: &str) -> tokio_postgres::Client {
    common::connect_str(&server.conninfo("postgres", None, database))
        .await
        .unwrap()
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

/// Wait for the move's step to be one of `steps` (or failed).
async fn wait_step(admin: &tokio_postgres::Client, steps: &[&str]) -> BTreeMap<String, String> {
    let begun = Instant::now();
    loop {
        let rows = common::rows(admin, "SHOW MOVES").await;
        assert_eq!(rows.len(), 1, "{rows:?}");
        let status = rows[0].clone();
        if steps.contains(&status["step"].as_str()) || status["step"] == "failed" {
            return status.into_iter().collect();
        }
        assert!(begun.elapsed() < Duration::from_secs(120), "{status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two servers with `orders` partitioned by hash on both, each with the
/// partitions of its logical shards (and `extra` after on database 1),
/// `ORDERS` orders placed by their logical shard; pgshard over them.
fn start(general: &str, extra: &str) -> Cluster {
    let servers = logical_servers(2);
    for (database, server) in servers.iter().enumerate() {
        let partitions: String = (0..SHARD_COUNT)
            .filter(|s| s % 2 == database)
            .map(|s| {
                format!(
                    "CREATE TABLE orders_{s} PARTITION OF orders \
                     FOR VALUES WITH (MODULUS {SHARD_COUNT}, REMAINDER {s}); "
                )
            })
            .collect();
        let extra = if database == 1 { extra } else { "" };
        let mine: Vec<String> = (1..=ORDERS)
            .filter(|&id| shard_of(id) % 2 == database)
            .map(|id| id.to_string())
            .collect();
        server
            .psql(
                &format!("shard_{database}"),
                &format!(
                    "SET ROLE app; CREATE TABLE orders (id bigint PRIMARY KEY, n bigint NOT NULL, \
                     v text, seq bigint GENERATED BY DEFAULT AS IDENTITY) PARTITION BY HASH (id); {partitions}{extra}\
                     INSERT INTO orders SELECT id, 0, 'old' FROM unnest('{{{ids}}}'::bigint[]) id",
                    ids = mine.join(",")
                ),
            )
            .unwrap();
    }
    let config = common::moves_config(&servers, general, SHARDING);
    let proxy = TestProxy::start(&config, &users()).unwrap();
    Cluster {
        proxy,
        databases: common::databases(&servers),
        general: String::new(),
        servers,
        copies_differ: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partition_moves_while_clients_write() {
    common::watch_proxy_panics();
    let general = "cutover_timeout = 10000\nresharding_replication_retry_min_delay = 100";
    let cluster = start(general, EVERY);
    cluster
        .proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_secs(3));
    let moving = 2;
    let stop = Arc::new(AtomicBool::new(false));
    let log: Arc<Mutex<Log>> = Arc::default();
    let handles = writers(&cluster, &stop, &log).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let admin = cluster.admin().await;
    common::rows(&admin, &format!("MOVE SHARD {moving} TO 1")).await;
    let client = cluster.connect().await;
    let status = wait_step(&admin, &["cleanup", "done"]).await;
    assert_eq!(status["step"], "cleanup", "{status:?}");

    // Between the switch and the cleanup: database 1's partition is
    // attached (its helper CHECK gone), database 0's still there, fenced,
    // and keyless statements are refused.
    let (a, b) = (
        superuser(&cluster.servers[0], "shard_0").await,
        superuser(&cluster.servers[1], "shard_1").await,
    );
    let attached = "SELECT count(*) FROM pg_inherits \
                    WHERE inhrelid = to_regclass('orders_2') AND inhparent = 'orders'::regclass";
    assert_eq!(count(&b, attached).await, 1);
    let checks = "SELECT count(*) FROM pg_constraint WHERE conname = 'pgshard_move_check'";
    assert_eq!(count(&b, checks).await, 0);
    // (database 1's own empty partition of the shard is replaced).
    let every = "SELECT count(*) FROM pg_class WHERE relname = 'orders_two'";
    assert_eq!(count(&b, every).await, 0);
    assert_eq!(count(&a, attached).await, 1);
    let moved = (1..=1000).find(|&id| shard_of(id) == moving).unwrap();
    for stale in [
        format!("UPDATE orders SET n = n + 100 WHERE id = {moved}"),
        format!("DELETE FROM orders_2 WHERE id = {moved}"),
    ] {
        let error = a.simple_query(&stale).await.unwrap_err();
        assert_eq!(common::code(&error), Some("55000"), "{stale}: {error:?}");
        let message = error.as_db_error().unwrap().message();
        assert!(
            message.starts_with(&format!(
                "logical shard {moving} of group postgres/4 moved to database 1"
            )),
            "{message}"
        );
    }
    let keyless = client
        .simple_query("SELECT count(*) FROM orders")
        .await
        .unwrap_err();
    assert_eq!(common::code(&keyless), Some("0A000"), "{keyless:?}");

    let status = wait_step(&admin, &["done"]).await;
    // Writes go on after the cleanup, then stop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut errors = Vec::new();
    for h in handles {
        errors.extend(h.await.unwrap());
    }
    println!("SHOW MOVES: {status:?}");
    assert_eq!(status["step"], "done", "{status:?}");
    assert_eq!(status["error"], "");
    assert_eq!(errors, Vec::<String>::new(), "no write fails");
    assert_eq!(common::proxy_panics(), 0);
    let (held, waited) = cluster.proxy.state().metrics.move_holds();
    println!("{held} statements held by the cutover, {waited:?} in all");

    let log = std::mem::take(&mut *log.lock().unwrap());
    check_orders(&log, moving, (&a, &b)).await;
    // The old partition is gone: a stale INSERT on database 0 finds no
    // partition for the shard's key.
    assert_eq!(
        count(
            &a,
            "SELECT count(*) FROM pg_class WHERE relname = 'orders_2'"
        )
        .await,
        0
    );
    let id = (2_000_000..).find(|&id| shard_of(id) == moving).unwrap();
    let stale = a
        .simple_query(&format!("INSERT INTO orders VALUES ({id}, 0, 'stale')"))
        .await
        .unwrap_err();
    assert_eq!(common::code(&stale), Some("23514"), "{stale:?}");
    // Keyless statements are served again, from one copy of each row.
    let through: i64 = client
        .query_one("SELECT count(*) FROM orders", &[])
        .await
        .unwrap()
        .get(0);
    let direct = count(&a, "SELECT count(*) FROM orders").await
        + count(&b, "SELECT count(*) FROM orders").await;
    assert_eq!(through, direct);
    // Rows of the moved shard written through pgshard now land in
    // database 1's attached partition.
    let new = (3_000_000..).find(|&id| shard_of(id) == moving).unwrap();
    client
        .execute("INSERT INTO orders VALUES ($1, 0, 'after')", &[&new])
        .await
        .unwrap();
    // (numbered by the parent's identity: the partition has none, as one
    // made PARTITION OF).
    let there = format!("SELECT count(*) FROM orders_2 WHERE id = {new} AND seq IS NOT NULL");
    assert_eq!(count(&b, &there).await, 1);
    let identity = "SELECT count(*) FROM pg_attribute \
                    WHERE attrelid = 'orders_2'::regclass AND attidentity <> ''";
    assert_eq!(count(&b, identity).await, 0);
    // Nothing of the stream left.
    assert_eq!(
        count(&a, "SELECT count(*) FROM pg_replication_slots").await,
        0
    );
    assert_eq!(count(&a, "SELECT count(*) FROM pg_publication").await, 0);
    assert_eq!(count(&b, "SELECT count(*) FROM pg_subscription").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_of_the_shard_on_the_target_with_rows_is_refused() {
    // Database 1 has every partition (pgbench --partitions' layout), the
    // moving shard's with a stray row: the move fails at its checks and
    // leaves nothing behind.
    let stray = (1..).find(|&id| shard_of(id) == 2).unwrap();
    let extra = format!("{EVERY}INSERT INTO orders VALUES ({stray}, 0, 'stray'); ");
    let cluster = start("", &extra);
    let admin = cluster.admin().await;
    common::rows(&admin, "MOVE SHARD 2 TO 1").await;
    let status = wait_step(&admin, &["done"]).await;
    assert_eq!(status["step"], "failed");
    assert!(
        status["error"].contains(
            "table \"public\".\"orders\" on database 1 holds rows of logical shard 2 already"
        ),
        "{status:?}"
    );
    let a = superuser(&cluster.servers[0], "shard_0").await;
    let b = superuser(&cluster.servers[1], "shard_1").await;
    let triggers = "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgshard_fence%'";
    assert_eq!(count(&a, triggers).await, 0);
    assert_eq!(count(&a, "SELECT count(*) FROM pg_publication").await, 0);
    assert_eq!(count(&b, GONE).await, 0);
    assert_eq!(count(&b, "SELECT count(*) FROM orders_two").await, 1);
    // Keyless statements are served again (the stray row too: pgshard
    // cannot tell).
    let client = cluster.connect().await;
    let all: i64 = client
        .query_one("SELECT count(*) FROM orders", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(all, ORDERS + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_whose_cutover_fails_is_rolled_back() {
    // A client on database 0 itself holds a write to the moving shard's
    // partition past cutover_timeout (the fence waits for it), and the
    // move may try once: it fails after the target's partition, the
    // stream and the subscription were made, and the rollback drops them,
    // with the fence triggers. The shard stays on database 0.
    let general = "cutover_timeout = 2000\nresharding_replication_retry_max_attempts = 1";
    let cluster = start(general, EVERY);
    cluster
        .proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_millis(200));
    let moving = 2;
    let mut ids = (1..=ORDERS).filter(|&id| shard_of(id) == moving);
    let (moved, other) = (ids.next().unwrap(), ids.next().unwrap());
    // A transaction through pgshard on the shard keeps the cutover from
    // starting until the direct writer has begun.
    let client = cluster.connect().await;
    let read = format!("SELECT n FROM orders WHERE id = {other}");
    client
        .simple_query(&format!("BEGIN; {read}"))
        .await
        .unwrap();
    let admin = cluster.admin().await;
    common::rows(&admin, &format!("MOVE SHARD {moving} TO 1")).await;
    // Read again once the shard is marked moving: the transaction counts
    // as in flight on it.
    wait_step(&admin, &["slot", "copy", "catchup"]).await;
    client.simple_query(&read).await.unwrap();
    wait_step(&admin, &["catchup", "holding"]).await;
    let direct = superuser(&cluster.servers[0], "shard_0").await;
    let writer = tokio::spawn(async move {
        direct
            .simple_query(&format!(
                "BEGIN; UPDATE orders SET n = n + 1000 WHERE id = {moved}; \
                 SELECT pg_sleep(4); COMMIT"
            ))
            .await
            .map(drop)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    client.simple_query("COMMIT").await.unwrap();
    let status = wait_step(&admin, &["done"]).await;
    assert_eq!(status["step"], "failed", "{status:?}");
    assert!(
        status["error"].contains("the cutover did not finish within cutover_timeout 1 times"),
        "{status:?}"
    );
    writer.await.unwrap().unwrap();
    let a = superuser(&cluster.servers[0], "shard_0").await;
    let b = superuser(&cluster.servers[1], "shard_1").await;
    let triggers = "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pgshard_fence%'";
    assert_eq!(count(&a, triggers).await, 0);
    assert_eq!(count(&a, "SELECT count(*) FROM pgshard.fences").await, 0);
    assert_eq!(count(&a, "SELECT count(*) FROM pg_publication").await, 0);
    assert_eq!(
        count(&a, "SELECT count(*) FROM pg_replication_slots").await,
        0
    );
    assert_eq!(count(&b, "SELECT count(*) FROM pg_subscription").await, 0);
    assert_eq!(count(&b, GONE).await, 0);
    // Database 1's empty partition of the shard, replaced, is back.
    let back = "SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass('orders_two')";
    assert_eq!(count(&b, back).await, 1);
    // The shard is served by database 0, the direct write with it.
    let n = format!("SELECT n FROM orders WHERE id = {moved}");
    assert_eq!(count(&a, &n).await, 1000);
    let through: i64 = client.query_one(&n, &[]).await.unwrap().get(0);
    assert_eq!(through, 1000);
    let all: i64 = client
        .query_one("SELECT count(*) FROM orders", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(all, ORDERS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_moves_there_and_back() {
    // The shard's partition goes to database 1 and comes back to database
    // 0 (made again there; database 0's old fence lifted at the switch,
    // database 1's partition detached and dropped in turn).
    let cluster = start("", "");
    cluster
        .proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_millis(200));
    let admin = cluster.admin().await;
    let moving = 2;
    for target in [1, 0] {
        common::rows(&admin, &format!("MOVE SHARD {moving} TO {target}")).await;
        let begun = Instant::now();
        loop {
            let rows = common::rows(&admin, "SHOW MOVES").await;
            let last = rows.last().unwrap();
            if last["step"] == "done" {
                break;
            }
            assert_ne!(last["step"], "failed", "{rows:?}");
            assert!(begun.elapsed() < Duration::from_secs(60), "{rows:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let client = cluster.connect().await;
    let id = (3_000_000..).find(|&id| shard_of(id) == moving).unwrap();
    client
        .execute("INSERT INTO orders VALUES ($1, 7, 'back')", &[&id])
        .await
        .unwrap();
    let (a, b) = (
        superuser(&cluster.servers[0], "shard_0").await,
        superuser(&cluster.servers[1], "shard_1").await,
    );
    let n = format!("SELECT n FROM orders_2 WHERE id = {id}");
    assert_eq!(count(&a, &n).await, 7);
    let parts = "SELECT count(*) FROM pg_class WHERE relname = 'orders_2'";
    assert_eq!(count(&b, parts).await, 0);
    let all = "SELECT count(*) FROM orders";
    assert_eq!(count(&a, all).await + count(&b, all).await, ORDERS + 1);
    let fenced = "SELECT count(*) FROM pgshard.fences WHERE fenced AND shard = 2";
    assert_eq!(count(&a, fenced).await, 0, "database 0's fence lifted");
    let through: i64 = client.query_one(all, &[]).await.unwrap().get(0);
    assert_eq!(through, ORDERS + 1);
}
