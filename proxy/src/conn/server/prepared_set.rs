//! The statements a server connection has prepared (pgshard's shared
//! statement ids), with the least recently used one found for eviction.

use crate::id_hash::IdMap;

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

    /// The least recently used statement, to close when the set is full.
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
}
