//! A session's server connections: checking one out for the shard a statement needs (waiting
//! out PAUSE and the pool while watching the client), keeping its settings in line with the
//! client's, and giving it back clean (or closed) when the transaction ends or the client leaves.

use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, warn};

use super::reply_plan::Step;
use super::transaction::Target;
use super::{count, End, Session, Shared, CLIENT_ACTIVE, CLIENT_IDLE, CLIENT_WAITING};
use crate::conn::cancel::CancelTarget;
use crate::conn::server::ServerError;
use crate::conn::settings::ParamSet;
use crate::errors::ClientError;
use crate::pool::{PoolError, Pooled};
use crate::protocol::backend::TransactionStatus;
use crate::protocol::sqlstate;

impl Session {
    /// Make sure a server is attached; if none can be had, reply with the
    /// error and return `Ok(false)`.
    pub(super) async fn ensure_server_or_reply(
        &mut self,
        target: Target,
        simple: bool,
    ) -> Result<bool, End> {
        if self.sharded() && !self.fit_server(target, simple).await? {
            return Ok(false);
        }
        if self.attached.is_none() {
            let shard = match target {
                Target::Shard(shard) | Target::Near(shard) => shard,
                Target::Any if self.sharded() => self.any_shard(),
                Target::Any => 0,
            };
            if let Err(err) = self.attach(shard).await? {
                let error = err.client_error(&self.info.database, shard);
                self.local_error(error, simple);
                return Ok(false);
            }
        }
        if matches!(target, Target::Shard(_)) {
            self.open_deferred();
        }
        if self.routing.take_writes() && self.txn.join_script().is_some() {
            self.attached.note_write(self.routing.shard());
        }
        self.resync_settings();
        Ok(true)
    }

    /// Session mode: after a RESET (or a SET to DEFAULT), the server holds
    /// its own default where the client's startup value belongs (Postgres
    /// resets to the startup packet's values, which this server connection
    /// never saw): set them before the next statement, outside any
    /// transaction.
    pub(super) fn resync_settings(&mut self) {
        if !self.settings.out_of_line() || self.plan.awaiting_server() {
            return;
        }
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        if server.conn.status() != TransactionStatus::Idle {
            return;
        }
        self.settings.brought_in_line();
        if let Some(sql) = self.settings.params.sync_sql(&server.conn.applied) {
            server.conn.applied = self.settings.params.clone();
            self.pipeline.query(&sql);
            self.plan.push(Step::injected_query());
        }
    }

    /// Check a server of `shard` out and attach it to this session.
    pub(super) async fn attach(&mut self, shard: usize) -> Result<Result<(), PoolError>, End> {
        let read = self.routing.take_replica_ok();
        // The usual case polls no future: an idle server now, its settings
        // the client's.
        let server = match self.checkout_now(shard, read) {
            Some(server)
                if self
                    .settings
                    .params
                    .sync_sql(&server.conn.applied)
                    .is_none() =>
            {
                server
            }
            // (Moved into the slow path: a server dropped only at the end
            // of this match would hold its place while that path waits.)
            ready => match self.checkout_server_with(shard, read, ready).await? {
                Ok(server) => server,
                Err(err) => return Ok(Err(err)),
            },
        };
        // (`set` would build its future first.)
        if let Err(target) = self.info.cancel.try_set(Some(cancel_target(&server))) {
            self.set_cancel_target(target).await;
        }
        self.info.set_state(CLIENT_ACTIVE);
        self.attached.attach(shard, server);
        self.routing.attached_to(shard);
        Ok(Ok(()))
    }

    /// An idle primary server of `shard` now, unless PAUSE holds the
    /// database or none is ready (its settings not brought in line yet).
    fn checkout_now(&mut self, shard: usize, read: bool) -> Option<Pooled> {
        if let Some(pinned) = self.portals.cursors.unpin(shard) {
            return Some(pinned);
        }
        if self.shared.gate.holds(&self.info.database) {
            return None;
        }
        self.follow_config();
        let now = self.pipeline.clock_mut().now();
        self.cluster.pools().get(shard)?.checkout_now(read, now)
    }

    /// Check a server of `shard` out of its pool (a replica's if `read`
    /// allows it) and bring its settings in line. Waiting (for PAUSE to
    /// end, for a free connection) ends early, with `Err`, if the client
    /// leaves meanwhile.
    pub(super) async fn checkout_server(
        &mut self,
        shard: usize,
        read: bool,
    ) -> Result<Result<Pooled, PoolError>, End> {
        self.checkout_server_with(shard, read, None).await
    }

    /// [`checkout_server`](Self::checkout_server), with the server if one
    /// is checked out already (`ready`): its settings brought in line.
    async fn checkout_server_with(
        &mut self,
        shard: usize,
        read: bool,
        ready: Option<Pooled>,
    ) -> Result<Result<Pooled, PoolError>, End> {
        let mut server = match ready.or_else(|| self.portals.cursors.unpin(shard)) {
            Some(server) => server,
            None => match self.checkout_waiting(shard, read).await? {
                Ok(server) => server,
                Err(err) => return Ok(Err(err)),
            },
        };
        if let Some(sql) = self.settings.params.sync_sql(&server.conn.applied) {
            let ran = server.conn.run(&sql).await;
            self.pipeline.clock_mut().waiting();
            match ran {
                Ok(Ok(())) => server.conn.applied = self.settings.params.clone(),
                Ok(Err(refusal)) => {
                    // The client's settings were valid when it set them; a
                    // server that refuses them now is not one to use.
                    warn!(parent: &self.span, %refusal, "server refused the client's settings");
                    return Ok(Err(PoolError::Server(ServerError::Refused {
                        code: crate::protocol::sqlstate::INVALID_PARAMETER_VALUE.to_owned(),
                        message: refusal.0,
                    })));
                }
                Err(err) => return Ok(Err(PoolError::Server(err))),
            }
        }
        Ok(Ok(server))
    }

    /// A server of `shard` from its pool, waiting out PAUSE and a full
    /// pool; the wait ends early, with `Err`, if the client leaves.
    async fn checkout_waiting(
        &mut self,
        shard: usize,
        read: bool,
    ) -> Result<Result<Pooled, PoolError>, End> {
        if self.shared.gate.holds(&self.info.database) {
            let resumed = self.shared.gate.wait_resumed(&self.info.database);
            let _ = self.client.watch(resumed).await?;
            self.pipeline.clock_mut().waiting();
        }
        self.follow_config();
        let pools = Arc::clone(self.cluster.pools());
        let Some(pools) = pools.get(shard) else {
            return Ok(Err(PoolError::Closed));
        };
        if let Some(server) = pools.checkout_now(read, self.pipeline.clock_mut().now()) {
            return Ok(Ok(server));
        }
        self.info.set_state(CLIENT_WAITING);
        let checkout = pools.checkout(read);
        let result = self.client.watch(checkout).await.map_err(End::from);
        self.pipeline.clock_mut().waiting();
        self.info.set_state(CLIENT_IDLE);
        result
    }

    /// Before routing: on a sharded cluster, counted and fresh (`Session::count_routing`);
    /// the pools and sharding model of a config changed since.
    pub(super) fn follow_config(&mut self) {
        if self.sharded() {
            self.count_routing();
        }
        let generation = self.shared.clusters.generation();
        if self.cluster.stale(generation) {
            let pools = self.shared.pools(&self.info.database, &self.info.user);
            let (sharding, engine) = sharding_of(&self.shared, &self.info.database);
            let sharding = self
                .routing
                .own_schema()
                .over(sharding, self.cluster.sharding());
            self.cluster.reloaded(generation, pools, (sharding, engine));
            self.routing.config_changed();
        }
    }

    pub(super) async fn set_cancel_target(&self, target: Option<CancelTarget>) {
        self.info.cancel.set(target).await;
    }

    /// The main server did not finish within `query_timeout`: cancel its
    /// statement (noting when in `cancelled`), or, when a cancel went
    /// unanswered for its grace already, give up on the server.
    pub(super) async fn on_query_timeout(
        &mut self,
        query_timeout: Option<Duration>,
        cancelled: &mut Option<tokio::time::Instant>,
    ) -> Result<(), End> {
        match (*cancelled, query_timeout) {
            (Some(_), Some(t)) => Err(self.give_up_on_server(t)),
            _ => {
                self.cancel_running_query().await;
                *cancelled = Some(tokio::time::Instant::now());
                Ok(())
            }
        }
    }

    /// A cancel sent at `query_timeout` did not end the statement within
    /// its [`cancel_grace`]: the server (or the network to it) is not there.
    /// Close its connection and end the client with 57014, as PgBouncer
    /// does at `query_timeout`: what the server did with the statement is
    /// unknown, so the session cannot go on.
    pub(super) fn give_up_on_server(&mut self, query_timeout: Duration) -> End {
        let shard = self.attached.main().map(|s| s.pool().shard);
        warn!(parent: &self.span, ?query_timeout, ?shard, "query_timeout: the server did not answer its cancel; closing it");
        self.lose_main();
        End::Fatal(query_timeout_error(query_timeout, shard))
    }

    /// `query_timeout` passed: cancel the running query; the server answers
    /// with its "canceling statement" error.
    pub(super) async fn cancel_running_query(&mut self) {
        if let Some(server) = self.attached.main() {
            warn!(parent: &self.span, timeout = ?server.pool().settings.query_timeout, "query_timeout: cancelling");
            let target = cancel_target(server);
            tokio::spawn(async move { crate::conn::cancel::send(&target).await });
        }
    }

    /// Between wake-ups: write what is buffered and, in transaction mode,
    /// give back servers whose transaction is over, polling no future;
    /// `false` when the sockets did not take everything or a server needs
    /// cleaning first ([`settle`](Self::settle) finishes).
    pub(super) fn settle_now(&mut self) -> Result<bool, End> {
        Ok(self.flush_now()? && (!self.release_due() || self.release_clean()))
    }

    /// What [`settle_now`](Self::settle_now) left.
    pub(super) async fn settle(&mut self) -> Result<(), End> {
        self.flush().await?;
        self.maybe_release().await
    }

    /// In transaction mode, give the server back once the transaction is
    /// over and nothing is in flight.
    pub(super) async fn maybe_release(&mut self) -> Result<(), End> {
        if !self.release_due() || self.release_clean() {
            return Ok(());
        }
        // One by one, the main first: the list keeps its memory.
        while let Some(server) = self.attached.take_main() {
            self.release(server, false).await;
        }
        Ok(())
    }

    /// Transaction mode, and the held servers' transaction is over with
    /// nothing in flight.
    pub(super) fn release_due(&self) -> bool {
        if !self.cluster.transaction_mode() {
            return false;
        }
        let Some(server) = self.attached.main() else {
            return false;
        };
        // A failed transaction runs nothing more: its servers go back
        // (rolled back) once the main one is done.
        let failed = self.txn.failed();
        !(self.plan.awaiting_server()
            || self.pipeline.in_flight()
            || (server.conn.status() != TransactionStatus::Idle && !failed)
            || !self.pipeline.queued().is_empty())
    }

    /// Give back the held servers that need no cleanup, polling no future
    /// (the usual end of a transaction); `false` when one is left that
    /// needs it, or whose cancel target is being used (for `release`).
    pub(super) fn release_clean(&mut self) -> bool {
        loop {
            let Some(server) = self.attached.main() else {
                return true;
            };
            if server.conn.status() != TransactionStatus::Idle
                || server.conn.dirty
                || self.portals.cursors.keeps(server)
            {
                return false;
            }
            if self.info.cancel.try_set(None).is_err() {
                return false;
            }
            let Some(server) = self.attached.take_main() else {
                return true;
            };
            let now = self.note_release(&server);
            let pool = Arc::clone(server.pool());
            pool.checkin_at(server, now);
        }
    }

    /// What giving `server` back records: the client idle, the time it
    /// held the server (the reading returned).
    fn note_release(&mut self, server: &Pooled) -> std::time::Instant {
        self.pipeline.unnamed_dropped_on(server.conn.id);
        self.info.set_state(CLIENT_IDLE);
        let now = self.pipeline.clock_mut().now();
        let held = now.saturating_duration_since(server.checked_out_at);
        let pool = server.pool();
        count(&pool.stats.xact_time_us, held.as_micros() as usize);
        pool.histograms.observe_transaction(held);
        now
    }

    /// Hand a server back clean, or close it. `reset` runs DISCARD ALL
    /// (session mode's end); a dirty server gets it regardless.
    pub(super) async fn release(&mut self, server: Pooled, reset: bool) {
        let mut kept = Some(server);
        if !reset && self.keep_for_cursors(&mut kept).await {
            return;
        }
        let Some(mut server) = kept else {
            return;
        };
        self.set_cancel_target(None).await;
        let now = self.note_release(&server);
        let pool = Arc::clone(server.pool());
        if server.conn.status() == TransactionStatus::Idle && !reset && !server.conn.dirty {
            // Nothing to clean: the usual end of a transaction.
            pool.checkin_at(server, now);
            return;
        }
        let cleanup = async {
            if server.conn.status() != TransactionStatus::Idle {
                server.conn.run("ROLLBACK").await.ok()?.ok()?;
            }
            if reset || server.conn.dirty {
                server.conn.run("DISCARD ALL").await.ok()?.ok()?;
                server.conn.prepared.clear();
                server.conn.applied = ParamSet::default();
                server.conn.dirty = false;
            }
            Some(())
        };
        match tokio::time::timeout(CLEANUP_TIMEOUT, cleanup).await {
            Ok(Some(())) => pool.checkin_at(server, now),
            _ => debug!(parent: &self.span, "server connection closed instead of reset"),
        }
    }

    /// Serve the client until it leaves, or until the admin console's
    /// KILL of its database ends the session.
    pub(super) async fn serve_unless_killed(&mut self) -> End {
        let info = Arc::clone(&self.info);
        let end = tokio::select! {
            biased;
            end = self.serve() => Some(end),
            () = info.interrupt.killed() => None,
        };
        end.unwrap_or_else(|| {
            End::Fatal(ClientError::new(
                sqlstate::ADMIN_SHUTDOWN,
                "terminating connection due to administrator command (KILL)",
            ))
        })
    }

    /// The client is gone: leave its server rolled back (and reset in
    /// session mode) before anyone else gets it. After KILL its servers
    /// are closed instead (a query in flight cancelled first).
    pub(super) async fn finish(&mut self) {
        let reset = self.cluster.session_mode();
        let killed = self.info.interrupt.is_killed();
        if !killed {
            // Those WITH HOLD cursors kept go back too (after KILL they
            // close with the session).
            self.release_pins(reset).await;
        }
        let mut held = self.attached.take_all().into_iter();
        let Some((_, server)) = held.next() else {
            return;
        };
        if killed {
            if self.plan.awaiting_server() {
                let target = cancel_target(&server);
                tokio::spawn(async move { crate::conn::cancel::send(&target).await });
            }
            self.set_cancel_target(None).await;
            return;
        }
        // Servers besides the main one run nothing now: rolled back (and
        // reset) as they go back.
        for (_, other) in held {
            self.release(other, reset).await;
        }
        if self.plan.awaiting_server() || self.pipeline.in_flight() {
            // A query is still running: closing the connection makes
            // Postgres abort it and roll back; nothing else is as sure. A
            // cancel first stops a statement that would not notice the
            // closed socket until it next writes (pg_sleep, a long scan).
            if self.plan.awaiting_server() {
                let target = cancel_target(&server);
                tokio::spawn(async move { crate::conn::cancel::send(&target).await });
            }
            self.set_cancel_target(None).await;
            return;
        }
        self.release(server, reset).await;
    }
}

/// How long cleaning a server up may take before it is closed instead.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) fn cancel_target(server: &Pooled) -> CancelTarget {
    server.conn.cancel_key()
}

/// A cluster's sharding model and the configured parser engine.
pub(super) fn sharding_of(
    shared: &Shared,
    cluster: &str,
) -> (
    Arc<router::sharding::Sharding>,
    router::sharding::ParserEngine,
) {
    let config = shared.config();
    let sharding = config
        .clusters
        .get(cluster)
        .map(|c| Arc::clone(&c.sharding))
        .unwrap_or_default();
    (sharding, config.general.query_parser_engine)
}

/// Completes `query_timeout` after the client's request (`since`), whatever the server
/// sent since, or once the statement cancelled at `cancelled` outlives its grace.
pub(super) async fn query_timer(
    timeout: Option<Duration>,
    since: tokio::time::Instant,
    cancelled: Option<tokio::time::Instant>,
) {
    match (timeout, cancelled) {
        (Some(t), None) => tokio::time::sleep_until(since + t).await,
        (Some(t), Some(at)) => tokio::time::sleep_until(at + cancel_grace(t)).await,
        (None, _) => std::future::pending().await,
    }
}

/// How long a server has to answer the cancel pgshard sends at
/// `query_timeout` before its connection is closed: a server that is there
/// answers within milliseconds, so a second at most (less for shorter
/// timeouts) bounds the client's wait at about `query_timeout` plus this.
pub(super) fn cancel_grace(query_timeout: Duration) -> Duration {
    query_timeout.min(Duration::from_secs(1))
}

/// The error a client gets when pgshard gave up on a server at
/// `query_timeout` (`shard`: the one that did not answer, when known).
pub(super) fn query_timeout_error(query_timeout: Duration, shard: Option<usize>) -> ClientError {
    let which = shard.map_or_else(|| "a shard".to_owned(), |s| format!("shard {s}"));
    ClientError::new(
        sqlstate::QUERY_CANCELED,
        format!(
            "canceling statement due to query_timeout: {which} sent nothing for {} ms and did not answer a cancel request within {} ms, so pgshard closed its connection",
            query_timeout.as_millis(),
            cancel_grace(query_timeout).as_millis()
        ),
    )
}
