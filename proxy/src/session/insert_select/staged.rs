//! An INSERT ... SELECT with `ON CONFLICT`, `RETURNING` or `OVERRIDING`
//! ([`InsertSelect::staged`]): its rows are copied into a stage table on
//! each shard (inside the transaction spanning the shards), then each shard
//! runs the client's INSERT from its stage, its clauses unchanged, and
//! drops the stage. RETURNING rows from every shard go to the client under
//! the first shard's RowDescription (in the simple protocol; in the
//! extended one the Describe gave it), in the client's result formats; an
//! omnisharded target's from the first shard only (every copy returns the
//! same). The count is the shards' INSERT tags' sum (one copy's for an
//! omnisharded target).

use bytes::{Bytes, BytesMut};
use router::insert_select::{Conflict, InsertSelect, NotMoved};

use super::super::gather::Stop;
use super::super::{End, Session};
use crate::errors::ClientError;
use crate::pool::Pooled;
use crate::protocol::backend::BackendMessage;
use crate::protocol::frontend::Bind;
use crate::protocol::{messages, sqlstate};

/// How the shards' INSERTs answer: the client's result formats, and
/// whether the client gets a RowDescription (the simple protocol's).
pub(super) struct Answer<'a> {
    pub formats: &'a [i16],
    pub describe: bool,
}

impl Session {
    /// `ON CONFLICT ON CONSTRAINT name` into a sharded table: the
    /// constraint's columns (the coordinator's catalog, `server`) must
    /// include the sharding key; else the client's error. A constraint the
    /// catalog does not know is left to the shards' own error.
    pub(super) async fn conflict_refusal(
        &mut self,
        server: &mut Pooled,
        into: &InsertSelect,
    ) -> Result<Option<ClientError>, Stop> {
        let Conflict::Constraint { name, keys } = &into.conflict else {
            return Ok(None);
        };
        let literal = |s: &str| s.replace('\'', "''");
        let sql = format!(
            "SELECT a.attname FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = \
             c.conrelid AND a.attnum = ANY (c.conkey) WHERE c.conrelid = to_regclass('{}') \
             AND c.conname = '{}'",
            literal(&into.table),
            literal(name)
        );
        let answer = server.conn.query(&sql).await.map_err(|_| Stop::Broken)?;
        if let Some((code, message)) = answer.error {
            return Ok(Some(ClientError::from_server(&code, message)));
        }
        let columns: Vec<String> = answer
            .rows
            .iter()
            .filter_map(|row| row.first().cloned().flatten())
            .collect();
        match columns.is_empty() || columns.iter().any(|c| keys.contains(c)) {
            true => Ok(None),
            false => Ok(Some(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "this INSERT ... SELECT takes each row's sharding key from its SELECT, so \
                     its rows may belong on any shard, and pgshard cannot send them there: {} \
                     (constraint {name} is on {})",
                    NotMoved::ConflictWithoutKey,
                    columns.join(", ")
                ),
            ))),
        }
    }

    /// Each shard's INSERT from its stage `stage` (filled), then the stage
    /// dropped: the rows inserted (RETURNING rows written for the client as
    /// `answer` says), or the error for the client (`None`: written).
    pub(super) async fn insert_from_stages(
        &mut self,
        shards: &[usize],
        into: &InsertSelect,
        (stage, columns): (&str, &[String]),
        answer: Answer<'_>,
    ) -> Result<Result<u64, Option<Bytes>>, End> {
        let Some(mut servers) = self.txn_servers(shards).await? else {
            // Its error is written for the client.
            return Ok(Err(None));
        };
        let out = request(into, (stage, columns), answer.formats);
        // The shards' unnamed statement is now this one.
        self.pipeline.unnamed_dropped();
        let mut sent = 0;
        let mut failure: Option<Bytes> = None;
        for server in servers.iter_mut() {
            if server.conn.send(&out).await.is_err() {
                failure = Some(lost());
                break;
            }
            sent += 1;
        }
        let mut counts = Vec::new();
        let mut broken = Vec::new();
        for (i, server) in servers.iter_mut().enumerate().take(sent) {
            // An omnisharded target's copies return the same rows.
            let relay = !into.copies || i == 0;
            let described = answer.describe && i == 0 && into.returning;
            match self
                .shard_answer(server, relay, described, &mut failure)
                .await?
            {
                Ok(Some(count)) => counts.push(count),
                Ok(None) => {}
                Err(()) => {
                    broken.push(i);
                    failure.get_or_insert_with(lost);
                }
            }
        }
        self.routing.placing_write();
        for (i, (&shard, server)) in shards.iter().zip(servers).enumerate() {
            if !broken.contains(&i) {
                self.hold(shard, server);
            }
        }
        self.routing.placed();
        if !broken.is_empty() {
            // That shard's part of the transaction is gone.
            self.txn.fail();
        }
        let total = match into.copies {
            true => counts.first().copied().unwrap_or_default(),
            false => counts.iter().sum(),
        };
        if into.copies && counts.iter().any(|&n| n != total) {
            let error = ClientError::new(
                "XX001",
                "the shards' INSERT counts of an omnisharded table differ",
            );
            failure.get_or_insert_with(|| encode(&error));
        }
        Ok(failure.map_or(Ok(total), |error| Err(Some(error))))
    }

    /// A shard's reply to its INSERT and DROP, up to its ReadyForQuery:
    /// the INSERT's count (`None` after an error, kept in `failure` when it
    /// is the first); its RETURNING rows written for the client (`relay`),
    /// with its RowDescription (`described`), flushed as they come so that
    /// pgshard holds no more of them than a buffer. `Err`: the connection
    /// broke.
    async fn shard_answer(
        &mut self,
        server: &mut Pooled,
        relay: bool,
        described: bool,
        failure: &mut Option<Bytes>,
    ) -> Result<Result<Option<u64>, ()>, End> {
        let mut count = None;
        let mut failed = false;
        loop {
            let Ok(message) = server.conn.read_message().await else {
                return Ok(Err(()));
            };
            match message.message() {
                BackendMessage::RowDescription(_) if described && failure.is_none() => {
                    let message = crate::execute::gather::finish::for_client(message);
                    self.client.out().extend_from_slice(message.bytes());
                }
                BackendMessage::DataRow(_) if relay && failure.is_none() => {
                    self.client.out().extend_from_slice(message.bytes());
                    if self.client.out().len() >= crate::session::CLIENT_FLUSH_AT {
                        self.client.flush().await?;
                    }
                }
                BackendMessage::CommandComplete(tag) if count.is_none() => {
                    count = tag.split_count().1;
                }
                BackendMessage::ErrorResponse(fields) => {
                    if failure.is_none() {
                        self.shared.metrics.error(fields.code().unwrap_or_default());
                        *failure = Some(Bytes::copy_from_slice(message.bytes()));
                    }
                    failed = true;
                }
                BackendMessage::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        Ok(Ok(count.filter(|_| !failed)))
    }
}

/// What each shard is sent: the client's INSERT from its stage
/// `stage` (its rows in `formats`), described, then the stage dropped.
fn request(into: &InsertSelect, (stage, columns): (&str, &[String]), formats: &[i16]) -> BytesMut {
    let none = Bind {
        portal: Bytes::new(),
        statement: Bytes::new(),
        param_formats: Vec::new(),
        params: Vec::new(),
        result_formats: Vec::new(),
    };
    let mut out = BytesMut::new();
    let insert = into.shard_insert_sql(stage, columns);
    messages::parse(&mut out, b"", insert.as_bytes(), &[]);
    messages::bind(&mut out, &none, b"", formats);
    messages::describe(&mut out, crate::protocol::frontend::Named::Portal, b"");
    messages::execute_rows(&mut out, b"", 0);
    messages::parse(&mut out, b"", into.shard_drop_sql(stage).as_bytes(), &[]);
    messages::bind(&mut out, &none, b"", &[]);
    messages::execute_rows(&mut out, b"", 0);
    messages::sync(&mut out);
    out
}

fn encode(error: &ClientError) -> Bytes {
    let mut out = BytesMut::new();
    error.encode(&mut out);
    out.freeze()
}

fn lost() -> Bytes {
    encode(&ClientError::shard_lost())
}
