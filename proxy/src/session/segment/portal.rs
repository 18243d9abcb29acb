//! Describe, Execute and Close of a portal inside a held segment: they
//! follow their portal's Bind to its shards (an Execute of a portal whose
//! rows are merged is preceded by a Describe the merge reads).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::{no_statement, refused, Item, ItemMerge, Segment, Uses, IN_PARTS, MIXED};
use crate::errors::ClientError;
use crate::protocol::frontend::{Frame, FrontendMessage, Named};
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::session::reply_plan;
use crate::session::Session;

impl Session {
    /// Describe, Execute or Close inside a segment.
    pub(super) fn segment_portal_message(
        &mut self,
        segment: &mut Segment,
        frame: Frame,
    ) -> Result<(), ClientError> {
        let message = FrontendMessage::decode(&frame)
            .map_err(|e| ClientError::new(sqlstate::PROTOCOL_VIOLATION, e.to_string()))?;
        if let Some(cursor) = self.cursor_item(segment, &message)? {
            segment.items.push(cursor);
            return Ok(());
        }
        let first = segment.first_shard();
        let (mut merge, mut split, mut chunks) = (None, None, None);
        let mut copies = false;
        let (shards, terminals, uses, bytes) = match message {
            FrontendMessage::Execute { portal, max_rows } => {
                let (shards, bytes, execute_merge) = execute(segment, &portal, max_rows, &frame)?;
                merge = execute_merge;
                split = segment.splits.get(&portal).cloned();
                // The chunks run with the portal's first Execute only.
                chunks = segment.chunked.remove(&portal);
                copies = segment.copies.contains(&portal);
                (shards, reply_plan::EXECUTE, None, bytes)
            }
            FrontendMessage::Describe {
                kind: Named::Portal,
                name,
            } => {
                let shard = segment.portals.get(&name).and_then(|s| s.first().copied());
                merge = segment.merges.get(&name).map(|bind| ItemMerge {
                    bind: Arc::clone(bind),
                    execute: false,
                });
                (
                    vec![shard.unwrap_or(first)],
                    reply_plan::DESCRIBE,
                    None,
                    frame.bytes().clone(),
                )
            }
            FrontendMessage::Describe { name, .. } => {
                let (uses, server_name) = self.described(segment, &name)?;
                let mut bytes = BytesMut::new();
                messages::describe(&mut bytes, Named::Statement, &server_name);
                (
                    vec![first],
                    reply_plan::DESCRIBE,
                    Some(uses),
                    bytes.freeze(),
                )
            }
            FrontendMessage::Close {
                kind: Named::Statement,
                name,
            } => {
                self.named.protocol.remove(&name);
                let mut reply = BytesMut::new();
                messages::close_complete(&mut reply);
                segment.items.push(Item::Local(reply.freeze(), None));
                return Ok(());
            }
            FrontendMessage::Close { name, .. } => {
                let shards = segment.close_portal(&name).unwrap_or(vec![first]);
                (shards, reply_plan::CLOSE, None, frame.bytes().clone())
            }
            _ => return Err(refused(MIXED)),
        };
        segment.items.push(Item::Send {
            shards,
            bytes,
            terminals,
            uses,
            merge,
            parts: None,
            split,
            chunks,
            copies,
        });
        Ok(())
    }

    /// A row-limited Execute of a portal on several shards, as the item
    /// that reads it in parts; `Err` when a portal cannot be used here.
    fn cursor_item(
        &self,
        segment: &Segment,
        message: &FrontendMessage,
    ) -> Result<Option<Item>, ClientError> {
        if let Some(portal) = portal_of(message) {
            if !segment.portals.contains_key(portal) && self.portals.cursors.is_merged(portal) {
                // Kept from an earlier segment: its shards are read in parts
                // outside a pipeline.
                return Err(refused(MERGED_PORTAL));
            }
        }
        match message {
            FrontendMessage::Execute { portal, max_rows } => in_parts(segment, portal, *max_rows),
            _ => Ok(None),
        }
    }

    /// The statement a Describe of statement `name` in a segment needs,
    /// and its name on servers.
    fn described(&self, segment: &Segment, name: &[u8]) -> Result<(Uses, Bytes), ClientError> {
        if name.is_empty() {
            let statement = segment.unnamed.clone().ok_or_else(|| no_statement(b""))?;
            let uses = Uses::Unnamed(statement, segment.unnamed_generation);
            return Ok((uses, Bytes::new()));
        }
        let statement = self
            .named
            .protocol
            .find(name)
            .cloned()
            .ok_or_else(|| no_statement(name))?;
        let server_name = statement.name.clone();
        Ok((Uses::Named(statement), server_name))
    }
}

/// An Execute of `portal` in a segment: its shards, what they are sent
/// (a portal whose rows are merged is described first, for the merge),
/// and its merge.
fn execute(
    segment: &Segment,
    portal: &Bytes,
    max_rows: i32,
    frame: &Frame,
) -> Result<(Vec<usize>, Bytes, Option<ItemMerge>), ClientError> {
    let first = segment.first_shard();
    let shards = segment.portals.get(portal).cloned().unwrap_or(vec![first]);
    if max_rows != 0 && shards.len() > 1 && !segment.rowless.contains(portal) {
        return Err(refused(IN_PARTS));
    }
    let mut bytes = BytesMut::new();
    let mut merge = None;
    if let Some(bind) = segment.merges.get(portal) {
        messages::describe(&mut bytes, Named::Portal, portal);
        merge = Some(ItemMerge {
            bind: Arc::clone(bind),
            execute: true,
        });
    }
    bytes.extend_from_slice(&frame.bytes().clone());
    Ok((shards, bytes.freeze(), merge))
}

/// Why a portal kept from an earlier segment cannot be used in this one.
const MERGED_PORTAL: &str = "a portal on several shards kept from an earlier Sync in this transaction cannot be used inside a pipeline holding a statement for several shards: send its Execute, Describe or Close with a Sync of its own";

/// The portal a Describe, Execute or Close of one names.
fn portal_of(message: &FrontendMessage) -> Option<&Bytes> {
    match message {
        FrontendMessage::Execute { portal, .. } => Some(portal),
        FrontendMessage::Describe {
            kind: Named::Portal,
            name,
        }
        | FrontendMessage::Close {
            kind: Named::Portal,
            name,
        } => Some(name),
        _ => None,
    }
}

/// A row-limited Execute of a portal on several shards, as the item that
/// reads it in parts; `None` for any other Execute; `Err` when the portal
/// cannot be read in parts.
fn in_parts(segment: &Segment, portal: &Bytes, max_rows: i32) -> Result<Option<Item>, ClientError> {
    let Some(shards) = segment.portals.get(portal) else {
        return Ok(None);
    };
    if max_rows == 0 || shards.len() < 2 || segment.rowless.contains(portal) {
        return Ok(None);
    }
    match segment.readable.get(portal) {
        Some(Ok(())) => Ok(Some(Item::Cursor {
            shards: shards.clone(),
            portal: portal.clone(),
            max_rows,
            merge: segment.merges.get(portal).cloned(),
        })),
        Some(Err(why)) => Err(refused(why)),
        None => Err(refused(IN_PARTS)),
    }
}
