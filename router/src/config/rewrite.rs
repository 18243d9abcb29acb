//! `[rewrite]`: PgDog's switches for the statements a sharding proxy
//! rewrites. pgshard splits multi-row INSERTs whose rows belong to several
//! shards (`split_inserts = "rewrite"`) and moves a row whose sharding key
//! an UPDATE changes to another shard (`shard_key = "rewrite"`); the
//! section's other values are accepted with a warning and behave as
//! `"error"` where PgDog would do something pgshard does not (yet), never
//! as a silent broadcast.
//!
//! Without the section pgshard's defaults apply: splitting on. With it,
//! PgDog's meaning: `enabled` is the master switch (PgDog's default, off,
//! applies when the key is absent).

use serde::{Deserialize, Serialize};

use super::Warning;

/// What to do with a statement the rewrite engine could rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Refuse it with an error that says why.
    #[default]
    Error,
    /// Rewrite it (split the INSERT, move the row).
    Rewrite,
    /// PgDog: forward it unchanged. pgshard refuses instead (a multi-row
    /// INSERT forwarded unchanged writes rows where their keys do not
    /// belong).
    Ignore,
}

/// The `[rewrite]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rewrite {
    #[serde(default)]
    pub enabled: bool,
    /// An UPDATE that changes a row's sharding key.
    #[serde(default)]
    pub shard_key: Policy,
    /// A multi-row INSERT whose rows belong to several shards.
    #[serde(default)]
    pub split_inserts: Policy,
    /// An INSERT without its BIGINT primary key.
    #[serde(default = "ignore")]
    pub primary_key: Policy,
}

fn ignore() -> Policy {
    Policy::Ignore
}

impl Default for Rewrite {
    /// No `[rewrite]` section: pgshard splits multi-row INSERTs.
    fn default() -> Rewrite {
        Rewrite {
            enabled: true,
            shard_key: Policy::Error,
            split_inserts: Policy::Rewrite,
            primary_key: Policy::Ignore,
        }
    }
}

impl Rewrite {
    /// Whether multi-row INSERTs across shards are split.
    pub fn splits_inserts(&self) -> bool {
        self.enabled && self.split_inserts == Policy::Rewrite
    }

    /// Whether an UPDATE that changes a row's sharding key moves the row
    /// to its new shard.
    pub fn moves_rows(&self) -> bool {
        self.enabled && self.shard_key == Policy::Rewrite
    }

    /// Warnings for the values pgshard does not do as PgDog would.
    pub(super) fn warnings(&self, warnings: &mut Vec<Warning>) {
        let mut warn = |key: &str, message: &str| {
            warnings.push(Warning::new(format!("rewrite.{key}"), message.to_owned()));
        };
        if self.split_inserts == Policy::Ignore {
            warn(
                "split_inserts",
                "\"ignore\" is treated as \"error\": forwarding a multi-row INSERT unchanged would write rows on shards their keys do not hash to",
            );
        }
        if self.shard_key == Policy::Ignore {
            warn(
                "shard_key",
                "\"ignore\" is treated as \"error\": forwarding an UPDATE of a sharding key unchanged would leave the row on a shard its new key does not hash to",
            );
        }
        if self.primary_key == Policy::Rewrite {
            warn(
                "primary_key",
                "accepted, not supported yet: INSERTs are not given a primary key (as with \"ignore\")",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(toml: &str) -> Rewrite {
        toml::from_str(toml).unwrap_or_else(|e| panic!("{toml}: {e}"))
    }

    #[test]
    fn pgdogs_defaults_inside_the_section_pgshards_without_it() {
        assert!(Rewrite::default().splits_inserts());
        // PgDog's defaults once the section is written: all off.
        assert!(!read("").splits_inserts());
        assert!(!read("split_inserts = \"rewrite\"").splits_inserts());
        assert!(read("enabled = true\nsplit_inserts = \"rewrite\"").splits_inserts());
        assert!(!read("enabled = true\nsplit_inserts = \"ignore\"").splits_inserts());
        assert_eq!(read("").primary_key, Policy::Ignore);
        assert!(toml::from_str::<Rewrite>("split_insert = \"rewrite\"").is_err());
        assert!(!Rewrite::default().moves_rows());
        assert!(!read("shard_key = \"rewrite\"").moves_rows());
        assert!(read("enabled = true\nshard_key = \"rewrite\"").moves_rows());
        assert!(!read("enabled = true\nshard_key = \"ignore\"").moves_rows());
    }

    #[test]
    fn values_pgshard_does_not_follow_are_warned_about() {
        let mut warnings = Vec::new();
        read("enabled = true\nshard_key = \"ignore\"\nsplit_inserts = \"ignore\"\nprimary_key = \"rewrite\"")
            .warnings(&mut warnings);
        let paths: Vec<&str> = warnings.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "rewrite.split_inserts",
                "rewrite.shard_key",
                "rewrite.primary_key"
            ]
        );
        let mut none = Vec::new();
        Rewrite::default().warnings(&mut none);
        read("enabled = true\nshard_key = \"rewrite\"").warnings(&mut none);
        assert!(none.is_empty());
    }
}
