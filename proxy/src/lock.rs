//! Locking a `std` mutex also after a panic elsewhere poisoned it: the data
//! behind pgshard's mutexes stays consistent at every await-free step, so a
//! poisoned lock holds nothing half-done.

use std::sync::{Mutex, MutexGuard};

/// Lock `m`, poisoned or not.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
