//! PgDog's documented keys that pgshard accepts without implementing them:
//! taken out of the parsed TOML before the strict (`deny_unknown_fields`)
//! model reads the rest, each with a [`Warning`] naming it, so a PgDog
//! config loads unchanged and nothing is ignored silently. A key whose value
//! is what pgshard does anyway (`prepared_statements = "extended"`) goes
//! without a warning. Values pgshard does not have are replaced by the
//! nearest it has, also with a warning (`pooler_mode = "statement"`).
//!
//! The lists follow PgDog's configuration reference (`general`,
//! `databases`, `users`, and the sections `[tcp]`, `[memory]`, `[otel]`,
//! `[control]`, `[[mirroring]]`, `[[plugins]]`, `[rewrite]`,
//! `[[sharded_schemas]]`). A key pgshard implements must not be listed here
//! (a test checks that none of these is a model field).

use toml::{Table, Value};

use super::Warning;

/// A value that means pgshard's own behaviour: accepted without a warning.
#[derive(Debug, Clone, Copy)]
pub(super) enum Same {
    Str(&'static str),
    Bool(bool),
    Int(i64),
}

impl Same {
    fn matches(self, value: &Value) -> bool {
        match (self, value) {
            (Same::Str(same), Value::String(value)) => same == value,
            (Same::Bool(same), Value::Boolean(value)) => same == *value,
            (Same::Int(same), Value::Integer(value)) => same == *value,
            _ => false,
        }
    }
}

/// `[general]` keys accepted with a warning.
pub(super) const GENERAL: &[(&str, Option<Same>)] = &[
    ("tls_client_ca_certificate", None),
    // pgshard connects to servers without TLS.
    ("tls_verify", Some(Same::Str("none"))),
    ("tls_server_ca_certificate", None),
    ("connection_recovery", None),
    ("client_connection_recovery", None),
    ("rollback_timeout", None),
    ("ban_replica_lag", None),
    ("ban_replica_lag_bytes", None),
    ("shutdown_termination_timeout", None),
    ("connect_attempts", Some(Same::Int(1))),
    ("connect_attempt_delay", None),
    ("client_idle_timeout", None),
    ("client_idle_in_transaction_timeout", None),
    ("server_lifetime_jitter", Some(Same::Int(0))),
    // Transactions are writes, standalone SELECTs reads: what pgshard does.
    ("read_write_strategy", Some(Same::Str("conservative"))),
    ("healthcheck_port", None),
    ("prepared_statements", Some(Same::Str("extended"))),
    ("mirror_queue", None),
    ("mirror_exposure", None),
    ("dry_run", Some(Same::Bool(false))),
    ("expanded_explain", None),
    ("two_phase_commit_wal_fsync_interval", None),
    ("two_phase_commit_wal_checkpoint_interval", None),
    ("query_parser_enabled", None),
    ("query_parser", Some(Same::Str("auto"))),
    ("regex_parser_limit", None),
    ("system_catalogs", None),
    ("omnisharded_sticky", None),
    ("reload_schema_on_ddl", None),
    ("load_schema", None),
    ("log_level", None),
    ("log_connections", None),
    ("log_disconnections", None),
    ("log_dedup_window", None),
    ("log_dedup_threshold", None),
    ("stats_period", None),
    ("dns_ttl", None),
    ("broadcast_address", None),
    ("broadcast_port", None),
    ("query_log", None),
];

/// `[[databases]]` keys accepted with a warning.
pub(super) const DATABASE: &[(&str, Option<Same>)] = &[
    ("statement_timeout", None),
    ("lock_timeout", None),
    ("idle_timeout", None),
    ("read_only", Some(Same::Bool(false))),
    ("lb_weight", None),
    ("server_lifetime", None),
];

/// `[[users]]` keys accepted with a warning.
pub(super) const USER: &[(&str, Option<Same>)] = &[
    ("statement_timeout", None),
    ("lock_timeout", None),
    ("replication_mode", Some(Same::Bool(false))),
    ("idle_timeout", None),
    ("two_phase_commit", None),
    ("two_phase_commit_auto", None),
];

/// Whole sections of `pgdog.toml` accepted with a warning.
pub(super) const SECTIONS: &[&str] = &[
    "tcp",
    "memory",
    "otel",
    "control",
    "mirroring",
    "plugins",
    "sharded_schemas",
];

/// Values pgshard replaces: (key, PgDog's value, pgshard's, why).
const REPLACED: &[(&str, &str, &str, &str)] = &[
    (
        "pooler_mode",
        "statement",
        "transaction",
        "statement mode is not supported yet",
    ),
    (
        "load_balancing_strategy",
        "weighted_round_robin",
        "round_robin",
        "weights (lb_weight) are not supported yet",
    ),
];

/// Take the accepted keys out of `file`'s table, warning about each.
pub(super) fn accept(file: &'static str, table: &mut Table, warnings: &mut Vec<Warning>) {
    let mut warn = |path: String, message: String| {
        warnings.push(Warning {
            file,
            path,
            message,
        })
    };
    if file == "users.toml" {
        each_entry(table, "users", USER, &mut warn);
        return;
    }
    if let Some(Value::Table(general)) = table.get_mut("general") {
        strip(general, "general", GENERAL, &mut warn);
        // Read into the model, but not used by shard moves yet.
        for key in super::resharding::KEYS {
            if let Some(message) = super::resharding::not_yet(key) {
                if general.contains_key(key) {
                    warn(format!("general.{key}"), message.to_owned());
                }
            }
        }
    }
    each_entry(table, "databases", DATABASE, &mut warn);
    for section in SECTIONS {
        if table.remove(*section).is_some() {
            warn(
                (*section).to_owned(),
                "section accepted, not supported yet (ignored)".to_owned(),
            );
        }
    }
}

/// Every entry of the array of tables `name`.
fn each_entry(
    table: &mut Table,
    name: &str,
    keys: &[(&str, Option<Same>)],
    warn: &mut impl FnMut(String, String),
) {
    if let Some(Value::Array(entries)) = table.get_mut(name) {
        for (i, entry) in entries.iter_mut().enumerate() {
            if let Value::Table(entry) = entry {
                strip(entry, &format!("{name}[{i}]"), keys, warn);
            }
        }
    }
}

/// The keys of one table (`at` is its path).
fn strip(
    table: &mut Table,
    at: &str,
    keys: &[(&str, Option<Same>)],
    warn: &mut impl FnMut(String, String),
) {
    for (key, same) in keys {
        let Some(value) = table.remove(*key) else {
            continue;
        };
        if !same.is_some_and(|same| same.matches(&value)) {
            warn(
                format!("{at}.{key}"),
                "accepted, not supported yet (ignored)".to_owned(),
            );
        }
    }
    for (key, theirs, ours, why) in REPLACED {
        if table.get(*key).and_then(Value::as_str) == Some(*theirs) {
            table.insert((*key).to_owned(), Value::String((*ours).to_owned()));
            warn(
                format!("{at}.{key}"),
                format!("{theirs:?} is accepted as {ours:?}: {why}"),
            );
        }
    }
}
