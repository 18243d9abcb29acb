//! The server connections a session holds between messages: none (between
//! transactions in transaction mode), one (a transaction, or session mode),
//! or several, one per shard (what a transaction spanning shards holds).
//! The first one attached is the *main* server: the one the session's
//! statements and the reply plan go to. Fan-outs and extended-protocol
//! segments check out servers of their own for one statement; a server
//! held here is handed to them (detached) first.

use crate::pool::Pooled;

#[derive(Debug, Default)]
pub struct Attached {
    /// By order of attachment, each with its shard; the first is the main.
    servers: Vec<(usize, Pooled)>,
}

impl Attached {
    pub fn new(shard: usize, server: Option<Pooled>) -> Attached {
        Attached {
            servers: server.map(|s| (shard, s)).into_iter().collect(),
        }
    }

    pub fn is_some(&self) -> bool {
        !self.servers.is_empty()
    }

    pub fn is_none(&self) -> bool {
        self.servers.is_empty()
    }

    /// The main server.
    pub fn main(&self) -> Option<&Pooled> {
        self.servers.first().map(|(_, server)| server)
    }

    pub fn main_mut(&mut self) -> Option<&mut Pooled> {
        self.servers.first_mut().map(|(_, server)| server)
    }

    /// The main server's shard.
    pub fn shard(&self) -> Option<usize> {
        self.servers.first().map(|(shard, _)| *shard)
    }

    /// Hold `server` for `shard`: the main server if none is held yet.
    pub fn attach(&mut self, shard: usize, server: Pooled) {
        self.servers.push((shard, server));
    }

    /// Give the main server up (to release it, or because it broke: a
    /// dropped connection is closed); the next one held becomes the main.
    pub fn take_main(&mut self) -> Option<Pooled> {
        if self.servers.is_empty() {
            return None;
        }
        Some(self.servers.remove(0).1)
    }

    /// Every server held, the main first.
    pub fn take_all(&mut self) -> Vec<(usize, Pooled)> {
        std::mem::take(&mut self.servers)
    }
}
