//! The mappings of `[[sharded_tables]]` entries (`[[sharded_tables.mapping]]`
//! and PgDog's older top-level `[[sharded_mappings]]`): parsed, attached to
//! their entry, checked (one kind per entry, no value mapped twice, no
//! overlapping ranges, values typed for the column) and resolved into the
//! entry's list or range [`ShardFunction`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::{fail, type_name, Entry, Target};
use crate::config::ConfigError;
use crate::hash;
use crate::sharding::{DataType, Key, ShardFunction};

/// `kind` of a list/range mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum MappingKind {
    List,
    Range,
}

impl MappingKind {
    fn as_str(self) -> &'static str {
        match self {
            MappingKind::List => "list",
            MappingKind::Range => "range",
        }
    }
}

/// One `[[sharded_tables.mapping]]` entry. `kind` may be left out: `values`
/// makes a list mapping, `start`/`end` a range (as in PgDog's docs).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MappingEntry {
    kind: Option<MappingKind>,
    values: Option<Vec<MappingValue>>,
    start: Option<MappingValue>,
    end: Option<MappingValue>,
    /// Logical shard the matched keys go to.
    shard: usize,
}

/// One top-level `[[sharded_mappings]]` entry (PgDog's older form): a mapping
/// for the `[[sharded_tables]]` entry with the same database, table and column.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct ShardedMappingEntry {
    database: String,
    /// Must equal the table entry's `name` (both absent for a column-only entry).
    table: Option<String>,
    /// When given, must equal the table entry's `schema`.
    schema: Option<String>,
    column: String,
    kind: Option<MappingKind>,
    values: Option<Vec<MappingValue>>,
    start: Option<MappingValue>,
    end: Option<MappingValue>,
    shard: usize,
}

/// A mapping value as TOML gives it; typed against `data_type` later, so the
/// error can say which type was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
enum MappingValue {
    Int(i64),
    Text(String),
}

impl<'de> Deserialize<'de> for MappingValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl Visitor<'_> for ValueVisitor {
            type Value = MappingValue;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a string")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MappingValue, E> {
                Ok(MappingValue::Int(v))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MappingValue, E> {
                i64::try_from(v)
                    .map(MappingValue::Int)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<MappingValue, E> {
                Ok(MappingValue::Text(v.to_owned()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<MappingValue, E> {
                Ok(MappingValue::Text(v))
            }
        }

        deserializer.deserialize_any(ValueVisitor)
    }
}

/// A mapping from either form, with the key path its errors name.
pub(super) struct Mapping {
    path: String,
    kind: Option<MappingKind>,
    values: Option<Vec<MappingValue>>,
    start: Option<MappingValue>,
    end: Option<MappingValue>,
    shard: usize,
}

/// Attach each `[[sharded_mappings]]` entry to its `[[sharded_tables]]` entry.
pub(super) fn attach(
    entries: &mut [Entry],
    mappings: Vec<ShardedMappingEntry>,
    databases: &BTreeMap<String, usize>,
) -> Result<(), ConfigError> {
    for (m, mapping) in mappings.into_iter().enumerate() {
        let path = format!("sharded_mappings[{m}]");
        if !databases.contains_key(&mapping.database) {
            return fail(
                format!("{path}.database"),
                format!("no [[databases]] entry is named {:?}", mapping.database),
            );
        }
        let matches = |e: &Entry| {
            e.cluster == mapping.database
                && matches!(&e.target, Target::Column { name, column }
                    if *name == mapping.table && *column == mapping.column)
                && (mapping.schema.is_none() || e.schema == mapping.schema)
        };
        let mut found = entries.iter().filter(|e| matches(e)).map(|e| e.index);
        let (Some(first), second) = (found.next(), found.next()) else {
            return fail(
                path,
                format!(
                    "no [[sharded_tables]] entry of database {:?} has column {:?} and {}",
                    mapping.database,
                    mapping.column,
                    match &mapping.table {
                        Some(table) => format!("name {table:?}"),
                        None => "no name".to_owned(),
                    }
                ),
            );
        };
        if let Some(second) = second {
            return fail(
                format!("{path}.schema"),
                format!("matches both sharded_tables[{first}] and sharded_tables[{second}]: give the schema"),
            );
        }
        if let Some(entry) = entries.iter_mut().find(|e| e.index == first) {
            entry.mappings.push(Mapping {
                path,
                kind: mapping.kind,
                values: mapping.values,
                start: mapping.start,
                end: mapping.end,
                shard: mapping.shard,
            });
        }
    }
    Ok(())
}

/// The shard function of an entry: its mappings (all list or all range), or
/// the hash when it has none.
pub(super) fn function(entry: &Entry) -> Result<ShardFunction, ConfigError> {
    let Some(first) = entry.mappings.first() else {
        return Ok(ShardFunction::Hash {
            hasher: entry.hasher,
            shard_count: entry.shard_count,
        });
    };
    let kind = mapping_kind(first)?;
    let mut list = List::default();
    let mut ranges: Vec<(Option<Key>, Option<Key>, usize)> = Vec::new();
    let mut range_shards: Vec<usize> = Vec::new();
    for (position, mapping) in entry.mappings.iter().enumerate() {
        let path = &mapping.path;
        if mapping_kind(mapping)? != kind {
            return fail(
                format!("{path}.kind"),
                format!(
                    "{} is a {} mapping: one table's mappings must all be list or all range",
                    first.path,
                    kind.as_str()
                ),
            );
        }
        if mapping.shard >= entry.shard_count {
            return fail(
                format!("{path}.shard"),
                format!(
                    "logical shard {} does not exist: shard_count is {}",
                    mapping.shard, entry.shard_count
                ),
            );
        }
        match kind {
            MappingKind::List => list.add(entry.data_type, mapping)?,
            MappingKind::Range => {
                let (start, end) = range(entry.data_type, mapping)?;
                ranges.push((start, end, position));
                range_shards.push(mapping.shard);
            }
        }
    }
    if kind == MappingKind::List {
        return Ok(ShardFunction::List(list.keys));
    }
    overlaps(&ranges, &entry.mappings)?;
    Ok(ShardFunction::Range(
        ranges
            .into_iter()
            .zip(range_shards)
            .map(|((start, end, _), shard)| (start, end, shard))
            .collect(),
    ))
}

/// The keys of an entry's list mappings, each mapped once.
#[derive(Default)]
struct List {
    keys: Vec<(Key, usize)>,
    /// Where each value was mapped, to name it in a conflict.
    seen: BTreeMap<Key, (usize, String)>,
}

impl List {
    /// Add the values of a list `mapping`, typed as `data_type`.
    fn add(&mut self, data_type: DataType, mapping: &Mapping) -> Result<(), ConfigError> {
        let path = &mapping.path;
        for (k, value) in mapping.values.iter().flatten().enumerate() {
            let value_path = format!("{path}.values[{k}]");
            let key = key(data_type, value, &value_path)?;
            match self.seen.get(&key) {
                Some((shard, _)) if *shard == mapping.shard => continue,
                Some((shard, other)) => {
                    return fail(
                        value_path,
                        format!("{value:?} is already mapped to shard {shard} by {other}"),
                    );
                }
                None => {}
            }
            self.seen.insert(key.clone(), (mapping.shard, value_path));
            self.keys.push((key, mapping.shard));
        }
        Ok(())
    }
}

/// The bounds of a range `mapping`, typed as `data_type` (start inclusive,
/// end exclusive; `None`: open).
fn range(
    data_type: DataType,
    mapping: &Mapping,
) -> Result<(Option<Key>, Option<Key>), ConfigError> {
    let path = &mapping.path;
    let bound = |value: &Option<MappingValue>, key_name: &str| {
        value
            .as_ref()
            .map(|v| key(data_type, v, &format!("{path}.{key_name}")))
            .transpose()
    };
    let start = bound(&mapping.start, "start")?;
    let end = bound(&mapping.end, "end")?;
    if let (Some(s), Some(e)) = (&start, &end) {
        if s >= e {
            return fail(
                format!("{path}.end"),
                "must be greater than start (start is inclusive, end exclusive)".to_owned(),
            );
        }
    }
    Ok((start, end))
}

/// Whether a mapping is a list or a range, from `kind` or from its keys.
fn mapping_kind(mapping: &Mapping) -> Result<MappingKind, ConfigError> {
    let path = &mapping.path;
    let has_values = mapping.values.is_some();
    let has_range = mapping.start.is_some() || mapping.end.is_some();
    match (mapping.kind, has_values, has_range) {
        (_, true, true) => fail(
            format!("{path}.values"),
            "a mapping has either values (a list) or start/end (a range), not both".to_owned(),
        ),
        (Some(MappingKind::List), false, true) => fail(
            format!("{path}.kind"),
            "is \"list\", which takes `values`, not start/end".to_owned(),
        ),
        (Some(MappingKind::Range), true, false) => fail(
            format!("{path}.kind"),
            "is \"range\", which takes start/end, not `values`".to_owned(),
        ),
        (Some(MappingKind::List) | None, true, false) => {
            if mapping.values.as_ref().is_some_and(Vec::is_empty) {
                return fail(format!("{path}.values"), "must not be empty".to_owned());
            }
            Ok(MappingKind::List)
        }
        (Some(MappingKind::List), false, false) => fail(
            format!("{path}.values"),
            "required: the key values this mapping sends to its shard".to_owned(),
        ),
        // A range open at both ends: every key (so it must be the only range).
        (Some(MappingKind::Range), false, _) | (None, false, true) => Ok(MappingKind::Range),
        (None, false, false) => fail(
            path.clone(),
            "needs `values` (a list mapping) or `start`/`end` (a range mapping); PgDog's default mapping (neither) is not supported".to_owned(),
        ),
    }
}

/// No key may fall in two ranges. `ranges` holds (start, end, position of
/// the mapping in `mappings`).
fn overlaps(
    ranges: &[(Option<Key>, Option<Key>, usize)],
    mappings: &[Mapping],
) -> Result<(), ConfigError> {
    let mut sorted: Vec<_> = ranges.iter().collect();
    // `None` (open start) sorts first, as it should.
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for pair in sorted.windows(2) {
        let [a, b] = pair else { continue };
        // Sorted by start and disjoint so far: b overlaps a exactly when it
        // starts before a ends.
        let b_starts_before_a_ends = match (&b.0, &a.1) {
            (_, None) | (None, _) => true,
            (Some(start), Some(end)) => start < end,
        };
        if b_starts_before_a_ends {
            // Blame the one written later.
            let (first, later) = (a.2.min(b.2), a.2.max(b.2));
            let path = |i: usize| mappings.get(i).map_or("", |m| m.path.as_str());
            return fail(
                format!("{}.start", path(later)),
                format!("this range overlaps the range of {}", path(first)),
            );
        }
    }
    Ok(())
}

/// A mapping value typed for the column.
fn key(data_type: DataType, value: &MappingValue, path: &str) -> Result<Key, ConfigError> {
    let name = type_name(data_type);
    match (value, data_type) {
        (MappingValue::Int(v), DataType::BigInt) => Ok(Key::Int(*v)),
        (MappingValue::Int(v), DataType::Integer) if i32::try_from(*v).is_ok() => Ok(Key::Int(*v)),
        (MappingValue::Int(v), DataType::SmallInt) if i16::try_from(*v).is_ok() => Ok(Key::Int(*v)),
        (MappingValue::Int(v), DataType::Integer | DataType::SmallInt) => fail(
            path.to_owned(),
            format!("{v} is out of range for data_type {name}"),
        ),
        // Text keys go through the same parser as query values, so a mapping
        // holds exactly what a statement's key can be (no NUL in text).
        (MappingValue::Text(s), DataType::Text | DataType::Varchar | DataType::Uuid) => {
            hash::parse_text(data_type, s).or_else(|err| {
                fail(
                    path.to_owned(),
                    format!("{s:?} is not a valid {name}: {err}"),
                )
            })
        }
        (MappingValue::Text(s), _) => fail(
            path.to_owned(),
            format!("expected an integer (data_type is {name}), got the string {s:?}"),
        ),
        (MappingValue::Int(v), _) => fail(
            path.to_owned(),
            format!("expected a string (data_type is {name}), got the integer {v}"),
        ),
    }
}

impl Mapping {
    /// A `[[sharded_tables.mapping]]` entry at `path`.
    pub(super) fn of(path: String, entry: MappingEntry) -> Mapping {
        Mapping {
            path,
            kind: entry.kind,
            values: entry.values,
            start: entry.start,
            end: entry.end,
            shard: entry.shard,
        }
    }
}
