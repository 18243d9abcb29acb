//! LISTEN and UNLISTEN in transaction mode, answered here through the
//! notification relay (`crate::pubsub`), and the notifications written to
//! the client between its transactions. As in Postgres, LISTEN and
//! UNLISTEN inside a transaction take effect at its commit (nothing at a
//! rollback), and a notification is written only if the client listens on
//! its channel when it is written. The relay's subscription is made at the
//! client's first LISTEN and left when the session ends.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::local::LocalPortal;
use super::{End, Session};
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::pubsub::statement::{self, NotListen, Order};
use crate::pubsub::{channel_of, Subscription};

/// The client's channels, as a Postgres session keeps them (pure).
#[derive(Debug, Default)]
pub struct Channels {
    /// Where the client listens: notifications on other channels are not
    /// written.
    active: BTreeSet<String>,
    /// Where the relay has the client: the active channels, and those a
    /// LISTEN of the open transaction added.
    registered: BTreeSet<String>,
    /// LISTEN and UNLISTEN of the open transaction, applied at its commit.
    pending: Vec<Order>,
    /// A COMMIT (true) or ROLLBACK (false) the server answered, until its
    /// ReadyForQuery says the transaction is over.
    ending: Option<bool>,
}

impl Channels {
    /// The channel the relay must LISTEN on before `order` can be
    /// answered, if any.
    pub fn needs_relay<'o>(&self, order: &'o Order) -> Option<&'o str> {
        match order {
            Order::Listen(channel) if !self.registered.contains(channel) => Some(channel),
            _ => None,
        }
    }

    /// The relay listens on `channel` for the client.
    pub fn registered(&mut self, channel: &str) {
        self.registered.insert(channel.to_owned());
    }

    /// `order` ran, in a transaction block or not: the channels the relay
    /// may leave.
    pub fn apply(&mut self, order: Order, in_block: bool) -> Vec<String> {
        if in_block {
            self.pending.push(order);
            return Vec::new();
        }
        self.take_effect(order);
        self.unused()
    }

    /// The transaction ended: its orders take effect if it committed.
    /// The channels the relay may leave.
    pub fn txn_end(&mut self, committed: bool) -> Vec<String> {
        let pending = std::mem::take(&mut self.pending);
        if committed {
            for order in pending {
                self.take_effect(order);
            }
        }
        self.unused()
    }

    /// A CommandComplete's tag said COMMIT (true) or ROLLBACK (false).
    pub fn on_tag(&mut self, committed: bool) {
        self.ending = Some(committed);
    }

    /// A ReadyForQuery with `status`: the end of a transaction after its
    /// tag (any other end, as PREPARE TRANSACTION, commits nothing here).
    pub fn on_ready(&mut self, status: TransactionStatus) -> Option<Vec<String>> {
        if status != TransactionStatus::Idle {
            return None;
        }
        let committed = self.ending.take().unwrap_or(false);
        (!self.pending.is_empty() || committed).then(|| self.txn_end(committed))
    }

    pub fn listens(&self, channel: &str) -> bool {
        self.active.contains(channel)
    }

    fn take_effect(&mut self, order: Order) {
        match order {
            Order::Listen(channel) => {
                self.registered.insert(channel.clone());
                self.active.insert(channel);
            }
            Order::Unlisten(channel) => {
                self.active.remove(&channel);
            }
            Order::UnlistenAll => self.active.clear(),
        }
    }

    /// Registered channels neither active nor LISTENed in the open
    /// transaction: forgotten, and returned for the relay to leave.
    pub fn unused(&mut self) -> Vec<String> {
        let pending: BTreeSet<&String> = self
            .pending
            .iter()
            .filter_map(|order| match order {
                Order::Listen(channel) => Some(channel),
                _ => None,
            })
            .collect();
        let gone: Vec<String> = self
            .registered
            .iter()
            .filter(|c| !self.active.contains(*c) && !pending.contains(c))
            .cloned()
            .collect();
        for channel in &gone {
            self.registered.remove(channel);
        }
        gone
    }
}

/// The client's channels and its place in the relay.
#[derive(Debug, Default)]
pub struct Listening {
    pub channels: Channels,
    subscription: Option<Subscription>,
}

impl Listening {
    /// The next notification for the client (`None`: the relay cut it
    /// off); never, for a client that never listened.
    pub async fn next(&mut self) -> Option<Bytes> {
        match &mut self.subscription {
            Some(subscription) => subscription.notes.recv().await,
            None => std::future::pending().await,
        }
    }
}

impl Session {
    /// A Query of LISTEN / UNLISTEN statements in transaction mode:
    /// answered here. Returns whether it was.
    pub(super) async fn on_listen_query(&mut self, sql: &[u8]) -> Result<bool, End> {
        let listens = |sql| statement::starts_listen(sql) || statement::listens_after_first(sql);
        if !self.cluster.transaction_mode() || !listens(sql) {
            return Ok(false);
        }
        let orders = match statement::parse(sql) {
            Ok(orders) => orders,
            Err(NotListen::Mixed) => {
                self.local_error(
                    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, MIXED),
                    true,
                );
                return Ok(true);
            }
            Err(NotListen::Syntax(message)) => {
                self.local_error(ClientError::new(sqlstate::SYNTAX_ERROR, message), true);
                return Ok(true);
            }
        };
        let tags: Vec<&str> = orders.iter().map(Order::tag).collect();
        if self.run_orders(orders, true).await? {
            for (i, tag) in tags.iter().enumerate() {
                self.local_tag(tag, i + 1 == tags.len());
            }
        }
        Ok(true)
    }

    /// A Bind of a LISTEN / UNLISTEN statement in transaction mode:
    /// answered here (its Execute by the local portal). Returns whether
    /// it was.
    pub(super) async fn on_listen_bind(&mut self, sql: &[u8]) -> Result<bool, End> {
        if !self.cluster.transaction_mode() || !statement::starts_listen(sql) {
            return Ok(false);
        }
        let order = match statement::parse(sql) {
            Ok(mut orders) if orders.len() == 1 => orders.remove(0),
            Ok(_) => {
                let error = ClientError::new(
                    sqlstate::SYNTAX_ERROR,
                    "cannot insert multiple commands into a prepared statement",
                );
                self.local_error(error, false);
                return Ok(true);
            }
            Err(NotListen::Mixed) => return Ok(false),
            Err(NotListen::Syntax(message)) => {
                self.local_error(ClientError::new(sqlstate::SYNTAX_ERROR, message), false);
                return Ok(true);
            }
        };
        let tag = order.tag();
        if self.run_orders(vec![order], false).await? {
            self.local_reply(messages::bind_complete);
            self.phase.bind_local(LocalPortal { tag, nested: false });
        }
        Ok(true)
    }

    /// Run the client's orders: the relay LISTENs first where needed.
    /// Returns whether they ran (else the error is planned).
    async fn run_orders(&mut self, orders: Vec<Order>, simple: bool) -> Result<bool, End> {
        if self.plan.awaiting_server() && !self.pipeline.unsynced() {
            // The transaction status the orders run in is the one after
            // what the client sent before (a statement that failed has
            // aborted it): its replies are read first. (A Bind in an
            // unsynced batch takes the status the server last reported.)
            self.flush().await?;
            self.answer_all().await?;
        }
        let status = self.status();
        if status == TransactionStatus::Failed {
            self.aborted(simple);
            return Ok(false);
        }
        let queue = self.shared.config().general.pub_sub_channel_size;
        if queue == 0 {
            self.local_error(
                ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, RELAY_OFF),
                simple,
            );
            return Ok(false);
        }
        for order in &orders {
            let Some(channel) = self.listening.channels.needs_relay(order) else {
                continue;
            };
            let (hub, pools) = (&self.shared.pubsub, self.cluster.pools());
            let subscription = self
                .listening
                .subscription
                .get_or_insert_with(|| hub.subscribe(&self.info.database, queue));
            if let Err(error) = hub.listen(subscription, pools, channel).await {
                let error = ClientError::new(sqlstate::CANNOT_CONNECT_NOW, error.to_string());
                self.local_error(error, simple);
                let unused = self.listening.channels.unused();
                self.leave_channels(unused);
                return Ok(false);
            }
            self.listening.channels.registered(channel);
        }
        let in_block = status == TransactionStatus::InBlock;
        for order in orders {
            let gone = self.listening.channels.apply(order, in_block);
            self.leave_channels(gone);
        }
        Ok(true)
    }

    /// The relay stops listening on `channels` for the client.
    pub(super) fn leave_channels(&mut self, channels: Vec<String>) {
        if let Some(subscription) = &self.listening.subscription {
            for channel in channels {
                self.shared.pubsub.unlisten(subscription, &channel);
            }
        }
    }

    /// The client's transaction ended (answered by pgshard).
    pub(super) fn listen_txn_end(&mut self, committed: bool) {
        let gone = self.listening.channels.txn_end(committed);
        self.leave_channels(gone);
    }

    /// Whether a notification may be written now: the client is between
    /// transactions and owed nothing.
    pub(super) fn notifications_deliverable(&self) -> bool {
        self.listening.subscription.is_some()
            && self.status() == TransactionStatus::Idle
            && self.plan.is_empty()
            && !self.pipeline.unsynced()
            && matches!(self.phase, super::phase::Phase::Idle)
    }

    /// A notification from the relay (`None`: the client fell too far
    /// behind and was cut off): written if the client listens on its
    /// channel, with any others already queued.
    pub(super) async fn on_notification(&mut self, note: Option<Bytes>) -> Result<(), End> {
        let Some(mut note) = note else {
            return Err(End::Fatal(ClientError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                "pgshard: this client fell pub_sub_channel_size notifications behind and missed some; reconnect and LISTEN again",
            )));
        };
        loop {
            if channel_of(&note).is_some_and(|c| self.listening.channels.listens(c)) {
                self.client.out().extend_from_slice(&note);
            }
            match self
                .listening
                .subscription
                .as_mut()
                .map(|s| s.notes.try_recv())
            {
                Some(Ok(next)) => note = next,
                _ => break,
            }
        }
        self.client.flush().await.map_err(|_| End::ClientGone)
    }
}

const MIXED: &str = "LISTEN and UNLISTEN in transaction mode must be sent alone, not with other statements in one query string (pgshard answers them itself)";

const RELAY_OFF: &str = "LISTEN needs pgshard's notification relay in transaction mode, which pub_sub_channel_size = 0 turns off: set pub_sub_channel_size, or use session mode";

#[cfg(test)]
mod tests;
