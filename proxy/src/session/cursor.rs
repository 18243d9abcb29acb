//! Cursors on a sharded cluster: SQL cursors (DECLARE, FETCH, MOVE,
//! CLOSE) and extended-protocol portals fetched in parts.
//!
//! A cursor whose query routes to one shard is declared there and the
//! session remembers where ([`Place::Shard`]): FETCH, MOVE, CLOSE and
//! `WHERE CURRENT OF` follow it. One whose query needs several shards is a
//! cursor (or, bound in the extended protocol, a portal) on each of them
//! ([`Place::Merged`]); pgshard answers its FETCHes itself, reading the
//! shards in batches through [`crate::execute::merge::InParts`], forward only.
//! A WITH HOLD cursor is state of the server connections that hold it:
//! they stay with the client (*pinned*, here) until it is closed, CLOSE
//! ALL, DISCARD ALL or the session ends; a statement for such a shard
//! runs on its pinned server.
//!
//! This file holds the registry (pure; `cursor/tests.rs`);
//! `cursor/simple.rs` the cursor statements in the simple protocol,
//! `cursor/portal.rs` in the extended protocol, `cursor/rounds.rs` the
//! batches read from the shards, `cursor/pin.rs` the pinned servers.

mod held;
mod pin;
mod portal;
mod rounds;
mod simple;

use std::collections::HashMap;

use crate::pool::roles::RoleNow;
use bytes::{Bytes, BytesMut};
use router::summary::{CursorOptions, FetchDirection, FETCH_ALL};

use super::server_replies::TagSays;
use crate::errors::ClientError;
use crate::execute::merge::InParts;
use crate::pool::Pooled;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::{Frame, FrontendKind, Named};
use crate::protocol::messages;
use crate::protocol::sqlstate;

pub(super) use held::Use;
pub(super) use portal::CursorPortal;
pub(super) use rounds::{Ask, Read};
pub(super) use simple::{cursor_effect, Follow};

/// How each shard's part of a merged cursor is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// A SQL cursor of this name on each shard: `FETCH FORWARD n`.
    Cursor(String),
    /// A portal of this name on each shard: Execute with a row limit.
    Portal(Bytes),
}

impl Source {
    /// What a shard is sent for a batch of `rows` rows: a portal is
    /// described first when `describe`, and the batch ends with a Sync
    /// (`sync`) or a Flush (inside a segment, whose Sync comes later).
    pub fn request(&self, rows: u64, describe: bool, sync: bool) -> BytesMut {
        let mut out = BytesMut::new();
        match self {
            Source::Cursor(name) => {
                let name = crate::conn::settings::quote_ident(name);
                messages::query(&mut out, &format!("FETCH FORWARD {rows} FROM {name}"));
            }
            Source::Portal(name) => {
                if describe {
                    messages::describe(&mut out, Named::Portal, name);
                }
                let rows = i32::try_from(rows).unwrap_or(i32::MAX);
                messages::execute_rows(&mut out, name, rows);
                match sync {
                    true => messages::sync(&mut out),
                    false => messages::flush(&mut out),
                }
            }
        }
        out
    }
}

/// A cursor (or portal) read across shards.
#[derive(Debug)]
pub(super) struct Merged {
    /// Its shards, in the order of the merge's positions.
    pub shards: Vec<usize>,
    pub source: Source,
    pub rows: InParts,
    pub hold: bool,
    /// Declared in a transaction that has not ended.
    pub in_txn: bool,
    /// A shard failed while it was read (or the merge did): where each
    /// shard's part stands is unknown, so it reads no more.
    pub broken: bool,
    /// Its rows cannot be read in parts (a portal of a statement that is
    /// not a plain SELECT, or whose merge holds groups): why, for reads.
    pub refused: Option<&'static str>,
    /// Whether the shards order text bytewise, when it was learnt before
    /// (a segment asks before its servers leave the idle state).
    pub bytewise: Option<bool>,
}

/// Where a cursor the session knows of lives.
#[derive(Debug)]
pub(super) enum Place {
    Shard {
        shard: usize,
        hold: bool,
        in_txn: bool,
    },
    Merged(Box<Merged>),
}

impl Place {
    fn hold(&self) -> bool {
        match self {
            Place::Shard { hold, .. } => *hold,
            Place::Merged(merged) => merged.hold,
        }
    }

    fn in_txn(&mut self) -> &mut bool {
        match self {
            Place::Shard { in_txn, .. } => in_txn,
            Place::Merged(merged) => &mut merged.in_txn,
        }
    }

    fn on(&self, shard: usize) -> bool {
        match self {
            Place::Shard { shard: s, .. } => *s == shard,
            Place::Merged(merged) => merged.shards.contains(&shard),
        }
    }
}

/// The cursors and portals a session knows of, and the servers WITH HOLD
/// cursors keep.
#[derive(Debug, Default)]
pub(super) struct Cursors {
    places: HashMap<Bytes, Place>,
    pinned: Vec<(usize, Pooled)>,
    /// The main server reported COMMIT (`true`) or ROLLBACK: if its next
    /// ReadyForQuery says idle, the transaction ended so.
    ending: Option<bool>,
    /// The last serial handed to a gathered cursor or portal (its temp
    /// tables' names, `session/gather.rs`).
    serial: u32,
}

impl Cursors {
    /// Nothing is known: the cheap check before any lookup.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty() && self.pinned.is_empty()
    }

    /// A serial no gathered cursor or portal of this session had.
    pub fn next_serial(&mut self) -> u32 {
        self.serial = self.serial.checked_add(1).unwrap_or(1);
        self.serial
    }

    pub fn declare(&mut self, name: Bytes, place: Place) {
        self.places.insert(name, place);
    }

    /// The shard of a cursor that lives on one.
    pub fn shard_of(&self, name: &[u8]) -> Option<usize> {
        match self.places.get(name)? {
            Place::Shard { shard, .. } => Some(*shard),
            Place::Merged(_) => None,
        }
    }

    /// The shards of a merged cursor (none if it is not one).
    pub fn merged_shards(&self, name: &[u8]) -> Vec<usize> {
        match self.places.get(name) {
            Some(Place::Merged(merged)) => merged.shards.clone(),
            _ => Vec::new(),
        }
    }

    pub fn is_merged(&self, name: &[u8]) -> bool {
        matches!(self.places.get(name), Some(Place::Merged(_)))
    }

    /// A merged cursor, taken out while it is read (put it back).
    pub fn take_merged(&mut self, name: &[u8]) -> Option<Box<Merged>> {
        match self.places.remove(name)? {
            Place::Merged(merged) => Some(merged),
            place => {
                self.places.insert(Bytes::copy_from_slice(name), place);
                None
            }
        }
    }

    pub fn put_merged(&mut self, name: Bytes, merged: Box<Merged>) {
        self.places.insert(name, Place::Merged(merged));
    }

    pub fn forget(&mut self, name: &[u8]) -> Option<Place> {
        self.places.remove(name)
    }

    /// A simple query, or a Bind of the unnamed portal, ends the unnamed
    /// portal (`frame`: the client's message).
    pub fn forget_unnamed(&mut self, frame: &Frame) {
        if frame.kind == FrontendKind::Query || frame.binds_unnamed_portal() {
            self.places.remove(&b""[..]);
        }
    }

    /// Cursor `name` was declared in a transaction that committed.
    pub fn committed(&mut self, name: &[u8]) {
        if let Some(place) = self.places.get_mut(name) {
            *place.in_txn() = false;
        }
    }

    /// Every cursor is gone (CLOSE ALL, DISCARD ALL).
    pub fn forget_all(&mut self) {
        self.places.clear();
    }

    /// The client's transaction ended: its cursors go, but for WITH HOLD
    /// ones it committed; portals (never held) go too.
    pub fn txn_end(&mut self, committed: bool) {
        self.places.retain(|_, place| {
            let keep = place.hold() && (committed || !*place.in_txn());
            *place.in_txn() = false;
            keep
        });
    }

    /// A CommandComplete of the main server (what its tag says).
    pub fn on_tag(&mut self, tag: TagSays) {
        match tag {
            TagSays::Commit => self.ending = Some(true),
            TagSays::Rollback => self.ending = Some(false),
            _ => {}
        }
    }

    /// A ReadyForQuery of the main server: a transaction that ended there
    /// (not at a ROLLBACK TO, whose tag is ROLLBACK too) takes its
    /// cursors.
    pub fn on_ready(&mut self, status: TransactionStatus) {
        match self.ending.take() {
            Some(committed) if status == TransactionStatus::Idle => self.txn_end(committed),
            _ => {}
        }
    }

    /// A WITH HOLD cursor lives on `shard`.
    pub fn holds_on(&self, shard: usize) -> bool {
        self.places.values().any(|p| p.hold() && p.on(shard))
    }

    /// A ROLLBACK TO SAVEPOINT in the transaction: Postgres closes the
    /// cursors and portals made after the savepoint, on every shard; which
    /// ones those are pgshard does not follow, so its merged ones made in
    /// the transaction are read no more (never read past a closed one).
    pub fn rolled_back_to(&mut self) {
        for place in self.places.values_mut() {
            if let Place::Merged(merged) = place {
                if merged.in_txn {
                    merged.refused = Some(ROLLED_BACK_TO);
                }
            }
        }
    }

    /// The cursors on `shard` (a server of it was lost).
    pub fn lost(&mut self, shard: usize) {
        for place in self.places.values_mut() {
            if let Place::Merged(merged) = place {
                merged.broken |= merged.shards.contains(&shard);
            }
        }
    }

    /// `server`, given back, must stay with the client instead: a WITH
    /// HOLD cursor lives on its shard and no server of it is pinned yet.
    pub fn keeps(&self, server: &Pooled) -> bool {
        if self.places.is_empty() {
            return false;
        }
        let pool = server.pool();
        server.serves() == RoleNow::Primary
            && self.holds_on(pool.shard)
            && !self.pinned.iter().any(|(s, _)| *s == pool.shard)
    }
}

/// Why a merged cursor made before a ROLLBACK TO is read no more.
const ROLLED_BACK_TO: &str = "a ROLLBACK TO SAVEPOINT since this cursor (or portal) over several shards was declared may have closed it, and pgshard does not follow which cursors a savepoint covers: it is read no more; close it and declare it again";

/// How far a FETCH or MOVE of a merged cursor goes: rows forward
/// (`u64::MAX` for ALL), or why pgshard cannot move it that way.
pub(super) fn forward(direction: FetchDirection, count: i64) -> Result<u64, ClientError> {
    let what = match (direction, count) {
        (FetchDirection::Forward, FETCH_ALL) => return Ok(u64::MAX),
        (FetchDirection::Forward, n) if n > 0 => return Ok(n.unsigned_abs()),
        (FetchDirection::Forward, 0) | (FetchDirection::Relative, 0) => {
            "FETCH 0 (the current row again)"
        }
        (FetchDirection::Forward | FetchDirection::Backward, _) => "FETCH BACKWARD or PRIOR",
        (FetchDirection::Absolute, _) => "FETCH ABSOLUTE, FIRST or LAST",
        (FetchDirection::Relative, _) => "FETCH RELATIVE",
    };
    Err(refusal(&format!(
        "{what} of a cursor over several shards is not supported: pgshard merges the shards' rows forward only; use FETCH [FORWARD] n or ALL, or add the sharding key to the cursor's query so that it runs on one shard"
    )))
}

/// Why a DECLARE whose query needs several shards is refused, if it is.
pub(super) fn declare_refusal(options: CursorOptions, locking: bool) -> Option<ClientError> {
    let what = if options.scroll {
        "a SCROLL cursor"
    } else if locking {
        "a cursor with FOR UPDATE or FOR SHARE (rows are read ahead, so more would be locked than fetched, and WHERE CURRENT OF could not name one shard's row)"
    } else {
        return None;
    };
    Some(refusal(&format!(
        "{what} over several shards is not supported: pgshard merges the shards' rows forward only; declare it NO SCROLL without locking, or add the sharding key to its query so that it runs on one shard"
    )))
}

/// The error for a merged cursor that reads no more.
pub(super) fn broken(name: &[u8]) -> ClientError {
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "cursor \"{}\" over several shards cannot be read any more: a shard failed while it was read; close it and declare it again",
            String::from_utf8_lossy(name)
        ),
    )
}

/// Postgres's error for a cursor that does not exist.
pub(super) fn no_cursor(name: &[u8]) -> ClientError {
    ClientError::new(
        sqlstate::INVALID_CURSOR_NAME,
        format!(
            "cursor \"{}\" does not exist",
            String::from_utf8_lossy(name)
        ),
    )
}

pub(super) fn refusal(message: &str) -> ClientError {
    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message)
}

#[cfg(test)]
mod tests;
