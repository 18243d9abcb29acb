//! PgDog's resharding keys of `[general]` (`resharding_*`, `cutover_*`)
//! with pgshard's meaning for a move of one logical shard between
//! databases: their enums, `Duration` accessors and checks. The fields are
//! in [`General`] (serde's `flatten` does not mix with
//! `deny_unknown_fields`).
//!
//! pgshard moves shards differently from PgDog (one logical shard at a
//! time, a fence instead of a quiet period), so two values PgDog allows are
//! refused at load rather than half-honoured:
//! `cutover_replication_lag_threshold` other than 0, and
//! `cutover_timeout_action = "cutover"`. A key shard moves do not use yet
//! is checked and then warned about ([`not_yet`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{invalid, ConfigError, General};

/// How often every pgshard instance reads each sharded cluster's move
/// records (`pgshard.shards`, `pgshard.moves`; the proxy's placement
/// readers): `resharding_freshness_timeout` is measured in these.
pub const READ_INTERVAL: Duration = Duration::from_secs(1);

/// The least `resharding_freshness_timeout`, in read intervals: two reads
/// may be late or fail before keyless statements are refused.
const MIN_FRESHNESS_READS: u32 = 3;

/// The most `resharding_freshness_timeout`: a move waits at most 30 s for
/// every live instance to mark it, and an instance that stopped counts as
/// live for the bound it announced; a cluster's first move also waits the
/// bound before it marks.
const MAX_FRESHNESS: Duration = Duration::from_secs(20);

/// The keys, as the file spells them.
pub(super) const KEYS: [&str; 12] = [
    "resharding_copy_format",
    "resharding_parallel_copies",
    "resharding_copy_retry_max_attempts",
    "resharding_copy_retry_min_delay",
    "resharding_replication_retry_max_attempts",
    "resharding_replication_retry_min_delay",
    "cutover_traffic_stop_threshold",
    "cutover_replication_lag_threshold",
    "cutover_last_transaction_delay",
    "cutover_timeout",
    "cutover_timeout_action",
    "cutover_save_config",
];

/// The warning for a key of [`KEYS`] written in `[general]` that a shard
/// move does not use yet (or, `cutover_last_transaction_delay`, never
/// needs); `None` for the keys moves honour.
pub(super) fn not_yet(key: &str) -> Option<&'static str> {
    match key {
        "resharding_parallel_copies"
        | "resharding_copy_retry_max_attempts"
        | "resharding_copy_retry_min_delay" => Some(
            "checked, but has no effect yet: a shard move copies one table at a time, \
             without retries (see docs/resharding.md)",
        ),
        "cutover_last_transaction_delay" => {
            Some("accepted, and ignored: a shard move's fence makes waiting for quiet unneeded")
        }
        _ => None,
    }
}

/// `resharding_copy_format`: how rows travel from the old database to the
/// new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CopyFormat {
    /// `COPY ... (FORMAT binary)`, and a binary subscription: the fastest,
    /// but both databases must have the same column types.
    #[default]
    Binary,
    /// `COPY ... (FORMAT text)`: slower, and lets a column's type change
    /// between the databases (int to bigint).
    Text,
}

impl CopyFormat {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyFormat::Binary => "binary",
            CopyFormat::Text => "text",
        }
    }
}

/// `cutover_timeout_action`: what happens when a cutover's held
/// statements have waited `cutover_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CutoverTimeoutAction {
    /// Give the cutover up: traffic resumes on the old database, and the
    /// move tries again later.
    #[default]
    Abort,
    /// PgDog's "switch anyway". Refused at load: writes not yet copied
    /// to the new database would be lost.
    Cutover,
}

impl General {
    /// `resharding_copy_retry_min_delay`.
    pub fn resharding_copy_retry_min_delay(&self) -> Duration {
        Duration::from_millis(self.resharding_copy_retry_min_delay_ms)
    }

    /// `resharding_replication_retry_min_delay`.
    pub fn resharding_replication_retry_min_delay(&self) -> Duration {
        Duration::from_millis(self.resharding_replication_retry_min_delay_ms)
    }

    /// `cutover_last_transaction_delay` (accepted; a move does not wait for
    /// quiet, its fence makes that unneeded).
    pub fn cutover_last_transaction_delay(&self) -> Duration {
        Duration::from_millis(self.cutover_last_transaction_delay_ms)
    }

    /// `cutover_timeout`.
    pub fn cutover_timeout(&self) -> Duration {
        Duration::from_millis(self.cutover_timeout_ms)
    }

    /// `resharding_freshness_timeout`: how long after a read of a
    /// cluster's move records began this instance serves keyless
    /// statements on its plain sharded tables without another.
    pub fn resharding_freshness_timeout(&self) -> Duration {
        Duration::from_millis(self.resharding_freshness_timeout_ms)
    }
}

/// The keys' values on their own.
pub(super) fn validate(general: &General) -> Result<(), ConfigError> {
    let fail = |key: &str, message: &str| {
        Err(invalid(
            "pgdog.toml",
            format!("general.{key}"),
            message.to_owned(),
        ))
    };
    if general.resharding_parallel_copies == 0 {
        return fail(
            "resharding_parallel_copies",
            "must be at least 1 (table copies a shard move runs at once)",
        );
    }
    if general.cutover_timeout_ms == 0 {
        return fail(
            "cutover_timeout",
            "must be at least 1 (ms): it is how long a statement on a moving shard may \
             be held at the cutover, and 0 would abandon every cutover",
        );
    }
    let freshness = general.resharding_freshness_timeout();
    if freshness < READ_INTERVAL * MIN_FRESHNESS_READS || freshness > MAX_FRESHNESS {
        let message = format!(
            "must be from {} to {} (ms): each pgshard instance reads which moves are under way \
             every {} ms, and refuses keyless statements on sharded tables once no read began \
             within this bound, so it must leave room for a read or two to be late; and a \
             cluster's first move waits this long before it marks (a move waits at most 30 s \
             for the instances to mark it)",
            (READ_INTERVAL * MIN_FRESHNESS_READS).as_millis(),
            MAX_FRESHNESS.as_millis(),
            READ_INTERVAL.as_millis()
        );
        return fail("resharding_freshness_timeout", &message);
    }
    if general.cutover_replication_lag_threshold != 0 {
        return fail(
            "cutover_replication_lag_threshold",
            "must be 0: pgshard switches a logical shard only once every write made \
             before its fence has reached the new database (it waits for the fence, \
             not for a lag in bytes)",
        );
    }
    if general.cutover_timeout_action == CutoverTimeoutAction::Cutover {
        return fail(
            "cutover_timeout_action",
            "\"cutover\" is not supported: switching before the new database has every \
             write would lose writes; use \"abort\" (traffic resumes on the old database \
             and the move tries again)",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
