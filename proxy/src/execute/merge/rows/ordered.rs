//! `string_agg` / `array_agg` with ORDER BY in the merge: each shard's
//! partial group brings its values as an array sorted by the call's keys,
//! with one array per key beside it; two partials are interleaved by the
//! keys (a stable merge: on a tie the rows already merged come first, as
//! any order of ties is one Postgres could give), and a `string_agg`'s
//! values are joined with its delimiter when the group is finished.

use std::cmp::Ordering;

use router::merge::Column;

use super::{Field, Row, RowMerge};
use crate::execute::merge::values::arrays::{self, Array};
use crate::execute::merge::values::{self, Kind, ValueError};

/// A [`Column::Ordered`]'s parts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ordered {
    keys: usize,
    count: usize,
    descending: u8,
    nulls_first: u8,
    pub(super) delimiter: Option<usize>,
}

impl Ordered {
    pub(super) fn of(column: Column) -> Option<Ordered> {
        match column {
            Column::Ordered {
                keys,
                count,
                descending,
                nulls_first,
                delimiter,
            } => Some(Ordered {
                keys,
                count: usize::from(count),
                descending,
                nulls_first,
                delimiter,
            }),
            _ => None,
        }
    }
}

/// The array columns of one partial group: values, then each key.
struct Parts {
    values: Array,
    keys: Vec<Array>,
}

impl RowMerge {
    /// Check the shards' description of an ordered aggregate at `column`:
    /// arrays whose elements the merge can read (and, for the keys,
    /// compare); a `string_agg`'s values must be text.
    pub(super) fn check_ordered(
        &self,
        ordered: Ordered,
        column: usize,
        fields: &[(u32, bool)],
    ) -> Result<(), ValueError> {
        let (oid, _) = fields.get(column).copied().ok_or(ValueError::Type(0))?;
        let element = arrays::element_type(oid).ok_or(ValueError::Type(oid))?;
        if ordered.delimiter.is_some() && !matches!(element, 25 | 1043 | 19) {
            // bpchar loses its padding in string_agg, bytea's delimiter is
            // bytea: not rebuilt here.
            return Err(ValueError::Type(element));
        }
        for key in ordered.keys..ordered.keys + ordered.count {
            let (oid, _) = fields.get(key).copied().ok_or(ValueError::Type(0))?;
            let element = arrays::element_type(oid).ok_or(ValueError::Type(oid))?;
            Kind::of(element, self.bytewise_text)?;
        }
        Ok(())
    }

    /// Interleave `row`'s partial of the ordered aggregate at `column` into
    /// the group's `values`.
    pub(super) fn merge_ordered(
        &self,
        ordered: Ordered,
        column: usize,
        values: &mut [Option<Vec<u8>>],
        row: &Row,
    ) -> Result<(), ValueError> {
        let fields = self.fields.as_deref().unwrap_or_default();
        let columns = std::iter::once(column).chain(ordered.keys..ordered.keys + ordered.count);
        let (Some(_), Some(_)) = (values.get(column).cloned().flatten(), row.value(column)) else {
            // One side had no rows (FILTER): the other is the merge.
            if values.get(column).is_some_and(Option::is_none) {
                for c in columns {
                    values[c] = row.value(c).map(<[u8]>::to_vec);
                }
            }
            return Ok(());
        };
        let read = |from: &dyn Fn(usize) -> Option<Vec<u8>>| -> Result<Parts, ValueError> {
            let array = |c: usize| {
                let field = fields.get(c).ok_or(ValueError::Unreadable("row"))?;
                Array::read(&from(c).unwrap_or_default(), field.binary)
            };
            let keys = (ordered.keys..ordered.keys + ordered.count)
                .map(array)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Parts {
                values: array(column)?,
                keys,
            })
        };
        let mine = read(&|c| values.get(c).cloned().flatten())?;
        let theirs = read(&|c| row.value(c).map(<[u8]>::to_vec))?;
        let merged = self.interleave(ordered, mine, theirs)?;
        let write = |c: usize, array: &Array| -> Result<Vec<u8>, ValueError> {
            let field = fields.get(c).ok_or(ValueError::Unreadable("row"))?;
            let element = arrays::element_type(field.oid).ok_or(ValueError::Type(field.oid))?;
            Ok(array.write(field.binary, element))
        };
        values[column] = Some(write(column, &merged.values)?);
        for (i, key) in merged.keys.iter().enumerate() {
            values[ordered.keys + i] = Some(write(ordered.keys + i, key)?);
        }
        Ok(())
    }

    /// The stable merge of two key-sorted partials.
    fn interleave(&self, ordered: Ordered, a: Parts, b: Parts) -> Result<Parts, ValueError> {
        let len = |p: &Parts| {
            let n = p.values.elements.len();
            match p.keys.iter().all(|k| k.elements.len() == n) {
                true => Ok(n),
                false => Err(ValueError::Unreadable("array")),
            }
        };
        let (na, nb) = (len(&a)?, len(&b)?);
        let mut out = Parts {
            values: Array::default(),
            keys: vec![Array::default(); ordered.count],
        };
        let (mut i, mut j) = (0, 0);
        while i < na || j < nb {
            let take_b =
                j < nb && (i >= na || self.key_order(ordered, &a, i, &b, j)? == Ordering::Greater);
            let (from, at) = match take_b {
                true => (&b, &mut j),
                false => (&a, &mut i),
            };
            out.values.elements.push(from.values.elements[*at].clone());
            for (k, key) in from.keys.iter().enumerate() {
                out.keys[k].elements.push(key.elements[*at].clone());
            }
            *at += 1;
        }
        Ok(out)
    }

    /// How row `i` of `a` sorts against row `j` of `b` under the call's keys.
    fn key_order(
        &self,
        ordered: Ordered,
        a: &Parts,
        i: usize,
        b: &Parts,
        j: usize,
    ) -> Result<Ordering, ValueError> {
        let fields = self.fields.as_deref().unwrap_or_default();
        for k in 0..ordered.count {
            let descending = ordered.descending >> k & 1 == 1;
            let nulls_first = ordered.nulls_first >> k & 1 == 1;
            let order = match (&a.keys[k].elements[i], &b.keys[k].elements[j]) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) if nulls_first => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) if nulls_first => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) => {
                    let field: Field = *fields
                        .get(ordered.keys + k)
                        .ok_or(ValueError::Unreadable("row"))?;
                    let element =
                        arrays::element_type(field.oid).ok_or(ValueError::Type(field.oid))?;
                    let kind = Kind::of(element, self.bytewise_text)?;
                    let order = values::compare(kind, field.binary, x, y)?;
                    match descending {
                        true => order.reverse(),
                        false => order,
                    }
                }
            };
            if order != Ordering::Equal {
                return Ok(order);
            }
        }
        Ok(Ordering::Equal)
    }

    /// A finished group's `string_agg` at `column`: its values joined by
    /// the delimiter (NULL values skipped; NULL when none is left).
    pub(super) fn finish_string(
        &self,
        delimiter: usize,
        column: usize,
        values: &mut [Option<Vec<u8>>],
    ) -> Result<(), ValueError> {
        let Some(Some(array)) = values.get(column) else {
            return Ok(());
        };
        let binary = self
            .fields
            .as_deref()
            .and_then(|f| f.get(column))
            .is_some_and(|f| f.binary);
        let array = Array::read(array, binary)?;
        let separator = self
            .plan
            .delimiters
            .get(delimiter)
            .map_or("", String::as_str);
        let mut text: Option<Vec<u8>> = None;
        for value in array.elements.into_iter().flatten() {
            match &mut text {
                None => text = Some(value),
                Some(text) => {
                    text.extend_from_slice(separator.as_bytes());
                    text.extend_from_slice(&value);
                }
            }
        }
        values[column] = text;
        Ok(())
    }
}
