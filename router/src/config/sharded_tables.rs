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
use std::sync::Arc;

use serde::Deserialize;

mod entry;
mod mappings;

use super::{invalid, Cluster, ConfigError, DefaultPlacement, General};
use crate::sharding::{
    DataType, GroupFunction, GroupId, Hasher, KeySpace, ShardedTable, Sharding, TableFamily,
};
use entry::entry;
pub(super) use mappings::ShardedMappingEntry;
use mappings::{attach, function, Mapping, MappingEntry};

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
    /// Whether `placement` was written (else it is `s % databases`).
    placement_given: bool,
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
    same_placement(&entries)?;

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
    add_entries(&mut resolved, &entries)?;
    add_omnisharded(&mut resolved, &entries, omnisharded)?;
    for sharding in resolved.values_mut() {
        let column_only = sharding.tables.iter().any(|t| t.name.is_none());
        let omnisharded = general.unlisted_tables == super::general::UnlistedTables::Omnisharded;
        sharding.unlisted_omnisharded = omnisharded && !column_only;
        sharding.unlisted_by_columns = omnisharded && column_only;
    }
    for (name, cluster) in clusters.iter_mut() {
        if let Some(sharding) = resolved.remove(name) {
            cluster.default_placement = default_placement(&entries, name);
            cluster.sharding = Arc::new(sharding);
        }
    }
    Ok(())
}

/// The entries of cluster `name` that give no `placement`, and the key
/// space each resolved to (`add_entries` pushed them in entry order).
fn default_placement(entries: &[Entry], name: &str) -> Vec<DefaultPlacement> {
    let (mut tables, mut families) = (0, 0);
    let mut found = Vec::new();
    for entry in entries.iter().filter(|e| e.cluster == name) {
        let (family, index) = match entry.target {
            Target::Column { .. } => (false, &mut tables),
            Target::Family { .. } => (true, &mut families),
        };
        if !entry.placement_given {
            found.push(DefaultPlacement {
                entry: entry.index,
                family,
                index: *index,
            });
        }
        *index += 1;
    }
    found
}

/// Each entry's key space, as a sharded table or a table family of its
/// cluster.
fn add_entries(
    resolved: &mut BTreeMap<String, Sharding>,
    entries: &[Entry],
) -> Result<(), ConfigError> {
    for entry in entries {
        let keys = KeySpace {
            data_type: entry.data_type,
            function: function(entry)?,
            placement: entry.placement.clone(),
            moving: None,
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
    Ok(())
}

/// The `[[omnisharded_tables]]` of each cluster; a table one of `entries`
/// shards is an error.
fn add_omnisharded(
    resolved: &mut BTreeMap<String, Sharding>,
    entries: &[Entry],
    omnisharded: Vec<OmnishardedEntry>,
) -> Result<(), ConfigError> {
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
                split_table(table).or_else(|err| fail(path.clone(), err.to_string()))?;
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
    Ok(())
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

/// Entries of one cluster in one placement group (same function over the
/// same number of logical shards: [`GroupId`]) have the same placement:
/// their equal keys are in the same logical shard, which must be on one
/// database for them to stay co-located (and for a move of the logical
/// shard to carry all of them).
fn same_placement(entries: &[Entry]) -> Result<(), ConfigError> {
    let group = |e: &Entry| GroupId {
        function: if e.mappings.is_empty() {
            GroupFunction::Hash(e.hasher)
        } else {
            GroupFunction::Mapping
        },
        shard_count: e.shard_count,
    };
    for (later, b) in entries.iter().enumerate() {
        let peers = entries.iter().take(later);
        for a in peers.filter(|a| a.cluster == b.cluster && group(a) == group(b)) {
            let differs = a.placement.iter().zip(&b.placement).enumerate();
            let Some((s, (on_a, on_b))) = differs.into_iter().find(|(_, (x, y))| x != y) else {
                continue;
            };
            return fail(
                format!("sharded_tables[{}].placement", b.index),
                format!(
                    "logical shard {s} is on database {on_b} here but on database {on_a} in \
                     sharded_tables[{}], which has the same shard function and shard_count \
                     (placement group {}): equal keys of the two must stay on one database, \
                     so give both the same `placement` (or a different shard_count)",
                    a.index,
                    group(b)
                ),
            );
        }
    }
    Ok(())
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

/// `"name"` or `"schema.name"`, the name of a table.
pub(super) fn split_table(table: &str) -> Result<(Option<String>, String), NotAName> {
    split_name(table, "table")
}

/// `"name"` or `"schema.name"`, the name of a `what` (a table, a function).
pub(super) fn split_name(
    text: &str,
    what: &'static str,
) -> Result<(Option<String>, String), NotAName> {
    let parts: Vec<&str> = text.split('.').collect();
    match parts.as_slice() {
        [name] if !name.is_empty() => Ok((None, (*name).to_owned())),
        [schema, name] if !schema.is_empty() && !name.is_empty() => {
            Ok((Some((*schema).to_owned()), (*name).to_owned()))
        }
        _ => Err(NotAName {
            text: text.to_owned(),
            what,
        }),
    }
}

/// A name in the config that is not `"name"` or `"schema.name"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a {what} name: write \"name\" or \"schema.name\"")]
pub(super) struct NotAName {
    text: String,
    what: &'static str,
}
