//! `[general]`'s keys for finishing cross-shard queries on a Postgres
//! (issue 34): whether to (`cross_shard_finish`), on which database
//! (`cross_shard_coordinator`), and the bounds (`cross_shard_gather_limit`,
//! `cross_shard_merge_memory`), with their checks.
//!
//! `cross_shard_finish = "coordinator"` is the default: such queries are
//! finished on the coordinator in both protocols, in transaction blocks and
//! out (docs/cross-shard-queries.md lists what stays refused); `"refuse"`
//! keeps the streaming path alone and refuses the rest with 0A000 (as PgDog
//! does). `cross_shard_merge_memory` bounds the groups a streaming merge
//! holds for a final sort (the proxy's `execute/merge/rows/sorted.rs`).
//! docs/operations.md says so too.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{invalid, Cluster, ConfigError, General};

/// What pgshard does with a cross-shard SELECT the streaming merge cannot
/// answer (`cross_shard_finish`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CrossShardFinish {
    /// Gather the rows it needs from the shards and run the rest of the
    /// query on the coordinator database. The default.
    #[default]
    Coordinator,
    /// Refuse it with 0A000: only what the streaming merge answers runs
    /// across shards.
    Refuse,
}

impl CrossShardFinish {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            CrossShardFinish::Coordinator => "coordinator",
            CrossShardFinish::Refuse => "refuse",
        }
    }
}

/// Default `cross_shard_gather_limit.rows`.
pub const DEFAULT_GATHER_ROWS: u64 = 1_000_000;
/// Default `cross_shard_gather_limit.bytes`: 256 MiB.
pub const DEFAULT_GATHER_BYTES: u64 = 256 << 20;
/// Default `cross_shard_merge_memory`: 64 MiB.
pub const DEFAULT_MERGE_MEMORY: u64 = 64 << 20;
/// Smallest allowed `cross_shard_merge_memory`: 1 MiB, a few thousand
/// ordinary groups; below it nearly every grouping would spill.
pub const MIN_MERGE_MEMORY: u64 = 1 << 20;

/// `cross_shard_gather_limit = { rows = ..., bytes = ... }`: the most rows
/// and bytes (DataRow bodies) one statement may gather from the shards to
/// finish on the coordinator; past either, the statement fails with 54000.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatherLimit {
    pub rows: u64,
    pub bytes: u64,
}

impl Default for GatherLimit {
    fn default() -> Self {
        GatherLimit {
            rows: DEFAULT_GATHER_ROWS,
            bytes: DEFAULT_GATHER_BYTES,
        }
    }
}

/// The keys on their own.
pub(super) fn check(general: &General) -> Result<(), ConfigError> {
    let fail =
        |key: &str, message: String| Err(invalid("pgdog.toml", format!("general.{key}"), message));
    let limit = general.cross_shard_gather_limit;
    if limit.rows == 0 {
        return fail(
            "cross_shard_gather_limit.rows",
            "must be at least 1: 0 would refuse every query finished on the coordinator \
             (use cross_shard_finish = \"refuse\" for that)"
                .to_owned(),
        );
    }
    if limit.bytes == 0 {
        return fail(
            "cross_shard_gather_limit.bytes",
            "must be at least 1: 0 would refuse every query finished on the coordinator \
             (use cross_shard_finish = \"refuse\" for that)"
                .to_owned(),
        );
    }
    if general.cross_shard_merge_memory < MIN_MERGE_MEMORY {
        return fail(
            "cross_shard_merge_memory",
            format!(
                "{} bytes is too little: must be at least {MIN_MERGE_MEMORY} (1 MiB)",
                general.cross_shard_merge_memory
            ),
        );
    }
    Ok(())
}

/// `cross_shard_coordinator` against the clusters: a database number every
/// cluster of several databases has (a cluster of one never finishes a
/// query elsewhere).
pub(super) fn check_coordinator(
    general: &General,
    clusters: &BTreeMap<String, Cluster>,
) -> Result<(), ConfigError> {
    let coordinator = general.cross_shard_coordinator;
    let short = clusters
        .values()
        .find(|c| c.shards.len() > 1 && coordinator >= c.shards.len());
    match short {
        Some(cluster) => Err(invalid(
            "pgdog.toml",
            "general.cross_shard_coordinator".to_owned(),
            format!(
                "database {coordinator} does not exist in cluster {:?}, whose shards are \
                 0..={}: name a shard number every sharded cluster has (default 0)",
                cluster.name,
                cluster.shards.len() - 1
            ),
        )),
        None => Ok(()),
    }
}
