//! Servers kept for WITH HOLD cursors: given back, a server whose shard
//! holds one stays with the client instead of going to its pool (in either
//! pooler mode: its cursors are state of that connection), and the next
//! checkout for that shard takes it again; it goes back once no WITH HOLD
//! cursor is left on its shard (CLOSE, CLOSE ALL, DISCARD ALL, a rolled
//! back DECLARE) or when the session ends.

use super::Cursors;
use crate::pool::Pooled;
use crate::protocol::backend::TransactionStatus;
use crate::session::{End, Session};

impl Cursors {
    /// Keep `server` for the client (see [`Cursors::keeps`]).
    pub fn pin(&mut self, server: Pooled) {
        let shard = server.pool().shard;
        self.pinned.push((shard, server));
    }

    /// The server pinned for `shard`, handed out (it comes back through
    /// [`Session::release`]).
    pub fn unpin(&mut self, shard: usize) -> Option<Pooled> {
        let at = self.pinned.iter().position(|(s, _)| *s == shard)?;
        Some(self.pinned.swap_remove(at).1)
    }

    /// Pinned servers no WITH HOLD cursor needs any more.
    fn unneeded(&mut self) -> Vec<Pooled> {
        let (keep, free): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pinned)
            .into_iter()
            .partition(|(shard, _)| self.holds_on(*shard));
        self.pinned = keep;
        free.into_iter().map(|(_, server)| server).collect()
    }

    /// Every pinned server, handed out.
    pub fn unpin_all(&mut self) -> Vec<Pooled> {
        std::mem::take(&mut self.pinned)
            .into_iter()
            .map(|(_, server)| server)
            .collect()
    }
}

impl Session {
    /// `server` is given back: pinned instead when a WITH HOLD cursor
    /// needs it (rolled back first if a transaction is open on it; closed
    /// if that fails). Returns whether it was kept.
    pub(in crate::session) async fn keep_for_cursors(
        &mut self,
        server: &mut Option<Pooled>,
    ) -> bool {
        let Some(held) = server.as_mut() else {
            return false;
        };
        if !self.portals.cursors.keeps(held) {
            return false;
        }
        if held.conn.status() != TransactionStatus::Idle {
            let rolled_back = matches!(held.conn.run("ROLLBACK").await, Ok(Ok(())));
            if !rolled_back {
                // Closed: its cursors are gone with it.
                *server = None;
                return true;
            }
        }
        if let Some(held) = server.take() {
            self.portals.cursors.pin(held);
        }
        true
    }

    /// Give back the pinned servers no WITH HOLD cursor needs any more.
    pub(in crate::session) async fn release_unneeded_pins(&mut self) -> Result<(), End> {
        for server in self.portals.cursors.unneeded() {
            self.release(server, false).await;
        }
        Ok(())
    }

    /// The session ends: the pinned servers go back reset.
    pub(in crate::session) async fn release_pins(&mut self, reset: bool) {
        self.portals.cursors.forget_all();
        for server in self.portals.cursors.unpin_all() {
            self.release(server, reset).await;
        }
    }
}
