//! Rebalance plans: one-line cases (`shard:from->to@round`), and for many
//! random placements the invariants: balanced after, the fewest moves,
//! nothing moved twice, rounds on disjoint databases.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn parallel(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap()
}

/// The plan as `shard:from->to@round` words.
fn planned(placement: &[usize], databases: usize, n: usize) -> String {
    plan(placement, databases, parallel(n))
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}->{}@{}", m.shard, m.from, m.to, m.round))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `s % n`, the default placement.
fn default(shards: usize, n: usize) -> Vec<usize> {
    (0..shards).map(|s| s % n).collect()
}

#[test]
fn plans() {
    let cases: &[(&[usize], usize, usize, &str)] = &[
        // 2 -> 3 databases with 12 logical shards: 4 moves, 4 per database.
        (
            &default(12, 2),
            3,
            1,
            "10:0->2@0 11:1->2@1 8:0->2@2 9:1->2@3",
        ),
        // Every move involves database 2: parallel changes nothing.
        (
            &default(12, 2),
            3,
            4,
            "10:0->2@0 11:1->2@1 8:0->2@2 9:1->2@3",
        ),
        // 2 -> 4: two receivers, so two moves at a time.
        (&default(8, 2), 4, 2, "6:0->2@0 7:1->3@0 4:0->2@1 5:1->3@1"),
        (&default(8, 2), 4, 1, "6:0->2@0 7:1->3@1 4:0->2@2 5:1->3@3"),
        // Balanced already (or as balanced as it gets): nothing.
        (&default(12, 3), 3, 1, ""),
        (&[0, 1, 0], 2, 1, ""),
        (&[], 3, 1, ""),
        // The fullest database keeps the odd shard: one move, not two.
        (&[0, 0, 0, 1, 1], 3, 1, "2:0->2@0"),
        (&[1, 1, 1, 0, 0], 3, 1, "2:1->2@0"),
        // Fewer shards than databases: at most one each.
        (&[0, 0], 3, 1, "1:0->1@0"),
        // Everything on one database.
        (&[0; 6], 3, 2, "5:0->1@0 4:0->2@1 3:0->1@2 2:0->2@3"),
        // A database taken to be emptied by hand is refilled like a new one.
        (&[0, 0, 1, 1, 0, 1], 3, 1, "4:0->2@0 5:1->2@1"),
    ];
    for (placement, databases, n, expected) in cases {
        assert_eq!(
            planned(placement, *databases, *n),
            *expected,
            "{placement:?} over {databases} databases, {n} at a time"
        );
    }
}

#[test]
fn refusals() {
    assert_eq!(plan(&[0], 0, parallel(1)), Err(PlanError::NoDatabases));
    let err = plan(&[0, 1, 2], 2, parallel(1)).unwrap_err();
    assert_eq!(
        err,
        PlanError::NoSuchDatabase {
            shard: 2,
            database: 2,
            databases: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "logical shard 2 is on database 2, but the cluster has 2 (0 to 1): \
         rebalancing only moves shards between existing databases"
    );
}

/// xorshift64*, seeded: the same placements on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
}

/// The fewest moves that balance `placement`, counted independently of
/// `plan`: each database above the floor gives its excess, less the one
/// extra shard that `count % n` of them may keep.
fn fewest(placement: &[usize], databases: usize) -> usize {
    let (base, extra) = (placement.len() / databases, placement.len() % databases);
    let held: Vec<usize> = (0..databases)
        .map(|d| placement.iter().filter(|&&p| p == d).count())
        .collect();
    let excess: usize = held.iter().map(|&h| h.saturating_sub(base)).sum();
    excess - extra.min(held.iter().filter(|&&h| h > base).count())
}

#[test]
fn random_placements_keep_the_invariants() {
    let mut rng = Rng(0x5EED_0033_4EBA_1A9C);
    for _ in 0..2000 {
        let databases = 1 + rng.below(8);
        let shards = rng.below(40);
        // Placements over a few of the databases, as before adding some.
        let used = 1 + rng.below(databases);
        let placement: Vec<usize> = (0..shards).map(|_| rng.below(used)).collect();
        let n = 1 + rng.below(4);
        let moves = plan(&placement, databases, parallel(n)).unwrap();
        let context = format!("{placement:?} over {databases}, {n} at a time: {moves:?}");

        assert_eq!(moves.len(), fewest(&placement, databases), "{context}");
        let mut after = placement.clone();
        for m in &moves {
            assert_eq!(
                after[m.shard], m.from,
                "moved twice or from elsewhere: {context}"
            );
            assert_ne!(m.from, m.to, "{context}");
            after[m.shard] = m.to;
        }
        let base = shards / databases;
        for d in 0..databases {
            let held = after.iter().filter(|&&p| p == d).count();
            assert!(held == base || held == base + 1, "database {d}: {context}");
        }
        let last = moves.last().map_or(0, |m| m.round);
        for round in 0..=last {
            let in_round: Vec<&Move> = moves.iter().filter(|m| m.round == round).collect();
            assert!(
                moves.is_empty() || !in_round.is_empty(),
                "empty round: {context}"
            );
            assert!(in_round.len() <= n, "{context}");
            let mut touched: Vec<usize> = in_round.iter().flat_map(|m| [m.from, m.to]).collect();
            touched.sort_unstable();
            let before = touched.len();
            touched.dedup();
            assert_eq!(
                touched.len(),
                before,
                "round {round} shares a database: {context}"
            );
        }
        assert!(
            moves.windows(2).all(|w| w[0].round <= w[1].round),
            "{context}"
        );
    }
}
