//! The statements a server connection has prepared (pgshard's shared
//! statement ids) and their names on the server, with the least recently
//! used one closed to make room.

use bytes::BytesMut;

use crate::id_hash::IdMap;
use crate::protocol::frontend::Named;
use crate::protocol::messages;

/// The name statement `id` has on every server.
pub fn server_name(id: u64) -> String {
    format!("__pgshard_{id}")
}

/// Write the Close of statement `id` (its server name) to `out`.
pub fn close(out: &mut BytesMut, id: u64) {
    messages::close(out, Named::Statement, server_name(id).as_bytes());
}

/// The statements a server connection has prepared, by pgshard statement id,
/// with a use tick for least-recently-used eviction.
#[derive(Debug, Default)]
pub struct PreparedSet {
    ticks: IdMap<u64>,
    clock: u64,
}

impl PreparedSet {
    pub fn contains(&mut self, id: u64) -> bool {
        self.clock += 1;
        match self.ticks.get_mut(&id) {
            Some(tick) => {
                *tick = self.clock;
                true
            }
            None => false,
        }
    }

    pub fn insert(&mut self, id: u64) {
        self.clock += 1;
        self.ticks.insert(id, self.clock);
    }

    pub fn remove(&mut self, id: u64) {
        self.ticks.remove(&id);
    }

    pub fn clear(&mut self) {
        self.ticks.clear();
    }

    pub fn len(&self) -> usize {
        self.ticks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ticks.is_empty()
    }

    /// Before one more statement on a server that may hold `limit`: forget
    /// the least recently used one if the set is full and give its id, for
    /// the caller to [`close`] on the server.
    pub fn make_room(&mut self, limit: usize) -> Option<u64> {
        if self.len() < limit {
            return None;
        }
        let oldest = self.oldest()?;
        self.remove(oldest);
        Some(oldest)
    }

    /// The least recently used statement.
    pub fn oldest(&self) -> Option<u64> {
        self.ticks
            .iter()
            .min_by_key(|(_, t)| **t)
            .map(|(id, _)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_set_evicts_least_recently_used() {
        let mut set = PreparedSet::default();
        set.insert(1);
        set.insert(2);
        set.insert(3);
        assert!(set.contains(1));
        assert_eq!(set.oldest(), Some(2));
        set.remove(2);
        assert_eq!(set.oldest(), Some(3));
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn make_room_forgets_the_least_recently_used_only_when_full() {
        let mut set = PreparedSet::default();
        set.insert(1);
        set.insert(2);
        assert_eq!(set.make_room(3), None);
        assert_eq!(set.len(), 2);
        assert!(set.contains(1));
        assert_eq!(set.make_room(2), Some(2));
        assert_eq!(set.len(), 1);
        assert!(!set.contains(2));
        assert_eq!(set.make_room(0), Some(1));
        assert_eq!(set.make_room(0), None);
    }

    #[test]
    fn close_names_the_statement_as_servers_know_it() {
        let mut out = BytesMut::new();
        close(&mut out, 7);
        assert_eq!(out[0], b'C');
        assert!(out.windows(11).any(|w| w == b"__pgshard_7"));
    }
}
