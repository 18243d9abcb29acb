//! Data-modifying WITH across shards (issue 34): each WITH query runs on
//! its shards inside one transaction spanning them, its RETURNING rows
//! gathered on the coordinator, the rest finished there (a SELECT) or its
//! rows sent to their shards (an INSERT ... SELECT). A seeded differential
//! test runs generated statements through pgshard on 2 and 4 shards and on
//! one reference Postgres and compares each one's tag and rows (or error
//! code), then every table. Hand-picked cases: a block rolled back,
//! two-phase commit, the gather limit, a shard down (nothing committed),
//! the snapshot rule's refusals; and FOR UPDATE across shards: a second
//! connection blocked by the locks taken through pgshard on each shard.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[allow(dead_code)]
mod cross_shard_diff {
    pub mod data;
}

use common::{connect, sharded_config, USERS};
use cross_shard_diff::data::{self, Data};
use integration::{PgServer, TestProxy};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::{Client, SimpleQueryMessage};

/// `made` (sharded by `id`), filled with rows to update and delete; on a
/// shard a hash partition of its remainder.
fn made_schema(partition: Option<(usize, usize)>) -> String {
    let columns = "(id bigint NOT NULL, v text, n int, PRIMARY KEY (id))";
    let fill = "INSERT INTO made SELECT g, 'm' || g, g % 10 FROM generate_series(1, 300) g";
    match partition {
        None => format!("CREATE TABLE made {columns}; {fill}"),
        Some((n, i)) => format!(
            "CREATE TABLE made {columns} PARTITION BY HASH (id); \
             CREATE TABLE made_on_shard PARTITION OF made FOR VALUES WITH (MODULUS {n}, REMAINDER {i}); \
             CREATE TEMP TABLE fill AS SELECT g AS id FROM generate_series(1, 300) g \
               WHERE satisfies_hash_partition('made'::regclass, {n}, {i}, g::bigint); \
             INSERT INTO made SELECT id, 'm' || id, id % 10 FROM fill"
        ),
    }
}

struct Setup {
    servers: Vec<PgServer>,
    _reference: PgServer,
    direct: Client,
    shards: Vec<Client>,
    proxy: TestProxy,
    _data: Data,
}

async fn start(n: usize, general: &str, seed: u64) -> Setup {
    common::watch_proxy_panics();
    let data = Data::generate(seed);
    let mut servers = common::servers(n + 1);
    let reference = servers.pop().unwrap();
    let mut shards = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let db = format!("shard_{i}");
        shards.push(connect(server.port(), "app", "app-pw", &db).await.unwrap());
    }
    let direct = connect(reference.port(), "app", "app-pw", &format!("shard_{n}"))
        .await
        .unwrap();
    data::load(&data, &shards, &direct).await;
    for (i, shard) in shards.iter().enumerate() {
        shard
            .batch_execute(&made_schema(Some((n, i))))
            .await
            .unwrap();
    }
    direct.batch_execute(&made_schema(None)).await.unwrap();
    let config = sharded_config(&servers, general, data::SHARDING);
    let proxy = TestProxy::start(&config, USERS).unwrap();
    Setup {
        servers,
        _reference: reference,
        direct,
        shards,
        proxy,
        _data: data,
    }
}

async fn client(setup: &Setup) -> Client {
    connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// A statement's outcome: its tags and rows (each row's columns joined;
/// sorted unless the statement orders them), or its error's code.
type Outcome = Result<(Vec<String>, Vec<String>), String>;

/// `sql` on `client`, retried while the proxy's read of the move records
/// is late (it then refuses keyless statements for a moment).
async fn query(
    client: &Client,
    sql: &str,
) -> Result<Vec<SimpleQueryMessage>, tokio_postgres::Error> {
    let mut tries = 0;
    loop {
        match client.simple_query(sql).await {
            Err(e) if common::describe(&e).contains("has not read lately") && tries < 20 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            result => return result,
        }
    }
}

async fn outcome(client: &Client, sql: &str) -> Outcome {
    match query(client, sql).await {
        Ok(messages) => {
            let (mut tags, mut rows) = (Vec::new(), Vec::new());
            for message in messages {
                match message {
                    SimpleQueryMessage::CommandComplete(n) => tags.push(n.to_string()),
                    SimpleQueryMessage::Row(row) => rows.push(
                        (0..row.len())
                            .map(|i| row.get(i).unwrap_or("NULL"))
                            .collect::<Vec<_>>()
                            .join("|"),
                    ),
                    _ => {}
                }
            }
            if !sql.contains("ORDER BY") {
                rows.sort();
            }
            Ok((tags, rows))
        }
        Err(e) => {
            eprintln!("{sql}: {}", common::describe(&e));
            Err(common::code(&e).unwrap_or("?").to_owned())
        }
    }
}

async fn message(client: &Client, sql: &str) -> (String, String) {
    let e = match query(client, sql).await {
        Ok(messages) => panic!("{sql}: answered {messages:?}"),
        Err(e) => e,
    };
    (
        common::code(&e).unwrap_or("?").to_owned(),
        common::describe(&e),
    )
}

async fn rows(client: &Client, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    for message in query(client, sql).await.unwrap() {
        if let SimpleQueryMessage::Row(row) = message {
            out.push(row.get(0).unwrap_or("NULL").to_owned());
        }
    }
    out
}

const TABLES: [&str; 3] = [
    "SELECT users::text FROM users ORDER BY id",
    "SELECT orders::text FROM orders ORDER BY user_id, id",
    "SELECT made::text FROM made ORDER BY id",
];

/// Every row of the written tables through `client`, in a fixed order.
async fn contents(client: &Client) -> Vec<String> {
    let mut out = Vec::new();
    for sql in TABLES {
        out.extend(rows(client, sql).await);
    }
    out
}

/// The tables through pgshard and on the reference are the same.
async fn same_tables(setup: &Setup, proxy: &Client, after: &str) {
    let (got, want) = (contents(proxy).await, contents(&setup.direct).await);
    assert!(got == want, "tables differ after {after}");
}

/// A generated statement whose WITH writes; `base` makes its keys fresh,
/// `id` is a user's.
fn statement(rng: &mut Xoshiro256PlusPlus, base: i64, id: i64) -> String {
    let n = rng.random_range(0..=100);
    let k = rng.random_range(1..=5);
    let g = rng.random_range(0..8);
    match rng.random_range(0..12) {
        0 => format!("WITH d AS (DELETE FROM made WHERE id % 23 = {g} RETURNING id, v) SELECT count(*), round(avg(id), 2), string_agg(v, ',' ORDER BY id) FROM d"),
        1 => format!("WITH u AS (UPDATE users SET score = coalesce(score, 0) + {k} WHERE grp = {g} RETURNING id, score) SELECT count(*), sum(score), round(avg(score), 2) FROM u"),
        2 => format!("WITH moved AS (DELETE FROM users WHERE score < {n} AND grp = {g} RETURNING id, name, score) INSERT INTO made (id, v, n) SELECT id + {base}, name, score FROM moved"),
        3 => format!("WITH moved AS (DELETE FROM orders WHERE qty = {k} AND price < {n} RETURNING *) INSERT INTO made (id, v, n) SELECT {base} + row_number() OVER (ORDER BY user_id, id), note, qty FROM moved"),
        4 => format!("WITH u AS (UPDATE orders SET qty = coalesce(qty, 0) + 1 WHERE price > {n} RETURNING user_id, qty) SELECT user_id, sum(qty) FROM u GROUP BY user_id ORDER BY 2 DESC, 1 LIMIT 5"),
        5 => format!("WITH a AS (UPDATE users SET active = NOT active WHERE id % 5 = {k} RETURNING id), b AS (DELETE FROM orders WHERE qty = {g} RETURNING user_id, id) SELECT (SELECT count(*) FROM a), (SELECT count(DISTINCT user_id) FROM b)"),
        6 => format!("WITH d AS (DELETE FROM made WHERE n = {g} RETURNING id, v, n) SELECT id, v FROM d ORDER BY id DESC LIMIT 7"),
        7 => format!("WITH u AS (UPDATE made SET n = n + 1 WHERE id % 9 = {g} RETURNING id, n) SELECT u.id, u.n, users.name FROM u LEFT JOIN users ON users.id = u.id - 100 ORDER BY u.id"),
        8 => format!("WITH d AS (DELETE FROM users WHERE id = {id} RETURNING *) SELECT round(avg(score), 2), count(*) FROM d"),
        9 => format!("WITH u AS (UPDATE users SET score = score / (grp - {g}) WHERE grp IN ({g}, {k}) RETURNING id) SELECT count(*) FROM u"),
        10 => format!("WITH i AS (INSERT INTO made (id, v, n) VALUES ({base}, 'ins', {g}) RETURNING id, v) SELECT i.id, i.v, t.team FROM i LEFT JOIN teams t ON t.grp = {g}"),
        _ => format!("WITH u AS (UPDATE made SET v = v || 'x' WHERE n = {g} RETURNING id, v) SELECT row_number() OVER (ORDER BY id DESC), id, v FROM u ORDER BY id LIMIT 4"),
    }
}

/// `count` generated statements through pgshard on `n` shards and on the
/// reference: the same tags and rows (or error codes), and the same tables
/// after every 8 and at the end.
async fn differential(n: usize, seed: u64, count: usize) {
    let setup = start(n, "cross_shard_finish = \"coordinator\"", seed).await;
    let proxy = client(&setup).await;
    let ids = setup._data.user_ids();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (mut failures, mut answered) = (Vec::new(), 0);
    for i in 0..count {
        let id = ids[rng.random_range(0..ids.len())];
        let sql = statement(&mut rng, 1_000_000 * (i as i64 + 1), id);
        let got = outcome(&proxy, &sql).await;
        let want = outcome(&setup.direct, &sql).await;
        answered += usize::from(want.is_ok());
        if got != want {
            failures.push(format!(
                "{sql}\n  pgshard:   {got:?}\n  reference: {want:?}"
            ));
        }
        if i % 8 == 7 || i + 1 == count {
            same_tables(&setup, &proxy, &sql).await;
        }
    }
    assert!(
        failures.is_empty(),
        "seed {seed}, {n} shards:\n{}",
        failures.join("\n")
    );
    // Most statements are answered, not errors on both sides.
    assert!(answered * 4 > count * 3, "{answered} of {count} answered");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_in_with_match_one_postgres_on_2_shards() {
    differential(2, 3461, 40).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_in_with_match_one_postgres_on_4_shards() {
    differential(4, 3462, 40).await;
}

/// The same script through pgshard and on the reference: the same
/// outcomes, then the same tables.
async fn same_script(setup: &Setup, proxy: &Client, script: &[&str]) {
    for sql in script {
        let got = outcome(proxy, sql).await;
        let want = outcome(&setup.direct, sql).await;
        assert_eq!(got, want, "{sql}\n  in {script:?}");
    }
    same_tables(setup, proxy, &format!("{script:?}")).await;
}

/// Orders of `qty` moved into `made` under fresh keys from `base`.
fn moved(qty: i32, base: i64) -> String {
    format!(
        "WITH moved AS (DELETE FROM orders WHERE qty = {qty} RETURNING *) INSERT INTO made (id, v, n) \
         SELECT {base} + row_number() OVER (ORDER BY user_id, id), note, qty FROM moved"
    )
}

const COUNTED: &str = "WITH u AS (UPDATE made SET n = n + 10 WHERE n < 2 RETURNING id, n) \
                       SELECT count(*), round(avg(n), 2) FROM u";

#[tokio::test(flavor = "multi_thread")]
async fn blocks_two_phase_and_the_snapshot_rule() {
    let setup = start(
        2,
        "cross_shard_finish = \"coordinator\"\ntwo_phase_commit = true\n\
         two_phase_commit_wal_dir = \"/tmp/pgshard-tests-2pc-ctewrites\"",
        3463,
    )
    .await;
    let proxy = client(&setup).await;
    // A block rolled back leaves nothing anywhere; one committed (two-phase)
    // keeps its rows, and later statements see the block's own writes.
    let (first, second, third) = (moved(3, 10_000), moved(3, 20_000), moved(4, 30_000));
    let script = [
        "BEGIN",
        &first,
        COUNTED,
        "SELECT count(*), sum(n) FROM made",
        "ROLLBACK",
        "BEGIN",
        "UPDATE orders SET qty = 3 WHERE user_id < 40",
        &second,
        COUNTED,
        "COMMIT",
        COUNTED,
        &third,
    ];
    same_script(&setup, &proxy, &script).await;
    for shard in &setup.shards {
        assert_eq!(
            rows(shard, "SELECT count(*) FROM pg_prepared_xacts").await,
            ["0"]
        );
    }
    // The snapshot rule: another part reading or writing a table a WITH
    // query writes, two WITH queries writing one table, a WITH query that
    // reads another: refused before anything runs.
    for (sql, says) in [
        (
            "WITH d AS (DELETE FROM made WHERE n = 1 RETURNING id) SELECT count(*), (SELECT count(*) FROM made) FROM d",
            "snapshot",
        ),
        (
            "WITH d AS (DELETE FROM made WHERE n = 1 RETURNING id) SELECT round(avg(d.id), 1) FROM d JOIN made m ON m.id = d.id + 1",
            "snapshot",
        ),
        (
            "WITH d AS (DELETE FROM made WHERE n = 1 RETURNING *) INSERT INTO made SELECT id + 9000, v, n FROM d",
            "snapshot",
        ),
        (
            "WITH a AS (UPDATE made SET n = 0 WHERE n = 1 RETURNING id), b AS (DELETE FROM made WHERE n = 2 RETURNING id) SELECT round(avg(id), 1) FROM a",
            "two data-modifying",
        ),
        (
            "WITH a AS (UPDATE users SET score = 0 WHERE grp = 1 RETURNING id), b AS (DELETE FROM made WHERE id IN (SELECT id FROM users) RETURNING id) SELECT round(avg(id), 1) FROM b",
            "snapshot",
        ),
        (
            "WITH s AS (SELECT id FROM users), b AS (DELETE FROM made WHERE id IN (SELECT id FROM s) RETURNING id) SELECT round(avg(id), 1) FROM b",
            "reads the WITH query",
        ),
        (
            "WITH i AS (INSERT INTO made (id, v) VALUES (70001, 'a'), (70002, 'b') RETURNING id) SELECT round(avg(id), 1) FROM i",
            "multi-row INSERT across shards",
        ),
        (
            "WITH t AS (UPDATE teams SET weight = 0 RETURNING grp) SELECT count(*) FROM t JOIN users USING (grp)",
            "not a sharded table",
        ),
    ] {
        let (code, text) = message(&proxy, sql).await;
        assert_eq!(code, "0A000", "{sql}: {text}");
        assert!(text.contains(says), "{sql}: {text}");
    }
    // Postgres's own refusal of a WITH query without RETURNING named.
    let sql = "WITH d AS (DELETE FROM made WHERE n = 1) SELECT round(avg(id), 1) FROM d";
    let (code, text) = message(&proxy, sql).await;
    assert_eq!(code, "0A000", "{text}");
    assert_eq!(outcome(&setup.direct, sql).await, Err("0A000".into()));
    same_tables(&setup, &proxy, "the refusals").await;
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_limit_and_a_shard_down_leave_nothing() {
    let mut setup = start(
        2,
        "cross_shard_finish = \"coordinator\"\ncross_shard_gather_limit = { rows = 30, bytes = 100000 }",
        3464,
    )
    .await;
    let proxy = client(&setup).await;
    let sql =
        "WITH d AS (DELETE FROM made WHERE id > 100 RETURNING id) SELECT round(avg(id), 1) FROM d";
    let (code, text) = message(&proxy, sql).await;
    assert_eq!(code, "54000", "{text}");
    assert!(text.contains("cross_shard_gather_limit"), "{text}");
    same_tables(&setup, &proxy, "the limit").await;
    // Under the bound it runs.
    let sql =
        "WITH d AS (DELETE FROM made WHERE id > 290 RETURNING id) SELECT round(avg(id), 1) FROM d";
    let got = outcome(&proxy, sql).await;
    assert_eq!(got, outcome(&setup.direct, sql).await);
    same_tables(&setup, &proxy, sql).await;
    // A shard down: a clear error, and nothing on the other shard.
    let before = rows(&setup.shards[0], "SELECT count(*) FROM made").await;
    setup.servers[1].stop().unwrap();
    let sql =
        "WITH d AS (DELETE FROM made WHERE n = 4 RETURNING id) SELECT round(avg(id), 1) FROM d";
    let (code, text) = message(&proxy, sql).await;
    assert!(
        code.starts_with("08") || code == "57P01" || code == "53300",
        "{code}: {text}"
    );
    assert_eq!(
        rows(&setup.shards[0], "SELECT count(*) FROM made").await,
        before
    );
    assert_eq!(common::proxy_panics(), 0);
}

/// On each shard, a row of `made` with `n = 5` is locked (a second
/// connection's `FOR UPDATE` of it gives up after `lock_timeout`: 55P03),
/// or is not (`locked`); and so for a row of `users` with `grp = 5`
/// (`users_locked`).
async fn locks_on_each_shard(setup: &Setup, locked: bool, users_locked: bool) {
    for (i, shard) in setup.shards.iter().enumerate() {
        shard
            .batch_execute("SET lock_timeout = '200ms'")
            .await
            .unwrap();
        for (sql, want) in [
            (
                "SELECT id FROM made WHERE n = 5 ORDER BY id LIMIT 1",
                locked,
            ),
            (
                "SELECT id FROM users WHERE grp = 5 ORDER BY id LIMIT 1",
                users_locked,
            ),
        ] {
            let id = rows(shard, sql).await[0].clone();
            let table = if sql.contains("made") {
                "made"
            } else {
                "users"
            };
            let lock = format!("SELECT id FROM {table} WHERE id = {id} FOR UPDATE");
            let got = shard.simple_query(&lock).await;
            match want {
                true => {
                    let e = got.expect_err(&format!("shard {i}: {lock} was not blocked"));
                    assert_eq!(common::code(&e), Some("55P03"), "shard {i}: {e:?}");
                }
                false => assert!(got.is_ok(), "shard {i}: {lock}: {got:?}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn for_update_locks_rows_on_each_shard() {
    let setup = start(2, "cross_shard_finish = \"coordinator\"", 3465).await;
    let proxy = client(&setup).await;
    // Streamed: each shard locks the rows it returns.
    let streamed = "SELECT id, v FROM made WHERE n = 5 ORDER BY id FOR UPDATE";
    // Finished on the coordinator (a join off the keys): the rows of made
    // its gather reads are locked, not those of users.
    let gathered = "SELECT m.id, u.name FROM made m JOIN users u ON u.grp = m.n \
                    WHERE m.n = 5 ORDER BY m.id, u.id FOR UPDATE OF m";
    for sql in [streamed, gathered] {
        let want = outcome(&setup.direct, sql).await;
        assert!(
            matches!(&want, Ok((_, rows)) if !rows.is_empty()),
            "{want:?}"
        );
        assert_eq!(outcome(&proxy, sql).await, want, "{sql}");
        proxy.batch_execute("BEGIN").await.unwrap();
        assert_eq!(outcome(&proxy, sql).await, want, "{sql} in a block");
        locks_on_each_shard(&setup, true, false).await;
        proxy.batch_execute("ROLLBACK").await.unwrap();
        locks_on_each_shard(&setup, false, false).await;
    }
    // Without OF, every gathered table of the statement's level is locked.
    proxy.batch_execute("BEGIN").await.unwrap();
    let all = gathered.replace("FOR UPDATE OF m", "FOR SHARE");
    assert_eq!(
        outcome(&proxy, &all).await,
        outcome(&setup.direct, &all).await
    );
    locks_on_each_shard(&setup, true, true).await;
    proxy.batch_execute("ROLLBACK").await.unwrap();
    // What one Postgres refuses stays refused, with its code; what pgshard
    // cannot lock exactly is refused.
    for (sql, code) in [
        ("SELECT count(*) FROM made FOR UPDATE", "0A000"),
        (
            "SELECT id FROM made ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED",
            "0A000",
        ),
        (
            "SELECT m.id FROM made m JOIN users u ON u.grp = m.n LIMIT 3 FOR UPDATE NOWAIT",
            "0A000",
        ),
        (
            "SELECT * FROM (SELECT id FROM made) s JOIN users u ON u.grp = s.id FOR UPDATE",
            "0A000",
        ),
    ] {
        let (got, text) = message(&proxy, sql).await;
        assert_eq!(got, code, "{sql}: {text}");
    }
    same_tables(&setup, &proxy, "FOR UPDATE").await;
    assert_eq!(common::proxy_panics(), 0);
}
