//! One connected client as the rest of pgshard sees it: who it is, where it
//! connected from, what its session is doing (SHOW CLIENTS), the servers
//! running its query (its cancel targets) and its interrupt (KILL, the
//! wake-up at shutdown).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::SystemTime;

use crate::conn::cancel::CancelTargets;
use crate::interrupt::Interrupt;

/// Client states for SHOW CLIENTS.
pub const CLIENT_IDLE: u8 = 0;
pub const CLIENT_ACTIVE: u8 = 1;
pub const CLIENT_WAITING: u8 = 2;

/// Where a client connected from, as SHOW CLIENTS and SHOW FDS give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAddr {
    Tcp(SocketAddr),
    /// On the Unix socket of pgshard's `port` (PgBouncer shows `unix` and
    /// its own port).
    Unix {
        port: u16,
    },
    /// The socket could not say.
    Unknown,
}

impl ClientAddr {
    /// The address column: an IP address, `unix`, or empty.
    pub fn host_text(self) -> String {
        match self {
            ClientAddr::Tcp(addr) => addr.ip().to_string(),
            ClientAddr::Unix { .. } => "unix".to_owned(),
            ClientAddr::Unknown => String::new(),
        }
    }

    /// The port column, if any.
    pub fn port(self) -> Option<u16> {
        match self {
            ClientAddr::Tcp(addr) => Some(addr.port()),
            ClientAddr::Unix { port } => Some(port),
            ClientAddr::Unknown => None,
        }
    }
}

/// One connected client, as others may see it.
#[derive(Debug)]
pub struct ClientInfo {
    pub process_id: u32,
    pub secret: u32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub addr: ClientAddr,
    pub connected_at: SystemTime,
    pub state: AtomicU8,
    /// The server running this client's query right now, if any (see
    /// [`CancelTargets`]).
    pub cancel: CancelTargets,
    /// The client socket's file descriptor (SHOW FDS).
    pub fd: Option<i32>,
    /// KILL, and the session's wake-up when pgshard shuts down.
    pub interrupt: Interrupt,
}

impl ClientInfo {
    /// Mark what the client's session does now, for SHOW CLIENTS.
    pub fn set_state(&self, state: u8) {
        self.state.store(state, Ordering::Relaxed);
    }
}
