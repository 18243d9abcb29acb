//! The simple protocol: a Query's text is classified for what it changes
//! in the session (settings, DEALLOCATE, DISCARD ALL, session state), routed
//! on a sharded cluster, and sent to the server with the reply it owes
//! planned. `pgdog.unique_id()` calls are replaced by ids first
//! (`unique_id.rs`).

use bytes::BytesMut;

use super::dispatch::Dispatch;
use super::reply_plan::{self, Effect, Step};
use super::session_effects;
use super::sql_prepare::SqlQuery;
use super::transaction::Target;
use super::unique_id::Replaced;
use super::{End, Session};
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::Frame;
use crate::protocol::messages;

impl Session {
    pub(super) async fn on_query(&mut self, frame: Frame) -> Result<(), End> {
        let body = frame.body();
        let sql_bytes = body.strip_suffix(&[0]).unwrap_or(body);
        if self.before_query(sql_bytes).await? {
            return Ok(());
        }
        match self.replace_unique_ids(sql_bytes).await {
            Replaced::Unchanged => {}
            Replaced::Query(query) => return Box::pin(self.on_query(query)).await,
            Replaced::Refused => return Ok(()),
        }
        let keywords = session_effects::classify(sql_bytes);
        // The text as UTF-8, where the cache needs it.
        let sql = if keywords.tracked || self.has_replicas() || self.sharded() {
            super::sql_text(sql_bytes)
        } else {
            std::borrow::Cow::Borrowed("")
        };
        let mut dirty = keywords.leaves_state;
        let mut effect = Effect::None;
        // A tracked string's lookup, kept for routing.
        let mut known = None;
        if keywords.tracked {
            match self.lookup(&sql) {
                Ok(lookup) => {
                    match Box::pin(self.sql_prepared_query(&lookup)).await? {
                        SqlQuery::Not => {}
                        SqlQuery::Done => return Ok(()),
                        SqlQuery::Rest(rest) => return Box::pin(self.on_query(rest)).await,
                        SqlQuery::Run(target, statement, run) => {
                            let execute = self.run_sql_execute(target, statement, &run, sql_bytes);
                            return Box::pin(execute).await;
                        }
                    }
                    match self.session_effect(&lookup, &mut dirty) {
                        Some(tracked) => effect = tracked,
                        None => return Ok(()),
                    }
                    known = Some(lookup);
                }
                // The server reports the error; whatever ran is not tracked.
                Err(_) => dirty = true,
            }
        }
        if effect == Effect::DiscardAll {
            // It closes every cursor: no server is kept for one.
            self.release_unneeded_pins().await?;
        }
        let mut rewritten = None;
        if self.has_replicas() {
            known = known.or_else(|| self.lookup(&sql).ok());
            self.split_reads(known.as_ref().map(|l| &l.entry.summary))
                .await?;
        }
        let target = if self.sharded() {
            match self.route_query(&sql, known).await? {
                Dispatch::Done => return Ok(()),
                Dispatch::Send(target) => target,
                Dispatch::Rewritten(target, text) => {
                    rewritten = Some(Frame::query(&text));
                    target
                }
            }
        } else {
            Target::Any
        };
        if !self.ensure_server_or_reply(target, true).await? {
            return Ok(());
        }
        if let Some(server) = self.attached.main_mut() {
            server.conn.dirty |= dirty && self.cluster.transaction_mode();
        }
        self.count_query();
        self.pipeline.clock_mut().statement(sql_bytes);
        self.pipeline.unnamed_dropped();
        self.put_frame(rewritten.as_ref().unwrap_or(&frame));
        self.plan.push(Step::forward_with(reply_plan::SYNC, effect));
        Ok(())
    }

    /// A Query ends the extended-protocol messages before it as a Sync
    /// would (Postgres answers it with ReadyForQuery): asyncpg prepares with
    /// Parse, Describe and Flush, then may send a Query. Their server is
    /// synced first, so that it can go back to the pool and pgshard can
    /// read the catalog on it. Then, in transaction mode, LISTEN and
    /// UNLISTEN are answered here (`listen.rs`): `true` when `sql` was.
    async fn before_query(&mut self, sql: &[u8]) -> Result<bool, End> {
        if self.pipeline.unsynced() {
            self.settle_main().await?;
            self.pipeline.synced();
        }
        self.on_listen_query(sql).await
    }

    /// What a tracked statement changes in the session (`dirty` set when
    /// pgshard cannot track it), or `None` when it was answered here: a
    /// DEALLOCATE of a statement pgshard renamed (only the client's name
    /// goes).
    fn session_effect(
        &mut self,
        lookup: &router::cache::Lookup,
        dirty: &mut bool,
    ) -> Option<Effect> {
        let changes = session_effects::session_changes(&lookup.entry.summary, &lookup.entry.text);
        *dirty |= changes.untracked;
        if !self.sharded() {
            // One database: WITH HOLD cursors are remembered to keep it.
            self.note_unsharded_cursor(&lookup.entry.summary);
        }
        if changes.discard_all && !self.txn.active(self.server_view()) {
            self.portals.cursors.forget_all();
        }
        // In an aborted transaction Postgres refuses it: the server says so.
        let aborted = self.status() == TransactionStatus::Failed;
        Some(match changes.deallocate {
            _ if aborted => Effect::None,
            Some(Some(name)) if self.named.deallocate(name.as_bytes()) => {
                let mut reply = BytesMut::new();
                messages::command_complete(&mut reply, "DEALLOCATE");
                self.plan.push(Step::Local {
                    bytes: reply.freeze(),
                    ready: true,
                });
                return None;
            }
            Some(None) => {
                self.named.clear();
                Effect::DeallocateAll
            }
            _ if changes.discard_all => Effect::DiscardAll,
            _ if !changes.settings.is_empty() => Effect::Settings(changes.settings),
            _ => Effect::None,
        })
    }
}
