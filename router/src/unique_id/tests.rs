//! The generator: bit layout, monotonic ids, a clock that goes backwards,
//! the minimum, and the limits.

use super::*;

const T: u64 = EPOCH_MS + 1_000_000;

fn id(next: Result<Next, UniqueIdError>) -> i64 {
    match next {
        Ok(Next::Id(id)) => id,
        other => panic!("expected an id, got {other:?}"),
    }
}

#[test]
fn standard_layout_is_41_10_12_bits() {
    let mut g = Generator::new(UniqueIdFunction::Standard, 5, 0);
    assert_eq!(id(g.next(T)), (1_000_000 << 22) | (5 << 12));
    assert_eq!(id(g.next(T)), (1_000_000 << 22) | (5 << 12) | 1);
    let third = id(g.next(T));
    assert_eq!(
        g.parts(third),
        IdParts {
            ms: 1_000_000,
            node: 5,
            seq: 2
        }
    );
    let mut top = Generator::new(UniqueIdFunction::Standard, 1023, 0);
    let max = top.compose(IdParts {
        ms: (1 << 41) - 1,
        node: 1023,
        seq: 4095,
    });
    assert_eq!(max, Ok(i64::MAX));
    assert_eq!(id(top.next(T)) >> 12 & 1023, 1023);
}

#[test]
fn compact_layout_is_41_6_6_bits_and_js_safe() {
    let mut g = Generator::new(UniqueIdFunction::Compact, 63, 0);
    assert_eq!(id(g.next(T)), (1_000_000 << 12) | (63 << 6));
    let max = g.compose(IdParts {
        ms: (1 << 41) - 1,
        node: 63,
        seq: 63,
    });
    assert_eq!(max, Ok((1 << 53) - 1));
    assert_eq!(UniqueIdFunction::Compact.max_node(), 63);
    assert_eq!(UniqueIdFunction::Standard.max_node(), 1023);
}

#[test]
fn ids_increase_strictly_within_and_across_milliseconds() {
    for function in [UniqueIdFunction::Standard, UniqueIdFunction::Compact] {
        let mut g = Generator::new(function, 1, 0);
        let mut last = 0;
        // 10 000 ids, twice as many per clock millisecond as the layout
        // has: it borrows ahead of the clock, within MAX_LEAD_MS.
        let per_ms = 2 * (function.max_seq() + 1);
        for i in 0..10_000u64 {
            let now = T + i / per_ms;
            let next = match g.next(now).unwrap() {
                Next::Id(id) => id,
                Next::Wait(_) => panic!("{function:?} waited at id {i}"),
            };
            assert!(next > last, "{function:?}: {next} after {last}");
            last = next;
        }
    }
}

#[test]
fn clock_going_backwards_never_repeats_an_id() {
    let mut g = Generator::new(UniqueIdFunction::Standard, 7, 0);
    let mut seen = std::collections::BTreeSet::new();
    let mut last = 0;
    // Forward, a step back of 50 ms, forward again past the old time.
    for now in (T..T + 20).chain(T - 30..T + 40) {
        let next = id(g.next(now));
        assert!(seen.insert(next), "duplicate id {next} at {now}");
        assert!(next > last);
        last = next;
    }
    // While behind, it keeps the last millisecond and counts on.
    let mut g = Generator::new(UniqueIdFunction::Standard, 7, 0);
    id(g.next(T + 10));
    let behind = id(g.next(T));
    assert_eq!(
        g.parts(behind),
        IdParts {
            ms: 1_000_010,
            node: 7,
            seq: 1
        }
    );
}

#[test]
fn far_behind_and_exhausted_it_asks_to_wait() {
    // Compact: 64 ids per ms. A clock stuck at T allows MAX_LEAD_MS ms of
    // borrowing, then the generator asks for a wait and uses nothing.
    let mut g = Generator::new(UniqueIdFunction::Compact, 0, 0);
    let budget = (MAX_LEAD_MS + 1) * 64;
    let mut last = 0;
    for _ in 0..budget {
        let next = id(g.next(T));
        assert!(next > last);
        last = next;
    }
    assert_eq!(g.next(T), Ok(Next::Wait(1)));
    assert_eq!(g.next(T), Ok(Next::Wait(1)));
    // A clock 1 s back waits too, and the id after the wait is still larger.
    assert_eq!(g.next(T - 1000), Ok(Next::Wait(1001)));
    assert!(id(g.next(T + 1)) > last);
}

#[test]
fn minimum_is_added_and_checked() {
    let mut g = Generator::new(UniqueIdFunction::Standard, 0, 1_000);
    assert_eq!(id(g.next(T)), (1_000_000 << 22) + 1_000);
    assert_eq!(g.parts((1_000_000 << 22) + 1_000).ms, 1_000_000);
    let mut huge = Generator::new(UniqueIdFunction::Standard, 0, i64::MAX as u64);
    assert!(matches!(
        huge.next(T),
        Err(UniqueIdError::AboveCeiling { .. })
    ));
    let mut compact = Generator::new(UniqueIdFunction::Compact, 0, 1 << 53);
    assert!(matches!(
        compact.next(T),
        Err(UniqueIdError::AboveCeiling { .. })
    ));
}

#[test]
fn clock_before_epoch_and_after_69_years_are_errors() {
    let mut g = Generator::new(UniqueIdFunction::Standard, 0, 0);
    assert_eq!(
        g.next(1_000),
        Err(UniqueIdError::BeforeEpoch { now_ms: 1_000 })
    );
    assert_eq!(
        g.next(EPOCH_MS + (1 << 41)),
        Err(UniqueIdError::TimestampOverflow)
    );
}
