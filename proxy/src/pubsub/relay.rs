//! One shard database's listening connection, outside the pools: LISTEN
//! and UNLISTEN as the hub orders, every NotificationResponse read handed
//! to the hub. A lost connection is made again (at once, then every
//! second while channels remain) and LISTENs on every channel again; what
//! was committed in between is not heard. With no channel left the
//! connection is closed.

use std::collections::BTreeSet;
use std::sync::Weak;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

use super::statement::quoted;
use super::{PubSub, PubSubError};
use crate::conn::server::{ServerConn, ServerTarget};
use crate::protocol::backend::BackendMessage;
use crate::protocol::messages;

/// How long a relay that lost its connection waits between attempts.
const RETRY: Duration = Duration::from_secs(1);

/// What the hub asks of a relay.
#[derive(Debug)]
pub(super) enum Order {
    /// LISTEN (if not already), then answer.
    Listen(String, oneshot::Sender<Result<(), PubSubError>>),
    Unlisten(String),
}

pub(super) struct Relay {
    cluster: String,
    shard: usize,
    target: ServerTarget,
    timeout: Duration,
    hub: Weak<PubSub>,
    /// The channels it listens on (also while it has no connection).
    channels: BTreeSet<String>,
    conn: Option<Box<ServerConn>>,
}

/// Why a statement on the listening connection did not succeed.
enum RunFailure {
    /// The connection broke, or did not answer within the timeout.
    Lost,
    /// The server refused it: its message.
    Refused(String),
}

impl Relay {
    pub(super) fn new(
        cluster: &str,
        shard: usize,
        target: ServerTarget,
        timeout: Duration,
        hub: Weak<PubSub>,
    ) -> Relay {
        Relay {
            cluster: cluster.to_owned(),
            shard,
            target,
            timeout,
            hub,
            channels: BTreeSet::new(),
            conn: None,
        }
    }

    /// Follow the hub's orders until it is gone.
    pub(super) async fn run(mut self, mut orders: mpsc::UnboundedReceiver<Order>) {
        loop {
            // What a statement's read left behind it (a notification in
            // the same packet as its ReadyForQuery) is not read again by
            // `fill`: handed on first.
            self.drain().await;
            let retry = self.conn.is_none() && !self.channels.is_empty();
            tokio::select! {
                order = orders.recv() => match order {
                    Some(order) => self.on_order(order).await,
                    None => return,
                },
                read = readable(&mut self.conn) => self.on_read(read).await,
                () = tokio::time::sleep(RETRY), if retry => {
                    let _ = self.reconnect().await;
                }
            }
        }
    }

    async fn on_order(&mut self, order: Order) {
        match order {
            Order::Listen(channel, ack) => {
                let result = self.listen(channel).await;
                let _ = ack.send(result);
            }
            Order::Unlisten(channel) => {
                if !self.channels.remove(&channel) {
                    return;
                }
                if self.channels.is_empty() {
                    if let Some(conn) = self.conn.take() {
                        conn.terminate().await;
                    }
                } else if self.conn.is_some() {
                    let sql = format!("UNLISTEN {}", quoted(&channel));
                    if let Err(RunFailure::Lost) = self.run_sql(&sql).await {
                        self.lost().await;
                    }
                }
            }
        }
    }

    async fn listen(&mut self, channel: String) -> Result<(), PubSubError> {
        if self.conn.is_none() {
            self.channels.insert(channel);
            return self.reconnect().await;
        }
        if self.channels.contains(&channel) {
            return Ok(());
        }
        let sql = format!("LISTEN {}", quoted(&channel));
        match self.run_sql(&sql).await {
            Ok(()) => {
                self.channels.insert(channel);
                Ok(())
            }
            Err(RunFailure::Refused(message)) => Err(PubSubError::Refused(self.shard, message)),
            Err(RunFailure::Lost) => {
                self.channels.insert(channel);
                self.lost().await;
                if self.conn.is_some() {
                    Ok(())
                } else {
                    Err(PubSubError::Unreachable(self.shard))
                }
            }
        }
    }

    /// What the connection read (`fill`'s result).
    async fn on_read(&mut self, read: std::io::Result<usize>) {
        if !matches!(read, Ok(n) if n > 0) {
            return self.lost().await;
        }
        self.drain().await;
    }

    /// Hand on every whole notification read.
    async fn drain(&mut self) {
        let (hub, cluster) = (&self.hub, self.cluster.as_str());
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        loop {
            match conn.next_message() {
                Ok(Some(frame)) => {
                    if let BackendMessage::NotificationResponse(_) = frame.message() {
                        deliver(hub, cluster, frame.bytes());
                    }
                }
                Ok(None) => return,
                Err(_) => return self.lost().await,
            }
        }
    }

    /// The connection broke: made again at once if it can be.
    async fn lost(&mut self) {
        self.conn = None;
        warn!(
            cluster = self.cluster,
            shard = self.shard,
            "listening connection lost: notifications sent until it is made again are not delivered"
        );
        let _ = self.reconnect().await;
    }

    /// Connect and LISTEN on every channel.
    async fn reconnect(&mut self) -> Result<(), PubSubError> {
        self.conn = None;
        let conn = match ServerConn::connect(&self.target, self.timeout, 0).await {
            Ok(conn) => conn,
            Err(error) => {
                warn!(cluster = self.cluster, shard = self.shard, %error, "cannot open the listening connection");
                return Err(PubSubError::Unreachable(self.shard));
            }
        };
        self.conn = Some(conn);
        let channels: Vec<String> = self.channels.iter().cloned().collect();
        for channel in channels {
            match self.run_sql(&format!("LISTEN {}", quoted(&channel))).await {
                Ok(()) => {}
                Err(RunFailure::Refused(message)) => {
                    self.channels.remove(&channel);
                    return Err(PubSubError::Refused(self.shard, message));
                }
                Err(RunFailure::Lost) => {
                    self.conn = None;
                    return Err(PubSubError::Unreachable(self.shard));
                }
            }
        }
        info!(
            cluster = self.cluster,
            shard = self.shard,
            channels = self.channels.len(),
            "listening connection made"
        );
        Ok(())
    }

    /// Run `sql` on the connection to its ReadyForQuery, handing on the
    /// notifications read meanwhile.
    async fn run_sql(&mut self, sql: &str) -> Result<(), RunFailure> {
        let (hub, cluster) = (&self.hub, self.cluster.as_str());
        let Some(conn) = self.conn.as_mut() else {
            return Err(RunFailure::Lost);
        };
        let mut out = BytesMut::new();
        messages::query(&mut out, sql);
        conn.send(&out).await.map_err(|_| RunFailure::Lost)?;
        let mut result = Ok(());
        let answer = async {
            loop {
                let frame = conn.read_message().await.map_err(|_| RunFailure::Lost)?;
                match frame.message() {
                    BackendMessage::NotificationResponse(_) => {
                        deliver(hub, cluster, frame.bytes());
                    }
                    BackendMessage::ErrorResponse(error) if result.is_ok() => {
                        result = Err(RunFailure::Refused(error.message()));
                    }
                    BackendMessage::ReadyForQuery(_) => return Ok(()),
                    _ => {}
                }
            }
        };
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(())) => result,
            Ok(Err(lost)) => Err(lost),
            Err(_) => Err(RunFailure::Lost),
        }
    }
}

fn deliver(hub: &Weak<PubSub>, cluster: &str, message: &Bytes) {
    if let Some(hub) = hub.upgrade() {
        hub.deliver(cluster, message);
    }
}

/// Wait for the connection to be readable (`fill`); never, without one.
async fn readable(conn: &mut Option<Box<ServerConn>>) -> std::io::Result<usize> {
    match conn {
        Some(conn) => conn.fill().await,
        None => std::future::pending().await,
    }
}
