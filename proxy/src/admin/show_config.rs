//! The admin console's `SHOW CONFIG`: every effective key of `[general]`
//! (read through the config's own serde names, so a new key is listed
//! without more code), then the sharding model of each cluster (one row per
//! sharded table, table family and omnisharded table) and the admin
//! console's name and user, as PgBouncer's `key`, `value`, `default`,
//! `changeable` rows.

use std::collections::HashMap;

use bytes::BytesMut;
use router::config::General;
use router::sharding::{KeySpace, ShardFunction, Sharding};

use super::Rows;
use crate::state::State;

/// Keys RELOAD cannot change: read once at start.
const FIXED: [&str; 7] = [
    "host",
    "port",
    "workers",
    "tls_certificate",
    "tls_private_key",
    "openmetrics_port",
    "log_format",
];

pub(super) fn show_config(state: &State, out: &mut BytesMut) {
    let config = state.config();
    let defaults: HashMap<String, String> =
        General::default().effective_keys().into_iter().collect();
    let mut rows = Rows::new(out, &["key", "value", "default", "changeable"]);
    for (key, value) in config.general.effective_keys() {
        let changeable = if FIXED.contains(&key.as_str()) {
            "no"
        } else {
            "yes"
        };
        let default = defaults.get(&key).cloned().unwrap_or_default();
        rows.row(&[key, value, default, changeable.to_owned()]);
    }
    let mut more = Vec::new();
    for (name, cluster) in &config.clusters {
        more.extend(sharding_rows(name, &cluster.sharding));
    }
    more.push(("admin.name".to_owned(), config.admin.name.clone()));
    more.push(("admin.user".to_owned(), config.admin.user.clone()));
    for (key, value) in more {
        rows.row(&[key, value, String::new(), "yes".to_owned()]);
    }
    rows.done("SHOW");
}

/// The rows of one cluster's sharding model: `sharded_tables.<cluster>.<table>`
/// (or `<schema>.<table>`, or `*` for every table with the column),
/// `table_families.<cluster>.<prefix>*`, `omnisharded_tables.<cluster>.<table>`.
fn sharding_rows(cluster: &str, sharding: &Sharding) -> Vec<(String, String)> {
    let qualified = |schema: &Option<String>, name: &str| match schema {
        Some(schema) => format!("{schema}.{name}"),
        None => name.to_owned(),
    };
    let mut rows = Vec::new();
    for table in &sharding.tables {
        let name = qualified(&table.schema, table.name.as_deref().unwrap_or("*"));
        rows.push((
            format!("sharded_tables.{cluster}.{name}"),
            format!("column={} {}", table.column, key_space(&table.keys)),
        ));
    }
    for family in &sharding.families {
        rows.push((
            format!(
                "table_families.{cluster}.{}*",
                qualified(&family.schema, &family.prefix)
            ),
            key_space(&family.keys),
        ));
    }
    for (schema, name) in &sharding.omnisharded {
        rows.push((
            format!("omnisharded_tables.{cluster}.{}", qualified(schema, name)),
            "every shard".to_owned(),
        ));
    }
    rows
}

/// A key space in words: type, function, and where logical shards live.
fn key_space(keys: &KeySpace) -> String {
    let function = match &keys.function {
        ShardFunction::Hash {
            hasher,
            shard_count,
        } => format!("hash={hasher:?} shards={shard_count}").to_lowercase(),
        ShardFunction::List(values) => format!("list ({} values)", values.len()),
        ShardFunction::Range(ranges) => format!("range ({} ranges)", ranges.len()),
    };
    let placement: Vec<String> = keys.placement.iter().map(usize::to_string).collect();
    format!(
        "data_type={} {function} placement=[{}]",
        format!("{:?}", keys.data_type).to_lowercase(),
        placement.join(",")
    )
}
