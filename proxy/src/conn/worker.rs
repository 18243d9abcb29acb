//! Which worker thread runs this code (`workers.rs` starts them): the
//! reactor a socket is registered with is its thread's, so a server
//! connection remembers where it lives and a pool prefers connections of
//! the checking-out thread.

use std::cell::Cell;

thread_local! {
    static WORKER: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The worker thread this code runs on; `None` off worker threads (a
/// multi-threaded runtime, as in tests, where one reactor serves all).
pub fn current() -> Option<usize> {
    WORKER.with(Cell::get)
}

/// This thread is worker `id` from now on (`None`: no worker).
pub fn set(id: Option<usize>) {
    WORKER.with(|w| w.set(id));
}
