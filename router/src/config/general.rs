//! `[general]` of `pgdog.toml`: settings of the pooler process itself and the
//! pool defaults that databases and users may override.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::cross_shard::{CrossShardFinish, GatherLimit, DEFAULT_MERGE_MEMORY};
use super::resharding::{CopyFormat, CutoverTimeoutAction};
use super::unix_socket::UnixSocketMode;
use crate::sharding::ParserEngine;
use crate::unique_id::UniqueIdFunction;

mod accessors;
mod choices;

pub use accessors::LsnChecks;
pub use choices::{AuthType, LoadBalancingStrategy, PassthroughAuth, PoolerMode, ReadWriteSplit};

/// Default `max_message_size`: Postgres's `MaxAllocSize` (0x3fffffff,
/// `src/include/utils/memutils.h`), the largest buffer a backend allocates, so no
/// message a server accepts is refused by default.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = (1 << 30) - 1;

/// Smallest allowed `max_message_size`: Postgres's `MAX_STARTUP_PACKET_LENGTH`
/// (10000, `src/include/libpq/pqcomm.h`); any lower cap would refuse ordinary
/// startup packets.
pub const MIN_MAX_MESSAGE_SIZE: usize = 10_000;

/// Default `pub_sub_channel_size` (the value PgDog's documentation gives):
/// notifications one listening client may have waiting.
pub const DEFAULT_PUB_SUB_CHANNEL_SIZE: usize = 4096;

/// Default `query_cache_max_bytes`: 64 MiB of cached statement trees.
pub const DEFAULT_QUERY_CACHE_MAX_BYTES: usize = 64 << 20;

/// Smallest allowed `query_cache_max_bytes`: below this not even one
/// ordinary statement's tree fits, and the cache would only churn.
pub const MIN_QUERY_CACHE_MAX_BYTES: usize = 1024;

/// `[general]`: settings of the pooler process itself.
///
/// Times are milliseconds in the file (as in PgDog); the Rust fields carry an
/// `_ms` suffix and methods of the same name without it return [`Duration`](std::time::Duration)s.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct General {
    /// Address to listen on.
    pub host: String,
    /// TCP port to listen on.
    pub port: u16,
    /// `unix_socket_dir` (PgBouncer's key): also listen on the Unix socket
    /// `<dir>/.s.PGSQL.<port>`, where `psql -h <dir>` looks. Off when absent
    /// or empty (PgBouncer's default is `/tmp`; PgDog has no Unix socket).
    pub unix_socket_dir: Option<PathBuf>,
    /// `unix_socket_mode`: the socket's permission bits (default `0777`).
    pub unix_socket_mode: UnixSocketMode,
    /// `unix_socket_group`: the group the socket file is given to (checked
    /// at startup: it must exist); unchanged when absent.
    pub unix_socket_group: Option<String>,
    /// Worker threads, each running its own single-threaded runtime and
    /// listener (thread per core); 0 is the same as 1. Unset: one per two
    /// cores, at least one ([`General::workers_for`]; PgDog's fixed default
    /// is 2).
    pub workers: Option<usize>,
    /// Server connections per pool (one pool per user and shard), unless the
    /// database or user sets `pool_size`. At least 1.
    pub default_pool_size: usize,
    /// Server connections each pool keeps open even when idle.
    pub min_pool_size: usize,
    pub pooler_mode: PoolerMode,
    /// `connect_timeout`: how long to wait for a server connection to be
    /// established and authenticated. At least 1.
    #[serde(rename = "connect_timeout")]
    pub connect_timeout_ms: u64,
    /// `checkout_timeout`: how long a client waits for a free server connection.
    #[serde(rename = "checkout_timeout")]
    pub checkout_timeout_ms: u64,
    /// `idle_timeout`: idle server connections above `min_pool_size` are closed
    /// after this long; 0 = never.
    #[serde(rename = "idle_timeout")]
    pub idle_timeout_ms: u64,
    /// `query_timeout`: longest a query may run on a server; 0 = no limit.
    #[serde(rename = "query_timeout")]
    pub query_timeout_ms: u64,
    /// `server_lifetime`: server connections are closed (when idle) after this
    /// long; 0 = never.
    #[serde(rename = "server_lifetime")]
    pub server_lifetime_ms: u64,
    /// `server_round_robin` (PgBouncer's key): idle server connections are
    /// handed out in turn, oldest first, instead of the most recently used
    /// first, for an even load when one address leads to several servers
    /// (round-robin DNS, a TCP balancer).
    pub server_round_robin: bool,
    /// `shutdown_timeout`: on shutdown, how long to let clients finish.
    #[serde(rename = "shutdown_timeout")]
    pub shutdown_timeout_ms: u64,
    /// Most client connections accepted at once.
    pub max_client_conn: usize,
    /// Largest protocol message (bytes) accepted from a client or server.
    /// At least [`MIN_MAX_MESSAGE_SIZE`].
    pub max_message_size: usize,
    /// How clients authenticate, unless the user sets `auth_type`.
    pub auth_type: AuthType,
    /// Whether clients `users.toml` does not list log in with their own
    /// password, checked by logging into the server with it.
    pub passthrough_auth: PassthroughAuth,
    /// PEM certificate chain for client TLS; set together with `tls_private_key`.
    pub tls_certificate: Option<PathBuf>,
    /// PEM private key for client TLS; set together with `tls_certificate`.
    pub tls_private_key: Option<PathBuf>,
    /// `tls_client_required`: clients on TCP must use TLS (the Unix socket
    /// stays open: it never leaves the machine). Needs client TLS.
    pub tls_client_required: bool,
    /// `client_login_timeout`: a client that has not finished its startup
    /// and authentication this long after connecting is cut off; 0 = never.
    #[serde(rename = "client_login_timeout")]
    pub client_login_timeout_ms: u64,
    /// Prepared statements cached per server connection. At least 1.
    pub prepared_statements_limit: usize,
    /// Refuse statements that would run on more than one database of a
    /// sharded cluster (copied into every cluster's `Sharding`).
    pub cross_shard_disabled: bool,
    /// What to do with a cross-shard SELECT the streaming merge cannot
    /// answer: `"coordinator"` (finish it on a Postgres, the default) or
    /// `"refuse"` (refuse it with 0A000). pgshard's key (issue 34).
    pub cross_shard_finish: CrossShardFinish,
    /// The shard number of the database that finishes such queries; every
    /// cluster of several databases must have it.
    pub cross_shard_coordinator: usize,
    /// Most rows and bytes one statement gathers to finish on the
    /// coordinator (54000 past either).
    pub cross_shard_gather_limit: GatherLimit,
    /// Bytes of groups a cross-shard merge holds for a final sort that is
    /// not the groups' own order (54000 past it).
    pub cross_shard_merge_memory: u64,
    /// How a sharded cluster routes tables that no `[[sharded_tables]]`,
    /// `[[omnisharded_tables]]` or table family names (pgshard's key).
    pub unlisted_tables: UnlistedTables,
    /// Which parser reads statements: `"zero_copy"` (default; PgDog's
    /// `"pg_query_raw"` is accepted as another name for it) or
    /// `"pg_query_protobuf"`.
    pub query_parser_engine: ParserEngine,
    /// Most statements kept in the parsed-statement (AST) cache. At least 1.
    pub query_cache_limit: usize,
    /// Most bytes the AST cache holds. At least [`MIN_QUERY_CACHE_MAX_BYTES`].
    pub query_cache_max_bytes: usize,
    /// Port of the Prometheus / OpenMetrics endpoint (`GET /metrics` on
    /// `host`); off when absent, as in PgDog.
    pub openmetrics_port: Option<u16>,
    /// Prefix of every metric name (`<namespace>_<metric>`); none when
    /// absent.
    pub openmetrics_namespace: Option<String>,
    /// `healthcheck_interval`: a pooled connection idle for longer than this
    /// is checked (an empty query) before a client gets it; 0 checks every
    /// reused connection.
    #[serde(rename = "healthcheck_interval")]
    pub healthcheck_interval_ms: u64,
    /// `idle_healthcheck_interval`: how often each database is checked in
    /// the background, through an idle connection or a new one; 0 = never.
    #[serde(rename = "idle_healthcheck_interval")]
    pub idle_healthcheck_interval_ms: u64,
    /// `idle_healthcheck_delay`: the first background check waits this long
    /// after the pool is created.
    #[serde(rename = "idle_healthcheck_delay")]
    pub idle_healthcheck_delay_ms: u64,
    /// `healthcheck_timeout`: a check that takes longer has failed. At
    /// least 1.
    #[serde(rename = "healthcheck_timeout")]
    pub healthcheck_timeout_ms: u64,
    /// `ban_timeout`: a replica that failed (a check, a connection, a query
    /// cut off) serves no reads for this long.
    #[serde(rename = "ban_timeout")]
    pub ban_timeout_ms: u64,
    /// `lsn_check_interval`: how often each server of a shard with
    /// `role = "auto"` entries is asked whether it is in recovery, and its
    /// WAL position. At least 1.
    #[serde(rename = "lsn_check_interval")]
    pub lsn_check_interval_ms: u64,
    /// `lsn_check_timeout`: a check (connecting if need be, and its query)
    /// that takes longer has failed: the server counts as down. At least 1.
    #[serde(rename = "lsn_check_timeout")]
    pub lsn_check_timeout_ms: u64,
    /// `lsn_check_delay`: the periodic checks start this long after the
    /// shard's pools are made (one check runs at once regardless, to find
    /// the primary).
    #[serde(rename = "lsn_check_delay")]
    pub lsn_check_delay_ms: u64,
    /// How reads are spread over a shard's databases.
    pub load_balancing_strategy: LoadBalancingStrategy,
    /// Whether the primary serves reads too.
    pub read_write_split: ReadWriteSplit,
    /// How log lines are written to stderr: `"text"` or `"json"` (PgDog's
    /// key). Read at start.
    pub log_format: LogFormat,
    /// `log_min_duration_statement`: statements (and transactions' parts)
    /// that take at least this many milliseconds are logged with their
    /// route; 0 logs every one, -1 (default) none (Postgres's key).
    pub log_min_duration_statement: i64,
    /// Commit transactions that wrote on several shards with two-phase
    /// commit (PgDog's key): `PREPARE TRANSACTION` on each, the decision
    /// recorded, then `COMMIT PREPARED`. The shards need
    /// `max_prepared_transactions` > 0. Off: such a commit is one COMMIT per
    /// shard, atomic per shard only.
    pub two_phase_commit: bool,
    /// With `two_phase_commit`, a single statement outside a transaction
    /// that writes on several shards (DDL, a keyless UPDATE, a split
    /// INSERT) runs inside a transaction on each and commits with two-phase
    /// commit too (PgDog's key; default: on).
    pub two_phase_commit_auto: bool,
    /// Where the local two-phase commit decision log is kept (PgDog's key;
    /// a directory, created if missing). Unset (the default, as in PgDog):
    /// no local log. Recovery does not need it: every decision is durable
    /// in `pgshard.decisions` on its decider shard. What the log adds is
    /// that this pgshard finishes its own decided commits without asking
    /// the decider (also while the decider is down); `docs/transactions.md`
    /// says what each setting guarantees.
    pub two_phase_commit_wal_dir: Option<PathBuf>,
    /// With `two_phase_commit_wal_dir`: whether a client's COMMIT waits
    /// for the log record's fsync (default: off; the record is written to
    /// the operating system before the COMMIT is answered, and reaches the
    /// disk when the system writes it back).
    pub two_phase_commit_wal_fsync: bool,
    /// Bytes after which the decision log starts a new file (PgDog's key);
    /// full files are removed once nothing in them is pending.
    pub two_phase_commit_wal_segment_size: u64,
    /// `two_phase_commit_recovery_interval`: how often prepared
    /// transactions left on the shards by a pgshard that died are looked
    /// for and resolved (also at start); 0 = only at start.
    #[serde(rename = "two_phase_commit_recovery_interval")]
    pub two_phase_commit_recovery_interval_ms: u64,
    /// The layout of `pgdog.unique_id()` ids (PgDog's key).
    pub unique_id_function: UniqueIdFunction,
    /// Added to every `pgdog.unique_id()` id, so ids stay above those of
    /// rows made before (PgDog's key).
    pub unique_id_min: u64,
    /// This instance's node id in `pgdog.unique_id()` ids: 0-1023 (0-63 with
    /// `compact`), distinct per pgshard instance. Unset: the number after
    /// the last `-` of the `NODE_ID` environment variable (PgDog's way),
    /// else 0.
    pub node_id: Option<u64>,
    /// `pub_sub_channel_size` (PgDog's key): in transaction mode, how many
    /// notifications may wait for one listening client (LISTEN relayed
    /// through pgshard's own listening connections, `proxy/src/pubsub.rs`);
    /// a client that falls further behind is disconnected. 0 turns the
    /// relay off: LISTEN is then refused in transaction mode.
    pub pub_sub_channel_size: usize,
    // PgDog's resharding keys, with pgshard's meaning for a shard move:
    // `config/resharding.rs` (their enums, accessors and checks).
    /// COPY format of a move's snapshot copy and its subscription.
    pub resharding_copy_format: CopyFormat,
    /// Table copies a move runs at once. At least 1.
    pub resharding_parallel_copies: usize,
    /// Retries of a failed table copy (0: none).
    pub resharding_copy_retry_max_attempts: usize,
    /// First wait before a copy retry; each retry doubles it, up to 32x.
    #[serde(rename = "resharding_copy_retry_min_delay")]
    pub resharding_copy_retry_min_delay_ms: u64,
    /// Retries of a failed subscription or cutover before the move is rolled
    /// back (0: no limit).
    pub resharding_replication_retry_max_attempts: usize,
    #[serde(rename = "resharding_replication_retry_min_delay")]
    pub resharding_replication_retry_min_delay_ms: u64,
    /// Replication lag (bytes) under which the cutover holds the moving
    /// shard's statements.
    pub cutover_traffic_stop_threshold: u64,
    /// Lag (bytes) at which to switch: only 0 (the move waits for its fence).
    pub cutover_replication_lag_threshold: u64,
    /// PgDog's quiet time before a switch: not needed with a fence.
    #[serde(rename = "cutover_last_transaction_delay")]
    pub cutover_last_transaction_delay_ms: u64,
    /// Longest a held statement waits; past it the cutover is abandoned.
    #[serde(rename = "cutover_timeout")]
    pub cutover_timeout_ms: u64,
    /// What a timed-out cutover does: only `abort`.
    pub cutover_timeout_action: CutoverTimeoutAction,
    /// Write the switched placement into `pgdog.toml` (backup first).
    pub cutover_save_config: bool,
    /// pgshard's own: a move of plain tables whose replica identity lacks
    /// the sharding key sets `REPLICA IDENTITY FULL` on them for its
    /// duration (else it is refused).
    pub resharding_replica_identity_full: bool,
    /// pgshard's own: how long a read of a sharded cluster's move records
    /// lets this instance serve keyless statements on its plain sharded
    /// tables (`config/resharding.rs`; `docs/resharding.md`).
    #[serde(rename = "resharding_freshness_timeout")]
    pub resharding_freshness_timeout_ms: u64,
}

/// `unlisted_tables`: what a table the sharding config does not name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnlistedTables {
    /// A copy on every database, as PgDog assumes: reads go to one
    /// database, writes to all (atomically). Only when the cluster has no
    /// column-only `[[sharded_tables]]` entry: such an entry shards every
    /// table that has its column, which a table's name does not tell.
    #[default]
    Omnisharded,
    /// Sharded by a key pgshard does not know: keyless reads, UPDATEs and
    /// DELETEs go to every database, INSERT and COPY without a key are
    /// refused.
    Sharded,
}

/// `log_format`: the shape of log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line (`tracing-subscriber`'s JSON format).
    Json,
}

impl Default for General {
    fn default() -> Self {
        General {
            host: "0.0.0.0".to_owned(),
            port: 6432,
            unix_socket_dir: None,
            unix_socket_mode: UnixSocketMode::default(),
            unix_socket_group: None,
            workers: None,
            default_pool_size: 10,
            min_pool_size: 0,
            pooler_mode: PoolerMode::Transaction,
            connect_timeout_ms: 5_000,
            checkout_timeout_ms: 5_000,
            idle_timeout_ms: 60_000,
            query_timeout_ms: 0,
            server_lifetime_ms: 86_400_000,
            server_round_robin: false,
            shutdown_timeout_ms: 60_000,
            max_client_conn: 10_000,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            auth_type: AuthType::Scram,
            passthrough_auth: PassthroughAuth::Disabled,
            tls_certificate: None,
            tls_private_key: None,
            tls_client_required: false,
            client_login_timeout_ms: 60_000,
            prepared_statements_limit: 500,
            cross_shard_disabled: false,
            cross_shard_finish: CrossShardFinish::Coordinator,
            cross_shard_coordinator: 0,
            cross_shard_gather_limit: GatherLimit::default(),
            cross_shard_merge_memory: DEFAULT_MERGE_MEMORY,
            unlisted_tables: UnlistedTables::Omnisharded,
            query_parser_engine: ParserEngine::ZeroCopy,
            query_cache_limit: 10_000,
            query_cache_max_bytes: DEFAULT_QUERY_CACHE_MAX_BYTES,
            openmetrics_port: None,
            openmetrics_namespace: None,
            healthcheck_interval_ms: 30_000,
            idle_healthcheck_interval_ms: 30_000,
            idle_healthcheck_delay_ms: 5_000,
            healthcheck_timeout_ms: 5_000,
            ban_timeout_ms: 300_000,
            // PgDog's interval and timeout; its delay is "never" (no
            // checks), which `role = "auto"` cannot work without.
            lsn_check_interval_ms: 5_000,
            lsn_check_timeout_ms: 5_000,
            lsn_check_delay_ms: 0,
            load_balancing_strategy: LoadBalancingStrategy::Random,
            read_write_split: ReadWriteSplit::IncludePrimary,
            log_format: LogFormat::Text,
            log_min_duration_statement: -1,
            two_phase_commit: false,
            two_phase_commit_auto: true,
            two_phase_commit_wal_dir: None,
            two_phase_commit_wal_fsync: false,
            two_phase_commit_wal_segment_size: 16 * 1024 * 1024,
            two_phase_commit_recovery_interval_ms: 10_000,
            unique_id_function: UniqueIdFunction::Standard,
            unique_id_min: 0,
            node_id: None,
            pub_sub_channel_size: DEFAULT_PUB_SUB_CHANNEL_SIZE,
            // PgDog's defaults.
            resharding_copy_format: CopyFormat::Binary,
            resharding_parallel_copies: 1,
            resharding_copy_retry_max_attempts: 5,
            resharding_copy_retry_min_delay_ms: 1_000,
            resharding_replication_retry_max_attempts: 5,
            resharding_replication_retry_min_delay_ms: 1_000,
            cutover_traffic_stop_threshold: 1_000_000,
            cutover_replication_lag_threshold: 0,
            cutover_last_transaction_delay_ms: 1_000,
            cutover_timeout_ms: 30_000,
            cutover_timeout_action: CutoverTimeoutAction::Abort,
            cutover_save_config: false,
            resharding_replica_identity_full: false,
            resharding_freshness_timeout_ms: 10_000,
        }
    }
}

#[cfg(test)]
mod tests;
