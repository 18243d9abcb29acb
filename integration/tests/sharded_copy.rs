//! `COPY sharded_table FROM STDIN` through pgshard: every row reaches the
//! shard its key hashes to (the shards' tables are hash partitions that
//! reject any other row), in text and CSV, in CopyData chunks that cut rows
//! anywhere; the tag counts every row; a bad row, the client's CopyFail or
//! a shard's error leaves nothing on any shard. The binary format on 2
//! and 4 shards: tuples cut anywhere by CopyData, malformed input and a
//! CopyFail in the middle of a tuple leave nothing anywhere.

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
    copy_bytes(raw, sql, data.as_bytes(), chunk, end).await
}

/// [`copy`] with any bytes as the data.
async fn copy_bytes(
    raw: &mut Wire,
    sql: &str,
    data: &[u8],
    chunk: usize,
    end: u8,
) -> Vec<(u8, Bytes)> {
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
    for piece in data.chunks(chunk.max(1)) {
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
    // Refused: HEADER in the binary format (Postgres refuses it too).
    let replies = copy(
        &mut raw,
        "COPY orders FROM STDIN (FORMAT binary, HEADER)",
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

/// Binary COPY data for `orders (tenant_id, id, item)`: the file header
/// (with a 3-byte extension area, which Postgres skips), a tuple per row
/// (`None`: a NULL tenant_id), and the trailer unless `trailer` is false.
fn binary_rows(rows: &[(Option<i64>, i64, &str)], trailer: bool) -> Vec<u8> {
    let mut out = b"PGCOPY\n\xff\r\n\0".to_vec();
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&3u32.to_be_bytes());
    out.extend_from_slice(b"ext");
    for (tenant, id, item) in rows {
        out.extend_from_slice(&3u16.to_be_bytes());
        match tenant {
            Some(tenant) => {
                out.extend_from_slice(&8u32.to_be_bytes());
                out.extend_from_slice(&tenant.to_be_bytes());
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
        out.extend_from_slice(&8u32.to_be_bytes());
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&(item.len() as u32).to_be_bytes());
        out.extend_from_slice(item.as_bytes());
    }
    if trailer {
        out.extend_from_slice(&(-1i16).to_be_bytes());
    }
    out
}

async fn binary_rows_reach_their_shards(n: usize) {
    let cluster = cluster(n);
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let items: Vec<String> = (1..=400).map(|k| format!("item\t{k}\n")).collect();
    let rows: Vec<(Option<i64>, i64, &str)> = (1..=400)
        .map(|k| (Some(k), k * 3, items[k as usize - 1].as_str()))
        .collect();
    let data = binary_rows(&rows, true);
    // Chunks that cut the header, lengths and values anywhere.
    for (chunk, sql) in [
        (
            5,
            "COPY orders (tenant_id, id, item) FROM STDIN (FORMAT binary)",
        ),
        (777, "COPY orders FROM STDIN WITH (FORMAT binary)"),
    ] {
        let replies = copy_bytes(&mut raw, sql, &data, chunk, b'c').await;
        assert_eq!(done(&replies), "COPY 400", "{n} shards, {sql}: {replies:?}");
        let counts = count(&cluster).await;
        assert_eq!(counts.iter().sum::<usize>(), 400, "{counts:?}");
        assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
        let client = cluster.connect().await;
        let item = common::column(
            &client,
            "SELECT item FROM orders WHERE tenant_id = 77",
            "item",
        )
        .await;
        assert_eq!(item, vec!["item\t77\n"]);
        client.batch_execute("DELETE FROM orders").await.unwrap();
    }
    // No trailer is fine for Postgres (the data ends at a tuple's end).
    let replies = copy_bytes(
        &mut raw,
        "COPY orders FROM STDIN (FORMAT binary)",
        &binary_rows(&rows[..10], false),
        64,
        b'c',
    )
    .await;
    assert_eq!(done(&replies), "COPY 10", "{replies:?}");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn binary_copy_rows_reach_their_shards_2() {
    binary_rows_reach_their_shards(2).await;
}

#[tokio::test]
async fn binary_copy_rows_reach_their_shards_4() {
    binary_rows_reach_their_shards(4).await;
}

#[tokio::test]
async fn malformed_or_abandoned_binary_copy_leaves_nothing() {
    let cluster = cluster(4);
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let sql = "COPY orders (tenant_id, id, item) FROM STDIN (FORMAT binary)";
    let rows: Vec<(Option<i64>, i64, &str)> = (1..=300).map(|k| (Some(k), k, "x")).collect();
    let good = binary_rows(&rows, true);
    let mut after_trailer = good.clone();
    after_trailer.extend_from_slice(b"more");
    let mut null_key = rows.clone();
    null_key[200].0 = None;
    let mut bad_size = binary_rows(&rows[..100], false);
    bad_size.extend_from_slice(b"\x00\x03\xff\xff\xff\xf0");
    for (what, data) in [
        ("text sent as binary", b"1\t1\tx\n".to_vec()),
        ("a header cut short", good[..14].to_vec()),
        ("a tuple cut short", good[..good.len() - 9].to_vec()),
        ("data after the trailer", after_trailer),
        ("a NULL key", binary_rows(&null_key, true)),
        ("a negative field size", bad_size),
    ] {
        let replies = copy_bytes(&mut raw, sql, &data, 1000, b'c').await;
        assert!(
            wire::errors(&replies).iter().any(|e| e.contains("22P04")),
            "{what}: {replies:?}"
        );
        assert_eq!(count(&cluster).await, vec![0; 4], "{what}");
    }
    // The client's CopyFail in the middle of a tuple, rows already sent
    // to every shard.
    let replies = copy_bytes(&mut raw, sql, &good[..good.len() - 20], 500, b'f').await;
    assert!(
        wire::errors(&replies).iter().any(|e| e.contains("57014")),
        "{replies:?}"
    );
    assert_eq!(count(&cluster).await, vec![0; 4]);
    // A shard's own error (a duplicate key) ends every shard's COPY.
    let mut dup = rows.clone();
    dup.push((Some(5), 5, "dup"));
    let replies = copy_bytes(&mut raw, sql, &binary_rows(&dup, true), 4096, b'c').await;
    assert!(
        wire::errors(&replies).iter().any(|e| e.contains("23505")),
        "{replies:?}"
    );
    assert_eq!(count(&cluster).await, vec![0; 4]);
    // The session goes on.
    let replies = copy_bytes(&mut raw, sql, &good, 4096, b'c').await;
    assert_eq!(done(&replies), "COPY 300", "{replies:?}");
    assert_eq!(count(&cluster).await.iter().sum::<usize>(), 300);
    assert_eq!(common::proxy_panics(), 0);
}

/// COPY through the extended protocol, as drivers send it: tokio-postgres
/// (Parse, Bind, Execute, Sync; CopyDone and Sync after the data) in text
/// and binary, and libpq's order on the wire (Describe of the portal too).
async fn extended_copy_reaches_its_shards(n: usize) {
    use futures_util::SinkExt;
    use tokio_postgres::binary_copy::BinaryCopyInWriter;
    use tokio_postgres::types::{ToSql, Type};

    let cluster = cluster(n);
    let client = cluster.connect().await;
    let sink = client
        .copy_in("COPY orders (tenant_id, id, item) FROM STDIN")
        .await
        .unwrap();
    let mut sink = std::pin::pin!(sink);
    let text: String = (1..=300).map(|k| format!("{k}\t1\titem {k}\n")).collect();
    sink.send(Bytes::from(text)).await.unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 300);
    let sink = client
        .copy_in("COPY orders (tenant_id, id, item) FROM STDIN (FORMAT binary)")
        .await
        .unwrap();
    let writer = BinaryCopyInWriter::new(sink, &[Type::INT8, Type::INT8, Type::TEXT]);
    let mut writer = std::pin::pin!(writer);
    for k in 1..=200i64 {
        let item = format!("binary {k}");
        let row: [&(dyn ToSql + Sync); 3] = [&k, &2i64, &item];
        writer.as_mut().write(&row).await.unwrap();
    }
    assert_eq!(writer.finish().await.unwrap(), 200);
    let counts = count(&cluster).await;
    assert_eq!(counts.iter().sum::<usize>(), 500, "{counts:?}");
    assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
    // A shard's error: nothing written, and the client goes on.
    let sink = client
        .copy_in("COPY orders (tenant_id, id, item) FROM STDIN")
        .await
        .unwrap();
    let mut sink = std::pin::pin!(sink);
    let dup: String = (600..=650).map(|k| format!("{k}\t1\tx\n")).collect();
    sink.send(Bytes::from(format!("{dup}5\t1\tdup\n")))
        .await
        .unwrap();
    let err = sink.as_mut().finish().await.unwrap_err();
    assert_eq!(common::code(&err), Some("23505"), "{err}");
    assert_eq!(count(&cluster).await.iter().sum::<usize>(), 500);

    // libpq: Parse, Bind, Describe, Execute, Sync; the data, CopyDone, Sync.
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let mut pipeline = wire::parse("", "COPY orders (tenant_id, id, item) FROM STDIN");
    pipeline.extend(wire::bind(""));
    pipeline.extend(wire::describe(b'P', ""));
    pipeline.extend(wire::execute());
    pipeline.extend(wire::sync());
    raw.send(&pipeline).await;
    let mut seen = Vec::new();
    while seen.last() != Some(&b'G') {
        seen.push(raw.recv().await.0);
    }
    assert_eq!(seen, b"12nG");
    raw.send(&wire::message(b'd', b"900\t9\tlibpq\n901\t9\tlibpq\n"))
        .await;
    raw.send(&wire::message(b'c', b"")).await;
    raw.send(&wire::sync()).await;
    let replies = raw.until_ready().await;
    assert_eq!(wire::tags(&replies), "CZ", "{replies:?}");
    assert_eq!(done(&replies), "COPY 2");
    // A bad row: the error, the rest skipped up to the Sync.
    raw.send(&pipeline).await;
    let mut seen = Vec::new();
    while seen.last() != Some(&b'G') {
        seen.push(raw.recv().await.0);
    }
    raw.send(&wire::message(b'd', b"\\N\t9\tno key\n")).await;
    raw.send(&wire::message(b'c', b"")).await;
    raw.send(&wire::sync()).await;
    let replies = raw.until_ready().await;
    assert_eq!(wire::tags(&replies), "EZ", "{replies:?}");
    assert!(wire::errors(&replies)[0].contains("22P04"), "{replies:?}");
    assert_eq!(count(&cluster).await.iter().sum::<usize>(), 502);
    // Inside a transaction it runs in the transaction, which every shard
    // joins: rolled back, nothing stays; committed, its rows do.
    for (end, expected) in [("ROLLBACK", 502), ("COMMIT", 504)] {
        raw.send(&wire::query("BEGIN")).await;
        raw.until_ready().await;
        let mut pipeline = wire::bind("");
        pipeline.extend(wire::execute());
        pipeline.extend(wire::sync());
        raw.send(&pipeline).await;
        let mut seen = Vec::new();
        while seen.last() != Some(&b'G') {
            seen.push(raw.recv().await.0);
        }
        assert_eq!(seen, b"2G");
        raw.send(&wire::message(b'd', b"910\t9\tin txn\n911\t9\tin txn\n"))
            .await;
        raw.send(&wire::message(b'c', b"")).await;
        raw.send(&wire::sync()).await;
        let replies = raw.until_ready().await;
        assert_eq!(wire::tags(&replies), "CZ", "{replies:?}");
        assert_eq!(done(&replies), "COPY 2");
        assert_eq!(replies.last().unwrap().1.as_ref(), b"T");
        raw.send(&wire::query(end)).await;
        assert_eq!(wire::tags(&raw.until_ready().await), "CZ");
        assert_eq!(
            count(&cluster).await.iter().sum::<usize>(),
            expected,
            "{end}"
        );
    }
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn extended_copy_reaches_its_shards_2() {
    extended_copy_reaches_its_shards(2).await;
}

#[tokio::test]
async fn extended_copy_reaches_its_shards_4() {
    extended_copy_reaches_its_shards(4).await;
}

/// COPY without a column list skips generated columns, as Postgres does:
/// the key's position among the fields is counted without them.
#[tokio::test]
async fn copy_without_columns_skips_generated_ones() {
    let extra = "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"gen_items\"\n\
                 column = \"k\"\ndata_type = \"bigint\"\nhasher = \"postgres\"\n";
    let cluster = Cluster::start_sharded_raw(2, "", extra);
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        shard
            .batch_execute(&format!(
                "CREATE TABLE gen_items (twice bigint GENERATED ALWAYS AS (k * 2) STORED, \
                 note text, k bigint NOT NULL) PARTITION BY HASH (k); \
                 CREATE TABLE gen_items_here PARTITION OF gen_items \
                 FOR VALUES WITH (MODULUS 2, REMAINDER {i})"
            ))
            .await
            .unwrap();
    }
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let data: String = (1..=100).map(|k| format!("note {k}\t{k}\n")).collect();
    let replies = copy(&mut raw, "COPY gen_items FROM STDIN", &data, 300, b'c').await;
    assert_eq!(done(&replies), "COPY 100", "{replies:?}");
    let client = cluster.connect().await;
    let twice = common::column(&client, "SELECT twice FROM gen_items WHERE k = 21", "twice").await;
    assert_eq!(twice, vec!["42"]);
}

/// COPY inside a transaction pgshard opened: every shard joins the
/// transaction and the COPY is part of it (ROLLBACK leaves nothing, a
/// savepoint rolled back to undoes it on every shard, COMMIT keeps it); a
/// COPY that fails aborts the whole transaction (25P02 after it, as on one
/// Postgres). COPY into an omnisharded table writes every row on every
/// shard, inside or outside a transaction.
#[tokio::test]
async fn copy_inside_a_transaction_joins_it_on_every_shard() {
    let cluster = cluster(2);
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let sql = "COPY orders (tenant_id, id, item) FROM STDIN";
    let rows = |from: i64| -> String {
        (from..from + 40)
            .map(|k| format!("{k}\t1\tin txn\n"))
            .collect()
    };
    for (end, expected) in [("ROLLBACK", 0), ("COMMIT", 40)] {
        raw.send(&wire::query("BEGIN ISOLATION LEVEL REPEATABLE READ"))
            .await;
        raw.until_ready().await;
        let replies = copy(&mut raw, sql, &rows(1), 100, b'c').await;
        assert_eq!(done(&replies), "COPY 40", "{replies:?}");
        assert_eq!(replies.last().unwrap().1.as_ref(), b"T");
        // Visible inside the transaction, on both shards.
        raw.send(&wire::query("SELECT count(*) FROM orders")).await;
        let replies = raw.until_ready().await;
        assert_eq!(wire::data_rows(&replies), [vec!["40".to_owned()]]);
        raw.send(&wire::query(end)).await;
        assert_eq!(wire::tags(&raw.until_ready().await), "CZ", "{end}");
        let counts = count(&cluster).await;
        assert_eq!(counts.iter().sum::<usize>(), expected, "{end}: {counts:?}");
        assert!(expected == 0 || counts.iter().all(|&n| n > 0), "{counts:?}");
    }
    // A savepoint taken before the COPY undoes it on every shard.
    raw.send(&wire::query("BEGIN")).await;
    raw.until_ready().await;
    raw.send(&wire::query("SAVEPOINT before_copy")).await;
    raw.until_ready().await;
    let replies = copy(&mut raw, sql, &rows(100), 64, b'c').await;
    assert_eq!(done(&replies), "COPY 40", "{replies:?}");
    raw.send(&wire::query("ROLLBACK TO SAVEPOINT before_copy"))
        .await;
    assert_eq!(wire::tags(&raw.until_ready().await), "CZ");
    let replies = copy(&mut raw, sql, &rows(200), 64, b'c').await;
    assert_eq!(done(&replies), "COPY 40", "{replies:?}");
    raw.send(&wire::query("COMMIT")).await;
    assert_eq!(wire::tags(&raw.until_ready().await), "CZ");
    assert_eq!(count(&cluster).await.iter().sum::<usize>(), 80);
    // A failing COPY (a duplicate key on one shard) aborts the transaction.
    raw.send(&wire::query("BEGIN")).await;
    raw.until_ready().await;
    let replies = copy(&mut raw, sql, &rows(300), 64, b'c').await;
    assert_eq!(done(&replies), "COPY 40", "{replies:?}");
    let replies = copy(&mut raw, sql, "1\t1\tduplicate\n", 64, b'c').await;
    assert!(wire::errors(&replies)[0].contains("23505"), "{replies:?}");
    assert_eq!(replies.last().unwrap().1.as_ref(), b"E");
    raw.send(&wire::query("SELECT 1")).await;
    let replies = raw.until_ready().await;
    assert!(wire::errors(&replies)[0].contains("25P02"), "{replies:?}");
    raw.send(&wire::query("COMMIT")).await;
    let replies = raw.until_ready().await;
    assert_eq!(done(&replies), "ROLLBACK", "{replies:?}");
    assert_eq!(count(&cluster).await.iter().sum::<usize>(), 80);

    // An omnisharded table: every row on every shard.
    let csv = "code,name\nfr,France\nde,\"Germany, Federal Republic\"\n";
    let countries = "COPY countries FROM STDIN (FORMAT csv, HEADER)";
    let replies = copy(&mut raw, countries, csv, 7, b'c').await;
    assert_eq!(done(&replies), "COPY 2", "{replies:?}");
    raw.send(&wire::query("BEGIN")).await;
    raw.until_ready().await;
    let replies = copy(&mut raw, countries, "code,name\nit,Italy\n", 7, b'c').await;
    assert_eq!(done(&replies), "COPY 1", "{replies:?}");
    raw.send(&wire::query("COMMIT")).await;
    assert_eq!(wire::tags(&raw.until_ready().await), "CZ");
    for shard in cluster.shards().await {
        let names =
            common::column(&shard, "SELECT name FROM countries ORDER BY code", "name").await;
        assert_eq!(names, ["Germany, Federal Republic", "France", "Italy"]);
    }
    // The session goes on.
    raw.send(&wire::query("SELECT count(*) FROM orders")).await;
    let replies = raw.until_ready().await;
    assert_eq!(wire::data_rows(&replies), [vec!["80".to_owned()]]);
    assert_eq!(common::proxy_panics(), 0);
}
