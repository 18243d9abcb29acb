//! Property tests of config loading (issue 35): `pgdog.toml` and
//! `users.toml` texts edited line by line (every key the example
//! documents, with hostile values) or byte by byte load into a config or
//! an error naming the file, never a panic; a config that loads reloads
//! over itself.

use proptest::prelude::*;

use super::*;
use crate::fuzz::{config, mutated};

const EXAMPLE: &str = include_str!("../../../pgdog.toml.example");
const USERS_EXAMPLE: &str = include_str!("../../../users.toml.example");

/// A config using most sections: two shards with a replica, tables by
/// hash, list and range, a family, omnisharded tables, functions, admin
/// and rewrite.
const RICH: &str = r#"
[general]
port = 6432
query_timeout = 2000
two_phase_commit = true
cross_shard_gather_limit = { rows = 10, bytes = 1000 }
[[databases]]
name = "prod"
host = "127.0.0.1"
database_name = "shard_0"
shard = 0
[[databases]]
name = "prod"
host = "127.0.0.1"
database_name = "shard_0"
shard = 0
role = "replica"
[[databases]]
name = "prod"
host = "127.0.0.2"
port = 5433
shard = 1
pool_size = 3
[[sharded_tables]]
database = "prod"
name = "orders"
column = "tenant_id"
data_type = "bigint"
shard_count = 4
placement = [0, 1, 1, 0]
[[sharded_tables]]
database = "prod"
name = "accounts"
column = "region_id"
data_type = "integer"
shard_count = 2
[[sharded_tables.mapping]]
kind = "list"
values = [1, 2, 3]
shard = 0
[[sharded_tables.mapping]]
values = [4]
shard = 1
[[sharded_tables]]
database = "prod"
name = "years"
column = "year"
data_type = "integer"
shard_count = 2
[[sharded_tables.mapping]]
start = 2000
end = 2010
shard = 0
[[sharded_tables.mapping]]
start = 2010
shard = 1
[[sharded_tables]]
database = "prod"
column = "customer_id"
[[sharded_tables]]
database = "prod"
name = "sessions"
column = "id"
data_type = "uuid"
hasher = "citus"
[[omnisharded_tables]]
database = "prod"
tables = ["countries", "ref.currencies"]
[[sharded_functions]]
database = "prod"
name = "order_total"
argument = 1
table = "orders"
[admin]
name = "admin"
user = "admin"
password = "admin"
[rewrite]
enabled = true
split_inserts = "rewrite"
shard_key = "rewrite"
"#;

const USERS: &str = r#"
[[users]]
name = "app"
database = "prod"
password = "pw"
pool_size = 5
[[users]]
name = "ro"
database = "prod"
auth_type = "trust"
server_user = "postgres"
"#;

/// Values that break loaders which trust them.
const HOSTILE: [&str; 22] = [
    "-1",
    "0",
    "1",
    "65536",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "nan",
    "-inf",
    "\"\"",
    "\"\\u0000\"",
    "\"x\"",
    "\"0777\"",
    "true",
    "[]",
    "[0, 0]",
    "[-1]",
    "[9223372036854775807]",
    "{}",
    "{ rows = -1, bytes = 0 }",
    "\"2000-01-01\"",
];

/// Every `key = value` line of the examples, commented out or not.
fn example_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for line in EXAMPLE.lines().chain(USERS_EXAMPLE.lines()) {
        let line = line.trim_start_matches('#').trim();
        let line = line.split("  #").next().unwrap_or(line).trim();
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        if !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            lines.push(format!("{key} = {value}"));
        }
    }
    lines
}

/// One edit of a config text, line by line.
#[derive(Debug, Clone)]
enum Edit {
    /// Give line `.0` (if it sets a key) the value `.1`.
    Value(usize, &'static str),
    /// Insert a documented `key = value` line (`.1`th) before line `.0`.
    Insert(usize, usize),
    Delete(usize),
    Duplicate(usize),
    /// Insert a section header before line `.0`.
    Header(usize, &'static str),
}

const HEADERS: [&str; 9] = [
    "[general]",
    "[[databases]]",
    "[[sharded_tables]]",
    "[[sharded_tables.mapping]]",
    "[[sharded_mappings]]",
    "[[omnisharded_tables]]",
    "[[sharded_functions]]",
    "[admin]",
    "[[users]]",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), prop::sample::select(&HOSTILE[..])).prop_map(|(l, v)| Edit::Value(l, v)),
        (any::<usize>(), any::<usize>()).prop_map(|(l, k)| Edit::Insert(l, k)),
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Duplicate),
        (any::<usize>(), prop::sample::select(&HEADERS[..])).prop_map(|(l, h)| Edit::Header(l, h)),
    ]
}

fn apply(text: &str, edits: &[Edit], documented: &[String]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for edit in edits {
        let n = lines.len().max(1);
        match edit {
            Edit::Value(l, value) => {
                if let Some((key, _)) = lines.get(l % n).and_then(|s| s.split_once(" = ")) {
                    lines[l % n] = format!("{key} = {value}");
                }
            }
            Edit::Insert(l, k) => {
                let line = documented[k % documented.len()].clone();
                lines.insert((l % n).min(lines.len()), line);
            }
            Edit::Delete(l) if !lines.is_empty() => {
                lines.remove(l % n);
            }
            Edit::Duplicate(l) if !lines.is_empty() => {
                let line = lines[l % n].clone();
                lines.insert(l % n, line);
            }
            Edit::Header(l, header) => lines.insert((l % n).min(lines.len()), (*header).to_owned()),
            _ => {}
        }
    }
    lines.join("\n")
}

/// Load, and when that works, reload over itself (what RELOAD does
/// with an unchanged file).
fn load(pgdog: &str, users: &str) -> Result<(), TestCaseError> {
    match Config::from_toml(pgdog, users) {
        Ok(config) => {
            let reload = config.check_reload(&config);
            prop_assert!(reload.is_ok(), "reloading itself: {reload:?}");
        }
        Err(error) => {
            let text = error.to_string();
            prop_assert!(
                text.starts_with("pgdog.toml") || text.starts_with("users.toml"),
                "an error that names no file: {text}"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// Documented keys, hostile values, sections moved: loads or errs.
    #[test]
    fn edited_configs_load_or_err(
        base in prop::sample::select(vec![RICH, EXAMPLE]),
        edits in prop::collection::vec(edit(), 1..6),
        user_edits in prop::collection::vec(edit(), 0..3),
    ) {
        let documented = example_lines();
        let pgdog = apply(base, &edits, &documented);
        let users = apply(USERS, &user_edits, &documented);
        load(&pgdog, &users)?;
    }

    /// Byte-level damage to either file.
    #[test]
    fn mutated_configs_load_or_err(
        pgdog in mutated(Just(RICH.as_bytes().to_vec()), 6),
        users in mutated(Just(USERS.as_bytes().to_vec()), 2),
    ) {
        load(&String::from_utf8_lossy(&pgdog), &String::from_utf8_lossy(&users))?;
    }
}

#[test]
fn the_fixtures_load() {
    Config::from_toml(RICH, USERS).unwrap();
    assert!(example_lines().len() > 80, "{:?}", example_lines());
}
