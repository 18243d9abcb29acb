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
        let servers = common::servers(3);
        let fill = |table: &str, filter: &str| {
            format!(
                "INSERT INTO {table} SELECT g, g % 7, md5(g::text) FROM generate_series(1, {rows}) g {filter}"
            )
        };
        for i in 0..2 {
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
            servers[i].psql(&format!("shard_{i}"), &sql).unwrap();
        }
        let sql = format!(
            "SET ROLE app; CREATE TABLE big (id bigint PRIMARY KEY, v int, w text); {};",
            fill("big", "")
        );
        servers[2].psql("shard_2", &sql).unwrap();
        let config = sharded_config(&servers[..2], "", SHARDING);
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
}

impl Pair {
    /// Send `messages` to both, read to ReadyForQuery, and compare; the
    /// pgshard side's messages.
    async fn same(&mut self, messages: &[u8]) -> Vec<Seen> {
        let got = exchange(&mut self.pgshard, messages).await;
        let want = exchange(&mut self.reference, messages).await;
        assert_eq!(
            got,
            want,
            "pgshard differs from the reference after {:?}",
            String::from_utf8_lossy(messages)
        );
        got
    }

    async fn same_query(&mut self, sql: &str) -> Vec<Seen> {
        self.same(&wire::query(sql)).await
    }
}

async fn exchange(wire: &mut Wire, messages: &[u8]) -> Vec<Seen> {
    wire.send(messages).await;
    seen(&wire.until_ready().await)
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

/// What a merged cursor cannot do is refused with 0A000 naming why; a
/// cursor nobody declared gets Postgres's own error.
#[tokio::test]
async fn what_cannot_merge_in_parts_is_refused() {
    let setup = Setup::start(100);
    let mut pgshard = setup.pgshard().await;
    assert_eq!(
        error_of(&mut pgshard, "FETCH ALL FROM nowhere")
            .await
            .as_deref(),
        Some("34000")
    );
    for (declare, fetch) in [
        ("DECLARE s SCROLL CURSOR FOR SELECT id FROM big", None),
        (
            "DECLARE g CURSOR FOR SELECT v, count(*) FROM big GROUP BY v",
            None,
        ),
        ("DECLARE d CURSOR FOR SELECT DISTINCT v FROM big", None),
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
    // Outside a transaction block without WITH HOLD: Postgres's error.
    let outside = error_of(&mut pgshard, "DECLARE x CURSOR FOR SELECT id FROM big").await;
    assert_eq!(outside.as_deref(), Some("25P01"));
}

/// A Parse pgshard answered itself (no server attached in a deferred
/// transaction) keeps its place before the replies of the keyless segment
/// that follows it (psycopg's DECLARE and FETCH in a transaction).
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
