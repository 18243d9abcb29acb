//! What RELOAD may not change under running traffic: the logical shards'
//! databases of an entry that relies on the default placement, when the
//! cluster's number of databases changes. By default logical shard `s` is
//! on database `s % databases` (and `shard_count` is the number of
//! databases), so adding a `[[databases]]` entry would send keys to
//! databases that do not hold their rows. The refusal prints the
//! `shard_count` and `placement` that keep the rows where they are.

use super::{invalid, Config, ConfigError};
use crate::sharding::{KeySpace, Sharding};

/// A `[[sharded_tables]]` entry that gives no `placement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultPlacement {
    /// Its index in `sharded_tables`.
    pub entry: usize,
    /// What it resolved to: `sharding.families[index]` when `family`, else
    /// `sharding.tables[index]`.
    pub family: bool,
    pub index: usize,
}

impl Config {
    /// Whether `next` may replace this running config (RELOAD): no entry
    /// that relies on the default placement may have its logical shards'
    /// databases changed by a change in its cluster's number of databases.
    pub fn check_reload(&self, next: &Config) -> Result<(), ConfigError> {
        for (name, cluster) in &next.clusters {
            let Some(running) = self.clusters.get(name) else {
                continue;
            };
            let (was, now) = (running.shards.len(), cluster.shards.len());
            if was == now {
                continue;
            }
            for default in &cluster.default_placement {
                let Some((new, old)) = same_entry(default, &cluster.sharding, &running.sharding)
                else {
                    continue; // A new entry: no rows were placed by it.
                };
                if new.group() == old.group() && new.placement == old.placement {
                    continue;
                }
                let placement: Vec<String> = old.placement.iter().map(usize::to_string).collect();
                return Err(invalid(
                    "pgdog.toml",
                    format!("sharded_tables[{}].placement", default.entry),
                    format!(
                        "cluster {name:?} goes from {was} to {now} databases, and this entry \
                         gives no `placement`: its logical shards would move to other databases \
                         (shard s to s % {now}, with shard_count {}) without their rows. Write \
                         the running layout into the entry to keep them where they are: \
                         `shard_count = {}` and `placement = [{}]`. The running configuration is kept",
                        new.placement.len(),
                        old.placement.len(),
                        placement.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The key spaces of `default`'s table (or family) in the next and the
/// running config, if the running one has it.
fn same_entry<'a>(
    default: &DefaultPlacement,
    next: &'a Sharding,
    running: &'a Sharding,
) -> Option<(&'a KeySpace, &'a KeySpace)> {
    if default.family {
        let new = next.families.get(default.index)?;
        let old = running
            .families
            .iter()
            .find(|f| f.prefix == new.prefix && f.schema == new.schema)?;
        Some((&new.keys, &old.keys))
    } else {
        let new = next.tables.get(default.index)?;
        let old = running
            .tables
            .iter()
            .find(|t| t.name == new.name && t.schema == new.schema && t.column == new.column)?;
        Some((&new.keys, &old.keys))
    }
}

#[cfg(test)]
mod tests;
