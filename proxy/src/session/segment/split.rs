//! Split INSERT Binds in a segment (split by `session/split_bind.rs`: a
//! `SplitBind` of one `PartBind` per shard): one item whose shards each get
//! their own Bind of their own statement; the portal's later Execute puts
//! RETURNING rows back in the client's order. A part sent in chunks binds
//! its first chunks into portals of pgshard's own (`ChunkBind`), which the
//! portal's Execute runs first, on that shard, and closes: their counts
//! join the portal's tag (`segment/read.rs`).

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
    /// Its first rows, bound before `bytes` into portals of their own, in
    /// row order (empty: one Bind holds them all).
    pub chunks: Vec<ChunkBind>,
}

/// One chunk of a part's rows, but the last (which `PartBind::bytes` binds
/// into the client's portal).
#[derive(Debug)]
pub struct ChunkBind {
    pub statement: Arc<Statement>,
    /// Its portal (pgshard's name, unique in the process).
    pub portal: Bytes,
    /// Its Bind into `portal`.
    pub bytes: Bytes,
}

/// The chunk portals of a split portal's parts, by shard: what its Execute
/// runs first.
pub(super) type ChunkPortals = Arc<Vec<(usize, Vec<Bytes>)>>;

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
        let chunks: Vec<(usize, Vec<Bytes>)> = split
            .parts
            .iter()
            .filter(|p| !p.chunks.is_empty())
            .map(|p| (p.shard, p.chunks.iter().map(|c| c.portal.clone()).collect()))
            .collect();
        match chunks.is_empty() {
            true => self.chunked.remove(&portal),
            false => self.chunked.insert(portal.clone(), Arc::new(chunks)),
        };
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
            chunks: None,
            copies: false,
        });
    }
}
