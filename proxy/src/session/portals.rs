//! The portals and cursors pgshard answers or routes itself: the cursors'
//! registry (where each cursor or named portal lives, the servers WITH HOLD
//! cursors keep) and the named portals of statements the coordinator
//! finishes, bound in the client's block and not executed yet. One state
//! because a gathered portal is also a name in the registry (on the
//! coordinator's database, so that it goes with the block): it lives as
//! long as the registry knows it, and is forgotten there when it is taken.

use std::collections::HashMap;

use bytes::Bytes;

use super::cursor::{Cursors, Place};
use super::gather::GatherPortal;

/// The cursors and portals a session knows of. `G` is what a gathered
/// portal holds (a type parameter so that the pairing is tested alone).
#[derive(Debug)]
pub(super) struct Portals<G = GatherPortal> {
    pub cursors: Cursors,
    /// Gathered named portals by name, each also in `cursors`, each run
    /// at its first Execute (then kept on the coordinator's server:
    /// `gather.rs`'s `Kept`).
    gathered: HashMap<Bytes, G>,
}

impl<G> Default for Portals<G> {
    fn default() -> Self {
        Portals {
            cursors: Cursors::default(),
            gathered: HashMap::new(),
        }
    }
}

impl<G> Portals<G> {
    /// Whether a gathered portal may be kept: the cheap check before a
    /// message is decoded for one.
    pub fn any_gathered(&self) -> bool {
        !self.gathered.is_empty()
    }

    /// Keep gathered portal `name` until its Execute, known in the
    /// registry as living at `place`.
    pub fn keep_gathered(&mut self, name: Bytes, place: Place, portal: G) {
        self.cursors.declare(name.clone(), place);
        self.gathered.insert(name, portal);
    }

    /// Gathered portal `name`, if the registry still knows it; those it
    /// forgot (the block ended) are dropped first.
    pub fn gathered(&mut self, name: &[u8]) -> Option<&G> {
        let cursors = &self.cursors;
        self.gathered
            .retain(|name, _| cursors.shard_of(name).is_some());
        self.gathered.get(name)
    }

    /// Gathered portal `name` taken out (executed or closed), and
    /// forgotten in the registry.
    pub fn take_gathered(&mut self, name: &[u8]) -> Option<G> {
        let portal = self.gathered.remove(name)?;
        self.cursors.forget(name);
        Some(portal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_coordinator() -> Place {
        Place::Shard {
            shard: 0,
            hold: false,
            in_txn: true,
        }
    }

    #[test]
    fn a_gathered_portal_is_a_name_in_the_registry_until_taken() {
        let mut portals = Portals::<u32>::default();
        assert!(!portals.any_gathered());
        portals.keep_gathered(Bytes::from_static(b"p"), on_coordinator(), 7);
        assert!(portals.any_gathered());
        assert_eq!(portals.cursors.shard_of(b"p"), Some(0));
        assert_eq!(portals.gathered(b"p"), Some(&7));
        assert_eq!(portals.gathered(b"q"), None);
        assert_eq!(portals.take_gathered(b"p"), Some(7));
        assert_eq!(portals.cursors.shard_of(b"p"), None, "forgotten there too");
        assert_eq!(portals.take_gathered(b"p"), None);
        assert!(!portals.any_gathered());
    }

    #[test]
    fn a_portal_the_registry_forgot_is_dropped() {
        let mut portals = Portals::<u32>::default();
        portals.keep_gathered(Bytes::from_static(b"p"), on_coordinator(), 7);
        portals.keep_gathered(Bytes::from_static(b"r"), on_coordinator(), 8);
        portals.cursors.txn_end(true);
        assert_eq!(portals.gathered(b"r"), None);
        assert!(!portals.any_gathered(), "both dropped at the first look");
    }

    #[test]
    fn a_portal_the_registry_keeps_stays() {
        let mut portals = Portals::<u32>::default();
        portals.keep_gathered(Bytes::from_static(b"p"), on_coordinator(), 7);
        portals.keep_gathered(Bytes::from_static(b"r"), on_coordinator(), 8);
        portals.cursors.forget(b"r");
        assert_eq!(portals.gathered(b"p"), Some(&7));
        assert_eq!(portals.gathered(b"r"), None);
        assert_eq!(portals.take_gathered(b"p"), Some(7));
    }
}
