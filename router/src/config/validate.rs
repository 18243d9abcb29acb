//! The rules a parsed config must pass, each failing with the key path to fix.
//! (Shard numbering is checked where clusters are built, in `database.rs`.)

use std::collections::BTreeMap;

use super::general::{MIN_MAX_MESSAGE_SIZE, MIN_QUERY_CACHE_MAX_BYTES};
use super::pool_settings::pool_sizes;
use super::{invalid, Admin, Cluster, ConfigError, Database, General, User};

const PGDOG: &str = "pgdog.toml";
const USERS: &str = "users.toml";

/// The checks' intervals and timeouts, none of which may be 0.
fn checks(general: &General) -> Result<(), ConfigError> {
    for (key, ms, why) in [
        (
            "healthcheck_timeout",
            general.healthcheck_timeout_ms,
            ": 0 would fail every check",
        ),
        ("lsn_check_interval", general.lsn_check_interval_ms, ""),
        (
            "lsn_check_timeout",
            general.lsn_check_timeout_ms,
            ": 0 would fail every check",
        ),
    ] {
        if ms == 0 {
            let message = format!("must be at least 1 (ms){why}");
            return Err(invalid(PGDOG, format!("general.{key}"), message));
        }
    }
    Ok(())
}

/// `[general]` on its own.
pub(super) fn general(general: &General) -> Result<(), ConfigError> {
    let fail = |key: &str, message: String| Err(invalid(PGDOG, format!("general.{key}"), message));
    if general.default_pool_size == 0 {
        return fail("default_pool_size", "must be at least 1".to_owned());
    }
    if general.min_pool_size > general.default_pool_size {
        return fail(
            "min_pool_size",
            format!(
                "{} is larger than default_pool_size ({})",
                general.min_pool_size, general.default_pool_size
            ),
        );
    }
    if general.connect_timeout_ms == 0 {
        return fail(
            "connect_timeout",
            "must be at least 1 (ms): 0 would fail every connection".to_owned(),
        );
    }
    if general.max_message_size < MIN_MAX_MESSAGE_SIZE {
        return fail(
            "max_message_size",
            format!(
                "must be at least {MIN_MAX_MESSAGE_SIZE} bytes (Postgres's largest startup packet)"
            ),
        );
    }
    if general.prepared_statements_limit == 0 {
        return fail("prepared_statements_limit", "must be at least 1".to_owned());
    }
    checks(general)?;
    if general.query_cache_limit == 0 {
        return fail("query_cache_limit", "must be at least 1".to_owned());
    }
    if general.query_cache_max_bytes < MIN_QUERY_CACHE_MAX_BYTES {
        return fail(
            "query_cache_max_bytes",
            format!("must be at least {MIN_QUERY_CACHE_MAX_BYTES} bytes"),
        );
    }
    unique_ids(general)?;
    if general.log_min_duration_statement < -1 {
        return fail(
            "log_min_duration_statement",
            "must be -1 (off), 0 (every statement) or a number of milliseconds".to_owned(),
        );
    }
    metric_namespace(general)?;
    if let Err((key, error)) = super::unix_socket::check(general) {
        return fail(key, error.to_string());
    }
    tls(general)
}

/// The client TLS keys: both or neither, and what needs them.
fn tls(general: &General) -> Result<(), ConfigError> {
    let fail = |key: &str, message: String| Err(invalid(PGDOG, format!("general.{key}"), message));
    if general.passthrough_auth == super::PassthroughAuth::Enabled
        && general.tls_certificate.is_none()
    {
        return fail(
            "passthrough_auth",
            "\"enabled\" needs client TLS (tls_certificate and tls_private_key): \
             passthrough asks clients for their password in cleartext; configure TLS, \
             or set \"enabled_plain\" to take passwords on unencrypted connections too"
                .to_owned(),
        );
    }
    if general.tls_client_required && general.tls_certificate.is_none() {
        return fail(
            "tls_client_required",
            "needs client TLS (tls_certificate and tls_private_key): without it no \
             client on TCP could log in"
                .to_owned(),
        );
    }
    match (&general.tls_certificate, &general.tls_private_key) {
        (Some(_), None) => fail(
            "tls_private_key",
            "missing: tls_certificate is set, and TLS needs both".to_owned(),
        ),
        (None, Some(_)) => fail(
            "tls_private_key",
            "set without tls_certificate: TLS needs both".to_owned(),
        ),
        _ => Ok(()),
    }
}

/// `openmetrics_namespace`: a prefix of metric names.
fn metric_namespace(general: &General) -> Result<(), ConfigError> {
    let Some(namespace) = &general.openmetrics_namespace else {
        return Ok(());
    };
    let mut chars = namespace.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        return Ok(());
    }
    Err(invalid(
        PGDOG,
        "general.openmetrics_namespace".to_owned(),
        format!("{namespace:?} is not a metric name prefix (letters, digits and _, not starting with a digit)"),
    ))
}

/// `unique_id_function`, `unique_id_min` and `node_id` together.
fn unique_ids(general: &General) -> Result<(), ConfigError> {
    let fail = |key: &str, message: String| Err(invalid(PGDOG, format!("general.{key}"), message));
    let function = general.unique_id_function;
    if let Some(node) = general.node_id.filter(|&node| node > function.max_node()) {
        return fail(
            "node_id",
            format!(
                "{node} is above {}, the largest node id of unique_id_function = \"{}\"",
                function.max_node(),
                function.as_str()
            ),
        );
    }
    if general.unique_id_min >= function.ceiling() {
        return fail(
            "unique_id_min",
            format!(
                "must be below {}, the largest id of unique_id_function = \"{}\"",
                function.ceiling(),
                function.as_str()
            ),
        );
    }
    Ok(())
}

/// Pool sizes of each `[[databases]]` entry, against `[general]`'s defaults.
pub(super) fn databases(general: &General, databases: &[Database]) -> Result<(), ConfigError> {
    for (i, db) in databases.iter().enumerate() {
        if db.pool_size == Some(0) {
            return Err(invalid(
                PGDOG,
                format!("databases[{i}].pool_size"),
                "must be at least 1".to_owned(),
            ));
        }
        let (pool_size, min_pool_size) = pool_sizes(general, db, None);
        if min_pool_size > pool_size {
            // Blame the key this entry sets: its min, or a pool_size below the
            // inherited general.min_pool_size.
            let key = if db.min_pool_size.is_some() {
                "min_pool_size"
            } else {
                "pool_size"
            };
            return Err(invalid(
                PGDOG,
                format!("databases[{i}].{key}"),
                format!("min_pool_size ({min_pool_size}) is larger than pool_size ({pool_size})"),
            ));
        }
    }
    Ok(())
}

/// `[admin]` against the clusters.
pub(super) fn admin(
    admin: &Admin,
    clusters: &BTreeMap<String, Cluster>,
) -> Result<(), ConfigError> {
    if clusters.contains_key(&admin.name) {
        return Err(invalid(
            PGDOG,
            "admin.name".to_owned(),
            format!(
                "{:?} is also a [[databases]] name; the admin console needs a name of its own",
                admin.name
            ),
        ));
    }
    Ok(())
}

/// Each `[[users]]` entry against the clusters and `[general]`.
pub(super) fn users(
    general: &General,
    clusters: &BTreeMap<String, Cluster>,
    users: &[User],
) -> Result<(), ConfigError> {
    let mut seen: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, user) in users.iter().enumerate() {
        let fail =
            |key: &str, message: String| Err(invalid(USERS, format!("users[{i}].{key}"), message));
        let Some(cluster) = clusters.get(&user.database) else {
            return fail(
                "database",
                format!("no [[databases]] entry is named {:?}", user.database),
            );
        };
        if let Some(first) = seen.insert((&user.name, &user.database), i) {
            return fail(
                "name",
                format!(
                    "user {:?} of database {:?} is already listed (users[{first}])",
                    user.name, user.database
                ),
            );
        }
        let auth_type = user.auth_type.unwrap_or(general.auth_type);
        if auth_type.needs_password() && user.password.as_deref().is_none_or(str::is_empty) {
            return fail(
                "password",
                format!(
                    "required: auth_type is {:?} (set a password, or auth_type = \"trust\")",
                    auth_type.as_str()
                ),
            );
        }
        if user.pool_size == Some(0) {
            return fail("pool_size", "must be at least 1".to_owned());
        }
        for db in cluster
            .shards
            .iter()
            .chain(cluster.replicas.iter().flatten())
        {
            let (pool_size, min_pool_size) = pool_sizes(general, db, Some(user));
            if min_pool_size > pool_size {
                // The database entries passed on their own, so the user's
                // override is what broke it.
                let key = if user.min_pool_size.is_some() {
                    "min_pool_size"
                } else {
                    "pool_size"
                };
                return fail(
                    key,
                    format!(
                        "min_pool_size ({min_pool_size}) is larger than pool_size ({pool_size}) on shard {} of {:?}",
                        db.shard, cluster.name
                    ),
                );
            }
        }
    }
    Ok(())
}
