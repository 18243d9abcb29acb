//! A pool's upkeep: connections retired when `server_lifetime` is up, when
//! they were opened before the last RECONNECT, when they sat idle past
//! `idle_timeout` or died idle; and `min_pool_size` kept open.

use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, Instant};

use tracing::warn;

use super::{Entry, Idle, Pool};
use crate::conn::server::ServerConn;
use crate::lock::lock;

impl Pool {
    pub(super) fn expired(&self, conn: &ServerConn, entry: &Entry, now: Instant) -> bool {
        // (Reckoned once per connection where the pool lists it: a
        // comparison costs less than a subtraction of two instants.)
        let expires = entry.expires.or_else(|| self.expiry(conn));
        expires.is_some_and(|at| now >= at) || self.is_close_needed(conn.created)
    }

    /// When `server_lifetime` retires `conn`, if it does.
    pub(super) fn expiry(&self, conn: &ServerConn) -> Option<Instant> {
        let lifetime = self.settings.server_lifetime?;
        conn.created.checked_add(lifetime)
    }

    /// Whether a connection created at `created` predates the last
    /// RECONNECT (PgBouncer's `close_needed`).
    pub fn is_close_needed(&self, created: Instant) -> bool {
        let mark = self.retire_before_ns.load(Ordering::Relaxed);
        mark != 0 && created.saturating_duration_since(self.born).as_nanos() < u128::from(mark)
    }

    /// RECONNECT: close idle connections now and the others when they are
    /// given back, so that new ones are opened.
    pub fn reconnect(&self) {
        let now = u64::try_from(self.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.retire_before_ns.store(now.max(1), Ordering::Relaxed);
        self.close_idle();
    }
}

/// Every second: drop connections idle past `idle_timeout` (down to
/// `min_pool_size`) or past `server_lifetime`, drop dead ones, and open new
/// ones up to `min_pool_size`. Ends when the pool is gone.
pub(super) async fn maintain(pool: Weak<Pool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(pool) = pool.upgrade() else { return };
        let min = pool.settings.min_pool_size;
        {
            let mut idle = lock(&pool.idle);
            let total = pool.places.taken() + idle.len();
            let mut surplus = total.saturating_sub(min);
            let idle_timeout = pool.settings.idle_timeout;
            idle.retain_mut(|Idle { conn, entry }| {
                let idle_too_long = idle_timeout.is_some_and(|t| conn.last_used.elapsed() >= t);
                let retire = conn.is_broken_while_idle()
                    || pool.expired(conn, entry, Instant::now())
                    || (idle_too_long && surplus > 0);
                let keep = !retire;
                if !keep {
                    surplus = surplus.saturating_sub(1);
                }
                keep
            });
        }
        while pool.servers() < min {
            let Some(place) = pool.places.try_take() else {
                break;
            };
            let id = pool.next_id.fetch_add(1, Ordering::Relaxed);
            match ServerConn::connect(&pool.target, pool.settings.connect_timeout, id).await {
                Ok(conn) => {
                    let entry = Entry::default();
                    lock(&pool.idle).push(Idle { conn, entry });
                    drop(place);
                }
                Err(err) => {
                    warn!(%err, cluster = %pool.cluster, "cannot open min_pool_size connections");
                    break;
                }
            }
        }
    }
}
