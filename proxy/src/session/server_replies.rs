//! Server replies to a session: relayed in order as the response plan
//! says (forwarded, swallowed, or with pgshard's own replies between them),
//! with what they mean for the session recorded on the way: transaction
//! status, settings that took effect, statements a server holds or lost,
//! schema changes that retire shared statements.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use router::config::PoolerMode;
use router::route::Overrides;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::warn;

use super::params::ParamSet;
use super::reply_plan::Effect;
use super::{count, End, Session, CLIENT_FLUSH_AT};
use crate::errors::ClientError;
use crate::protocol::backend::{error_code, sqlstate};
use crate::protocol::messages;
use crate::state::State;

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    /// Read the attached server, relaying what it sends, until the plan owes
    /// the client nothing more from it (while watching the client).
    pub(super) async fn answer_all(&mut self) -> Result<(), End> {
        while self.plan.awaiting_server() {
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

    /// Handle every whole message the server has sent.
    pub(super) async fn on_server_data(&mut self) -> Result<(), End> {
        while let Some(message) = self.next_server_message()? {
            let tag = message[0];
            let status = self.status();
            self.plan.drain_local(&mut self.to_client, status);
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
            self.undo_failed(body, verdict.failed);
            if tag == b'Z' {
                self.on_ready(verdict.completed);
                if verdict.forward {
                    self.stop_clock();
                }
            }
            if verdict.forward {
                self.forward_server_message(&message);
            }
            if self.to_client.len() >= CLIENT_FLUSH_AT {
                self.flush_client().await?;
            }
        }
        let status = self.status();
        self.plan.drain_local(&mut self.to_client, status);
        self.flush_client().await
    }

    /// The next whole message the attached server sent, if one was read.
    fn next_server_message(&mut self) -> Result<Option<Bytes>, End> {
        let Some(server) = self.attached.main_mut() else {
            return Ok(None);
        };
        match server.conn.next_message() {
            Ok(message) => Ok(message),
            Err(err) => {
                warn!(%err, "server sent an invalid message");
                self.attached.take_main();
                Err(End::Fatal(ClientError::new(
                    sqlstate::PROTOCOL_VIOLATION,
                    "the server sent an invalid message; the connection is closed",
                )))
            }
        }
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
                if self.txn.on_end(Some(conn.status)) {
                    self.overrides = Overrides::default();
                }
            }
            b'S' => conn.note_parameter(body),
            b'C' => {
                retire_on_ddl(&self.state, body);
                if body.starts_with(b"COMMIT\0") {
                    for change in self.pending.drain(..) {
                        self.params.apply(&change, &self.defaults);
                        conn.applied.apply_on_server(&change);
                        self.resync |= self.mode == PoolerMode::Session;
                    }
                } else if body.starts_with(b"ROLLBACK\0") {
                    self.pending.clear();
                }
            }
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
        if !std::mem::take(&mut self.failed) {
            let changes = match &completed {
                Effect::Settings(changes) => changes.clone(),
                _ => Vec::new(),
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
            self.clock.stop(server.pool(), self.shard, more);
        }
    }

    /// Pass a server message on to the client.
    fn forward_server_message(&mut self, message: &Bytes) {
        let tag = message[0];
        if tag == b'Z' && (self.txn.overrides_server() || self.attached.spans()) {
            // pgshard holds a transaction the server does not know of, or
            // one that spans this server and others.
            let status = self.status();
            messages::ready_for_query(&mut self.to_client, status);
        } else {
            self.to_client.extend_from_slice(message);
        }
        if tag == b'E' {
            self.state
                .metrics
                .error(error_code(&message[5..]).unwrap_or_default());
        }
        if tag == b'E' && self.plan.pending_syncs() <= 1 {
            // An error of the latest segment (what the client sent after
            // its last Sync, or since its last Query), not of an earlier
            // one still being answered.
            self.segment_errors += 1;
        }
        if let Some(server) = self.attached.main() {
            count(&server.pool().stats.bytes_sent, message.len());
        }
    }
}

/// A command tag that says the schema changed (CREATE, ALTER, DROP...):
/// shared statements analysed before it may be stale, so they are retired.
pub(crate) fn retire_on_ddl(state: &State, tag: &[u8]) {
    const DDL: [&[u8]; 4] = [b"CREATE ", b"ALTER ", b"DROP ", b"COMMENT"];
    if DDL.iter().any(|word| tag.starts_with(word)) {
        state.statements.retire_all();
        state.forget_table_columns();
        state.schema_changed.notify_one();
    }
}

/// A Bind error that says the server's copy of a statement no longer fits
/// the schema: "cached plan must not change result type" (0A000) or an
/// error of the statement's re-analysis (class 42: a column's type
/// changed, a table is gone).
fn stale_statement(code: &[u8]) -> bool {
    code == b"0A000" || code.starts_with(b"42")
}
