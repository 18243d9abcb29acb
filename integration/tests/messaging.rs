//! DESIGN.md §5's pub/sub log through pgshard on 2 shards: per-partition log
//! tables (`events_p<N>`, a table family) created through pgshard, batched
//! writers reserving offsets from a counter row, one reader per (group,
//! partition) claiming ranges from its row-locked consumer row; every
//! (group, partition) reads its offsets gapless and in order, and every
//! partition's tables and rows sit on the shard its id hashes to. Run twice:
//! statements prepared inside each transaction (lib/pq) and prepared once
//! per connection before any transaction (pgx, JDBC).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{create_sharded_schema, describe, postgres_hash_shard, Cluster, TextParam, SHARDING};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement, Transaction};

const SHARDS: usize = 2;
/// Log partitions, `events_p0` to `events_p5`.
const PARTITIONS: i64 = 6;
/// Consumer groups: each reads every partition.
const GROUPS: [&str; 2] = ["billing", "search"];
/// Write transactions per partition.
const BATCHES: i64 = 30;
/// Messages per write transaction.
const BATCH: i64 = 100;
/// Bytes per message.
const PAYLOAD: usize = 1024;
/// Writer tasks; writers `w` and `w + 2` share the partitions of parity `w % 2`.
const WRITERS: i64 = 4;
/// Most offsets a reader claims per poll.
const READ_BATCH: i64 = 200;
/// A run taking longer than this is stuck.
const DEADLINE: Duration = Duration::from_secs(120);

/// Message `off` of partition `p`: says where it belongs, padded to size.
fn payload(p: i64, off: i64) -> Vec<u8> {
    let mut bytes = format!("p{p}/o{off}/").into_bytes();
    bytes.resize(PAYLOAD, b'.');
    bytes
}

/// A `bytea[]` in text format, `{"\\x..","\\x.."}`, as lib/pq sends it.
fn bytea_array_text(payloads: &[Vec<u8>]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = Vec::with_capacity(payloads.len() * (PAYLOAD * 2 + 6) + 2);
    text.push(b'{');
    for (i, payload) in payloads.iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        text.extend_from_slice(b"\"\\\\x");
        for byte in payload {
            text.push(HEX[usize::from(byte >> 4)]);
            text.push(HEX[usize::from(byte & 15)]);
        }
        text.push(b'"');
    }
    text.push(b'}');
    String::from_utf8(text).unwrap()
}

/// How a client prepares its statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// lib/pq's way (DESIGN.md §4): each statement is prepared (Parse,
    /// Describe, Sync) inside the transaction that runs it.
    InEachTransaction,
    /// pgx's and JDBC's statement caches: every statement is prepared once
    /// per connection, before any transaction, and reused.
    OncePerConnection,
}

/// A statement as the client keeps it: its text (prepared at each use), or
/// prepared already.
enum Stmt {
    Text(String),
    Prepared(Statement),
}

impl Stmt {
    async fn new(client: &Client, style: Style, sql: String) -> Result<Stmt, String> {
        match style {
            Style::InEachTransaction => Ok(Stmt::Text(sql)),
            Style::OncePerConnection => client
                .prepare(&sql)
                .await
                .map(Stmt::Prepared)
                .map_err(|e| format!("prepare {sql}: {}", describe(&e))),
        }
    }

    async fn query(
        &self,
        tx: &Transaction<'_>,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        match self {
            Stmt::Text(sql) => tx.query(sql.as_str(), params).await,
            Stmt::Prepared(statement) => tx.query(statement, params).await,
        }
    }

    async fn execute(
        &self,
        tx: &Transaction<'_>,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        match self {
            Stmt::Text(sql) => tx.execute(sql.as_str(), params).await,
            Stmt::Prepared(statement) => tx.execute(statement, params).await,
        }
    }
}

/// The first row's first column, or an error naming the statement.
fn first(rows: &[Row]) -> Result<i64, String> {
    rows.first()
        .map(|row| row.get(0))
        .ok_or_else(|| "no row".to_owned())
}

struct Written {
    batches: usize,
    /// Each write transaction's duration.
    latencies: Vec<Duration>,
}

/// Writer `w`: `BATCHES / 2` transactions for each partition of its parity;
/// writers 0 and 1 send the payload array in binary, 2 and 3 in text (so
/// each partition gets both).
async fn writer(client: Client, style: Style, w: i64) -> Result<Written, String> {
    let mut client = client;
    let text = w >= 2;
    let at = |what: &str, e: tokio_postgres::Error| format!("writer {w}: {what}: {}", describe(&e));
    let reserve = Stmt::new(
        &client,
        style,
        "UPDATE counters SET next = next + $2 WHERE partition_id = $1 RETURNING next".into(),
    )
    .await
    .map_err(|e| format!("writer {w}: {e}"))?;
    let mine: Vec<i64> = (0..PARTITIONS).filter(|p| p % 2 == w % 2).collect();
    let mut inserts = Vec::new();
    for p in &mine {
        let sql = format!(
            "INSERT INTO events_p{p} (off, payload) \
             SELECT $1 + i - 1, p FROM unnest($2::bytea[]) WITH ORDINALITY AS t(p, i)"
        );
        inserts.push(
            Stmt::new(&client, style, sql)
                .await
                .map_err(|e| format!("writer {w}: {e}"))?,
        );
    }
    let mut written = Written {
        batches: 0,
        latencies: Vec::new(),
    };
    for b in 0..BATCHES / 2 {
        for (p, insert) in mine.iter().zip(&inserts) {
            let started = Instant::now();
            let step = |what: &str| format!("batch {b} of partition {p}: {what}");
            let tx = client
                .transaction()
                .await
                .map_err(|e| at(&step("BEGIN"), e))?;
            let reserved = reserve
                .query(&tx, &[p, &BATCH])
                .await
                .map_err(|e| at(&step("UPDATE counters ... RETURNING next"), e))?;
            let next = first(&reserved).map_err(|e| step(&format!("UPDATE counters: {e}")))?;
            let base = next - BATCH;
            let payloads: Vec<Vec<u8>> = (base..next).map(|off| payload(*p, off)).collect();
            let inserted = if text {
                let array = TextParam(bytea_array_text(&payloads));
                insert.execute(&tx, &[&base, &array]).await
            } else {
                insert.execute(&tx, &[&base, &payloads]).await
            }
            .map_err(|e| at(&step("INSERT ... unnest($2::bytea[])"), e))?;
            if inserted != BATCH as u64 {
                return Err(step(&format!("INSERT reported {inserted} rows")));
            }
            tx.commit().await.map_err(|e| at(&step("COMMIT"), e))?;
            written.batches += 1;
            written.latencies.push(started.elapsed());
        }
    }
    Ok(written)
}

/// The reader of (`group`, `p`): polls until it has read `total` messages
/// (or `stop` is set); returns the offsets in the order read.
async fn reader(
    client: Client,
    style: Style,
    (group, p): (&'static str, i64),
    total: i64,
    stop: Arc<AtomicBool>,
) -> Result<Vec<i64>, String> {
    let mut client = client;
    let at = |what: &str, e: tokio_postgres::Error| {
        format!("reader {group}/p{p}: {what}: {}", describe(&e))
    };
    let prepared = |sql: String| Stmt::new(&client, style, sql);
    let context = |e: String| format!("reader {group}/p{p}: {e}");
    let lock = prepared(
        "SELECT off FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR UPDATE"
            .into(),
    )
    .await
    .map_err(context)?;
    let tip = prepared("SELECT next FROM counters WHERE partition_id = $1".into())
        .await
        .map_err(context)?;
    let range = prepared(format!(
        "SELECT off, payload FROM events_p{p} WHERE off >= $1 AND off < $2 ORDER BY off"
    ))
    .await
    .map_err(context)?;
    let advance = prepared(
        "UPDATE consumer_offsets SET off = $3 WHERE group_id = $1 AND partition_id = $2".into(),
    )
    .await
    .map_err(context)?;
    let started = Instant::now();
    let mut offsets = Vec::with_capacity(usize::try_from(total).unwrap());
    let mut poll = 0;
    while (offsets.len() as i64) < total {
        if stop.load(Ordering::Relaxed) {
            return Err(format!(
                "reader {group}/p{p}: stopped after {} of {total} messages: the writers failed",
                offsets.len()
            ));
        }
        if started.elapsed() > DEADLINE {
            return Err(format!(
                "reader {group}/p{p}: read only {} of {total} messages in {DEADLINE:?}",
                offsets.len()
            ));
        }
        poll += 1;
        let step = |what: &str| format!("poll {poll}: {what}");
        let tx = client
            .transaction()
            .await
            .map_err(|e| at(&step("BEGIN"), e))?;
        let start = lock
            .query(&tx, &[&group, &p])
            .await
            .map_err(|e| at(&step("lock the consumer row"), e))?;
        let start = first(&start).map_err(|e| context(step(&format!("consumer row: {e}"))))?;
        let next = tip
            .query(&tx, &[&p])
            .await
            .map_err(|e| at(&step("read the counter tip"), e))?;
        let next = first(&next).map_err(|e| context(step(&format!("counter row: {e}"))))?;
        let end = next.min(start + READ_BATCH);
        if end > start {
            let rows = range
                .query(&tx, &[&start, &end])
                .await
                .map_err(|e| at(&step("read the offset range"), e))?;
            if rows.len() as i64 != end - start {
                return Err(format!(
                    "reader {group}/p{p}: offsets {start}..{end} (tip {next}) gave {} rows",
                    rows.len()
                ));
            }
            for row in rows {
                let off: i64 = row.get(0);
                let body: Vec<u8> = row.get(1);
                if body != payload(p, off) {
                    return Err(format!(
                        "reader {group}/p{p}: offset {off} holds {:?}...",
                        String::from_utf8_lossy(&body[..body.len().min(24)])
                    ));
                }
                offsets.push(off);
            }
            advance
                .execute(&tx, &[&group, &p, &end])
                .await
                .map_err(|e| at(&step("advance the consumer row"), e))?;
        }
        tx.commit().await.map_err(|e| at(&step("COMMIT"), e))?;
        if end == start {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(offsets)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread")]
async fn pub_sub_log_prepared_in_each_transaction() {
    pub_sub_log(Style::InEachTransaction).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pub_sub_log_prepared_once_per_connection() {
    pub_sub_log(Style::OncePerConnection).await;
}

/// Write `BATCHES` batches to every partition while every (group,
/// partition) reader follows; then each read its partition gapless and in
/// order, and every partition's rows are on its shard only.
async fn pub_sub_log(style: Style) {
    let servers = common::servers(SHARDS);
    create_sharded_schema(&servers);
    let cluster = Cluster::start_sharded(servers, "default_pool_size = 20", SHARDING);
    let total = BATCHES * BATCH;

    // Everything set up through pgshard, routed by the partition id.
    let setup = cluster.connect().await;
    for p in 0..PARTITIONS {
        let ddl = format!(
            "CREATE TABLE events_p{p} (off bigint PRIMARY KEY, payload bytea NOT NULL, \
             created_at timestamptz NOT NULL DEFAULT now())"
        );
        setup
            .simple_query(&ddl)
            .await
            .unwrap_or_else(|e| panic!("{ddl}: {}", describe(&e)));
        setup
            .execute(
                "INSERT INTO counters (partition_id, next) VALUES ($1, 0)",
                &[&p],
            )
            .await
            .unwrap_or_else(|e| panic!("INSERT INTO counters p{p}: {}", describe(&e)));
        for group in GROUPS {
            setup
                .execute(
                    "INSERT INTO consumer_offsets (group_id, partition_id, off) VALUES ($1, $2, 0)",
                    &[&group, &p],
                )
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "INSERT INTO consumer_offsets {group}/p{p}: {}",
                        describe(&e)
                    )
                });
        }
    }

    let started = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let client = cluster.connect().await;
        writers.push(tokio::spawn(async move {
            let result = writer(client, style, w).await;
            (result, started.elapsed())
        }));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for group in GROUPS {
        for p in 0..PARTITIONS {
            let client = cluster.connect().await;
            let stop = Arc::clone(&stop);
            readers.push((
                group,
                p,
                tokio::spawn(async move {
                    let result = reader(client, style, (group, p), total, stop).await;
                    (result, started.elapsed())
                }),
            ));
        }
    }

    let mut failures = Vec::new();
    let mut latencies = Vec::new();
    let mut write_elapsed = Duration::ZERO;
    let mut batches = 0;
    for handle in writers {
        let (result, elapsed) = tokio::time::timeout(DEADLINE, handle)
            .await
            .expect("a writer is stuck")
            .unwrap();
        write_elapsed = write_elapsed.max(elapsed);
        match result {
            Ok(written) => {
                batches += written.batches;
                latencies.extend(written.latencies);
            }
            Err(err) => failures.push(err),
        }
    }
    // Readers would wait for messages that will never come.
    stop.store(!failures.is_empty(), Ordering::Relaxed);
    let mut read_elapsed = Duration::ZERO;
    let expected: Vec<i64> = (0..total).collect();
    for (group, p, handle) in readers {
        let (result, elapsed) = tokio::time::timeout(DEADLINE, handle)
            .await
            .expect("a reader is stuck")
            .unwrap();
        read_elapsed = read_elapsed.max(elapsed);
        match result {
            Ok(offsets) if offsets == expected => {}
            Ok(offsets) => {
                let first_bad = offsets
                    .iter()
                    .enumerate()
                    .find(|(i, &off)| off != *i as i64)
                    .map(|(i, off)| (i, *off));
                failures.push(format!(
                    "reader {group}/p{p}: {} offsets, not 0..{total} in order; first mismatch (index, offset) {first_bad:?}",
                    offsets.len()
                ));
            }
            Err(err) => failures.push(err),
        }
    }
    assert!(
        failures.is_empty(),
        "pub/sub failures ({style:?}):\n{}",
        failures.join("\n")
    );
    assert_eq!(batches as i64, BATCHES * PARTITIONS);

    let written = (total * PARTITIONS) as f64;
    let read = written * GROUPS.len() as f64;
    let mib = (PAYLOAD as f64) / (1024.0 * 1024.0);
    latencies.sort();
    println!(
        "pub/sub through pgshard ({style:?}), {SHARDS} shards, {PARTITIONS} partitions, {} groups, batch {BATCH} x {PAYLOAD} B:",
        GROUPS.len()
    );
    println!(
        "  written: {written} msgs in {write_elapsed:.2?} = {:.0} msg/s, {:.1} MiB/s; write txn p50 {:.2?} p95 {:.2?} p99 {:.2?}",
        written / write_elapsed.as_secs_f64(),
        written * mib / write_elapsed.as_secs_f64(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.95),
        percentile(&latencies, 0.99),
    );
    println!(
        "  read:    {read} msgs in {read_elapsed:.2?} = {:.0} msg/s, {:.1} MiB/s",
        read / read_elapsed.as_secs_f64(),
        read * mib / read_elapsed.as_secs_f64(),
    );

    // Each partition's log table, counter row and consumer rows are on the
    // shard its id hashes to, and nowhere else.
    let shards = cluster.shards().await;
    let mut groups: Vec<String> = GROUPS.iter().map(|g| (*g).to_owned()).collect();
    groups.sort();
    let mut per_shard = [0usize; SHARDS];
    for p in 0..PARTITIONS {
        let home = postgres_hash_shard(&shards[0], p, SHARDS).await;
        per_shard[home] += 1;
        for (i, shard) in shards.iter().enumerate() {
            let has_table: bool = shard
                .query_one(
                    &format!("SELECT to_regclass('events_p{p}') IS NOT NULL"),
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            let counters: Vec<i64> = shard
                .query("SELECT next FROM counters WHERE partition_id = $1", &[&p])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            let consumers: Vec<(String, i64)> = shard
                .query(
                    "SELECT group_id, off FROM consumer_offsets WHERE partition_id = $1 ORDER BY group_id",
                    &[&p],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            if i == home {
                assert!(has_table, "events_p{p} missing on its shard {i}");
                assert_eq!(counters, [total], "counter of p{p} on shard {i}");
                let want: Vec<(String, i64)> = groups.iter().map(|g| (g.clone(), total)).collect();
                assert_eq!(consumers, want, "consumer rows of p{p} on shard {i}");
                let row = shard
                    .query_one(
                        &format!("SELECT count(*), min(off), max(off) FROM events_p{p}"),
                        &[],
                    )
                    .await
                    .unwrap();
                let (count, min, max): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
                assert_eq!((count, min, max), (total, 0, total - 1), "events_p{p}");
            } else {
                assert!(
                    !has_table,
                    "events_p{p} also on shard {i} (its shard is {home})"
                );
                assert!(counters.is_empty(), "counter of p{p} also on shard {i}");
                assert!(
                    consumers.is_empty(),
                    "consumer rows of p{p} also on shard {i}"
                );
            }
        }
    }
    println!("  partitions per shard: {per_shard:?}");
}
