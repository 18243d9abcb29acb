//! Server replies to a session: relayed in order as the response plan
//! says (forwarded, swallowed, or with pgshard's own replies between them),
//! with what they mean for the session recorded on the way: transaction
//! status, settings that took effect, statements a server holds or lost,
//! schema changes that retire shared statements.

use std::sync::atomic::Ordering;

use tracing::warn;

use super::reply_plan::Effect;
use super::{count, End, Session, CLIENT_FLUSH_AT};
use crate::conn::server::Ahead;
use crate::conn::settings::ParamSet;
use crate::errors::ClientError;
use crate::protocol::backend::{
    BackendFrame, BackendKind, BackendMessage, CommandTag, TransactionStatus,
};
use crate::protocol::messages;
use crate::protocol::sqlstate;

impl Session {
    /// Read the attached server, relaying what it sends, until the plan owes
    /// the client nothing more from it (while watching the client).
    pub(super) async fn answer_all(&mut self) -> Result<(), End> {
        while self.plan.awaiting_server() {
            self.pipeline.clock_mut().waiting();
            let Some(server) = self.attached.main_mut() else {
                break;
            };
            let read = server.conn.fill();
            match self.client.watch(read).await? {
                Ok(0) | Err(_) => {
                    self.lose_main();
                    return Err(End::server_lost());
                }
                Ok(_) => self.on_server_data().await?,
            }
        }
        Ok(())
    }

    /// Handle every whole message the server has sent. The messages are
    /// read in place from the connection's buffer and forwarded in runs:
    /// one copy per run of messages the client gets as they are, the
    /// headers alone read for DataRows while the client's reply is being
    /// relayed.
    pub(super) async fn on_server_data(&mut self) -> Result<(), End> {
        self.relay_server_data().await?;
        Ok(self.client.flush().await?)
    }

    /// [`on_server_data`](Self::on_server_data) in the message loop: a
    /// server whose transaction is over goes back to its pool before the
    /// client has the reply, as PgBouncer gives it back on ReadyForQuery,
    /// so the client's next statement finds it there (not one a concurrent
    /// checkout opened meanwhile). Not when the client has sent more
    /// already (it would be checked out again at once) or the server
    /// needs a reset first (that waits for a round trip).
    pub(super) async fn on_server_data_in_loop(&mut self) -> Result<(), End> {
        self.relay_server_data().await?;
        let clean = self.attached.main().is_some_and(|s| !s.conn.dirty);
        if clean && !self.client.has_unread() && self.release_due() && !self.release_clean() {
            self.maybe_release().await?;
        }
        if !self.client.flush_now()? {
            self.client.flush().await?;
        }
        Ok(())
    }

    /// Relay what the main server sent, and the local replies that follow
    /// it, into the client's buffer.
    async fn relay_server_data(&mut self) -> Result<(), End> {
        self.relay_server_messages().await?;
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        Ok(())
    }

    /// Relay the whole messages the main server sent, read in place from
    /// its buffer, and consume them.
    async fn relay_server_messages(&mut self) -> Result<(), End> {
        // `run..at` of the server's buffer is forwarded and not yet copied
        // to the client.
        let (mut at, mut run, mut forwarded) = (0, 0, 0);
        loop {
            if self.plan.local_next() {
                // What was forwarded goes before local replies.
                self.copy_run(&mut run, at);
                let status = self.status();
                self.plan.drain_local(self.client.out(), status);
            }
            let Some(server) = self.attached.main_mut() else {
                break;
            };
            let (seen, length) = match server.conn.read_at(at) {
                Ok(Ahead::Message(message, raw)) => {
                    let plain = self.plan.relays_plainly(message.kind());
                    (Seen::of(message, raw, plain), raw.len())
                }
                Ok(Ahead::Missing(missing)) => {
                    self.client
                        .out()
                        .extend_from_slice(server.conn.read_bytes(run..at));
                    server.conn.consume(at, missing);
                    break;
                }
                Err(err) => {
                    warn!(parent: &self.span, %err, "server sent an invalid message");
                    self.attached.take_main();
                    return Err(End::Fatal(ClientError::new(
                        sqlstate::PROTOCOL_VIOLATION,
                        "the server sent an invalid message; the connection is closed",
                    )));
                }
            };
            at += length;
            if seen.plain {
                // A row of the client's reply, say, or a BindComplete.
                if let Some(tag) = seen.tag {
                    self.on_command_complete(tag);
                }
                forwarded += length;
                continue;
            }
            if matches!(
                seen.kind,
                BackendKind::ReadyForQuery | BackendKind::ErrorResponse
            ) {
                // What was forwarded goes before a message that may be
                // replaced.
                self.copy_run(&mut run, at - length);
            }
            if self.on_server_message(&seen) {
                forwarded += length;
            } else {
                // Swallowed, or replaced by what on_server_message wrote.
                self.copy_run(&mut run, at - length);
                run = at;
            }
            if self.client.out().len() + (at - run) >= CLIENT_FLUSH_AT {
                self.copy_run(&mut run, at);
                self.client.flush().await?;
            }
        }
        if let Some(server) = self.attached.main() {
            count(&server.pool().stats.bytes_sent, forwarded);
        }
        Ok(())
    }

    /// Copy bytes `run..to` of the main server's buffer (forwarded
    /// messages) to the client's; the run starts again at `to`.
    fn copy_run(&mut self, run: &mut usize, to: usize) {
        if let Some(server) = self.attached.main() {
            self.client
                .out()
                .extend_from_slice(server.conn.read_bytes(*run..to));
        }
        *run = to;
    }

    /// Handle one whole server message (not one relayed plainly); `true`
    /// if the client gets it as it is, `false` if it is swallowed or its
    /// replacement was written to the client's buffer (a ReadyForQuery
    /// with pgshard's transaction status).
    fn on_server_message(&mut self, seen: &Seen) -> bool {
        self.note_server_message(seen);
        let verdict = self.plan.on_server_message(seen.kind);
        let error = seen.kind == BackendKind::ErrorResponse;
        if error && verdict.forward {
            // A statement of a deferred transaction failed (it ran
            // outside it, before it opened): the transaction is
            // aborted, as it would be on Postgres.
            self.txn.on_error();
            self.settings.extended.clear();
        }
        if !verdict.failed.is_empty() {
            self.undo_failed(seen.error_code(), verdict.failed);
        }
        if seen.kind == BackendKind::ReadyForQuery {
            self.on_ready(verdict.completed);
            if verdict.forward {
                self.stop_clock();
            }
        }
        if !verdict.forward {
            return false;
        }
        if let Some(message) = seen.error.as_ref() {
            self.shared
                .metrics
                .error(seen.error_code().unwrap_or_default());
            if self.plan.pending_syncs() <= 1 {
                // An error of the latest segment (what the client sent
                // after its last Sync, or since its last Query), not of an
                // earlier one still being answered.
                self.pipeline.error_relayed();
            }
            if let Some(renamed) = self.named.sql.client_error(message) {
                // It names a statement by pgshard's name for it.
                self.client.out().extend_from_slice(renamed.bytes());
                return false;
            }
        }
        if seen.kind == BackendKind::ReadyForQuery
            && (self.txn.overrides_server() || self.attached.spans())
        {
            // pgshard holds a transaction the server does not know of, or
            // one that spans this server and others.
            let status = self.status();
            messages::ready_for_query(self.client.out(), status);
            return false;
        }
        true
    }

    /// What a server message says about the session, whatever the plan
    /// does with it (the connection noted its status and settings as it
    /// read it): transaction ends, settings kept at COMMIT, schema
    /// changes, COPY IN.
    fn note_server_message(&mut self, seen: &Seen) {
        let Some(server) = self.attached.main() else {
            return;
        };
        let status = server.conn.status();
        match seen.kind {
            BackendKind::ReadyForQuery => {
                self.portals.cursors.on_ready(status);
                if let Some(gone) = self.listening.channels.on_ready(status) {
                    self.leave_channels(gone);
                }
                if self.txn.on_end(Some(status)) {
                    self.routing.overrides_ended();
                }
            }
            BackendKind::CommandComplete => {
                if let Some(tag) = seen.tag {
                    self.on_command_complete(tag);
                }
            }
            BackendKind::ErrorResponse if self.plan.at_sync() => self.pipeline.failed_at_sync(),
            BackendKind::CopyInResponse => {
                self.pipeline.copy_in_started();
                if !self.plan.at_sync() {
                    self.plan.copy_in_started();
                }
            }
            _ => {}
        }
    }

    /// A CommandComplete: a schema change retires what depended on the
    /// schema; settings made in a transaction take effect at its COMMIT.
    fn on_command_complete(&mut self, tag: TagSays) {
        if tag == TagSays::SchemaChanged {
            self.shared.retire_on_ddl();
        }
        if tag == TagSays::Commit {
            self.schema_committed();
        }
        self.portals.cursors.on_tag(tag);
        match tag {
            TagSays::Commit => self.listening.channels.on_tag(true),
            TagSays::Rollback => self.listening.channels.on_tag(false),
            _ => {}
        }
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        if tag == TagSays::Commit {
            let session_mode = self.cluster.session_mode();
            for change in self.settings.take_pending() {
                self.settings.take_effect(&change, session_mode);
                server.conn.applied.apply_on_server(&change);
            }
        } else if tag == TagSays::Rollback {
            self.settings.pending.clear();
        }
    }

    /// Undo what was recorded for messages an error made the server skip;
    /// retire a shared statement whose Bind found it stale.
    fn undo_failed(&mut self, code: Option<&[u8]>, failed: Vec<Effect>) {
        if let Some(Effect::Bound(id)) = failed.first() {
            if code.is_some_and(stale_statement) {
                self.shared.statements.retire(*id);
            }
        }
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        for effect in failed {
            match effect {
                Effect::Prepared(id, name) => {
                    server.conn.prepared.remove(id);
                    if let Some(name) = name {
                        self.named.protocol.remove_if_id(&name, id);
                    }
                }
                Effect::Named(id, name) => self.named.protocol.remove_if_id(&name, id),
                Effect::Closed(id) => server.conn.prepared.insert(id),
                Effect::SqlPrepared(id) => server.conn.prepared.remove(id),
                Effect::SqlNamed(id, name) if self.named.sql.id_of(&name) == Some(id) => {
                    self.named.sql.remove(&name);
                }
                _ => {}
            }
        }
    }

    /// A ReadyForQuery: the settings and resets of what it ends take effect
    /// (at once outside a transaction, at its COMMIT inside one), unless
    /// an error rolled them back.
    fn on_ready(&mut self, completed: Effect) {
        self.txn.settled();
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        let (conn, pool) = server.parts();
        let status = conn.status();
        let extended = std::mem::take(&mut self.settings.extended);
        // (The usual ReadyForQuery has nothing to apply.)
        let applies = !(extended.is_empty() && matches!(completed, Effect::None));
        let failed = self.pipeline.ready();
        if let (true, Effect::SqlPrepared(id)) = (failed, &completed) {
            conn.prepared.remove(*id);
        }
        if !failed && applies {
            let (changes, completed) = match completed {
                Effect::Settings(changes) => (changes, Effect::None),
                other => (Vec::new(), other),
            };
            for change in changes.into_iter().chain(extended) {
                if status == TransactionStatus::Idle {
                    let session_mode = self.cluster.session_mode();
                    self.settings.take_effect(&change, session_mode);
                    conn.applied.apply_on_server(&change);
                } else {
                    self.settings.pending.push(change);
                }
            }
            match completed {
                Effect::DiscardAll => {
                    conn.prepared.clear();
                    conn.applied = ParamSet::default();
                    conn.dirty = false;
                    self.named.clear();
                    self.settings.discard_all();
                }
                Effect::DeallocateAll => conn.prepared.clear(),
                _ => {}
            }
        }
        if status == TransactionStatus::Idle {
            pool.stats.xact_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A ReadyForQuery the client gets ended a request: timed.
    fn stop_clock(&mut self) {
        let more = self.plan.pending_syncs() > 0;
        if let Some(server) = self.attached.main() {
            self.pipeline
                .clock_mut()
                .stop(&self.span, server.pool(), self.routing.shard(), more);
        }
    }
}

/// What the relay needs of a server message once its bytes are out of
/// reach (the next one is read in the same buffer).
pub(super) struct Seen {
    pub kind: BackendKind,
    /// The plan relays it as it is, deciding nothing.
    pub plain: bool,
    /// A CommandComplete: what its tag says.
    pub tag: Option<TagSays>,
    /// An ErrorResponse, copied.
    pub error: Option<BackendFrame>,
}

impl Seen {
    fn of(message: BackendMessage<'_>, raw: &[u8], plain: bool) -> Seen {
        Seen {
            kind: message.kind(),
            plain,
            tag: match message {
                BackendMessage::CommandComplete(tag) => Some(TagSays::of(tag)),
                _ => None,
            },
            error: match message {
                BackendMessage::ErrorResponse(_) => BackendFrame::copy_of(raw).ok(),
                _ => None,
            },
        }
    }

    /// An ErrorResponse's SQLSTATE.
    fn error_code(&self) -> Option<&[u8]> {
        match self.error.as_ref()?.message() {
            BackendMessage::ErrorResponse(fields) => fields.code(),
            _ => None,
        }
    }
}

/// What a CommandComplete's tag means for the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TagSays {
    Commit,
    /// A ROLLBACK (or ROLLBACK TO, or the COMMIT of an aborted
    /// transaction).
    Rollback,
    /// CREATE, ALTER, DROP, COMMENT.
    SchemaChanged,
    Other,
}

impl TagSays {
    pub(crate) fn of(tag: CommandTag<'_>) -> TagSays {
        if tag.is_commit() {
            TagSays::Commit
        } else if tag.is_rollback() {
            TagSays::Rollback
        } else if tag.changes_schema() {
            TagSays::SchemaChanged
        } else {
            TagSays::Other
        }
    }
}

/// A Bind error that says the server's copy of a statement no longer fits
/// the schema: "cached plan must not change result type" (0A000) or an
/// error of the statement's re-analysis (class 42: a column's type
/// changed, a table is gone).
fn stale_statement(code: &[u8]) -> bool {
    code == b"0A000" || code.starts_with(b"42")
}
