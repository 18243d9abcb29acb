//! Moving a logical shard online (issue 33, step 6: the family layout),
//! against two real Postgres 15 servers with `wal_level = logical`:
//! `MOVE SHARD` of a logical shard of a table family while clients write
//! keyed rows through pgshard the whole time. No write fails (statements
//! held by the cutover wait, then go to the new database); afterwards
//! every row of the moved shard is on the target and none on the source,
//! serial ids go on without collision, no slot, publication or
//! subscription is left, and SHOW MOVES shows the move done. Groups
//! whose tables a move cannot name are refused. (Plain tables:
//! `shard_moves_plain.rs`.)

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::moves::logical_servers;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Cluster, USERS};
use integration::{PgServer, ServerOptions, TestProxy};
use router::hash::logical_shard;
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};

const SHARD_COUNT: usize = 8;
/// The family's tables: `events_p0` to `events_p15`.
const PARTITIONS: i64 = 16;

const FAMILY: &str = "\
[[sharded_tables]]
database = \"prod\"
name_prefix = \"events_p\"
data_type = \"bigint\"
hasher = \"postgres\"
shard_count = 8
";

/// `app` as usual, and `mover`, whose server login is the superuser (the
/// mover's subscription needs one).
fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"mover\"\ndatabase = \"prod\"\npassword = \"mover-pw\"\n\
         server_user = \"postgres\"\n"
    )
}

fn keys() -> KeySpace {
    KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: SHARD_COUNT,
        },
        placement: (0..SHARD_COUNT).map(|s| s % 2).collect(),
        moving: None,
    }
}

fn shard_of(partition: i64) -> usize {
    logical_shard(&keys(), &Key::Int(partition)).unwrap()
}

async fn superuser(server: &PgServer, database: &str) -> tokio_postgres::Client {
    common::connect_str(&server.conninfo("postgres", None, database))
        .await
        .unwrap()
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

/// The SHOW MOVES row of the only move.
async fn show_move(admin: &tokio_postgres::Client) -> BTreeMap<String, String> {
    let rows = common::rows(admin, "SHOW MOVES").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0].clone().into_iter().collect()
}

/// Acknowledged writes: (partition, k).
type Log = Arc<Mutex<BTreeSet<(i64, i64)>>>;

/// A client writing through pgshard until `stop`: single INSERTs
/// (extended protocol) or two-statement transactions (simple protocol),
/// over `partitions`; each acknowledged row logged, each error kept.
async fn writer(
    cluster: &Cluster,
    (id, partitions): (i64, Vec<i64>),
    stop: Arc<AtomicBool>,
    log: Log,
) -> tokio::task::JoinHandle<Vec<String>> {
    let client = cluster.connect().await;
    tokio::spawn(async move {
        let mut errors = Vec::new();
        let mut k = id * 1_000_000;
        while !stop.load(Ordering::Relaxed) {
            k += 1;
            let p = partitions[k as usize % partitions.len()];
            let done = if id == 0 {
                let sql = format!("INSERT INTO events_p{p} (k, v) VALUES ($1, 'w')");
                client.execute(&sql, &[&k]).await.map(drop)
            } else {
                let sql = format!(
                    "BEGIN; INSERT INTO events_p{p} (k, v) VALUES ({k}, 'a'); \
                     INSERT INTO events_p{p} (k, v) VALUES ({}, 'b'); COMMIT",
                    -k
                );
                client.simple_query(&sql).await.map(drop)
            };
            match done {
                Ok(()) => {
                    let mut log = log.lock().unwrap();
                    log.insert((p, k));
                    if id != 0 {
                        log.insert((p, -k));
                    }
                }
                Err(e) => errors.push(common::describe(&e)),
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        errors
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_family_shard_moves_while_clients_write() {
    common::watch_proxy_panics();
    let servers = logical_servers(2);
    // Each family table on the database its logical shard is placed on.
    for p in 0..PARTITIONS {
        let database = shard_of(p) % 2;
        servers[database]
            .psql(
                &format!("shard_{database}"),
                &format!(
                    "SET ROLE app; CREATE TABLE events_p{p} (id bigserial PRIMARY KEY, \
                     k bigint NOT NULL, v text NOT NULL); \
                     CREATE INDEX ON events_p{p} (k); \
                     INSERT INTO events_p{p} (k, v) SELECT -g - 10000000 * {p}, 'old' \
                     FROM generate_series(1, 300) g"
                ),
            )
            .unwrap();
    }
    // A logical shard of database 0 with two tables or more.
    let moving = (0..SHARD_COUNT)
        .filter(|s| s.is_multiple_of(2))
        .max_by_key(|&s| (0..PARTITIONS).filter(|&p| shard_of(p) == s).count())
        .unwrap();
    let moved: Vec<i64> = (0..PARTITIONS).filter(|&p| shard_of(p) == moving).collect();
    assert!(!moved.is_empty());
    let general = "cutover_timeout = 10000\nresharding_replication_retry_min_delay = 100";
    let config = common::moves_config(&servers, general, FAMILY);
    let proxy = TestProxy::start(&config, &users()).unwrap();
    proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_millis(500));
    let cluster = Cluster {
        proxy,
        databases: common::databases(&servers),
        general: String::new(),
        servers,
        copies_differ: None,
    };

    let stop = Arc::new(AtomicBool::new(false));
    let log: Log = Arc::default();
    let mut writers = Vec::new();
    // One writer on the moving shard's tables only, one on every table.
    let partitions = [moved.clone(), (0..PARTITIONS).collect()];
    for (id, partitions) in (0..).zip(partitions) {
        let (stop, log) = (Arc::clone(&stop), Arc::clone(&log));
        writers.push(writer(&cluster, (id, partitions), stop, log).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let admin = cluster.admin().await;
    let started = common::rows(&admin, &format!("MOVE SHARD {moving} TO 1")).await;
    assert!(started[0]["id"].starts_with('m'), "{started:?}");
    let begun = Instant::now();
    let status = loop {
        let status = show_move(&admin).await;
        if status["step"] == "done" || status["step"] == "failed" {
            break status;
        }
        assert!(begun.elapsed() < Duration::from_secs(120), "{status:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Writes go on after the switch, then stop.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let mut errors = Vec::new();
    for w in writers {
        errors.extend(w.await.unwrap());
    }
    println!("SHOW MOVES: {status:?}");
    assert_eq!(status["step"], "done", "{status:?}");
    assert_eq!(status["error"], "");
    assert!(!status["max_wait_ms"].is_empty());
    assert!(
        status["rows_copied"].parse::<u64>().unwrap() >= 300 * moved.len() as u64,
        "{status:?}"
    );
    assert_eq!(errors, Vec::<String>::new(), "no write fails");
    let (held, waited) = cluster.proxy.state().metrics.move_holds();
    println!("{held} statements held by the cutover, {waited:?} in all");
    // (How many were held depends on timing: a hold shorter than the
    // writers' pace may hold none. That none failed is what counts.)
    assert_eq!(common::proxy_panics(), 0);

    // Every acknowledged row of the moved shard is on database 1, none on 0.
    let log = log.lock().unwrap().clone();
    let (a, b) = (
        superuser(&cluster.servers[0], "shard_0").await,
        superuser(&cluster.servers[1], "shard_1").await,
    );
    for &p in &moved {
        let left = count(
            &a,
            &format!("SELECT count(*) FROM pg_class WHERE relname = 'events_p{p}'"),
        )
        .await;
        assert_eq!(left, 0, "events_p{p} is gone from database 0");
        let on_b: BTreeSet<i64> = b
            .query(&format!("SELECT k FROM events_p{p} WHERE v <> 'old'"), &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let written: BTreeSet<i64> = log
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, k)| *k)
            .collect();
        assert!(!written.is_empty());
        assert_eq!(
            on_b, written,
            "events_p{p}: the written rows are on database 1"
        );
        let old = count(
            &b,
            &format!("SELECT count(*) FROM events_p{p} WHERE v = 'old'"),
        )
        .await;
        assert_eq!(old, 300, "events_p{p}: the rows from before the move");
        let ids = count(
            &b,
            &format!("SELECT count(DISTINCT id) - count(*) FROM events_p{p}"),
        )
        .await;
        assert_eq!(ids, 0);
    }
    // Other partitions stayed where they were.
    for p in (0..PARTITIONS).filter(|p| !moved.contains(p)) {
        let home = if shard_of(p).is_multiple_of(2) {
            &a
        } else {
            &b
        };
        let there = count(
            home,
            &format!("SELECT count(*) FROM pg_class WHERE relname = 'events_p{p}'"),
        )
        .await;
        assert_eq!(there, 1, "events_p{p}");
    }
    // Through pgshard, the moved tables answer from database 1.
    let client = cluster.connect().await;
    let p = moved[0];
    let through: i64 = client
        .query_one(&format!("SELECT count(*) FROM events_p{p}"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        through,
        count(&b, &format!("SELECT count(*) FROM events_p{p}")).await
    );
    // Nothing of the stream left.
    assert_eq!(
        count(&a, "SELECT count(*) FROM pg_replication_slots").await,
        0
    );
    assert_eq!(count(&a, "SELECT count(*) FROM pg_publication").await, 0);
    assert_eq!(count(&b, "SELECT count(*) FROM pg_subscription").await, 0);
    assert_eq!(
        count(&a, "SELECT count(*) FROM pgshard.move_marks").await,
        0
    );
    let recorded: String = b
        .query_one("SELECT phase FROM pgshard.moves", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded, "done");
    let owner = count(
        &b,
        &format!("SELECT count(*) FROM pgshard.shards WHERE shard = {moving}"),
    )
    .await;
    assert_eq!(owner, 1);
    let gone = count(
        &a,
        &format!("SELECT count(*) FROM pgshard.shards WHERE shard = {moving}"),
    )
    .await;
    assert_eq!(gone, 0);
}

#[tokio::test]
async fn moves_of_other_layouts_are_refused() {
    // A column-only entry (every table with the column) joins the group:
    // a move needs its tables named.
    let column_only = "[[sharded_tables]]\ndatabase = \"prod\"\ncolumn = \"account_id\"\n\
        data_type = \"bigint\"\nhasher = \"postgres\"\n";
    let cluster = Cluster::start_sharded_raw(2, "", column_only);
    let admin = cluster.admin().await;
    let err = admin.simple_query("MOVE SHARD 0 TO 1").await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"));
    let message = err.as_db_error().unwrap().message();
    assert_eq!(
        message,
        "group postgres/2 shards every table with column account_id ([[sharded_tables]] \
         without name): a move needs the tables named; add an entry with name = \"<table>\" \
         for each of them"
    );
    let err = admin.simple_query("CANCEL MOVE m1").await.unwrap_err();
    assert_eq!(common::code(&err), Some("55000"));
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "no move m1 (SHOW MOVES)"
    );
    let err = admin.simple_query("MOVE SHARD 0 TO").await.unwrap_err();
    assert_eq!(common::code(&err), Some("42601"));
    assert!(common::rows(&admin, "SHOW MOVES").await.is_empty());
}

#[tokio::test]
async fn a_move_that_cannot_run_fails_and_leaves_the_shard_where_it_was() {
    // wal_level = replica: the move fails at its checks, before anything
    // is made, and is recorded failed.
    let servers = common::servers_with(2, &ServerOptions::default());
    let p = (0..PARTITIONS).find(|&p| shard_of(p) == 0).unwrap();
    servers[0]
        .psql(
            "shard_0",
            &format!("SET ROLE app; CREATE TABLE events_p{p} (k bigint, v text)"),
        )
        .unwrap();
    let config = common::moves_config(&servers, "", FAMILY);
    let proxy = TestProxy::start(&config, &users()).unwrap();
    let cluster = Cluster {
        proxy,
        databases: common::databases(&servers),
        general: String::new(),
        servers,
        copies_differ: None,
    };
    let admin = cluster.admin().await;
    common::rows(&admin, "MOVE SHARD 0 TO 1 IN prod OF events_p").await;
    let begun = Instant::now();
    let status = loop {
        let status = show_move(&admin).await;
        if status["step"] == "failed" || status["step"] == "done" {
            break status;
        }
        assert!(begun.elapsed() < Duration::from_secs(30), "{status:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["step"], "failed");
    assert!(
        status["error"].contains("wal_level = replica"),
        "{status:?}"
    );
    let a = superuser(&cluster.servers[0], "shard_0").await;
    let recorded: String = a
        .query_one("SELECT phase FROM pgshard.moves", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded, "failed");
    // The shard is served where it was, by keyed writes and schema changes.
    let client = cluster.connect().await;
    client
        .simple_query(&format!("INSERT INTO events_p{p} VALUES (1, 'x')"))
        .await
        .unwrap();
    client
        .simple_query(&format!("ALTER TABLE events_p{p} ADD COLUMN w int"))
        .await
        .unwrap();
    assert_eq!(
        count(&a, &format!("SELECT count(*) FROM events_p{p}")).await,
        1
    );
    // A second move may start once the first has ended.
    common::rows(&admin, "MOVE SHARD 0 TO 1").await;
}
