//! Health checks and bans of a pool's database, as PgDog does them: a reused
//! connection that sat idle past `healthcheck_interval` runs an empty query
//! before a client gets it; every `idle_healthcheck_interval` (after
//! `idle_healthcheck_delay`) a replica is checked in the background through
//! an idle connection, else a new one (connecting gets `connect_timeout`);
//! the check's query gets `healthcheck_timeout`; a failed check closes the
//! other idle connections due for one, untried. A replica that fails a check, refuses a
//! connection or drops one mid-query is *banned*: it serves no reads for
//! `ban_timeout` (`balancer.rs` skips it). A primary is never banned (there
//! is nowhere else for its writes to go) nor checked in the background; a
//! failed check of one of its connections only drops that connection. An
//! `auto` server is banned while it is a replica, and checked in the
//! background by its shard's monitor (`monitor.rs`), not here.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use router::config::Role;
use tracing::warn;

use super::places::Place;
use super::roles::RoleNow;
use super::{Idle, Pool};
use crate::conn::server::ServerConn;
use crate::lock::lock;
use crate::protocol::backend::TransactionStatus;

impl Pool {
    /// Ban this pool's database from serving reads for `ban_timeout`
    /// (replicas only; a ban in force is not extended).
    pub fn ban(&self, why: &str) {
        if self.serves() != RoleNow::Replica {
            return;
        }
        let now = Instant::now();
        let mut banned = lock(&self.banned_until);
        if banned.is_some_and(|until| until > now) {
            return;
        }
        *banned = Some(now + self.settings.health.ban_timeout);
        self.stats.bans.fetch_add(1, Ordering::Relaxed);
        warn!(
            cluster = %self.cluster,
            user = %self.user,
            shard = self.shard,
            server = %format!("{}:{}", self.target.host, self.target.port),
            ban_timeout = ?self.settings.health.ban_timeout,
            "replica banned: {why}"
        );
    }

    /// Banned right now (a ban ends by itself after `ban_timeout`).
    pub fn is_banned(&self) -> bool {
        lock(&self.banned_until).is_some_and(|until| until > Instant::now())
    }

    /// `conn` sat idle past `healthcheck_interval`.
    pub(super) fn check_due(&self, conn: &ServerConn, now: Instant) -> bool {
        now.saturating_duration_since(conn.last_used.max(conn.checked))
            >= self.settings.health.interval
    }

    /// One health check: an empty query answered within `healthcheck_timeout`.
    pub(super) async fn check(&self, conn: &mut ServerConn) -> bool {
        let timeout = self.settings.health.timeout;
        let passed = matches!(
            tokio::time::timeout(timeout, conn.run(";")).await,
            Ok(Ok(Ok(())))
        ) && conn.status() == TransactionStatus::Idle;
        if passed {
            conn.checked = Instant::now();
        } else {
            self.stats.errors.fetch_add(1, Ordering::Relaxed);
            self.ban("health check failed");
            self.retire_unchecked();
        }
        passed
    }

    /// A check failed: the idle connections due for one go too (dropped,
    /// so closed), untried. They reach the same server the same way, and
    /// checking each in turn would hold the client one `healthcheck_timeout`
    /// per connection when the server stopped answering; the checkout
    /// connects anew instead (within `connect_timeout`).
    fn retire_unchecked(&self) {
        let now = Instant::now();
        let retired: Vec<Idle> = {
            let mut idle = lock(&self.idle);
            let (due, fresh) = idle.drain(..).partition(|i| self.check_due(&i.conn, now));
            *idle = fresh;
            due
        };
        if !retired.is_empty() {
            warn!(cluster = %self.cluster, shard = self.shard, connections = retired.len(), "health check failed: closing the idle connections due for one");
        }
    }

    /// The background check: through an idle connection (given back after
    /// it passed), else through a new one opened for it and closed after
    /// (outside the pool's size, as PgDog does), so a database whose
    /// connections are all stuck in queries is checked too.
    async fn idle_check(self: &Arc<Self>) {
        if let Some((mut idle, place)) = self.idle_conn() {
            if self.check(&mut idle.conn).await {
                lock(&self.idle).push(idle);
            }
            drop(place);
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        match ServerConn::connect(&self.target, self.settings.connect_timeout, id).await {
            Ok(mut conn) => {
                self.check(&mut conn).await;
            }
            Err(err) => {
                self.stats.errors.fetch_add(1, Ordering::Relaxed);
                warn!(%err, cluster = %self.cluster, shard = self.shard, "health check cannot connect");
                self.ban("health check cannot connect");
            }
        }
    }

    /// An idle connection that still looks alive, with the place that
    /// counts it (broken ones are dropped); `None` when there is none.
    fn idle_conn(&self) -> Option<(Idle, Place)> {
        let place = self.places.try_take()?;
        let mut idle = lock(&self.idle);
        while let Some(mut taken) = idle.pop() {
            if !taken.conn.is_broken_while_idle() {
                return Some((taken, place));
            }
        }
        None
    }
}

/// Background health checks of one replica's pool until it is dropped
/// (a primary is never banned: checking it in the background would change
/// nothing).
pub(super) async fn watch(pool: Weak<Pool>) {
    let Some((delay, Some(interval))) = pool.upgrade().and_then(|p| {
        let health = p.settings.health;
        (p.role == Role::Replica).then_some((health.idle_delay, health.idle_interval))
    }) else {
        return;
    };
    tokio::time::sleep(delay).await;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(pool) = pool.upgrade() else { return };
        pool.idle_check().await;
    }
}
