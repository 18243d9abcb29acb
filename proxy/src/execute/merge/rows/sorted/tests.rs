//! The streaming combine of sorted groups: one line per case (the shards'
//! rows, each shard sorted by its hash column, and the client's rows).

use std::sync::Arc;

use bytes::BytesMut;
use router::merge::{Aggregate, Column, MergePlan, Predicate, SortKey};

use super::super::tests::{data_row, description, rows_of};
use super::super::{RowMerge, Window};
use crate::execute::merge::values::ValueError;

type Rows = Vec<Vec<Option<String>>>;

/// `SELECT g, count(*) ... GROUP BY g`: columns g, n, and the hash h.
fn plan(order: Vec<SortKey>, having: Option<Predicate>) -> MergePlan {
    MergePlan {
        groups: Some(vec![
            Column::Key,
            Column::Aggregate(Aggregate::Count),
            Column::Key,
        ]),
        targets: 2,
        hidden: 1,
        group_hash: Some(2),
        order,
        having,
        ..MergePlan::default()
    }
}

fn key(column: usize, descending: bool) -> SortKey {
    SortKey {
        column,
        descending,
        nulls_first: descending,
    }
}

/// `g,n,h` triples, `_` for NULL, separated by spaces.
fn shard(rows: &str) -> Vec<Vec<Option<String>>> {
    rows.split_whitespace()
        .map(|row| {
            row.split(',')
                .map(|v| (v != "_").then(|| v.to_owned()))
                .collect()
        })
        .collect()
}

/// Feed the shards as the fan-out does (a shard's next row only when the
/// merge wants it); the client's rows, and those that went out before the
/// last shard ended.
fn run(
    plan: MergePlan,
    window: Window,
    memory: u64,
    shards: &[&str],
) -> Result<(Rows, usize), ValueError> {
    let shards: Vec<_> = shards.iter().map(|s| shard(s)).collect();
    let mut merge = RowMerge::new(Arc::new(plan), window, shards.len(), true).with_memory(memory);
    let mut out = BytesMut::new();
    merge.describe(&description(&["g", "n", "h"], 20), &mut out)?;
    let mut next = vec![0; shards.len()];
    let mut ended = vec![false; shards.len()];
    let mut early = 0;
    while ended.contains(&false) {
        let mut progress = false;
        for (i, rows) in shards.iter().enumerate() {
            if ended[i] || !merge.wants(i) {
                continue;
            }
            progress = true;
            match rows.get(next[i]) {
                Some(row) => {
                    let values: Vec<Option<&str>> = row.iter().map(|v| v.as_deref()).collect();
                    merge.row(i, &data_row(&values), &mut out)?;
                    next[i] += 1;
                }
                None => {
                    if ended.iter().filter(|e| !**e).count() == 1 {
                        early = rows_of(&out).len();
                    }
                    merge.shard_done(i, &mut out)?;
                    ended[i] = true;
                }
            }
        }
        assert!(progress, "the merge wants no shard's row");
    }
    merge.finish(&mut out)?;
    Ok((rows_of(&out), early))
}

fn text(rows: &str) -> Rows {
    shard(rows)
        .into_iter()
        .map(|row| row.into_iter().take(2).collect())
        .collect()
}

#[test]
fn sorted_groups_combine_as_they_stream() {
    let all = Window::default();
    let top2 = Window {
        offset: 0,
        count: Some(2),
    };
    let mb = 1 << 20;
    let count_desc = vec![key(1, true)];
    let gt = |n: &str| {
        Some(Predicate::Compare {
            left: router::merge::Operand::Column(1),
            op: router::merge::Comparison::Gt,
            right: router::merge::Operand::Literal(n.into()),
        })
    };
    #[rustfmt::skip]
    let cases: Vec<(MergePlan, Window, &[&str], &str, usize)> = vec![
        // Groups spanning shards, combined and sent before the last shard ends.
        (plan(vec![], None), all, &["1,2,10 2,1,20", "2,3,20 3,1,30"], "1,2 2,4 3,1", 2),
        // NULL groups combine (hash_record of ROW(NULL) is 0).
        (plan(vec![], None), all, &["_,2,0 5,1,7", "_,3,0"], "_,5 5,1", 1),
        // An empty shard; a shard that sends nothing at all.
        (plan(vec![], None), all, &["", "4,1,-3 6,2,8", ""], "4,1 6,2", 1),
        // Distinct keys sharing a hash, in different orders on the shards.
        (plan(vec![], None), all, &["7,1,5 8,1,5 9,1,6", "8,2,5 7,2,5"], "7,3 8,3 9,1", 2),
        // HAVING per group as groups complete.
        (plan(vec![], gt("2")), all, &["1,2,10 2,1,20", "1,1,10 2,1,20 3,5,30"], "1,3 3,5", 1),
        // The client's order is the groups' (g DESC, then the hash): streamed.
        (plan(vec![key(0, true)], None), all, &["3,1,9 1,1,4", "3,2,9 2,1,1 1,1,4"], "3,3 2,1 1,2", 2),
        // ORDER BY count(*) DESC LIMIT 2: a top-N, sent at the end.
        (plan(count_desc.clone(), None), top2, &["1,1,1 2,5,2 3,2,3 4,1,4", "1,1,1 3,2,3 4,9,4"], "4,10 2,5", 0),
        // No LIMIT: held for the sort within the bound.
        (plan(count_desc.clone(), None), all, &["1,1,1 2,5,2", "1,1,1 3,2,3"], "2,5 1,2 3,2", 0),
    ];
    for (i, (plan, window, shards, expected, early)) in cases.into_iter().enumerate() {
        let (rows, sent_early) = run(plan, window, mb, shards).unwrap();
        assert_eq!((rows, sent_early), (text(expected), early), "case {i}");
    }
}

#[test]
fn groups_held_for_the_clients_order_are_bounded() {
    let many: String = (0..20_000).map(|g| format!("{g},1,{g} ")).collect();
    let plan = || plan(vec![key(1, true)], None);
    let err = run(plan(), Window::default(), 1 << 20, &[&many, &many]).unwrap_err();
    assert_eq!(err, ValueError::Memory(1 << 20));
    // A top-N of 10 holds at most 20 groups: the same rows fit.
    let top = Window {
        offset: 5,
        count: Some(5),
    };
    let (rows, _) = run(plan(), top, 1 << 20, &[&many, &many]).unwrap();
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| r[1].as_deref() == Some("2")));
}
