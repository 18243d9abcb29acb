//! The admin console's `SHOW STATS`: one row per pool, PgBouncer's columns
//! in its order, then pgshard's (user, shard, errors, the AST cache's
//! counters).
//!
//! PgBouncer's `avg_*_count`, `avg_recv` and `avg_sent` are per second over
//! its last stats period; pgshard keeps no periods, so they are per second
//! since the pool was created. Parse and Bind counts are not kept: empty.

use std::sync::atomic::Ordering;

use bytes::BytesMut;

use super::Rows;
use crate::state::State;

const COLUMNS: [&str; 29] = [
    "database",
    "total_server_assignment_count",
    "total_xact_count",
    "total_query_count",
    "total_received",
    "total_sent",
    "total_xact_time",
    "total_query_time",
    "total_wait_time",
    "total_client_parse_count",
    "total_server_parse_count",
    "total_bind_count",
    "avg_server_assignment_count",
    "avg_xact_count",
    "avg_query_count",
    "avg_recv",
    "avg_sent",
    "avg_xact_time",
    "avg_query_time",
    "avg_wait_time",
    "avg_client_parse_count",
    "avg_server_parse_count",
    "avg_bind_count",
    "user",
    "shard",
    "total_errors",
    // The AST cache is shared by every pool: its counters are process-wide,
    // the same on each row (per statement: SHOW QUERY_CACHE).
    "query_cache_hits",
    "query_cache_misses",
    "query_cache_evictions",
];

pub(super) fn show_stats(state: &State, out: &mut BytesMut) {
    let cache = state.cache.stats();
    let mut rows = Rows::new(out, &COLUMNS);
    for pool in state.all_pools() {
        let s = &pool.stats;
        let load = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        let xacts = load(&s.xact_count);
        let (xact_time, wait_time) = (load(&s.xact_time_us), load(&s.wait_time_us));
        // Checkouts and requests, as the pool's histograms counted them.
        let (assignments, _) = pool.histograms.wait.totals();
        let (queries, query_time) = pool.histograms.query.totals();
        let query_time = u64::try_from(query_time.as_micros()).unwrap_or(u64::MAX);
        let totals = [
            assignments,
            xacts,
            load(&s.query_count),
            load(&s.bytes_received),
            load(&s.bytes_sent),
        ];
        let seconds = pool.age().as_secs().max(1);
        let mut row = vec![pool.cluster.clone()];
        row.extend(totals.iter().map(u64::to_string));
        row.extend([xact_time, query_time, wait_time].map(|t| t.to_string()));
        row.extend([String::new(), String::new(), String::new()]);
        row.extend(totals.iter().map(|total| (total / seconds).to_string()));
        row.extend([
            (xact_time / xacts.max(1)).to_string(),
            (query_time / queries.max(1)).to_string(),
            (wait_time / assignments.max(1)).to_string(),
            String::new(),
            String::new(),
            String::new(),
            pool.user.clone(),
            pool.shard.to_string(),
            load(&s.errors).to_string(),
            cache.hits.to_string(),
            cache.misses.to_string(),
            cache.evictions.to_string(),
        ]);
        rows.row(&row);
    }
    rows.done("SHOW");
}
