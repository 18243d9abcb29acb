//! The pieces of a logical shard move, on two real Postgres 15 servers A
//! and B (the spike for issue 33's plan, §2 and §3): a replication login
//! makes a logical slot that exports a snapshot; the rows of one logical
//! shard (`hash::predicate`) are copied under that snapshot through
//! `execute::copy_relay`, so writes made after the slot are not copied; a
//! native subscription on B takes the slot over and applies exactly those
//! writes; a marker row written on A shows when B has everything before
//! it. Also the relay's refusals.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use integration::{PgServer, ServerOptions};
use proxy::conn::server::{ServerConn, ServerTarget};
use proxy::execute::copy_relay::{relay, statements, RelayError};
use router::config::CopyFormat;
use router::hash::{logical_shard, predicate};
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};
use tokio_postgres::Client;

const SHARD_COUNT: usize = 12;
const MOVING: usize = 5;

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
    PgServer::start_many(n, &options).unwrap()
}

async fn client(server: &PgServer) -> Client {
    let conninfo = server.conninfo("postgres", None, "postgres");
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

async fn conn(server: &PgServer, replication: bool) -> Box<ServerConn> {
    let target = ServerTarget {
        host: "127.0.0.1".to_owned(),
        port: server.port(),
        database: "postgres".to_owned(),
        user: "postgres".to_owned(),
        password: None,
        replication,
    };
    ServerConn::connect(&target, Duration::from_secs(10), 0)
        .await
        .unwrap()
}

fn keys() -> KeySpace {
    KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: SHARD_COUNT,
        },
        placement: vec![0; SHARD_COUNT],
        moving: None,
    }
}

fn moving(k: i64) -> bool {
    logical_shard(&keys(), &Key::Int(k)) == Some(MOVING)
}

/// Every row as text, ordered by key.
async fn table(client: &Client, sql: &str) -> Vec<(i64, String, i32)> {
    client
        .query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

async fn run(conn: &mut ServerConn, sql: &str) {
    conn.run(sql)
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[tokio::test]
async fn a_logical_shard_copied_under_the_slots_snapshot_then_streamed() {
    let servers = logical_servers(2);
    let (a, b) = (client(&servers[0]).await, client(&servers[1]).await);
    let schema = "CREATE TABLE t (k bigint PRIMARY KEY, v text, n int NOT NULL DEFAULT 0); \
                  CREATE TABLE marks (id bigint PRIMARY KEY, at timestamptz DEFAULT now());";
    a.batch_execute(schema).await.unwrap();
    b.batch_execute(schema).await.unwrap();
    a.batch_execute("INSERT INTO t (k, v) SELECT g, 'v' || g FROM generate_series(1, 5000) g")
        .await
        .unwrap();
    let filter = predicate(&keys(), "\"k\"", &[MOVING]).unwrap();

    // The change stream first: the publication (its row filter is the
    // predicate), then the slot, whose snapshot the copy uses.
    a.batch_execute(&format!(
        "CREATE PUBLICATION mv FOR TABLE t WHERE ({filter}), marks"
    ))
    .await
    .unwrap();
    let mut walsender = conn(&servers[0], true).await;
    let slot = walsender
        .query("CREATE_REPLICATION_SLOT mv LOGICAL pgoutput (SNAPSHOT 'export')")
        .await
        .unwrap();
    assert_eq!(slot.error, None);
    let snapshot = slot.rows[0][2].clone().unwrap();

    // Writes after the slot: in the stream, not in the snapshot.
    a.batch_execute(
        "INSERT INTO t (k, v) SELECT g, 'late' || g FROM generate_series(5001, 6000) g; \
         UPDATE t SET n = n + 1 WHERE k % 7 = 0; \
         DELETE FROM t WHERE k % 11 = 0;",
    )
    .await
    .unwrap();

    let mut source = conn(&servers[0], false).await;
    run(&mut source, "BEGIN ISOLATION LEVEL REPEATABLE READ").await;
    run(
        &mut source,
        &format!("SET TRANSACTION SNAPSHOT '{snapshot}'"),
    )
    .await;
    let mut target = conn(&servers[1], false).await;
    run(&mut target, "SET session_replication_role = replica").await;
    let columns = ["\"k\"", "\"v\"", "\"n\""].map(str::to_owned);
    let (copy_out, copy_in) = statements("\"t\"", &columns, Some(&filter), CopyFormat::Binary);
    let (copied, mut source, _target) = relay(source, &copy_out, target, &copy_in).await.unwrap();
    run(&mut source, "COMMIT").await;
    let expected = (1..=5000).filter(|&k| moving(k)).count() as u64;
    assert_eq!(copied.rows, expected);
    assert!(copied.bytes > 0);
    // Exactly the snapshot: no late row, no update, no delete.
    let on_b = table(&b, "SELECT k, v, n FROM t ORDER BY k").await;
    let snapshot_rows: Vec<(i64, String, i32)> = (1..=5000)
        .filter(|&k| moving(k))
        .map(|k| (k, format!("v{k}"), 0))
        .collect();
    assert_eq!(on_b, snapshot_rows);
    // The exported snapshot lives until the walsender's next command.
    walsender.terminate().await;

    // B takes the slot over, from its consistent point.
    b.batch_execute(&format!(
        "CREATE SUBSCRIPTION mv CONNECTION '{}' PUBLICATION mv WITH (create_slot = false, \
         slot_name = 'mv', copy_data = false, streaming = on, binary = true, \
         synchronous_commit = off)",
        servers[0].conninfo("postgres", None, "postgres")
    ))
    .await
    .unwrap();
    a.batch_execute(
        "UPDATE t SET v = 'again' || k WHERE k % 3 = 0; \
         INSERT INTO t (k, v) SELECT g, 'later' || g FROM generate_series(6001, 6500) g; \
         INSERT INTO marks (id) VALUES (1);",
    )
    .await
    .unwrap();
    let marked = Instant::now();
    loop {
        let seen = b
            .query_opt("SELECT 1 FROM marks WHERE id = 1", &[])
            .await
            .unwrap();
        if seen.is_some() {
            break;
        }
        assert!(marked.elapsed() < Duration::from_secs(30), "no marker on B");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "marker row applied on B {} ms after its commit on A",
        marked.elapsed().as_millis()
    );
    let on_a = table(
        &a,
        &format!("SELECT k, v, n FROM t WHERE {filter} ORDER BY k"),
    )
    .await;
    let on_b = table(&b, "SELECT k, v, n FROM t ORDER BY k").await;
    assert!(on_a.len() > snapshot_rows.len() / 2, "{}", on_a.len());
    assert_eq!(
        on_b, on_a,
        "B holds exactly A's rows of logical shard {MOVING}"
    );

    // Nothing left behind: dropping the subscription drops the slot on A.
    b.batch_execute("DROP SUBSCRIPTION mv").await.unwrap();
    a.batch_execute("DROP PUBLICATION mv").await.unwrap();
    let slots: i64 = a
        .query_one("SELECT count(*) FROM pg_replication_slots", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(slots, 0);
}

#[tokio::test]
async fn the_relay_refuses_what_it_cannot_copy_exactly() {
    let servers = logical_servers(2);
    let (a, b) = (client(&servers[0]).await, client(&servers[1]).await);
    a.batch_execute(
        "CREATE TABLE t (k bigint PRIMARY KEY, v text, n int); \
         INSERT INTO t SELECT g, 'v' || g, g FROM generate_series(1, 300) g;",
    )
    .await
    .unwrap();
    b.batch_execute(
        "CREATE TABLE t (k bigint PRIMARY KEY, v text, n int); \
         CREATE TABLE narrow (k bigint PRIMARY KEY, v text);",
    )
    .await
    .unwrap();
    let columns = ["\"k\"", "\"v\"", "\"n\""].map(str::to_owned);

    // A column the target lacks: its error, before the source runs.
    let (_, copy_in) = statements("\"narrow\"", &columns, None, CopyFormat::Text);
    let (copy_out, _) = statements("\"t\"", &columns, None, CopyFormat::Text);
    let err = relay(
        conn(&servers[0], false).await,
        &copy_out,
        conn(&servers[1], false).await,
        &copy_in,
    )
    .await
    .err()
    .unwrap();
    assert!(
        matches!(&err, RelayError::Target(m) if m.contains("column \"n\" of relation \"narrow\" does not exist")),
        "{err}"
    );
    // The source refuses: the target's COPY is failed, nothing stored.
    let (copy_out, copy_in) = statements(
        "\"t\"",
        &columns,
        Some("no_such_column > 0"),
        CopyFormat::Text,
    );
    let err = relay(
        conn(&servers[0], false).await,
        &copy_out,
        conn(&servers[1], false).await,
        &copy_in,
    )
    .await
    .err()
    .unwrap();
    assert!(
        matches!(&err, RelayError::Source(m) if m.contains("no_such_column")),
        "{err}"
    );
    // Binary out, text in: refused, not reinterpreted.
    let (copy_out, _) = statements("\"t\"", &columns, None, CopyFormat::Binary);
    let (_, copy_in) = statements("\"t\"", &columns, None, CopyFormat::Text);
    let err = relay(
        conn(&servers[0], false).await,
        &copy_out,
        conn(&servers[1], false).await,
        &copy_in,
    )
    .await
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "the source sends 3 columns in binary format, the target expects 3 columns in text format"
    );
    let stored: i64 = b
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 0);

    // Text format, a whole table: every row, and both connections come
    // back ready for more.
    let (copy_out, copy_in) = statements("\"t\"", &columns, None, CopyFormat::Text);
    let (copied, mut source, mut target) = relay(
        conn(&servers[0], false).await,
        &copy_out,
        conn(&servers[1], false).await,
        &copy_in,
    )
    .await
    .unwrap();
    assert_eq!(copied.rows, 300);
    run(&mut source, "SELECT 1").await;
    run(&mut target, "SELECT 1").await;
    let (sum_a, sum_b): (i64, i64) = (
        a.query_one("SELECT sum(n) FROM t", &[])
            .await
            .unwrap()
            .get(0),
        b.query_one("SELECT sum(n) FROM t", &[])
            .await
            .unwrap()
            .get(0),
    );
    assert_eq!(sum_a, sum_b);
}
