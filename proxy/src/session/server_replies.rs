//! Server replies to a session: relayed in order as the response plan
//! says (forwarded, swallowed, or with pgshard's own replies between them),
//! with what they mean for the session recorded on the way: transaction
//! status, settings that took effect, statements a server holds or lost,
//! schema changes that retire shared statements.

use std::sync::atomic::Ordering;

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
            let Some(server) = &mut self.server else {
                break;
            };
            let read = server.conn.fill();
            match super::watch_client(&mut self.client, &mut self.cbuf, read).await? {
                Ok(0) | Err(_) => {
                    self.server = None;
                    return Err(End::server_lost());
                }
                Ok(_) => self.on_server_data().await?,
            }
        }
        Ok(())
    }

    /// Handle every whole message the server has sent.
    pub(super) async fn on_server_data(&mut self) -> Result<(), End> {
        loop {
            let Some(server) = &mut self.server else {
                return Ok(());
            };
            let (conn, pool) = server.parts();
            let message = match conn.next_message() {
                Ok(Some(message)) => message,
                Ok(None) => break,
                Err(err) => {
                    warn!(%err, "server sent an invalid message");
                    self.server = None;
                    return Err(End::Fatal(ClientError::new(
                        sqlstate::PROTOCOL_VIOLATION,
                        "the server sent an invalid message; the connection is closed",
                    )));
                }
            };
            let tag = message[0];
            self.plan
                .drain_local(&mut self.to_client, self.txn.status(conn.status));

            let body = &message[5..];
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
            let verdict = self.plan.on_server_message(tag);
            if tag == b'E' && verdict.forward {
                // A statement of a deferred transaction failed (it ran
                // outside it, before it opened): the transaction is
                // aborted, as it would be on Postgres.
                self.txn.on_error();
            }
            if let Some(Effect::Bound(id)) = verdict.failed.first() {
                if error_code(body).is_some_and(stale_statement) {
                    self.state.statements.retire(*id);
                }
            }
            for effect in verdict.failed {
                match effect {
                    Effect::Prepared(id, name) => {
                        conn.prepared.remove(id);
                        if let Some(name) = name {
                            self.statements.remove_if_id(&name, id);
                        }
                    }
                    Effect::Named(id, name) => self.statements.remove_if_id(&name, id),
                    Effect::Closed(id) => conn.prepared.insert(id),
                    _ => {}
                }
            }
            if tag == b'E' && verdict.forward {
                self.extended_settings.clear();
            }
            if tag == b'Z' {
                let status = conn.status;
                let extended = std::mem::take(&mut self.extended_settings);
                if !self.failed {
                    let changes = match &verdict.completed {
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
                }
                if !self.failed {
                    match verdict.completed {
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
                self.failed = false;
                if status == b'I' {
                    pool.stats.xact_count.fetch_add(1, Ordering::Relaxed);
                }
            }
            if verdict.forward {
                if tag == b'Z' && self.txn.overrides_server() {
                    // pgshard holds a transaction the server does not know of.
                    let status = self.txn.status(conn.status);
                    messages::ready_for_query(&mut self.to_client, status);
                } else {
                    self.to_client.extend_from_slice(&message);
                }
                if tag == b'E' && self.plan.pending_syncs() <= 1 {
                    // An error of the latest segment (what the client sent
                    // after its last Sync, or since its last Query), not of
                    // an earlier one still being answered.
                    self.segment_errors += 1;
                }
                count(&pool.stats.bytes_sent, message.len());
            }
            if self.to_client.len() >= CLIENT_FLUSH_AT {
                self.flush_client().await?;
            }
        }
        let status = self.status();
        self.plan.drain_local(&mut self.to_client, status);
        self.flush_client().await
    }
}

/// A command tag that says the schema changed (CREATE, ALTER, DROP...):
/// shared statements analysed before it may be stale, so they are retired.
pub(crate) fn retire_on_ddl(state: &State, tag: &[u8]) {
    const DDL: [&[u8]; 4] = [b"CREATE ", b"ALTER ", b"DROP ", b"COMMENT"];
    if DDL.iter().any(|word| tag.starts_with(word)) {
        state.statements.retire_all();
    }
}

/// A Bind error that says the server's copy of a statement no longer fits
/// the schema: "cached plan must not change result type" (0A000) or an
/// error of the statement's re-analysis (class 42: a column's type
/// changed, a table is gone).
fn stale_statement(code: &[u8]) -> bool {
    code == b"0A000" || code.starts_with(b"42")
}
