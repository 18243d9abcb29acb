//! Writes whose subqueries read across shards (issue 34): the subquery runs
//! first on the coordinator path and its result is carried into the write.
//! A seeded differential test runs generated UPDATE / DELETE / INSERT
//! statements through pgshard on 2 and 4 shards and on one reference
//! Postgres and compares each statement's tag (or error code) and then the
//! tables' whole contents; hand-picked cases cover NULLs in NOT IN, empty
//! subqueries, a subquery that fails, more rows than a scalar takes, the
//! gather bound, a block rolled back, two-phase commit, correlated
//! subqueries (refused), the extended protocol (refused, not done yet) and
//! `cross_shard_finish = "refuse"`.

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

/// `n` shards and a reference loaded with `seed`'s rows, pgshard over the
/// shards with `general` lines.
struct Setup {
    _servers: Vec<PgServer>,
    _reference: PgServer,
    direct: Client,
    proxy: TestProxy,
    data: Data,
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
    let config = sharded_config(&servers, general, data::SHARDING);
    let proxy = TestProxy::start(&config, USERS).unwrap();
    Setup {
        _servers: servers,
        _reference: reference,
        direct,
        proxy,
        data,
    }
}

async fn client(setup: &Setup) -> Client {
    connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// A statement's outcome: its command tags, or its error's code.
type Outcome = Result<Vec<String>, String>;

/// `sql` on `client`. Under load the proxy's read of the move records may
/// be late: it then refuses keyless statements for a moment and says to
/// retry, which this does.
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
    let result = query(client, sql).await;
    match result {
        Ok(messages) => Ok(messages
            .into_iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::CommandComplete(n) => Some(n.to_string()),
                _ => None,
            })
            .collect()),
        Err(e) => {
            eprintln!("{sql}: {}", common::describe(&e));
            Err(common::code(&e).unwrap_or("?").to_owned())
        }
    }
}

async fn message(client: &Client, sql: &str) -> (String, String) {
    let e = query(client, sql).await.unwrap_err();
    (
        common::code(&e).unwrap_or("?").to_owned(),
        common::describe(&e),
    )
}

/// Every row of the written tables, in a fixed order, as text.
async fn contents(client: &Client) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "SELECT users::text FROM users ORDER BY id",
        "SELECT orders::text FROM orders ORDER BY user_id, id",
    ] {
        for message in query(client, sql).await.unwrap() {
            if let SimpleQueryMessage::Row(row) = message {
                out.push(row.get(0).unwrap_or("NULL").to_owned());
            }
        }
    }
    out
}

/// A generated write whose subquery reads across shards.
fn statement(rng: &mut Xoshiro256PlusPlus, ids: &[i64], fresh: i64) -> String {
    let id = ids[rng.random_range(0..ids.len())];
    let other = ids[rng.random_range(0..ids.len())];
    let n = rng.random_range(0..=100);
    let q = rng.random_range(1..=10);
    let g = rng.random_range(0..8);
    let note = ["gift", "rush", "", "fragile", "none"][rng.random_range(0..5)];
    match rng.random_range(0..14) {
        0 => format!("UPDATE users SET active = NOT coalesce(active, false) WHERE id = {id} AND score > (SELECT avg(score) FROM users)"),
        1 => format!("UPDATE users SET score = (SELECT max(qty) FROM orders WHERE note = '{note}') WHERE id = {id}"),
        2 => format!("DELETE FROM orders WHERE qty NOT IN (SELECT grp FROM users WHERE score < {n})"),
        3 => format!("DELETE FROM orders WHERE qty NOT IN (SELECT grp FROM users WHERE score < {n} AND grp IS NOT NULL)"),
        4 => format!("UPDATE orders SET note = 'n{n}' WHERE user_id = {id} AND qty > ALL (SELECT grp FROM users WHERE score > {n})"),
        5 => format!("DELETE FROM users WHERE id = {id} AND EXISTS (SELECT 1 FROM orders WHERE price > {n}0 AND note = '{note}')"),
        6 => format!("UPDATE users SET amount = (SELECT sum(price) FROM orders WHERE qty = {q}) WHERE grp = {g}"),
        7 => format!("UPDATE users SET grp = grp + 1 WHERE score IN (SELECT qty * 10 FROM orders WHERE note = '{note}')"),
        8 => format!("DELETE FROM orders WHERE price < (SELECT min(amount) FROM users WHERE grp = {g}) AND qty = {q}"),
        9 => format!("UPDATE users SET name = (SELECT name FROM users WHERE id = {other}) WHERE id = {id}"),
        10 => format!("UPDATE users SET score = (SELECT count(*) FROM orders WHERE qty > {q})::int WHERE id = {id} RETURNING id, score"),
        11 => format!("INSERT INTO users (id, grp, score) VALUES ({fresh}, {g}, (SELECT count(*) FROM orders WHERE qty = {q})::int)"),
        12 => format!("DELETE FROM orders WHERE user_id = {id} AND NOT EXISTS (SELECT 1 FROM users WHERE grp = {g} AND score > {n})"),
        _ => format!("UPDATE orders SET qty = qty + 1 WHERE qty = ANY (SELECT grp FROM users WHERE name = 'bob' OR score = {n})"),
    }
}

/// `count` generated writes through pgshard on `n` shards and on the
/// reference: the same tags (or error codes) statement by statement, and
/// the same tables after every 10 and at the end.
async fn differential(n: usize, seed: u64, count: usize) {
    let setup = start(n, "cross_shard_finish = \"coordinator\"", seed).await;
    let proxy = client(&setup).await;
    let ids = setup.data.user_ids();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut failures = Vec::new();
    for i in 0..count {
        let sql = statement(&mut rng, &ids, 100_000 + i as i64);
        let got = outcome(&proxy, &sql).await;
        let want = outcome(&setup.direct, &sql).await;
        assert!(want.is_ok(), "{sql}: the reference failed: {want:?}");
        if got != want {
            failures.push(format!(
                "{sql}\n  pgshard:   {got:?}\n  reference: {want:?}"
            ));
        }
        if i % 10 == 9 || i + 1 == count {
            let (got, want) = (contents(&proxy).await, contents(&setup.direct).await);
            assert!(
                got == want,
                "tables differ after {sql} (seed {seed}, {n} shards):\n{}",
                failures.join("\n")
            );
        }
    }
    assert!(
        failures.is_empty(),
        "seed {seed}, {n} shards:\n{}",
        failures.join("\n")
    );
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn carried_writes_match_one_postgres_on_2_shards() {
    differential(2, 3401, 60).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn carried_writes_match_one_postgres_on_4_shards() {
    differential(4, 3402, 60).await;
}

/// The same script through pgshard and on the reference: the same
/// outcomes, then the same tables.
async fn same_script(setup: &Setup, proxy: &Client, script: &[&str]) {
    for sql in script {
        let got = outcome(proxy, sql).await;
        let want = outcome(&setup.direct, sql).await;
        assert_eq!(got, want, "{sql}\n  in {script:?}");
    }
    assert!(
        contents(proxy).await == contents(&setup.direct).await,
        "tables differ after {script:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn nulls_empty_sets_errors_and_blocks() {
    let setup = start(2, "cross_shard_finish = \"coordinator\"", 3403).await;
    let proxy = client(&setup).await;
    let id = setup.data.user_ids()[7];
    let script = [
        // A NULL in NOT IN's set: no row; an empty set: every row.
        "UPDATE orders SET note = 'in' WHERE qty NOT IN (SELECT grp FROM users)",
        "UPDATE orders SET note = 'empty' WHERE qty NOT IN (SELECT grp FROM users WHERE false)",
        "DELETE FROM orders WHERE qty IN (SELECT grp FROM users WHERE score > 1000)",
        "UPDATE users SET score = (SELECT max(score) FROM users WHERE false)",
        "UPDATE users SET active = EXISTS (SELECT 1 FROM orders WHERE qty > 100)",
        "UPDATE orders SET qty = 0 WHERE qty >= ALL (SELECT qty FROM orders WHERE qty IS NOT NULL)",
    ];
    same_script(&setup, &proxy, &script).await;
    // A block rolled back leaves nothing anywhere; one committed keeps it.
    let update =
        format!("UPDATE users SET score = (SELECT count(*) FROM orders)::int WHERE id = {id}");
    let script = [
        "BEGIN",
        update.as_str(),
        "DELETE FROM orders WHERE user_id IN (SELECT id FROM users WHERE score > 50) AND qty NOT IN (SELECT grp FROM users WHERE grp IS NOT NULL)",
        "SELECT count(*) FROM orders",
        "ROLLBACK",
        "BEGIN",
        "UPDATE users SET grp = 0 WHERE score < (SELECT avg(score) FROM users)",
        "COMMIT",
    ];
    same_script(&setup, &proxy, &script).await;
    // A subquery that fails fails the statement, inside a block too.
    let failing = format!(
        "UPDATE users SET score = 1 WHERE id = {id} AND score > (SELECT 1 / (count(*) - count(*)) FROM orders)"
    );
    let many = format!("UPDATE users SET score = (SELECT score FROM users WHERE score IS NOT NULL) WHERE id = {id}");
    let script = [
        failing.as_str(),
        many.as_str(),
        "BEGIN",
        many.as_str(),
        "SELECT 1",
        "ROLLBACK",
    ];
    same_script(&setup, &proxy, &script).await;
    assert_eq!(outcome(&proxy, "SELECT 1").await, Ok(vec!["1".to_owned()]));
    // A correlated subquery that reads across shards: refused, clearly.
    let (code, text) = message(
        &proxy,
        "UPDATE users u SET score = 1 WHERE score > (SELECT avg(qty) FROM orders o WHERE o.qty = u.grp)",
    )
    .await;
    assert_eq!(code, "0A000", "{text}");
    assert!(text.contains("correlated"), "{text}");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gather_limit_the_extended_protocol_and_refuse_mode() {
    let setup = start(
        2,
        "cross_shard_finish = \"coordinator\"\ncross_shard_gather_limit = { rows = 20, bytes = 100000 }",
        3404,
    )
    .await;
    let proxy = client(&setup).await;
    let sql = "UPDATE users SET score = 0 WHERE score > (SELECT avg(score) FROM users)";
    let (code, text) = message(&proxy, sql).await;
    assert_eq!(code, "54000", "{text}");
    assert!(text.contains("cross_shard_gather_limit.rows"), "{text}");
    // Nothing was written, and the session goes on.
    assert!(contents(&proxy).await == contents(&setup.direct).await);
    let keyed = "UPDATE users SET score = (SELECT count(*) FROM teams)::int WHERE id = 1";
    assert_eq!(
        outcome(&proxy, keyed).await,
        outcome(&setup.direct, keyed).await
    );
    // The extended protocol does not run them first yet: refused, saying so.
    let bound =
        "UPDATE users SET score = 0 WHERE id = $1 AND score > (SELECT avg(score) FROM users)";
    let e = proxy.execute(bound, &[&1i64]).await.unwrap_err();
    assert_eq!(common::code(&e), Some("0A000"), "{}", common::describe(&e));
    assert!(common::describe(&e).contains("not yet in the extended protocol"));

    let setup = start(2, "cross_shard_finish = \"refuse\"", 3405).await;
    let proxy = client(&setup).await;
    let (code, text) = message(&proxy, sql).await;
    assert_eq!(code, "0A000", "{text}");
    assert!(text.contains("cannot combine query levels"), "{text}");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_phase_blocks_and_implicit_writes() {
    let setup = start(
        2,
        "cross_shard_finish = \"coordinator\"\ntwo_phase_commit = true\n\
         two_phase_commit_wal_dir = \"/tmp/pgshard-tests-2pc-crosswrite\"",
        3406,
    )
    .await;
    let proxy = client(&setup).await;
    let id = setup.data.user_ids()[3];
    let keyed =
        format!("UPDATE users SET score = (SELECT count(*) FROM orders)::int WHERE id = {id}");
    // Outside a block (the keyless write two-phase across the shards) and
    // inside one whose COMMIT is two-phase: the subqueries run through a
    // session of their own that reads the block's servers.
    let script = [
        "UPDATE users SET grp = 7 WHERE score > (SELECT avg(score) FROM users)",
        "BEGIN",
        "UPDATE users SET score = -score WHERE grp = 7",
        "DELETE FROM orders WHERE qty IN (SELECT grp FROM users WHERE score < 0)",
        keyed.as_str(),
        "COMMIT",
    ];
    same_script(&setup, &proxy, &script).await;
    assert_eq!(common::proxy_panics(), 0);
}
