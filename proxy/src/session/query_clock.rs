//! How long a session's requests take on servers: from the message that
//! makes a server answer (a Query, a Sync) to the ReadyForQuery that ends
//! the answer. Each is observed into the pool's query-time histogram, and
//! one that took at least `log_min_duration_statement` is logged as a slow
//! query with its route (inside the client's span: user, database, peer,
//! application_name).

use std::time::{Duration, Instant};

use tracing::{info, Span};

use crate::metrics::RouteKind;
use crate::pool::Pool;

/// Most bytes of a statement's text a slow-query line carries.
const STATEMENT_LOG_LIMIT: usize = 1024;

/// The request being answered: when it was sent and where it was routed.
#[derive(Debug, Default)]
pub(super) struct QueryClock {
    started: Option<Instant>,
    /// The routing decision of the last statement on a sharded cluster
    /// (`None`: not routed, as on a cluster of one database).
    route: Option<RouteKind>,
    /// The last simple query's text, kept only while slow queries are
    /// logged (it is logged with them).
    statement: String,
    threshold: Option<Duration>,
    /// The clock read in this wake-up (forgotten whenever the session
    /// waits): a checkout, the request it sends and the release of the
    /// server that answers share one reading.
    reading: Option<Instant>,
}

impl QueryClock {
    pub(super) fn new(threshold: Option<Duration>) -> QueryClock {
        QueryClock {
            threshold,
            ..QueryClock::default()
        }
    }

    /// A request went to a server: timed from now, unless one already is
    /// (a pipeline is timed from its first request).
    pub(super) fn start(&mut self) {
        if self.started.is_none() {
            self.started = Some(self.now());
        }
    }

    /// The session waits (for its sockets, a pool, a server): a reading
    /// taken before is stale.
    pub(super) fn waiting(&mut self) {
        self.reading = None;
    }

    /// The time now, as read once in this wake-up.
    pub(super) fn now(&mut self) -> Instant {
        *self.reading.get_or_insert_with(Instant::now)
    }

    pub(super) fn routed(&mut self, route: RouteKind) {
        self.route = Some(route);
    }

    /// The text of the simple query being sent, for the log.
    pub(super) fn statement(&mut self, sql: &[u8]) {
        if self.threshold.is_some() {
            let sql = String::from_utf8_lossy(sql);
            self.statement.clear();
            let mut end = sql.len().min(STATEMENT_LOG_LIMIT);
            while !sql.is_char_boundary(end) {
                end -= 1;
            }
            self.statement.push_str(&sql[..end]);
        }
    }

    /// A ReadyForQuery from `pool`'s server ended the request; `more` if
    /// further requests are still being answered (timed from now).
    pub(super) fn stop(&mut self, span: &Span, pool: &Pool, shard: usize, more: bool) {
        let Some(started) = self.started.take() else {
            return;
        };
        // Read afresh: the answer is what woke the session up.
        let now = Instant::now();
        self.reading = Some(now);
        let took = now.saturating_duration_since(started);
        pool.histograms.observe_query(took);
        self.log_if_slow(span, took, &[shard]);
        if more {
            self.started = Some(now);
        }
    }

    /// A request answered by several shards at once (a fan-out), which
    /// observes each pool's histogram itself.
    pub(super) fn log_if_slow(&self, span: &Span, took: Duration, shards: &[usize]) {
        if self.threshold.is_some_and(|threshold| took >= threshold) {
            let route = self.route.map_or("direct", RouteKind::label);
            info!(
                parent: span,
                duration_ms = took.as_secs_f64() * 1000.0,
                route,
                shards = ?shards,
                statement = %self.statement,
                "slow query"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_kept_only_when_logged_and_cut_on_a_char_boundary() {
        let mut off = QueryClock::new(None);
        off.statement(b"SELECT 1");
        assert!(off.statement.is_empty());
        let mut on = QueryClock::new(Some(Duration::ZERO));
        let long = format!("SELECT '{}'", "é".repeat(STATEMENT_LOG_LIMIT));
        on.statement(long.as_bytes());
        assert!(on.statement.len() <= STATEMENT_LOG_LIMIT);
        assert!(long.starts_with(&on.statement));
    }

    #[test]
    fn a_pipeline_is_timed_from_its_first_request() {
        let mut clock = QueryClock::new(None);
        clock.start();
        let first = clock.started;
        std::thread::sleep(Duration::from_millis(2));
        clock.start();
        assert_eq!(clock.started, first);
    }
}
