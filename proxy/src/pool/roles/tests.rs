//! The decision of a round of checks, one line per case.

use super::*;

fn p(timeline: u32, lsn: u64) -> Seen {
    Seen::Primary { timeline, lsn }
}

fn r(lsn: u64) -> Seen {
    Seen::Replica { lsn }
}

fn d() -> Seen {
    Seen::Down("refused".to_owned())
}

use RoleNow::{Down as D, Fenced as F, Primary as P, Replica as R};

#[test]
fn a_round_decides_the_primary() {
    type Case = (Option<usize>, Vec<Seen>, Option<usize>, Vec<RoleNow>);
    let cases: Vec<Case> = vec![
        // The usual shard: one primary, one replica.
        (None, vec![p(1, 100), r(90)], Some(0), vec![P, R]),
        (Some(0), vec![p(1, 100), r(90)], Some(0), vec![P, R]),
        // The primary is down: no primary, writes wait.
        (Some(0), vec![d(), r(90)], None, vec![D, R]),
        // The replica was promoted (timeline 2).
        (Some(0), vec![d(), p(2, 95)], Some(1), vec![D, P]),
        (None, vec![d(), p(2, 95)], Some(1), vec![D, P]),
        // The old primary back as a standalone, further on in WAL but on
        // the old timeline: the promoted one stays, the old one is fenced.
        (Some(1), vec![p(1, 500), p(2, 95)], Some(1), vec![F, P]),
        // The same with no current primary (pgshard restarted): the later
        // timeline wins over the higher WAL position.
        (None, vec![p(1, 500), p(2, 95)], Some(1), vec![F, P]),
        // A replica promoted while the primary still runs: its later
        // timeline takes the writes.
        (Some(0), vec![p(1, 500), p(2, 95)], Some(1), vec![F, P]),
        // Two claimants on one timeline: the current one stays...
        (Some(1), vec![p(1, 500), p(1, 95)], Some(1), vec![F, P]),
        // ... and with none, the higher WAL position; the first on a tie.
        (None, vec![p(1, 95), p(1, 500)], Some(1), vec![F, P]),
        (None, vec![p(1, 95), p(1, 95)], Some(0), vec![P, F]),
        // Nothing answers.
        (Some(0), vec![d(), d()], None, vec![D, D]),
        // The primary came back after a restart (no promotion elsewhere).
        (None, vec![p(1, 120), r(110)], Some(0), vec![P, R]),
    ];
    for (current, seen, primary, roles) in cases {
        assert_eq!(
            decide(current, &seen),
            (primary, roles),
            "current {current:?}, seen {seen:?}"
        );
    }
}

#[test]
fn lsns_read_and_print_as_postgres_does() {
    for (text, value) in [
        ("0/0", Some(0)),
        ("16/B374D848", Some(0x16_B374_D848)),
        ("FFFFFFFF/FFFFFFFF", Some(u64::MAX)),
        ("1/2/3", None),
        ("x/1", None),
        ("100000000/0", None),
        ("", None),
    ] {
        assert_eq!(parse_lsn(text), value, "{text}");
        if let Some(value) = value {
            assert_eq!(lsn_text(value), text);
        }
    }
}

#[tokio::test]
async fn a_round_counts_failovers_and_wakes_waiters() {
    let checks = LsnChecks {
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        delay: Duration::ZERO,
    };
    let servers = [("a".to_owned(), 1), ("b".to_owned(), 2)];
    let roles = ShardRoles::new("c", 0, &servers, checks);
    assert_eq!((roles.primary(), roles.found(0)), (None, RoleNow::Unknown));
    let waiter = {
        let roles = Arc::clone(&roles);
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            roles.wait_round_after(0, deadline).await
        })
    };
    tokio::task::yield_now().await;
    roles.apply(&[p(1, 100), r(90)]);
    assert!(waiter.await.unwrap());
    assert_eq!(roles.primary(), Some(0));
    assert_eq!(roles.report()[1].lag_bytes, Some(10));
    roles.apply(&[d(), r(90)]);
    assert_eq!((roles.primary(), roles.failovers()), (None, 0));
    roles.apply(&[d(), p(2, 95)]);
    assert_eq!((roles.primary(), roles.failovers()), (Some(1), 1));
    assert_eq!(roles.found(0), RoleNow::Down);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(20);
    assert!(!roles.wait_round_after(roles.rounds(), deadline).await);
}
