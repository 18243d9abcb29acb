//! Hashing for maps keyed by pgshard's own ids (server connection and
//! shared statement numbers, handed out in sequence): one multiplication
//! instead of SipHash. Never for keys a client chooses, which keep the
//! standard library's keyed hasher.

use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by a pgshard id.
pub type IdMap<V> = std::collections::HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// Fibonacci hashing of one `u64`: sequential ids spread over the whole
/// range, so the table's top bits (hashbrown's tags) differ too.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `u64` keys; kept correct for any other.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_spread_and_maps_work() {
        let mut map = IdMap::default();
        for id in 0..10_000u64 {
            map.insert(id, id * 2);
        }
        assert_eq!(map.get(&4_321), Some(&8_642));
        assert_eq!(map.remove(&0), Some(0));
        let mut hasher = IdHasher::default();
        hasher.write_u64(1);
        let one = hasher.finish();
        hasher.write_u64(2);
        assert_ne!(one >> 57, hasher.finish() >> 57);
    }
}
