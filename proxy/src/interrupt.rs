//! A session's interrupt: what wakes a client's task for something other
//! than its sockets (KILL from the admin console, pgshard shutting down).
//! A session polls it beside its sockets on every wake-up, so polling costs
//! two atomic loads and a comparison: the waker is stored (under a lock)
//! only when it is not the one stored already, which for the one task that
//! waits is once (a Tokio task's waker stays the same), where a watch
//! channel's receiver would take its notifier's lock and re-register on
//! every poll.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Mutex;
use std::task::{Poll, RawWakerVTable, Waker};

use crate::lock::lock;

#[derive(Debug, Default)]
pub struct Interrupt {
    killed: AtomicBool,
    /// The session task's waker, once it has waited.
    waker: Mutex<Option<Waker>>,
    /// What `waker` holds (its data and vtable), read without the lock by
    /// the one task that waits (and writes them).
    stored: (AtomicPtr<()>, AtomicPtr<RawWakerVTable>),
}

impl Interrupt {
    /// KILL: the session ends and closes its servers.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.wake();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Wake the session so that it looks again at what it waits for (see
    /// [`until`](Self::until)).
    pub fn wake(&self) {
        if let Some(waker) = lock(&self.waker).as_ref() {
            waker.wake_by_ref();
        }
    }

    /// Resolves once `ready` holds; `ready` is checked when polled, and
    /// the task is polled again whenever the interrupt is woken. One task
    /// (the session's) waits on an interrupt.
    pub fn until<'a>(&'a self, ready: impl Fn() -> bool + 'a) -> impl Future<Output = ()> + 'a {
        std::future::poll_fn(move |cx| {
            if ready() {
                return Poll::Ready(());
            }
            let waker = cx.waker();
            let (data, vtable) = (
                waker.data().cast_mut(),
                std::ptr::from_ref(waker.vtable()).cast_mut(),
            );
            if self.stored.0.load(Ordering::Relaxed) != data
                || self.stored.1.load(Ordering::Relaxed) != vtable
            {
                *lock(&self.waker) = Some(waker.clone());
                self.stored.0.store(data, Ordering::Relaxed);
                self.stored.1.store(vtable, Ordering::Relaxed);
            }
            // Raised between the first check and the registration.
            if ready() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    /// Resolves once the session is killed.
    pub fn killed(&self) -> impl Future<Output = ()> + '_ {
        self.until(|| self.is_killed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn wakes_the_waiting_task_when_killed_or_when_its_condition_holds() {
        let interrupt = Arc::new(Interrupt::default());
        let flag = Arc::new(AtomicBool::new(false));
        let waiting = tokio::spawn({
            let (interrupt, flag) = (Arc::clone(&interrupt), Arc::clone(&flag));
            async move {
                interrupt.until(|| flag.load(Ordering::Acquire)).await;
                interrupt.killed().await;
            }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // Woken without its condition: it keeps waiting.
        interrupt.wake();
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        flag.store(true, Ordering::Release);
        interrupt.wake();
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        interrupt.kill();
        assert!(interrupt.is_killed());
        waiting.await.unwrap();
    }
}
