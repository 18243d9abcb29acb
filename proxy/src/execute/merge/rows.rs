//! The rows of a cross-shard SELECT merged by its [`MergePlan`]: a k-way
//! merge of the shards' sorted streams, LIMIT / OFFSET over the merged
//! stream, and partial groups combined (GROUP BY, plain aggregates,
//! DISTINCT). Pure: the fan-out feeds it each shard's RowDescription,
//! DataRows and end, and asks which shards it needs to hear from next.
//!
//! Memory: an ordered merge holds at most the rows that have arrived and
//! not yet gone out (it only asks for rows of shards whose queue is empty,
//! so the fan-out's bounded channels hold back the rest); grouping over
//! sorted groups (`rows/sorted.rs`) about one row per shard, plus the
//! groups waiting for a client order that is not the groups' (bounded); a
//! plain LIMIT holds nothing.

use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::merge::{Aggregate, Column, MergePlan, SortKey};

use crate::execute::merge::values::{self, Kind, ValueError};
use crate::protocol::rows::{parse_row, read_fields, write_description, write_row, Row};

/// The rows the client asked for: skip `offset`, then at most `count`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub offset: u64,
    pub count: Option<u64>,
}

/// A RowDescription field's type oid, length and modifier for `numeric`.
const NUMERIC_FIELD: [u8; 10] = [0, 0, 0x06, 0xa4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
/// The same for `text`.
const TEXT_FIELD: [u8; 10] = [0, 0, 0, 25, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

/// One column as the shards describe it.
#[derive(Debug, Clone, Copy)]
struct Field {
    oid: u32,
    binary: bool,
    /// `None` when the merge does not compare this column.
    kind: Option<Kind>,
}

mod groups;
mod ordered;
mod sorted;

use groups::Group;
use ordered::Ordered;
use sorted::Runs;

#[derive(Debug)]
pub struct RowMerge {
    plan: Arc<MergePlan>,
    window: Window,
    bytewise_text: bool,
    /// The client sees the shards' row description (it asked for it).
    forward_description: bool,
    fields: Option<Vec<Field>>,
    /// Ordered merge: each shard's rows not yet sent, and whether it ended.
    queues: Vec<VecDeque<Row>>,
    done: Vec<bool>,
    /// Grouping: groups by key, in order of first appearance.
    groups: HashMap<Vec<u8>, usize>,
    group_rows: Vec<Group>,
    /// Bind parameters (as text) a HAVING predicate reads.
    params: Vec<Option<String>>,
    /// DISTINCT ON: the key of the last row that went through.
    last_key: Option<Vec<u8>>,
    /// Rows skipped for OFFSET and rows sent.
    skipped: u64,
    sent: u64,
    /// Sorted groups' runs and the groups held for the client's order.
    runs: Runs,
    /// `cross_shard_merge_memory`: the most bytes of groups held.
    memory: u64,
}

impl RowMerge {
    pub fn new(
        plan: Arc<MergePlan>,
        window: Window,
        shards: usize,
        bytewise_text: bool,
    ) -> RowMerge {
        RowMerge {
            plan,
            window,
            bytewise_text,
            forward_description: true,
            fields: None,
            queues: (0..shards).map(|_| VecDeque::new()).collect(),
            done: vec![false; shards],
            groups: HashMap::new(),
            group_rows: Vec::new(),
            params: Vec::new(),
            last_key: None,
            skipped: 0,
            sent: 0,
            runs: Runs::default(),
            memory: router::config::DEFAULT_MERGE_MEMORY,
        }
    }

    /// Hold at most `bytes` of groups (`cross_shard_merge_memory`).
    pub fn with_memory(mut self, bytes: u64) -> RowMerge {
        self.memory = bytes;
        self
    }

    /// A merge whose row description is read, not sent: pgshard asked for
    /// it (an Execute of a portal the client did not describe).
    pub fn silent(mut self) -> RowMerge {
        self.forward_description = false;
        self
    }

    /// The Bind's parameters as text, for HAVING.
    pub fn with_params(mut self, params: Vec<Option<String>>) -> RowMerge {
        self.params = params;
        self
    }

    /// Whether the client sees the row description.
    pub fn forwards_description(&self) -> bool {
        self.forward_description
    }

    /// Slot `index` will send nothing: the merge does not wait for it.
    pub fn skip(&mut self, index: usize) {
        if let Some(done) = self.done.get_mut(index) {
            *done = true;
        }
    }

    /// Rows sent to the client (the CommandComplete count).
    pub fn sent(&self) -> u64 {
        self.sent
    }

    fn grouping(&self) -> bool {
        self.plan.groups.is_some() || self.plan.distinct
    }

    fn ordered(&self) -> bool {
        !self.plan.order.is_empty() && !self.grouping()
    }

    /// Whether the fan-out should hand over shard `index`'s next message.
    pub fn wants(&self, index: usize) -> bool {
        let queued = self.ordered() || self.sorted_groups();
        !queued || self.full() || self.queues.get(index).is_none_or(VecDeque::is_empty)
    }

    fn full(&self) -> bool {
        self.window.count.is_some_and(|count| self.sent >= count)
    }

    /// Every row the client asked for has gone out (after the row
    /// description): no row still to come from a shard matters.
    pub fn satisfied(&self) -> bool {
        let streamed = !self.grouping() || self.plan.groups_streamed();
        self.fields.is_some() && streamed && self.full()
    }

    /// The first shard's RowDescription: fields read and checked, the
    /// client's (hidden columns stripped) written to `out`.
    pub fn describe(&mut self, body: &[u8], out: &mut BytesMut) -> Result<(), ValueError> {
        let unreadable = ValueError::Unreadable("row description");
        let (fields, ends) = read_fields(body).ok_or(unreadable)?;
        let mut checked = Vec::with_capacity(fields.len());
        let mut retyped = Vec::new();
        for (column, (oid, binary)) in fields.iter().copied().enumerate() {
            let average = matches!(
                self.column(column),
                Some(Column::Average { .. } | Column::Spread { .. })
            );
            let ordered = self.column(column).and_then(Ordered::of);
            if let Some(ordered) = ordered {
                self.check_ordered(ordered, column, &fields)?;
            }
            let string = ordered.is_some_and(|o| o.delimiter.is_some());
            // An average (or a stddev) is compared as the numeric it
            // becomes, a string_agg as text.
            let compared = match (average, string) {
                (true, _) => 1700,
                (_, true) => 25,
                _ => oid,
            };
            let kind = if self.compares(column, fields.len()) {
                Some(Kind::of(compared, self.bytewise_text)?)
            } else {
                None
            };
            let summed = average
                || matches!(
                    self.column(column),
                    Some(Column::Aggregate(Aggregate::Sum | Aggregate::Count))
                );
            if summed && !matches!(oid, 20 | 21 | 23 | 1700) {
                return Err(ValueError::Type(oid));
            }
            if average {
                retyped.push((ends[column], NUMERIC_FIELD));
            } else if string {
                retyped.push((ends[column], TEXT_FIELD));
            }
            checked.push(Field { oid, binary, kind });
        }
        if self.forward_description {
            // The client's column is avg's (stddev's) numeric, not the
            // shards' sum; string_agg's text, not their array.
            let visible = fields.len().saturating_sub(self.plan.hidden);
            write_description(out, body, &ends, visible, &retyped);
        }
        self.fields = Some(checked);
        Ok(())
    }

    /// The row position of plan column `column` in a row `width` wide.
    fn at(&self, column: usize, width: usize) -> usize {
        match column.checked_sub(self.plan.targets) {
            Some(hidden) => width.saturating_sub(self.plan.hidden) + hidden,
            None => column,
        }
    }

    fn column(&self, column: usize) -> Option<Column> {
        self.plan.groups.as_ref()?.get(column).copied()
    }

    /// Whether column `column` is ordered (sort key, min/max).
    fn compares(&self, column: usize, width: usize) -> bool {
        self.plan
            .order
            .iter()
            .any(|k| self.at(k.column, width) == column)
            || matches!(
                self.column(column),
                Some(Column::Aggregate(Aggregate::Min | Aggregate::Max))
            )
            || self
                .plan
                .group_hash
                .is_some_and(|hash| self.at(usize::from(hash), width) == column)
    }

    /// A DataRow of shard `index`.
    pub fn row(
        &mut self,
        index: usize,
        message: &[u8],
        out: &mut BytesMut,
    ) -> Result<(), ValueError> {
        let row = parse_row(message).ok_or(ValueError::Unreadable("row"))?;
        if self
            .fields
            .as_ref()
            .is_none_or(|f| f.len() != row.values.len())
        {
            return Err(ValueError::Unreadable("row"));
        }
        if self.sorted_groups() {
            if let Some(queue) = self.queues.get_mut(index) {
                queue.push_back(row);
            }
            return self.drain_groups(out);
        }
        if self.grouping() {
            return self.accumulate(&row);
        }
        if !self.ordered() {
            self.emit(&row, out)?;
            return Ok(());
        }
        if let Some(queue) = self.queues.get_mut(index) {
            queue.push_back(row);
        }
        self.drain(out)
    }

    /// Shard `index` has sent all its rows.
    pub fn shard_done(&mut self, index: usize, out: &mut BytesMut) -> Result<(), ValueError> {
        if let Some(done) = self.done.get_mut(index) {
            *done = true;
        }
        if self.ordered() {
            self.drain(out)?;
        }
        if self.sorted_groups() {
            self.drain_groups(out)?;
        }
        Ok(())
    }

    /// Send rows while every shard still sending has one waiting.
    fn drain(&mut self, out: &mut BytesMut) -> Result<(), ValueError> {
        while let Some(best) = self.next_shard(&self.plan.order)? {
            if let Some(row) = self.queues[best].pop_front() {
                self.emit(&row, out)?;
            }
        }
        Ok(())
    }

    /// The shard whose waiting row comes first by `keys`, once every shard
    /// still sending has one waiting; `None`: one must send more first, or
    /// none has a row left.
    pub(super) fn next_shard(&self, keys: &[SortKey]) -> Result<Option<usize>, ValueError> {
        if (0..self.queues.len()).any(|i| self.queues[i].is_empty() && !self.done[i]) {
            return Ok(None);
        }
        let mut best: Option<usize> = None;
        for (i, queue) in self.queues.iter().enumerate() {
            let Some(row) = queue.front() else {
                continue;
            };
            let better = match best {
                None => true,
                Some(b) => self.compare_by(keys, row, &self.queues[b][0])? == Ordering::Less,
            };
            if better {
                best = Some(i);
            }
        }
        Ok(best)
    }

    fn compare_rows(&self, a: &Row, b: &Row) -> Result<Ordering, ValueError> {
        self.compare_by(&self.plan.order, a, b)
    }

    fn compare_by(&self, keys: &[SortKey], a: &Row, b: &Row) -> Result<Ordering, ValueError> {
        let fields = self.fields.as_deref().unwrap_or_default();
        for key in keys {
            let column = self.at(key.column, a.values.len());
            let (x, y) = (a.value(column), b.value(column));
            let order = match (x, y) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => {
                    if key.nulls_first {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    }
                }
                (Some(_), None) => {
                    if key.nulls_first {
                        Ordering::Greater
                    } else {
                        Ordering::Less
                    }
                }
                (Some(x), Some(y)) => {
                    let field = fields.get(column).ok_or(ValueError::Unreadable("row"))?;
                    let kind = field.kind.ok_or(ValueError::Type(field.oid))?;
                    let order = values::compare(kind, field.binary, x, y)?;
                    if key.descending {
                        order.reverse()
                    } else {
                        order
                    }
                }
            };
            if order != Ordering::Equal {
                return Ok(order);
            }
        }
        Ok(Ordering::Equal)
    }

    /// One merged row through the window to the client.
    fn emit(&mut self, row: &Row, out: &mut BytesMut) -> Result<(), ValueError> {
        if self.full() {
            return Ok(());
        }
        if !self.plan.distinct_on.is_empty() {
            // Rows come sorted by the keys first: a key's first row wins.
            let width = row.values.len();
            let columns: Vec<usize> = self
                .plan
                .distinct_on
                .iter()
                .map(|&c| self.at(c, width))
                .collect();
            let key = self.key_of(row, &columns)?;
            if self.last_key.as_ref() == Some(&key) {
                return Ok(());
            }
            self.last_key = Some(key);
        }
        if self.skipped < self.window.offset {
            self.skipped += 1;
            return Ok(());
        }
        self.sent += 1;
        let visible = row.values.len().saturating_sub(self.plan.hidden);
        if visible == row.values.len() {
            out.extend_from_slice(&row.message);
            return Ok(());
        }
        let values: Vec<Option<&[u8]>> = (0..visible).map(|c| row.value(c)).collect();
        write_row(out, &values);
        Ok(())
    }

    /// Every shard has ended: send what grouping held. Returns the rows sent.
    pub fn finish(&mut self, out: &mut BytesMut) -> Result<(), ValueError> {
        if !self.done.contains(&true) {
            // No shard sent rows (a Describe's reply): nothing to send.
            return Ok(());
        }
        if self.ordered() {
            self.done.iter_mut().for_each(|d| *d = true);
            return self.drain(out);
        }
        if !self.grouping() {
            return Ok(());
        }
        if self.sorted_groups() {
            return self.finish_sorted(out);
        }
        if self.group_rows.is_empty()
            && self
                .plan
                .groups
                .as_ref()
                .is_some_and(|c| !c.contains(&Column::Key))
        {
            return Err(ValueError::Unreadable("aggregate row"));
        }
        let groups = self.finished_groups()?;
        let mut rows: Vec<Row> = groups.into_iter().map(|g| group_row(&g.values)).collect();
        self.sort_rows(&mut rows)?;
        for row in rows {
            self.emit(&row, out)?;
        }
        Ok(())
    }
}

fn group_row(values: &[Option<Vec<u8>>]) -> Row {
    let mut out = BytesMut::new();
    let borrowed: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
    write_row(&mut out, &borrowed);
    parse_row(&out).unwrap_or(Row {
        message: Bytes::new(),
        values: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use router::merge::{Column, MergePlan, SortKey};

    /// A RowDescription body of int4 columns (text format).
    pub(super) fn description(names: &[&str], oid: u32) -> Vec<u8> {
        let mut body = (names.len() as u16).to_be_bytes().to_vec();
        for name in names {
            body.extend_from_slice(name.as_bytes());
            body.push(0);
            body.extend_from_slice(&[0; 6]);
            body.extend_from_slice(&oid.to_be_bytes());
            body.extend_from_slice(&[0, 4, 0xff, 0xff, 0xff, 0xff, 0, 0]);
        }
        body
    }

    pub(super) fn data_row(values: &[Option<&str>]) -> Vec<u8> {
        let mut out = BytesMut::new();
        let values: Vec<Option<&[u8]>> = values.iter().map(|v| v.map(str::as_bytes)).collect();
        write_row(&mut out, &values);
        out.to_vec()
    }

    pub(super) fn rows_of(out: &[u8]) -> Vec<Vec<Option<String>>> {
        let mut buf = BytesMut::from(out);
        let mut rows = Vec::new();
        while let Ok(Some(m)) = crate::protocol::frame::split_backend_message(&mut buf) {
            if m[0] == b'D' {
                let row = parse_row(&m).unwrap();
                rows.push(
                    (0..row.values.len())
                        .map(|c| {
                            row.value(c)
                                .map(|v| String::from_utf8_lossy(v).into_owned())
                        })
                        .collect(),
                );
            }
        }
        rows
    }

    #[test]
    fn aggregates_combine_and_order_merges() {
        use Aggregate::*;
        let plan = MergePlan {
            groups: Some(vec![
                Column::Key,
                Column::Aggregate(Count),
                Column::Aggregate(Min),
                Column::Aggregate(Max),
            ]),
            order: vec![SortKey {
                column: 0,
                descending: false,
                nulls_first: false,
            }],
            targets: 4,
            ..MergePlan::default()
        };
        let mut merge = RowMerge::new(Arc::new(plan), Window::default(), 3, true);
        let mut out = BytesMut::new();
        merge
            .describe(&description(&["g", "n", "lo", "hi"], 20), &mut out)
            .unwrap();
        for (shard, rows) in [
            (0, [["2", "3", "5", "9"], ["1", "1", "4", "4"]]),
            (1, [["2", "2", "1", "7"], ["3", "5", "0", "12"]]),
        ] {
            for row in rows {
                merge
                    .row(shard, &data_row(&row.map(Some)), &mut out)
                    .unwrap();
            }
            merge.shard_done(shard, &mut out).unwrap();
        }
        merge.finish(&mut out).unwrap();
        let expect = |r: [&str; 4]| r.map(|v| Some(v.to_owned())).to_vec();
        assert_eq!(
            rows_of(&out),
            vec![
                expect(["1", "1", "4", "4"]),
                expect(["2", "5", "1", "9"]),
                expect(["3", "5", "0", "12"])
            ]
        );
    }

    #[test]
    fn ordered_merge_with_a_window() {
        let plan = MergePlan {
            order: vec![SortKey {
                column: 0,
                descending: true,
                nulls_first: true,
            }],
            targets: 1,
            ..MergePlan::default()
        };
        let window = Window {
            offset: 1,
            count: Some(3),
        };
        let mut merge = RowMerge::new(Arc::new(plan), window, 2, true);
        let mut out = BytesMut::new();
        merge.describe(&description(&["v"], 23), &mut out).unwrap();
        merge.row(0, &data_row(&[None]), &mut out).unwrap();
        assert!(!merge.wants(0) && merge.wants(1));
        for v in ["9", "4", "1"] {
            merge.row(1, &data_row(&[Some(v)]), &mut out).unwrap();
        }
        merge.shard_done(1, &mut out).unwrap();
        for v in ["7", "3"] {
            merge.row(0, &data_row(&[Some(v)]), &mut out).unwrap();
        }
        merge.shard_done(0, &mut out).unwrap();
        merge.finish(&mut out).unwrap();
        let values: Vec<_> = rows_of(&out).into_iter().map(|r| r[0].clone()).collect();
        assert_eq!(
            values,
            vec![
                Some("9".to_owned()),
                Some("7".to_owned()),
                Some("4".to_owned())
            ]
        );
        assert_eq!(merge.sent(), 3);
    }
}
