//! PgDog compatibility: a config using every key of PgDog's configuration
//! reference loads, with a warning for each key pgshard does not implement;
//! replicas group under their shard's primary.

use std::time::Duration;

use super::compat::{DATABASE, GENERAL, SECTIONS, USER};
use super::*;

/// Every documented `pgdog.toml` key, with PgDog's example values.
const EVERY_KEY: &str = r#"
[general]
host = "0.0.0.0"
port = 6432
workers = 2
default_pool_size = 10
min_pool_size = 1
pooler_mode = "transaction"
tls_certificate = "/etc/pgdog/cert.pem"
tls_private_key = "/etc/pgdog/key.pem"
tls_client_required = true
tls_client_ca_certificate = "/etc/pgdog/ca.pem"
tls_verify = "prefer"
tls_server_ca_certificate = "/etc/pgdog/server-ca.pem"
healthcheck_interval = 30_000
idle_healthcheck_interval = 30_000
idle_healthcheck_delay = 5_000
healthcheck_timeout = 5_000
connection_recovery = "recover"
client_connection_recovery = "drop"
rollback_timeout = 5_000
ban_timeout = 300_000
ban_replica_lag = 10_000
ban_replica_lag_bytes = 1_000_000
shutdown_timeout = 60_000
shutdown_termination_timeout = 10_000
query_timeout = 1_000
connect_timeout = 5_000
connect_attempts = 3
connect_attempt_delay = 10
checkout_timeout = 5_000
idle_timeout = 60_000
client_idle_timeout = 60_000
client_idle_in_transaction_timeout = 60_000
client_login_timeout = 60_000
server_lifetime = 86400000
server_lifetime_jitter = 1_000
load_balancing_strategy = "round_robin"
read_write_strategy = "aggressive"
read_write_split = "exclude_primary"
healthcheck_port = 8080
openmetrics_port = 9090
openmetrics_namespace = "pgdog"
auth_type = "scram"
passthrough_auth = "enabled"
prepared_statements = "full"
prepared_statements_limit = 500
pub_sub_channel_size = 4098
mirror_queue = 128
mirror_exposure = 1.0
dry_run = true
cross_shard_disabled = false
expanded_explain = true
two_phase_commit = true
two_phase_commit_auto = true
two_phase_commit_wal_dir = "./pgdog_wal"
two_phase_commit_wal_segment_size = 16_777_216
two_phase_commit_wal_fsync_interval = 2
two_phase_commit_wal_checkpoint_interval = 60
query_cache_limit = 1_000
query_parser_enabled = true
query_parser = "on"
query_parser_engine = "pg_query_protobuf"
regex_parser_limit = 1_000
system_catalogs = "omnisharded_sticky"
omnisharded_sticky = false
resharding_copy_format = "binary"
resharding_parallel_copies = 1
resharding_copy_retry_max_attempts = 5
resharding_copy_retry_min_delay = 1_000
resharding_replication_retry_max_attempts = 5
resharding_replication_retry_min_delay = 1_000
reload_schema_on_ddl = true
load_schema = "auto"
cutover_traffic_stop_threshold = 1_000_000
cutover_save_config = false
cutover_replication_lag_threshold = 0
cutover_last_transaction_delay = 1_000
cutover_timeout = 30_000
cutover_timeout_action = "abort"
log_format = "json"
log_level = "info"
log_connections = true
log_disconnections = true
log_dedup_window = 0
log_dedup_threshold = 0
stats_period = 15_000
dns_ttl = 60_000
lsn_check_delay = 0
lsn_check_interval = 5_000
lsn_check_timeout = 5_000
unique_id_function = "standard"
unique_id_min = 0
broadcast_address = "0.0.0.0"
broadcast_port = 6433
query_log = "/var/log/pgdog/queries.log"

[[databases]]
name = "prod"
host = "10.0.0.1"
port = 5432
role = "primary"
database_name = "prod"
user = "pgdog"
password = "secret"
shard = 0
pool_size = 10
pooler_mode = "transaction"
min_pool_size = 1
statement_timeout = 30_000
lock_timeout = 5_000
idle_timeout = 60_000
read_only = false
lb_weight = 255
server_lifetime = 86400000

[[databases]]
name = "prod"
host = "10.0.0.2"
role = "replica"
shard = 0
read_only = true

[[databases]]
name = "failover"
host = "10.0.0.3"
role = "auto"
shard = 0

[[databases]]
name = "failover"
host = "10.0.0.4"
role = "auto"
shard = 0

[admin]
name = "admin"
user = "admin"
password = "hunter2"

[[sharded_tables]]
database = "prod"
schema = "public"
name = "users"
column = "id"
data_type = "bigint"
hasher = "postgres"

[[sharded_tables.mapping]]
values = [1, 2, 3]
shard = 0

[[omnisharded_tables]]
database = "prod"
sticky = true
tables = ["settings", "cities"]

[tcp]
keepalive = true
time = 60_000
interval = 60_000
retries = 3
user_timeout = 5_000

[memory]
net_buffer = 4096
message_buffer = 4096
stack_size = 2097152

[otel]
endpoint = "https://otlp.example/v1/metrics"
datadog_api_key = "x"
namespace = "pgdog"
push_interval = 10000
[otel.headers]
X-Custom = "foo"

[control]
endpoint = "http://localhost:8080"
token = "t"

[[mirroring]]
source_db = "prod"
destination_db = "staging"

[[plugins]]
name = "pgdog_routing"

[rewrite]
enabled = false

[[sharded_schemas]]
database = "prod"
name = "customer_a"
shard = 0
"#;

/// Every documented `users.toml` key.
const EVERY_USER_KEY: &str = r#"
[[users]]
name = "alice"
database = "prod"
password = "hunter2"
pool_size = 10
min_pool_size = 1
pooler_mode = "session"
server_user = "alice_server"
server_password = "s3cret"
statement_timeout = 30_000
lock_timeout = 5_000
replication_mode = false
idle_timeout = 60_000
two_phase_commit = true
two_phase_commit_auto = true
"#;

fn paths(config: &Config) -> Vec<String> {
    config
        .warnings
        .iter()
        .map(|w| format!("{}: {}", w.file, w.path))
        .collect()
}

#[test]
fn every_documented_key_loads_with_warnings_for_the_unsupported() {
    let config = Config::from_toml(EVERY_KEY, EVERY_USER_KEY).unwrap();
    let g = &config.general;
    assert_eq!(g.load_balancing_strategy, LoadBalancingStrategy::RoundRobin);
    assert_eq!(g.read_write_split, ReadWriteSplit::ExcludePrimary);
    assert_eq!(g.ban_timeout(), Duration::from_secs(300));
    assert_eq!(g.healthcheck_timeout(), Duration::from_secs(5));
    assert_eq!(g.pub_sub_channel_size, 4098);
    let prod = &config.clusters["prod"];
    assert_eq!(prod.shards.len(), 1);
    assert_eq!(prod.shards[0].host, "10.0.0.1");
    let replicas: Vec<_> = prod.replicas[0].iter().map(|d| d.host.as_str()).collect();
    assert_eq!(replicas, ["10.0.0.2"]);
    assert!(prod.replicas[0].iter().all(|d| d.role == Role::Replica));

    let warned = paths(&config);
    let mut expected: Vec<String> = Vec::new();
    // `[general]`: every accepted key except those whose value is
    // pgshard's own behaviour (none in this file but `cutover_save_config`
    // and friends carry values pgshard ignores all the same).
    for (key, _) in GENERAL {
        expected.push(format!("pgdog.toml: general.{key}"));
    }
    // PgDog's resharding keys are read into the model, and warned about
    // where shard moves do not use them (yet).
    for key in super::resharding::KEYS {
        if super::resharding::not_yet(key).is_some() {
            expected.push(format!("pgdog.toml: general.{key}"));
        }
    }
    for key in [
        "statement_timeout",
        "lock_timeout",
        "idle_timeout",
        "lb_weight",
        "server_lifetime",
    ] {
        expected.push(format!("pgdog.toml: databases[0].{key}"));
    }
    expected.push("pgdog.toml: databases[1].read_only".to_owned());
    for section in SECTIONS {
        expected.push(format!("pgdog.toml: {section}"));
    }
    for (key, same) in USER {
        if same.is_none() {
            expected.push(format!("users.toml: users[0].{key}"));
        }
    }
    let mut missing: Vec<_> = expected.iter().filter(|p| !warned.contains(p)).collect();
    missing.sort();
    assert!(missing.is_empty(), "no warning for {missing:?}");
    let mut extra: Vec<_> = warned.iter().filter(|p| !expected.contains(p)).collect();
    extra.sort();
    assert!(extra.is_empty(), "unexpected warnings {extra:?}");
    let failover = &config.clusters["failover"];
    assert_eq!(failover.shards[0].role, Role::Auto);
    assert_eq!(failover.replicas[0][0].role, Role::Auto);
    let checks = config.general.lsn_checks();
    assert_eq!(
        (checks.delay, checks.interval, checks.timeout),
        (
            Duration::ZERO,
            Duration::from_secs(5),
            Duration::from_secs(5)
        )
    );
    let dry_run = config
        .warnings
        .iter()
        .find(|w| w.path == "general.dry_run")
        .unwrap();
    assert_eq!(
        dry_run.to_string(),
        "pgdog.toml: general.dry_run: accepted, not supported yet (ignored)"
    );
}

#[test]
fn values_that_are_pgshards_own_behaviour_need_no_warning() {
    let config = Config::from_toml(
        "[general]\nprepared_statements = \"extended\"\nread_write_strategy = \"conservative\"\n\
         dry_run = false\ntwo_phase_commit = false\n\
         [[databases]]\nname = \"prod\"\nhost = \"h\"\nread_only = false\n",
        "[[users]]\nname = \"a\"\ndatabase = \"prod\"\npassword = \"p\"\nreplication_mode = false\n",
    )
    .unwrap();
    assert_eq!(config.warnings, []);
}

#[test]
fn replaced_values_are_named() {
    let config = Config::from_toml(
        "[general]\npooler_mode = \"statement\"\nload_balancing_strategy = \"weighted_round_robin\"\n\
         [[databases]]\nname = \"prod\"\nhost = \"h\"\n",
        "[[users]]\nname = \"a\"\ndatabase = \"prod\"\npassword = \"p\"\npooler_mode = \"statement\"\n",
    )
    .unwrap();
    assert_eq!(config.general.pooler_mode, PoolerMode::Transaction);
    assert_eq!(
        config.general.load_balancing_strategy,
        LoadBalancingStrategy::RoundRobin
    );
    assert_eq!(config.users[0].pooler_mode, Some(PoolerMode::Transaction));
    assert_eq!(
        paths(&config),
        [
            "pgdog.toml: general.pooler_mode",
            "pgdog.toml: general.load_balancing_strategy",
            "users.toml: users[0].pooler_mode"
        ]
    );
}

#[test]
fn typos_are_still_errors() {
    let err = Config::from_toml(
        "[general]\nhealthcheck_intervall = 1\n[[databases]]\nname = \"p\"\nhost = \"h\"\n",
        "",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("pgdog.toml: general.healthcheck_intervall: unknown field"),
        "{err}"
    );
    let err = Config::from_toml(
        "[[databases]]\nname = \"p\"\nhost = \"h\"\nrole = \"standby\"\n",
        "",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("pgdog.toml: databases[0].role: unknown variant `standby`"),
        "{err}"
    );
    let err = Config::from_toml("[tpc]\nkeepalive = true\n", "")
        .unwrap_err()
        .to_string();
    assert!(err.contains("tpc: unknown field `tpc`"), "{err}");
}

/// A key in the accepted lists that the model also reads would never reach
/// the model: the lists and the model must not overlap.
#[test]
fn accepted_keys_are_not_model_fields() {
    let unknown = |section: &str, key: &str| {
        let (pgdog, users) = match section {
            "general" => (format!("[general]\n{key} = 0\n{ONE}"), String::new()),
            "databases" => (format!("{ONE}{key} = 0\n"), String::new()),
            _ => (ONE.to_owned(), format!("{USER_ENTRY}{key} = 0\n")),
        };
        // Straight into the model, bypassing the accepted lists.
        let result: Result<PgdogFile, _> = toml::from_str(&pgdog);
        let users: Result<UsersFile, _> = toml::from_str(&users);
        let error = match section {
            "users" => users.err().map(|e| e.to_string()),
            _ => result.err().map(|e| e.to_string()),
        };
        error.is_some_and(|e| e.contains("unknown field"))
    };
    const ONE: &str = "[[databases]]\nname = \"p\"\nhost = \"h\"\n";
    const USER_ENTRY: &str = "[[users]]\nname = \"a\"\ndatabase = \"p\"\n";
    for (key, _) in GENERAL {
        assert!(unknown("general", key), "general.{key} is a model field");
    }
    for (key, _) in DATABASE {
        assert!(
            unknown("databases", key),
            "databases.{key} is a model field"
        );
    }
    for (key, _) in USER {
        assert!(unknown("users", key), "users.{key} is a model field");
    }
}

#[test]
fn replicas_join_their_shard() {
    let config = Config::from_toml(
        r#"
        [[databases]]
        name = "prod"
        host = "r0"
        role = "replica"
        [[databases]]
        name = "prod"
        host = "p0"
        [[databases]]
        name = "prod"
        host = "p1"
        shard = 1
        "#,
        "",
    )
    .unwrap();
    let prod = &config.clusters["prod"];
    assert_eq!(prod.shards.len(), 2);
    assert_eq!(prod.shards[0].host, "p0");
    assert_eq!(prod.replicas[0].len(), 1);
    assert_eq!(prod.replicas[0][0].host, "r0");
    assert!(prod.replicas[1].is_empty());
    assert_eq!(prod.sharding.databases, 2);
    assert_eq!(config.warnings, []);
}

#[test]
fn a_shard_of_replicas_only_gets_a_primary_with_a_warning() {
    let config = Config::from_toml(
        "[[databases]]\nname = \"prod\"\nhost = \"r0\"\nrole = \"replica\"\n\
         [[databases]]\nname = \"prod\"\nhost = \"r1\"\nrole = \"replica\"\n",
        "",
    )
    .unwrap();
    let prod = &config.clusters["prod"];
    assert_eq!(prod.shards[0].host, "r0");
    assert_eq!(prod.shards[0].role, Role::Primary);
    assert_eq!(prod.replicas[0][0].host, "r1");
    assert_eq!(paths(&config), ["pgdog.toml: databases[0].role"]);
}

#[test]
fn two_primaries_of_one_shard_are_an_error() {
    let err = Config::from_toml(
        "[[databases]]\nname = \"prod\"\nhost = \"a\"\n[[databases]]\nname = \"prod\"\nhost = \"b\"\n",
        "",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "pgdog.toml: databases[1].shard: cluster \"prod\" already has shard 0 (databases[0]); a replica needs role = \"replica\""
    );
}

#[test]
fn a_zero_healthcheck_timeout_is_refused() {
    let err = Config::from_toml(
        "[general]\nhealthcheck_timeout = 0\n[[databases]]\nname = \"p\"\nhost = \"h\"\n",
        "",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("pgdog.toml: general.healthcheck_timeout: "),
        "{err}"
    );
}

#[test]
fn a_shard_is_all_auto_or_has_none() {
    for (roles, bad) in [
        (["primary", "auto"], "databases[1].role"),
        (["auto", "replica"], "databases[1].role"),
        (["auto", "primary"], "databases[0].role"),
    ] {
        let pgdog = format!(
            "[[databases]]\nname = \"p\"\nhost = \"a\"\nrole = \"{}\"\n\
             [[databases]]\nname = \"p\"\nhost = \"b\"\nrole = \"{}\"\n",
            roles[0], roles[1]
        );
        let err = Config::from_toml(&pgdog, "").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "pgdog.toml: {bad}: shard 0 of \"p\" mixes \"auto\""
            )),
            "{roles:?}: {err}"
        );
    }
    let pgdog = "[general]\nlsn_check_timeout = 0\n[[databases]]\nname = \"p\"\nhost = \"a\"\n";
    let err = Config::from_toml(pgdog, "").unwrap_err().to_string();
    assert!(
        err.starts_with("pgdog.toml: general.lsn_check_timeout: must be at least 1"),
        "{err}"
    );
}
