//! The cursor registry and FETCH's forms, one line per case.

use router::summary::{CursorOptions, FetchDirection as D, FETCH_ALL};

use super::*;

#[test]
fn only_forward_fetches_read_a_merged_cursor() {
    #[rustfmt::skip]
    let cases: [(D, i64, Option<u64>); 10] = [
        (D::Forward, 1, Some(1)),
        (D::Forward, 1000, Some(1000)),
        (D::Forward, FETCH_ALL, Some(u64::MAX)),
        (D::Forward, 0, None),
        (D::Forward, -3, None),
        (D::Backward, 1, None),
        (D::Backward, FETCH_ALL, None),
        (D::Absolute, 1, None),
        (D::Absolute, -1, None),
        (D::Relative, 2, None),
    ];
    for (direction, count, rows) in cases {
        let got = forward(direction, count);
        assert_eq!(got.as_ref().ok().copied(), rows, "{direction:?} {count}");
        if let Err(error) = got {
            assert_eq!(error.code, "0A000");
        }
    }
}

#[test]
fn scroll_and_locking_cursors_are_refused_over_several_shards() {
    let options = |scroll, hold| CursorOptions {
        binary: false,
        scroll,
        hold,
    };
    assert!(declare_refusal(options(false, true), false).is_none());
    assert!(declare_refusal(options(true, false), false).is_some());
    assert!(declare_refusal(options(false, false), true).is_some());
}

fn shard(shard: usize, hold: bool) -> Place {
    Place::Shard {
        shard,
        hold,
        in_txn: true,
    }
}

#[test]
fn a_transaction_end_takes_its_cursors() {
    let mut cursors = Cursors::default();
    cursors.declare(Bytes::from_static(b"plain"), shard(0, false));
    cursors.declare(Bytes::from_static(b"held"), shard(1, true));
    cursors.declare(Bytes::from_static(b"older"), shard(1, true));
    cursors.committed(b"older");
    assert!(cursors.holds_on(1) && !cursors.holds_on(0));
    // Rolled back: only the WITH HOLD cursor from before it stays.
    cursors.txn_end(false);
    assert_eq!(cursors.shard_of(b"plain"), None);
    assert_eq!(cursors.shard_of(b"held"), None);
    assert_eq!(cursors.shard_of(b"older"), Some(1));
    // Committed: WITH HOLD cursors stay, others go.
    cursors.declare(Bytes::from_static(b"held"), shard(0, true));
    cursors.declare(Bytes::from_static(b"plain"), shard(0, false));
    cursors.txn_end(true);
    assert_eq!(cursors.shard_of(b"held"), Some(0));
    assert_eq!(cursors.shard_of(b"plain"), None);
    // A later rollback leaves a committed WITH HOLD cursor alone.
    cursors.txn_end(false);
    assert_eq!(cursors.shard_of(b"held"), Some(0));
}

#[test]
fn a_rollback_to_savepoint_is_not_the_transaction_end() {
    let mut cursors = Cursors::default();
    cursors.declare(Bytes::from_static(b"c"), shard(0, false));
    // ROLLBACK TO's tag is ROLLBACK, but the server stays in its
    // transaction.
    cursors.on_tag(TagSays::Rollback);
    cursors.on_ready(TransactionStatus::InBlock);
    assert_eq!(cursors.shard_of(b"c"), Some(0));
    cursors.on_tag(TagSays::Commit);
    cursors.on_ready(TransactionStatus::Idle);
    assert_eq!(cursors.shard_of(b"c"), None);
}

#[test]
fn shard_requests_fetch_forward_or_execute_with_a_limit() {
    let cursor = Source::Cursor("My \"c\"".into());
    let request = cursor.request(500, true, true);
    assert_eq!(
        &request[5..request.len() - 1],
        b"FETCH FORWARD 500 FROM \"My \"\"c\"\"\""
    );
    let portal = Source::Portal(Bytes::from_static(b"p1"));
    let request = portal.request(7, true, false);
    let mut buf = request.clone();
    let mut tags = Vec::new();
    while let Ok(Some(frame)) = crate::protocol::frontend::decode_frontend_frame(&mut buf, 1 << 20)
    {
        tags.push(frame.kind);
    }
    assert_eq!(
        tags,
        [
            FrontendKind::Describe,
            FrontendKind::Execute,
            FrontendKind::Flush
        ]
    );
}

#[test]
fn a_rollback_to_savepoint_stops_merged_cursors_of_the_transaction() {
    use crate::execute::merge::InParts;
    use std::sync::Arc;
    let merged = |in_txn| {
        Place::Merged(Box::new(Merged {
            shards: vec![0, 1],
            source: Source::Cursor("m".into()),
            rows: InParts::new(Arc::default(), Default::default(), Vec::new(), 2),
            hold: true,
            in_txn,
            broken: false,
            refused: None,
            bytewise: None,
        }))
    };
    let mut cursors = Cursors::default();
    cursors.declare(Bytes::from_static(b"new"), merged(true));
    cursors.declare(Bytes::from_static(b"old"), merged(false));
    cursors.rolled_back_to();
    let refused = |cursors: &mut Cursors, name: &'static [u8]| {
        let merged = cursors.take_merged(name).unwrap();
        let refused = merged.refused.is_some();
        cursors.put_merged(Bytes::from_static(name), merged);
        refused
    };
    assert!(refused(&mut cursors, b"new"));
    assert!(!refused(&mut cursors, b"old"));
}
