//! A cross-shard SELECT read in parts: a cursor's FETCHes, a portal's
//! row-limited Executes. Each shard's rows come in batches from a cursor
//! (or portal) of its own and go through the statement's [`RowMerge`] (a
//! plan with nothing to do concatenates), only as far as the client asks.
//! Pure: the session asks which shards to fetch from next and how many rows
//! ([`InParts::wanted`]), feeds their replies, and takes the merged rows.
//!
//! Memory: a shard is asked for a batch (at most [`MAX_BATCH`] rows) only
//! when the merge has no row of it left, so the merge holds at most a
//! batch per shard, and the rows it made ready but the client has not taken
//! are fewer than that too. GROUP BY and DISTINCT are read in parts when the
//! shards sort their groups (router rule 8: the merge then combines about
//! one row per shard, as it does for a whole fetch); a grouping the shards
//! cannot sort (a `*` in the select list) would hold every group until the
//! last shard's last row, and is refused ([`in_parts`]).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::merge::{Column, MergePlan};

use super::{RowMerge, ValueError, Window};
use crate::protocol::frame::split_backend_message;

/// The most rows asked of one shard at a time.
pub const MAX_BATCH: u64 = 1000;

/// Why `plan` cannot be merged in parts, if it cannot.
pub fn in_parts(plan: &MergePlan) -> Result<(), &'static str> {
    let grouped = plan
        .groups
        .as_ref()
        .is_some_and(|columns| columns.contains(&Column::Key));
    if (grouped || plan.distinct) && plan.group_hash.is_none() {
        return Err("GROUP BY or DISTINCT across shards with `*` in the select list cannot be merged in parts (a cursor, a portal fetched with a row limit): the shards cannot sort its groups, so every group would be held in pgshard's memory until the last row of every shard; name the columns instead of `*`, fetch the statement whole, or add the sharding key to the WHERE clause so it runs on one shard");
    }
    Ok(())
}

/// A statement's merged rows, read in parts.
#[derive(Debug)]
pub struct InParts {
    plan: Arc<MergePlan>,
    window: Window,
    params: Vec<Option<String>>,
    /// Built with the first row description, when the shards' ordering
    /// of text is known.
    merge: Option<RowMerge>,
    /// The client's row description (hidden columns stripped).
    description: Option<Bytes>,
    /// Each shard has sent its last row.
    exhausted: Vec<bool>,
    /// Merged rows not taken yet.
    ready: VecDeque<Bytes>,
    /// No merged row is still to come (every shard exhausted, or the
    /// LIMIT reached).
    finished: bool,
}

impl InParts {
    /// The rows of `shards` shards merged by `plan` (a default plan
    /// concatenates), the window and HAVING's parameters as in
    /// [`RowMerge`].
    pub fn new(
        plan: Arc<MergePlan>,
        window: Window,
        params: Vec<Option<String>>,
        shards: usize,
    ) -> InParts {
        InParts {
            plan,
            window,
            params,
            merge: None,
            description: None,
            exhausted: vec![false; shards],
            ready: VecDeque::new(),
            finished: shards == 0,
        }
    }

    /// The client's row description, once a shard described the rows.
    pub fn description(&self) -> Option<&Bytes> {
        self.description.as_ref()
    }

    fn ordered(&self) -> bool {
        !self.plan.order.is_empty() && self.plan.groups.is_none() && !self.plan.distinct
    }

    /// Which shards (by position) to fetch from now, and how many rows of
    /// each, for the client to have `wanted` rows ready (or every row
    /// left); none when it has them.
    pub fn wanted(&self, wanted: u64) -> Vec<(usize, u64)> {
        let ready = self.ready.len() as u64;
        if self.finished || ready >= wanted {
            return Vec::new();
        }
        let batch = (wanted - ready).clamp(1, MAX_BATCH);
        let open = (0..self.exhausted.len()).filter(|&i| !self.exhausted[i]);
        if self.ordered() || self.plan.group_hash.is_some() {
            // The merge needs a row of every shard it has none of (sorted
            // groups combine as a k-way merge too).
            let merge = self.merge.as_ref();
            return open
                .filter(|&i| merge.is_none_or(|m| m.wants(i)))
                .map(|i| (i, batch))
                .collect();
        }
        if self.plan.groups.is_some() {
            // Whole-table aggregates: one row of each shard.
            return open.map(|i| (i, MAX_BATCH)).collect();
        }
        // Concatenated (a LIMIT alone included): shard after shard.
        open.take(1).map(|i| (i, batch)).collect()
    }

    /// A shard's RowDescription (`body`): the first one read, the client's
    /// written; `bytewise`: the shards order text bytewise.
    pub fn describe(&mut self, body: &[u8], bytewise: bool) -> Result<(), ValueError> {
        if self.merge.is_some() {
            return Ok(());
        }
        let shards = self.exhausted.len();
        let mut merge = RowMerge::new(Arc::clone(&self.plan), self.window, shards, bytewise)
            .with_params(std::mem::take(&mut self.params));
        let mut out = BytesMut::new();
        merge.describe(body, &mut out)?;
        self.description = Some(out.freeze());
        self.merge = Some(merge);
        Ok(())
    }

    /// A DataRow of shard `position`.
    pub fn row(&mut self, position: usize, message: &[u8]) -> Result<(), ValueError> {
        let merge = self
            .merge
            .as_mut()
            .ok_or(ValueError::Unreadable("row before its description"))?;
        let mut out = BytesMut::new();
        let merged = merge.row(position, message, &mut out);
        self.take_merged(out);
        merged
    }

    /// A batch of shard `position` ended after `got` of the `asked` rows
    /// (`complete`: its cursor or portal said it has no more).
    pub fn batch_end(
        &mut self,
        position: usize,
        got: u64,
        asked: u64,
        complete: bool,
    ) -> Result<(), ValueError> {
        let mut out = BytesMut::new();
        let mut result = Ok(());
        if got < asked || complete {
            if let Some(exhausted) = self.exhausted.get_mut(position) {
                *exhausted = true;
            }
            if let Some(merge) = self.merge.as_mut() {
                result = merge.shard_done(position, &mut out);
            }
        }
        if result.is_ok() && !self.finished && !self.exhausted.contains(&false) {
            if let Some(merge) = self.merge.as_mut() {
                result = merge.finish(&mut out);
            }
            self.finished = true;
        }
        if self.merge.as_ref().is_some_and(RowMerge::satisfied) {
            // The LIMIT is reached: what the shards still hold is not asked.
            self.finished = true;
        }
        self.take_merged(out);
        result
    }

    fn take_merged(&mut self, mut out: BytesMut) {
        while let Ok(Some(message)) = split_backend_message(&mut out) {
            self.ready.push_back(message);
        }
    }

    /// The next merged row (a whole DataRow message), if one is ready.
    pub fn next_row(&mut self) -> Option<Bytes> {
        self.ready.pop_front()
    }

    /// Every merged row has been taken.
    pub fn at_end(&self) -> bool {
        self.finished && self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests;
