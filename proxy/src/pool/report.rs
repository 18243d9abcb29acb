//! What the admin console reads of a pool: its checked-out and idle
//! connections (SHOW SERVERS, SHOW FDS) and the closes a RECONNECT still
//! waits for (WAIT_CLOSE).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::Pool;
use crate::conn::server::{ServerAddr, ServerConn};
use crate::id_hash::IdMap;
use crate::lock::lock;

/// A pool's connections, by id, from the first time it hands one out
/// until the connection is dropped.
pub(super) type Listed = Arc<Mutex<IdMap<Arc<CheckedOut>>>>;

/// A server connection the pool handed out, as the admin console sees it
/// (SHOW SERVERS, SHOW FDS, WAIT_CLOSE); `out` while it is checked out.
#[derive(Debug)]
pub struct CheckedOut {
    pub created: Instant,
    pub process_id: u32,
    pub addr: ServerAddr,
    pub fd: i32,
    out: AtomicBool,
}

/// A connection's entry in its pool's list, removed when the connection is
/// dropped, however it ends: given back and retired, dropped mid-query, or
/// lost with its client. Listed once per connection, so that a checkout
/// and a checkin each cost one store, not a lock and a map update.
#[derive(Debug)]
pub struct Listing {
    entry: Arc<CheckedOut>,
    listed: Listed,
    id: u64,
}

impl Listing {
    pub(super) fn new(listed: &Listed, conn: &ServerConn) -> Listing {
        let entry = Arc::new(CheckedOut {
            created: conn.created,
            process_id: conn.process_id,
            addr: conn.addr.clone(),
            fd: conn.fd(),
            out: AtomicBool::new(false),
        });
        lock(listed).insert(conn.id, Arc::clone(&entry));
        Listing {
            entry,
            listed: Arc::clone(listed),
            id: conn.id,
        }
    }

    /// Checked out (`true`) or back in the pool.
    pub(super) fn set_out(&self, out: bool) {
        self.entry.out.store(out, Ordering::Relaxed);
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        lock(&self.listed).remove(&self.id);
    }
}

/// An idle connection, as the admin console sees it.
#[derive(Debug, Clone)]
pub struct IdleServer {
    pub id: u64,
    pub process_id: u32,
    pub created: Instant,
    pub last_used: Instant,
    pub addr: crate::conn::server::ServerAddr,
    pub fd: i32,
    /// Statements prepared on it.
    pub prepared: usize,
}

impl Pool {
    /// Checked-out connections that predate the last RECONNECT (WAIT_CLOSE
    /// waits for none to be left).
    pub fn closes_pending(&self) -> usize {
        lock(&self.listed)
            .values()
            .filter(|entry| {
                entry.out.load(Ordering::Relaxed) && self.is_close_needed(entry.created)
            })
            .count()
    }

    /// The checked-out connections by id, in id order (SHOW SERVERS, FDS).
    pub fn checked_out(&self) -> Vec<(u64, Arc<CheckedOut>)> {
        let mut all: Vec<_> = lock(&self.listed)
            .iter()
            .filter(|(_, entry)| entry.out.load(Ordering::Relaxed))
            .map(|(id, entry)| (*id, Arc::clone(entry)))
            .collect();
        all.sort_by_key(|(id, _)| *id);
        all
    }

    /// Clients holding one of the pool's connections (SHOW POOLS
    /// `cl_active`).
    pub fn active_clients(&self) -> usize {
        lock(&self.listed)
            .values()
            .filter(|entry| entry.out.load(Ordering::Relaxed))
            .count()
    }

    /// Describe idle connections for SHOW SERVERS and SHOW FDS.
    pub fn idle_servers(&self) -> Vec<IdleServer> {
        lock(&self.idle)
            .iter()
            .map(|idle| &idle.conn)
            .map(|c| IdleServer {
                id: c.id,
                process_id: c.process_id,
                created: c.created,
                last_used: c.last_used,
                addr: c.addr.clone(),
                fd: c.fd(),
                prepared: c.prepared.len(),
            })
            .collect()
    }
}
