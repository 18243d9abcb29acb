//! The client's channels as a Postgres session keeps them: orders outside
//! and inside transaction blocks, commit and rollback, what the relay may
//! leave.

use super::Channels;
use crate::protocol::backend::TransactionStatus;
use crate::pubsub::statement::Order;

fn listen(c: &str) -> Order {
    Order::Listen(c.to_owned())
}

fn unlisten(c: &str) -> Order {
    Order::Unlisten(c.to_owned())
}

/// Run `orders` (each registered with the relay first where it needs
/// it) and end the transaction as `end` says (`None`: not in a block);
/// the active channels and every channel the relay was told to leave.
fn run(orders: &[Order], end: Option<bool>) -> (Vec<String>, Vec<String>) {
    let mut channels = Channels::default();
    let mut left = Vec::new();
    for order in orders {
        if let Some(channel) = channels.needs_relay(order) {
            let channel = channel.to_owned();
            channels.registered(&channel);
        }
        left.extend(channels.apply(order.clone(), end.is_some()));
    }
    if let Some(committed) = end {
        left.extend(channels.txn_end(committed));
    }
    let active = channels.active.iter().cloned().collect();
    (active, left)
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// (orders, transaction end, active after, relay left).
type Case<'a> = (&'a [Order], Option<bool>, &'a [&'a str], &'a [&'a str]);

#[test]
fn orders() {
    let cases: &[Case] = &[
        (&[listen("a")], None, &["a"], &[]),
        (&[listen("a"), listen("a")], None, &["a"], &[]),
        (&[listen("a"), unlisten("a")], None, &[], &["a"]),
        (&[unlisten("a")], None, &[], &[]),
        (
            &[listen("a"), listen("b"), Order::UnlistenAll],
            None,
            &[],
            &["a", "b"],
        ),
        (&[listen("a")], Some(true), &["a"], &[]),
        (&[listen("a")], Some(false), &[], &["a"]),
        (&[listen("a"), unlisten("a")], Some(true), &[], &["a"]),
        (&[unlisten("a"), listen("a")], Some(true), &["a"], &[]),
        (
            &[listen("a"), Order::UnlistenAll, listen("b")],
            Some(true),
            &["b"],
            &["a"],
        ),
    ];
    for (orders, end, active, left) in cases {
        assert_eq!(
            run(orders, *end),
            (names(active), names(left)),
            "{orders:?} {end:?}"
        );
    }
}

#[test]
fn an_unlisten_in_a_rolled_back_transaction_changes_nothing() {
    let mut channels = Channels::default();
    channels.registered("a");
    assert!(channels.apply(listen("a"), false).is_empty());
    assert!(channels.apply(unlisten("a"), true).is_empty());
    assert!(channels.listens("a"), "not before its commit");
    assert!(channels.txn_end(false).is_empty());
    assert!(channels.listens("a"));
    channels.apply(unlisten("a"), true);
    assert_eq!(channels.txn_end(true), ["a"]);
    assert!(!channels.listens("a"));
}

#[test]
fn the_end_of_a_transaction_is_read_from_the_server() {
    let mut channels = Channels::default();
    channels.registered("a");
    channels.apply(listen("a"), true);
    assert_eq!(channels.on_ready(TransactionStatus::InBlock), None);
    channels.on_tag(true);
    assert_eq!(channels.on_ready(TransactionStatus::InBlock), None);
    assert_eq!(channels.on_ready(TransactionStatus::Idle), Some(vec![]));
    assert!(channels.listens("a"));
    // A rollback, or an end without a tag (PREPARE TRANSACTION), drops
    // the block's orders.
    channels.apply(unlisten("a"), true);
    assert_eq!(channels.on_ready(TransactionStatus::Idle), Some(vec![]));
    assert!(channels.listens("a"));
    channels.apply(Order::UnlistenAll, true);
    channels.on_tag(false);
    assert_eq!(channels.on_ready(TransactionStatus::Idle), Some(vec![]));
    assert!(channels.listens("a"));
    assert_eq!(
        channels.on_ready(TransactionStatus::Idle),
        None,
        "nothing pending"
    );
}
