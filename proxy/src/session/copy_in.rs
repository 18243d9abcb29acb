//! `COPY table FROM STDIN` into a sharded (or omnisharded) table: a
//! server of every shard runs the COPY inside a transaction (the client's,
//! which every shard joins, or outside one a transaction of its own on
//! each), the client's data is cut into rows (`router::copy`: text, CSV,
//! binary) and each row is sent to its shard's COPY (an omnisharded
//! table's to every shard) in CopyData batches of at most [`BATCH`] bytes
//! (a send waits for its server, so memory stays bounded whatever the size
//! of the COPY). At the client's CopyDone every shard ends its COPY; one
//! `COPY n` with the total goes to the client. A row without a usable key,
//! malformed data, the client's CopyFail or a shard's error ends every
//! shard's COPY with an error: the transaction is aborted on every shard
//! (the client's then rolls back as on one Postgres), and a COPY of its
//! own is rolled back everywhere. A COPY of its own that succeeded commits
//! on every shard as one unit (`commit.rs`: two-phase when
//! `two_phase_commit` and `two_phase_commit_auto` are on).
//!
//! In the simple protocol the Query runs it; in the extended protocol its
//! Bind is answered here (BindComplete, NoData for a Describe) and its
//! Execute runs it, without a ReadyForQuery: the Sync after CopyDone gets
//! that (Syncs during the COPY are ignored, as Postgres ignores them), and
//! after an error the rest up to Sync is skipped.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::copy::{plan_copy, plan_copy_into, CopyError, CopyPlan, RowSplitter};

use super::dispatch::Dispatch;
use super::transaction::{Placement, CROSS_SHARD_TXN};
use super::{End, Session};
use crate::errors::ClientError;
use crate::metrics::RouteKind;
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendKind, BackendMessage};
use crate::protocol::frontend::FrontendKind;
use crate::protocol::messages;
use crate::protocol::rows::parse_row;
use crate::protocol::sqlstate;

/// CopyData sent to a shard at once.
const BATCH: usize = 64 * 1024;

/// A server's reply up to its ReadyForQuery: its CommandComplete tags and
/// its first error (whole message), or `Err` when the connection broke.
type Reply = Result<(Vec<String>, Option<Bytes>), ()>;

impl Session {
    /// Run the COPY `sql` into a sharded table (simple protocol).
    pub(super) async fn copy_sharded(&mut self, sql: &str) -> Result<Dispatch, End> {
        self.run_copy(sql, true).await?;
        Ok(Dispatch::Done)
    }

    /// A Bind of a COPY into a sharded table (extended protocol): answered
    /// here, the COPY runs at its Execute.
    pub(super) fn bind_copy(&mut self, sql: &[u8]) {
        self.local_reply(messages::bind_complete);
        self.phase
            .bind_copy(String::from_utf8_lossy(sql).into_owned());
    }

    /// A message while a COPY's portal is bound: whether it was answered
    /// (any other message drops the portal and goes its usual way).
    pub(super) async fn on_copy_portal(&mut self, kind: FrontendKind) -> Result<bool, End> {
        match kind {
            FrontendKind::Describe => self.local_reply(messages::no_data),
            FrontendKind::Flush => {}
            FrontendKind::Execute => {
                let Some(sql) = self.phase.take_copy() else {
                    return Ok(false);
                };
                let status = self.status();
                self.plan.drain_local(self.client.out(), status);
                self.run_copy(&sql, false).await?;
            }
            _ => {
                self.phase.end_portal();
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Refuse the COPY (`simple`: with its ReadyForQuery).
    fn copy_refused(&mut self, error: ClientError, simple: bool) {
        self.shared.metrics.route(RouteKind::Refused);
        self.refuse(error, simple);
    }

    /// The transaction the shards' COPYs run in: the client's, or (`true`)
    /// one pgshard opens now for them (committed on every shard together
    /// by the caller); an error when the client's is on one shard only.
    pub(super) async fn open_copy_scope(
        &mut self,
        shards: &[usize],
    ) -> Result<Result<bool, ClientError>, End> {
        let implicit = match self.place(Some(shards), false) {
            Placement::FanOut => true,
            Placement::FanOutInTxn => false,
            _ => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN);
                return Ok(Err(error));
            }
        };
        if implicit {
            if self.attached.is_some() {
                self.detach().await?;
            }
            self.txn.begin_implicit();
        }
        Ok(Ok(implicit))
    }

    /// Run the COPY `sql`; `simple`: a Query's (the client gets its
    /// ReadyForQuery), else an Execute's. Inside a transaction pgshard
    /// opened, every shard joins it and the COPY is part of it; outside
    /// one, it runs in a transaction of its own on every shard, committed
    /// together (two-phase when on) or rolled back together.
    async fn run_copy(&mut self, sql: &str, simple: bool) -> Result<(), End> {
        let plan = match plan_copy(sql, self.cluster.sharding()) {
            // Which column-only key the table has: its columns say.
            Err(CopyError::NeedsColumns { table }) => {
                let columns = self.columns_now(&table).await?;
                plan_copy_into(
                    sql,
                    self.cluster.sharding(),
                    columns.as_deref().map(Vec::as_slice),
                )
            }
            planned => planned,
        };
        let plan = match plan {
            Ok(plan) => plan,
            Err(why) => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string());
                self.copy_refused(error, simple);
                return Ok(());
            }
        };
        let shards: Vec<usize> = (0..self.cluster.shards()).collect();
        let implicit = match self.open_copy_scope(&shards).await? {
            Ok(implicit) => implicit,
            Err(error) => {
                self.copy_refused(error, simple);
                return Ok(());
            }
        };
        let servers = match self.txn_servers(&shards).await? {
            Some(servers) => Ok(servers),
            // Its error is written for the client.
            None => Err(()),
        };
        let outcome = match servers {
            Ok(mut servers) => {
                let mut sent = 0;
                let started = self.start_copies(&mut servers, &plan, sql, &mut sent).await;
                let streamed = match started {
                    Ok((splitter, response)) => {
                        self.client.out().extend_from_slice(&response);
                        self.client.flush().await?;
                        self.stream_rows(&mut servers, splitter).await?
                    }
                    Err(error) => Err(error),
                };
                self.end_copies(&shards, servers, sent, streamed, plan.entry.is_none())
                    .await
            }
            Err(()) => Err(None),
        };
        let outcome = match implicit {
            false => outcome,
            true => {
                let auto = self.shared.config().general.two_phase_commit_auto;
                match self.end_spanning(outcome.is_ok(), auto).await? {
                    Err(error) if outcome.is_ok() => Err(Some(encode(error))),
                    _ => outcome,
                }
            }
        };
        self.copy_answered(outcome, simple).await
    }

    /// The client's answer to its COPY: `COPY n`, or the error (`None`:
    /// already written), then its ReadyForQuery (simple protocol) or, in the
    /// extended protocol after an error, skipping to Sync.
    async fn copy_answered(
        &mut self,
        outcome: Result<u64, Option<Bytes>>,
        simple: bool,
    ) -> Result<(), End> {
        match outcome {
            Ok(total) => messages::command_complete(self.client.out(), &format!("COPY {total}")),
            Err(error) => {
                if let Some(error) = error {
                    self.client.out().extend_from_slice(&error);
                }
                if !simple {
                    self.phase.skip();
                }
            }
        }
        if simple {
            let status = self.status();
            messages::ready_for_query(self.client.out(), status);
        }
        Ok(self.client.flush().await?)
    }

    /// The COPY on every server (`sent`: how many got it), up to
    /// their CopyInResponse; the row splitter and the first server's
    /// CopyInResponse for the client.
    pub(super) async fn start_copies(
        &mut self,
        servers: &mut [Pooled],
        plan: &CopyPlan,
        sql: &str,
        sent: &mut usize,
    ) -> Result<(RowSplitter, Bytes), Bytes> {
        let columns = match plan.columns.is_empty() {
            true => table_columns(&mut servers[0], &plan.table, true)
                .await
                .unwrap_or_default(),
            false => Vec::new(),
        };
        let splitter = RowSplitter::new(plan.clone(), columns.as_slice()).map_err(|e| {
            encode(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                e.to_string(),
            ))
        })?;
        let mut query = BytesMut::new();
        messages::query(&mut query, sql);
        for server in servers.iter_mut() {
            server.conn.send(&query).await.map_err(|_| lost())?;
            *sent += 1;
        }
        let mut response = None;
        for server in servers.iter_mut() {
            loop {
                let message = next(server).await.ok_or_else(lost)?;
                match message.kind() {
                    BackendKind::CopyInResponse => {
                        response.get_or_insert(message.into_bytes());
                        break;
                    }
                    BackendKind::ErrorResponse => return Err(message.into_bytes()),
                    _ => {}
                }
            }
        }
        Ok((splitter, response.ok_or_else(lost)?))
    }

    /// Route the client's CopyData rows until its CopyDone (`Ok(Ok(n))`
    /// with rows sent) or the COPY fails (`Ok(Err(error))`: the client has
    /// been told nothing yet).
    async fn stream_rows(
        &mut self,
        servers: &mut [Pooled],
        mut splitter: RowSplitter,
    ) -> Result<Result<(), Bytes>, End> {
        let mut batches: Vec<BytesMut> = servers.iter().map(|_| BytesMut::new()).collect();
        loop {
            let frame = match self.client.read_message() {
                Ok(Some(frame)) => frame,
                Ok(None) => {
                    self.client.fill().await?;
                    continue;
                }
                Err(e) => return Err(End::protocol(e)),
            };
            let body = frame.body();
            let rows = match frame.kind {
                FrontendKind::CopyData => splitter.push(body),
                FrontendKind::CopyDone => splitter.finish(),
                FrontendKind::CopyFail => {
                    let why = String::from_utf8_lossy(body.strip_suffix(&[0]).unwrap_or(body))
                        .into_owned();
                    let error = ClientError::new("57014", format!("COPY from stdin failed: {why}"));
                    return Ok(Err(encode(error)));
                }
                // Flush and Sync mean nothing in COPY IN.
                FrontendKind::Flush | FrontendKind::Sync => continue,
                other => {
                    let error = ClientError::new(
                        sqlstate::PROTOCOL_VIOLATION,
                        format!(
                            "unexpected message type {} during COPY from stdin",
                            other.letter()
                        ),
                    );
                    return Ok(Err(encode(error)));
                }
            };
            let rows = match rows {
                Ok(rows) => rows,
                Err(why) => return Ok(Err(encode(ClientError::new("22P04", why.to_string())))),
            };
            for (database, row) in rows {
                for (i, batch) in batches.iter_mut().enumerate() {
                    if database.is_none_or(|d| d == i) {
                        batch.extend_from_slice(&row);
                    }
                }
            }
            let done = frame.kind == FrontendKind::CopyDone;
            for (server, batch) in servers.iter_mut().zip(&mut batches) {
                if (done && !batch.is_empty()) || batch.len() >= BATCH {
                    let mut out = BytesMut::with_capacity(batch.len() + 5);
                    messages::copy_data(&mut out, batch);
                    batch.clear();
                    if server.conn.send(&out).await.is_err() {
                        return Ok(Err(lost()));
                    }
                }
            }
            if done {
                return Ok(Ok(()));
            }
        }
    }

    /// End every server's COPY (CopyDone after success, CopyFail after a
    /// failure) and hold them again for the transaction (`shards`: theirs,
    /// in order; a server whose connection broke is dropped and the
    /// transaction can then only roll back). The rows copied (`copies`:
    /// each shard copied the same rows, an omnisharded table's), or the
    /// COPY's error for the client.
    pub(super) async fn end_copies(
        &mut self,
        shards: &[usize],
        mut servers: Vec<Pooled>,
        sent: usize,
        outcome: Result<(), Bytes>,
        copies: bool,
    ) -> Result<u64, Option<Bytes>> {
        let mut end = BytesMut::new();
        match &outcome {
            Ok(()) => messages::copy_done(&mut end),
            Err(_) => messages::copy_fail(
                &mut end,
                "pgshard: the COPY failed on another shard or in the data",
            ),
        }
        let mut failure = outcome.err();
        let mut counts = Vec::new();
        let mut broken = Vec::new();
        // Only the servers that got the COPY owe a reply (an idle server
        // ignores CopyDone / CopyFail without a word).
        for (i, server) in servers.iter_mut().enumerate().take(sent) {
            let replied = match server.conn.send(&end).await {
                Ok(()) => reply(server).await,
                Err(_) => Err(()),
            };
            match replied {
                Ok((tags, None)) => counts.push(copied(&tags)),
                Ok((_, Some(error))) => {
                    failure.get_or_insert(error);
                }
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
        let total = match copies {
            true => counts.first().copied().unwrap_or_default(),
            false => counts.iter().sum(),
        };
        if copies && counts.iter().any(|&n| n != total) {
            // Every shard was sent every row.
            let error = ClientError::new(
                "XX001",
                "the shards' COPY counts of an omnisharded table differ",
            );
            failure.get_or_insert_with(|| encode(error));
        }
        failure.map_or(Ok(total), |error| Err(Some(error)))
    }
}

/// The rows a server's `COPY n` tag counts.
fn copied(tags: &[String]) -> u64 {
    tags.iter()
        .filter_map(|t| t.strip_prefix("COPY ")?.parse::<u64>().ok())
        .sum()
}

/// The next whole message of `server` (`None`: the connection broke).
async fn next(server: &mut Pooled) -> Option<BackendFrame> {
    loop {
        if let Some(message) = server.conn.next_message().ok()? {
            return Some(message);
        }
        if server.conn.fill().await.ok()? == 0 {
            return None;
        }
    }
}

/// Read `server`'s reply up to its ReadyForQuery.
async fn reply(server: &mut Pooled) -> Reply {
    let mut tags = Vec::new();
    let mut error = None;
    loop {
        let message = next(server).await.ok_or(())?;
        match message.message() {
            BackendMessage::CommandComplete(tag) => {
                tags.push(String::from_utf8_lossy(tag.as_bytes()).into_owned())
            }
            BackendMessage::ErrorResponse(_) => {
                error.get_or_insert(message.into_bytes());
            }
            BackendMessage::ReadyForQuery(_) => return Ok((tags, error)),
            _ => {}
        }
    }
}

impl Session {
    /// The columns of `table` in order (asked of `server` once, then
    /// cached until DDL or RELOAD).
    pub(super) async fn columns_of(
        &mut self,
        server: &mut Pooled,
        table: &str,
    ) -> Option<Arc<Vec<String>>> {
        let key = (self.info.database.clone(), table.to_owned());
        let generation = {
            let known = self.shared.table_columns.lock().ok()?;
            if let Some(columns) = known.columns.get(&key) {
                return Some(Arc::clone(columns));
            }
            known.generation
        };
        let columns = Arc::new(
            table_columns(server, table, false)
                .await
                .filter(|c| !c.is_empty())?,
        );
        self.shared
            .table_columns
            .lock()
            .ok()?
            .keep(generation, key, Arc::clone(&columns));
        Some(columns)
    }
}

/// The columns of `table` in order, as the shard's catalog has them
/// (`copy`: without generated columns, as COPY without a column list).
pub(super) async fn table_columns(
    server: &mut Pooled,
    table: &str,
    copy: bool,
) -> Option<Vec<String>> {
    let literal = table.replace('\'', "''");
    let generated = if copy { " AND attgenerated = ''" } else { "" };
    let sql = format!("SELECT attname FROM pg_attribute WHERE attrelid = '{literal}'::regclass AND attnum > 0 AND NOT attisdropped{generated} ORDER BY attnum");
    let mut out = BytesMut::new();
    messages::query(&mut out, &sql);
    server.conn.send(&out).await.ok()?;
    let mut columns = Vec::new();
    loop {
        let message = next(server).await?;
        match message.kind() {
            BackendKind::DataRow => {
                let row = parse_row(message.bytes())?;
                columns.push(String::from_utf8_lossy(row.value(0)?).into_owned());
            }
            BackendKind::ReadyForQuery => return Some(columns),
            _ => {}
        }
    }
}

fn encode(error: ClientError) -> Bytes {
    let mut out = BytesMut::new();
    error.encode(&mut out);
    out.freeze()
}

fn lost() -> Bytes {
    encode(ClientError::shard_lost())
}
