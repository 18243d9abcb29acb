//! `COPY sharded_table FROM STDIN` through pgshard: every row reaches the
//! shard its key hashes to (the shards' tables are hash partitions that
//! reject any other row), in text and CSV, in CopyData chunks that cut rows
//! anywhere; the tag counts every row; a bad row, the client's CopyFail or
//! a shard's error leaves nothing on any shard.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::wire::{self, Wire};
use common::Cluster;

fn cluster(n: usize) -> Cluster {
    common::watch_proxy_panics();
    Cluster::start_sharded_raw(n, "", "")
}

/// Run `COPY sql` with `data` sent in CopyData chunks of `chunk` bytes,
/// then `end` (CopyDone `c` or CopyFail `f`); the replies after the data.
async fn copy(raw: &mut Wire, sql: &str, data: &str, chunk: usize, end: u8) -> Vec<(u8, Bytes)> {
    raw.send(&wire::query(sql)).await;
    loop {
        let (tag, body) = raw.recv().await;
        match tag {
            b'G' => break,
            b'E' => {
                let mut replies = vec![(tag, body)];
                replies.extend(raw.until_ready().await);
                return replies;
            }
            b'Z' => return vec![(tag, body)],
            _ => {}
        }
    }
    for piece in data.as_bytes().chunks(chunk) {
        raw.send(&wire::message(b'd', piece)).await;
    }
    let end_body: &[u8] = if end == b'f' {
        b"client gave up\0"
    } else {
        b""
    };
    raw.send(&wire::message(end, end_body)).await;
    raw.until_ready().await
}

/// The CommandComplete tags among `replies`.
fn done(replies: &[(u8, Bytes)]) -> String {
    replies
        .iter()
        .filter(|(tag, _)| *tag == b'C')
        .map(|(_, body)| {
            String::from_utf8_lossy(body.strip_suffix(b"\0").unwrap_or(body)).into_owned()
        })
        .collect::<Vec<_>>()
        .join(";")
}

async fn count(cluster: &Cluster) -> Vec<usize> {
    let mut counts = Vec::new();
    for shard in cluster.shards().await {
        let n = common::column(&shard, "SELECT count(*) AS n FROM orders", "n").await;
        counts.push(n[0].parse().unwrap());
    }
    counts
}

#[tokio::test]
async fn copy_rows_reach_their_shards() {
    let cluster = cluster(2);
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let text: String = (1..=500)
        .map(|k| format!("{k}\t{}\titem\\t{k}\n", k * 3))
        .collect();
    let replies = copy(
        &mut raw,
        "COPY orders (tenant_id, id, item) FROM STDIN",
        &text,
        777,
        b'c',
    )
    .await;
    assert_eq!(done(&replies), "COPY 500", "{replies:?}");
    // Without a column list: the table's columns, read from a shard.
    let csv: String = (501..=600)
        .map(|k| format!("{k},{k},\"a, \"\"quoted\"\"\nitem\"\n"))
        .collect();
    let csv = format!("tenant_id,id,item\n{csv}");
    let replies = copy(
        &mut raw,
        "COPY orders FROM STDIN WITH (FORMAT csv, HEADER true)",
        &csv,
        5,
        b'c',
    )
    .await;
    assert_eq!(done(&replies), "COPY 100", "{replies:?}");
    let counts = count(&cluster).await;
    assert_eq!(counts.iter().sum::<usize>(), 600);
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    let client = cluster.connect().await;
    let item = common::column(
        &client,
        "SELECT item FROM orders WHERE tenant_id = 7",
        "item",
    )
    .await;
    assert_eq!(item, vec!["item\t7"]);
    let item = common::column(
        &client,
        "SELECT item FROM orders WHERE tenant_id = 550",
        "item",
    )
    .await;
    assert_eq!(item, vec!["a, \"quoted\"\nitem"]);
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn a_failed_copy_leaves_nothing_anywhere() {
    let cluster = cluster(2);
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let sql = "COPY orders (tenant_id, id, item) FROM STDIN";
    // A row without a key, far into the data.
    let mut data: String = (1..=300).map(|k| format!("{k}\t1\tx\n")).collect();
    data.push_str("\\N\t1\tx\n");
    let replies = copy(&mut raw, sql, &data, 1000, b'c').await;
    let errors = wire::errors(&replies);
    assert!(errors.iter().any(|e| e.contains("22P04")), "{replies:?}");
    assert_eq!(count(&cluster).await, vec![0, 0]);
    // The client's CopyFail.
    let data: String = (1..=50).map(|k| format!("{k}\t2\tx\n")).collect();
    let replies = copy(&mut raw, sql, &data, 64, b'f').await;
    assert!(
        wire::errors(&replies).iter().any(|e| e.contains("57014")),
        "{replies:?}"
    );
    assert_eq!(count(&cluster).await, vec![0, 0]);
    // A shard's error (a duplicate key on one shard only).
    let data: String = (1..=50)
        .map(|k| format!("{k}\t3\tx\n"))
        .chain(["1\t3\tdup\n".to_owned()])
        .collect();
    let replies = copy(&mut raw, sql, &data, 100, b'c').await;
    assert!(
        wire::errors(&replies).iter().any(|e| e.contains("23505")),
        "{replies:?}"
    );
    assert_eq!(count(&cluster).await, vec![0, 0]);
    // Refused: the binary format (for now).
    let replies = copy(
        &mut raw,
        "COPY orders FROM STDIN (FORMAT binary)",
        "",
        1,
        b'c',
    )
    .await;
    assert!(
        wire::errors(&replies).iter().any(|e| e.contains("0A000")),
        "{replies:?}"
    );
    // The session goes on, and a good COPY works after all that.
    let replies = copy(&mut raw, sql, "9\t9\tok\n", 10, b'c').await;
    assert_eq!(done(&replies), "COPY 1", "{replies:?}");
    assert_eq!(count(&cluster).await.iter().sum::<usize>(), 1);
    assert_eq!(common::proxy_panics(), 0);
}
