//! PgDog's resharding keys: read with PgDog's defaults, each value checked
//! (one line per refused value, with the key path), and warned about while
//! shard moves are not built.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use super::*;
use crate::config::Config;

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";
const DATABASES: &str = "[[databases]]\nname = \"prod\"\nhost = \"a\"\n";

fn load(general: &str) -> Result<Config, ConfigError> {
    Config::from_toml(&format!("[general]\n{general}\n{DATABASES}"), USERS)
}

#[test]
fn defaults_are_pgdogs() {
    let config = load("").unwrap();
    let g = &config.general;
    assert_eq!(g.resharding_copy_format, CopyFormat::Binary);
    assert_eq!(g.resharding_parallel_copies, 1);
    assert_eq!(g.resharding_copy_retry_max_attempts, 5);
    assert_eq!(g.resharding_copy_retry_min_delay(), Duration::from_secs(1));
    assert_eq!(g.resharding_replication_retry_max_attempts, 5);
    assert_eq!(
        g.resharding_replication_retry_min_delay(),
        Duration::from_secs(1)
    );
    assert_eq!(g.cutover_traffic_stop_threshold, 1_000_000);
    assert_eq!(g.cutover_replication_lag_threshold, 0);
    assert_eq!(g.cutover_last_transaction_delay(), Duration::from_secs(1));
    assert_eq!(g.cutover_timeout(), Duration::from_secs(30));
    assert_eq!(g.cutover_timeout_action, CutoverTimeoutAction::Abort);
    assert!(!g.cutover_save_config);
    assert_eq!(g.resharding_freshness_timeout(), Duration::from_secs(10));
    // Nothing written, nothing to warn about.
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn every_key_is_read_and_warned_about() {
    let config = load(
        "resharding_copy_format = \"text\"\nresharding_parallel_copies = 4\n\
         resharding_copy_retry_max_attempts = 0\nresharding_copy_retry_min_delay = 250\n\
         resharding_replication_retry_max_attempts = 0\n\
         resharding_replication_retry_min_delay = 500\n\
         cutover_traffic_stop_threshold = 65536\ncutover_replication_lag_threshold = 0\n\
         cutover_last_transaction_delay = 0\ncutover_timeout = 2000\n\
         cutover_timeout_action = \"abort\"\ncutover_save_config = true",
    )
    .unwrap();
    let g = &config.general;
    assert_eq!(g.resharding_copy_format.as_str(), "text");
    assert_eq!(g.resharding_parallel_copies, 4);
    assert_eq!(g.resharding_copy_retry_max_attempts, 0);
    assert_eq!(
        g.resharding_copy_retry_min_delay(),
        Duration::from_millis(250)
    );
    assert_eq!(g.resharding_replication_retry_max_attempts, 0);
    assert_eq!(
        g.resharding_replication_retry_min_delay(),
        Duration::from_millis(500)
    );
    assert_eq!(g.cutover_traffic_stop_threshold, 65536);
    assert_eq!(g.cutover_last_transaction_delay(), Duration::ZERO);
    assert_eq!(g.cutover_timeout(), Duration::from_secs(2));
    assert!(g.cutover_save_config);
    let warned: Vec<String> = config.warnings.iter().map(|w| w.path.clone()).collect();
    let expected = [
        "general.resharding_parallel_copies",
        "general.resharding_copy_retry_max_attempts",
        "general.resharding_copy_retry_min_delay",
        "general.cutover_last_transaction_delay",
    ];
    assert_eq!(warned, expected);
    assert_eq!(
        config.warnings[0].to_string(),
        "pgdog.toml: general.resharding_parallel_copies: checked, but has no effect yet: a \
         shard move copies one table at a time, without retries (see docs/resharding.md)"
    );
    // SHOW CONFIG lists them under the file's names.
    let keys: std::collections::BTreeMap<String, String> = g.effective_keys().into_iter().collect();
    assert_eq!(keys["resharding_copy_format"], "text");
    assert_eq!(keys["cutover_timeout"], "2000");
    assert_eq!(keys["cutover_timeout_action"], "abort");
}

#[test]
fn refused_values_name_their_key() {
    let cases = [
        (
            "resharding_parallel_copies = 0",
            "general.resharding_parallel_copies",
            "must be at least 1",
        ),
        (
            "cutover_timeout = 0",
            "general.cutover_timeout",
            "0 would abandon every cutover",
        ),
        (
            "cutover_replication_lag_threshold = 1000",
            "general.cutover_replication_lag_threshold",
            "must be 0",
        ),
        (
            "cutover_timeout_action = \"cutover\"",
            "general.cutover_timeout_action",
            "would lose writes",
        ),
        (
            "resharding_freshness_timeout = 2999",
            "general.resharding_freshness_timeout",
            "must be from 3000 to 20000 (ms): each pgshard instance reads which moves are \
             under way every 1000 ms",
        ),
        (
            "resharding_freshness_timeout = 20001",
            "general.resharding_freshness_timeout",
            "a cluster's first move waits this long",
        ),
        // Not a value of the key's type or set: serde's error, at the key.
        (
            "resharding_copy_format = \"csv\"",
            "general.resharding_copy_format",
            "unknown variant `csv`",
        ),
        (
            "cutover_timeout_action = \"wait\"",
            "general.cutover_timeout_action",
            "unknown variant `wait`",
        ),
        (
            "cutover_timeout = -1",
            "general.cutover_timeout",
            "invalid value",
        ),
        (
            "cutover_traffic_stop_threshold = \"1MB\"",
            "general.cutover_traffic_stop_threshold",
            "invalid type",
        ),
        (
            "cutover_save_config = 1",
            "general.cutover_save_config",
            "invalid type",
        ),
    ];
    for (line, path, words) in cases {
        let text = load(line).unwrap_err().to_string();
        assert!(
            text.starts_with(&format!("pgdog.toml: {path}: ")) && text.contains(words),
            "{line}: {text}"
        );
    }
}

#[test]
fn the_freshness_bound_is_read_within_its_range() {
    for ms in [3000, 4500, 20000] {
        let config = load(&format!("resharding_freshness_timeout = {ms}")).unwrap();
        let g = &config.general;
        assert_eq!(g.resharding_freshness_timeout(), Duration::from_millis(ms));
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let keys: std::collections::BTreeMap<String, String> =
            g.effective_keys().into_iter().collect();
        assert_eq!(keys["resharding_freshness_timeout"], ms.to_string());
    }
    assert_eq!(READ_INTERVAL, Duration::from_secs(1));
}
