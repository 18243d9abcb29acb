//! A simple query that goes to several shards: sent to a server of each,
//! whose replies are read concurrently (one task per server, bounded
//! channel: `execute/fan_out.rs`) and merged as they come: the first server to answer supplies
//! the headers, every server's rows stream to the client as they arrive (a
//! slow shard delays only its own rows), one CommandComplete sums the
//! counts. A CancelRequest from the client, `query_timeout` and the client
//! leaving all stop it: the first two cancel the statement on every shard,
//! the last closes the servers.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::sync::mpsc;

use super::server_replies::TagSays;
use super::{cancel_target, End, Session};
use crate::errors::ClientError;
use crate::execute::merge::{CopyJoin, Merger, RowMerge, SplitRows, Window};
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendMessage, TransactionStatus};
use crate::protocol::messages;
use router::merge::MergePlan;

use crate::execute::fan_out::{next_report, send_cancel, spawn_readers, Prepare, Reader, Report};

/// A SELECT's rows merged by plan (see [`crate::execute::merge::RowMerge`]).
pub(super) struct MergeRequest {
    pub plan: Arc<MergePlan>,
    pub window: Window,
    /// The parameters HAVING reads, as text (an EXECUTE's arguments).
    pub params: Vec<Option<String>>,
}

/// Whose transaction a fan-out runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// None: each shard's statement commits on its own.
    Outside,
    /// The client's, which spans the shards it touches.
    InTxn,
    /// One pgshard opened for this statement alone (so that it is atomic
    /// across shards); the caller ends it and sends the ReadyForQuery.
    Implicit,
    /// [`Scope::Implicit`], opened by the request itself: each shard's
    /// Query starts with `BEGIN;`, so its transaction opens and its
    /// statement runs in one round trip (the statement runs only if the
    /// BEGIN succeeded).
    ImplicitInRequest,
}

impl Scope {
    /// A transaction of pgshard's own for the statement alone.
    fn implicit(self) -> bool {
        matches!(self, Scope::Implicit | Scope::ImplicitInRequest)
    }
}

/// How the shards' replies become the client's.
pub(super) enum Reply {
    /// Side by side, after these lines (an EXPLAIN's preamble).
    Concat(Vec<String>),
    Merge(MergeRequest),
    /// A split INSERT's (RETURNING rows in the client's order).
    Split(SplitRows),
    /// A COPY TO STDOUT's (one header, one binary trailer).
    CopyOut(router::copy::CopyOut),
    /// Every shard holds the same rows (a write to omnisharded tables):
    /// one shard's reply stands for all.
    Copies,
    /// A COPY (SELECT ...) TO STDOUT's whose rows are merged: the shards
    /// run the SELECT, the merged rows go out as COPY's.
    CopyRows(MergeRequest, crate::execute::merge::CopyRows),
}

impl Session {
    /// Run one simple query on several shards and stream the merged reply,
    /// ReadyForQuery included unless the scope is implicit.
    pub(super) async fn fan_out(
        &mut self,
        shards: &[usize],
        request: impl Fn(&Pooled, &mut BytesMut),
        reply: Reply,
        scope: Scope,
    ) -> Result<(), End> {
        self.fan_out_with(shards, request, None, reply, scope).await
    }

    /// [`fan_out`](Self::fan_out) of a request that runs a statement
    /// prepared with SQL PREPARE, prepared first where missing.
    pub(super) async fn fan_out_with(
        &mut self,
        shards: &[usize],
        request: impl Fn(&Pooled, &mut BytesMut),
        prepare: Option<Prepare>,
        reply: Reply,
        scope: Scope,
    ) -> Result<(), End> {
        let held = self
            .fan_out_holding(shards, request, prepare, reply, scope)
            .await?;
        if let Some(tag) = held {
            messages::command_complete(self.client.out(), &tag);
        }
        Ok(())
    }

    /// [`fan_out_with`](Self::fan_out_with), but in an implicit scope
    /// the merged CommandComplete is not written: its tag is returned, for
    /// the caller to send once the transaction committed.
    pub(super) async fn fan_out_holding(
        &mut self,
        shards: &[usize],
        request: impl Fn(&Pooled, &mut BytesMut),
        prepare: Option<Prepare>,
        reply: Reply,
        scope: Scope,
    ) -> Result<Option<String>, End> {
        let in_txn = scope != Scope::Outside;
        let errors = self.pipeline.error_mark();
        if in_txn {
            self.settle_main().await?;
        } else if self.attached.is_some() {
            self.detach().await?;
        }
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        // If what ran before the fan-out failed, the rest is skipped.
        let servers = match (self.pipeline.errors_since(errors), in_txn) {
            (true, _) => None,
            (false, true) => {
                let open = scope != Scope::ImplicitInRequest;
                self.txn_servers_opening(shards, open).await?
            }
            (false, false) => self.fan_out_servers(shards).await?,
        };
        let mut held = None;
        if let Some(servers) = servers {
            let run = (request, prepare);
            held = self.run_fan_out(shards, servers, run, reply, scope).await?;
        }
        if !scope.implicit() {
            let status = self.status();
            messages::ready_for_query(self.client.out(), status);
        }
        self.client.flush().await?;
        Ok(held)
    }

    /// Send the request to each server and relay the merged replies; the
    /// CommandComplete's tag is returned instead in an implicit scope.
    async fn run_fan_out(
        &mut self,
        shards: &[usize],
        mut servers: Vec<Pooled>,
        (request, prepare): (impl Fn(&Pooled, &mut BytesMut), Option<Prepare>),
        reply: Reply,
        scope: Scope,
    ) -> Result<Option<String>, End> {
        let in_txn = scope != Scope::Outside;
        let merger = self.merger(reply, &mut servers).await;
        let targets = servers.iter().map(cancel_target).collect::<Vec<_>>();
        self.info.cancel.set(targets.iter().cloned()).await;
        let query_timeout = servers
            .first()
            .and_then(|s| s.pool().settings.query_timeout);
        let started = std::time::Instant::now();
        let (tasks, mut incoming) = spawn_readers(servers, request, prepare.as_ref());
        let mut cancels = Vec::new();
        let merged = self
            .merge_reports(&mut incoming, merger, query_timeout, &mut cancels)
            .await;
        // A server goes back to its pool only once a cancel sent to it has
        // been delivered (the server closes the cancel connection after
        // signalling its backend): it cannot hit the next client's query.
        // Servers about to be closed need no wait.
        if merged.is_ok() {
            for cancel in cancels {
                let _ = cancel.await;
            }
        }
        if merged.is_err() {
            // The client left, or a shard did not answer its cancel at
            // `query_timeout`: stop the statement everywhere and close the
            // servers (the tasks drop them as they end).
            for target in &targets {
                let target = target.clone();
                tokio::spawn(async move { crate::conn::cancel::send(&target).await });
            }
            for task in &tasks {
                task.abort();
            }
        }
        self.info.cancel.set(std::iter::empty()).await;
        let took = started.elapsed();
        let held = in_txn.then_some(shards);
        let broken = self.release_readers(tasks, took, held).await || merged.is_err();
        self.pipeline.clock().log_if_slow(&self.span, took, shards);
        let (failed, mut tag) = merged?;
        if !scope.implicit() {
            if let Some(tag) = tag.take() {
                messages::command_complete(self.client.out(), &tag);
            }
        }
        if broken {
            ClientError::shard_lost().encode(self.client.out());
            if in_txn {
                // A shard's part of the transaction is gone with its
                // connection: the transaction cannot commit.
                self.txn.fail();
            }
        } else if failed {
            self.pipeline.error_relayed();
            if in_txn && self.attached.status() != Some(TransactionStatus::Failed) {
                // pgshard's own error (a merge, copies that differ): the
                // shards succeeded, but the client saw an error, so the
                // transaction is over, as on one Postgres.
                self.txn.fail();
            }
        }
        Ok(tag)
    }

    /// The merger of a fan-out's replies.
    async fn merger(&mut self, reply: Reply, servers: &mut [Pooled]) -> Merger {
        match reply {
            Reply::Concat(preamble) => Merger::concatenating(preamble),
            Reply::Copies => Merger::copies(),
            Reply::Split(split) => Merger::splitting(split),
            Reply::CopyOut(plan) => Merger::copying_out(CopyJoin::new(plan)),
            Reply::Merge(merge) => {
                let bytewise = self.bytewise_text(servers.first_mut()).await;
                let memory = self.shared.config().general.cross_shard_merge_memory;
                let rows = RowMerge::new(merge.plan, merge.window, servers.len() + 1, bytewise);
                Merger::merging(rows.with_params(merge.params).with_memory(memory))
            }
            Reply::CopyRows(merge, mut copy) => {
                let encoding = servers.first().and_then(|s| {
                    let params = &s.conn.params;
                    params.iter().find(|(name, _)| name == "client_encoding")
                });
                if let Some((_, encoding)) = encoding {
                    copy.client_encoding(encoding);
                }
                let bytewise = self.bytewise_text(servers.first_mut()).await;
                let memory = self.shared.config().general.cross_shard_merge_memory;
                let rows = RowMerge::new(merge.plan, merge.window, servers.len() + 1, bytewise);
                Merger::copying_rows(rows.with_memory(memory), copy)
            }
        }
    }

    /// Give back the servers of the reading tasks whose replies came
    /// whole (their request took `took`: the query-time histogram), or
    /// hold them again for the transaction (`held`: their shards, in
    /// order); whether any reply did not come whole.
    pub(super) async fn release_readers(
        &mut self,
        tasks: Vec<Reader>,
        took: std::time::Duration,
        held: Option<&[usize]>,
    ) -> bool {
        let mut broken = false;
        for (i, task) in tasks.into_iter().enumerate() {
            match task.await {
                Ok((server, true)) => {
                    let pool = server.pool();
                    pool.stats.query_count.fetch_add(1, Ordering::Relaxed);
                    pool.histograms.observe_query(took);
                    match held.and_then(|shards| shards.get(i)) {
                        Some(&shard) => self.hold(shard, server),
                        None => self.release(server, false).await,
                    }
                }
                _ => broken = true,
            }
        }
        broken
    }

    /// A server for each shard; `None` when one cannot be had (its error is
    /// written for the client; the others go back to their pools).
    pub(super) async fn fan_out_servers(
        &mut self,
        shards: &[usize],
    ) -> Result<Option<Vec<Pooled>>, End> {
        let mut servers: Vec<Pooled> = Vec::with_capacity(shards.len());
        for &shard in shards {
            match self
                .checkout_server(shard, self.routing.replica_ok())
                .await?
            {
                Ok(server) => servers.push(server),
                Err(err) => {
                    for server in servers {
                        self.release(server, false).await;
                    }
                    err.client_error(&self.info.database, shard)
                        .encode(self.client.out());
                    return Ok(None);
                }
            }
        }
        self.routing.read_placed();
        Ok(Some(servers))
    }

    /// Relay the servers' messages as they come until every server is done;
    /// `query_timeout` after the request, unfinished, cancels the statement on
    /// every shard, and so does a merge whose LIMIT is reached on the shards
    /// still running (the cancels' deliveries go to `cancels`). Returns
    /// whether the statement failed and the CommandComplete's tag (not
    /// written); `Err` when the client left.
    async fn merge_reports(
        &mut self,
        incoming: &mut [Option<mpsc::Receiver<Report>>],
        mut merger: Merger,
        query_timeout: Option<std::time::Duration>,
        cancels: &mut Vec<tokio::task::JoinHandle<()>>,
    ) -> Result<(bool, Option<String>), End> {
        // The server whose headers stand for all (the first to answer).
        let mut first: Option<usize> = None;
        let mut broken = false;
        // As for one server: the statement is cancelled when it has not
        // finished `query_timeout` after it was sent (however much the
        // shards send meanwhile: a trickle does not extend it).
        let deadline = query_timeout.map(|t| tokio::time::Instant::now() + t);
        let mut timed_out = false;
        loop {
            let timeout = fan_out_timer(deadline, query_timeout, timed_out);
            let position = |index: usize| if first == Some(index) { 0 } else { index + 1 };
            let wanted: Vec<usize> = (0..incoming.len())
                .filter(|&i| incoming[i].is_some() && merger.wants(position(i)))
                .collect();
            let open: Vec<usize> = (0..incoming.len())
                .filter(|&i| incoming[i].is_some())
                .collect();
            if open.is_empty() {
                break;
            }
            // A shard that broke off may leave an ordered merge waiting on
            // it: then any open shard is read.
            let candidates = if wanted.is_empty() { open } else { wanted };
            tokio::select! {
                (index, report) = next_report(incoming, &candidates) => match report {
                    None => incoming[index] = None,
                    Some(None) => broken = true,
                    Some(Some(message)) => {
                        let message = self.shard_message(message);
                        if !message.kind().is_async() && first.is_none() {
                            first = Some(index);
                            // Its own slot (`index + 1`) will never be fed.
                            merger.skip_position(index + 1);
                        }
                        // Position 0 for the first server to answer.
                        let position = if first == Some(index) { 0 } else { index + 1 };
                        let (failed, satisfied) = (merger.failed(), merger.satisfied());
                        merger.on_message(position, &message, self.client.out());
                        if let (false, true, BackendMessage::ErrorResponse(error)) =
                            (failed, merger.failed(), message.message())
                        {
                            self.shared.metrics.error(error.code().unwrap_or_default());
                        }
                        if !satisfied && merger.satisfied() {
                            self.cancel_running(incoming, cancels).await;
                        }
                        let idle = incoming.iter().flatten().all(mpsc::Receiver::is_empty);
                        if idle || self.client.out().len() >= super::CLIENT_FLUSH_AT {
                            self.client.flush().await?;
                        }
                    }
                },
                read = self.client.fill(), if self.client.may_buffer() => {
                    read?;
                }
                () = timeout => {
                    self.fan_out_timed_out(query_timeout, timed_out, cancels)?;
                    timed_out = true;
                }
            }
        }
        let (failed, tag) = merger.finish_but_tag(self.client.out());
        Ok((broken || failed, tag))
    }

    /// The statement did not finish within `query_timeout`: cancel it
    /// on every shard, or, when the cancels (sent already: `timed_out`)
    /// went unanswered for their grace, give up on the shards.
    fn fan_out_timed_out(
        &self,
        query_timeout: Option<std::time::Duration>,
        timed_out: bool,
        cancels: &mut Vec<tokio::task::JoinHandle<()>>,
    ) -> Result<(), End> {
        if let (true, Some(t)) = (timed_out, query_timeout) {
            tracing::warn!(parent: &self.span, ?query_timeout, "query_timeout: shards did not answer their cancel; closing them");
            return Err(End::Fatal(super::attach::query_timeout_error(t, None)));
        }
        let targets = self.info.cancel.get();
        tracing::warn!(parent: &self.span, ?query_timeout, shards = targets.len(), "query_timeout: cancelling a fan-out");
        cancels.extend(targets.into_iter().map(send_cancel));
        Ok(())
    }

    /// A shard's message as the merge reads it: a command tag that says
    /// the schema changed retires what depended on it; an error that names
    /// a statement the client prepared by pgshard's name gets the client's.
    fn shard_message(&self, message: BackendFrame) -> BackendFrame {
        match message.message() {
            BackendMessage::CommandComplete(tag) => {
                if TagSays::of(tag) == TagSays::SchemaChanged {
                    self.shared.retire_on_ddl();
                }
                message
            }
            BackendMessage::ErrorResponse(_) => {
                self.named.sql.client_error(&message).unwrap_or(message)
            }
            _ => message,
        }
    }

    /// The merge has every row it needs: cancel the statement on the shards
    /// still sending (their rows and the 57014 error are dropped). Not
    /// inside a transaction, which the cancel would abort on those shards
    /// (the extended protocol never cancels: a pipeline's later statements
    /// would fail with it; there the rest, at most LIMIT + OFFSET rows per
    /// shard, is read and dropped).
    async fn cancel_running(
        &mut self,
        incoming: &[Option<mpsc::Receiver<Report>>],
        cancels: &mut Vec<tokio::task::JoinHandle<()>>,
    ) {
        // The transaction's servers are out of `attached` while the
        // fan-out reads them: its join script says one is open.
        if self.status() != TransactionStatus::Idle || self.txn.spans() {
            return;
        }
        let targets = self.info.cancel.get();
        let running: Vec<_> = (0..incoming.len())
            .filter(|&i| incoming[i].is_some())
            .filter_map(|i| targets.get(i).cloned())
            .collect();
        if !running.is_empty() {
            tracing::debug!(
                parent: &self.span,
                shards = running.len(),
                "LIMIT reached: cancelling the rest of a fan-out"
            );
        }
        for target in running {
            cancels.push(tokio::spawn(async move {
                crate::conn::cancel::send(&target).await
            }));
        }
    }
}

/// Completes at `deadline` (`query_timeout` after the request), or, once
/// the cancels went out (`timed_out`), when their grace is over too.
async fn fan_out_timer(
    deadline: Option<tokio::time::Instant>,
    query_timeout: Option<std::time::Duration>,
    timed_out: bool,
) {
    match (deadline, query_timeout) {
        (Some(at), Some(t)) if timed_out => {
            tokio::time::sleep_until(at + super::attach::cancel_grace(t)).await
        }
        (Some(at), _) => tokio::time::sleep_until(at).await,
        _ => std::future::pending().await,
    }
}
