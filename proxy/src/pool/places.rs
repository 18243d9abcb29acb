//! A pool's places: at most `pool_size` server connections are checked out
//! or being opened at once, each counted by a [`Place`] that is given back
//! when it is dropped. A place given back goes to a waiting
//! checkout, first come first served, except that one on the same worker
//! thread is preferred while the longest waiter elsewhere has waited less
//! than [`LOCAL_PREFERENCE`]: its wake-up then costs no other thread's
//! wake-up (no futex, no eventfd), and the connection it takes needs no move
//! to another thread's reactor (see `workers.rs`).
//!
//! Waits past `checkout_timeout` are ended by the pool's [`sweep`] task,
//! as PgBouncer's janitor ends them, not by a timer of their own: a timer
//! per wait cost more than the rest of the wait together, and with more
//! clients than connections most checkouts wait.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Notify};

use crate::conn::worker;
use crate::lock::lock;

/// How much longer than the oldest waiter on the thread giving a place back
/// the first in line may have waited and still be passed over: short next
/// to a transaction's wait for a connection, so no thread's clients starve,
/// long enough that places mostly stay with the thread that gives them
/// back while both threads have waiters.
pub const LOCAL_PREFERENCE: Duration = Duration::from_millis(1);

/// The most a wait outlasts `checkout_timeout` (less for short timeouts:
/// an eighth of it, at least a millisecond).
const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// The places of one pool.
#[derive(Debug)]
pub struct Places {
    size: usize,
    /// How long a checkout waits at most (`checkout_timeout`).
    timeout: Duration,
    inner: Mutex<Inner>,
    /// Wakes the sweeper when a wait begins while it rests, and when the
    /// places are dropped (so that it ends).
    sweeper: Arc<Notify>,
}

#[derive(Debug)]
struct Inner {
    free: usize,
    waiters: VecDeque<Waiter>,
    /// The sweeper runs (someone waited since it last found nobody).
    sweeping: bool,
}

#[derive(Debug)]
struct Waiter {
    worker: Option<usize>,
    since: Instant,
    /// When the wait times out (`None`: a timeout past what `Instant`
    /// holds, never).
    deadline: Option<Instant>,
    grant: oneshot::Sender<Place>,
}

/// Why a wait for a place ended without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unplaced {
    /// `checkout_timeout` passed.
    TimedOut,
    /// The pool is gone.
    Closed,
}

/// One place in a pool; dropping it gives it back.
#[derive(Debug)]
pub struct Place {
    places: Option<Arc<Places>>,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(places) = self.places.take() {
            Places::give_back(places);
        }
    }
}

impl Drop for Places {
    fn drop(&mut self) {
        self.sweeper.notify_one();
    }
}

impl Places {
    /// The places of a pool of `size` whose checkouts wait up to
    /// `timeout`, and the task that ends waits past it (to be spawned).
    pub fn new(
        size: usize,
        timeout: Duration,
    ) -> (Arc<Places>, impl std::future::Future<Output = ()>) {
        let sweeper = Arc::new(Notify::new());
        let places = Arc::new(Places {
            size,
            timeout,
            inner: Mutex::new(Inner {
                free: size,
                waiters: VecDeque::new(),
                sweeping: false,
            }),
            sweeper: Arc::clone(&sweeper),
        });
        let sweep = sweep(Arc::downgrade(&places), sweeper, sweep_every(timeout));
        (places, sweep)
    }

    /// A place now, if one is free and nobody waits for one.
    pub fn try_take(self: &Arc<Self>) -> Option<Place> {
        let mut inner = lock(&self.inner);
        if inner.free == 0 {
            return None;
        }
        inner.free -= 1;
        Some(Place {
            places: Some(Arc::clone(self)),
        })
    }

    /// A place, waiting in line for one (in line since `now`) up to the
    /// timeout. Cancel-safe: a waiter that goes away loses its turn, and a
    /// place already handed to it is given back.
    pub async fn take(self: &Arc<Self>, now: Instant) -> Result<Place, Unplaced> {
        let deadline = now.checked_add(self.timeout);
        let granted = {
            let mut inner = lock(&self.inner);
            if inner.free > 0 {
                inner.free -= 1;
                return Ok(Place {
                    places: Some(Arc::clone(self)),
                });
            }
            let (grant, granted) = oneshot::channel();
            inner.waiters.push_back(Waiter {
                worker: worker::current(),
                since: now,
                deadline,
                grant,
            });
            if !std::mem::replace(&mut inner.sweeping, true) {
                self.sweeper.notify_one();
            }
            granted
        };
        // The sweeper drops the grant of a wait past its deadline.
        granted.await.map_err(|_| match deadline {
            Some(deadline) if Instant::now() >= deadline => Unplaced::TimedOut,
            _ => Unplaced::Closed,
        })
    }

    /// End the waits past their deadline (and forget those whose waiter
    /// went away); whether anyone still waits. The sweeper rests once
    /// nobody does.
    fn expire(&self, now: Instant) -> bool {
        let mut expired = Vec::new();
        let waiting = {
            let mut inner = lock(&self.inner);
            let waiters = std::mem::take(&mut inner.waiters);
            for waiter in waiters {
                if waiter.grant.is_closed() || waiter.deadline.is_some_and(|d| now >= d) {
                    expired.push(waiter);
                } else {
                    inner.waiters.push_back(waiter);
                }
            }
            inner.sweeping = !inner.waiters.is_empty();
            inner.sweeping
        };
        // Their grants are dropped outside the lock: each wakes its waiter.
        drop(expired);
        waiting
    }

    /// Places not taken.
    pub fn available(&self) -> usize {
        lock(&self.inner).free
    }

    /// Places taken (connections checked out or opening).
    pub fn taken(&self) -> usize {
        self.size.saturating_sub(self.available())
    }

    /// (By value: the usual give-back, with nobody waiting, takes no
    /// new reference.)
    fn give_back(places: Arc<Self>) {
        loop {
            let waiter = {
                let mut inner = lock(&places.inner);
                match next_waiter(&mut inner.waiters, worker::current()) {
                    Some(waiter) => waiter,
                    None => {
                        inner.free += 1;
                        return;
                    }
                }
            };
            // Sent outside the lock.
            let place = Place {
                places: Some(Arc::clone(&places)),
            };
            match waiter.grant.send(place) {
                Ok(()) => return,
                // That waiter left: not dropped as a place (which would
                // give it back again); the next one is offered it.
                Err(mut unsent) => unsent.places = None,
            }
        }
    }
}

/// The pool's sweeper: while anyone waits for a place, every
/// [`SWEEP_EVERY`] (or an eighth of the timeout), it ends the waits past
/// `checkout_timeout`; while nobody waits, it rests. Ends with the places.
async fn sweep(places: Weak<Places>, wake: Arc<Notify>, every: Duration) {
    loop {
        loop {
            let woken = wake.notified();
            {
                let Some(places) = places.upgrade() else {
                    return;
                };
                if lock(&places.inner).sweeping {
                    break;
                }
            }
            woken.await;
        }
        loop {
            tokio::time::sleep(every).await;
            let Some(places) = places.upgrade() else {
                return;
            };
            if !places.expire(Instant::now()) {
                break;
            }
        }
    }
}

fn sweep_every(timeout: Duration) -> Duration {
    (timeout / 8).clamp(Duration::from_millis(1), SWEEP_EVERY)
}

/// The waiter a place goes to: the oldest one on `here` unless the first in
/// line (elsewhere) has waited [`LOCAL_PREFERENCE`] longer; waiters that
/// went away are skipped (those at the head dropped; the sweeper drops the
/// others), not searched for on every give-back.
fn next_waiter(waiters: &mut VecDeque<Waiter>, here: Option<usize>) -> Option<Waiter> {
    while waiters.front().is_some_and(|w| w.grant.is_closed()) {
        waiters.pop_front();
    }
    let first = waiters.front()?;
    if here.is_none() || first.worker == here {
        return waiters.pop_front();
    }
    let first_since = first.since;
    let local = waiters
        .iter()
        .position(|w| w.worker == here && !w.grant.is_closed());
    match local {
        Some(at) if waiters[at].since.saturating_duration_since(first_since) < LOCAL_PREFERENCE => {
            waiters.remove(at)
        }
        _ => waiters.pop_front(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(worker: Option<usize>, since: Instant) -> (Waiter, oneshot::Receiver<Place>) {
        let (grant, granted) = oneshot::channel();
        (
            Waiter {
                worker,
                since,
                deadline: None,
                grant,
            },
            granted,
        )
    }

    #[test]
    fn prefers_a_waiter_on_the_same_thread_unless_the_first_waited_much_longer() {
        let now = Instant::now();
        let picked = |line: Vec<(Option<usize>, Instant)>, here| {
            let mut receivers = Vec::new();
            let mut queue = VecDeque::new();
            for (worker, since) in line {
                let (w, r) = waiter(worker, since);
                queue.push_back(w);
                receivers.push(r);
            }
            next_waiter(&mut queue, here).map(|w| w.worker)
        };
        let a_bit_later = now + LOCAL_PREFERENCE / 2;
        let much_later = now + LOCAL_PREFERENCE;
        // Same age (or close): this thread's waiter.
        assert_eq!(
            picked(vec![(Some(0), now), (Some(1), now)], Some(1)),
            Some(Some(1))
        );
        assert_eq!(
            picked(vec![(Some(0), now), (Some(1), a_bit_later)], Some(1)),
            Some(Some(1))
        );
        // The first in line waited LOCAL_PREFERENCE longer: it goes first.
        assert_eq!(
            picked(vec![(Some(0), now), (Some(1), much_later)], Some(1)),
            Some(Some(0))
        );
        // No waiter here, or no worker threads: first in line.
        assert_eq!(picked(vec![(Some(0), now)], Some(1)), Some(Some(0)));
        assert_eq!(
            picked(vec![(Some(0), now), (Some(1), now)], None),
            Some(Some(0))
        );
        assert_eq!(picked(vec![], Some(0)), None);
    }

    #[test]
    fn skips_waiters_that_left() {
        let now = Instant::now();
        let (a, ra) = waiter(Some(0), now);
        let (b, _rb) = waiter(Some(0), now);
        drop(ra);
        let mut line = VecDeque::from([a, b]);
        assert!(next_waiter(&mut line, Some(0)).is_some());
        assert!(line.is_empty());
    }

    #[tokio::test]
    async fn places_go_to_waiters_and_come_back_when_dropped() {
        let (places, sweep) = Places::new(1, Duration::from_secs(60));
        tokio::spawn(sweep);
        let first = places.try_take();
        assert!(first.is_some());
        assert!(places.try_take().is_none());
        let waiting = tokio::spawn({
            let places = Arc::clone(&places);
            async move { places.take(Instant::now()).await.is_ok() }
        });
        tokio::task::yield_now().await;
        drop(first);
        assert!(waiting.await.unwrap_or(false));
        assert_eq!(places.available(), 1);

        // A waiter that went away gives its place back.
        let held = places.try_take();
        let abandoned = {
            let places = Arc::clone(&places);
            tokio::spawn(async move { places.take(Instant::now()).await.is_ok() })
        };
        tokio::task::yield_now().await;
        abandoned.abort();
        let _ = abandoned.await;
        drop(held);
        assert_eq!(places.available(), 1);
        assert_eq!(places.taken(), 0);
    }

    #[tokio::test]
    async fn the_sweeper_ends_waits_past_the_timeout_and_ends_with_the_places() {
        let timeout = Duration::from_millis(40);
        let (places, sweep) = Places::new(1, timeout);
        let sweeper = tokio::spawn(sweep);
        let held = places.try_take();
        let started = Instant::now();
        let waited = places.take(started).await;
        assert_eq!(waited.err(), Some(Unplaced::TimedOut));
        let took = started.elapsed();
        assert!(took >= timeout, "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        // It rests with nobody waiting, and a new wait wakes it again.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!lock(&places.inner).sweeping);
        let waited = places.take(Instant::now()).await;
        assert_eq!(waited.err(), Some(Unplaced::TimedOut));
        // A place given back in time is granted instead.
        let waiting = tokio::spawn({
            let places = Arc::clone(&places);
            async move { places.take(Instant::now()).await.is_ok() }
        });
        tokio::task::yield_now().await;
        drop(held);
        assert!(waiting.await.unwrap_or(false));
        drop(places);
        tokio::time::timeout(Duration::from_secs(2), sweeper)
            .await
            .expect("the sweeper ends once the places are gone")
            .expect("the sweeper does not panic");
    }
}
