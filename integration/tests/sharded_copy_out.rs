//! `COPY ... TO STDOUT` from a sharded table through pgshard, on 2 and 4
//! shards, compared with a reference Postgres holding the same rows in one
//! plain table: row counts, an order-independent checksum and the sorted
//! rows agree in text, CSV with HEADER (the header once), text HEADER and
//! binary (one file header, one trailer); a `COPY (SELECT ...)` whose rows
//! need a merge (ORDER BY, LIMIT, aggregates, DISTINCT) is merged and
//! written as COPY writes it, byte for byte the reference's output, in
//! text, CSV (HEADER, DELIMITER, NULL, QUOTE, ESCAPE, FORCE_QUOTE) and
//! binary; what no merge answers is refused.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::wire::{self, Wire};
use common::Cluster;
use futures_util::TryStreamExt;

const ROWS: i64 = 1000;

/// `orders_plain`, sharded like `orders` but a plain table (Postgres has
/// no `COPY table TO` for a partitioned table).
const PLAIN: &str = "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"orders_plain\"\n\
                     column = \"tenant_id\"\ndata_type = \"bigint\"\nhasher = \"postgres\"\n";

/// A sharded cluster of `n` and a reference server, both holding `orders`
/// rows 1..=ROWS (items with commas, quotes and tabs), and `orders_plain`,
/// a plain copy of them (on each shard: that shard's rows).
async fn clusters(n: usize) -> (Cluster, integration::PgServer, tokio_postgres::Client) {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(n, "", PLAIN);
    let reference = common::servers(1).remove(0);
    reference
        .psql(
            "shard_0",
            "SET ROLE app; CREATE TABLE orders (tenant_id bigint NOT NULL, id bigint NOT NULL, \
             item text NOT NULL, PRIMARY KEY (tenant_id, id))",
        )
        .unwrap();
    let direct = common::connect(reference.port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    direct
        .batch_execute(&format!(
            "INSERT INTO orders SELECT g, g * 3, 'it, \"' || g || E'\"\\t.' \
             FROM generate_series(1, {ROWS}) g"
        ))
        .await
        .unwrap();
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    raw.send(&wire::query("COPY orders FROM STDIN")).await;
    let (tag, _) = raw.recv().await;
    assert_eq!(tag, b'G');
    let data: String = (1..=ROWS)
        .map(|g| format!("{g}\t{}\tit, \"{g}\"\\t.\n", g * 3))
        .collect();
    raw.send(&wire::message(b'd', data.as_bytes())).await;
    raw.send(&wire::message(b'c', b"")).await;
    assert_eq!(done(&raw.until_ready().await), format!("COPY {ROWS}"));
    let plain = "CREATE TABLE orders_plain AS SELECT * FROM orders";
    for shard in cluster.shards().await.iter().chain([&direct]) {
        shard.batch_execute(plain).await.unwrap();
    }
    (cluster, reference, direct)
}

/// Run `sql` through pgshard: its CopyData bodies joined, and its tag.
async fn copy_out(raw: &mut Wire, sql: &str) -> Result<(Vec<u8>, String), Vec<String>> {
    raw.send(&wire::query(sql)).await;
    let replies = raw.until_ready().await;
    let errors = wire::errors(&replies);
    if !errors.is_empty() {
        return Err(errors);
    }
    let responses = replies.iter().filter(|(tag, _)| *tag == b'H').count();
    assert_eq!(responses, 1, "one CopyOutResponse: {replies:?}");
    let dones = replies.iter().filter(|(tag, _)| *tag == b'c').count();
    assert_eq!(dones, 1, "one CopyDone");
    let data: Vec<u8> = replies
        .iter()
        .filter(|(tag, _)| *tag == b'd')
        .flat_map(|(_, body): &(u8, Bytes)| body.to_vec())
        .collect();
    Ok((data, done(&replies)))
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

/// The reference server's output of `sql`.
async fn reference_out(direct: &tokio_postgres::Client, sql: &str) -> Vec<u8> {
    let stream = direct.copy_out(sql).await.unwrap();
    let chunks: Vec<Bytes> = stream.try_collect().await.unwrap();
    chunks.concat()
}

/// An order-independent checksum of `rows` (FNV-1a per row, summed).
fn checksum(rows: &[Vec<u8>]) -> u64 {
    rows.iter()
        .map(|row| {
            row.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
            })
        })
        .fold(0u64, u64::wrapping_add)
}

/// Lines of text or CSV output (no embedded newlines in these rows).
fn lines(data: &[u8]) -> Vec<Vec<u8>> {
    data.split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Binary output: (header, tuples, trailer present); panics when the
/// framing is wrong (a second header, data after the trailer).
fn tuples(data: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let header_len = 19;
    assert!(data.starts_with(b"PGCOPY\n\xff\r\n\0"), "{data:?}");
    let header = data[..header_len].to_vec();
    let mut at = header_len;
    let mut tuples = Vec::new();
    loop {
        let count = i16::from_be_bytes([data[at], data[at + 1]]);
        if count == -1 {
            assert_eq!(at + 2, data.len(), "data after the trailer");
            return (header, tuples);
        }
        let start = at;
        at += 2;
        for _ in 0..count {
            let len = i32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            at += 4 + usize::try_from(len).unwrap_or(0);
        }
        tuples.push(data[start..at].to_vec());
    }
}

/// Compare two outputs as sorted rows, with counts and checksums.
fn same_rows(what: &str, mut ours: Vec<Vec<u8>>, mut theirs: Vec<Vec<u8>>) {
    assert_eq!(ours.len(), theirs.len(), "{what}: row count");
    assert_eq!(checksum(&ours), checksum(&theirs), "{what}: checksum");
    ours.sort();
    theirs.sort();
    assert!(ours == theirs, "{what}: rows differ");
}

async fn copy_out_matches_reference(n: usize) {
    let (cluster, _reference, direct) = clusters(n).await;
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let tag = format!("COPY {ROWS}");
    for sql in [
        "COPY orders_plain TO STDOUT",
        "COPY (SELECT * FROM orders) TO STDOUT",
        "COPY (SELECT id, item FROM orders WHERE id > 1500) TO STDOUT (FORMAT csv)",
    ] {
        let (ours, got) = copy_out(&mut raw, sql).await.unwrap();
        let theirs = reference_out(&direct, sql).await;
        same_rows(sql, lines(&ours), lines(&theirs));
        assert!(got.starts_with("COPY "), "{got}");
    }
    // Headers: once, first.
    for sql in [
        "COPY orders_plain TO STDOUT (FORMAT csv, HEADER)",
        "COPY orders_plain (item, tenant_id) TO STDOUT (FORMAT text, HEADER true)",
        "COPY (SELECT item, id FROM orders) TO STDOUT (FORMAT csv, HEADER)",
    ] {
        let (ours, got) = copy_out(&mut raw, sql).await.unwrap();
        assert_eq!(got, tag, "{sql}");
        let theirs = reference_out(&direct, sql).await;
        let (mut ours, mut theirs) = (lines(&ours), lines(&theirs));
        assert_eq!(ours.remove(0), theirs.remove(0), "{sql}: the header");
        same_rows(sql, ours, theirs);
    }
    // Binary: one header, one trailer.
    for sql in [
        "COPY orders_plain TO STDOUT (FORMAT binary)",
        "COPY (SELECT * FROM orders WHERE id > 3000) TO STDOUT (FORMAT binary)",
    ] {
        let (ours, _) = copy_out(&mut raw, sql).await.unwrap();
        let theirs = reference_out(&direct, sql).await;
        let ((our_header, ours), (their_header, theirs)) = (tuples(&ours), tuples(&theirs));
        assert_eq!(our_header, their_header);
        same_rows(sql, ours, theirs);
    }
    // With the key: one shard, as before.
    let sql = "COPY (SELECT * FROM orders WHERE tenant_id = 7) TO STDOUT (FORMAT csv, HEADER)";
    let (ours, got) = copy_out(&mut raw, sql).await.unwrap();
    assert_eq!(got, "COPY 1");
    assert_eq!(ours, reference_out(&direct, sql).await);
    // Rows that need a merge: the shards run the SELECT, pgshard merges the
    // rows and writes them as COPY does, byte for byte the reference's.
    for sql in [
        "COPY (SELECT * FROM orders ORDER BY id) TO STDOUT",
        "COPY (SELECT id, item FROM orders ORDER BY id DESC LIMIT 17) TO STDOUT (FORMAT csv, HEADER)",
        "COPY (SELECT count(*), sum(id), avg(tenant_id) FROM orders) TO STDOUT",
        "COPY (SELECT item, nullif(id % 5, 0) AS maybe FROM orders ORDER BY id LIMIT 50 OFFSET 10) \
         TO STDOUT (NULL 'nil', HEADER, DELIMITER '|')",
        "COPY (SELECT id, nullif(item, item) AS nothing, item FROM orders ORDER BY id LIMIT 30) \
         TO STDOUT (FORMAT csv, FORCE_QUOTE *, NULL 'NA')",
        "COPY (SELECT id AS \"the id\", item FROM orders ORDER BY id LIMIT 20) \
         TO STDOUT (FORMAT csv, HEADER, QUOTE '''', ESCAPE '\\', FORCE_QUOTE (item))",
        "COPY (SELECT DISTINCT tenant_id % 10 AS m FROM orders ORDER BY m) TO STDOUT",
        "COPY (SELECT tenant_id % 3 AS g, count(*), max(id) FROM orders GROUP BY tenant_id % 3 ORDER BY g) \
         TO STDOUT (FORMAT csv)",
        "COPY (SELECT id, item, nullif(id, 6) AS gap FROM orders ORDER BY id LIMIT 100) TO STDOUT (FORMAT binary)",
        "COPY (SELECT id FROM orders WHERE id < 0 ORDER BY id) TO STDOUT (FORMAT binary)",
        "COPY (SELECT id FROM orders WHERE id < 0 ORDER BY id) TO STDOUT (FORMAT csv, HEADER)",
    ] {
        let (ours, got) = copy_out(&mut raw, sql).await.unwrap();
        let theirs = reference_out(&direct, sql).await;
        if ours != theirs {
            let at = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
            let near = |data: &[u8]| String::from_utf8_lossy(&data[at.saturating_sub(40)..(at + 80).min(data.len())]).into_owned();
            panic!("{sql}: outputs differ at byte {at}:\n ours   {:?}\n theirs {:?}", near(&ours), near(&theirs));
        }
        let count = direct
            .query_one(&format!("SELECT count(*) FROM ({}) q", inner(sql)), &[])
            .await
            .unwrap()
            .get::<_, i64>(0);
        assert_eq!(got, format!("COPY {count}"), "{sql}");
    }
    // A client_encoding whose characters may hold ASCII bytes: COPY skips
    // them when it escapes, pgshard would not; text is refused, binary runs.
    raw.send(&wire::query("SET client_encoding = 'SJIS'")).await;
    assert!(wire::errors(&raw.until_ready().await).is_empty());
    let merged = "COPY (SELECT id FROM orders ORDER BY id LIMIT 3) TO STDOUT";
    let errors = copy_out(&mut raw, merged).await.unwrap_err();
    assert!(errors.iter().any(|e| e.contains("0A000")), "{errors:?}");
    let binary = format!("{merged} (FORMAT binary)");
    assert_eq!(copy_out(&mut raw, &binary).await.unwrap().1, "COPY 3");
    raw.send(&wire::query("RESET client_encoding")).await;
    raw.until_ready().await;
    // Refused: what no merge answers exactly, and options COPY would refuse.
    for sql in [
        "COPY (SELECT json_agg(item) FROM orders) TO STDOUT",
        "COPY (SELECT * FROM orders ORDER BY id) TO STDOUT (ENCODING 'LATIN1')",
        "COPY (SELECT * FROM orders ORDER BY id) TO STDOUT (DELIMITER 'x')",
        "COPY (SELECT * FROM orders ORDER BY id) TO STDOUT (FORMAT csv, FORCE_QUOTE (nope))",
    ] {
        let errors = copy_out(&mut raw, sql).await.unwrap_err();
        assert!(!errors.is_empty(), "{sql}");
    }
    // The extended protocol (tokio-postgres prepares COPY): plain text is
    // joined, a header or binary is refused, never sent twice.
    let client = cluster.connect().await;
    let ours = reference_out(&client, "COPY orders_plain TO STDOUT").await;
    let theirs = reference_out(&direct, "COPY orders_plain TO STDOUT").await;
    same_rows("extended", lines(&ours), lines(&theirs));
    let err = client
        .copy_out("COPY orders_plain TO STDOUT (FORMAT csv, HEADER)")
        .await
        .err()
        .expect("refused");
    assert_eq!(common::code(&err), Some("0A000"), "{err}");
    let err = client
        .copy_out("COPY (SELECT * FROM orders ORDER BY id) TO STDOUT")
        .await
        .err()
        .expect("refused");
    assert_eq!(common::code(&err), Some("0A000"), "{err}");
    assert_eq!(common::proxy_panics(), 0);
}

/// The query of `COPY (query) TO ...`.
fn inner(sql: &str) -> &str {
    let start = sql.find('(').unwrap() + 1;
    let end = sql.rfind(") TO STDOUT").unwrap();
    &sql[start..end]
}

#[tokio::test]
async fn copy_out_matches_reference_2() {
    copy_out_matches_reference(2).await;
}

#[tokio::test]
async fn copy_out_matches_reference_4() {
    copy_out_matches_reference(4).await;
}
