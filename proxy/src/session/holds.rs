//! A move's cutover seen from a session: a statement whose route touches a
//! moving logical shard (`Routed::touches_moving`, the router's marker)
//! counts the session's transaction in flight on the cluster's moving
//! shards, or, while the cutover holds them, waits (at most
//! `cutover_timeout`) and is routed again with the placement as it is
//! then (or, when pgshard shuts down meanwhile, gets 57P01 and never
//! runs). A transaction counted already never waits (the cutover waits for
//! it instead), so its own statements cannot deadlock on the hold. The
//! count is given back when the session is idle: no transaction, nothing
//! in flight.
//!
//! Before a move's mark: a session on a sharded cluster is counted at the
//! cluster's routing generation (`pool::clusters::keyless`) before it
//! routes, and stays counted until it is idle once it routed a keyless
//! statement (one for every database: [`Counted::keyless`]); a session
//! that routed only keyed statements gives the count back between
//! statements. A move's mark waits for the sessions counted before its
//! marker was installed, so no keyless statement routed without it still
//! runs once the move copies rows. On a cluster whose move records this
//! instance never read, statements wait for the first read (bounded).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use router::cache::Lookup;
use router::route::{Overrides, ParamValue, RouteError, Routed};
use router::summary::Summary;

use super::dispatch::Shards;
use super::{End, Session};
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::sqlstate;

/// What the session is counted in for moves.
#[derive(Debug, Default)]
pub(super) struct Counted {
    /// The transaction in flight on the cluster's moving logical shards,
    /// until the session is idle.
    move_hold: Option<crate::pool::gate::InFlight>,
    /// The session at the routing generation it began routing in.
    routing: Option<crate::pool::clusters::keyless::Flight>,
    /// A statement routed to every database since `routing` was taken
    /// (set where routes become databases: `Session::every_database`).
    keyless: AtomicBool,
}

impl Counted {
    /// A route went to every database.
    pub(super) fn keyless(&self) {
        self.keyless.store(true, Ordering::Relaxed);
    }
}

/// What a statement that touches a moving shard does.
pub(super) enum Pass {
    /// It is counted in flight: send it.
    Go,
    /// It waited for the hold to be let go: route it again.
    Again,
    /// It waited `cutover_timeout`: the client gets this error.
    TimedOut(ClientError),
}

/// A simple query's route, through the cutover's hold.
pub(super) enum Held {
    Routed(Routed),
    /// The router's refusal (or a statement pgshard splits itself).
    Unrouted(RouteError),
    /// It waited `cutover_timeout`.
    TimedOut(ClientError),
}

impl Session {
    /// Route a simple query's statement (`lookup`), waiting for the
    /// cutover's hold of the moving shards it touches and routing it again
    /// after each wait.
    pub(super) async fn route_holding(
        &mut self,
        lookup: &Lookup,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
    ) -> Result<Held, End> {
        loop {
            let routed = match lookup
                .entry
                .route(params, overrides, self.cluster.sharding())
            {
                Ok(routed) => routed,
                Err(err) => return Ok(Held::Unrouted(err)),
            };
            match self.pass_hold(routed.touches_moving).await? {
                Pass::Go => return Ok(Held::Routed(routed)),
                Pass::Again => continue,
                Pass::TimedOut(error) => return Ok(Held::TimedOut(error)),
            }
        }
    }

    /// A statement may go on: counted in flight when it touches a moving
    /// shard, or after waiting for the cutover's hold ([`Pass::Again`]:
    /// route it again).
    pub(super) async fn pass_hold(&mut self, touches_moving: bool) -> Result<Pass, End> {
        if !touches_moving || self.enter_moving() {
            return Ok(Pass::Go);
        }
        let timeout = self.shared.config().general.cutover_timeout();
        let started = std::time::Instant::now();
        let shared = std::sync::Arc::clone(&self.shared);
        let released = shared
            .gate
            .wait_shards_released(&self.info.database, timeout);
        let released = self.client.watch(released).await?;
        self.shared.metrics.move_held(started.elapsed());
        self.pipeline.clock_mut().waiting();
        self.follow_config();
        Ok(match released {
            true => Pass::Again,
            false if self.shared.is_shutting_down() => Pass::TimedOut(held_at_shutdown()),
            false => Pass::TimedOut(held_too_long(timeout)),
        })
    }

    /// Count the session's transaction in flight on the cluster's moving
    /// shards (a counted one stays counted); `false` while they are held.
    pub(super) fn enter_moving(&mut self) -> bool {
        if self.routing.counted.move_hold.is_none() {
            self.routing.counted.move_hold = self.shared.gate.shards.enter(&self.info.database);
        }
        self.routing.counted.move_hold.is_some()
    }

    /// Before a simple query pgshard splits by row itself (COPY FROM, a
    /// row move; a split INSERT holds by its rows' keys) that names a
    /// moving group: wait until it is counted in flight. The error: it
    /// waited too long.
    pub(super) async fn hold_row_split(
        &mut self,
        err: &RouteError,
        summary: &Summary,
    ) -> Result<Option<ClientError>, End> {
        let split = matches!(
            err,
            RouteError::CopyIntoSharded { .. } | RouteError::ShardingKeyChange { .. }
        );
        if !split || !router::route::names_moving(summary, self.cluster.sharding()) {
            return Ok(None);
        }
        self.hold_counted().await
    }

    /// Wait until the session is counted in flight on the moving shards.
    /// The error: it waited too long.
    pub(super) async fn hold_counted(&mut self) -> Result<Option<ClientError>, End> {
        loop {
            match self.pass_hold(true).await? {
                Pass::Go => return Ok(None),
                Pass::Again => continue,
                Pass::TimedOut(error) => return Ok(Some(error)),
            }
        }
    }

    /// A Bind (or an SQL EXECUTE's, or a later Bind of a segment) that
    /// touches a moving shard but was not counted in flight before it was
    /// routed (`Session::wait_bind_hold` in `routing/bind.rs`; the hold
    /// began in between): refused, safe to retry. `None`: it may go.
    pub(super) fn bind_hold_refusal(&mut self, touches_moving: bool) -> Option<ClientError> {
        if !touches_moving || self.enter_moving() {
            return None;
        }
        Some(
            ClientError::new(
                sqlstate::LOCK_NOT_AVAILABLE,
                "a move of the logical shard this statement touches is switching databases, and this statement could not wait for it where it came (a Bind routed as the move's hold began, or one inside an extended-protocol batch for several shards); nothing ran: send it again",
            )
            .retry_safe(),
        )
    }

    /// Before routing on a sharded cluster: count the session at its
    /// cluster's routing generation (`pool::clusters::keyless`) unless it
    /// is counted already, before it looks at the installed sharding model
    /// (a move's mark waits for the sessions counted before its marker was
    /// installed; one counted after routes with the marker); then moves
    /// read lately (`Shared::check_fresh`: with plain sharded tables, a
    /// cluster never read counts as not read lately).
    pub(super) fn count_routing(&mut self) {
        if self.routing.counted.routing.is_none() {
            let flights = &self.shared.clusters.keyless;
            self.routing.counted.routing = Some(flights.enter(&self.info.database));
        }
        let plain = !self.cluster.sharding().tables.is_empty();
        self.shared.check_fresh(&self.info.database, plain);
    }

    /// Every database of the cluster, for a route without a key: the
    /// session's routing count is kept until it is idle.
    pub(super) fn every_database(&self) -> Shards {
        self.routing.counted.keyless();
        (0..self.cluster.shards()).collect()
    }

    /// Before a simple query or a Bind on a sharded cluster is routed: the
    /// cluster's move records read once (below), the catalog current.
    pub(super) async fn before_routing(&mut self) -> Result<(), End> {
        self.await_first_read().await?;
        self.catalog_current().await;
        Ok(())
    }

    /// On a cluster with plain sharded tables whose move records this
    /// instance has never read (its databases did not answer since
    /// start-up, or RELOAD added the cluster): wait for the first read, at
    /// most `connect_timeout` from the first statement that waited. Past
    /// it, keyless statements are refused (`KeylessUnread`,
    /// `Shared::check_fresh`) until a read succeeds.
    async fn await_first_read(&mut self) -> Result<(), End> {
        let freshness = &self.shared.clusters.freshness;
        if self.cluster.sharding().tables.is_empty() || freshness.ever_read(&self.info.database) {
            return Ok(());
        }
        let bound = self.shared.config().general.connect_timeout();
        let shared = std::sync::Arc::clone(&self.shared);
        let read = shared
            .clusters
            .freshness
            .first_read(&self.info.database, bound);
        self.client.watch(read).await?;
        self.pipeline.clock_mut().waiting();
        Ok(())
    }

    /// Between statements (nothing awaited from a server, no batch or COPY
    /// under way): the routing count of a session that routed no keyless
    /// statement since it was taken is given back. Idle besides (no
    /// transaction): every count.
    pub(super) fn leave_moving_if_idle(&mut self) {
        let counted = &self.routing.counted;
        if (counted.move_hold.is_none() && counted.routing.is_none())
            || self.plan.awaiting_server()
            || self.plan.pending_syncs() > 0
            || self.phase.holds_batch()
            || self.pipeline.in_copy_in()
        {
            return;
        }
        let keyless = self.routing.counted.keyless.load(Ordering::Relaxed);
        if self.txn.active(self.server_view())
            || self.txn.spans()
            || self
                .attached
                .status()
                .is_some_and(|s| s != TransactionStatus::Idle)
        {
            if !keyless {
                self.routing.counted.routing = None;
            }
            return;
        }
        self.routing.counted = Counted::default();
    }
}

/// Whether a Bind routed so touches a moving shard: by its route, or, for
/// the statements pgshard splits by row itself (a multi-row INSERT, COPY
/// FROM, a row move), when it names a table of the moving group.
pub(super) fn touches(
    routed: &Result<Routed, RouteError>,
    summary: &Summary,
    sharding: &router::sharding::Sharding,
) -> bool {
    match routed {
        Ok(routed) => routed.touches_moving,
        Err(
            RouteError::MultiRowInsert { .. }
            | RouteError::CopyIntoSharded { .. }
            | RouteError::ShardingKeyChange { .. },
        ) => router::route::names_moving(summary, sharding),
        Err(_) => false,
    }
}

/// The error of a statement held when pgshard began to shut down (the
/// move's cutover is then abandoned, or taken over by another instance).
fn held_at_shutdown() -> ClientError {
    ClientError::new(
        sqlstate::ADMIN_SHUTDOWN,
        "pgshard is shutting down while a move of the logical shard this statement touches holds it; nothing ran: send it again (through another pgshard instance, or once this one is back)",
    )
    .retry_safe()
}

/// The error of a statement held longer than `cutover_timeout`.
fn held_too_long(timeout: Duration) -> ClientError {
    ClientError::new(
        sqlstate::LOCK_NOT_AVAILABLE,
        format!(
            "this statement waited cutover_timeout ({} ms) for a move of the logical shard it touches to switch databases, and the move has not let it go; nothing ran: send it again (the move goes back to the old database when its cutover takes longer)",
            timeout.as_millis()
        ),
    )
    .retry_safe()
}
