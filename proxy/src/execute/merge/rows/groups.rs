//! Grouping in the cross-shard merge: partial groups keyed by their key
//! columns' canonical bytes, aggregates combined in the result type,
//! averages divided, HAVING applied.

use std::cmp::Ordering;

use router::merge::{Aggregate, Column};

use super::{Field, Ordered, Row, RowMerge};
use crate::execute::merge::having::{self, GroupView};
use crate::execute::merge::values::numeric::{Decimal, Spread};
use crate::execute::merge::values::{self, Kind, ValueError};

/// A group's state: the key columns' first values and the accumulators.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) values: Vec<Option<Vec<u8>>>,
}

impl RowMerge {
    /// The merged groups, averages divided and HAVING applied.
    pub(super) fn finished_groups(&mut self) -> Result<Vec<Group>, ValueError> {
        let mut groups = std::mem::take(&mut self.group_rows);
        let fields = self.fields.as_deref().unwrap_or_default();
        let strings: Vec<(usize, usize)> = (self.columns(fields.len()).into_iter().enumerate())
            .filter_map(|(c, column)| Some((c, Ordered::of(column)?.delimiter?)))
            .collect();
        for group in &mut groups {
            self.finish_averages(&mut group.values)?;
            for &(column, delimiter) in &strings {
                self.finish_string(delimiter, column, &mut group.values)?;
            }
        }
        if let Some(predicate) = &self.plan.having {
            let kinds = self.column_kinds();
            let mut kept = Vec::with_capacity(groups.len());
            for group in groups {
                let view = GroupView {
                    values: &group.values,
                    kinds: &kinds,
                    params: &self.params,
                };
                if having::holds(predicate, &view)? == Some(true) {
                    kept.push(group);
                }
            }
            groups = kept;
        }
        Ok(groups)
    }

    /// Bytes equal exactly when `row`'s values in `columns` are equal.
    pub(super) fn key_of(&self, row: &Row, columns: &[usize]) -> Result<Vec<u8>, ValueError> {
        let fields = self.fields.as_deref().unwrap_or_default();
        let mut key = Vec::new();
        for &c in columns {
            let (Some(value), Some(field)) = (row.value(c), fields.get(c)) else {
                key.push(0);
                continue;
            };
            key.push(1);
            let start = key.len();
            key.extend_from_slice(&[0; 4]);
            match Kind::of(field.oid, true) {
                Ok(kind) => values::canonical(kind, field.binary, value, &mut key)?,
                Err(_) => values::canonical_any(field.oid, value, &mut key)?,
            }
            let len = (key.len() - start - 4) as u32;
            key[start..start + 4].copy_from_slice(&len.to_be_bytes());
        }
        Ok(key)
    }

    /// Fold a shard's partial group into its group.
    pub(super) fn accumulate(&mut self, row: &Row) -> Result<(), ValueError> {
        let fields = self.fields.as_deref().unwrap_or_default();
        let columns = self.columns(fields.len());
        let keys: Vec<usize> = (0..columns.len())
            .filter(|&c| columns[c] == Column::Key)
            .collect();
        let key = self.key_of(row, &keys)?;
        let key_bytes = key.len();
        let next = self.group_rows.len();
        let at = *self.groups.entry(key).or_insert(next);
        if at == next {
            let values: Vec<_> = (0..fields.len())
                .map(|c| row.value(c).map(<[u8]>::to_vec))
                .collect();
            self.count_group(&values, key_bytes)?;
            self.group_rows.push(Group { values });
            return Ok(());
        }
        for (c, column) in columns.iter().enumerate() {
            let aggregate = match column {
                Column::Aggregate(aggregate) => *aggregate,
                Column::Average { .. } | Column::Spread { .. } => Aggregate::Sum,
                Column::Key | Column::OrderedKey => continue,
                Column::Ordered { .. } => {
                    let Some(ordered) = Ordered::of(*column) else {
                        continue;
                    };
                    let mut values = std::mem::take(&mut self.group_rows[at].values);
                    let merged = self.merge_ordered(ordered, c, &mut values, row);
                    self.group_rows[at].values = values;
                    merged?;
                    continue;
                }
            };
            let field = fields[c];
            let current = self.group_rows[at].values[c].take();
            let combined = combine(aggregate, field, current, row.value(c))?;
            self.group_rows[at].values[c] = combined;
        }
        Ok(())
    }

    /// Group key or aggregate per column (DISTINCT: every column a key).
    pub(super) fn columns(&self, count: usize) -> Vec<Column> {
        match &self.plan.groups {
            Some(columns) => columns.clone(),
            None => vec![Column::Key; count],
        }
    }
}

impl RowMerge {
    /// How each column of a merged group reads (an average as numeric).
    pub(super) fn column_kinds(&self) -> Vec<(Result<Kind, ValueError>, bool)> {
        let fields = self.fields.as_deref().unwrap_or_default();
        let columns = self.columns(fields.len());
        fields
            .iter()
            .zip(columns)
            .map(|(field, column)| {
                let oid = match column {
                    Column::Average { .. } | Column::Spread { .. } => 1700,
                    Column::Ordered {
                        delimiter: Some(_), ..
                    } => 25,
                    _ => field.oid,
                };
                (Kind::of(oid, self.bytewise_text), field.binary)
            })
            .collect()
    }

    /// A group's averages and spreads, from its sums and counts, as the
    /// numeric Postgres's `avg` and `stddev` give (NULL over no rows).
    pub(super) fn finish_averages(&self, values: &mut [Option<Vec<u8>>]) -> Result<(), ValueError> {
        let fields = self.fields.as_deref().unwrap_or_default();
        let number =
            |c: usize, values: &[Option<Vec<u8>>]| -> Result<Option<Decimal>, ValueError> {
                let (Some(Some(value)), Some(field)) = (values.get(c), fields.get(c)) else {
                    return Ok(None);
                };
                Ok(Some(match field.oid {
                    20 | 21 | 23 => Decimal::from_text(
                        values::integer(value, field.binary)?.to_string().as_bytes(),
                    )?,
                    _ => Decimal::read(value, field.binary)?,
                }))
            };
        let rows = |c: usize, values: &[Option<Vec<u8>>]| -> Result<u64, ValueError> {
            let Some(Some(n)) = values.get(c) else {
                return Ok(0);
            };
            let n = values::integer(n, fields.get(c).is_some_and(|f| f.binary))?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        for (c, column) in self.columns(fields.len()).into_iter().enumerate() {
            let finished = match column {
                Column::Average { count } => match (rows(count, values)?, number(c, values)?) {
                    (rows, Some(sum)) if rows > 0 => Some(sum.average(rows)),
                    _ => None,
                },
                Column::Spread {
                    count,
                    squares,
                    sample,
                    root,
                } => {
                    let zero = Decimal::from_text(b"0")?;
                    let sum = number(c, values)?.unwrap_or_else(|| zero.clone());
                    let squares = number(squares, values)?.unwrap_or(zero);
                    Spread { sample, root }.of(rows(count, values)?, &sum, &squares)
                }
                _ => continue,
            };
            values[c] = finished.map(|(value, scale)| match fields[c].binary {
                true => value.to_binary(scale),
                false => value.to_text(scale).into_bytes(),
            });
        }
        Ok(())
    }
}

/// Two integer partial sums (or counts), added in the column's own type,
/// with its range.
fn integer_sum(field: Field, current: &[u8], next: &[u8]) -> Result<Vec<u8>, ValueError> {
    let binary = field.binary;
    let (range, bytes) = match field.oid {
        21 => ("smallint", 2),
        23 => ("integer", 4),
        _ => ("bigint", 8),
    };
    let total = values::integer(current, binary)?
        .checked_add(values::integer(next, binary)?)
        .filter(|&t| {
            bytes == 8 || t.unsigned_abs() < 1 << (bytes * 8 - 1) || t == -(1 << (bytes * 8 - 1))
        })
        .ok_or(ValueError::OutOfRange(range))?;
    Ok(match binary {
        true => total.to_be_bytes()[8 - bytes..].to_vec(),
        false => total.to_string().into_bytes(),
    })
}

/// Combine an aggregate's running value with a shard's partial one.
fn combine(
    aggregate: Aggregate,
    field: Field,
    current: Option<Vec<u8>>,
    next: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, ValueError> {
    let (current, next) = match (current, next) {
        (None, next) => return Ok(next.map(<[u8]>::to_vec)),
        (current, None) => return Ok(current),
        (Some(a), Some(b)) => (a, b),
    };
    let binary = field.binary;
    Ok(Some(match aggregate {
        // (`Avg` and `Spread` become sums while planning.)
        Aggregate::Count | Aggregate::Sum | Aggregate::Avg | Aggregate::Spread { .. }
            if matches!(field.oid, 20 | 21 | 23) =>
        {
            integer_sum(field, &current, next)?
        }
        Aggregate::Count | Aggregate::Sum | Aggregate::Avg | Aggregate::Spread { .. } => {
            let (a, b) = (
                Decimal::read(&current, binary)?,
                Decimal::read(next, binary)?,
            );
            let scale = a.scale().max(b.scale());
            let total = a.add(&b);
            if binary {
                total.to_binary(scale)
            } else {
                total.to_text(scale).into_bytes()
            }
        }
        Aggregate::Min | Aggregate::Max => {
            let kind = field.kind.ok_or(ValueError::Type(field.oid))?;
            let order = values::compare(kind, binary, next, &current)?;
            let take = if aggregate == Aggregate::Min {
                order == Ordering::Less
            } else {
                order == Ordering::Greater
            };
            if take {
                next.to_vec()
            } else {
                current
            }
        }
        // Merged by `merge_ordered`, never here.
        Aggregate::Ordered { .. } => return Err(ValueError::Unreadable("ordered aggregate")),
        Aggregate::BoolAnd | Aggregate::BoolOr => {
            let (a, b) = (
                values::boolean(&current, binary)?,
                values::boolean(next, binary)?,
            );
            let value = if aggregate == Aggregate::BoolAnd {
                a && b
            } else {
                a || b
            };
            match (binary, value) {
                (true, v) => vec![u8::from(v)],
                (false, true) => b"t".to_vec(),
                (false, false) => b"f".to_vec(),
            }
        }
    }))
}
