//! Merging in parts: shards fed batch by batch as [`InParts::wanted`]
//! asks, against the rows the whole merge gives.

use std::sync::Arc;

use bytes::BytesMut;
use router::merge::{Aggregate, Column, Limit, MergePlan, SortKey};

use super::*;
use crate::protocol::rows::{parse_row, write_row};

/// A RowDescription body of int4 columns (text format).
fn description(columns: usize) -> Vec<u8> {
    let mut body = (columns as u16).to_be_bytes().to_vec();
    for c in 0..columns {
        body.extend_from_slice(format!("c{c}").as_bytes());
        body.push(0);
        body.extend_from_slice(&[0; 6]);
        body.extend_from_slice(&23u32.to_be_bytes());
        body.extend_from_slice(&[0, 4, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    }
    body
}

fn data_row(values: &[i64]) -> Vec<u8> {
    let mut out = BytesMut::new();
    let text: Vec<String> = values.iter().map(i64::to_string).collect();
    let values: Vec<Option<&[u8]>> = text.iter().map(|v| Some(v.as_bytes())).collect();
    write_row(&mut out, &values);
    out.to_vec()
}

fn values_of(message: &[u8]) -> Vec<i64> {
    let row = parse_row(message).unwrap();
    (0..row.values.len())
        .map(|c| {
            std::str::from_utf8(row.value(c).unwrap())
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

/// Read `shards` (each shard's rows, in its order) through `plan` in
/// client fetches of `chunk` rows; every merged row, and the most rows
/// held (fed, not yet taken) at any time.
fn read(
    plan: MergePlan,
    window: Window,
    shards: &[Vec<Vec<i64>>],
    chunk: u64,
) -> (Vec<Vec<i64>>, usize) {
    let width = shards.iter().flatten().next().map_or(1, Vec::len);
    let mut parts = InParts::new(Arc::new(plan), window, Vec::new(), shards.len());
    let mut next = vec![0; shards.len()];
    let (mut out, mut held, mut most) = (Vec::new(), 0usize, 0usize);
    for _ in 0..100_000 {
        if parts.at_end() {
            return (out, most);
        }
        for (position, batch) in parts.wanted(chunk) {
            parts.describe(&description(width), true).unwrap();
            let rows = &shards[position];
            let from = next[position];
            let to = (from + batch as usize).min(rows.len());
            for row in &rows[from..to] {
                parts.row(position, &data_row(row)).unwrap();
                held += 1;
            }
            next[position] = to;
            parts
                .batch_end(position, (to - from) as u64, batch, false)
                .unwrap();
            most = most.max(held);
        }
        for _ in 0..chunk {
            let Some(row) = parts.next_row() else { break };
            out.push(values_of(&row));
            held = held.saturating_sub(1);
        }
    }
    panic!("no end");
}

fn sorted_on(column: usize) -> MergePlan {
    MergePlan {
        order: vec![SortKey {
            column,
            descending: false,
            nulls_first: false,
        }],
        targets: 1,
        ..MergePlan::default()
    }
}

fn column(n: usize, from: i64, step: i64) -> Vec<Vec<i64>> {
    (0..n as i64).map(|i| vec![from + i * step]).collect()
}

#[test]
fn concatenation_reads_shard_after_shard() {
    let shards = [column(5, 0, 1), column(3, 100, 1)];
    for chunk in [1, 2, 7, 1000] {
        let (rows, _) = read(MergePlan::default(), Window::default(), &shards, chunk);
        let want: Vec<Vec<i64>> = shards.concat();
        assert_eq!(rows, want, "chunk {chunk}");
    }
}

#[test]
fn an_ordered_merge_holds_a_batch_per_shard_at_most() {
    let shards = [column(3000, 0, 3), column(2500, 1, 3), column(10, 2, 3)];
    let mut want: Vec<Vec<i64>> = shards.concat();
    want.sort();
    for chunk in [1, 3, 1000] {
        let (rows, most) = read(sorted_on(0), Window::default(), &shards, chunk);
        assert_eq!(rows, want, "chunk {chunk}");
        let bound = 2 * shards.len() * chunk.clamp(1, MAX_BATCH) as usize;
        assert!(most <= bound, "chunk {chunk}: {most} rows held");
    }
}

#[test]
fn limit_offset_and_hidden_columns() {
    // ORDER BY a hidden second column, LIMIT 4 OFFSET 2.
    let plan = MergePlan {
        order: vec![SortKey {
            column: 1,
            descending: true,
            nulls_first: false,
        }],
        targets: 1,
        hidden: 1,
        limit: Limit::default(),
        ..MergePlan::default()
    };
    let row = |v: i64| vec![v * 10, v];
    let shards = [vec![row(9), row(5), row(1)], vec![row(8), row(7), row(2)]];
    let window = Window {
        offset: 2,
        count: Some(4),
    };
    for chunk in [1, 2, 10] {
        let (rows, _) = read(plan.clone(), window, &shards, chunk);
        assert_eq!(
            rows,
            vec![vec![70], vec![50], vec![20], vec![10]],
            "chunk {chunk}"
        );
    }
}

#[test]
fn whole_table_aggregates_combine() {
    let plan = MergePlan {
        groups: Some(vec![
            Column::Aggregate(Aggregate::Count),
            Column::Aggregate(Aggregate::Max),
        ]),
        targets: 2,
        ..MergePlan::default()
    };
    let shards = [vec![vec![535, 7]], vec![vec![465, 9]]];
    let (rows, _) = read(plan, Window::default(), &shards, 1);
    assert_eq!(rows, vec![vec![1000, 9]]);
}

#[test]
fn groups_and_distinct_are_refused_in_parts() {
    let grouped = MergePlan {
        groups: Some(vec![Column::Key, Column::Aggregate(Aggregate::Count)]),
        ..MergePlan::default()
    };
    let distinct = MergePlan {
        distinct: true,
        ..MergePlan::default()
    };
    let whole = MergePlan {
        groups: Some(vec![Column::Aggregate(Aggregate::Sum)]),
        ..MergePlan::default()
    };
    assert!(in_parts(&grouped).is_err());
    assert!(in_parts(&distinct).is_err());
    assert!(in_parts(&whole).is_ok());
    assert!(in_parts(&sorted_on(0)).is_ok());
    assert!(in_parts(&sorted_groups()).is_ok());
    let sorted_distinct = MergePlan {
        distinct: true,
        group_hash: Some(1),
        ..MergePlan::default()
    };
    assert!(in_parts(&sorted_distinct).is_ok());
}

/// `SELECT g, count(*) ... GROUP BY g` whose shards sort their groups by
/// the hidden hash column (here the key itself).
fn sorted_groups() -> MergePlan {
    MergePlan {
        groups: Some(vec![
            Column::Key,
            Column::Aggregate(Aggregate::Count),
            Column::Key,
        ]),
        targets: 2,
        hidden: 1,
        group_hash: Some(2),
        ..MergePlan::default()
    }
}

#[test]
fn sorted_groups_combine_in_parts_holding_a_batch_per_shard() {
    // Shard s holds the groups g = s, s + 3, s + 6, ... and every third
    // group of the others too, each with count g % 5 + 1.
    let group = |g: i64| vec![g, g % 5 + 1, g];
    let shards: Vec<Vec<Vec<i64>>> = (0..3)
        .map(|s| {
            (0..3000)
                .filter(|g| g % 3 == s || g % 7 == 0)
                .map(group)
                .collect()
        })
        .collect();
    let want: Vec<Vec<i64>> = (0..3000)
        .map(|g| {
            let copies = if g % 7 == 0 { 3 } else { 1 };
            vec![g, copies * (g % 5 + 1)]
        })
        .collect();
    for chunk in [1, 3, 1000] {
        let (rows, _) = read(sorted_groups(), Window::default(), &shards, chunk);
        assert_eq!(rows, want, "chunk {chunk}");
    }
    // The first group goes out after a few rows of each shard, not after
    // every group was read.
    let mut parts = InParts::new(Arc::new(sorted_groups()), Window::default(), Vec::new(), 3);
    let mut next = [0usize; 3];
    while parts.next_row().is_none() {
        for (position, batch) in parts.wanted(1) {
            parts.describe(&description(3), true).unwrap();
            let from = next[position];
            let to = (from + batch as usize).min(shards[position].len());
            for row in &shards[position][from..to] {
                parts.row(position, &data_row(row)).unwrap();
            }
            next[position] = to;
            let got = (to - from) as u64;
            parts.batch_end(position, got, batch, false).unwrap();
        }
    }
    assert!(next.iter().all(|&n| n <= 2), "rows read: {next:?}");
}
