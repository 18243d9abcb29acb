//! `[general]`'s defaults, the keys SHOW CONFIG lists, and the accessors.

use std::time::Duration;

use super::*;

#[test]
fn defaults_match_pgdog() {
    let g = General::default();
    assert_eq!((g.host.as_str(), g.port), ("0.0.0.0", 6432));
    // PgDog's default is 2 workers; ours depends on the cores.
    assert_eq!(
        [1, 2, 3, 4, 16].map(|cores| g.workers_for(cores)),
        [1, 1, 1, 2, 8]
    );
    let set = General {
        workers: Some(3),
        ..General::default()
    };
    assert_eq!(set.workers_for(16), 3);
    assert_eq!(
        General {
            workers: Some(0),
            ..set
        }
        .workers_for(16),
        1
    );
    assert_eq!((g.default_pool_size, g.min_pool_size), (10, 0));
    assert_eq!(g.pooler_mode, PoolerMode::Transaction);
    assert_eq!(g.connect_timeout(), Duration::from_secs(5));
    assert_eq!(g.checkout_timeout(), Duration::from_secs(5));
    assert_eq!(g.idle_timeout(), Some(Duration::from_secs(60)));
    assert_eq!(g.query_timeout(), None);
    assert_eq!(g.server_lifetime(), Some(Duration::from_secs(86_400)));
    assert_eq!(g.shutdown_timeout(), Duration::from_secs(60));
    assert_eq!(g.max_client_conn, 10_000);
    assert_eq!(g.max_message_size, 1_073_741_823);
    assert_eq!(g.auth_type, AuthType::Scram);
    assert_eq!(g.tls(), None);
    assert_eq!(g.prepared_statements_limit, 500);
    assert!(!g.cross_shard_disabled);
    assert_eq!(g.cross_shard_finish, CrossShardFinish::Coordinator);
    assert_eq!(g.cross_shard_coordinator, 0);
    assert_eq!(
        (
            g.cross_shard_gather_limit.rows,
            g.cross_shard_gather_limit.bytes
        ),
        (1_000_000, 256 * 1024 * 1024)
    );
    assert_eq!(g.cross_shard_merge_memory, 64 * 1024 * 1024);
    assert_eq!(g.unlisted_tables, UnlistedTables::Omnisharded);
    assert_eq!(g.query_parser_engine, ParserEngine::ZeroCopy);
    assert_eq!(g.query_cache_limit, 10_000);
    assert_eq!(g.query_cache_max_bytes, 64 * 1024 * 1024);
    assert_eq!(g.healthcheck_interval(), Duration::from_secs(30));
    assert_eq!(g.idle_healthcheck_interval(), Some(Duration::from_secs(30)));
    assert_eq!(g.idle_healthcheck_delay(), Duration::from_secs(5));
    assert_eq!(g.healthcheck_timeout(), Duration::from_secs(5));
    assert_eq!(g.ban_timeout(), Duration::from_secs(300));
    assert_eq!(g.load_balancing_strategy, LoadBalancingStrategy::Random);
    assert_eq!(g.read_write_split, ReadWriteSplit::IncludePrimary);
    assert_eq!(g.log_format, LogFormat::Text);
    assert_eq!(g.slow_query_threshold(), None);
}

#[test]
fn effective_keys_name_every_key_as_the_file_does() {
    let g = General {
        log_min_duration_statement: 250,
        ..General::default()
    };
    let keys: std::collections::BTreeMap<String, String> = g.effective_keys().into_iter().collect();
    assert_eq!(keys["connect_timeout"], "5000");
    assert_eq!(keys["pooler_mode"], "transaction");
    assert_eq!(keys["query_parser_engine"], "zero_copy");
    assert_eq!(keys["log_format"], "text");
    assert_eq!(keys["openmetrics_port"], "");
    assert_eq!(keys["host"], "0.0.0.0");
    assert_eq!(g.slow_query_threshold(), Some(Duration::from_millis(250)));
    // Fields are there under their names in the file.
    assert!(!keys.contains_key("connect_timeout_ms"));
}

#[test]
fn zero_turns_optional_timeouts_off() {
    let g = General {
        idle_timeout_ms: 0,
        server_lifetime_ms: 0,
        query_timeout_ms: 250,
        ..General::default()
    };
    assert_eq!(g.idle_timeout(), None);
    assert_eq!(g.server_lifetime(), None);
    assert_eq!(g.query_timeout(), Some(Duration::from_millis(250)));
}

#[test]
fn enum_names() {
    assert!(!AuthType::Trust.needs_password());
    assert!(AuthType::Plain.needs_password());
    assert_eq!(AuthType::Md5.as_str(), "md5");
    assert_eq!(PoolerMode::Session.as_str(), "session");
}
