//! One table's rows relayed from a source server to a target server, for a
//! shard move's snapshot copy: `COPY ... TO STDOUT` on the source, its
//! CopyData messages forwarded unchanged as the body of `COPY ... FROM
//! STDIN` on the target (a frontend CopyData has the same bytes as a
//! backend one), in binary or text format, without decoding a row. Both
//! servers count the rows in their COPY tags, which must agree.
//!
//! The relay owns both connections while it runs and gives them back
//! only when both COPYs have finished: after an error, or when the future
//! is dropped, they are closed, which ends both statements on the servers
//! (an unfinished COPY FROM is rolled back). The caller keeps the source's
//! transaction (and its snapshot) across tables by passing the connection
//! back in.

use bytes::BytesMut;

use crate::conn::server::{ServerConn, ServerError};
use crate::protocol::backend::{BackendFrame, BackendMessage};
use crate::protocol::copy_shape::CopyShape;
use crate::protocol::messages;
use router::config::CopyFormat;

/// How many bytes of CopyData are gathered before they are written to
/// the target (fewer, larger writes; Postgres's own COPY buffer is 64 kB).
const BATCH_BYTES: usize = 64 * 1024;

/// What a finished relay copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// Rows, as both servers' COPY tags said.
    pub rows: u64,
    /// CopyData bytes relayed (headers included).
    pub bytes: u64,
}

/// Why a relay failed. The connections are closed by then.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("the source server refused the copy: {0}")]
    Source(String),
    #[error("the target server refused the copy: {0}")]
    Target(String),
    #[error("the source sends {source_shape}, the target expects {target_shape}")]
    Shapes {
        source_shape: CopyShape,
        target_shape: CopyShape,
    },
    #[error("the source sent {sent} rows but the target stored {stored}")]
    Count { sent: u64, stored: u64 },
    #[error("unexpected message from the {0} server during a copy: {1}")]
    Unexpected(&'static str, String),
}

/// The two statements that copy `columns` of `table` (both already quoted
/// SQL: `"public"."orders"`, `"id"`), only the rows `filter` (an SQL
/// predicate) selects when given.
pub fn statements(
    table: &str,
    columns: &[String],
    filter: Option<&str>,
    format: CopyFormat,
) -> (String, String) {
    let columns = columns.join(", ");
    let format = format.as_str();
    let rows = match filter {
        Some(filter) => format!("(SELECT {columns} FROM {table} WHERE {filter})"),
        None => format!("{table} ({columns})"),
    };
    (
        format!("COPY {rows} TO STDOUT (FORMAT {format})"),
        format!("COPY {table} ({columns}) FROM STDIN (FORMAT {format})"),
    )
}

/// Run `copy_out` on `source` and `copy_in` on `target`, relaying the rows;
/// the connections come back ready for the next statement.
pub async fn relay(
    mut source: Box<ServerConn>,
    copy_out: &str,
    mut target: Box<ServerConn>,
    copy_in: &str,
) -> Result<(Copied, Box<ServerConn>, Box<ServerConn>), RelayError> {
    // The target first: a table it lacks costs no read on the source.
    let target_format = start(&mut target, copy_in, "target").await?;
    let source_format = match start(&mut source, copy_out, "source").await {
        Ok(format) => format,
        Err(err) => return Err(fail_target(target, err).await),
    };
    if source_format != target_format {
        let err = RelayError::Shapes {
            source_shape: source_format,
            target_shape: target_format,
        };
        return Err(fail_target(target, err).await);
    }
    let (sent, bytes) = match forward(&mut source, &mut target).await {
        Ok(done) => done,
        Err(err) => return Err(fail_target(target, err).await),
    };
    let mut out = BytesMut::new();
    messages::copy_done(&mut out);
    target.send(&out).await.map_err(ServerError::from)?;
    let stored = finish(&mut target, "target").await?;
    if sent != stored {
        return Err(RelayError::Count { sent, stored });
    }
    Ok((Copied { rows: sent, bytes }, source, target))
}

/// Send a COPY and read to its CopyOutResponse or CopyInResponse: the
/// format and width it announces.
async fn start(
    conn: &mut ServerConn,
    sql: &str,
    side: &'static str,
) -> Result<CopyShape, RelayError> {
    let mut out = BytesMut::new();
    messages::query(&mut out, sql);
    conn.send(&out).await.map_err(ServerError::from)?;
    loop {
        let frame = conn.read_message().await?;
        match frame.message() {
            BackendMessage::CopyOutResponse(body) | BackendMessage::CopyInResponse(body) => {
                return CopyShape::read(body)
                    .ok_or_else(|| RelayError::Unexpected(side, "a short copy response".into()));
            }
            BackendMessage::ErrorResponse(error) => {
                let message = error.message();
                ready(conn).await?;
                return Err(side_failed(side, message));
            }
            other if !other.kind().is_async() => {
                return Err(RelayError::Unexpected(side, format!("{:?}", other.kind())))
            }
            _ => {}
        }
    }
}

/// The source's CopyData to the target, up to the source's CommandComplete
/// and ReadyForQuery: the rows its tag counts, and the bytes relayed. The
/// target is watched meanwhile: it says nothing during a COPY FROM unless
/// it fails.
async fn forward(
    source: &mut ServerConn,
    target: &mut ServerConn,
) -> Result<(u64, u64), RelayError> {
    let mut batch = BytesMut::with_capacity(BATCH_BYTES + 1024);
    let mut bytes = 0u64;
    loop {
        let frame = tokio::select! {
            frame = source.read_message() => frame?,
            read = target.fill() => {
                if read.map_err(ServerError::from)? == 0 {
                    return Err(ServerError::Closed.into());
                }
                watch_target(target)?;
                continue;
            }
        };
        match frame.message() {
            BackendMessage::CopyData(_) => {
                bytes += frame.bytes().len() as u64;
                batch.extend_from_slice(frame.bytes());
                if batch.len() >= BATCH_BYTES {
                    target.send(&batch).await.map_err(ServerError::from)?;
                    batch.clear();
                }
            }
            BackendMessage::CopyDone => {
                target.send(&batch).await.map_err(ServerError::from)?;
                let rows = finish(source, "source").await?;
                return Ok((rows, bytes));
            }
            BackendMessage::ErrorResponse(error) => {
                let message = error.message();
                ready(source).await?;
                return Err(RelayError::Source(message));
            }
            other if !other.kind().is_async() => {
                return Err(RelayError::Unexpected(
                    "source",
                    format!("{:?}", other.kind()),
                ))
            }
            _ => {}
        }
    }
}

/// What the target sent during its COPY FROM: only asynchronous messages
/// are expected; an error ends the relay.
fn watch_target(target: &mut ServerConn) -> Result<(), RelayError> {
    while let Some(frame) = target
        .next_message()
        .map_err(|e| ServerError::Protocol(e.to_string()))?
    {
        match frame.message() {
            BackendMessage::ErrorResponse(error) => {
                return Err(RelayError::Target(error.message()))
            }
            other if !other.kind().is_async() => {
                return Err(RelayError::Unexpected(
                    "target",
                    format!("{:?}", other.kind()),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Read a COPY's end: its CommandComplete (`COPY n`: n returned) and
/// ReadyForQuery.
async fn finish(conn: &mut ServerConn, side: &'static str) -> Result<u64, RelayError> {
    let mut rows = None;
    loop {
        let frame = conn.read_message().await?;
        match frame.message() {
            BackendMessage::CommandComplete(tag) => {
                rows = match tag.split_count() {
                    (b"COPY", count) => count,
                    _ => None,
                }
            }
            BackendMessage::ErrorResponse(error) => {
                let message = error.message();
                ready(conn).await?;
                return Err(side_failed(side, message));
            }
            BackendMessage::ReadyForQuery(_) => {
                return rows.ok_or_else(|| RelayError::Unexpected(side, "no COPY tag".into()))
            }
            _ => {}
        }
    }
}

/// A failed relay ends the target's COPY FROM with CopyFail, so it rolls
/// back at once; the error given stays the one reported.
async fn fail_target(mut target: Box<ServerConn>, err: RelayError) -> RelayError {
    let mut out = BytesMut::new();
    messages::copy_fail(&mut out, "pgshard: the copy from the source failed");
    if target.send(&out).await.is_ok() {
        // Its ErrorResponse for the CopyFail, then ReadyForQuery.
        let _ = ready(&mut target).await;
    }
    err
}

/// Read up to ReadyForQuery.
async fn ready(conn: &mut ServerConn) -> Result<(), ServerError> {
    loop {
        let frame: BackendFrame = conn.read_message().await?;
        if let BackendMessage::ReadyForQuery(_) = frame.message() {
            return Ok(());
        }
    }
}

/// The error `side` ("source" or "target") reported.
fn side_failed(side: &str, message: String) -> RelayError {
    match side {
        "source" => RelayError::Source(message),
        _ => RelayError::Target(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_for_a_whole_table_and_a_filtered_one() {
        let columns = ["\"k\"".to_owned(), "\"v\"".to_owned()];
        assert_eq!(
            statements("\"public\".\"t\"", &columns, None, CopyFormat::Binary),
            (
                "COPY \"public\".\"t\" (\"k\", \"v\") TO STDOUT (FORMAT binary)".to_owned(),
                "COPY \"public\".\"t\" (\"k\", \"v\") FROM STDIN (FORMAT binary)".to_owned(),
            )
        );
        assert_eq!(
            statements("\"t\"", &columns, Some("\"k\" > 1"), CopyFormat::Text),
            (
                "COPY (SELECT \"k\", \"v\" FROM \"t\" WHERE \"k\" > 1) TO STDOUT (FORMAT text)"
                    .to_owned(),
                "COPY \"t\" (\"k\", \"v\") FROM STDIN (FORMAT text)".to_owned(),
            )
        );
    }
}
