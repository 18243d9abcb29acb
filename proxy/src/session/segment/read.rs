//! Reading a running segment's replies: one unit (a client message's reply)
//! of one shard at a time, or, for an Execute whose rows are merged, the
//! shards' units interleaved as the merge asks (an ordered merge needs a row
//! of every shard before it can send one, and must not hold a shard's whole
//! result while it waits). The counts of a split part's chunks, run before
//! its portal's Execute, join that Execute's tag.

use super::Part;
use crate::errors::ClientError;
use crate::execute::merge::Merger;
use crate::protocol::backend::{BackendFrame, BackendMessage};
use crate::session::server_replies::TagSays;
use crate::session::{End, Session};

/// One step of reading a part's unit for an item.
enum UnitRead {
    /// A message of the unit; `true` when it ends it.
    Message(BackendFrame, bool),
    /// The part has nothing (more) for this item.
    Over,
    /// The server reported an error (the part skips the rest).
    Error(BackendFrame),
    /// The connection broke.
    Lost,
}

impl Session {
    /// Read `part`'s replies up to the end of its unit for item `index`
    /// (swallowing those of Parses pgshard injected before it), feeding the
    /// item's to `merger` as the item's `position`-th shard. Returns false
    /// when the server reported an error (relayed, if it is the first).
    pub(super) async fn read_unit(
        &mut self,
        part: &mut Part,
        index: usize,
        position: usize,
        merger: &mut Merger,
    ) -> Result<bool, End> {
        loop {
            match self.unit_message(part, index).await? {
                UnitRead::Over => return Ok(true),
                UnitRead::Lost => return Ok(false),
                UnitRead::Error(message) => {
                    self.relay_error(&message, merger);
                    return Ok(false);
                }
                UnitRead::Message(message, done) => {
                    self.feed(position, &message, merger);
                    if done {
                        return Ok(true);
                    }
                }
            }
        }
    }

    /// Read the units of item `index` on `shards` interleaved: each step
    /// reads a shard the merge wants a message of. Returns false when a
    /// shard failed.
    pub(super) async fn read_interleaved(
        &mut self,
        parts: &mut [Part],
        shards: &[usize],
        index: usize,
        merger: &mut Merger,
    ) -> Result<bool, End> {
        let mut active: Vec<usize> = (0..shards.len()).collect();
        while !active.is_empty() {
            let pick = active.iter().position(|&p| merger.wants(p)).unwrap_or(0);
            let position = active[pick];
            let Some(part) = parts.iter_mut().find(|p| p.shard == shards[position]) else {
                active.remove(pick);
                continue;
            };
            match self.unit_message(part, index).await? {
                UnitRead::Over => {
                    active.remove(pick);
                }
                UnitRead::Lost => return Ok(false),
                UnitRead::Error(message) => {
                    self.relay_error(&message, merger);
                    return Ok(false);
                }
                UnitRead::Message(message, done) => {
                    self.feed(position, &message, merger);
                    if done {
                        active.remove(pick);
                    }
                }
            }
        }
        Ok(true)
    }

    /// A message of an item's reply to the merger: notices and parameter
    /// changes from the first shard only.
    fn feed(&mut self, position: usize, message: &BackendFrame, merger: &mut Merger) {
        if !message.kind().is_async() || position == 0 {
            merger.on_message(position, message, self.client.out());
        }
    }

    /// A shard's error: the client's if it is the first.
    fn relay_error(&mut self, message: &BackendFrame, merger: &mut Merger) {
        if let (false, BackendMessage::ErrorResponse(error)) = (merger.failed(), message.message())
        {
            self.shared.metrics.error(error.code().unwrap_or_default());
        }
        // An error that names a statement the client prepared names it as
        // the client does.
        let renamed = self.named.sql.client_error(message);
        let message = renamed.as_ref().unwrap_or(message);
        merger.on_message(0, message, self.client.out());
    }

    /// The next message of `part`'s unit for item `index`, the replies of
    /// Parses pgshard injected before it swallowed.
    async fn unit_message(&mut self, part: &mut Part, index: usize) -> Result<UnitRead, End> {
        loop {
            let Some(unit) = part.units.front() else {
                return Ok(UnitRead::Over);
            };
            if unit.item.is_some_and(|item| item > index) {
                return Ok(UnitRead::Over);
            }
            let (injected, terminals, parse_of, counted) = (
                unit.item.is_none(),
                unit.terminals,
                unit.parse_of,
                unit.counted,
            );
            let message = loop {
                match part.server.conn.next_message() {
                    Ok(Some(message)) => break message,
                    Ok(None) => {}
                    Err(_) => {
                        part.failed = true;
                        return Ok(UnitRead::Lost);
                    }
                }
                let read = part.server.conn.fill();
                match self.client.watch(read).await? {
                    Ok(0) | Err(_) => {
                        part.failed = true;
                        ClientError::shard_lost().encode(self.client.out());
                        return Ok(UnitRead::Lost);
                    }
                    Ok(_) => {}
                }
            };
            match message.message() {
                BackendMessage::CommandComplete(tag)
                    if TagSays::of(tag) == TagSays::SchemaChanged =>
                {
                    self.shared.retire_on_ddl();
                }
                BackendMessage::ErrorResponse(_) => {
                    part.failed = true;
                    return Ok(UnitRead::Error(message));
                }
                _ => {}
            }
            let done = terminals.contains(message.kind());
            if done {
                part.units.pop_front();
            }
            if let (true, BackendMessage::CommandComplete(tag)) = (counted, message.message()) {
                part.chunk_rows += tag.split_count().1.unwrap_or(0);
            }
            if !injected {
                return Ok(UnitRead::Message(with_chunk_rows(part, message), done));
            }
            if let (true, Some(id)) = (done, parse_of) {
                part.server.conn.prepared.insert(id);
            }
        }
    }
}

/// `part`'s CommandComplete with the rows its chunks inserted before it
/// (a split portal bound in chunks) added to its count.
fn with_chunk_rows(part: &mut Part, message: BackendFrame) -> BackendFrame {
    if part.chunk_rows == 0 {
        return message;
    }
    let BackendMessage::CommandComplete(tag) = message.message() else {
        return message;
    };
    let (words, Some(count)) = tag.split_count() else {
        return message;
    };
    let total = count + std::mem::take(&mut part.chunk_rows);
    let mut body = words.to_vec();
    body.extend_from_slice(format!(" {total}\0").as_bytes());
    message
        .with_body(|_, out| out.extend_from_slice(&body))
        .unwrap_or(message)
}
