//! LISTEN/NOTIFY in transaction mode: the relay between clients and
//! pgshard's own listening connections. Per cluster, one connection per
//! shard database, outside the pools (`pubsub/relay.rs`), LISTENs on each
//! channel some client listens on (the first client's LISTEN subscribes,
//! the last one's UNLISTEN or exit unsubscribes: `pubsub/registry.rs`).
//! Each notification a shard sends is queued, unchanged (the notifying
//! server process's id included), for every client listening on its
//! channel; the session writes it when the client is between
//! transactions. A client whose queue holds `pub_sub_channel_size`
//! notifications and gets one more is cut off from the relay, and its
//! session ends with an error: it learns that it missed some.
//!
//! NOTIFY is not relayed: it runs where the client's transaction runs (on
//! one shard), so Postgres sends it at commit and never on rollback, and
//! each shard's listening connection hears it once.

pub mod registry;
mod relay;
pub mod statement;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

use crate::lock::lock;
use crate::pool::clusters::ClusterPools;
use registry::{ClientId, Registry};

/// Why a LISTEN could not take effect.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PubSubError {
    /// The listening connection to a shard database could not be made.
    #[error("pgshard could not open its listening connection to shard {0}")]
    Unreachable(usize),
    /// The shard refused the LISTEN: its message.
    #[error("shard {0} refused LISTEN: {1}")]
    Refused(usize, String),
    /// The shard did not answer in time.
    #[error("shard {0} did not answer LISTEN in time")]
    Timeout(usize),
}

/// The relay hub every session shares (`session::Shared`).
#[derive(Debug, Default)]
pub struct PubSub {
    hub: Mutex<Hub>,
}

#[derive(Debug, Default)]
struct Hub {
    next: ClientId,
    /// Each subscribed client's queue.
    clients: HashMap<ClientId, mpsc::Sender<Bytes>>,
    /// By cluster name.
    clusters: HashMap<String, Cluster>,
}

/// One cluster's listeners and its relays (one per shard database).
#[derive(Debug)]
struct Cluster {
    registry: Registry,
    relays: Vec<mpsc::UnboundedSender<relay::Order>>,
}

/// A client's place in the relay: its queue of notifications (each a
/// whole NotificationResponse). Dropping it leaves every channel.
#[derive(Debug)]
pub struct Subscription {
    id: ClientId,
    cluster: String,
    hub: Arc<PubSub>,
    pub notes: mpsc::Receiver<Bytes>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.leave(self.id, &self.cluster);
    }
}

impl PubSub {
    /// A client of `cluster` joins, with room for `queue` notifications.
    pub fn subscribe(self: &Arc<Self>, cluster: &str, queue: usize) -> Subscription {
        let (sender, notes) = mpsc::channel(queue.max(1));
        let mut hub = lock(&self.hub);
        hub.next += 1;
        let id = hub.next;
        hub.clients.insert(id, sender);
        Subscription {
            id,
            cluster: cluster.to_owned(),
            hub: Arc::clone(self),
            notes,
        }
    }

    /// `client` listens on `channel`: returns once every shard database's
    /// listening connection LISTENs on it (made with `pools`' primaries
    /// when the cluster has none yet), so that a notification committed
    /// after this returns reaches the client.
    pub async fn listen(
        self: &Arc<Self>,
        client: &Subscription,
        pools: &ClusterPools,
        channel: &str,
    ) -> Result<(), PubSubError> {
        let acks: Vec<_> = {
            let mut hub = lock(&self.hub);
            let cluster = hub
                .clusters
                .entry(client.cluster.clone())
                .or_insert_with(|| Cluster::start(Arc::downgrade(self), &client.cluster, pools));
            cluster.registry.add(client.id, channel);
            // Every relay answers, also for a channel it listens on
            // already: after the first client's LISTEN.
            cluster
                .relays
                .iter()
                .map(|relay| {
                    let (ack, answer) = oneshot::channel();
                    let _ = relay.send(relay::Order::Listen(channel.to_owned(), ack));
                    answer
                })
                .collect()
        };
        let wait = pools.first().map_or(Duration::from_secs(5), |p| {
            p.first().settings.connect_timeout
        }) * 2;
        for (shard, answer) in acks.into_iter().enumerate() {
            let result = match tokio::time::timeout(wait, answer).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(PubSubError::Unreachable(shard)),
                Err(_) => Err(PubSubError::Timeout(shard)),
            };
            if let Err(error) = result {
                self.unlisten(client, channel);
                return Err(error);
            }
        }
        Ok(())
    }

    /// `client` stops listening on `channel`.
    pub fn unlisten(&self, client: &Subscription, channel: &str) {
        let mut hub = lock(&self.hub);
        if let Some(cluster) = hub.clusters.get_mut(&client.cluster) {
            if cluster.registry.remove(client.id, channel) {
                cluster.stop_listening(channel);
            }
        }
    }

    /// `client` leaves: every channel, and its queue.
    fn leave(&self, client: ClientId, cluster: &str) {
        let mut hub = lock(&self.hub);
        hub.clients.remove(&client);
        if let Some(cluster) = hub.clusters.get_mut(cluster) {
            for channel in cluster.registry.remove_all(client) {
                cluster.stop_listening(&channel);
            }
        }
    }

    /// A NotificationResponse `message` from one of `cluster`'s shards:
    /// queued for each of the channel's listeners. A listener whose queue
    /// is full is cut off (its session sees its queue end).
    fn deliver(&self, cluster: &str, message: &Bytes) {
        let Some(channel) = channel_of(message) else {
            return;
        };
        let mut hub = lock(&self.hub);
        let hub = &mut *hub;
        let Some(listeners) = hub.clusters.get_mut(cluster) else {
            return;
        };
        let mut behind = Vec::new();
        for client in listeners.registry.listeners(channel) {
            let Some(queue) = hub.clients.get(&client) else {
                continue;
            };
            if let Err(mpsc::error::TrySendError::Full(_)) = queue.try_send(message.clone()) {
                behind.push(client);
            }
        }
        for client in behind {
            warn!(
                cluster,
                "a listening client fell pub_sub_channel_size notifications behind: disconnected"
            );
            hub.clients.remove(&client);
            for channel in listeners.registry.remove_all(client) {
                listeners.stop_listening(&channel);
            }
        }
    }

    /// How many channels `cluster`'s relays listen on (for tests and
    /// SHOW).
    pub fn channels(&self, cluster: &str) -> usize {
        lock(&self.hub)
            .clusters
            .get(cluster)
            .map_or(0, |c| c.registry.channels())
    }
}

impl Cluster {
    /// A cluster's relays, one task per shard database, connected with
    /// `pools`' primaries' targets on their first LISTEN.
    fn start(hub: Weak<PubSub>, name: &str, pools: &ClusterPools) -> Cluster {
        let relays = pools
            .iter()
            .enumerate()
            .map(|(shard, shard_pools)| {
                let (orders, received) = mpsc::unbounded_channel();
                // Notifications are not replicated: listen on the primary
                // (of an `auto` shard: the one it has when the relay starts).
                let pool = shard_pools.preferred();
                let relay = relay::Relay::new(
                    name,
                    shard,
                    pool.target.clone(),
                    pool.settings.connect_timeout,
                    hub.clone(),
                );
                tokio::spawn(relay.run(received));
                orders
            })
            .collect();
        Cluster {
            registry: Registry::default(),
            relays,
        }
    }

    fn stop_listening(&self, channel: &str) {
        for relay in &self.relays {
            let _ = relay.send(relay::Order::Unlisten(channel.to_owned()));
        }
    }
}

/// The channel a NotificationResponse names (after the process id).
pub fn channel_of(message: &[u8]) -> Option<&str> {
    let rest = message.get(9..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&rest[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A NotificationResponse from process 7 with payload `x`.
    fn notification(channel: &str) -> Bytes {
        let body = [&7u32.to_be_bytes()[..], channel.as_bytes(), b"\0x\0"].concat();
        let length = u32::try_from(body.len() + 4).unwrap().to_be_bytes();
        Bytes::from([&b"A"[..], &length, &body].concat())
    }

    #[test]
    fn the_channel_of_a_notification() {
        assert_eq!(channel_of(&notification("jobs")), Some("jobs"));
        assert_eq!(channel_of(b"A\0\0\0\x08"), None);
    }

    /// A hub with one cluster and no relays (nothing to connect to).
    fn hub_with(clients: &[(&str, &[&str])], queue: usize) -> (Arc<PubSub>, Vec<Subscription>) {
        let hub = Arc::new(PubSub::default());
        lock(&hub.hub).clusters.insert(
            "c".into(),
            Cluster {
                registry: Registry::default(),
                relays: Vec::new(),
            },
        );
        let mut subs = Vec::new();
        for (_, channels) in clients {
            let sub = hub.subscribe("c", queue);
            for channel in *channels {
                let mut inner = lock(&hub.hub);
                let cluster = inner.clusters.get_mut("c").unwrap();
                cluster.registry.add(sub.id, channel);
            }
            subs.push(sub);
        }
        (hub, subs)
    }

    #[test]
    fn each_listener_of_the_channel_gets_the_notification() {
        let (hub, mut subs) =
            hub_with(&[("a", &["jobs"]), ("b", &["jobs", "x"]), ("c", &["x"])], 4);
        hub.deliver("c", &notification("jobs"));
        hub.deliver("other", &notification("jobs"));
        assert_eq!(subs[0].notes.try_recv().unwrap(), notification("jobs"));
        assert_eq!(subs[1].notes.try_recv().unwrap(), notification("jobs"));
        assert!(subs[0].notes.try_recv().is_err());
        assert!(subs[2].notes.try_recv().is_err());
    }

    #[test]
    fn a_full_queue_cuts_the_client_off() {
        let (hub, mut subs) = hub_with(&[("a", &["jobs"]), ("b", &["jobs"])], 2);
        for _ in 0..2 {
            hub.deliver("c", &notification("jobs"));
            subs[1].notes.try_recv().unwrap();
        }
        hub.deliver("c", &notification("jobs"));
        assert_eq!(hub.channels("c"), 1, "b still listens");
        for _ in 0..2 {
            assert!(subs[0].notes.try_recv().is_ok());
        }
        assert_eq!(
            subs[0].notes.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        );
        assert!(subs[1].notes.try_recv().is_ok());
        drop(subs);
        assert_eq!(hub.channels("c"), 0, "leaving empties every channel");
    }
}
