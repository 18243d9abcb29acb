//! The coordinator's stage of an INSERT ... SELECT read back with `COPY
//! TO STDOUT` and each row sent to its shard's COPY (or every shard's, an
//! omnisharded target's), in batches of [`BATCH`] bytes, counted against
//! `cross_shard_gather_limit`.

use bytes::{Bytes, BytesMut};
use router::copy::{CopyError, RowError, RowSplitter};

use super::super::{End, Session};
use super::{encode, moved_limit, Relayed, STAGE};
use crate::errors::ClientError;
use crate::pool::Pooled;
use crate::protocol::backend::BackendMessage;
use crate::protocol::{messages, sqlstate};

/// CopyData sent to a shard at once.
const BATCH: usize = 64 * 1024;

impl Session {
    /// `COPY pg_temp.pgshard_ins TO STDOUT` on the coordinator, each row
    /// sent to its shard's COPY (`servers`, by shard) as `splitter`
    /// places it, counted against `cross_shard_gather_limit`; after a
    /// failure the coordinator's rows are read to its end and dropped.
    pub(super) async fn relay_stage(
        &mut self,
        server: &mut Pooled,
        servers: &mut [Pooled],
        mut splitter: RowSplitter,
    ) -> Result<Relayed, End> {
        let mut out = BytesMut::new();
        messages::query(&mut out, &format!("COPY pg_temp.{STAGE} TO STDOUT"));
        if server.conn.send(&out).await.is_err() {
            return Ok(Relayed {
                result: Err(encode(&coordinator_gone())),
                broken: true,
            });
        }
        let limit = self.shared.config().general.cross_shard_gather_limit;
        let mut batches: Vec<BytesMut> = servers.iter().map(|_| BytesMut::new()).collect();
        let (mut bytes, mut line) = (0u64, 0u64);
        let mut failure: Option<Bytes> = None;
        loop {
            let Ok(message) = server.conn.read_message().await else {
                let result = Err(failure.unwrap_or_else(|| encode(&coordinator_gone())));
                return Ok(Relayed {
                    result,
                    broken: true,
                });
            };
            let done = match message.message() {
                BackendMessage::CopyData(row) if failure.is_none() => {
                    line += 1;
                    bytes += row.len() as u64;
                    if bytes > limit.bytes {
                        let bound = format!("{} bytes", limit.bytes);
                        failure = Some(encode(&moved_limit(&bound, "bytes")));
                        continue;
                    }
                    match splitter.push(row) {
                        Ok(rows) => place(rows, &mut batches),
                        Err(why) => failure = Some(encode(&row_error(&why, line))),
                    }
                    false
                }
                BackendMessage::CopyDone if failure.is_none() => {
                    match splitter.finish() {
                        Ok(rows) => place(rows, &mut batches),
                        Err(why) => failure = Some(encode(&row_error(&why, line))),
                    }
                    true
                }
                BackendMessage::ErrorResponse(_) if failure.is_none() => {
                    failure = Some(Bytes::copy_from_slice(message.bytes()));
                    continue;
                }
                BackendMessage::ReadyForQuery(_) => break,
                _ => continue,
            };
            if failure.is_some() {
                continue;
            }
            if let Err(lost) = send_batches(servers, &mut batches, done).await {
                failure = Some(lost);
            }
        }
        Ok(Relayed {
            result: failure.map_or(Ok(()), Err),
            broken: false,
        })
    }
}

/// Rows the splitter placed, appended to their shards' batches (`None`:
/// every shard's).
fn place(rows: Vec<router::copy::Placed>, batches: &mut [BytesMut]) {
    for (database, row) in rows {
        for (i, batch) in batches.iter_mut().enumerate() {
            if database.is_none_or(|d| d == i) {
                batch.extend_from_slice(&row);
            }
        }
    }
}

/// Send each batch that is full (every one that is not empty when
/// `done`) to its shard's COPY; `Err`: a shard's connection broke.
async fn send_batches(
    servers: &mut [Pooled],
    batches: &mut [BytesMut],
    done: bool,
) -> Result<(), Bytes> {
    for (server, batch) in servers.iter_mut().zip(batches.iter_mut()) {
        if (done && !batch.is_empty()) || batch.len() >= BATCH {
            let mut out = BytesMut::with_capacity(batch.len() + 5);
            messages::copy_data(&mut out, batch);
            batch.clear();
            if server.conn.send(&out).await.is_err() {
                return Err(encode(&ClientError::shard_lost()));
            }
        }
    }
    Ok(())
}

/// A row of the SELECT that cannot be placed (`line`: its number among
/// the SELECT's rows): a NULL key (which no shard holds) or a key the
/// sharding config has no shard for.
fn row_error(why: &CopyError, line: u64) -> ClientError {
    let (code, reason) = match why {
        CopyError::Row {
            why: RowError::NullKey { column },
            ..
        } => (
            "23502",
            format!(
                "its sharding key {column} is NULL, and a row without a key belongs on no shard"
            ),
        ),
        CopyError::Row { why, .. } => ("22P04", why.to_string()),
        other => ("22P04", other.to_string()),
    };
    ClientError::new(
        code,
        format!("INSERT ... SELECT: row {line} of the SELECT cannot be sent to a shard: {reason}"),
    )
}

/// The coordinator's connection broke while its stage was read.
fn coordinator_gone() -> ClientError {
    ClientError::new(
        sqlstate::CONNECTION_FAILURE,
        "the coordinator's server closed the connection while its rows went to the shards",
    )
}
