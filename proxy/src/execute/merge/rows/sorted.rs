//! Grouping in bounded memory: the shards send their partial groups sorted
//! by a hash of the group keys (router rule 8, after the client's ORDER BY
//! when that is all group keys), and the merge combines them as a k-way
//! merge: it reads a row of every shard still sending, takes the least,
//! and folds it into the current run (same client sort values and hash).
//! A run is complete once every shard's next row is past it (each shard's
//! stream is sorted): its groups (more than one only when distinct keys
//! share a hash) are finished (averages, strings, HAVING) and go out.
//! Memory: about one row per shard, plus the run.
//!
//! When the client orders by something else (`ORDER BY count(*) DESC`),
//! combined groups wait for the final sort: with `LIMIT n OFFSET m`, n + m
//! at most [`TOP_N`], only the best n + m are kept, in order (a top-N: one
//! comparison with the worst kept for most groups); otherwise
//! they are held up to `cross_shard_merge_memory` bytes and past it the
//! statement fails with 54000 naming the setting. Why not spill to the
//! coordinator: rows already sent cannot be taken back, the coordinator
//! path covers only the simple protocol outside blocks for now, and a
//! query ordering a million groups by an aggregate without a LIMIT is
//! rare; the error says how to make it fit. The unsorted grouping (a `*`
//! in the select list) is held under the same bound.

use std::cmp::Ordering;

use bytes::BytesMut;
use router::merge::SortKey;

use super::{group_row, RowMerge};
use crate::execute::merge::values::ValueError;
use crate::protocol::rows::Row;

/// The largest `LIMIT + OFFSET` kept as a top-N instead of held whole.
pub const TOP_N: u64 = 10_000;

/// What one held value or group costs beyond its bytes (allocations,
/// offsets), for the memory bound.
const VALUE_COST: usize = 32;
const GROUP_COST: usize = 96;

/// Sorted groups being combined, and combined groups waiting for the
/// client's order.
#[derive(Debug, Default)]
pub(super) struct Runs {
    /// A row of the current run (its sort values and hash).
    current: Option<Row>,
    /// Combined groups waiting for the final sort.
    held: Vec<Row>,
    /// Bytes of `held`, and of the groups of the current run (or of the
    /// unsorted grouping).
    held_bytes: usize,
    pub(super) group_bytes: usize,
}

impl RowMerge {
    /// Whether the shards send their groups sorted (router rule 8).
    pub(super) fn sorted_groups(&self) -> bool {
        self.plan.group_hash.is_some()
    }

    /// The keys a run shares: the client's sort keys when groups stream
    /// in its order, then the hash.
    fn run_keys(&self) -> Vec<SortKey> {
        let mut keys = match self.plan.groups_streamed() {
            true => self.plan.order.clone(),
            false => Vec::new(),
        };
        keys.extend(self.plan.group_hash.map(|column| SortKey {
            column: usize::from(column),
            descending: false,
            nulls_first: false,
        }));
        keys
    }

    /// Combine rows while every shard still sending has one waiting.
    pub(super) fn drain_groups(&mut self, out: &mut BytesMut) -> Result<(), ValueError> {
        let keys = self.run_keys();
        while let Some(best) = self.next_shard(&keys)? {
            let Some(row) = self.queues[best].pop_front() else {
                return Ok(());
            };
            let next_run = match &self.runs.current {
                Some(current) => self.compare_by(&keys, &row, current)? != Ordering::Equal,
                None => true,
            };
            if next_run {
                self.end_run(out)?;
                self.runs.current = Some(row.clone());
            }
            self.accumulate(&row)?;
        }
        Ok(())
    }

    /// The current run is complete: its groups finished and sent (or held
    /// for the client's order).
    pub(super) fn end_run(&mut self, out: &mut BytesMut) -> Result<(), ValueError> {
        if self.runs.current.take().is_none() {
            return Ok(());
        }
        self.groups.clear();
        self.runs.group_bytes = 0;
        let streamed = self.plan.groups_streamed();
        for group in self.finished_groups()? {
            let row = group_row(&group.values);
            match streamed {
                true => self.emit(&row, out)?,
                false => self.hold(row)?,
            }
        }
        Ok(())
    }

    /// Keep a combined group for the final sort: the best `LIMIT + OFFSET`
    /// of them when that is at most [`TOP_N`], else all, within the bound.
    fn hold(&mut self, row: Row) -> Result<(), ValueError> {
        let top = self
            .window
            .count
            .map(|count| count.saturating_add(self.window.offset))
            .filter(|&n| n <= TOP_N);
        match top {
            Some(0) => return Ok(()),
            Some(n) => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                self.keep_best(row, n)?;
            }
            None => {
                self.runs.held_bytes += row_cost(&row);
                self.check_memory()?;
                self.runs.held.push(row);
            }
        }
        Ok(())
    }

    /// Keep `row` if it is among the best `n` (held sorted, at most `n`):
    /// one comparison with the worst for most rows, a binary search else.
    fn keep_best(&mut self, row: Row, n: usize) -> Result<(), ValueError> {
        let held = &self.runs.held;
        if let Some(worst) = held.last().filter(|_| held.len() >= n) {
            if self.compare_rows(&row, worst)? != Ordering::Less {
                return Ok(());
            }
        }
        let (mut low, mut high) = (0, held.len());
        while low < high {
            let middle = (low + high) / 2;
            match self.compare_rows(&held[middle], &row)? {
                Ordering::Greater => high = middle,
                _ => low = middle + 1,
            }
        }
        self.runs.held.insert(low, row);
        self.runs.held.truncate(n);
        Ok(())
    }

    /// A new group of the unsorted grouping or of the current run.
    pub(super) fn count_group(
        &mut self,
        values: &[Option<Vec<u8>>],
        key: usize,
    ) -> Result<(), ValueError> {
        let bytes: usize = values.iter().flatten().map(|v| v.len() + VALUE_COST).sum();
        self.runs.group_bytes += bytes + key + GROUP_COST;
        self.check_memory()
    }

    fn check_memory(&self) -> Result<(), ValueError> {
        let held = (self.runs.held_bytes + self.runs.group_bytes) as u64;
        match held > self.memory {
            true => Err(ValueError::Memory(self.memory)),
            false => Ok(()),
        }
    }

    /// Every shard has ended: the last run, then the held groups in the
    /// client's order.
    pub(super) fn finish_sorted(&mut self, out: &mut BytesMut) -> Result<(), ValueError> {
        self.done.iter_mut().for_each(|d| *d = true);
        self.drain_groups(out)?;
        self.end_run(out)?;
        let mut held = std::mem::take(&mut self.runs.held);
        self.sort_rows(&mut held)?;
        for row in held {
            self.emit(&row, out)?;
        }
        Ok(())
    }

    /// Sort rows by the client's ORDER BY.
    pub(super) fn sort_rows(&self, rows: &mut [Row]) -> Result<(), ValueError> {
        if self.plan.order.is_empty() {
            return Ok(());
        }
        let mut failure = None;
        rows.sort_by(|a, b| {
            self.compare_rows(a, b).unwrap_or_else(|e| {
                failure.get_or_insert(e);
                Ordering::Equal
            })
        });
        failure.map_or(Ok(()), Err)
    }
}

/// What a held row costs.
fn row_cost(row: &Row) -> usize {
    row.message.len() + row.values.len() * 16 + GROUP_COST
}

#[cfg(test)]
mod tests;
