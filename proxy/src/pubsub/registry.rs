//! Which clients listen on which channels of one cluster (pure): the
//! first listener of a channel makes pgshard LISTEN on it, the last one
//! leaving makes it UNLISTEN.

use std::collections::{BTreeMap, BTreeSet};

/// A client of the relay, as the hub numbers it.
pub type ClientId = u64;

#[derive(Debug, Default)]
pub struct Registry {
    by_channel: BTreeMap<String, BTreeSet<ClientId>>,
}

impl Registry {
    /// `client` listens on `channel`: whether it is the channel's first
    /// listener.
    pub fn add(&mut self, client: ClientId, channel: &str) -> bool {
        let listeners = self.by_channel.entry(channel.to_owned()).or_default();
        listeners.insert(client);
        listeners.len() == 1
    }

    /// `client` stops listening on `channel`: whether it was the last.
    pub fn remove(&mut self, client: ClientId, channel: &str) -> bool {
        let Some(listeners) = self.by_channel.get_mut(channel) else {
            return false;
        };
        if !listeners.remove(&client) || !listeners.is_empty() {
            return false;
        }
        self.by_channel.remove(channel);
        true
    }

    /// `client` leaves every channel: those left without a listener.
    pub fn remove_all(&mut self, client: ClientId) -> Vec<String> {
        let mut emptied = Vec::new();
        self.by_channel.retain(|channel, listeners| {
            let was = listeners.remove(&client);
            let keep = !listeners.is_empty();
            if was && !keep {
                emptied.push(channel.clone());
            }
            keep
        });
        emptied
    }

    /// Who listens on `channel`.
    pub fn listeners(&self, channel: &str) -> impl Iterator<Item = ClientId> + '_ {
        self.by_channel.get(channel).into_iter().flatten().copied()
    }

    /// How many channels have listeners.
    pub fn channels(&self) -> usize {
        self.by_channel.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_listener() {
        let mut registry = Registry::default();
        assert!(registry.add(1, "a"));
        assert!(!registry.add(2, "a"));
        assert!(!registry.add(1, "a"), "a second LISTEN changes nothing");
        assert!(registry.add(1, "b"));
        assert_eq!(registry.listeners("a").collect::<Vec<_>>(), [1, 2]);
        assert!(!registry.remove(1, "a"));
        assert!(!registry.remove(1, "a"), "not listening any more");
        assert!(!registry.remove(3, "c"), "never listened");
        assert!(registry.remove(2, "a"));
        assert_eq!(registry.listeners("a").count(), 0);
        assert_eq!(registry.channels(), 1);
    }

    #[test]
    fn a_client_leaving_empties_only_its_own_channels() {
        let mut registry = Registry::default();
        registry.add(1, "a");
        registry.add(1, "b");
        registry.add(2, "b");
        registry.add(2, "c");
        assert_eq!(registry.remove_all(1), ["a"]);
        assert_eq!(registry.remove_all(1), Vec::<String>::new());
        assert_eq!(registry.listeners("b").collect::<Vec<_>>(), [2]);
        let mut left = registry.remove_all(2);
        left.sort();
        assert_eq!(left, ["b", "c"]);
        assert_eq!(registry.channels(), 0);
    }
}
