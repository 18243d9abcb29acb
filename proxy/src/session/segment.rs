//! Extended-protocol segments that need several shards: from the first Bind
//! that goes to more than one shard up to the client's Sync, every message
//! is held, then the segment runs on all the shards it touches at once, in
//! one implicit transaction per shard, and the replies are merged message by
//! message in the client's order.
//!
//! A segment may hold many statements (pgx batches, libpq and psycopg
//! pipelines): each Bind goes to the shards its route names (several, one,
//! or, for a statement any shard can run, the segment's first), and the
//! Describe, Execute and Close of its portal follow it there. Each shard
//! gets its part followed by a Flush, not a Sync, so that nothing commits
//! until every shard has answered: with no error anywhere all of them get
//! the Sync; after an error the shard that failed ends its transaction at
//! the Sync (rolled back, as Postgres does) and the others are closed, which
//! rolls theirs back too, so the segment is all-or-nothing as on one
//! Postgres (a crash between the Syncs can still split it: two-phase commit
//! is the transactions issue's).
//!
//! What the client sees is what one Postgres would send: one reply per
//! message, rows of every shard concatenated, counts summed (see
//! [`crate::execute::merge::Merger`]), one ReadyForQuery.
//!
//! A Bind of a multi-row INSERT whose rows go to several shards is held as
//! one Bind per shard, each with its own statement and values
//! (`session/split_bind.rs`, `segment/split.rs`).
//!
//! This file collects the segment; `segment/run.rs` runs it.

mod bind;
mod in_txn;
mod parts;
mod portal;
mod read;
mod request;
mod run;
mod split;
mod two_phase;

pub use split::{ChunkBind, PartBind, SplitBind};

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

pub(in crate::session) use bind::Held;

use super::merge::BindMerge;
use super::reply_plan;
use super::statements::Statement;
use super::{End, Session};
use crate::errors::ClientError;
use crate::pool::Pooled;
use crate::protocol::backend::Kinds;
use crate::protocol::frontend::{Bind, Frame, FrontendKind, FrontendMessage};
use crate::protocol::messages;
use crate::protocol::sqlstate;

/// The messages held since the segment's first multi-shard Bind.
#[derive(Debug, Default)]
pub struct Segment {
    items: Vec<Item>,
    /// The shards each portal bound in the segment lives on.
    portals: HashMap<Bytes, Vec<usize>>,
    /// Portals on several shards whose rows are merged by plan.
    merges: HashMap<Bytes, Arc<BindMerge>>,
    /// Portals of split INSERTs: the client's row numbers each of the
    /// portal's shards holds, in the order of its shards.
    splits: HashMap<Bytes, SplitRowsOf>,
    /// Portals of split INSERTs whose parts were bound in chunks: the
    /// chunk portals their Execute runs first (once).
    chunked: HashMap<Bytes, split::ChunkPortals>,
    /// The shards statements that write were bound for.
    writes: Vec<usize>,
    /// Portals whose statement returns no rows (a write without RETURNING,
    /// a schema change, a split INSERT without RETURNING): a row limit on
    /// their Execute changes nothing (pgjdbc's executeUpdate sends one).
    rowless: std::collections::HashSet<Bytes>,
    /// Portals on several shards that each hold the same rows (writes to
    /// omnisharded tables): one shard's reply stands for all.
    copies: std::collections::HashSet<Bytes>,
    /// The client's unnamed statement as of now, and how many times the
    /// segment has re-parsed it (each Parse of it counts).
    unnamed: Option<Arc<Statement>>,
    unnamed_generation: u64,
    /// Merged cursors the segment's DECLAREs make (forgotten if it fails).
    pub declared: Vec<Bytes>,
    /// Portals on several shards whose rows can be read in parts (a plain
    /// SELECT whose merge holds no groups), or why not.
    readable: HashMap<Bytes, Result<(), &'static str>>,
}

/// A portal a segment bound on several shards.
pub struct SharedPortal {
    pub portal: Bytes,
    pub shards: Vec<usize>,
    pub merge: Option<Arc<BindMerge>>,
    pub readable: Result<(), &'static str>,
}

/// One client message of the segment.
#[derive(Debug)]
enum Item {
    /// Answered by pgshard in its place (the ParseComplete of a Parse: the
    /// statement is parsed on each shard with its first use; the
    /// CloseComplete of a statement, which servers keep). `named`: the
    /// client's name and statement a Parse made, which an earlier error
    /// undoes (Postgres would have skipped the Parse).
    Local(Bytes, Option<(Bytes, u64)>),
    /// A message for `shards`; its reply ends with one of `terminals`.
    Send {
        shards: Vec<usize>,
        bytes: Bytes,
        terminals: Kinds,
        /// The statement it names, parsed first on a server that lacks it
        /// (for the unnamed one: the generation it must be).
        uses: Option<Uses>,
        /// A Describe or Execute of a portal whose rows are merged.
        merge: Option<ItemMerge>,
        /// A split Bind: each shard's own Bind and statement instead of
        /// `bytes` and `uses`.
        parts: Option<Arc<[PartBind]>>,
        /// An Execute of a split INSERT's portal: its RETURNING rows are
        /// put back in the client's order.
        split: Option<SplitRowsOf>,
        /// An Execute of a split INSERT's portal bound in chunks: the chunk
        /// portals each shard runs (and closes) before it.
        chunks: Option<split::ChunkPortals>,
        /// An Execute of a portal whose shards hold the same rows.
        copies: bool,
    },
    /// An Execute with a row limit of a SELECT's portal on several shards:
    /// read in parts, as a cursor is (`segment/parts.rs`).
    Cursor {
        shards: Vec<usize>,
        portal: Bytes,
        max_rows: i32,
        merge: Option<Arc<BindMerge>>,
    },
}

/// The client's row numbers each shard of a split INSERT holds, by the
/// shard's position in the item's shards.
type SplitRowsOf = Arc<Vec<Vec<usize>>>;

/// A portal message whose reply goes through a row merge.
#[derive(Debug, Clone)]
struct ItemMerge {
    bind: Arc<BindMerge>,
    /// An Execute (sent after a Describe of its portal, whose description
    /// the merge reads and the client does not see), not a Describe.
    execute: bool,
}

#[derive(Debug, Clone)]
enum Uses {
    Named(Arc<Statement>),
    Unnamed(Arc<Statement>, u64),
}

/// A reply a server owes: for segment item `item`, or for a Parse pgshard
/// injected before it (`parse_of`).
#[derive(Debug)]
struct Unit {
    item: Option<usize>,
    terminals: Kinds,
    parse_of: Option<u64>,
    /// An injected chunk's Execute: its count joins the item's tag.
    counted: bool,
}

/// One server taking part.
struct Part {
    shard: usize,
    server: Pooled,
    units: std::collections::VecDeque<Unit>,
    /// It reported an error: it skips the rest until the Sync.
    failed: bool,
    /// The generation of the client's unnamed statement it was last sent.
    unnamed_parsed: Option<u64>,
    /// Rows its injected chunks' Executes inserted, not yet in a tag.
    chunk_rows: u64,
}

impl Segment {
    /// A segment starting with a Bind for `shards`.
    /// `current_unnamed`: the client's unnamed statement when the segment
    /// starts (a Bind of it may follow).
    pub fn start(
        shards: Vec<usize>,
        (portal, bind): (Bytes, Bytes),
        statement: &Arc<Statement>,
        unnamed: bool,
        current_unnamed: Option<Arc<Statement>>,
        merge: Option<(BindMerge, &Bind)>,
        copies: bool,
    ) -> Segment {
        let mut segment = Segment::empty(statement, unnamed, current_unnamed);
        segment.push_bind(shards, (portal, bind), statement, unnamed, merge, copies);
        segment
    }

    /// A segment whose first Bind is of `statement` (`unnamed`: the
    /// client's unnamed statement, which it then is), before that Bind.
    fn empty(
        statement: &Arc<Statement>,
        unnamed: bool,
        current_unnamed: Option<Arc<Statement>>,
    ) -> Segment {
        Segment {
            unnamed: match unnamed {
                true => Some(Arc::clone(statement)),
                false => current_unnamed,
            },
            ..Segment::default()
        }
    }

    fn push_bind(
        &mut self,
        shards: Vec<usize>,
        (portal, mut bytes): (Bytes, Bytes),
        statement: &Arc<Statement>,
        unnamed: bool,
        merge: Option<(BindMerge, &Bind)>,
        copies: bool,
    ) {
        match copies {
            true => self.copies.insert(portal.clone()),
            false => self.copies.remove(&portal),
        };
        let mut uses = if unnamed {
            Uses::Unnamed(Arc::clone(statement), self.unnamed_generation)
        } else {
            Uses::Named(Arc::clone(statement))
        };
        self.merges.remove(&portal);
        self.splits.remove(&portal);
        self.chunked.remove(&portal);
        self.readable.remove(&portal);
        match statement.returns_no_rows() {
            true => self.rowless.insert(portal.clone()),
            false => self.rowless.remove(&portal),
        };
        if let Some((merge, bind)) = merge {
            if let Some(rewritten) = &merge.shard_statement {
                // The shards run the rewritten statement under its own
                // name, its hidden columns in text.
                let mut formats = bind.result_formats.clone();
                if formats.len() > 1 {
                    formats.resize(formats.len() + merge.plan.hidden, 0);
                }
                let mut out = BytesMut::new();
                messages::bind(&mut out, bind, &rewritten.name, &formats);
                bytes = out.freeze();
                uses = Uses::Named(Arc::clone(rewritten));
            }
            self.merges.insert(portal.clone(), Arc::new(merge));
        }
        self.portals.insert(portal, shards.clone());
        self.items.push(Item::Send {
            shards,
            bytes,
            terminals: reply_plan::BIND,
            uses: Some(uses),
            merge: None,
            parts: None,
            split: None,
            chunks: None,
            copies: false,
        });
    }

    /// A Close of `portal`: what the segment knew of it goes; its shards.
    fn close_portal(&mut self, portal: &[u8]) -> Option<Vec<usize>> {
        self.merges.remove(portal);
        self.splits.remove(portal);
        self.chunked.remove(portal);
        self.rowless.remove(portal);
        self.copies.remove(portal);
        self.portals.remove(portal)
    }

    /// Whether the portal just bound can be read in parts (see
    /// [`Segment::readable`]).
    pub fn set_readable(&mut self, portal: &Bytes, readable: Result<(), &'static str>) {
        self.readable.insert(portal.clone(), readable);
    }

    /// The portals bound on several shards, with their shards, merges,
    /// and whether their rows can be read in parts.
    pub fn shared_portals(&self) -> Vec<SharedPortal> {
        self.portals
            .iter()
            .filter(|(_, shards)| shards.len() > 1)
            .map(|(portal, shards)| SharedPortal {
                portal: portal.clone(),
                shards: shards.clone(),
                merge: self.merges.get(portal).cloned(),
                readable: self.readable.get(portal).copied().unwrap_or(Err(IN_PARTS)),
            })
            .collect()
    }

    /// Statements bound for `shards` write (they commit together).
    pub fn note_writes(&mut self, shards: &[usize]) {
        for &shard in shards {
            if !self.writes.contains(&shard) {
                self.writes.push(shard);
            }
        }
    }

    /// Every shard the segment's messages go to, in order.
    fn shards(&self) -> Vec<usize> {
        let mut shards: Vec<usize> = self
            .items
            .iter()
            .flat_map(|item| match item {
                Item::Send { shards, .. } | Item::Cursor { shards, .. } => shards.clone(),
                Item::Local(..) => Vec::new(),
            })
            .collect();
        shards.sort_unstable();
        shards.dedup();
        shards
    }

    /// The shards of the segment's first statement: where statements any
    /// shard can run go.
    fn first_shard(&self) -> usize {
        self.items
            .iter()
            .find_map(|item| match item {
                Item::Send { shards, .. } | Item::Cursor { shards, .. } => shards.first().copied(),
                Item::Local(..) => None,
            })
            .unwrap_or(0)
    }
}

/// Why a portal on several shards cannot be read before the Sync.
const IN_PARTS: &str = "a statement that goes to several shards cannot be fetched in parts here (a Flush before Sync, or an Execute with a row limit of a statement that is not a plain SELECT): its shards' replies are merged at Sync; Sync first, fetch it whole, or give it the sharding key";

/// Whether a portal on several shards bound from a statement summarized
/// as `summary` (its merge: `merge`) can be read in parts: a plain SELECT
/// whose merge holds no groups until the end (`in_parts`: groups the
/// shards sort are combined as they come).
pub(super) fn readable(
    summary: &router::summary::Summary,
    merge: Option<&BindMerge>,
) -> Result<(), &'static str> {
    use router::summary::StatementKind;
    let plain = matches!(
        summary.statements.as_slice(),
        [only] if only.kind == StatementKind::Select && !only.write && !only.locking
    );
    match merge {
        _ if !plain => Err(IN_PARTS),
        Some(merge) => crate::execute::merge::in_parts(&merge.plan),
        None => Ok(()),
    }
}

fn refused(message: &str) -> ClientError {
    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message)
}

fn malformed(kind: &str) -> ClientError {
    ClientError::new(
        sqlstate::PROTOCOL_VIOLATION,
        format!("malformed {kind} message"),
    )
}

fn no_statement(name: &[u8]) -> ClientError {
    ClientError::new(
        "26000",
        format!(
            "prepared statement \"{}\" does not exist",
            String::from_utf8_lossy(name)
        ),
    )
}

/// Why a held message cannot join the segment.
const MIXED: &str =
    "this message cannot join a pipeline holding a statement that goes to several shards";

impl Session {
    /// A client message while a segment is held: added to it, or the
    /// segment is refused (dropped, with the client's error) when the
    /// message cannot join it; Sync runs it.
    pub(super) async fn on_segment_frame(&mut self, frame: Frame) -> Result<(), End> {
        let Some(mut segment) = self.phase.take_batch() else {
            return Ok(());
        };
        use FrontendKind as K;
        let refusal: Option<ClientError> = match frame.kind {
            K::Sync => {
                self.phase.synced();
                self.pipeline.synced();
                let declared = std::mem::take(&mut segment.declared);
                let (errors, in_txn) = (self.pipeline.error_mark(), self.txn.spans());
                self.run_segment(segment).await?;
                let ok = !self.pipeline.errors_since(errors);
                return self.segment_declared(declared, ok, in_txn).await;
            }
            K::Flush => Some(refused(IN_PARTS)),
            K::Parse => self.segment_parse(&mut segment, frame).err(),
            K::Bind => self.segment_bind(&mut segment, frame).await?.err(),
            K::Describe | K::Execute | K::Close => {
                self.segment_portal_message(&mut segment, frame).err()
            }
            other => Some(refused(&format!(
                "{MIXED} (message type {})",
                other.letter()
            ))),
        };
        match refusal {
            None => self.phase.hold_batch(segment),
            Some(error) => {
                // Nothing of the segment runs: its Parses never happened,
                // its DECLAREs made no cursor.
                self.forget_parses(&segment.items, 0);
                let declared = std::mem::take(&mut segment.declared);
                self.segment_declared(declared, false, false).await?;
                self.local_error(error, false);
            }
        }
        Ok(())
    }

    fn segment_parse(&mut self, segment: &mut Segment, frame: Frame) -> Result<(), ClientError> {
        let Ok(FrontendMessage::Parse {
            name,
            query,
            param_types,
        }) = FrontendMessage::decode(&frame)
        else {
            return Err(malformed("Parse"));
        };
        let statement = self.shared.statements.get_or_insert(
            &query,
            &param_types,
            &self.shared.cache,
            self.cluster.engine(),
        );
        let statement_id = statement.id;
        self.named
            .protocol
            .insert(name.clone(), Arc::clone(&statement))?;
        if name.is_empty() {
            segment.unnamed = Some(statement);
            segment.unnamed_generation += 1;
            self.pipeline.unnamed_dropped();
        }
        let mut reply = BytesMut::new();
        messages::parse_complete(&mut reply);
        let named = (!name.is_empty()).then_some((name, statement_id));
        segment.items.push(Item::Local(reply.freeze(), named));
        Ok(())
    }
}
