//! What the admin console reads of a pool: its checked-out and idle
//! connections (SHOW SERVERS, SHOW FDS) and the closes a RECONNECT still
//! waits for (WAIT_CLOSE).

use std::time::Instant;

use super::{CheckedOut, Pool};
use crate::state::lock;

/// An idle connection, as the admin console sees it.
#[derive(Debug, Clone)]
pub struct IdleServer {
    pub id: u64,
    pub process_id: u32,
    pub created: Instant,
    pub last_used: Instant,
    pub addr: crate::server_conn::ServerAddr,
    pub fd: i32,
    /// Statements prepared on it.
    pub prepared: usize,
}

impl Pool {
    /// Checked-out connections that predate the last RECONNECT (WAIT_CLOSE
    /// waits for none to be left).
    pub fn closes_pending(&self) -> usize {
        lock(&self.checked_out)
            .values()
            .filter(|out| self.is_close_needed(out.created))
            .count()
    }

    /// The checked-out connections by id, in id order (SHOW SERVERS, FDS).
    pub fn checked_out(&self) -> Vec<(u64, CheckedOut)> {
        let mut all: Vec<_> = lock(&self.checked_out)
            .iter()
            .map(|(id, out)| (*id, out.clone()))
            .collect();
        all.sort_by_key(|(id, _)| *id);
        all
    }

    /// Describe idle connections for SHOW SERVERS and SHOW FDS.
    pub fn idle_servers(&self) -> Vec<IdleServer> {
        lock(&self.idle)
            .iter()
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
