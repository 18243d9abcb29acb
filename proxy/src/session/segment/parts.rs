//! Row-limited Executes of a SELECT's portal on several shards inside a
//! segment (pgjdbc's fetch size, pgx and asyncpg portals): the segment runs
//! in chunks split at each such Execute, and the Execute itself is read in
//! parts as a cursor is (`session/cursor/rounds.rs`: batches of Execute
//! with a row limit and a Flush to each shard, merged), answering the
//! merged rows, then PortalSuspended or CommandComplete. Inside a
//! transaction the portals stay open after the Sync: the session keeps
//! each one's merge for the Executes that come later.

use std::sync::Arc;

use bytes::Bytes;
use router::merge::MergePlan;

use super::{Item, Part, Segment};
use crate::execute::merge::InParts;
use crate::pool::Pooled;
use crate::session::cursor::{Ask, Merged, Read, Source};
use crate::session::merge::BindMerge;
use crate::session::{End, Session};

/// A portal's rows on `shards`, read in parts, merged by its Bind's plan
/// (`None`: concatenated).
pub(in crate::session) fn portal_rows(
    portal: &Bytes,
    shards: &[usize],
    merge: Option<&BindMerge>,
    bytewise: Option<bool>,
) -> Merged {
    let rows = match merge {
        Some(merge) => InParts::new(
            Arc::clone(&merge.plan),
            merge.window,
            merge.params.clone(),
            shards.len(),
        ),
        None => InParts::new(
            Arc::new(MergePlan::default()),
            Default::default(),
            Vec::new(),
            shards.len(),
        ),
    };
    Merged {
        shards: shards.to_vec(),
        source: Source::Portal(portal.clone()),
        rows,
        hold: false,
        in_txn: true,
        broken: false,
        refused: None,
        bytewise,
    }
}

impl Session {
    /// Send and relay the segment's items, chunk by chunk between its
    /// row-limited Executes, which are read in parts in between. Returns
    /// the item that failed, if one did.
    pub(super) async fn run_chunks(
        &mut self,
        parts: &mut [Part],
        items: &[Item],
        begin: bool,
        bytewise: bool,
    ) -> Result<Option<usize>, End> {
        let mut from = 0;
        loop {
            let to = items[from..]
                .iter()
                .position(|item| matches!(item, Item::Cursor { .. }))
                .map_or(items.len(), |at| from + at);
            if from < to || from == 0 {
                self.send_chunk(parts, items, from..to, begin && from == 0)
                    .await?;
                if let Some(at) = self.merge_segment(parts, items, from..to, bytewise).await? {
                    return Ok(Some(at));
                }
            }
            let Some(item) = items.get(to) else {
                return Ok(None);
            };
            if !self.execute_in_parts(parts, item, bytewise).await? {
                return Ok(Some(to));
            }
            from = to + 1;
        }
    }

    /// A row-limited Execute of a portal on several shards: the merged
    /// rows read in parts on the segment's servers (the portal's merge is
    /// the session's while the segment runs). Returns whether it
    /// succeeded.
    async fn execute_in_parts(
        &mut self,
        parts: &mut [Part],
        item: &Item,
        bytewise: bool,
    ) -> Result<bool, End> {
        let Item::Cursor {
            shards,
            portal,
            max_rows,
            merge,
        } = item
        else {
            return Ok(true);
        };
        let mut merged = match self.portals.cursors.take_merged(portal) {
            Some(merged) => merged,
            None => Box::new(portal_rows(
                portal,
                shards,
                merge.as_deref(),
                Some(bytewise),
            )),
        };
        let mut servers: Vec<(usize, &mut Pooled)> = parts
            .iter_mut()
            .filter_map(|part| {
                let position = shards.iter().position(|s| *s == part.shard)?;
                Some((position, &mut part.server))
            })
            .collect();
        servers.sort_by_key(|(position, _)| *position);
        let mut servers: Vec<&mut Pooled> = servers.into_iter().map(|(_, s)| s).collect();
        let rows = u64::try_from(*max_rows).unwrap_or(0);
        let ask = Ask::Execute { rows };
        let read = self
            .read_merged(&mut merged, &mut servers, ask, false)
            .await?;
        self.portals.cursors.put_merged(portal.clone(), merged);
        Ok(read == Read::Done)
    }

    /// After a segment ran: the portals it read in parts close with its
    /// Sync outside a transaction; inside one (`kept`, and it succeeded)
    /// every portal of it on several shards is kept for later Executes,
    /// Describes and Closes: read in parts, or refused with the reason
    /// when they cannot be (never sent to one shard).
    pub(super) fn segment_portals(&mut self, segment: &Segment, kept: bool) {
        // Portals read in parts here have their merge where it stands.
        let read: Vec<&Bytes> = segment
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Cursor { portal, .. } => Some(portal),
                _ => None,
            })
            .collect();
        let shared_portals = segment.shared_portals();
        for portal in &read {
            // Closed in the segment, or ended with its Sync.
            if !kept || !shared_portals.iter().any(|s| s.portal == **portal) {
                self.portals.cursors.forget(portal);
            }
        }
        for shared in shared_portals {
            if !kept {
                self.portals.cursors.forget(&shared.portal);
            } else if !read.contains(&&shared.portal) {
                // Bound here: whatever was known by its name is gone.
                let merge = shared.merge.as_deref();
                let mut merged = portal_rows(&shared.portal, &shared.shards, merge, None);
                merged.refused = shared.readable.err();
                self.portals
                    .cursors
                    .put_merged(shared.portal, Box::new(merged));
            }
        }
    }
}
