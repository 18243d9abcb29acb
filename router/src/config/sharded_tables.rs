//! `[[sharded_tables]]` (with their `[[sharded_tables.mapping]]`),
//! `[[sharded_mappings]]` and `[[omnisharded_tables]]` of `pgdog.toml`: parsed,
//! checked, and resolved into each cluster's [`Sharding`].
//!
//! The file speaks PgDog's spelling; what it resolves to is pgshard's model
//! (`crate::sharding`): logical shards (`shard_count`) placed on databases
//! (`placement`), and table families (`name_prefix`), pgshard's own extension.
//! Everything that would otherwise fail or guess at query time fails here,
//! naming the key (`sharded_tables[0].mapping[2].shard: ...`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::{invalid, Cluster, ConfigError, General};
use crate::hash;
use crate::sharding::{
    DataType, Hasher, Key, KeySpace, ShardFunction, ShardedTable, Sharding, TableFamily,
};

const PGDOG: &str = "pgdog.toml";

/// Largest `shard_count`. A cap so that a typo cannot allocate a huge
/// placement table; Citus caps `citus.shard_count` at the same 64000.
pub const MAX_SHARD_COUNT: usize = 64_000;

/// One `[[sharded_tables]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ShardedTableEntry {
    /// The cluster (`[[databases]]` name) the table lives in.
    database: String,
    /// The table; `None` shards every table that has `column`.
    name: Option<String>,
    /// `None` matches the table in every schema.
    schema: Option<String>,
    /// The key column; required unless `name_prefix` is given.
    column: Option<String>,
    #[serde(default)]
    data_type: DataType,
    /// Ignored when the entry has mappings.
    #[serde(default)]
    hasher: Hasher,
    /// Logical shards; default: the cluster's number of databases.
    shard_count: Option<usize>,
    /// `placement[s]` = database of logical shard `s`; default `s % databases`.
    placement: Option<Vec<usize>>,
    /// PgDog's "sharding anchor" flag: accepted, not used by pgshard.
    #[serde(default)]
    #[allow(dead_code)]
    primary: bool,
    /// pgshard's table families: tables `<name_prefix><N>`, keyed by `N`.
    name_prefix: Option<String>,
    #[serde(default)]
    mapping: Vec<MappingEntry>,
}

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
pub(super) struct ShardedMappingEntry {
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

/// One `[[omnisharded_tables]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OmnishardedEntry {
    database: String,
    /// `"name"` (every schema) or `"schema.name"`.
    tables: Vec<String>,
    /// PgDog's "read the same copy for the whole session": accepted, not used
    /// (pgshard's omnisharded reads already go to one database per statement).
    #[serde(default)]
    #[allow(dead_code)]
    sticky: bool,
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
struct Mapping {
    path: String,
    kind: Option<MappingKind>,
    values: Option<Vec<MappingValue>>,
    start: Option<MappingValue>,
    end: Option<MappingValue>,
    shard: usize,
}

/// What a `[[sharded_tables]]` entry keys on.
enum Target {
    /// A column (of one table, or of every table when `name` is `None`).
    Column {
        name: Option<String>,
        column: String,
    },
    /// A table family `<prefix><N>`.
    Family { prefix: String },
}

/// A `[[sharded_tables]]` entry whose own keys passed their checks.
struct Entry {
    /// Index in `sharded_tables`, for paths.
    index: usize,
    cluster: String,
    schema: Option<String>,
    target: Target,
    data_type: DataType,
    hasher: Hasher,
    shard_count: usize,
    placement: Vec<usize>,
    mappings: Vec<Mapping>,
}

impl Entry {
    /// Whether the table `name` is sharded by this entry, by its name or as
    /// a member of its family (a column-only entry claims no table by name).
    fn claims(&self, name: &str) -> bool {
        match &self.target {
            Target::Column { name: own, .. } => own.as_deref() == Some(name),
            Target::Family { prefix } => in_family(prefix, name),
        }
    }
}

fn fail<T>(path: String, message: String) -> Result<T, ConfigError> {
    Err(invalid(PGDOG, path, message))
}

/// Check the sharding sections against the clusters and store each cluster's
/// resolved [`Sharding`] in it (clusters no entry names get one with no tables).
pub(super) fn resolve(
    general: &General,
    clusters: &mut BTreeMap<String, Cluster>,
    tables: Vec<ShardedTableEntry>,
    mappings: Vec<ShardedMappingEntry>,
    omnisharded: Vec<OmnishardedEntry>,
) -> Result<(), ConfigError> {
    let databases: BTreeMap<String, usize> = clusters
        .iter()
        .map(|(name, cluster)| (name.clone(), cluster.shards.len()))
        .collect();

    let mut entries = Vec::with_capacity(tables.len());
    for (index, table) in tables.into_iter().enumerate() {
        entries.push(entry(index, table, &databases)?);
    }
    duplicates(&entries)?;
    attach(&mut entries, mappings, &databases)?;

    let mut resolved: BTreeMap<String, Sharding> = databases
        .iter()
        .map(|(name, &databases)| {
            let sharding = Sharding {
                databases,
                cross_shard_disabled: general.cross_shard_disabled,
                ..Sharding::default()
            };
            (name.clone(), sharding)
        })
        .collect();
    for entry in &entries {
        let keys = KeySpace {
            data_type: entry.data_type,
            function: function(entry)?,
            placement: entry.placement.clone(),
        };
        let Some(sharding) = resolved.get_mut(&entry.cluster) else {
            continue; // `entry()` checked the cluster exists.
        };
        match &entry.target {
            Target::Column { name, column } => sharding.tables.push(ShardedTable {
                name: name.clone(),
                schema: entry.schema.clone(),
                column: column.clone(),
                keys,
            }),
            Target::Family { prefix } => sharding.families.push(TableFamily {
                prefix: prefix.clone(),
                schema: entry.schema.clone(),
                keys,
            }),
        }
    }

    for (i, omni) in omnisharded.into_iter().enumerate() {
        let Some(sharding) = resolved.get_mut(&omni.database) else {
            return fail(
                format!("omnisharded_tables[{i}].database"),
                format!("no [[databases]] entry is named {:?}", omni.database),
            );
        };
        for (k, table) in omni.tables.iter().enumerate() {
            let path = format!("omnisharded_tables[{i}].tables[{k}]");
            let (schema, name) =
                split_table(table).or_else(|message| fail(path.clone(), message))?;
            if let Some(entry) = entries.iter().find(|e| {
                e.cluster == omni.database && schemas_overlap(&e.schema, &schema) && e.claims(&name)
            }) {
                let how = match &entry.target {
                    Target::Family { prefix } => format!("in the table family {prefix:?} of"),
                    Target::Column { .. } => "by".to_owned(),
                };
                return fail(
                    path,
                    format!(
                        "table {table:?} is also sharded, {how} sharded_tables[{}]; a table is either sharded or omnisharded",
                        entry.index
                    ),
                );
            }
            let table = (schema, name);
            if !sharding.omnisharded.contains(&table) {
                sharding.omnisharded.push(table);
            }
        }
    }

    for sharding in resolved.values_mut() {
        let column_only = sharding.tables.iter().any(|t| t.name.is_none());
        let omnisharded = general.unlisted_tables == super::general::UnlistedTables::Omnisharded;
        sharding.unlisted_omnisharded = omnisharded && !column_only;
        sharding.unlisted_by_columns = omnisharded && column_only;
    }
    for (name, cluster) in clusters.iter_mut() {
        if let Some(sharding) = resolved.remove(name) {
            cluster.sharding = Arc::new(sharding);
        }
    }
    Ok(())
}

/// Check one `[[sharded_tables]]` entry's own keys.
fn entry(
    index: usize,
    table: ShardedTableEntry,
    databases: &BTreeMap<String, usize>,
) -> Result<Entry, ConfigError> {
    let at = |key: &str| format!("sharded_tables[{index}].{key}");
    let Some(&count) = databases.get(&table.database) else {
        return fail(
            at("database"),
            format!("no [[databases]] entry is named {:?}", table.database),
        );
    };
    for (key, value) in [
        ("name", &table.name),
        ("schema", &table.schema),
        ("name_prefix", &table.name_prefix),
        ("column", &table.column),
    ] {
        if value.as_deref() == Some("") {
            return fail(at(key), "must not be empty".to_owned());
        }
    }
    if table.name.as_deref().is_some_and(|n| n.contains('.')) {
        return fail(
            at("name"),
            "must be the bare table name: give the schema in `schema`".to_owned(),
        );
    }
    let target = match (table.name_prefix, table.name, table.column) {
        (Some(_), Some(_), _) => {
            return fail(
                at("name_prefix"),
                "cannot be combined with `name`: an entry is one table (or column) or one table family".to_owned(),
            );
        }
        // A family's key is in its tables' names; a `column` is allowed as
        // documentation and not used for routing.
        (Some(prefix), None, _) => {
            if !is_integer(table.data_type) {
                return fail(
                    at("data_type"),
                    format!(
                        "a table family (name_prefix) is keyed by the number in its table names: data_type must be bigint, integer or smallint, not {}",
                        type_name(table.data_type)
                    ),
                );
            }
            Target::Family { prefix }
        }
        (None, name, Some(column)) => Target::Column { name, column },
        (None, _, None) => {
            return fail(
                at("column"),
                "required: the column whose value picks the shard (or give `name_prefix` for a table family)".to_owned(),
            );
        }
    };
    let shard_count = table.shard_count.unwrap_or(count);
    if shard_count == 0 {
        return fail(at("shard_count"), "must be at least 1".to_owned());
    }
    if shard_count > MAX_SHARD_COUNT {
        return fail(
            at("shard_count"),
            format!("{shard_count} is more than the most allowed, {MAX_SHARD_COUNT}"),
        );
    }
    let placement = match table.placement {
        None => (0..shard_count).map(|s| s % count).collect(),
        Some(placement) => {
            if placement.len() != shard_count {
                return fail(
                    at("placement"),
                    format!(
                        "has {} entries, but shard_count is {shard_count}: give one database per logical shard",
                        placement.len()
                    ),
                );
            }
            if let Some((s, db)) = placement.iter().enumerate().find(|(_, &db)| db >= count) {
                return fail(
                    at(&format!("placement[{s}]")),
                    format!(
                        "database {db} does not exist: cluster {:?} has {count} (shards 0 to {})",
                        table.database,
                        count - 1
                    ),
                );
            }
            placement
        }
    };
    let mappings = table
        .mapping
        .into_iter()
        .enumerate()
        .map(|(j, m)| Mapping {
            path: at(&format!("mapping[{j}]")),
            kind: m.kind,
            values: m.values,
            start: m.start,
            end: m.end,
            shard: m.shard,
        })
        .collect();
    Ok(Entry {
        index,
        cluster: table.database,
        schema: table.schema,
        target,
        data_type: table.data_type,
        hasher: table.hasher,
        shard_count,
        placement,
        mappings,
    })
}

/// No two entries for the same table and column, and no table name that two
/// entries could both claim through a table family.
fn duplicates(entries: &[Entry]) -> Result<(), ConfigError> {
    for (later, b) in entries.iter().enumerate() {
        for a in entries.iter().take(later) {
            if a.cluster != b.cluster || !schemas_overlap(&a.schema, &b.schema) {
                continue;
            }
            let at = |key: &str| format!("sharded_tables[{}].{key}", b.index);
            let message = match (&a.target, &b.target) {
                (
                    Target::Column { name: an, column: ac },
                    Target::Column { name: bn, column: bc },
                ) if a.schema == b.schema && an == bn && ac == bc => Some((
                    "column",
                    format!("this table and column are already sharded by sharded_tables[{}]", a.index),
                )),
                (Target::Family { prefix: ap }, Target::Family { prefix: bp })
                    if ap == bp || in_family(ap, bp) || in_family(bp, ap) =>
                {
                    Some((
                        "name_prefix",
                        format!(
                            "overlaps the table family {ap:?} of sharded_tables[{}]: some table names would belong to both",
                            a.index
                        ),
                    ))
                }
                (Target::Family { prefix }, Target::Column { name: Some(name), .. }) if in_family(prefix, name) => Some((
                    "name",
                    format!("table {name:?} belongs to the table family {prefix:?} of sharded_tables[{}]", a.index),
                )),
                (Target::Column { name: Some(name), .. }, Target::Family { prefix }) if in_family(prefix, name) => Some((
                    "name_prefix",
                    format!("the table {name:?} of sharded_tables[{}] would belong to this family", a.index),
                )),
                _ => None,
            };
            if let Some((key, message)) = message {
                return fail(at(key), message);
            }
        }
    }
    Ok(())
}

/// Attach each `[[sharded_mappings]]` entry to its `[[sharded_tables]]` entry.
fn attach(
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
fn function(entry: &Entry) -> Result<ShardFunction, ConfigError> {
    let Some(first) = entry.mappings.first() else {
        return Ok(ShardFunction::Hash {
            hasher: entry.hasher,
            shard_count: entry.shard_count,
        });
    };
    let kind = mapping_kind(first)?;
    let mut list: Vec<(Key, usize)> = Vec::new();
    // Where each list value was mapped, to name it in a conflict.
    let mut seen: BTreeMap<Key, (usize, String)> = BTreeMap::new();
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
            MappingKind::List => {
                for (k, value) in mapping.values.iter().flatten().enumerate() {
                    let value_path = format!("{path}.values[{k}]");
                    let key = key(entry.data_type, value, &value_path)?;
                    match seen.get(&key) {
                        Some((shard, _)) if *shard == mapping.shard => continue,
                        Some((shard, other)) => {
                            return fail(
                                value_path,
                                format!("{value:?} is already mapped to shard {shard} by {other}"),
                            );
                        }
                        None => {}
                    }
                    seen.insert(key.clone(), (mapping.shard, value_path));
                    list.push((key, mapping.shard));
                }
            }
            MappingKind::Range => {
                let bound = |value: &Option<MappingValue>, key_name: &str| {
                    value
                        .as_ref()
                        .map(|v| key(entry.data_type, v, &format!("{path}.{key_name}")))
                        .transpose()
                };
                let start = bound(&mapping.start, "start")?;
                let end = bound(&mapping.end, "end")?;
                if let (Some(s), Some(e)) = (&start, &end) {
                    if s >= e {
                        return fail(
                            format!("{path}.end"),
                            "must be greater than start (start is inclusive, end exclusive)"
                                .to_owned(),
                        );
                    }
                }
                ranges.push((start, end, position));
                range_shards.push(mapping.shard);
            }
        }
    }
    if kind == MappingKind::List {
        return Ok(ShardFunction::List(list));
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

fn is_integer(data_type: DataType) -> bool {
    matches!(
        data_type,
        DataType::BigInt | DataType::Integer | DataType::SmallInt
    )
}

/// The `data_type` spelling of a type.
fn type_name(data_type: DataType) -> &'static str {
    match data_type {
        DataType::BigInt => "bigint",
        DataType::Integer => "integer",
        DataType::SmallInt => "smallint",
        DataType::Text => "text",
        DataType::Varchar => "varchar",
        DataType::Uuid => "uuid",
    }
}

/// Whether `name` is `<prefix><N>` for a number `N`.
fn in_family(prefix: &str, name: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether two schema filters can match the same table (`None` = any schema).
fn schemas_overlap(a: &Option<String>, b: &Option<String>) -> bool {
    a.is_none() || b.is_none() || a == b
}

/// `"name"` or `"schema.name"`.
pub(super) fn split_table(table: &str) -> Result<(Option<String>, String), String> {
    let parts: Vec<&str> = table.split('.').collect();
    match parts.as_slice() {
        [name] if !name.is_empty() => Ok((None, (*name).to_owned())),
        [schema, name] if !schema.is_empty() && !name.is_empty() => {
            Ok((Some((*schema).to_owned()), (*name).to_owned()))
        }
        _ => Err(format!(
            "{table:?} is not a table name: write \"name\" or \"schema.name\""
        )),
    }
}
