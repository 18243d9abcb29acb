//! Cross-shard SELECTs in a session: the merge a fanned-out simple query
//! needs (planned by [`router::merge`]), refused with 0A000 when pgshard
//! cannot answer it exactly, and the shards' text ordering, learned once
//! per database.

use std::sync::Arc;

use bytes::BytesMut;
use router::merge::{self, Bound, Shape};
use router::summary::{StatementKind, Summary};
use tokio::io::{AsyncRead, AsyncWrite};

use super::fan_out::MergeRequest;
use super::Session;
use crate::errors::ClientError;
use crate::fanout::Window;
use crate::pool::Pooled;
use crate::protocol::backend::sqlstate;
use crate::protocol::{messages, rows};

/// What the shards' collation must be for byte order to be Postgres's:
/// `datcollate` (libc) or `datlocale` (builtin provider, Postgres 17+).
const COLLATION_QUERY: &str = "SELECT datcollate, to_jsonb(d)->>'datlocprovider', to_jsonb(d)->>'datlocale' FROM pg_database d WHERE datname = current_database()";

/// A fanned-out statement's rows: streamed as they come, or merged.
pub(super) enum Rows {
    Concatenated,
    /// Merged; the shards run `sql`.
    Merged {
        sql: Option<String>,
        request: MergeRequest,
    },
}

/// The merge a simple query that runs on several shards needs; `Err` when
/// its answer cannot be exact.
pub(super) fn simple_query_rows(summary: &Summary, sql: &str) -> Result<Rows, ClientError> {
    let [statement] = summary.statements.as_slice() else {
        return Ok(Rows::Concatenated);
    };
    if statement.kind != StatementKind::Select || statement.write {
        return Ok(Rows::Concatenated);
    }
    match merge::plan(sql) {
        Shape::Concat => Ok(Rows::Concatenated),
        Shape::Refuse(why) => Err(ClientError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            why.to_string(),
        )),
        Shape::Merge(mut plan) => {
            let bound = |bound: Option<Bound>| match bound {
                None => Ok(None),
                Some(Bound::Value(n)) => Ok(Some(u64::try_from(n).unwrap_or(0))),
                Some(Bound::Param(n)) => Err(ClientError::new(
                    sqlstate::SYNTAX_ERROR,
                    format!("there is no parameter ${n} in a simple query"),
                )),
            };
            let window = Window {
                offset: bound(plan.limit.offset)?.unwrap_or(0),
                count: bound(plan.limit.count)?,
            };
            let sql = plan.shard_sql.take();
            let request = MergeRequest {
                plan: Arc::new(plan),
                window,
            };
            Ok(Rows::Merged { sql, request })
        }
    }
}

/// A statement bound in the extended protocol that runs on several shards:
/// its rows must concatenate; merges run in the simple protocol only so far.
pub(super) fn extended_rows(summary: &Summary, sql: &str) -> Result<(), ClientError> {
    match simple_query_rows(summary, sql)? {
        Rows::Concatenated => Ok(()),
        Rows::Merged { .. } => Err(ClientError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "cross-shard ORDER BY, LIMIT, OFFSET, DISTINCT, GROUP BY and aggregates are merged for simple queries only so far, not yet in the extended protocol: add the sharding key to the WHERE clause, or send the statement as a simple query",
        )),
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    /// Whether this database's shards order text bytewise; asked of
    /// `servers[0]` the first time (a server that cannot say counts as no).
    pub(super) async fn bytewise_text(&mut self, servers: &mut [Pooled]) -> bool {
        let database = self.info.database.clone();
        if let Some(known) = self
            .state
            .bytewise_text
            .lock()
            .ok()
            .and_then(|m| m.get(&database).copied())
        {
            return known;
        }
        let Some(server) = servers.first_mut() else {
            return false;
        };
        let Some(bytewise) = ask_collation(server).await else {
            return false;
        };
        if let Ok(mut known) = self.state.bytewise_text.lock() {
            known.insert(database, bytewise);
        }
        bytewise
    }
}

/// Run [`COLLATION_QUERY`] on `server`: `None` if it fails.
async fn ask_collation(server: &mut Pooled) -> Option<bool> {
    let mut out = BytesMut::new();
    messages::query(&mut out, COLLATION_QUERY);
    server.conn.send(&out).await.ok()?;
    let mut row: Option<Vec<Option<String>>> = None;
    loop {
        let message = loop {
            if let Some(message) = server.conn.next_message().ok()? {
                break message;
            }
            if server.conn.fill().await.ok()? == 0 {
                return None;
            }
        };
        match message[0] {
            b'D' => row = text_values(&message),
            b'Z' => {
                server.conn.status = message.get(5).copied().unwrap_or(b'I');
                break;
            }
            _ => {}
        }
    }
    let row = row?;
    let c_like = |name: &Option<String>| {
        matches!(
            name.as_deref(),
            Some("C" | "POSIX" | "C.UTF-8" | "C.utf8" | "ucs_basic")
        )
    };
    Some(match row.get(1).cloned().flatten().as_deref() {
        // libc (and servers from before locale providers).
        None | Some("c") => c_like(row.first()?),
        Some("b") => c_like(row.get(2)?),
        _ => false,
    })
}

/// A text-format DataRow's values.
fn text_values(message: &[u8]) -> Option<Vec<Option<String>>> {
    let row = rows::parse_row(message)?;
    let values = (0..row.values.len()).map(|c| {
        row.value(c)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    });
    Some(values.collect())
}
