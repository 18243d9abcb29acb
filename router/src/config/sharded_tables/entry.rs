//! One `[[sharded_tables]]` entry's own keys checked, before entries are
//! compared with each other: its cluster, what it keys on (a column or a
//! table family), its logical shards and their placement, its mappings.

use std::collections::BTreeMap;

use super::mappings::Mapping;
use super::{fail, is_integer, type_name, Entry, ShardedTableEntry, Target, MAX_SHARD_COUNT};
use crate::config::ConfigError;
use crate::sharding::DataType;

/// Check one `[[sharded_tables]]` entry's own keys.
pub(super) fn entry(
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
    let target = target(
        &at,
        table.name_prefix,
        table.name,
        table.column,
        table.data_type,
    )?;
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
    let placement_given = table.placement.is_some();
    let placement = placement(&at, table.placement, shard_count, count, &table.database)?;
    let mappings = table
        .mapping
        .into_iter()
        .enumerate()
        .map(|(j, m)| Mapping::of(at(&format!("mapping[{j}]")), m))
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
        placement_given,
        mappings,
    })
}

/// What an entry keys on: a column (of a table, or of every table), or a
/// table family's names.
fn target(
    at: &impl Fn(&str) -> String,
    name_prefix: Option<String>,
    name: Option<String>,
    column: Option<String>,
    data_type: DataType,
) -> Result<Target, ConfigError> {
    Ok(match (name_prefix, name, column) {
        (Some(_), Some(_), _) => {
            return fail(
                at("name_prefix"),
                "cannot be combined with `name`: an entry is one table (or column) or one table family".to_owned(),
            );
        }
        // A family's key is in its tables' names; a `column` is allowed as
        // documentation and not used for routing.
        (Some(prefix), None, _) => {
            if !is_integer(data_type) {
                return fail(
                    at("data_type"),
                    format!(
                        "a table family (name_prefix) is keyed by the number in its table names: data_type must be bigint, integer or smallint, not {}",
                        type_name(data_type)
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
    })
}

/// The database of each of `shard_count` logical shards: as written, or
/// `s % count`.
fn placement(
    at: &impl Fn(&str) -> String,
    placement: Option<Vec<usize>>,
    shard_count: usize,
    count: usize,
    database: &str,
) -> Result<Vec<usize>, ConfigError> {
    Ok(match placement {
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
                        database,
                        count - 1
                    ),
                );
            }
            placement
        }
    })
}
