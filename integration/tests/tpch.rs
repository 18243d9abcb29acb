//! TPC-H's 22 queries through pgshard (with its default `cross_shard_finish
//! = "coordinator"`) against one reference Postgres holding every row, on
//! our own generated data (integration/src/tpch, SF 0.01): layouts A
//! (`lineitem`, `orders` sharded by order key, co-located, the rest
//! omnisharded) and B (`customer` sharded by customer key too) on 2 and 4
//! shards. The reference is loaded directly, the shards through pgshard
//! with COPY (the rows' placement is checked afterwards). Each query's
//! answer is compared exactly (column names, every value as text in the
//! simple protocol, and column types and every value's bytes in the
//! extended protocol with binary results: numeric scales, NULLs, order),
//! and its path (streamed, one shard, finished on the coordinator, or
//! refused with 0A000) is asserted against [`EXPECTED`], from its EXPLAIN's
//! first line, so a query that moves paths fails.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::OnceLock;

use bytes::Bytes;
use futures_util::SinkExt;
use integration::tpch::{self, Data, Layout};
use integration::{PgServer, TestProxy};
use tokio_postgres::types::{FromSql, Type};
use tokio_postgres::{Client, SimpleQueryMessage};

use Path::*;

/// Where a query runs through pgshard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// On every shard, rows streamed and merged (`pgshard: runs on N shards`).
    Stream,
    /// On one shard as it is (omnisharded tables only): Postgres's plan.
    OneShard,
    /// Gathered and finished on the coordinator.
    Coordinator,
    /// Refused with 0A000.
    Refused,
    /// An EXPLAIN whose first line is a pgshard line this test does not
    /// know (never expected: a failure).
    Unknown,
}

/// Each query's path in layout A and in layout B (the same on 2 and 4
/// shards). Issue 34's plan (§4) expects no refusal: A streams or runs on
/// one shard for 15 queries and gathers 7 (8, 13, 14, 15, 17, 20, 22); B
/// gathers 3, 5, 7, 10 and 18 too.
const EXPECTED: [(u32, Path, Path); 22] = [
    (1, Stream, Stream),
    (2, OneShard, OneShard),
    (3, Stream, Coordinator),
    (4, Stream, Stream),
    (5, Stream, Coordinator),
    (6, Stream, Stream),
    (7, Stream, Coordinator),
    (8, Coordinator, Coordinator),
    (9, Stream, Stream),
    (10, Stream, Coordinator),
    (11, OneShard, OneShard),
    (12, Stream, Stream),
    (13, Coordinator, Coordinator),
    (14, Coordinator, Coordinator),
    (15, Coordinator, Coordinator),
    (16, OneShard, OneShard),
    (17, Coordinator, Coordinator),
    (18, Stream, Coordinator),
    (19, Stream, Stream),
    (20, Coordinator, Coordinator),
    (21, Stream, Stream),
    (22, Coordinator, Coordinator),
];

/// Q15 in the spec's view form (a view over `lineitem` on every shard):
/// both protocols read the view's definition and gather the rows behind
/// it (A and B alike).
const Q15_VIEW_EXPECTED: (Path, Path) = (Coordinator, Coordinator);

const SCALE: f64 = 0.01;
/// At SF 0.01 a few queries select rows by luck of the draw (Q2: a part of
/// size 15 and type BRASS with a European supplier among its 4; Q18: an
/// order of more than 300 units; Q19: about one line expected): this seed
/// gives every query rows (asserted below).
const SEED: u64 = 8;

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| tpch::generate(SCALE, SEED))
}

/// A result in the simple protocol: column names and text values.
type Simple = (Vec<String>, Vec<Vec<Option<String>>>);
/// A result in the extended protocol with binary results: columns (name,
/// type) and each value's bytes.
type Binary = (Vec<(String, Type)>, Vec<Vec<Option<Vec<u8>>>>);
/// An error: SQLSTATE and message.
type Failure = (String, String);

/// Any value's bytes as the server sent them.
struct Raw(Option<Vec<u8>>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw.to_vec())))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

fn failure(e: &tokio_postgres::Error) -> Failure {
    (
        common::code(e).unwrap_or("?").to_owned(),
        common::describe(e),
    )
}

async fn simple(client: &Client, sql: &str) -> Result<Simple, Failure> {
    let messages = client.simple_query(sql).await.map_err(|e| failure(&e))?;
    let (mut names, mut rows) = (Vec::new(), Vec::new());
    for message in messages {
        match message {
            SimpleQueryMessage::RowDescription(columns) => {
                names = columns.iter().map(|c| c.name().to_owned()).collect();
            }
            SimpleQueryMessage::Row(row) => rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => {}
        }
    }
    Ok((names, rows))
}

async fn binary(client: &Client, sql: &str) -> Result<Binary, Failure> {
    let statement = client.prepare(sql).await.map_err(|e| failure(&e))?;
    let rows = client
        .query(&statement, &[])
        .await
        .map_err(|e| failure(&e))?;
    let columns = statement
        .columns()
        .iter()
        .map(|c| (c.name().to_owned(), c.type_().clone()))
        .collect();
    let values = rows
        .iter()
        .map(|row| (0..row.len()).map(|i| row.get::<_, Raw>(i).0).collect())
        .collect();
    Ok((columns, values))
}

/// The path EXPLAIN's first line shows, or the error.
async fn explained(client: &Client, sql: &str) -> Result<(Path, String), Failure> {
    let (_, rows) = simple(client, &format!("explain {sql}")).await?;
    let first = rows
        .first()
        .and_then(|row| row.first().cloned().flatten())
        .unwrap_or_default();
    let path = if first.starts_with("pgshard: runs on") {
        Stream
    } else if first.starts_with("pgshard: finished on the coordinator") {
        Coordinator
    } else if first.starts_with("pgshard:") {
        Unknown
    } else {
        OneShard
    };
    Ok((path, first))
}

struct Setup {
    /// Kept alive for the test's length; the proxy drops first.
    proxy: TestProxy,
    servers: Vec<PgServer>,
    _reference: PgServer,
    reference: Client,
}

async fn copy(client: &Client, table: &str, text: &str) {
    let sink = client
        .copy_in::<_, Bytes>(&format!("copy {table} from stdin"))
        .await
        .unwrap();
    let mut sink = std::pin::pin!(sink);
    // Chunks cut rows anywhere, as psql's do.
    for chunk in text.as_bytes().chunks(50_000) {
        sink.send(Bytes::copy_from_slice(chunk)).await.unwrap();
    }
    let rows = sink.finish().await.unwrap();
    assert_eq!(rows as usize, text.lines().count(), "copy {table}");
}

/// `shards` servers with the schema, a reference loaded directly, pgshard
/// over the shards in `layout`, the shards loaded through it.
async fn start(layout: Layout, shards: usize) -> Setup {
    common::watch_proxy_panics();
    let mut servers = common::servers(shards + 1);
    let reference_server = servers.pop().unwrap();
    let create = tpch::schema::create_all();
    // Q15's view form needs its view on every shard and the reference.
    let create = format!("SET ROLE app; {create}; {}", tpch::queries::Q15_VIEW[0]);
    for (i, server) in servers.iter().enumerate() {
        server.psql(&format!("shard_{i}"), &create).unwrap();
    }
    let reference_db = format!("shard_{shards}");
    reference_server.psql(&reference_db, &create).unwrap();
    let reference = common::connect(reference_server.port(), "app", "app-pw", &reference_db)
        .await
        .unwrap();
    // The default finishes on the coordinator what cannot stream.
    let config = common::sharded_config(&servers, "", &layout.sharding_toml("prod"));
    let proxy = TestProxy::start(&config, common::USERS).unwrap();
    let through = common::connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    for (table, text) in &data().tables {
        copy(&reference, table, text).await;
        copy(&through, table, text).await;
    }
    reference.simple_query("analyze").await.unwrap();
    let setup = Setup {
        proxy,
        servers,
        _reference: reference_server,
        reference,
    };
    check_placement(&setup, layout).await;
    setup
}

/// Every sharded row is on the shard its key hashes to (Postgres's hash,
/// computed by each shard) and every omnisharded table whole on each
/// shard; the shards analyzed.
async fn check_placement(setup: &Setup, layout: Layout) {
    let n = setup.servers.len();
    for i in 0..n {
        let shard = common::connect(
            setup.servers[i].port(),
            "app",
            "app-pw",
            &format!("shard_{i}"),
        )
        .await
        .unwrap();
        shard.simple_query("analyze").await.unwrap();
        for (table, column) in layout.sharded() {
            let sql = format!(
                "select count(*) from {table} where (((hashint8extended({column}::bigint, \
                 8816678312871386365)::numeric + 18446744073709551616 + 5305509591434766563) \
                 % 18446744073709551616) % {n})::int <> {i}"
            );
            let misplaced = common::column(&shard, &sql, "count").await;
            assert_eq!(
                misplaced,
                ["0"],
                "{table} rows on shard {i} of {n} that belong elsewhere"
            );
        }
        for table in layout.omnisharded() {
            let sql = format!("select count(*) from {table}");
            let rows = common::column(&shard, &sql, "count").await;
            assert_eq!(
                rows,
                [data().rows(table).to_string()],
                "{table} on shard {i}"
            );
        }
    }
    let through = client(setup).await;
    for (table, _) in layout.sharded() {
        let sql = format!("select count(*) from {table}");
        let rows = common::column(&through, &sql, "count").await;
        assert_eq!(
            rows,
            [data().rows(table).to_string()],
            "{table} through pgshard"
        );
    }
}

async fn client(setup: &Setup) -> Client {
    common::connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// One query to check in one layout and shard count.
struct Checked<'a> {
    label: String,
    sql: &'a str,
    /// Its path in both protocols (and EXPLAIN's).
    expected: Path,
}

/// `outcome` is a 0A000 refusal when `refused` says so, else an answer.
fn expect_refusal(
    label: &str,
    what: &str,
    outcome: Option<&Failure>,
    refused: bool,
    failures: &mut Vec<String>,
) {
    match (outcome, refused) {
        (Some((code, _)), true) if code == "0A000" => {}
        (None, false) => {}
        (None, true) => failures.push(format!("{label}: {what}: answered, EXPECTED says refused")),
        (Some(error), _) => failures.push(format!("{label}: {what}: {error:?}")),
    }
}

/// Run one query through pgshard in both protocols and on the reference:
/// exact answers on the expected path, or 0A000 where refusal is expected.
/// Problems go to `failures`; the line for the table is returned.
async fn check(
    setup: &Setup,
    through: &Client,
    query: Checked<'_>,
    failures: &mut Vec<String>,
) -> String {
    let Checked {
        label,
        sql,
        expected,
    } = query;
    let want = simple(&setup.reference, sql).await;
    match &want {
        Ok((_, rows))
            if rows
                .first()
                .and_then(|r| r.first().cloned().flatten())
                .is_some() => {}
        other => failures.push(format!("{label}: the reference selects no rows: {other:?}")),
    }
    let want_binary = binary(&setup.reference, sql).await;
    let explain = explained(through, sql).await;
    let got = simple(through, sql).await;
    let got_binary = binary(through, sql).await;
    let path = match &explain {
        Ok((path, _)) => *path,
        Err(_) => Refused,
    };
    let refused = expected == Refused;
    expect_refusal(&label, "explain", explain.as_ref().err(), refused, failures);
    expect_refusal(&label, "simple", got.as_ref().err(), refused, failures);
    expect_refusal(
        &label,
        "extended",
        got_binary.as_ref().err(),
        refused,
        failures,
    );
    if path != expected {
        failures.push(format!("{label}: expected {expected:?}, got {explain:?}"));
    }
    // Whatever the path, an answer must be the reference's.
    if got.is_ok() && got != want {
        failures.push(format!(
            "{label}: WRONG ANSWER (simple protocol)\n  pgshard:   {got:?}\n  reference: {want:?}"
        ));
    }
    if got_binary.is_ok() && got_binary != want_binary {
        failures.push(format!(
            "{label}: WRONG ANSWER (extended protocol, binary)\n  pgshard:   {got_binary:?}\n  reference: {want_binary:?}"
        ));
    }
    let mut detail = match (&explain, &got) {
        (Err((code, message)), _) | (_, Err((code, message))) => format!("{code} {message}"),
        (Ok((_, first)), Ok((_, rows))) => format!("{} row(s); {first}", rows.len()),
    };
    if let (Ok(_), Err((code, message))) = (&got, &got_binary) {
        detail.push_str(&format!("; extended protocol: {code} {message}"));
    }
    format!("{label}: {path:?} ({detail})")
}

async fn run(layout: Layout, shards: usize) {
    let started = std::time::Instant::now();
    let setup = start(layout, shards).await;
    let loaded = started.elapsed();
    let through = client(&setup).await;
    let (mut failures, mut lines) = (Vec::new(), Vec::new());
    for query in tpch::queries(SCALE) {
        let (_, a, b) = EXPECTED[query.number as usize - 1];
        let checked = Checked {
            label: format!("Q{} {layout:?}/{shards}", query.number),
            sql: &query.sql,
            expected: if layout == Layout::A { a } else { b },
        };
        lines.push(check(&setup, &through, checked, &mut failures).await);
    }
    let (a, b) = Q15_VIEW_EXPECTED;
    let checked = Checked {
        label: format!("Q15 view {layout:?}/{shards}"),
        sql: tpch::queries::Q15_VIEW[1],
        expected: if layout == Layout::A { a } else { b },
    };
    lines.push(check(&setup, &through, checked, &mut failures).await);
    eprintln!(
        "layout {layout:?} on {shards} shards: loaded in {:.1} s, queried in {:.1} s\n{}",
        loaded.as_secs_f64(),
        (started.elapsed() - loaded).as_secs_f64(),
        lines.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn layout_a_on_2_shards() {
    run(Layout::A, 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn layout_a_on_4_shards() {
    run(Layout::A, 4).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn layout_b_on_2_shards() {
    run(Layout::B, 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn layout_b_on_4_shards() {
    run(Layout::B, 4).await;
}

#[test]
fn expected_table_lists_every_query_once() {
    let numbers: Vec<u32> = EXPECTED.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(numbers, (1..=22).collect::<Vec<_>>());
    assert_eq!(tpch::queries(SCALE).len(), 22);
}
