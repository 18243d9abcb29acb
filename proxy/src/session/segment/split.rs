//! Split INSERT Binds in a segment (split by `session/split_bind.rs`: a
//! `SplitBind` of one `PartBind` per shard): one item whose shards each get
//! their own Bind of their own statement; the portal's later Execute puts
//! RETURNING rows back in the client's order.

use std::sync::Arc;

use bytes::Bytes;

use super::{Item, Segment};
use crate::session::reply_plan;
use crate::session::statements::Statement;

/// One Bind split by shard.
#[derive(Debug)]
pub struct SplitBind {
    /// One per database, in shard order.
    pub parts: Vec<PartBind>,
    /// It returns rows (RETURNING).
    pub returning: bool,
}

/// One database's part of a split Bind.
#[derive(Debug)]
pub struct PartBind {
    pub shard: usize,
    /// Its INSERT, as registered.
    pub statement: Arc<Statement>,
    /// Its Bind (the client's portal, its statement's server name).
    pub bytes: Bytes,
    /// The client's row numbers (0-based) it holds, in order.
    pub rows: Vec<usize>,
}

impl SplitBind {
    pub fn shards(&self) -> Vec<usize> {
        self.parts.iter().map(|p| p.shard).collect()
    }
}

impl Segment {
    /// A segment starting with a split Bind of `statement` into `portal`
    /// (`unnamed`: the client's unnamed statement; `current_unnamed`: the
    /// client's unnamed statement when the segment starts).
    pub fn start_split(
        split: SplitBind,
        portal: Bytes,
        statement: &Arc<Statement>,
        unnamed: bool,
        current_unnamed: Option<Arc<Statement>>,
    ) -> Segment {
        let mut segment = Segment::empty(statement, unnamed, current_unnamed);
        segment.push_split(split, portal);
        segment
    }

    /// A split Bind into `portal`: its parts go to their shards, and the
    /// portal lives on them.
    pub(super) fn push_split(&mut self, split: SplitBind, portal: Bytes) {
        let shards = split.shards();
        let rows: Vec<Vec<usize>> = split.parts.iter().map(|p| p.rows.clone()).collect();
        self.merges.remove(&portal);
        self.copies.remove(&portal);
        self.splits.insert(portal.clone(), Arc::new(rows));
        match split.returning {
            true => self.rowless.remove(&portal),
            false => self.rowless.insert(portal.clone()),
        };
        self.portals.insert(portal, shards.clone());
        self.note_writes(&shards);
        self.items.push(Item::Send {
            shards,
            bytes: Bytes::new(),
            terminals: reply_plan::BIND,
            uses: None,
            merge: None,
            parts: Some(split.parts.into()),
            split: None,
            copies: false,
        });
    }
}
