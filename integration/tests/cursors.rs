//! Cursors on 2 partition-only shards against one reference Postgres: the
//! issue's statements (a keyless cursor in a transaction, WITH HOLD, a
//! psycopg-shaped named cursor over 100,000 rows ORDER BY id), keyed
//! cursors that follow their shard, the extended protocol's bound DECLARE
//! and FETCH and row-limited portals, and what is refused (0A000) or
//! Postgres's own error. Each exchange is compared message by message with
//! the reference's (row descriptions without table OIDs, rows, tags,
//! SQLSTATEs, transaction status).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::{Buf, Bytes};
use common::wire::{self, Wire};
use common::{raw_users, sharded_config};
use integration::{PgServer, TestProxy};

/// `big` sharded by `id`.
const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"big\"
column = \"id\"
data_type = \"bigint\"
hasher = \"postgres\"
";

/// 2 shards holding only their partition of `big` (`rows` rows, `v` =
/// `id % 7`, `w` = a text that sorts differently from `id`), pgshard in
/// front, and the reference holding all of them.
struct Setup {
    proxy: TestProxy,
    servers: Vec<PgServer>,
}

impl Setup {
    fn start(rows: u64) -> Setup {
        Setup::start_with(rows, "")
    }

    /// [`Setup::start`] with `general`'s lines in pgshard's `[general]`.
    fn start_with(rows: u64, general: &str) -> Setup {
        let servers = common::servers(3);
        let fill = |table: &str, filter: &str| {
            format!(
                "INSERT INTO {table} SELECT g, g % 7, md5(g::text) FROM generate_series(1, {rows}) g {filter}"
            )
        };
        for (i, server) in servers.iter().enumerate().take(2) {
            let sql = format!(
                "SET ROLE app;\
                 CREATE TABLE big (id bigint PRIMARY KEY, v int, w text) PARTITION BY HASH (id);\
                 CREATE TABLE big_here PARTITION OF big FOR VALUES WITH (MODULUS 2, REMAINDER {i});\
                 {};",
                fill(
                    "big",
                    &format!("WHERE satisfies_hash_partition('big'::regclass, 2, {i}, g::bigint)")
                )
            );
            server.psql(&format!("shard_{i}"), &sql).unwrap();
        }
        let sql = format!(
            "SET ROLE app; CREATE TABLE big (id bigint PRIMARY KEY, v int, w text); {};",
            fill("big", "")
        );
        servers[2].psql("shard_2", &sql).unwrap();
        let config = sharded_config(&servers[..2], general, SHARDING);
        let proxy = TestProxy::start(&config, &raw_users()).unwrap();
        Setup { proxy, servers }
    }

    async fn pgshard(&self) -> Wire {
        Wire::login(self.proxy.port(), "raw", "prod").await
    }

    async fn reference(&self) -> Wire {
        let mut wire = Wire::login(self.servers[2].port(), "postgres", "shard_2").await;
        wire.send(&wire::query("SET ROLE app")).await;
        wire.until_ready().await;
        wire
    }

    /// Connections to pgshard and to the reference.
    async fn pair(&self) -> Pair {
        Pair {
            pgshard: self.pgshard().await,
            reference: self.reference().await,
            unordered: None,
        }
    }
}

/// A message as the comparison sees it.
type Seen = (char, String);

/// The client's view of a reply, comparable across servers.
fn seen(replies: &[(u8, Bytes)]) -> Vec<Seen> {
    replies
        .iter()
        .map(|(tag, body)| {
            let text = match tag {
                b'T' => description(body.clone()),
                b'D' => format!("{:?}", wire::data_rows(&[(b'D', body.clone())])[0]),
                b'C' => String::from_utf8_lossy(body)
                    .trim_end_matches('\0')
                    .to_owned(),
                b'E' => wire::sqlstate(body).unwrap_or_default(),
                b'Z' => String::from_utf8_lossy(body).into_owned(),
                _ => String::new(),
            };
            (char::from(*tag), text)
        })
        .collect()
}

/// A RowDescription without table OIDs and column numbers.
fn description(mut body: Bytes) -> String {
    let count = body.get_u16();
    let mut out = Vec::new();
    for _ in 0..count {
        let end = body.iter().position(|&b| b == 0).unwrap();
        let name = String::from_utf8_lossy(&body[..end]).into_owned();
        body.advance(end + 1);
        let (_table, _column) = (body.get_u32(), body.get_i16());
        let (oid, len, modifier, format) = (
            body.get_u32(),
            body.get_i16(),
            body.get_i32(),
            body.get_i16(),
        );
        out.push(format!("{name}:{oid}:{len}:{modifier}:{format}"));
    }
    out.join(",")
}

struct Pair {
    pgshard: Wire,
    reference: Wire,
    /// Rows whose order is not fixed: set aside (pgshard's, the
    /// reference's) and compared as multisets by [`Pair::same_rows`].
    unordered: Option<(Vec<String>, Vec<String>)>,
}

impl Pair {
    /// Send `messages` to both, read to ReadyForQuery, and compare; the
    /// pgshard side's messages.
    async fn same(&mut self, messages: &[u8]) -> Vec<Seen> {
        self.pgshard.send(messages).await;
        let raw = self.pgshard.until_ready().await;
        let mut got = seen(&raw);
        let mut want = exchange(&mut self.reference, messages).await;
        if let Some((got_rows, want_rows)) = self.unordered.as_mut() {
            for (seen, rows) in [(&mut got, got_rows), (&mut want, want_rows)] {
                for (tag, text) in seen.iter_mut().filter(|(t, _)| *t == 'D') {
                    rows.push(std::mem::take(text));
                    *tag = 'D';
                }
            }
        }
        assert_eq!(
            got,
            want,
            "pgshard differs from the reference after {:?} (pgshard's errors: {:?})",
            String::from_utf8_lossy(messages),
            error_messages(&raw)
        );
        got
    }

    async fn same_query(&mut self, sql: &str) -> Vec<Seen> {
        self.same(&wire::query(sql)).await
    }

    /// From now on rows are compared as multisets (`ordered`: in order).
    fn rows_in_order(&mut self, ordered: bool) {
        self.unordered = (!ordered).then(|| (Vec::new(), Vec::new()));
    }

    /// The rows set aside since [`Pair::rows_in_order`] are the same.
    fn same_rows(&mut self) {
        if let Some((mut got, mut want)) = self.unordered.take() {
            got.sort();
            want.sort();
            assert_eq!(got, want, "pgshard's rows differ from the reference's");
        }
        self.unordered = Some((Vec::new(), Vec::new()));
    }
}

async fn exchange(wire: &mut Wire, messages: &[u8]) -> Vec<Seen> {
    wire.send(messages).await;
    seen(&wire.until_ready().await)
}

/// The messages (`M` fields) of the ErrorResponses among `replies`.
fn error_messages(replies: &[(u8, Bytes)]) -> Vec<String> {
    let message = |body: &Bytes| {
        body.split(|&b| b == 0)
            .find_map(|field| field.strip_prefix(b"M"))
            .map(|m| String::from_utf8_lossy(m).into_owned())
    };
    replies
        .iter()
        .filter(|(tag, _)| *tag == b'E')
        .filter_map(|(_, body)| message(body))
        .collect()
}

/// pgshard's reply to `sql`: its SQLSTATE, if it failed.
async fn error_of(wire: &mut Wire, sql: &str) -> Option<String> {
    let replies = exchange(wire, &wire::query(sql)).await;
    replies
        .into_iter()
        .find(|(t, _)| *t == 'E')
        .map(|(_, code)| code)
}

fn rows(seen: &[Seen]) -> usize {
    seen.iter().filter(|(t, _)| *t == 'D').count()
}

/// pgshard's `[general]` line that refuses what the streaming merge cannot
/// answer instead of finishing it on the coordinator (the default).
const REFUSE: &str = "cross_shard_finish = \"refuse\"";

/// The two statements: a keyless cursor's count in a transaction
/// and WITH HOLD outside one, answered as one Postgres answers them.
#[tokio::test]
async fn keyless_cursors_answer_as_one_postgres() {
    let setup = Setup::start(1000);
    let mut pair = setup.pair().await;
    for sql in [
        "BEGIN",
        "DECLARE c CURSOR FOR SELECT count(*) FROM big",
        "FETCH ALL FROM c",
        "FETCH ALL FROM c",
        "CLOSE c",
        "COMMIT",
        "DECLARE h CURSOR WITH HOLD FOR SELECT count(*), sum(v), min(w), max(id) FROM big",
        "FETCH ALL FROM h",
        "SELECT count(*) FROM big WHERE id = 7",
        "FETCH NEXT FROM h",
        "CLOSE h",
        "FETCH h",
        // Declared WITH HOLD in a transaction (psycopg's `withhold`):
        // kept at its COMMIT, gone with its ROLLBACK.
        "BEGIN",
        "DECLARE wh CURSOR WITH HOLD FOR SELECT id FROM big ORDER BY id",
        "FETCH 2 FROM wh",
        "COMMIT",
        "FETCH 3 FROM wh",
        "BEGIN",
        "DECLARE gone CURSOR WITH HOLD FOR SELECT id FROM big ORDER BY id",
        "ROLLBACK",
        "FETCH gone",
        "FETCH 2 FROM wh",
        "CLOSE ALL",
        "FETCH wh",
        // A name in use: Postgres's error, and the transaction is aborted.
        "BEGIN",
        "DECLARE twice CURSOR FOR SELECT id FROM big",
        "DECLARE twice CURSOR FOR SELECT v FROM big",
        "FETCH twice",
        "ROLLBACK",
    ] {
        let seen = pair.same_query(sql).await;
        if sql == "FETCH ALL FROM c" && rows(&seen) == 1 {
            assert!(seen.contains(&('D', "[\"1000\"]".to_owned())), "{seen:?}");
        }
    }
}

/// A named cursor as psycopg runs one (DECLARE ... WITHOUT HOLD, then
/// FETCH FORWARD 1000 until nothing comes) over 100,000 rows ORDER BY id:
/// every row, in order, in the simple protocol and in the extended one
/// (psycopg sends both statements with Parse/Bind/Execute, and a Describe
/// of the cursor's portal).
#[tokio::test]
async fn a_named_cursor_reads_100000_rows_in_order() {
    let setup = Setup::start(100_000);
    for extended in [false, true] {
        let mut pair = setup.pair().await;
        let send = |sql: &str| match extended {
            false => wire::query(sql),
            true => [
                wire::parse("", sql),
                wire::bind(""),
                wire::describe(b'P', ""),
                wire::execute(),
                wire::sync(),
            ]
            .concat(),
        };
        pair.same_query("BEGIN").await;
        pair.same(&send(
            "DECLARE \"pg-1\" CURSOR WITHOUT HOLD FOR SELECT id, v FROM big ORDER BY id",
        ))
        .await;
        if extended {
            pair.same(&[wire::describe(b'P', "pg-1"), wire::sync()].concat())
                .await;
        }
        let mut total = 0;
        loop {
            let seen = pair.same(&send("FETCH FORWARD 1000 FROM \"pg-1\"")).await;
            let n = rows(&seen);
            total += n;
            if n == 0 {
                break;
            }
        }
        assert_eq!(total, 100_000, "extended: {extended}");
        pair.same(&send("CLOSE \"pg-1\"")).await;
        pair.same_query("COMMIT").await;
    }
}

/// Keyless cursors over ORDER BY (a hidden sort column), LIMIT/OFFSET,
/// DISTINCT ON and aggregates, fetched in chunks of every size, MOVEd, in
/// both protocols, against the reference.
#[tokio::test]
async fn merged_cursors_fetch_in_parts() {
    let setup = Setup::start(3000);
    let mut pair = setup.pair().await;
    let queries = [
        "SELECT id FROM big ORDER BY w, id",
        "SELECT id, v FROM big ORDER BY v DESC, id LIMIT 250 OFFSET 17",
        "SELECT DISTINCT ON (v) v, id FROM big ORDER BY v, id DESC",
        "SELECT count(*), sum(id), avg(v), min(w) FROM big WHERE v < 3",
        "SELECT id FROM big WHERE v = 2 ORDER BY id DESC",
    ];
    for (i, query) in queries.iter().enumerate() {
        for chunk in [1, 7, 600, 5000] {
            pair.same_query("BEGIN").await;
            pair.same_query(&format!("DECLARE c{i} CURSOR FOR {query}"))
                .await;
            pair.same_query(&format!("MOVE 3 IN c{i}")).await;
            loop {
                let seen = pair.same_query(&format!("FETCH {chunk} FROM c{i}")).await;
                if rows(&seen) == 0 {
                    break;
                }
            }
            pair.same_query("COMMIT").await;
        }
    }
}

/// A cursor whose query routes to one shard lives there: FETCH, MOVE,
/// CLOSE and WHERE CURRENT OF follow it, in a transaction that also reads
/// another shard, and WITH HOLD outside one.
#[tokio::test]
async fn keyed_cursors_follow_their_shard() {
    let setup = Setup::start(200);
    let mut pair = setup.pair().await;
    for sql in [
        "BEGIN",
        "SELECT v FROM big WHERE id = 2",
        "DECLARE k CURSOR FOR SELECT id, v FROM big WHERE id = 1 FOR UPDATE",
        "SELECT v FROM big WHERE id = 3",
        "FETCH k",
        "UPDATE big SET v = 100 WHERE CURRENT OF k",
        "SELECT v FROM big WHERE id = 1",
        "CLOSE k",
        "ROLLBACK",
        "DECLARE kh CURSOR WITH HOLD FOR SELECT id, w FROM big WHERE id IN (5, 5)",
        "SELECT count(*) FROM big",
        "FETCH ALL FROM kh",
        "CLOSE kh",
    ] {
        pair.same_query(sql).await;
    }
}

/// What a merged cursor cannot do is refused with 0A000 naming why (with
/// `cross_shard_finish = "refuse"`: by default the coordinator finishes
/// the DECLAREs the merge cannot read in parts, see the next test); a
/// cursor nobody declared gets Postgres's own error.
#[tokio::test]
async fn what_cannot_merge_in_parts_is_refused() {
    let setup = Setup::start_with(100, REFUSE);
    let mut pgshard = setup.pgshard().await;
    assert_eq!(
        error_of(&mut pgshard, "FETCH ALL FROM nowhere")
            .await
            .as_deref(),
        Some("34000")
    );
    for (declare, fetch) in [
        ("DECLARE s SCROLL CURSOR FOR SELECT id FROM big", None),
        // A grouping the shards cannot sort (`*`).
        ("DECLARE d CURSOR FOR SELECT DISTINCT * FROM big", None),
        ("DECLARE u CURSOR FOR SELECT id FROM big FOR UPDATE", None),
        (
            "DECLARE b CURSOR FOR SELECT id FROM big ORDER BY id",
            Some("FETCH BACKWARD 1 FROM b"),
        ),
        (
            "DECLARE p CURSOR FOR SELECT id FROM big",
            Some("FETCH PRIOR FROM p"),
        ),
        (
            "DECLARE a CURSOR FOR SELECT id FROM big",
            Some("FETCH ABSOLUTE 3 FROM a"),
        ),
        (
            "DECLARE o CURSOR FOR SELECT id FROM big",
            Some("UPDATE big SET v = 1 WHERE CURRENT OF o"),
        ),
    ] {
        assert_eq!(error_of(&mut pgshard, "BEGIN").await, None);
        let declared = error_of(&mut pgshard, declare).await;
        match fetch {
            None => assert_eq!(declared.as_deref(), Some("0A000"), "{declare}"),
            Some(fetch) => {
                assert_eq!(declared, None, "{declare}");
                assert_eq!(
                    error_of(&mut pgshard, fetch).await.as_deref(),
                    Some("0A000"),
                    "{fetch}"
                );
            }
        }
        assert_eq!(error_of(&mut pgshard, "ROLLBACK").await, None);
    }
    // After a ROLLBACK TO SAVEPOINT pgshard cannot tell whether the
    // cursor still exists (Postgres closed this one).
    for sql in [
        "BEGIN",
        "SELECT 1 FROM big WHERE id = 1",
        "SAVEPOINT a",
        "DECLARE sp CURSOR FOR SELECT id FROM big",
        "FETCH sp",
        "ROLLBACK TO SAVEPOINT a",
    ] {
        assert_eq!(error_of(&mut pgshard, sql).await, None, "{sql}");
    }
    assert_eq!(
        error_of(&mut pgshard, "FETCH sp").await.as_deref(),
        Some("0A000")
    );
    assert_eq!(error_of(&mut pgshard, "ROLLBACK").await, None);
    // A FETCH with binary results (tokio-postgres asks for binary).
    let client = common::connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    client.batch_execute("BEGIN").await.unwrap();
    client
        .batch_execute("DECLARE bin CURSOR FOR SELECT id FROM big ORDER BY id")
        .await
        .unwrap();
    let err = client.query("FETCH 5 FROM bin", &[]).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"));
    client.batch_execute("ROLLBACK").await.unwrap();
    // The statements in one query string: refused, not one
    // shard's count.
    let one_string = "DECLARE c CURSOR WITH HOLD FOR SELECT count(*) FROM big; FETCH ALL FROM c";
    assert_eq!(
        error_of(&mut pgshard, one_string).await.as_deref(),
        Some("0A000")
    );
    // Outside a transaction block without WITH HOLD: Postgres's error.
    let outside = error_of(&mut pgshard, "DECLARE x CURSOR FOR SELECT id FROM big").await;
    assert_eq!(outside.as_deref(), Some("25P01"));
}

/// A Parse pgshard answered itself (no server attached in a deferred
/// transaction) keeps its place before the replies of the keyless segment
/// that follows it (psycopg's DECLARE and FETCH in a transaction).
/// By default the cursors the merge cannot read in parts (SCROLL, a
/// DISTINCT over `*`) are finished on the coordinator, read forward,
/// backward and by position exactly as on the reference (a GROUP BY's
/// is merged in parts: the next test); FOR UPDATE stays refused (0A000).
#[tokio::test]
async fn cursors_the_merge_cannot_read_are_finished_on_the_coordinator() {
    let setup = Setup::start(100);
    let mut pair = setup.pair().await;
    for (declare, fetches) in [
        (
            "DECLARE s SCROLL CURSOR FOR SELECT id, w FROM big ORDER BY w",
            &[
                "FETCH 5 FROM s",
                "FETCH BACKWARD 2 FROM s",
                "FETCH ABSOLUTE 40 FROM s",
                "FETCH PRIOR FROM s",
                "FETCH ALL FROM s",
            ][..],
        ),
        (
            "DECLARE g CURSOR FOR SELECT v, count(*) FROM big GROUP BY v ORDER BY v",
            &["FETCH 3 FROM g", "MOVE 1 IN g", "FETCH ALL FROM g"][..],
        ),
        (
            "DECLARE d CURSOR FOR SELECT DISTINCT * FROM big ORDER BY v DESC, id",
            &["FETCH 2 FROM d", "FETCH ALL FROM d", "FETCH d"][..],
        ),
    ] {
        pair.same_query("BEGIN").await;
        pair.same_query(declare).await;
        for fetch in fetches {
            pair.same_query(fetch).await;
        }
        pair.same_query("COMMIT").await;
    }
    let mut pgshard = setup.pgshard().await;
    assert_eq!(error_of(&mut pgshard, "BEGIN").await, None);
    let update = "DECLARE u CURSOR FOR SELECT id FROM big FOR UPDATE";
    assert_eq!(
        error_of(&mut pgshard, update).await.as_deref(),
        Some("0A000")
    );
    assert_eq!(error_of(&mut pgshard, "ROLLBACK").await, None);
}

/// Cursors over GROUP BY and DISTINCT whose shards sort their groups are
/// merged in parts (about a row per shard held, as a whole fetch is), with
/// the coordinator turned off and with two-phase commit on (where the
/// coordinator cannot finish a cursor): fetched in chunks of every size,
/// MOVEd, against the reference.
#[tokio::test]
async fn grouped_cursors_merge_in_parts() {
    let queries = [
        "SELECT v, count(*), sum(id), min(w) FROM big GROUP BY v ORDER BY v",
        "SELECT DISTINCT v FROM big ORDER BY v DESC",
        "SELECT w, count(*) FROM big GROUP BY w ORDER BY w LIMIT 700 OFFSET 5",
        "SELECT v, count(*) FROM big GROUP BY v ORDER BY count(*) DESC, v",
        "SELECT id % 100 AS b, count(*) FROM big GROUP BY 1 HAVING count(*) > 29 ORDER BY b",
    ];
    let unordered = "SELECT id % 50, max(w), avg(v) FROM big GROUP BY id % 50";
    for general in [REFUSE, "two_phase_commit = true"] {
        let setup = Setup::start_with(3000, general);
        let mut pair = setup.pair().await;
        for (i, query) in queries.iter().chain([&unordered]).enumerate() {
            let ordered = *query != unordered;
            pair.rows_in_order(ordered);
            for chunk in [1, 7, 5000] {
                pair.same_query("BEGIN").await;
                pair.same_query(&format!("DECLARE c{i} CURSOR FOR {query}"))
                    .await;
                if ordered {
                    // Which rows a MOVE skips is fixed only by an order.
                    pair.same_query(&format!("MOVE 3 IN c{i}")).await;
                }
                loop {
                    let seen = pair.same_query(&format!("FETCH {chunk} FROM c{i}")).await;
                    if rows(&seen) == 0 {
                        break;
                    }
                }
                pair.same_query("COMMIT").await;
                pair.same_rows();
            }
        }
    }
}

#[tokio::test]
async fn a_parse_answered_here_comes_before_its_segment() {
    let setup = Setup::start(10);
    let mut pair = setup.pair().await;
    pair.same_query("BEGIN").await;
    let sql = "SELECT id FROM big ORDER BY id";
    pair.same(
        &[
            wire::parse("", sql),
            wire::bind(""),
            wire::describe(b'P', ""),
            wire::execute(),
            wire::sync(),
        ]
        .concat(),
    )
    .await;
}

/// pgjdbc's fetch size in a transaction: Parse, Bind of a named portal,
/// Describe and an Execute with a row limit before the first Sync, then an
/// Execute with a Sync until CommandComplete; and a pipeline that executes
/// the unnamed portal in parts before its one Sync, outside a
/// transaction. Merged rows in parts, PortalSuspended between, as the
/// reference sends them.
#[tokio::test]
async fn row_limited_portals_return_merged_rows_in_parts() {
    let setup = Setup::start(2000);
    let mut pair = setup.pair().await;
    for query in [
        "SELECT id, w FROM big ORDER BY w, id",
        "SELECT id FROM big WHERE v = 1",
        "SELECT id, v FROM big ORDER BY v, id LIMIT 333 OFFSET 5",
        "SELECT count(*), max(w) FROM big",
    ] {
        pair.rows_in_order(query.contains("ORDER BY"));
        for limit in [1, 50, 999] {
            pair.same_query("BEGIN").await;
            let first = [
                wire::parse("", query),
                wire::bind_text("C_1", "", &[]),
                wire::describe(b'P', "C_1"),
                wire::execute_portal("C_1", limit),
                wire::sync(),
            ];
            let mut seen = pair.same(&first.concat()).await;
            while seen.iter().any(|(t, _)| *t == 's') {
                seen = pair
                    .same(&[wire::execute_portal("C_1", limit), wire::sync()].concat())
                    .await;
            }
            pair.same(&[wire::execute_portal("C_1", limit), wire::sync()].concat())
                .await;
            pair.same(&[wire::message(b'C', b"PC_1\0"), wire::sync()].concat())
                .await;
            pair.same_query("COMMIT").await;
            pair.same_rows();
        }
        let mut batch = vec![wire::parse("", query), wire::bind_text("", "", &[])];
        for _ in 0..5 {
            batch.push(wire::execute_portal("", 300));
        }
        batch.push(wire::sync());
        pair.same(&batch.concat()).await;
        pair.same_rows();
    }
}

/// tokio-postgres's portals (`Transaction::bind`, then `query_portal` in
/// a loop): every row once, in order.
#[tokio::test]
async fn tokio_postgres_portals_read_every_row() {
    let setup = Setup::start(5000);
    let mut client = common::connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    let txn = client.transaction().await.unwrap();
    let statement = txn
        .prepare("SELECT id FROM big WHERE id > $1 ORDER BY id DESC")
        .await
        .unwrap();
    let portal = txn.bind(&statement, &[&10i64]).await.unwrap();
    let mut ids = Vec::new();
    loop {
        let rows = txn.query_portal(&portal, 777).await.unwrap();
        if rows.is_empty() {
            break;
        }
        ids.extend(rows.iter().map(|row| row.get::<_, i64>(0)));
    }
    let want: Vec<i64> = (11..=5000).rev().collect();
    assert_eq!(ids, want);
    txn.commit().await.unwrap();
}

/// In transaction mode a WITH HOLD cursor keeps its server (on one
/// database too, where nothing is routed): other statements and other
/// clients meanwhile, then the rest of its rows; after CLOSE the server
/// goes back to the pool.
#[tokio::test]
async fn with_hold_cursors_keep_their_server_in_transaction_mode() {
    let cluster = common::Cluster::start("default_pool_size = 2\npooler_mode = \"transaction\"");
    let client = cluster.connect().await;
    let other = cluster.connect().await;
    client
        .batch_execute("DECLARE h CURSOR WITH HOLD FOR SELECT g FROM generate_series(1, 10) g")
        .await
        .unwrap();
    assert_eq!(
        common::column(&client, "FETCH 3 FROM h", "g").await,
        ["1", "2", "3"]
    );
    for _ in 0..5 {
        assert_eq!(common::column(&other, "SELECT 1 AS x", "x").await, ["1"]);
        assert_eq!(common::column(&client, "SELECT 2 AS x", "x").await, ["2"]);
    }
    let rest = common::column(&client, "FETCH ALL FROM h", "g").await;
    assert_eq!(rest, ["4", "5", "6", "7", "8", "9", "10"]);
    client.batch_execute("CLOSE h").await.unwrap();
    let err = client.simple_query("FETCH h").await.unwrap_err();
    assert_eq!(common::code(&err), Some("34000"));
}

/// A portal the merge cannot read in parts (DISTINCT over `*`), with
/// `cross_shard_finish = "refuse"`, is refused at its row-limited Execute
/// after the Sync, which ends the transaction; what tokio-postgres
/// pipelines after (the portal's Close, ROLLBACK, the next BEGIN) finds
/// nothing running, so the next transaction spans shards. By default the
/// coordinator reads it in parts: every row.
#[tokio::test]
async fn a_refused_portal_ends_its_transaction_cleanly() {
    for (general, grouped) in [(REFUSE, Err(Some("0A000".to_owned()))), ("", Ok(500))] {
        let outcomes = portal_outcomes(general).await;
        assert_eq!(outcomes, [grouped, Ok(72), Ok(7)], "{general}");
    }
}

/// How reading a DISTINCT over `*`, a filtered SELECT, then a GROUP BY, in
/// portals of 10 rows inside transactions ends: the rows read, or the
/// SQLSTATE.
async fn portal_outcomes(general: &str) -> Vec<Result<usize, Option<String>>> {
    let setup = Setup::start_with(500, general);
    let mut client = common::connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    let mut outcomes = Vec::new();
    for sql in [
        "SELECT DISTINCT * FROM big",
        "SELECT id FROM big WHERE v = 1",
        // Groups the shards sort: merged in parts either way.
        "SELECT v, count(*) FROM big GROUP BY v",
    ] {
        let result: Result<usize, tokio_postgres::Error> = async {
            let txn = client.transaction().await?;
            let statement = txn.prepare(sql).await?;
            let portal = txn.bind(&statement, &[]).await?;
            let mut n = 0;
            loop {
                let rows = txn.query_portal(&portal, 10).await?;
                if rows.is_empty() {
                    break;
                }
                n += rows.len();
            }
            txn.commit().await?;
            Ok(n)
        }
        .await;
        if let Err(error) = &result {
            eprintln!("{sql}: {error:?}");
        }
        outcomes.push(result.map_err(|e| common::code(&e).map(str::to_owned)));
    }
    outcomes
}
