//! Transactions that span shards: a statement of an open transaction routed
//! to another shard makes that shard's server the main one, opening the
//! transaction there first with its join script (`transaction.rs`); a
//! statement for several shards runs on a server of each inside the
//! transaction (the fan-out takes and gives back the held servers); `SET
//! LOCAL` and savepoint statements go to every shard held and join the
//! script. Every server stays attached until the transaction ends
//! (`commit.rs`).

use bytes::{Bytes, BytesMut};
use router::summary::{SessionEffect, StatementKind, Summary};

use super::dispatch::Dispatch;
use super::fan_out::{Reply, Scope};
use super::reply_plan::Step;
use super::{End, Session};
use crate::errors::ClientError;
use crate::pool::Pooled;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::messages;
use crate::protocol::sqlstate;

impl Session {
    /// Finish what the main server is doing, keeping it. A server answers
    /// only at a Sync: one goes after what the client left unsynced, or
    /// after what pgshard sent for it (a Parse and Describe before a Bind
    /// held for a fan-out, whose Sync pgshard consumed).
    pub(super) async fn settle_main(&mut self) -> Result<(), End> {
        if self.attached.is_none() {
            return Ok(());
        }
        if self.pipeline.unsynced() || self.plan.unsynced_tail() {
            messages::sync(self.pipeline.for_server());
            self.plan.push(Step::injected_query());
        }
        let errors = self.pipeline.error_mark();
        self.flush().await?;
        self.answer_all().await?;
        if self.pipeline.errors_since(errors) && self.pipeline.unsynced() {
            // The client saw an error: it expects the rest up to its Sync
            // to be skipped.
            self.phase.skip();
        }
        Ok(())
    }

    /// The statement goes to `shard`, in the transaction the main server
    /// holds: that shard's server becomes the main one, joining the
    /// transaction if it is new to it. Returns whether the statement can
    /// be sent (if not, the client has its error).
    pub(super) async fn switch_main(&mut self, shard: usize, simple: bool) -> Result<bool, End> {
        self.settle_main().await?;
        if self.attached.status() != Some(TransactionStatus::InBlock) {
            // An error meanwhile aborted the transaction: the main server
            // answers 25P02, as Postgres would.
            return Ok(true);
        }
        if !self.attached.switch_to(shard) {
            let Some(script) = self.txn.join_script().map(Bytes::copy_from_slice) else {
                return Ok(true);
            };
            match self.join_shard(shard, &script).await? {
                Ok(server) => self.attached.attach_main(shard, server),
                Err(error) => {
                    self.refuse(error, simple);
                    return Ok(false);
                }
            }
        }
        self.routing.attached_to(shard);
        if let Some(server) = self.attached.main() {
            let target = super::cancel_target(server);
            self.set_cancel_target(Some(target)).await;
        }
        Ok(true)
    }

    /// A server of `shard` with the transaction opened on it by `script`.
    async fn join_shard(
        &mut self,
        shard: usize,
        script: &[u8],
    ) -> Result<Result<Pooled, ClientError>, End> {
        let server = match self.checkout_server(shard, false).await? {
            Ok(server) => server,
            Err(err) => return Ok(Err(err.client_error(&self.info.database, shard))),
        };
        let (mut joined, failure) = self.open_on(vec![(shard, server)], script).await;
        Ok(match (joined.pop(), failure) {
            (Some((_, server)), None) => Ok(server),
            (_, failure) => Err(failure.unwrap_or_else(ClientError::shard_lost)),
        })
    }

    /// The transaction opened by `script` on each of `servers` (checked
    /// out for it): sent to all at once, so the shards work in parallel,
    /// then their answers read. Those that opened it, and the first error
    /// (the servers that failed go back to their pools, or close).
    async fn open_on(
        &mut self,
        servers: Vec<(usize, Pooled)>,
        script: &[u8],
    ) -> (Vec<(usize, Pooled)>, Option<ClientError>) {
        let script = String::from_utf8_lossy(script);
        let mut sent = Vec::with_capacity(servers.len());
        for (shard, mut server) in servers {
            let ok = server.conn.send_query(&script).await.is_ok();
            sent.push((shard, server, ok));
        }
        let (mut joined, mut failure) = (Vec::with_capacity(sent.len()), None);
        for (shard, mut server, ok) in sent {
            let answer = match ok {
                true => server.conn.answer().await.ok(),
                false => None,
            };
            let Some(answer) = answer else {
                // The connection broke: it closes as it drops.
                failure.get_or_insert_with(ClientError::shard_lost);
                continue;
            };
            match answer.error {
                None if server.conn.status() == TransactionStatus::InBlock => {
                    joined.push((shard, server));
                    continue;
                }
                error => {
                    let (code, message) = error.unwrap_or_else(|| {
                        let what = "the transaction did not open on the shard".to_owned();
                        (sqlstate::INTERNAL_ERROR.to_owned(), what)
                    });
                    let message = format!("opening the transaction on shard {shard}: {message}");
                    failure.get_or_insert(ClientError::from_server(&code, message));
                }
            }
            self.release(server, false).await;
        }
        (joined, failure)
    }

    /// A server of each of `shards` inside the transaction, for a
    /// statement on all of them: those held are taken, the others join
    /// (a deferred transaction opens on each, on all of them at once).
    /// `None` when one cannot be had: its error is written for the client,
    /// and the transaction is over (the servers stay attached until the
    /// client ends it).
    pub(super) async fn txn_servers(
        &mut self,
        shards: &[usize],
    ) -> Result<Option<Vec<Pooled>>, End> {
        self.txn_servers_opening(shards, true).await
    }

    /// [`txn_servers`](Self::txn_servers); with `open` false, servers that
    /// join are only checked out: the caller's request opens the
    /// transaction on them (its Query starts with the join script, so the
    /// statement runs only if the transaction opened), and their replies
    /// start with the script's.
    pub(super) async fn txn_servers_opening(
        &mut self,
        shards: &[usize],
        open: bool,
    ) -> Result<Option<Vec<Pooled>>, End> {
        self.settle_main().await?;
        if self.txn.deferred() {
            // Statements run before the transaction opened: their server
            // is outside it.
            self.detach().await?;
        }
        let Some(script) = self.txn.open_spanning() else {
            return Ok(None);
        };
        let (mut held, mut joining, mut failure) = (Vec::new(), Vec::new(), None);
        for &shard in shards {
            if let Some(server) = self.attached.take(shard) {
                held.push((shard, server));
                continue;
            }
            match self.checkout_server(shard, false).await? {
                Ok(server) => joining.push((shard, server)),
                Err(err) => {
                    failure = Some(err.client_error(&self.info.database, shard));
                    break;
                }
            }
        }
        if failure.is_some() {
            for (_, server) in joining.drain(..) {
                self.release(server, false).await;
            }
        }
        let (joined, opening) = match open {
            true => self.open_on(joining, &script).await,
            false => (joining, None),
        };
        held.extend(joined);
        if let Some(error) = failure.or(opening) {
            for (shard, server) in held {
                self.attached.attach(shard, server);
            }
            self.txn.fail();
            error.encode(self.client.out());
            return Ok(None);
        }
        // In the order of `shards`.
        let mut servers = Vec::with_capacity(shards.len());
        for &shard in shards {
            if let Some(at) = held.iter().position(|(s, _)| *s == shard) {
                servers.push(held.swap_remove(at).1);
            }
        }
        Ok(Some(servers))
    }

    /// A statement bound in the extended protocol: whether it writes, and
    /// one a joining shard replays (sent to the main server) recorded in
    /// the join script.
    pub(super) fn note_bound(&mut self, summary: &Summary, query: &[u8]) {
        self.routing.placing(writes(summary));
        if let [only] = summary.statements.as_slice() {
            if replayed(only) {
                self.txn.record(query);
            }
        }
    }

    /// Servers a fan-out inside the transaction used go back to being held.
    pub(super) fn hold(&mut self, shard: usize, server: Pooled) {
        self.attached.attach(shard, server);
        if self.routing.writes() {
            self.attached.note_write(shard);
        }
        if let Some(main) = self.attached.shard() {
            self.routing.attached_to(main);
        }
    }

    /// A statement of a transaction pgshard opened, before it is routed:
    /// its end when it spans shards, a refusal when a shard's part is
    /// aborted, transaction control sent to every shard held. `None`: route
    /// it as usual.
    pub(super) async fn spanning_statement(
        &mut self,
        summary: &Summary,
        sql: &str,
    ) -> Result<Option<Dispatch>, End> {
        self.routing.placing(writes(summary));
        let [only] = summary.statements.as_slice() else {
            return Ok(None);
        };
        if self.txn.join_script().is_none() {
            if self.txn.deferred() && only.kind == StatementKind::TransactionOther {
                // It opens the transaction on a shard: shards joining
                // later replay it after the BEGIN.
                self.txn.record(sql.as_bytes());
            }
            return Ok(None);
        }
        let spans = self.attached.spans();
        let control = replayed(only);
        if rolls_back_to(only, sql) {
            self.portals.cursors.rolled_back_to();
        }
        match &only.kind {
            StatementKind::Commit | StatementKind::Rollback if spans => {
                let commit = only.kind == StatementKind::Commit;
                match Box::pin(self.end_spanning(commit, true)).await? {
                    Ok(tag) => self.local_tag(tag, true),
                    Err(error) => self.local_error(error, true),
                }
                Ok(Some(Dispatch::Done))
            }
            _ if spans
                && self.attached.status() == Some(TransactionStatus::Failed)
                && !rolls_back_to(only, sql) =>
            {
                self.aborted(true);
                Ok(Some(Dispatch::Done))
            }
            _ if control && spans => {
                let changes = super::session_effects::session_changes(summary, sql);
                let errors = self.pipeline.error_mark();
                Box::pin(self.broadcast_control(sql)).await?;
                if !self.pipeline.errors_since(errors) {
                    self.settings.pending.extend(changes.settings);
                }
                Ok(Some(Dispatch::Done))
            }
            _ if control => {
                // One shard so far: it runs there as usual; shards joining
                // later replay it, unless it fails there.
                self.txn.record_tentative(sql.as_bytes());
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// A Bind in a transaction that spans shards: COMMIT and ROLLBACK end
    /// it on every shard (the portal then answers with their tag), anything
    /// but ROLLBACK TO is refused with 25P02 while a shard's part is
    /// aborted, and transaction control that would have to reach every
    /// shard is refused in this protocol. Returns whether it was answered.
    pub(super) async fn spanning_bind(
        &mut self,
        statement: &super::statements::Statement,
    ) -> Result<bool, End> {
        let Some(info) = self.route_info(statement) else {
            return Ok(false);
        };
        let summary = info.entry.summary.clone();
        let [only] = summary.statements.as_slice() else {
            return Ok(false);
        };
        let sql = String::from_utf8_lossy(&statement.query).into_owned();
        if rolls_back_to(only, &sql) {
            self.portals.cursors.rolled_back_to();
        }
        match &only.kind {
            StatementKind::Commit | StatementKind::Rollback => {
                let commit = only.kind == StatementKind::Commit;
                match Box::pin(self.end_spanning(commit, true)).await? {
                    Ok(tag) => {
                        self.local_reply(messages::bind_complete);
                        self.phase
                            .bind_local(super::local::LocalPortal { tag, nested: false });
                    }
                    Err(error) => self.local_error(error, false),
                }
            }
            _ if self.attached.status() == Some(TransactionStatus::Failed)
                && !rolls_back_to(only, &sql) =>
            {
                self.aborted(false);
            }
            _ if replayed(only) => {
                // Run on every shard now; the portal answers with its tag.
                match self.control_everywhere(&sql).await? {
                    Ok(()) => {
                        let changes = super::session_effects::session_changes(&summary, &sql);
                        self.settings.pending.extend(changes.settings);
                        self.txn.record(sql.as_bytes());
                        self.local_reply(messages::bind_complete);
                        let tag = control_tag(&sql);
                        self.phase
                            .bind_local(super::local::LocalPortal { tag, nested: false });
                    }
                    Err(error) => self.local_error(error, false),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A savepoint statement or setting bound in the extended protocol, run
    /// on every server held, one after the other (after what the main
    /// server was sent is finished); the first error, for the client.
    async fn control_everywhere(&mut self, sql: &str) -> Result<Result<(), ClientError>, End> {
        self.settle_main().await?;
        let mut failure = None;
        for (shard, mut server) in self.attached.take_all_keeping_writes() {
            if failure.is_none() {
                failure = match server.conn.query(sql).await {
                    Ok(answer) => answer
                        .error
                        .map(|(code, message)| ClientError::from_server(&code, message)),
                    Err(_) => Some(ClientError::shard_lost()),
                };
            }
            self.attached.attach(shard, server);
        }
        Ok(failure.map_or(Ok(()), Err))
    }

    /// `SET LOCAL`, SAVEPOINT, RELEASE or ROLLBACK TO in a transaction that
    /// spans shards: run on every shard held; recorded for shards that
    /// join later if it succeeded everywhere.
    pub(super) async fn broadcast_control(&mut self, sql: &str) -> Result<Dispatch, End> {
        let shards = self.attached.shards();
        self.routing.placing_no_write();
        let errors = self.pipeline.error_mark();
        let query = {
            let mut out = BytesMut::new();
            messages::query(&mut out, sql);
            out.freeze()
        };
        let request = |_: &Pooled, out: &mut BytesMut| out.extend_from_slice(&query);
        self.fan_out(&shards, request, Reply::Concat(Vec::new()), Scope::InTxn)
            .await?;
        if !self.pipeline.errors_since(errors) {
            self.txn.record(sql.as_bytes());
        }
        Ok(Dispatch::Done)
    }
}

/// The command tag Postgres gives a savepoint statement or setting: its
/// first word (`ROLLBACK` for ROLLBACK TO).
fn control_tag(sql: &str) -> &'static str {
    let [first] = super::session_effects::leading_words::<1>(sql);
    ["SAVEPOINT", "RELEASE", "ROLLBACK", "RESET", "SET"]
        .into_iter()
        .find(|tag| first.eq_ignore_ascii_case(tag))
        .unwrap_or("SET")
}

/// `ROLLBACK TO [SAVEPOINT] name`: what an aborted transaction still runs.
fn rolls_back_to(only: &router::summary::StatementSummary, sql: &str) -> bool {
    let [first, second] = super::session_effects::leading_words::<2>(sql);
    only.kind == StatementKind::TransactionOther
        && first.eq_ignore_ascii_case("ROLLBACK")
        && !second.eq_ignore_ascii_case("PREPARED")
}

/// A statement a shard joining the transaction replays: savepoint
/// statements and settings.
pub(super) fn replayed(only: &router::summary::StatementSummary) -> bool {
    only.kind == StatementKind::TransactionOther
        || matches!(
            only.session,
            Some(
                SessionEffect::TransactionScoped(_)
                    | SessionEffect::Set { .. }
                    | SessionEffect::Reset { .. }
            )
        )
}

/// Whether a statement may write (the shard it runs on must then commit
/// with the others, two-phase when that is on): anything but plain reads
/// of tables, transaction control and session settings.
pub(super) fn writes(summary: &Summary) -> bool {
    let harmless = |s: &router::summary::StatementSummary| {
        // A cursor's DECLARE, FETCH, MOVE and CLOSE read.
        let cursor = s.kind == StatementKind::Other
            && !s.write
            && matches!(s.session, Some(SessionEffect::Cursor(_)));
        cursor
            || matches!(
                s.kind,
                StatementKind::TransactionOther
                    | StatementKind::Session
                    | StatementKind::SetShard(_)
                    | StatementKind::SetShardingKey(_)
                    | StatementKind::Begin
                    | StatementKind::Commit
                    | StatementKind::Rollback
            )
    };
    !super::read_split::is_read(summary) && !summary.statements.iter().all(harmless)
}
