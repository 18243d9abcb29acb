//! The pub/sub log's client tasks (DESIGN.md §5). A writer transaction
//! reserves a batch of offsets by incrementing its partition's counter row
//! and inserts the batch in one statement, the payloads one `bytea[]`
//! parameter. A reader, one per (group, partition), claims up to
//! `--read-batch` offsets per transaction by locking its consumer row and
//! advancing it to the counter tip, reads that range in order, and commits;
//! it checks every offset follows the last one it read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio_postgres::{Client, Statement};

use super::message::{self, Header};
use super::schema::{log_table, CONSUMERS, COUNTERS};
use super::stats::{record, Live, TaskOutcome};

/// The knobs the tasks need.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub payload: usize,
    pub write_batch: usize,
    pub read_batch: i64,
    /// Pause between a writer's batches when throttled.
    pub write_every: Option<Duration>,
}

/// How long a reader that found nothing new waits before polling again.
const IDLE_POLL: Duration = Duration::from_millis(2);

/// The partitions writer `w` of `writers` writes to, in turn.
pub fn assign(w: u32, writers: u32, partitions: u32) -> Vec<i64> {
    if writers >= partitions {
        return vec![i64::from(w % partitions)];
    }
    (0..partitions)
        .filter(|p| p % writers == w)
        .map(i64::from)
        .collect()
}

/// A writer: batches to its partitions in turn until told to stop.
pub async fn writer(
    mut client: Client,
    live: Arc<Live>,
    params: Params,
    (w, partitions): (u32, Vec<i64>),
) -> Result<TaskOutcome> {
    let mut outcome = TaskOutcome::new(format!("writer {w}"))?;
    let reserve = client
        .prepare(&format!(
            "UPDATE {COUNTERS} SET next = next + $2 WHERE partition_id = $1 RETURNING next"
        ))
        .await
        .context("prepare the counter update")?;
    let mut inserts = Vec::new();
    for p in &partitions {
        let sql = format!(
            "INSERT INTO {} (off, payload) SELECT $1 + i - 1, p \
             FROM unnest($2::bytea[]) WITH ORDINALITY AS t(p, i)",
            log_table(*p)
        );
        inserts.push((
            *p,
            client.prepare(&sql).await.context("prepare the insert")?,
        ));
    }
    let mut pace = params.write_every.map(tokio::time::interval);
    for (p, insert) in inserts.iter().cycle() {
        if Live::flag(&live.stop_writers) {
            break;
        }
        if let Some(pace) = &mut pace {
            pace.tick().await;
        }
        let started = Instant::now();
        let created_us = live.now_us();
        match write_batch(&mut client, (&reserve, insert), *p, created_us, params).await {
            Ok(n) => {
                Live::add(&live.written, n);
                live.committed(*p, n);
                if Live::flag(&live.measuring) {
                    record(&mut outcome.latencies.write, started.elapsed());
                }
            }
            Err(err) => {
                if !outcome.error(&live, &err, client.is_closed()) {
                    break;
                }
                tokio::time::sleep(IDLE_POLL).await;
            }
        }
    }
    Ok(outcome)
}

/// One write transaction; returns the messages committed.
async fn write_batch(
    client: &mut Client,
    (reserve, insert): (&Statement, &Statement),
    p: i64,
    created_us: i64,
    params: Params,
) -> Result<u64> {
    let batch = i64::try_from(params.write_batch)?;
    let tx = client.transaction().await.context("BEGIN")?;
    let row = tx
        .query_one(reserve, &[&p, &batch])
        .await
        .context("reserve offsets")?;
    let next: i64 = row.try_get(0)?;
    let base = next - batch;
    let payloads: Vec<Vec<u8>> = (base..next)
        .map(|seq| {
            let header = Header {
                created_us,
                partition: p,
                seq,
            };
            message::encode(header, params.payload)
        })
        .collect();
    let inserted = tx
        .execute(insert, &[&base, &payloads])
        .await
        .context("insert the batch")?;
    if inserted != u64::try_from(batch)? {
        bail!("the insert reported {inserted} rows, not {batch}");
    }
    tx.commit().await.context("COMMIT")?;
    Ok(inserted)
}

/// A reader's prepared statements.
struct ReaderStatements {
    lock: Statement,
    tip: Statement,
    range: Statement,
    advance: Statement,
}

impl ReaderStatements {
    async fn prepare(client: &Client, p: i64) -> Result<ReaderStatements> {
        let prepare = |sql: String| async move {
            client
                .prepare(&sql)
                .await
                .with_context(|| format!("prepare {sql}"))
        };
        Ok(ReaderStatements {
            lock: prepare(format!(
                "SELECT off FROM {CONSUMERS} WHERE group_id = $1 AND partition_id = $2 FOR UPDATE"
            ))
            .await?,
            tip: prepare(format!(
                "SELECT next FROM {COUNTERS} WHERE partition_id = $1"
            ))
            .await?,
            range: prepare(format!(
                "SELECT off, payload FROM {} WHERE off >= $1 AND off < $2 ORDER BY off",
                log_table(p)
            ))
            .await?,
            advance: prepare(format!(
                "UPDATE {CONSUMERS} SET off = $3 WHERE group_id = $1 AND partition_id = $2"
            ))
            .await?,
        })
    }
}

/// What one poll claimed: offsets `start..end` and the rows read.
struct Claim {
    start: i64,
    end: i64,
    rows: Vec<(i64, Vec<u8>)>,
}

/// One read transaction for (`group`, `p`).
async fn poll(
    client: &mut Client,
    statements: &ReaderStatements,
    (group, p): (i32, i64),
    read_batch: i64,
) -> Result<Claim> {
    let tx = client.transaction().await.context("BEGIN")?;
    let start: i64 = tx
        .query_one(&statements.lock, &[&group, &p])
        .await
        .context("lock the consumer row")?
        .try_get(0)?;
    let tip: i64 = tx
        .query_one(&statements.tip, &[&p])
        .await
        .context("read the counter tip")?
        .try_get(0)?;
    let end = tip.min(start + read_batch);
    let mut rows = Vec::new();
    if end > start {
        for row in tx
            .query(&statements.range, &[&start, &end])
            .await
            .context("read the offset range")?
        {
            rows.push((row.try_get(0)?, row.try_get(1)?));
        }
        tx.execute(&statements.advance, &[&group, &p, &end])
            .await
            .context("advance the consumer row")?;
    }
    tx.commit().await.context("COMMIT")?;
    Ok(Claim { start, end, rows })
}

/// The reader of (`group`, `p`): polls until the writers are done and it
/// has read everything (or it is told to stop).
pub async fn reader(
    mut client: Client,
    live: Arc<Live>,
    read_batch: i64,
    (group, p): (i32, i64),
) -> Result<TaskOutcome> {
    let mut outcome = TaskOutcome::new(format!("reader g{group}/p{p}"))?;
    let statements = ReaderStatements::prepare(&client, p).await?;
    let mut next = 0;
    while !Live::flag(&live.stop_readers) {
        let writers_done = Live::flag(&live.writers_done);
        let started = Instant::now();
        match poll(&mut client, &statements, (group, p), read_batch).await {
            Ok(claim) => {
                let claimed = claim.end - claim.start;
                next = follow(&mut outcome, &live, (p, next), &claim);
                if claimed > 0 && Live::flag(&live.measuring) {
                    record(&mut outcome.latencies.read, started.elapsed());
                }
                if claimed == 0 {
                    if writers_done {
                        break;
                    }
                    tokio::time::sleep(IDLE_POLL).await;
                }
            }
            Err(err) => {
                if !outcome.error(&live, &err, client.is_closed()) {
                    break;
                }
                tokio::time::sleep(IDLE_POLL).await;
            }
        }
    }
    outcome.position = Some((group, p, next));
    Ok(outcome)
}

/// Check a committed claim against the reader's position `next` (the
/// offset it expects), record end-to-end latencies; returns the new position.
fn follow(outcome: &mut TaskOutcome, live: &Live, (p, next): (i64, i64), claim: &Claim) -> i64 {
    if claim.start != next {
        outcome.violation(format!(
            "consumer row at {}, but the reader had read up to {next}",
            claim.start
        ));
    }
    if i64::try_from(claim.rows.len()).ok() != Some(claim.end - claim.start) {
        outcome.violation(format!(
            "claimed {}..{} but read {} rows",
            claim.start,
            claim.end,
            claim.rows.len()
        ));
    }
    let measuring = Live::flag(&live.measuring);
    let now_us = live.now_us();
    let mut expected = claim.start;
    for (off, payload) in &claim.rows {
        if *off != expected {
            let what = if *off < expected { "duplicate" } else { "gap" };
            outcome.violation(format!("{what}: offset {off} where {expected} was due"));
        }
        match message::decode(payload) {
            Some(header) if header.partition == p && header.seq == *off => {
                if measuring {
                    let e2e = u64::try_from(now_us - header.created_us).unwrap_or(0);
                    outcome.latencies.e2e.saturating_record(e2e);
                }
            }
            _ => outcome.violation(format!("offset {off} carries another message's payload")),
        }
        expected = off + 1;
    }
    Live::add(&live.read, claim.rows.len() as u64);
    claim.end
}
