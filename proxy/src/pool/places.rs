//! A pool's places: at most `pool_size` server connections are checked out
//! or being opened at once, each counted by a [`Place`] that is given back
//! when it is dropped. A place given back goes to a waiting
//! checkout, first come first served, except that one on the same worker
//! thread is preferred while the longest waiter elsewhere has waited less
//! than [`LOCAL_PREFERENCE`]: its wake-up then costs no other thread's
//! wake-up (no futex, no eventfd), and the connection it takes needs no move
//! to another thread's reactor (see `workers.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::state::lock;
use crate::workers;

/// How much longer than the oldest waiter on the thread giving a place back
/// the first in line may have waited and still be passed over: short next
/// to a transaction's wait for a connection, so no thread's clients starve,
/// long enough that places mostly stay with the thread that gives them
/// back while both threads have waiters.
pub const LOCAL_PREFERENCE: Duration = Duration::from_millis(1);

/// The places of one pool.
#[derive(Debug)]
pub struct Places {
    size: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    free: usize,
    waiters: VecDeque<Waiter>,
}

#[derive(Debug)]
struct Waiter {
    worker: Option<usize>,
    since: Instant,
    grant: oneshot::Sender<Place>,
}

/// One place in a pool; dropping it gives it back.
#[derive(Debug)]
pub struct Place {
    places: Option<Arc<Places>>,
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(places) = self.places.take() {
            places.give_back();
        }
    }
}

impl Places {
    pub fn new(size: usize) -> Arc<Places> {
        Arc::new(Places {
            size,
            inner: Mutex::new(Inner {
                free: size,
                waiters: VecDeque::new(),
            }),
        })
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

    /// A place, waiting in line for one (in line since `now`). Cancel-safe:
    /// a waiter that goes away loses its turn, and a place already handed
    /// to it is given back.
    pub async fn take(self: &Arc<Self>, now: Instant) -> Option<Place> {
        let granted = {
            let mut inner = lock(&self.inner);
            if inner.free > 0 {
                inner.free -= 1;
                return Some(Place {
                    places: Some(Arc::clone(self)),
                });
            }
            let (grant, granted) = oneshot::channel();
            inner.waiters.push_back(Waiter {
                worker: workers::current(),
                since: now,
                grant,
            });
            granted
        };
        granted.await.ok()
    }

    /// Places not taken.
    pub fn available(&self) -> usize {
        lock(&self.inner).free
    }

    /// Places taken (connections checked out or opening).
    pub fn taken(&self) -> usize {
        self.size.saturating_sub(self.available())
    }

    fn give_back(self: &Arc<Self>) {
        let mut place = Place {
            places: Some(Arc::clone(self)),
        };
        loop {
            let waiter = {
                let mut inner = lock(&self.inner);
                match next_waiter(&mut inner.waiters, workers::current()) {
                    Some(waiter) => waiter,
                    None => {
                        inner.free += 1;
                        // Not dropped: that would give it back again.
                        place.places = None;
                        return;
                    }
                }
            };
            // Sent outside the lock: a place dropped with a closed channel
            // comes back through `give_back`.
            match waiter.grant.send(place) {
                Ok(()) => return,
                Err(unsent) => place = unsent,
            }
        }
    }
}

/// The waiter a place goes to: the oldest one on `here` unless the first in
/// line (elsewhere) has waited [`LOCAL_PREFERENCE`] longer; waiters that
/// went away are dropped on the way.
fn next_waiter(waiters: &mut VecDeque<Waiter>, here: Option<usize>) -> Option<Waiter> {
    waiters.retain(|w| !w.grant.is_closed());
    let first = waiters.front()?;
    if here.is_none() || first.worker == here {
        return waiters.pop_front();
    }
    let first_since = first.since;
    match waiters.iter().position(|w| w.worker == here) {
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
        let places = Places::new(1);
        let first = places.try_take();
        assert!(first.is_some());
        assert!(places.try_take().is_none());
        let waiting = tokio::spawn({
            let places = Arc::clone(&places);
            async move { places.take(Instant::now()).await.is_some() }
        });
        tokio::task::yield_now().await;
        drop(first);
        assert!(waiting.await.unwrap_or(false));
        assert_eq!(places.available(), 1);

        // A waiter that went away gives its place back.
        let held = places.try_take();
        let abandoned = {
            let places = Arc::clone(&places);
            tokio::spawn(async move { places.take(Instant::now()).await.is_some() })
        };
        tokio::task::yield_now().await;
        abandoned.abort();
        let _ = abandoned.await;
        drop(held);
        assert_eq!(places.available(), 1);
        assert_eq!(places.taken(), 0);
    }
}
