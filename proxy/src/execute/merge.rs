//! Several servers' replies to one statement merged into the one reply
//! the client expects.
//!
//! The `Merger` is pure: it is fed each server's whole messages as they
//! arrive (the simple-query fan-out reads the servers concurrently, an
//! extended-protocol segment unit by unit) and writes what the client should
//! see: the first server's reply supplies everything but the rows' totals
//! (ParseComplete excepted: every Parse in a fan-out is pgshard's own), the
//! others contribute only rows (DataRow, CopyData) and their row counts, and
//! one merged CommandComplete closes the reply (`SELECT 7` = the sum over
//! shards). The first error any shard reports is the client's; the rest of
//! the replies are read and dropped so every server comes back clean.
//!
//! A SELECT whose answer needs more than the shards' rows side by side
//! (ORDER BY, LIMIT, aggregates, GROUP BY, DISTINCT: see
//! [`router::merge`]) goes through a [`RowMerge`] (`merge/rows.rs`): the
//! rows are merged, the count is the merged rows'. Values are compared and
//! combined by `merge/values.rs` (Postgres's numeric in
//! `values/numeric.rs`, arrays in `values/arrays.rs`), rows read by the
//! codec's `protocol/rows.rs`.

mod copy_out;
mod copy_rows;
mod having;
mod parts;
mod rows;
mod split_rows;
pub mod values;

use bytes::BytesMut;

pub use copy_out::{CopyJoin, CopyJoinError};
pub use copy_rows::CopyRows;
pub use parts::{in_parts, InParts, MAX_BATCH};
pub use rows::{RowMerge, Window};
pub use split_rows::SplitRows;
pub use values::ValueError;

use crate::errors::ClientError;
use crate::protocol::backend::{BackendFrame, BackendMessage, CommandTag};
use crate::protocol::messages;
use crate::protocol::sqlstate;

/// Merges the reply streams of several servers for one statement.
#[derive(Debug)]
pub struct Merger {
    /// How the shards' rows become the client's.
    mode: Mode,
    /// A shard reported an error: nothing but that error goes out.
    failed: bool,
    /// The first server's CommandComplete tag without its count (`SELECT`,
    /// `INSERT 0`), or the whole tag when it has no count.
    tag: Option<(String, bool)>,
    row_count: u64,
    /// The first server ended a COPY TO: one CopyDone goes before the tag.
    copy_done: bool,
}

/// How a [`Merger`] makes one reply of the shards' rows.
#[derive(Debug)]
enum Mode {
    /// Side by side, after lines pgshard adds before the rows of a
    /// one-column text reply (an EXPLAIN's: how it routes and merges).
    Concat(Vec<String>),
    /// Merged by a plan.
    Rows(RowMerge),
    /// An INSERT split across shards: its RETURNING rows reordered.
    Split(SplitRows),
    /// A COPY TO STDOUT whose header or binary framing is joined.
    CopyOut(CopyJoin),
    /// Every server holds the same rows (a write to omnisharded tables):
    /// the first server's rows and count stand for all, and the counts of
    /// the others (kept here) must be the same, or the copies differ.
    Copies(Vec<u64>),
    /// A COPY (SELECT ...) TO STDOUT whose rows are merged by a plan: the
    /// merged reply is written as COPY's.
    CopyRows(RowMerge, CopyRows),
}

impl Default for Merger {
    fn default() -> Merger {
        Merger::with(Mode::Concat(Vec::new()))
    }
}

/// The merged reply in `merged`, written as a COPY's; `false` when it
/// cannot be (the client has the error).
fn write_copy(copy: &mut CopyRows, mut merged: BytesMut, out: &mut BytesMut) -> bool {
    while let Ok(Some(message)) = BackendFrame::split(&mut merged) {
        if let Err(error) = copy.message(&message, out) {
            error.encode(out);
            return false;
        }
    }
    true
}

/// The client's error for a merge that cannot go on.
pub fn merge_error(error: &ValueError) -> ClientError {
    let code = match error {
        ValueError::OutOfRange(_) => "22003",
        ValueError::Memory(_) => sqlstate::PROGRAM_LIMIT_EXCEEDED,
        _ => sqlstate::FEATURE_NOT_SUPPORTED,
    };
    ClientError::new(code, error.to_string())
}

impl Merger {
    fn with(mode: Mode) -> Merger {
        Merger {
            mode,
            failed: false,
            tag: None,
            row_count: 0,
            copy_done: false,
        }
    }

    /// A merger that merges rows by `rows`' plan.
    pub fn merging(rows: RowMerge) -> Merger {
        Merger::with(Mode::Rows(rows))
    }

    /// A merger of a split INSERT's replies.
    pub fn splitting(split: SplitRows) -> Merger {
        Merger::with(Mode::Split(split))
    }

    /// A merger whose merged rows go out as a COPY TO's.
    pub fn copying_rows(rows: RowMerge, copy: CopyRows) -> Merger {
        Merger::with(Mode::CopyRows(rows, copy))
    }

    /// A merger of a COPY TO STDOUT's outputs.
    pub fn copying_out(join: CopyJoin) -> Merger {
        Merger::with(Mode::CopyOut(join))
    }

    /// A merger of replies from servers that each hold the same rows.
    pub fn copies() -> Merger {
        Merger::with(Mode::Copies(Vec::new()))
    }

    /// Rows side by side, after `lines` as rows of the one text column.
    pub fn concatenating(lines: Vec<String>) -> Merger {
        Merger::with(Mode::Concat(lines))
    }

    /// The row merge, if rows are merged by a plan.
    fn rows(&self) -> Option<&RowMerge> {
        match &self.mode {
            Mode::Rows(rows) | Mode::CopyRows(rows, _) => Some(rows),
            _ => None,
        }
    }

    fn rows_mut(&mut self) -> Option<&mut RowMerge> {
        match &mut self.mode {
            Mode::Rows(rows) | Mode::CopyRows(rows, _) => Some(rows),
            _ => None,
        }
    }

    /// Position `index` will send nothing (the fan-out numbers the first
    /// server to answer 0, so its other number goes unused).
    pub fn skip_position(&mut self, index: usize) {
        match &mut self.mode {
            Mode::Rows(rows) | Mode::CopyRows(rows, _) => rows.skip(index),
            Mode::Split(split) => {
                if let Some(first) = index.checked_sub(1) {
                    split.first_is(first);
                }
            }
            _ => {}
        }
    }

    /// Whether server `index` (as passed to [`Merger::on_message`]) should
    /// be read next: an ordered merge waits for the shards it has no row of.
    pub fn wants(&self, index: usize) -> bool {
        self.failed || self.satisfied() || self.rows().is_none_or(|rows| rows.wants(index))
    }

    /// The merged rows are all out (a LIMIT reached): what the shards
    /// still send is read and dropped, so they may be cancelled.
    pub fn satisfied(&self) -> bool {
        !self.failed && self.rows().is_some_and(RowMerge::satisfied)
    }

    /// The merge cannot go on: the client gets this error instead.
    fn merge_failed(&mut self, error: &ValueError, out: &mut BytesMut) {
        self.failed = true;
        merge_error(error).encode(out);
    }

    /// A shard's error went out: nothing else will.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// One whole message from server `index` (0-based, in reading order);
    /// what the client should see is appended to `out`.
    pub fn on_message(&mut self, index: usize, message: &BackendFrame, out: &mut BytesMut) {
        if !matches!(self.mode, Mode::CopyRows(..)) {
            return self.relay(index, message, out);
        }
        let mut merged = BytesMut::new();
        self.relay(index, message, &mut merged);
        if let Mode::CopyRows(_, copy) = &mut self.mode {
            self.failed |= !write_copy(copy, merged, out);
        }
    }

    fn relay(&mut self, index: usize, frame: &BackendFrame, out: &mut BytesMut) {
        use BackendMessage as M;
        let (message, raw) = (frame.message(), frame.bytes());
        if self.satisfied() {
            // The answer is complete: a cancelled shard's error (57014) and
            // whatever else comes is not the client's.
            self.tag = Some(("SELECT".to_owned(), true));
            return;
        }
        if let (Mode::Split(split), M::DataRow(_), false) = (&mut self.mode, message, self.failed) {
            if let Err(error) = split.row(index, raw) {
                self.merge_failed(&error, out);
            }
            return;
        }
        let merged = self.rows().is_some();
        match message {
            M::ReadyForQuery(_) | M::ParseComplete => {}
            M::ErrorResponse(_) if !self.failed => {
                self.failed = true;
                out.extend_from_slice(raw);
            }
            _ if self.failed => {}
            M::RowDescription(_) | M::DataRow(_) | M::CommandComplete(_) | M::NoData if merged => {
                self.merge_rows(index, message, raw, out)
            }
            // A split part's request may open its shard's transaction
            // first (`BEGIN;` in its Query): not the client's.
            M::CommandComplete(tag)
                if tag.as_bytes() == b"BEGIN" && matches!(self.mode, Mode::Split(_)) => {}
            M::CommandComplete(tag) => self.count(index, tag),
            M::CopyDone => self.copy_done |= index == 0,
            // Another copy's rows: the first server's stand for them.
            M::DataRow(_) | M::CopyData(_)
                if matches!(self.mode, Mode::Copies(_)) && index != 0 => {}
            M::CopyData(body) if matches!(self.mode, Mode::CopyOut(_)) => {
                self.copy_data(index, body, out)
            }
            M::DataRow(_) | M::CopyData(_) => out.extend_from_slice(raw),
            // Headers (RowDescription, BindComplete, CopyOutResponse...),
            // notices and parameter changes: the first server's stand for all.
            _ if index == 0 => {
                out.extend_from_slice(raw);
                if let (M::RowDescription(body), Mode::Concat(lines)) = (message, &mut self.mode) {
                    if body.starts_with(&[0, 1]) {
                        for line in std::mem::take(lines) {
                            messages::data_row(out, &[Some(&line)]);
                            self.row_count += 1;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A message of the row stream, through the row merge.
    fn merge_rows(
        &mut self,
        index: usize,
        message: BackendMessage<'_>,
        raw: &[u8],
        out: &mut BytesMut,
    ) {
        let mut tag = None;
        let Some(rows) = self.rows_mut() else {
            return;
        };
        let merged = match message {
            BackendMessage::RowDescription(body) if index == 0 => rows.describe(body, out),
            BackendMessage::RowDescription(_) => Ok(()),
            BackendMessage::NoData => {
                if index == 0 && rows.forwards_description() {
                    out.extend_from_slice(raw);
                }
                Ok(())
            }
            BackendMessage::DataRow(_) => rows.row(index, raw, out),
            _ => {
                tag = Some(("SELECT".to_owned(), true));
                rows.shard_done(index, out)
            }
        };
        if tag.is_some() {
            self.tag = tag;
        }
        if let Err(error) = merged {
            self.merge_failed(&error, out);
        }
    }

    /// A CopyData of a joined COPY TO.
    fn copy_data(&mut self, index: usize, body: &[u8], out: &mut BytesMut) {
        let Mode::CopyOut(join) = &mut self.mode else {
            return;
        };
        if let Err(why) = join.data(index, body, out) {
            self.copy_failed(why, out);
        }
    }

    /// The shards' COPY outputs cannot be joined: the client gets this.
    fn copy_failed(&mut self, why: CopyJoinError, out: &mut BytesMut) {
        self.failed = true;
        ClientError::new("XX000", format!("COPY across shards: {why}")).encode(out);
    }

    fn count(&mut self, index: usize, tag: CommandTag<'_>) {
        let (head, count) = tag.split_count();
        let head = String::from_utf8_lossy(head).into_owned();
        match (count, &mut self.mode) {
            (Some(n), Mode::Copies(_)) if index == 0 => self.row_count = n,
            (Some(n), Mode::Copies(others)) => others.push(n),
            (Some(n), _) => self.row_count += n,
            (None, _) => {}
        }
        if index == 0 || self.tag.is_none() {
            self.tag = Some((head, count.is_some()));
        }
    }

    /// Close the merged reply (without its ReadyForQuery). Returns whether
    /// the statement failed.
    pub fn finish(self, out: &mut BytesMut) -> bool {
        let (failed, tag) = self.finish_but_tag(out);
        if let Some(tag) = tag {
            messages::command_complete(out, &tag);
        }
        failed
    }

    /// [`finish`](Self::finish) without the CommandComplete: whether the
    /// statement failed, and the tag the client is owed (none after an
    /// error). A statement in a transaction of its own gets its tag only
    /// once that transaction committed, as Postgres reports a failed
    /// commit instead of the tag.
    pub fn finish_but_tag(mut self, out: &mut BytesMut) -> (bool, Option<String>) {
        match std::mem::replace(&mut self.mode, Mode::Concat(Vec::new())) {
            Mode::CopyRows(rows, mut copy) => {
                // The tag is the COPY's, written from the merged reply.
                let mut merged = BytesMut::new();
                self.mode = Mode::Rows(rows);
                let failed = self.finish(&mut merged);
                return (!write_copy(&mut copy, merged, out) || failed, None);
            }
            Mode::Rows(mut rows) if !self.failed => match rows.finish(out) {
                Ok(()) => self.row_count = rows.sent(),
                Err(error) => self.merge_failed(&error, out),
            },
            Mode::Split(split) if !self.failed => split.emit(out),
            Mode::CopyOut(join) if !self.failed => {
                if let Err(why) = join.finish(out) {
                    self.copy_failed(why, out);
                }
            }
            Mode::Copies(others) => {
                if let Some(&differs) = others.iter().find(|&&n| n != self.row_count) {
                    self.failed = true;
                    let message = format!(
                        "the copies of an omnisharded table differ: the statement changed {} rows on one shard and {differs} on another (the change is rolled back where it runs in a transaction; compare the shards' copies)",
                        self.row_count
                    );
                    ClientError::new("XX001", message).encode(out);
                }
            }
            _ => {}
        }
        if self.failed {
            return (true, None);
        }
        if self.copy_done {
            messages::copy_done(out);
        }
        let tag = self.tag.map(|(head, counted)| match counted {
            true => format!("{head} {}", self.row_count),
            false => head,
        });
        (false, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server message (test input: made by hand, so read as a server's).
    fn msg(tag: u8, body: &[u8]) -> BackendFrame {
        let mut out = BytesMut::from(&[tag][..]);
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        BackendFrame::split(&mut out).unwrap().unwrap()
    }

    fn tags(out: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut buf = BytesMut::from(out);
        let mut seen = Vec::new();
        while let Ok(Some(m)) = BackendFrame::split(&mut buf) {
            seen.push((m.bytes()[0], m.bytes()[5..].to_vec()));
        }
        seen
    }

    /// A split part whose Query opened its shard's transaction
    /// (`BEGIN;<part>`) answers with the BEGIN's tag first: not the
    /// client's. `finish_but_tag` hands the summed tag back unwritten.
    #[test]
    fn a_split_drops_its_parts_begin_tags_and_hands_back_the_sum() {
        let split = SplitRows::new(vec![(0, vec![0]), (1, vec![1, 2])]);
        let mut merger = Merger::splitting(split);
        merger.skip_position(1);
        let mut out = BytesMut::new();
        for (index, tag) in [
            (0, &b"BEGIN\0"[..]),
            (2, b"BEGIN\0"),
            (2, b"INSERT 0 2\0"),
            (0, b"INSERT 0 1\0"),
        ] {
            merger.on_message(index, &msg(b'C', tag), &mut out);
        }
        let (failed, tag) = merger.finish_but_tag(&mut out);
        assert_eq!((failed, tag.as_deref()), (false, Some("INSERT 0 3")));
        assert!(out.is_empty(), "{:?}", tags(&out));
    }

    /// The fan-out numbers servers 0 (the first to answer) and index + 1
    /// (the rest): with the first's other number skipped, an ordered
    /// merge streams rows before the end instead of holding them all.
    #[test]
    fn an_ordered_merge_streams_with_the_fan_outs_numbering() {
        use std::sync::Arc;
        let plan = router::merge::MergePlan {
            order: vec![router::merge::SortKey {
                column: 0,
                descending: false,
                nulls_first: false,
            }],
            targets: 1,
            ..Default::default()
        };
        // Two servers: server 1 answers first (position 0), server 0 is
        // position 1, position 2 (server 1's own number) never sends.
        let mut merger = Merger::merging(RowMerge::new(Arc::new(plan), Window::default(), 3, true));
        merger.skip_position(2);
        let mut out = BytesMut::new();
        let mut desc = vec![0, 1, b'v', 0];
        desc.extend_from_slice(&[
            0, 0, 0, 0, 0, 0, 0, 0, 0, 23, 0, 4, 255, 255, 255, 255, 0, 0,
        ]);
        merger.on_message(0, &msg(b'T', &desc), &mut out);
        let row = |v: &str| {
            let mut body = vec![0, 1];
            body.extend_from_slice(&(v.len() as u32).to_be_bytes());
            body.extend_from_slice(v.as_bytes());
            msg(b'D', &body)
        };
        for i in 0..100 {
            merger.on_message(0, &row(&(2 * i).to_string()), &mut out);
            merger.on_message(1, &row(&(2 * i + 1).to_string()), &mut out);
        }
        let streamed = tags(&out).iter().filter(|(t, _)| *t == b'D').count();
        assert!(
            streamed >= 190,
            "only {streamed} rows went out before the end"
        );
    }

    #[test]
    fn rows_concatenate_and_counts_add_up() {
        let mut merger = Merger::default();
        let mut out = BytesMut::new();
        for shard in 0..3 {
            merger.on_message(shard, &msg(b'1', b""), &mut out);
            merger.on_message(shard, &msg(b'T', b"desc"), &mut out);
            merger.on_message(shard, &msg(b'D', &[b'0' + shard as u8]), &mut out);
            merger.on_message(shard, &msg(b'C', b"SELECT 1\0"), &mut out);
            merger.on_message(shard, &msg(b'Z', b"I"), &mut out);
        }
        assert!(!merger.finish(&mut out));
        let seen = tags(&out);
        assert_eq!(
            seen,
            vec![
                (b'T', b"desc".to_vec()),
                (b'D', b"0".to_vec()),
                (b'D', b"1".to_vec()),
                (b'D', b"2".to_vec()),
                (b'C', b"SELECT 3\0".to_vec()),
            ]
        );
    }

    #[test]
    fn insert_tags_keep_their_oid_field_and_ddl_tags_pass() {
        let mut merger = Merger::default();
        let mut out = BytesMut::new();
        merger.on_message(0, &msg(b'C', b"INSERT 0 2\0"), &mut out);
        merger.on_message(1, &msg(b'C', b"INSERT 0 5\0"), &mut out);
        merger.finish(&mut out);
        assert_eq!(tags(&out), vec![(b'C', b"INSERT 0 7\0".to_vec())]);

        let mut merger = Merger::default();
        let mut out = BytesMut::new();
        merger.on_message(0, &msg(b'C', b"CREATE TABLE\0"), &mut out);
        merger.on_message(1, &msg(b'C', b"CREATE TABLE\0"), &mut out);
        merger.finish(&mut out);
        assert_eq!(tags(&out), vec![(b'C', b"CREATE TABLE\0".to_vec())]);
    }

    #[test]
    fn first_error_wins_and_nothing_follows_it() {
        let mut merger = Merger::default();
        let mut out = BytesMut::new();
        merger.on_message(0, &msg(b'T', b"desc"), &mut out);
        merger.on_message(0, &msg(b'D', b"a"), &mut out);
        merger.on_message(0, &msg(b'C', b"SELECT 1\0"), &mut out);
        merger.on_message(1, &msg(b'E', b"first"), &mut out);
        merger.on_message(2, &msg(b'E', b"second"), &mut out);
        merger.on_message(2, &msg(b'D', b"b"), &mut out);
        assert!(merger.finish(&mut out));
        let seen: Vec<u8> = tags(&out).into_iter().map(|(t, _)| t).collect();
        assert_eq!(seen, b"TDE".to_vec());
    }

    #[test]
    fn copy_out_keeps_one_header_and_one_copy_done() {
        let mut merger = Merger::default();
        let mut out = BytesMut::new();
        for shard in 0..2 {
            merger.on_message(shard, &msg(b'H', b"hdr"), &mut out);
            merger.on_message(shard, &msg(b'd', b"row"), &mut out);
            merger.on_message(shard, &msg(b'c', b""), &mut out);
            merger.on_message(shard, &msg(b'C', b"COPY 1\0"), &mut out);
        }
        merger.finish(&mut out);
        let seen: Vec<u8> = tags(&out).into_iter().map(|(t, _)| t).collect();
        assert_eq!(seen, b"HddcC".to_vec());
    }
}
