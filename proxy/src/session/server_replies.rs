//! Server replies to a session: relayed in order as the response plan
//! says (forwarded, swallowed, or with pgshard's own replies between them),
//! with what they mean for the session recorded on the way: transaction
//! status, settings that took effect, statements a server holds or lost,
//! schema changes that retire shared statements.

use std::sync::atomic::Ordering;

use bytes::{Buf, BytesMut};
use router::config::PoolerMode;
use router::route::Overrides;
use tracing::warn;

use super::params::ParamSet;
use super::reply_plan::Effect;
use super::{count, End, Session, CLIENT_FLUSH_AT};
use crate::errors::ClientError;
use crate::protocol::backend::{error_code, sqlstate};
use crate::protocol::frame::{backend_extent, reserve_missing, Extent};
use crate::protocol::messages;
use crate::session::ClientIo;
use crate::state::State;

impl<S: ClientIo> Session<S> {
    /// Read the attached server, relaying what it sends, until the plan owes
    /// the client nothing more from it (while watching the client).
    pub(super) async fn answer_all(&mut self) -> Result<(), End> {
        while self.plan.awaiting_server() {
            self.clock.waiting();
            let Some(server) = self.attached.main_mut() else {
                break;
            };
            let read = server.conn.fill();
            match super::watch_client(&mut self.client, &mut self.cbuf, read).await? {
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
        self.flush_client().await
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
        if clean && self.cbuf.is_empty() && self.release_due() && !self.release_clean() {
            self.maybe_release().await?;
        }
        if !self.flush_client_now()? {
            self.flush_client().await?;
        }
        Ok(())
    }

    /// Relay what the main server sent, and the local replies that follow
    /// it, into the client's buffer.
    async fn relay_server_data(&mut self) -> Result<(), End> {
        let Some(server) = self.attached.main_mut() else {
            return Ok(());
        };
        let id = server.conn.id;
        let mut rbuf = server.conn.take_read();
        let relayed = self.relay_server_messages(&mut rbuf).await;
        if let Some(server) = self.attached.main_mut().filter(|s| s.conn.id == id) {
            server.conn.restore_read(rbuf);
        }
        relayed?;
        let status = self.status();
        self.plan.drain_local(&mut self.to_client, status);
        Ok(())
    }

    /// Relay the whole messages at the front of `rbuf` (the main server's
    /// read buffer) and consume them.
    async fn relay_server_messages(&mut self, rbuf: &mut BytesMut) -> Result<(), End> {
        // `rbuf[run..at]` is forwarded and not yet copied to the client.
        let (mut at, mut run, mut forwarded) = (0, 0, 0);
        loop {
            let length = match backend_extent(&rbuf[at..]) {
                Ok(Extent::Whole(length)) => length,
                Ok(Extent::Missing(missing)) => {
                    self.to_client.extend_from_slice(&rbuf[run..at]);
                    rbuf.advance(at);
                    if rbuf.len() >= 5 {
                        reserve_missing(rbuf, missing);
                    }
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
            let message = &rbuf[at..at + length];
            let tag = message[0];
            at += length;
            if self.plan.relays_plainly(tag) {
                // A row of the client's reply, say, or a BindComplete.
                if tag == b'C' {
                    self.on_command_complete(&message[5..]);
                }
                forwarded += length;
                continue;
            }
            let local_next = self.plan.local_next();
            if local_next || tag == b'Z' || tag == b'E' {
                // What was forwarded goes before local replies and before
                // a ReadyForQuery that may be replaced.
                self.to_client.extend_from_slice(&rbuf[run..at - length]);
                run = at - length;
            }
            if local_next {
                let status = self.status();
                self.plan.drain_local(&mut self.to_client, status);
            }
            if self.on_server_message(message) {
                forwarded += length;
            } else {
                // Swallowed, or replaced by what on_server_message wrote.
                self.to_client.extend_from_slice(&rbuf[run..at - length]);
                run = at;
            }
            if self.to_client.len() + (at - run) >= CLIENT_FLUSH_AT {
                self.to_client.extend_from_slice(&rbuf[run..at]);
                run = at;
                self.flush_client().await?;
            }
        }
        if let Some(server) = self.attached.main() {
            count(&server.pool().stats.bytes_sent, forwarded);
        }
        Ok(())
    }

    /// Handle one whole server message (not a DataRow being forwarded);
    /// `true` if the client gets it as it is, `false` if it is swallowed or
    /// its replacement was written to the client's buffer (a
    /// ReadyForQuery with pgshard's transaction status).
    fn on_server_message(&mut self, message: &[u8]) -> bool {
        let tag = message[0];
        let body = &message[5..];
        self.note_server_message(tag, body);
        let verdict = self.plan.on_server_message(tag);
        if tag == b'E' && verdict.forward {
            // A statement of a deferred transaction failed (it ran
            // outside it, before it opened): the transaction is
            // aborted, as it would be on Postgres.
            self.txn.on_error();
            self.extended_settings.clear();
        }
        if !verdict.failed.is_empty() {
            self.undo_failed(body, verdict.failed);
        }
        if tag == b'Z' {
            self.on_ready(verdict.completed);
            if verdict.forward {
                self.stop_clock();
            }
        }
        if !verdict.forward {
            return false;
        }
        if tag == b'E' {
            self.state
                .metrics
                .error(error_code(body).unwrap_or_default());
            if self.plan.pending_syncs() <= 1 {
                // An error of the latest segment (what the client sent
                // after its last Sync, or since its last Query), not of an
                // earlier one still being answered.
                self.segment_errors += 1;
            }
            if let Some(renamed) = self.sql_names.client_error(message) {
                // It names a statement by pgshard's name for it.
                self.to_client.extend_from_slice(&renamed);
                return false;
            }
        }
        if tag == b'Z' && (self.txn.overrides_server() || self.attached.spans()) {
            // pgshard holds a transaction the server does not know of, or
            // one that spans this server and others.
            let status = self.status();
            messages::ready_for_query(&mut self.to_client, status);
            return false;
        }
        true
    }

    /// What a server message says about the connection and the session,
    /// whatever the plan does with it: transaction status, parameter
    /// reports, settings kept at COMMIT, schema changes, COPY IN.
    fn note_server_message(&mut self, tag: u8, body: &[u8]) {
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        let conn = &mut server.conn;
        match tag {
            b'Z' => {
                conn.status = body.first().copied().unwrap_or(b'I');
                self.cursors.on_ready(conn.status);
                if self.txn.on_end(Some(conn.status)) {
                    self.overrides = Overrides::default();
                }
            }
            b'S' => conn.note_parameter(body),
            b'C' => self.on_command_complete(body),
            b'E' if self.plan.at_sync() => self.failed = true,
            b'G' => {
                self.copy_in = true;
                if !self.plan.at_sync() {
                    self.plan.copy_in_started();
                }
            }
            _ => {}
        }
    }

    /// A CommandComplete: a schema change retires what depended on the
    /// schema; settings made in a transaction take effect at its COMMIT.
    fn on_command_complete(&mut self, tag: &[u8]) {
        retire_on_ddl(&self.state, tag);
        if tag.starts_with(b"COMMIT\0") {
            self.schema_committed();
        }
        self.cursors.on_tag(tag);
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        if tag.starts_with(b"COMMIT\0") {
            for change in self.pending.drain(..) {
                self.params.apply(&change, &self.defaults);
                server.conn.applied.apply_on_server(&change);
                self.resync |= self.mode == PoolerMode::Session;
            }
        } else if tag.starts_with(b"ROLLBACK\0") {
            self.pending.clear();
        }
    }

    /// Undo what was recorded for messages an error made the server skip;
    /// retire a shared statement whose Bind found it stale.
    fn undo_failed(&mut self, body: &[u8], failed: Vec<Effect>) {
        if let Some(Effect::Bound(id)) = failed.first() {
            if error_code(body).is_some_and(stale_statement) {
                self.state.statements.retire(*id);
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
                        self.statements.remove_if_id(&name, id);
                    }
                }
                Effect::Named(id, name) => self.statements.remove_if_id(&name, id),
                Effect::Closed(id) => server.conn.prepared.insert(id),
                Effect::SqlPrepared(id) => server.conn.prepared.remove(id),
                Effect::SqlNamed(id, name) if self.sql_names.id_of(&name) == Some(id) => {
                    self.sql_names.remove(&name);
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
        let status = conn.status;
        let extended = std::mem::take(&mut self.extended_settings);
        // (The usual ReadyForQuery has nothing to apply.)
        let applies = !(extended.is_empty() && matches!(completed, Effect::None));
        let failed = std::mem::take(&mut self.failed);
        if let (true, Effect::SqlPrepared(id)) = (failed, &completed) {
            conn.prepared.remove(*id);
        }
        if !failed && applies {
            let (changes, completed) = match completed {
                Effect::Settings(changes) => (changes, Effect::None),
                other => (Vec::new(), other),
            };
            for change in changes.into_iter().chain(extended) {
                if status == b'I' {
                    self.params.apply(&change, &self.defaults);
                    conn.applied.apply_on_server(&change);
                    self.resync |= self.mode == PoolerMode::Session;
                } else {
                    self.pending.push(change);
                }
            }
            match completed {
                Effect::DiscardAll => {
                    conn.prepared.clear();
                    conn.applied = ParamSet::default();
                    conn.dirty = false;
                    self.statements.clear();
                    self.sql_names.clear();
                    self.params = self.defaults.clone();
                    self.pending.clear();
                }
                Effect::DeallocateAll => conn.prepared.clear(),
                _ => {}
            }
        }
        if status == b'I' {
            pool.stats.xact_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A ReadyForQuery the client gets ended a request: timed.
    fn stop_clock(&mut self) {
        let more = self.plan.pending_syncs() > 0;
        if let Some(server) = self.attached.main() {
            self.clock.stop(&self.span, server.pool(), self.shard, more);
        }
    }
}

/// A command tag that says the schema changed (CREATE, ALTER, DROP...):
/// shared statements analysed before it may be stale, so they are retired.
pub(crate) fn retire_on_ddl(state: &State, tag: &[u8]) {
    const DDL: [&[u8]; 4] = [b"CREATE ", b"ALTER ", b"DROP ", b"COMMENT"];
    // (The first byte settles the usual tag, SELECT's, at once.)
    let ddl = matches!(tag.first(), Some(b'C' | b'A' | b'D'))
        && DDL.iter().any(|word| tag.starts_with(word));
    if ddl {
        state.statements.retire_all();
        state.forget_table_columns();
        state.catalog.request();
    }
}

/// A Bind error that says the server's copy of a statement no longer fits
/// the schema: "cached plan must not change result type" (0A000) or an
/// error of the statement's re-analysis (class 42: a column's type
/// changed, a table is gone).
fn stale_statement(code: &[u8]) -> bool {
    code == b"0A000" || code.starts_with(b"42")
}
