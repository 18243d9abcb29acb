//! The admin console's views of pools, clients, servers and the AST cache:
//! `SHOW POOLS`, `CLIENTS`, `SERVERS`, `STATS` (PgBouncer's column names
//! where they overlap, a `shard` column added), `QUERY_CACHE` (PgDog's) and
//! `PREPARED_STATEMENTS` (the shared statement registry).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;

use super::Rows;
use crate::state::{State, CLIENT_ACTIVE, CLIENT_WAITING};

pub(super) fn show_pools(state: &State, out: &mut BytesMut) {
    let columns = [
        "database",
        "user",
        "cl_active",
        "cl_waiting",
        "sv_active",
        "sv_idle",
        "sv_used",
        "sv_tested",
        "sv_login",
        "maxwait",
        "maxwait_us",
        "pool_mode",
        "shard",
        "pool_size",
    ];
    let mut rows = Rows::new(out, &columns);
    for pool in state.all_pools() {
        let max_wait = pool.stats.max_wait_us.load(Ordering::Relaxed);
        rows.row(&[
            pool.cluster.clone(),
            pool.user.clone(),
            pool.stats
                .active_clients
                .load(Ordering::Relaxed)
                .to_string(),
            pool.stats.waiting.load(Ordering::Relaxed).to_string(),
            pool.active().to_string(),
            pool.idle_count().to_string(),
            "0".into(),
            "0".into(),
            "0".into(),
            (max_wait / 1_000_000).to_string(),
            (max_wait % 1_000_000).to_string(),
            pool.settings.pooler_mode.as_str().to_owned(),
            pool.shard.to_string(),
            pool.settings.pool_size.to_string(),
        ]);
    }
    rows.done("SHOW");
}

pub(super) fn unix_time(t: SystemTime) -> String {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs().to_string())
        .unwrap_or_default()
}

pub(super) fn show_clients(state: &State, out: &mut BytesMut) {
    let columns = [
        "type",
        "user",
        "database",
        "state",
        "addr",
        "port",
        "connect_time",
        "application_name",
        "id",
    ];
    let mut rows = Rows::new(out, &columns);
    for client in state.clients() {
        let client_state = match client.state.load(Ordering::Relaxed) {
            CLIENT_ACTIVE => "active",
            CLIENT_WAITING => "waiting",
            _ => "idle",
        };
        rows.row(&[
            "C".into(),
            client.user.clone(),
            client.database.clone(),
            client_state.into(),
            client.addr.map(|a| a.ip().to_string()).unwrap_or_default(),
            client
                .addr
                .map(|a| a.port().to_string())
                .unwrap_or_default(),
            unix_time(client.connected_at),
            client.application_name.clone(),
            client.process_id.to_string(),
        ]);
    }
    rows.done("SHOW");
}

pub(super) fn show_servers(state: &State, out: &mut BytesMut) {
    let columns = [
        "type",
        "user",
        "database",
        "state",
        "addr",
        "port",
        "connect_time",
        "request_time",
        "remote_pid",
        "shard",
        "id",
    ];
    let mut rows = Rows::new(out, &columns);
    let now = Instant::now();
    let at = |t: Instant| unix_time(SystemTime::now() - now.duration_since(t));
    for pool in state.all_pools() {
        for idle in pool.idle_servers() {
            rows.row(&[
                "S".into(),
                pool.target.user.clone(),
                pool.target.database.clone(),
                "idle".into(),
                idle.addr.ip().to_string(),
                idle.addr.port().to_string(),
                at(idle.created),
                at(idle.last_used),
                idle.process_id.to_string(),
                pool.shard.to_string(),
                idle.id.to_string(),
            ]);
        }
    }
    for client in state.clients() {
        let Ok(target) = client.cancel.try_lock() else {
            continue;
        };
        for target in target.iter() {
            rows.row(&[
                "S".into(),
                client.user.clone(),
                client.database.clone(),
                "active".into(),
                target.addr.ip().to_string(),
                target.addr.port().to_string(),
                String::new(),
                String::new(),
                target.process_id.to_string(),
                String::new(),
                String::new(),
            ]);
        }
    }
    rows.done("SHOW");
}

/// The AST cache: size, limits and hit/miss/eviction counts.
pub(super) fn show_query_cache(state: &State, out: &mut BytesMut) {
    let stats = state.cache.stats();
    let lookups = stats.hits + stats.misses;
    let mut rows = Rows::new(
        out,
        &[
            "entries",
            "bytes",
            "max_entries",
            "max_bytes",
            "hits",
            "misses",
            "evictions",
            "hit_ratio",
            "engine",
        ],
    );
    rows.row(&[
        stats.entries.to_string(),
        stats.bytes.to_string(),
        stats.max_entries.to_string(),
        stats.max_bytes.to_string(),
        stats.hits.to_string(),
        stats.misses.to_string(),
        stats.evictions.to_string(),
        format!("{:.3}", stats.hits as f64 / lookups.max(1) as f64),
        match state.config().general.query_parser_engine {
            router::sharding::ParserEngine::ZeroCopy => "zero_copy".to_owned(),
            router::sharding::ParserEngine::PgQueryProtobuf => "pg_query_protobuf".to_owned(),
        },
    ]);
    rows.done("SHOW");
}

pub(super) fn show_stats(state: &State, out: &mut BytesMut) {
    let columns = [
        "database",
        "user",
        "shard",
        "total_xact_count",
        "total_query_count",
        "total_received",
        "total_sent",
        "total_xact_time",
        "total_wait_time",
        "avg_xact_time",
        "avg_wait_time",
        "total_errors",
        // The AST cache is shared by every pool: its counters are
        // process-wide, the same on each row (per entry: SHOW QUERY_CACHE).
        "query_cache_hits",
        "query_cache_misses",
        "query_cache_evictions",
    ];
    let cache = state.cache.stats();
    let mut rows = Rows::new(out, &columns);
    for pool in state.all_pools() {
        let s = &pool.stats;
        let xacts = s.xact_count.load(Ordering::Relaxed);
        let xact_time = s.xact_time_us.load(Ordering::Relaxed);
        let wait_time = s.wait_time_us.load(Ordering::Relaxed);
        rows.row(&[
            pool.cluster.clone(),
            pool.user.clone(),
            pool.shard.to_string(),
            xacts.to_string(),
            s.query_count.load(Ordering::Relaxed).to_string(),
            s.bytes_received.load(Ordering::Relaxed).to_string(),
            s.bytes_sent.load(Ordering::Relaxed).to_string(),
            xact_time.to_string(),
            wait_time.to_string(),
            (xact_time / xacts.max(1)).to_string(),
            (wait_time / xacts.max(1)).to_string(),
            s.errors.load(Ordering::Relaxed).to_string(),
            cache.hits.to_string(),
            cache.misses.to_string(),
            cache.evictions.to_string(),
        ]);
    }
    rows.done("SHOW");
}

/// The statements of the process-wide registry (PgDog's `SHOW PREPARED`):
/// pgshard's name on servers, the text, the parameter types a client's
/// Parse gave, and how many clients hold it under a name of their own.
pub(super) fn show_prepared_statements(state: &State, out: &mut BytesMut) {
    let mut rows = Rows::new(out, &["name", "statement", "parameter_types", "used_by"]);
    for statement in state.statements.statements() {
        let types: Vec<String> = statement.param_types.iter().map(u32::to_string).collect();
        rows.row(&[
            String::from_utf8_lossy(&statement.name).into_owned(),
            String::from_utf8_lossy(&statement.query).into_owned(),
            types.join(","),
            // The registry and this list hold one reference each; the
            // others are clients'.
            Arc::strong_count(&statement).saturating_sub(2).to_string(),
        ]);
    }
    rows.done("SHOW");
}
