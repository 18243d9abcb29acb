//! `cutover_save_config`: after a switch, the placement in force written
//! into `pgdog.toml` as explicit `placement = [...]` lines of the moved
//! group's `[[sharded_tables]]` entries (their `shard_count` too, so that
//! adding a database later changes nothing), after copying the file to
//! `pgdog.bak.toml` next to it, as PgDog does. The file is written whole
//! (to a temporary file, then renamed): its comments are not kept; the
//! backup has them.

use std::path::{Path, PathBuf};

use router::sharding::{GroupFunction, GroupId, Hasher};
use toml::Value;

/// Why the file was not written.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error("{0} is not valid TOML any more: {1}")]
    Parse(String, toml::de::Error),
    #[error("cannot write TOML: {0}")]
    Write(#[from] toml::ser::Error),
    #[error("{path} has no [[sharded_tables]] entry of database {cluster} in group {group}")]
    NoEntry {
        path: String,
        cluster: String,
        group: String,
    },
}

/// The backup's path: `pgdog.bak.toml` next to `pgdog.toml`.
pub fn backup_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "pgdog".to_owned());
    path.with_file_name(format!("{stem}.bak.toml"))
}

/// Write `placement` for `group` of `cluster` into the file at `path`.
pub fn save(
    path: &Path,
    cluster: &str,
    group: GroupId,
    placement: &[usize],
) -> Result<(), SaveError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SaveError::Io(name.clone(), e))?;
    let written = with_placement(&text, cluster, group, placement).map_err(|e| match e {
        Edit::Parse(e) => SaveError::Parse(name.clone(), e),
        Edit::Write(e) => SaveError::Write(e),
        Edit::NoEntry => SaveError::NoEntry {
            path: name.clone(),
            cluster: cluster.to_owned(),
            group: group.to_string(),
        },
    })?;
    let backup = backup_path(path);
    std::fs::copy(path, &backup).map_err(|e| SaveError::Io(backup.display().to_string(), e))?;
    let temporary = path.with_extension("toml.tmp");
    std::fs::write(&temporary, written)
        .map_err(|e| SaveError::Io(temporary.display().to_string(), e))?;
    std::fs::rename(&temporary, path).map_err(|e| SaveError::Io(name, e))
}

enum Edit {
    Parse(toml::de::Error),
    Write(toml::ser::Error),
    NoEntry,
}

/// `text` with `placement` (and `shard_count`) set in the entries of
/// `group` of `cluster`.
fn with_placement(
    text: &str,
    cluster: &str,
    group: GroupId,
    placement: &[usize],
) -> Result<String, Edit> {
    let mut file: toml::Table = text.parse().map_err(Edit::Parse)?;
    let GroupFunction::Hash(hasher) = group.function else {
        return Err(Edit::NoEntry);
    };
    let mut found = false;
    if let Some(Value::Array(entries)) = file.get_mut("sharded_tables") {
        for entry in entries.iter_mut().filter_map(Value::as_table_mut) {
            if !in_group(entry, cluster, hasher, group.shard_count) {
                continue;
            }
            let count = i64::try_from(group.shard_count).unwrap_or(i64::MAX);
            entry.insert("shard_count".to_owned(), Value::Integer(count));
            let databases = placement
                .iter()
                .map(|&d| Value::Integer(i64::try_from(d).unwrap_or(i64::MAX)))
                .collect();
            entry.insert("placement".to_owned(), Value::Array(databases));
            found = true;
        }
    }
    if !found {
        return Err(Edit::NoEntry);
    }
    toml::to_string(&file).map_err(Edit::Write)
}

/// Whether `entry` is a hashed entry of `cluster` with `hasher` and
/// `shard_count` (or none written: the running group's count).
fn in_group(entry: &toml::Table, cluster: &str, hasher: Hasher, shard_count: usize) -> bool {
    let text = |key: &str| entry.get(key).and_then(Value::as_str);
    let hasher_name = match hasher {
        Hasher::Postgres => "postgres",
        Hasher::Citus => "citus",
    };
    text("database") == Some(cluster)
        && entry.get("mapping").is_none()
        && text("hasher").unwrap_or("postgres") == hasher_name
        && entry
            .get("shard_count")
            .and_then(Value::as_integer)
            .is_none_or(|n| usize::try_from(n).ok() == Some(shard_count))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUP: GroupId = GroupId {
        function: GroupFunction::Hash(Hasher::Postgres),
        shard_count: 4,
    };

    #[test]
    fn writes_the_placement() {
        let text = "[general]\nport = 6432\n\n[[sharded_tables]]\ndatabase = \"prod\"\n\
            name_prefix = \"events_p\"\nshard_count = 4\n\n[[sharded_tables]]\n\
            database = \"prod\"\nname = \"orders\"\ncolumn = \"id\"\nhasher = \"citus\"\n\
            shard_count = 4\n\n[[sharded_tables]]\ndatabase = \"other\"\nname = \"x\"\n";
        let written = with_placement(text, "prod", GROUP, &[0, 1, 2, 1])
            .unwrap_or_else(|_| panic!("no entry"));
        let file: toml::Table = written.parse().unwrap_or_else(|e| panic!("{e}"));
        let entries = file["sharded_tables"].as_array().map(Vec::as_slice);
        let placements: Vec<Option<String>> = entries
            .unwrap_or_default()
            .iter()
            .map(|e| e.get("placement").map(ToString::to_string))
            .collect();
        assert_eq!(
            placements,
            [Some("[0, 1, 2, 1]".to_owned()), None, None],
            "{written}"
        );
        assert_eq!(file["general"]["port"].as_integer(), Some(6432));
        assert!(with_placement(text, "nope", GROUP, &[0; 4]).is_err());
        assert!(with_placement("x = [", "prod", GROUP, &[0; 4]).is_err());
        assert_eq!(
            backup_path(Path::new("/etc/pgshard/pgdog.toml")),
            Path::new("/etc/pgshard/pgdog.bak.toml")
        );
    }
}
