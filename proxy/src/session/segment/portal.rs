//! Describe, Execute and Close of a portal inside a held segment: they
//! follow their portal's Bind to its shards (an Execute of a portal whose
//! rows are merged is preceded by a Describe the merge reads).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::{
    describe, frame_bytes, no_statement, refused, Item, ItemMerge, Segment, Uses, IN_PARTS, MIXED,
};
use crate::errors::ClientError;
use crate::protocol::backend::sqlstate;
use crate::protocol::frame::{Frame, FrontendMessage};
use crate::protocol::messages;
use crate::session::reply_plan;
use crate::session::ClientIo;
use crate::session::Session;

impl<S: ClientIo> Session<S> {
    /// Describe, Execute or Close inside a segment.
    pub(super) fn segment_portal_message(
        &mut self,
        segment: &mut Segment,
        frame: Frame,
    ) -> Result<(), ClientError> {
        let message = FrontendMessage::decode(frame.clone())
            .map_err(|e| ClientError::new(sqlstate::PROTOCOL_VIOLATION, e.to_string()))?;
        let first = segment.first_shard();
        let (mut merge, mut split) = (None, None);
        let mut copies = false;
        let (shards, terminals, uses, bytes) = match message {
            FrontendMessage::Execute { portal, max_rows } => {
                let (shards, bytes, execute_merge) = execute(segment, &portal, max_rows, &frame)?;
                merge = execute_merge;
                split = segment.splits.get(&portal).cloned();
                copies = segment.copies.contains(&portal);
                (shards, reply_plan::EXECUTE, None, bytes)
            }
            FrontendMessage::Describe { kind: b'P', name } => {
                let shard = segment.portals.get(&name).and_then(|s| s.first().copied());
                merge = segment.merges.get(&name).map(|bind| ItemMerge {
                    bind: Arc::clone(bind),
                    execute: false,
                });
                (
                    vec![shard.unwrap_or(first)],
                    reply_plan::DESCRIBE,
                    None,
                    frame_bytes(&frame),
                )
            }
            FrontendMessage::Describe { name, .. } => {
                let (uses, server_name) = self.described(segment, &name)?;
                let mut bytes = BytesMut::new();
                describe(&mut bytes, b'S', &server_name);
                (
                    vec![first],
                    reply_plan::DESCRIBE,
                    Some(uses),
                    bytes.freeze(),
                )
            }
            FrontendMessage::Close { kind: b'S', name } => {
                self.statements.remove(&name);
                let mut reply = BytesMut::new();
                messages::close_complete(&mut reply);
                segment.items.push(Item::Local(reply.freeze(), None));
                return Ok(());
            }
            FrontendMessage::Close { name, .. } => {
                segment.merges.remove(&name);
                segment.splits.remove(&name);
                segment.rowless.remove(&name);
                segment.copies.remove(&name);
                let shards = segment.portals.remove(&name).unwrap_or(vec![first]);
                (shards, reply_plan::CLOSE, None, frame_bytes(&frame))
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
            copies,
        });
        Ok(())
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
            .statements
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
        describe(&mut bytes, b'P', portal);
        merge = Some(ItemMerge {
            bind: Arc::clone(bind),
            execute: true,
        });
    }
    bytes.extend_from_slice(&frame_bytes(frame));
    Ok((shards, bytes.freeze(), merge))
}
