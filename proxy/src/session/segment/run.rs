//! Running a held segment: a server per shard it touches (the attached one
//! adopted), each shard's part sent with a Flush, the replies merged unit by
//! unit in the client's order, then Sync everywhere or, after an error,
//! the failing shard synced and the others closed.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;

use super::request::build_request;
use super::{Item, Part, Segment};
use crate::errors::ClientError;
use crate::execute::merge::{Merger, RowMerge, SplitRows};
use crate::protocol::backend::BackendKind;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::messages;
use crate::session::{End, Session};

impl Session {
    /// Run a held segment on every shard it touches and merge the replies,
    /// ReadyForQuery included.
    pub(super) async fn run_segment(&mut self, segment: Segment) -> Result<(), End> {
        if self.txn.spans() {
            return self.run_segment_in_txn(segment).await;
        }
        let status = self.client_status(TransactionStatus::Idle);
        // SETs bound before the segment run on the attached server, in its
        // transaction: the client's if the segment commits.
        let settings = std::mem::take(&mut self.settings.extended);
        // What the client sent before the segment's first multi-shard Bind
        // went to the attached server: its replies come first, and its
        // implicit transaction joins the segment's (a Flush, not a Sync).
        let errors = self.pipeline.error_mark();
        let adopted = match self.attached.is_some() {
            true => self.adopt_attached().await?,
            false => None,
        };
        self.plan.drain_local(self.client.out(), status);
        if self.pipeline.errors_since(errors) {
            // That part failed: the rest of the segment is skipped.
            self.forget_parses(&segment.items, 0);
            if let Some(part) = adopted {
                self.end_parts(vec![part], true).await;
            }
            messages::ready_for_query(self.client.out(), status);
            return Ok(self.client.flush().await?);
        }
        let Some(mut parts) = self.segment_parts(&segment.items, adopted).await? else {
            // Nothing of the segment ran: the error is the client's.
            self.forget_parses(&segment.items, 0);
            messages::ready_for_query(self.client.out(), status);
            return Ok(self.client.flush().await?);
        };
        let two_phase = self.segment_two_phase(&segment);
        let failed_at = self
            .execute_parts(&mut parts, &segment.items, two_phase)
            .await?;
        // Portals end with the Sync outside a transaction.
        self.segment_portals(&segment, false);
        let mut failed = failed_at.is_some();
        if let Some(index) = failed_at {
            self.pipeline.error_relayed();
            self.forget_parses(&segment.items, index + 1);
        }
        if two_phase && !failed {
            failed = !self.commit_segment(parts, &segment.writes).await?;
            if failed {
                self.pipeline.error_relayed();
            }
        } else {
            self.end_parts(parts, failed).await;
        }
        if !failed {
            for change in settings {
                self.settings.take_effect(&change, false);
            }
        }
        let status = self.client_status(TransactionStatus::Idle);
        messages::ready_for_query(self.client.out(), status);
        Ok(self.client.flush().await?)
    }

    /// Send each part its share of the segment (`begin`: opening a
    /// transaction first, which outlives its Sync) and relay the merged
    /// replies; the item that failed, if one did. `Err` when the client
    /// left (the statements are cancelled; the servers close as `parts`
    /// drops).
    pub(super) async fn execute_parts(
        &mut self,
        parts: &mut [Part],
        items: &[Item],
        begin: bool,
    ) -> Result<Option<usize>, End> {
        // A CancelRequest from the client reaches every shard's server.
        let targets = parts
            .iter()
            .map(|p| crate::session::cancel_target(&p.server));
        self.info.cancel.set(targets).await;
        let bytewise = self.segment_bytewise(parts, items).await;
        let started = std::time::Instant::now();
        let merged = self.run_chunks(parts, items, begin, bytewise).await;
        let targets = self.info.cancel.take().await;
        if merged.is_err() {
            for target in targets {
                tokio::spawn(async move { crate::conn::cancel::send(&target).await });
            }
        }
        let failed_at = merged?;
        self.segment_timed(parts, started.elapsed());
        Ok(failed_at)
    }

    /// The segment took `took` on each shard's server (one request each):
    /// observed per pool, logged if slow.
    fn segment_timed(&self, parts: &[Part], took: std::time::Duration) {
        for part in parts {
            part.server.pool().histograms.observe_query(took);
        }
        let shards: Vec<usize> = parts.iter().map(|p| p.shard).collect();
        self.pipeline.clock().log_if_slow(&self.span, took, &shards);
    }

    /// Send each part its share of `items[range]` (`begin`: a BEGIN
    /// first): whether every part took it (a part that did not is failed).
    pub(super) async fn send_chunk(
        &mut self,
        parts: &mut [Part],
        items: &[Item],
        range: std::ops::Range<usize>,
        begin: bool,
    ) -> Result<(), End> {
        for part in parts.iter_mut() {
            let request = build_request(
                part,
                items,
                range.clone(),
                begin,
                self.cluster.prepared_limit(),
            );
            let write = part.server.conn.send(&request);
            if self.client.watch(write).await?.is_err() {
                part.failed = true;
            }
        }
        Ok(())
    }

    /// Whether the shards order text bytewise, asked only when a merge
    /// needs it, of a server outside any transaction (not an adopted one).
    async fn segment_bytewise(&mut self, parts: &mut [Part], items: &[Item]) -> bool {
        let merges = items.iter().any(|item| {
            matches!(
                item,
                Item::Send { merge: Some(_), .. } | Item::Cursor { merge: Some(_), .. }
            )
        });
        if !merges {
            return false;
        }
        // Inside the client's transaction block its servers (held, synced)
        // may be asked too: a query there commits nothing.
        let in_block = self.txn.spans();
        let idle = parts.iter_mut().find(|p| {
            p.server.conn.status() == TransactionStatus::Idle
                || (in_block && p.server.conn.status() == TransactionStatus::InBlock)
        });
        self.bytewise_text(idle.map(|p| &mut p.server)).await
    }

    /// A server for every shard the segment touches (the adopted one
    /// included), in shard order; `None` when one cannot be had (its error
    /// is written for the client, and what is held is closed: an adopted
    /// server's transaction rolls back).
    async fn segment_parts(
        &mut self,
        items: &[Item],
        adopted: Option<Part>,
    ) -> Result<Option<Vec<Part>>, End> {
        let mut shards: Vec<usize> = items
            .iter()
            .flat_map(|item| match item {
                Item::Send { shards, .. } | Item::Cursor { shards, .. } => shards.clone(),
                Item::Local(..) => Vec::new(),
            })
            .collect();
        shards.extend(adopted.as_ref().map(|p| p.shard));
        shards.sort_unstable();
        shards.dedup();
        let mut parts: Vec<Part> = adopted.into_iter().collect();
        for shard in shards {
            if parts.iter().any(|p| p.shard == shard) {
                continue;
            }
            // Statements up to the Sync run in one transaction: the primary.
            match self.checkout_server(shard, false).await? {
                Ok(server) => parts.push(Part {
                    shard,
                    server,
                    units: Default::default(),
                    failed: false,
                    unnamed_parsed: None,
                    chunk_rows: 0,
                }),
                Err(err) => {
                    err.client_error(&self.info.database, shard)
                        .encode(self.client.out());
                    self.pipeline.error_relayed();
                    return Ok(None);
                }
            }
        }
        parts.sort_by_key(|p| p.shard);
        Ok(Some(parts))
    }

    /// Take the attached server into the segment: Flush what was sent to
    /// it and relay the replies (errors among them count for the segment).
    async fn adopt_attached(&mut self) -> Result<Option<Part>, End> {
        if self.plan.unsynced_tail() {
            messages::flush(self.pipeline.for_server());
        }
        self.flush().await?;
        self.answer_all().await?;
        let (Some(shard), Some(server)) = (self.attached.shard(), self.attached.take_main()) else {
            return Ok(None);
        };
        self.set_cancel_target(None).await;
        Ok(Some(Part {
            shard,
            server,
            units: Default::default(),
            failed: false,
            unnamed_parsed: None,
            chunk_rows: 0,
        }))
    }

    /// Relay the replies of `items[range]` item by item. Returns the item
    /// that failed, if one did.
    pub(super) async fn merge_segment(
        &mut self,
        parts: &mut [Part],
        items: &[Item],
        range: std::ops::Range<usize>,
        bytewise: bool,
    ) -> Result<Option<usize>, End> {
        let mut failed = parts.iter().any(|p| p.failed);
        if failed {
            ClientError::shard_lost().encode(self.client.out());
            return Ok(Some(range.start));
        }
        let (from, to) = (range.start, range.end);
        for (index, item) in items.iter().enumerate().take(to).skip(from) {
            let Item::Send {
                shards,
                merge,
                copies,
                split,
                ..
            } = item
            else {
                if let Item::Local(bytes, _) = item {
                    self.client.out().extend_from_slice(bytes);
                }
                continue;
            };
            let mut merger = match merge {
                None if *copies => Merger::copies(),
                None => match split {
                    Some(rows) => Merger::splitting(SplitRows::positional(rows.to_vec())),
                    None => Merger::default(),
                },
                Some(merge) => {
                    let bind = &merge.bind;
                    let rows =
                        RowMerge::new(Arc::clone(&bind.plan), bind.window, shards.len(), bytewise);
                    let memory = self.shared.config().general.cross_shard_merge_memory;
                    let rows = rows.with_params(bind.params.clone()).with_memory(memory);
                    Merger::merging(if merge.execute { rows.silent() } else { rows })
                }
            };
            if merge.as_ref().is_some_and(|m| m.execute) {
                failed |= !self
                    .read_interleaved(parts, shards, index, &mut merger)
                    .await?;
            } else {
                for (position, &shard) in shards.iter().enumerate() {
                    let Some(part) = parts.iter_mut().find(|p| p.shard == shard) else {
                        continue;
                    };
                    failed |= !self.read_unit(part, index, position, &mut merger).await?;
                    if failed {
                        break;
                    }
                }
            }
            failed |= merger.finish(self.client.out());
            if self.client.out().len() >= crate::session::CLIENT_FLUSH_AT {
                self.client.flush().await?;
            }
            if failed {
                return Ok(Some(index));
            }
        }
        Ok(None)
    }

    /// Parses of the segment from item `from` on did not happen (an error
    /// came first): the client's names made by them are gone, as on
    /// Postgres.
    pub(super) fn forget_parses(&mut self, items: &[Item], from: usize) {
        for item in items.iter().skip(from) {
            if let Item::Local(_, Some((name, id))) = item {
                self.named.protocol.remove_if_id(name, *id);
            }
        }
    }

    /// Finish every part: with no failure, each commits at its Sync and
    /// goes back to its pool; after one, a part that failed ends its
    /// (rolled back) transaction at the Sync, and the others are closed,
    /// which rolls theirs back.
    async fn end_parts(&mut self, parts: Vec<Part>, failed: bool) {
        for mut part in parts {
            if failed && !part.failed {
                continue; // dropped: Postgres rolls the transaction back
            }
            if sync_part(&mut part).await.is_some() {
                self.release(part.server, false).await;
            }
        }
    }
}

/// Send `part` its Sync and read to its ReadyForQuery (its status noted,
/// the request counted); `None` when the connection broke.
pub(super) async fn sync_part(part: &mut Part) -> Option<()> {
    let mut sync = BytesMut::new();
    messages::sync(&mut sync);
    part.server.conn.send(&sync).await.ok()?;
    loop {
        match part.server.conn.next_message() {
            Ok(Some(message)) if message.kind() == BackendKind::ReadyForQuery => {
                let stats = &part.server.pool().stats;
                stats.query_count.fetch_add(1, Ordering::Relaxed);
                return Some(());
            }
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(_) => return None,
        }
        match part.server.conn.fill().await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}
