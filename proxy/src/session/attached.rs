//! The server connections a session holds between messages: none (between
//! transactions in transaction mode), one (a transaction, or session mode),
//! or several, one per shard (what a transaction spanning shards holds).
//! The first one attached is the *main* server: the one the session's
//! statements and the reply plan go to. Fan-outs and extended-protocol
//! segments check out servers of their own for one statement; a server
//! held here is handed to them (detached) first.

use crate::pool::Pooled;
use crate::protocol::backend::TransactionStatus;

#[derive(Debug, Default)]
pub struct Attached {
    /// By order of attachment, each with its shard; the first is the main.
    servers: Vec<(usize, Pooled)>,
    /// The shards on which the transaction wrote (or may have).
    wrote: Vec<usize>,
}

impl Attached {
    pub fn new(shard: usize, server: Option<Pooled>) -> Attached {
        Attached {
            servers: server.map(|s| (shard, s)).into_iter().collect(),
            wrote: Vec::new(),
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
        let main = self.servers.remove(0).1;
        if self.servers.is_empty() {
            self.wrote.clear();
        }
        Some(main)
    }

    /// Every server held, the main first.
    pub fn take_all(&mut self) -> Vec<(usize, Pooled)> {
        self.wrote.clear();
        std::mem::take(&mut self.servers)
    }

    /// Every server held, the main first, to be attached again in the same
    /// order (what the transaction wrote is remembered).
    pub fn take_all_keeping_writes(&mut self) -> Vec<(usize, Pooled)> {
        std::mem::take(&mut self.servers)
    }

    /// The transaction wrote on `shard`.
    pub fn note_write(&mut self, shard: usize) {
        if !self.wrote.contains(&shard) {
            self.wrote.push(shard);
        }
    }

    /// The shards written on, forgotten.
    pub fn take_written(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.wrote)
    }

    /// More than one server is held: a transaction spans shards.
    pub fn spans(&self) -> bool {
        self.servers.len() > 1
    }

    /// The shards held, the main's first.
    pub fn shards(&self) -> Vec<usize> {
        self.servers.iter().map(|(shard, _)| *shard).collect()
    }

    /// Make the server held for `shard` the main one; whether one is held.
    pub fn switch_to(&mut self, shard: usize) -> bool {
        match self.servers.iter().position(|(s, _)| *s == shard) {
            Some(index) => {
                let held = self.servers.remove(index);
                self.servers.insert(0, held);
                true
            }
            None => false,
        }
    }

    /// Hold `server` for `shard` as the main server.
    pub fn attach_main(&mut self, shard: usize, server: Pooled) {
        self.servers.insert(0, (shard, server));
    }

    /// The server held for `shard`, if any.
    pub fn get_mut(&mut self, shard: usize) -> Option<&mut Pooled> {
        let index = self.servers.iter().position(|(s, _)| *s == shard)?;
        Some(&mut self.servers[index].1)
    }

    /// Give up the server held for `shard`, if any.
    pub fn take(&mut self, shard: usize) -> Option<Pooled> {
        let index = self.servers.iter().position(|(s, _)| *s == shard)?;
        Some(self.servers.remove(index).1)
    }

    /// The transaction status of every server held together, as one
    /// Postgres would report it: `E` if any is aborted, else `T` if any is
    /// in a transaction; `None` when none is held.
    pub fn status(&self) -> Option<TransactionStatus> {
        let statuses = self.servers.iter().map(|(_, s)| s.conn.status());
        statuses.reduce(TransactionStatus::combine)
    }
}
