//! The job queue's client tasks (DESIGN.md §5): writers insert one message
//! per statement into their partitions' queue tables in turn; readers (a
//! few per partition, competing) take the oldest row with
//! `FOR UPDATE SKIP LOCKED LIMIT 1`, delete it and insert it into the
//! partition's archive, one message per transaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio_postgres::{Client, Statement};

use super::message::{self, Header};
use super::schema::{archive_table, jobs_table};
use super::stats::{record, Live, TaskOutcome};

/// How long a reader that found the queue empty waits before trying again.
const IDLE_POLL: Duration = Duration::from_millis(2);

/// A writer: one message per statement to its partitions in turn until
/// told to stop; `write_every` paces it when throttled.
pub async fn writer(
    client: Client,
    live: Arc<Live>,
    (payload, write_every): (usize, Option<Duration>),
    (w, partitions): (u32, Vec<i64>),
) -> Result<TaskOutcome> {
    let mut outcome = TaskOutcome::new(format!("queue writer {w}"))?;
    let mut inserts = Vec::new();
    for p in &partitions {
        let sql = format!("INSERT INTO {} (payload) VALUES ($1)", jobs_table(*p));
        inserts.push((
            *p,
            client.prepare(&sql).await.context("prepare the insert")?,
        ));
    }
    let mut pace = write_every.map(tokio::time::interval);
    for (seq, (p, insert)) in (0..).zip(inserts.iter().cycle()) {
        if Live::flag(&live.stop_writers) {
            break;
        }
        if let Some(pace) = &mut pace {
            pace.tick().await;
        }
        let started = Instant::now();
        let header = Header {
            created_us: live.now_us(),
            partition: *p,
            seq,
        };
        let body = message::encode(header, payload);
        match client.execute(insert, &[&body]).await {
            Ok(_) => {
                Live::add(&live.written, 1);
                live.committed(*p, 1);
                if Live::flag(&live.measuring) {
                    record(&mut outcome.latencies.write, started.elapsed());
                }
            }
            Err(err) => {
                let err = anyhow::Error::from(err).context("insert a message");
                if !outcome.error(&live, &err, client.is_closed()) {
                    break;
                }
                tokio::time::sleep(IDLE_POLL).await;
            }
        }
    }
    Ok(outcome)
}

/// A reader's prepared statements.
struct ReaderStatements {
    take: Statement,
    delete: Statement,
    archive: Statement,
}

/// The message a transaction moved to the archive, if the queue had one.
async fn take_one(client: &mut Client, statements: &ReaderStatements) -> Result<Option<Vec<u8>>> {
    let tx = client.transaction().await.context("BEGIN")?;
    let Some(row) = tx
        .query_opt(&statements.take, &[])
        .await
        .context("take the oldest message")?
    else {
        tx.commit().await.context("COMMIT")?;
        return Ok(None);
    };
    let id: i64 = row.try_get(0)?;
    let payload: Vec<u8> = row.try_get(1)?;
    let deleted = tx
        .execute(&statements.delete, &[&id])
        .await
        .context("delete it")?;
    if deleted != 1 {
        bail!("deleting message {id} deleted {deleted} rows");
    }
    tx.execute(&statements.archive, &[&id, &payload])
        .await
        .context("archive it")?;
    tx.commit().await.context("COMMIT")?;
    Ok(Some(payload))
}

/// Reader `r` of partition `p`: moves messages to the archive until the
/// writers are done and the queue is empty (or it is told to stop).
pub async fn reader(
    mut client: Client,
    live: Arc<Live>,
    (r, p): (u32, i64),
) -> Result<TaskOutcome> {
    let mut outcome = TaskOutcome::new(format!("queue reader {r} of p{p}"))?;
    let (jobs, archive) = (jobs_table(p), archive_table(p));
    let statements = ReaderStatements {
        take: client
            .prepare(&format!(
                "SELECT id, payload FROM {jobs} ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
            ))
            .await
            .context("prepare the take")?,
        delete: client
            .prepare(&format!("DELETE FROM {jobs} WHERE id = $1"))
            .await
            .context("prepare the delete")?,
        archive: client
            .prepare(&format!(
                "INSERT INTO {archive} (id, payload) VALUES ($1, $2)"
            ))
            .await
            .context("prepare the archive insert")?,
    };
    while !Live::flag(&live.stop_readers) {
        let writers_done = Live::flag(&live.writers_done);
        let started = Instant::now();
        match take_one(&mut client, &statements).await {
            Ok(Some(payload)) => {
                Live::add(&live.read, 1);
                let measuring = Live::flag(&live.measuring);
                if measuring {
                    record(&mut outcome.latencies.read, started.elapsed());
                }
                match message::decode(&payload) {
                    Some(header) if header.partition == p => {
                        if measuring {
                            let e2e = live.now_us() - header.created_us;
                            let e2e = u64::try_from(e2e).unwrap_or(0);
                            outcome.latencies.e2e.saturating_record(e2e);
                        }
                    }
                    _ => outcome.violation(format!("a message in p{p} belongs elsewhere")),
                }
            }
            Ok(None) if writers_done => break,
            Ok(None) => tokio::time::sleep(IDLE_POLL).await,
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
