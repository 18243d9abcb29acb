//! A merged cursor read, moved or closed outside a segment: on the servers
//! the session holds for it (the transaction's, the pinned ones), taken
//! while it is read and put back in their order after; the simple
//! protocol's and the extended protocol's replies are both written here.

use bytes::{Bytes, BytesMut};

use super::{broken, no_cursor, Ask, Merged, Read, Source};
use crate::pool::Pooled;
use crate::protocol::backend::BackendKind;
use crate::protocol::frontend::Named;
use crate::protocol::messages;
use crate::session::{cancel_target, End, Session};

/// Servers taken from the session for a merged cursor.
pub(super) struct Borrowed {
    /// Every server the session held, in order (the main first).
    held: Vec<(usize, Pooled)>,
    /// Pinned servers of the cursor's other shards.
    pinned: Vec<(usize, Pooled)>,
}

impl Borrowed {
    /// The servers of `shards`, in that order; `None` when one has none
    /// (its part of the cursor is gone).
    fn servers(&mut self, shards: &[usize]) -> Option<Vec<&mut Pooled>> {
        let mut found: Vec<(usize, &mut Pooled)> = self
            .held
            .iter_mut()
            .chain(self.pinned.iter_mut())
            .filter_map(|(shard, server)| {
                let position = shards.iter().position(|s| s == shard)?;
                Some((position, server))
            })
            .collect();
        found.sort_by_key(|(position, _)| *position);
        found.dedup_by_key(|(position, _)| *position);
        (found.len() == shards.len()).then(|| found.into_iter().map(|(_, s)| s).collect())
    }
}

/// What is done with a merged cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::session) enum Use {
    Read(Ask),
    /// CLOSE: `CLOSE CURSOR`.
    Close,
    /// A Close message of the portal: CloseComplete.
    CloseMessage,
}

impl Session {
    fn borrow_servers(&mut self, shards: &[usize]) -> Borrowed {
        let held = self.attached.take_all_keeping_writes();
        let pinned = shards
            .iter()
            .filter(|shard| !held.iter().any(|(s, _)| s == *shard))
            .filter_map(|&shard| {
                self.portals
                    .cursors
                    .unpin(shard)
                    .map(|server| (shard, server))
            })
            .collect();
        Borrowed { held, pinned }
    }

    fn give_back(&mut self, borrowed: Borrowed) {
        for (_, server) in borrowed.pinned {
            self.portals.cursors.pin(server);
        }
        for (shard, server) in borrowed.held {
            self.attached.attach(shard, server);
        }
    }

    /// Use merged cursor `name` (read it, or close it on its shards),
    /// writing the client's reply; `simple`: a simple query's, with its
    /// ReadyForQuery.
    pub(in crate::session) async fn use_merged(
        &mut self,
        name: &[u8],
        using: Use,
        simple: bool,
    ) -> Result<(), End> {
        self.settle_main().await?;
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        let Some(mut merged) = self.portals.cursors.take_merged(name) else {
            no_cursor(name).encode(self.client.out());
            return self.merged_answered(Read::MergeFailed, simple).await;
        };
        let read = match using {
            Use::Read(_) if merged.broken => {
                broken(name).encode(self.client.out());
                Read::MergeFailed
            }
            Use::Read(_) if merged.refused.is_some() => {
                let why = merged.refused.unwrap_or_default();
                super::refusal(why).encode(self.client.out());
                Read::MergeFailed
            }
            Use::Read(ask) => self.read_held(&mut merged, ask).await?,
            Use::Close | Use::CloseMessage => self.close_held(&merged, using).await?,
        };
        if let Use::Read(_) = using {
            self.portals
                .cursors
                .put_merged(Bytes::copy_from_slice(name), merged);
        } else {
            self.release_unneeded_pins().await?;
        }
        self.merged_answered(read, simple).await
    }

    /// After a merged cursor was used: an error of pgshard's own ends the
    /// client's transaction, as a refused statement does (rolled back on
    /// its servers, the client sees it aborted); a simple query gets its
    /// ReadyForQuery.
    async fn merged_answered(&mut self, read: Read, simple: bool) -> Result<(), End> {
        if read != Read::Done {
            self.pipeline.error_relayed();
            if read == Read::MergeFailed {
                self.abort_for_cursor().await?;
            }
            if !simple {
                self.phase.skip();
            }
        }
        if simple {
            let status = self.status();
            messages::ready_for_query(self.client.out(), status);
        }
        Ok(self.client.flush().await?)
    }

    /// pgshard's own error inside the client's transaction: it is over,
    /// as on Postgres. One pgshard opened is rolled back on its servers at
    /// once (what the client pipelined after, a ROLLBACK and a BEGIN, then
    /// finds nothing running) and refused until it ends; one the server
    /// opened is refused as any statement pgshard refuses.
    async fn abort_for_cursor(&mut self) -> Result<(), End> {
        if self.txn.join_script().is_some() && self.attached.is_some() {
            // A ROLLBACK that fails leaves nothing to keep either.
            let _rolled_back = self.end_spanning(false, false).await?;
            self.txn.fail();
        } else if self.txn.refuse(self.server_view()) {
            self.pipeline.query("ROLLBACK");
            self.plan
                .push(crate::session::reply_plan::Step::injected_query());
        }
        Ok(())
    }

    /// Read `merged` on the servers the session holds or pinned for it.
    async fn read_held(&mut self, merged: &mut Merged, ask: Ask) -> Result<Read, End> {
        let mut borrowed = self.borrow_servers(&merged.shards);
        let read = match borrowed.servers(&merged.shards) {
            Some(mut servers) => {
                let targets: Vec<_> = servers.iter().map(|s| cancel_target(s)).collect();
                self.info.cancel.set(targets).await;
                self.read_merged(merged, &mut servers, ask, true).await
            }
            None => {
                let name = cursor_name(&merged.source);
                no_cursor(&name).encode(self.client.out());
                Ok(Read::MergeFailed)
            }
        };
        self.give_back(borrowed);
        let main = self.attached.main().map(cancel_target);
        self.set_cancel_target(main).await;
        read
    }

    /// Close `merged` on each of its shards that still has a server for
    /// it; the first error is the client's, else CLOSE's reply.
    async fn close_held(&mut self, merged: &Merged, using: Use) -> Result<Read, End> {
        let mut request = BytesMut::new();
        match &merged.source {
            Source::Cursor(name) => {
                let name = crate::conn::settings::quote_ident(name);
                messages::query(&mut request, &format!("CLOSE {name}"));
            }
            Source::Portal(name) => {
                messages::close(&mut request, Named::Portal, name);
                messages::sync(&mut request);
            }
        }
        let mut borrowed = self.borrow_servers(&merged.shards);
        let mut failure = None;
        for (shard, server) in borrowed.held.iter_mut().chain(borrowed.pinned.iter_mut()) {
            if !merged.shards.contains(shard) {
                continue;
            }
            if let Some(error) = self.run_on(server, &request).await? {
                failure.get_or_insert(error);
            }
        }
        self.give_back(borrowed);
        if let Some(error) = failure {
            self.client.out().extend_from_slice(&error);
            return Ok(Read::ShardFailed);
        }
        match using {
            Use::CloseMessage => messages::close_complete(self.client.out()),
            _ => messages::command_complete(self.client.out(), "CLOSE CURSOR"),
        }
        Ok(Read::Done)
    }

    /// Send `request` (ending with a Sync or a simple query) to `server`
    /// and read its reply to the ReadyForQuery: its error, if any.
    pub(in crate::session) async fn run_on(
        &mut self,
        server: &mut Pooled,
        request: &[u8],
    ) -> Result<Option<Bytes>, End> {
        let sent = self.client.watch(server.conn.send(request));
        if sent.await?.is_err() {
            return Ok(Some(lost()));
        }
        let mut error = None;
        loop {
            let Some(message) = self.server_message(server).await? else {
                return Ok(Some(lost()));
            };
            match message.kind() {
                BackendKind::ErrorResponse => {
                    error.get_or_insert(message.into_bytes());
                }
                BackendKind::ReadyForQuery => return Ok(error),
                _ => {}
            }
        }
    }
}

/// The name a cursor's shards know it by.
fn cursor_name(source: &Source) -> Bytes {
    match source {
        Source::Cursor(name) => Bytes::copy_from_slice(name.as_bytes()),
        Source::Portal(name) => name.clone(),
    }
}

/// The ErrorResponse of a lost server connection.
fn lost() -> Bytes {
    let mut out = BytesMut::new();
    crate::errors::ClientError::shard_lost().encode(&mut out);
    out.freeze()
}
