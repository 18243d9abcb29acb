//! `[[sharded_functions]]`, pgshard's own section (after Citus's
//! distributed functions): a function that reads or writes sharded tables
//! may be called on the database of one of its arguments, read as a key of
//! a `[[sharded_tables]]` table. The operator vouches that the function
//! touches only that key's rows (and omnisharded tables' rows it reads);
//! calls without the key, and every other function that reaches sharded
//! tables, are refused (router rule 15).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use super::sharded_tables::{split_name, split_table};
use super::{invalid, Cluster, ConfigError};
use crate::route::tables::schema_matches;
use crate::sharding::ShardedFunction;

/// The most arguments a Postgres function takes (`FUNC_MAX_ARGS`).
const MAX_ARGUMENTS: usize = 100;

/// One `[[sharded_functions]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ShardedFunctionEntry {
    /// The cluster (`[[databases]]` name).
    database: String,
    /// `"name"` (any schema) or `"schema.name"`.
    name: String,
    /// Which argument holds the sharding key, from 1.
    argument: usize,
    /// The `[[sharded_tables]]` table whose key that argument is: its type
    /// and key space (the function's rows co-locate with that table's).
    table: String,
}

/// Check the entries against the clusters' resolved sharding and add each
/// to its cluster's.
pub(super) fn resolve(
    clusters: &mut BTreeMap<String, Cluster>,
    entries: Vec<ShardedFunctionEntry>,
) -> Result<(), ConfigError> {
    for (i, entry) in entries.into_iter().enumerate() {
        let at = |key: &str| format!("sharded_functions[{i}].{key}");
        let fail = |key: &str, message: String| Err(invalid("pgdog.toml", at(key), message));
        let Some(cluster) = clusters.get_mut(&entry.database) else {
            return fail(
                "database",
                format!("no [[databases]] entry is named {:?}", entry.database),
            );
        };
        let (schema, name) = match split_name(&entry.name, "function") {
            Ok(parts) => parts,
            Err(err) => return fail("name", err.to_string()),
        };
        if entry.argument == 0 || entry.argument > MAX_ARGUMENTS {
            return fail(
                "argument",
                format!(
                    "{} is not an argument position: count from 1 (at most {MAX_ARGUMENTS})",
                    entry.argument
                ),
            );
        }
        let (table_schema, table) = match split_table(&entry.table) {
            Ok(parts) => parts,
            Err(err) => return fail("table", err.to_string()),
        };
        let found = cluster.sharding.tables.iter().position(|t| {
            t.name.as_deref() == Some(table.as_str())
                && schema_matches(t.schema.as_deref(), table_schema.as_deref())
        });
        let Some(table_entry) = found else {
            return fail(
                "table",
                format!(
                    "no [[sharded_tables]] entry of {:?} names table {:?}",
                    entry.database, entry.table
                ),
            );
        };
        let mut sharding = (*cluster.sharding).clone();
        sharding.functions.push(ShardedFunction {
            schema,
            name,
            argument: entry.argument - 1,
            entry: table_entry,
        });
        cluster.sharding = Arc::new(sharding);
    }
    Ok(())
}
