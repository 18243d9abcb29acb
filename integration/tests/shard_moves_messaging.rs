//! A logical shard holding topic partitions moves while the messaging
//! bench's pub/sub runs through pgshard (issue 33's acceptance), against
//! two real Postgres 15 servers with `wal_level = logical`: producers
//! reserve offsets from `msg_counters` (a plain sharded table) and append
//! to `msg_log_p<N>` (a table family, same placement group) in one
//! transaction, a consumer reads each partition in offset order
//! (`integration::workload`), and logical shard s (its counter rows and
//! its log tables) moves from database 0 to 1 meanwhile. Afterwards: no
//! statement failed (a held one waited), offsets gapless and ordered per
//! partition, every batch the producers committed in the log exactly once,
//! each counter row and log table on exactly one database, the one the
//! new placement names, and nothing of the move left. The longest
//! statement wait during the cutover is printed.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::moves::{
    admin, app, count, logical_servers, no_stream_left, shard_of, start, superuser, wait_move,
};
use integration::workload::{self, Seen, Stop, BATCH, PARTITIONS};
use tokio_postgres::Client;

const SHARD_COUNT: usize = 8;

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"msg_counters\"
column = \"partition_id\"
data_type = \"bigint\"
hasher = \"postgres\"
shard_count = 8

[[sharded_tables]]
database = \"prod\"
name_prefix = \"msg_log_p\"
data_type = \"bigint\"
hasher = \"postgres\"
shard_count = 8
";

/// The database partition `p`'s rows are on, by the default placement.
fn placed(p: i64) -> usize {
    shard_of(p, SHARD_COUNT) % 2
}

/// The messaging tables through pgshard, as the bench makes them.
async fn create(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE msg_counters (partition_id bigint PRIMARY KEY, next bigint NOT NULL)",
        )
        .await
        .unwrap();
    for p in 0..PARTITIONS {
        client
            .batch_execute(&format!(
                "CREATE TABLE msg_log_p{p} (off bigint PRIMARY KEY, payload bytea NOT NULL, \
                 created_at timestamptz NOT NULL DEFAULT now());\
                 INSERT INTO msg_counters (partition_id, next) VALUES ({p}, 0)"
            ))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shard_of_topic_partitions_moves_under_pub_sub() {
    let servers = logical_servers(2);
    let config = common::moves_config(&servers, "", SHARDING);
    let proxy = start(&config);
    let port = proxy.port();
    create(&app(&proxy).await).await;
    // A logical shard on database 0 with at least one partition.
    let moving = (0..PARTITIONS)
        .map(|p| shard_of(p, SHARD_COUNT))
        .find(|&s| s % 2 == 0)
        .unwrap();
    let seen = Arc::new(Seen::default());
    let stop: Stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..3)
        .map(|w| {
            tokio::spawn(workload::producer(
                port,
                w,
                Arc::clone(&seen),
                Arc::clone(&stop),
            ))
        })
        .collect();
    // The consumer stops once every producer has (a batch still committing
    // when `stop` is set would come after its last pass).
    let consumer_stop = Arc::new(AtomicBool::new(false));
    let consumer = tokio::spawn(workload::consumer(
        port,
        Arc::clone(&seen),
        Arc::clone(&consumer_stop),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = seen.batches.lock().unwrap().committed.len();
    let admin = admin(&proxy).await;
    let id = common::rows(&admin, &format!("MOVE SHARD {moving} TO 1")).await[0]["id"].clone();
    let status = wait_move(&admin, &id, |s| s == "done" || s == "failed").await;
    assert_eq!(status["step"], "done", "{status:?}");
    let during = seen.batches.lock().unwrap().committed.len();
    // On, with the shard on database 1.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    for producer in producers {
        producer.await.unwrap();
    }
    consumer_stop.store(true, Ordering::Relaxed);
    consumer.await.unwrap();
    let after = seen.batches.lock().unwrap().committed.len();
    assert!(
        before > 0 && during > before && after > during,
        "{before} {during} {after}"
    );
    let codes = seen.codes.lock().unwrap().clone();
    let first = seen.first.lock().unwrap().clone();
    let unclean = seen.unclean.lock().unwrap().clone();
    assert!(
        codes.is_empty() && unclean.is_empty(),
        "{codes:?} (first of each: {first:?}) {unclean:?}"
    );
    {
        let ledger = seen.batches.lock().unwrap();
        assert!(ledger.failed.is_empty(), "failed: {:?}", ledger.failed);
        assert!(
            ledger.in_doubt.is_empty(),
            "in doubt: {:?}",
            ledger.in_doubt
        );
    }
    let a = superuser(&servers[0], 0).await;
    let b = superuser(&servers[1], 1).await;
    let total = offsets(moving, [&a, &b], &seen).await;
    let committed = seen.batches.lock().unwrap().committed.len() as i64;
    assert_eq!(total, committed * BATCH, "every committed batch, once");
    no_stream_left(&a, &b).await;
    let moved = "SELECT count(*) FROM pg_tables WHERE schemaname = 'pgshard_moved'";
    assert_eq!(count(&a, moved).await, 0);
    println!(
        "shard {moving} moved under pub/sub: {committed} batches of {BATCH}; longest statement \
         wait during the cutover {} ms (SHOW MOVES max_wait_ms); slowest statement {:?}",
        status["max_wait_ms"],
        seen.slowest.lock().unwrap()
    );
}

/// Per partition: its log table and counter row on exactly one database
/// (database 1 for the moved shard's), offsets 0..next without a gap or a
/// double, each message once, and the consumer read them all in order
/// (it notes any offset out of order). The messages in the logs.
async fn offsets(moving: usize, databases: [&Client; 2], seen: &Seen) -> i64 {
    let violations = seen.violations.lock().unwrap().clone();
    assert!(violations.is_empty(), "the consumer saw {violations:?}");
    let consumed = seen.consumed.lock().unwrap().clone();
    let mut total = 0;
    for p in 0..PARTITIONS {
        let home = if shard_of(p, SHARD_COUNT) == moving {
            1
        } else {
            placed(p)
        };
        let table = format!(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 'msg_log_p{p}'"
        );
        let counter = format!("SELECT count(*) FROM msg_counters WHERE partition_id = {p}");
        for (database, client) in databases.iter().enumerate() {
            let want = i64::from(database == home);
            assert_eq!(
                count(client, &table).await,
                want,
                "msg_log_p{p} on {database}"
            );
            assert_eq!(
                count(client, &counter).await,
                want,
                "counter {p} on {database}"
            );
        }
        let client = databases[home];
        let sql = format!(
            "SELECT (SELECT next FROM msg_counters WHERE partition_id = {p}), count(*), \
             count(DISTINCT off), count(DISTINCT payload), coalesce(min(off), 0), \
             coalesce(max(off), -1) FROM msg_log_p{p}"
        );
        let row = client.query_one(&sql, &[]).await.unwrap();
        let next: i64 = row.get(0);
        let got: [i64; 5] = std::array::from_fn(|i| row.get(i + 1));
        assert_eq!(
            got,
            [next, next, next, 0, next - 1],
            "partition {p}: 0..{next}"
        );
        assert_eq!(consumed.get(&p).copied(), Some(next), "partition {p} read");
        total += next;
    }
    total
}
