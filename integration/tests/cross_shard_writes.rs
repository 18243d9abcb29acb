//! Writes whose subqueries read across shards (issue 34): the subquery runs
//! first on the coordinator path and its result is carried into the write.
//! A seeded differential test runs generated UPDATE / DELETE / INSERT
//! statements through pgshard on 2 and 4 shards and on one reference
//! Postgres and compares each statement's tag (or error code) and then the
//! tables' whole contents; hand-picked cases cover NULLs in NOT IN, empty
//! subqueries, a subquery that fails, more rows than a scalar takes, the
//! gather bound, a block rolled back, two-phase commit, correlated
//! subqueries (refused), and `cross_shard_finish = "refuse"`. The
//! extended protocol runs the generated writes too, with parameters in
//! the write and inside its subqueries (`carried_writes/`), and
//! hand-picked pipelines: several Executes before a Sync inside a block
//! and outside one (refused), errors that skip to the Sync. SQL PREPAREd
//! writes carry their subqueries at each EXECUTE.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[allow(dead_code)]
mod cross_shard_diff {
    pub mod data;
}

mod carried_writes {
    pub mod extended;
    pub mod generator;
    #[allow(dead_code)]
    pub mod setup;
}

use carried_writes::extended::{self, Way, WAYS};
use carried_writes::generator::statement;
use carried_writes::setup::{
    client, contents, message, outcome, same_replies, same_script, start, wires,
};
use common::wire;
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;

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
        let sql = statement(&mut rng, &ids, 100_000 + i as i64).sql;
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

/// [`differential`] in the extended protocol: each write with some of its
/// constants (in the write and inside its subqueries) made parameters,
/// sent as drivers send them, in turns ([`WAYS`]): binary parameters of a
/// prepared statement, typed ones parsed and bound at once, text ones
/// without declared types; rows, tags (and, on the raw socket, every
/// reply's kind) compared with the reference's.
async fn differential_extended(n: usize, seed: u64, count: usize) {
    let setup = start(n, "cross_shard_finish = \"coordinator\"", seed).await;
    let proxy = client(&setup).await;
    let (mut proxy_wire, mut direct_wire) = wires(&setup, n).await;
    let ids = setup.data.user_ids();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut failures = Vec::new();
    for i in 0..count {
        let write = statement(&mut rng, &ids, 100_000 + i as i64);
        let way = WAYS[i % WAYS.len()];
        let (got, want) = match way {
            Way::Text => (
                extended::text(&mut proxy_wire, &write).await,
                extended::text(&mut direct_wire, &write).await,
            ),
            _ => (
                extended::driver(&proxy, way, &write).await,
                extended::driver(&setup.direct, way, &write).await,
            ),
        };
        assert!(
            want.is_ok(),
            "{write:?} ({way:?}): the reference failed: {want:?}"
        );
        if got != want {
            failures.push(format!(
                "{write:?} ({way:?})\n  pgshard:   {got:?}\n  reference: {want:?}"
            ));
        }
        if i % 10 == 9 || i + 1 == count {
            let (got, want) = (contents(&proxy).await, contents(&setup.direct).await);
            assert!(
                got == want,
                "tables differ after {write:?} (seed {seed}, {n} shards):\n{}",
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
async fn bound_writes_match_one_postgres_on_2_shards() {
    differential_extended(2, 3407, 45).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bound_writes_match_one_postgres_on_4_shards() {
    differential_extended(4, 3408, 30).await;
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

/// SQL PREPARE and EXECUTE of such writes: the subqueries run first at each
/// EXECUTE, with its arguments when the PREPARE declared their types; an
/// untyped one whose subquery takes a parameter is refused, saying why.
#[tokio::test(flavor = "multi_thread")]
async fn sql_prepared_writes_carry_their_subqueries() {
    let setup = start(2, "cross_shard_finish = \"coordinator\"", 3407).await;
    let proxy = client(&setup).await;
    let id = setup.data.user_ids()[3];
    let typed = format!(
        "PREPARE w1 (int8) AS UPDATE users SET score = (SELECT count(*) FROM orders WHERE qty > $1)::int WHERE id = {id} RETURNING score"
    );
    let script = [
        typed.as_str(),
        "EXECUTE w1(3)",
        "EXECUTE w1(7)",
        // No parameter in the subquery: no types needed.
        "PREPARE w2 AS UPDATE orders SET note = 'p' WHERE qty NOT IN (SELECT grp FROM users WHERE grp IS NOT NULL) AND user_id > $1",
        "EXECUTE w2(0)",
        // Inside a block, rolled back: nothing stays.
        "BEGIN",
        "EXECUTE w1(1)",
        "SELECT count(*) FROM users WHERE score > 0",
        "ROLLBACK",
        // A subquery that fails fails the EXECUTE.
        "PREPARE w3 (int) AS UPDATE users SET score = 1 WHERE score > (SELECT 1 / (count(*) - count(*) + $1) FROM orders)",
        "EXECUTE w3(0)",
        "EXECUTE w3(1)",
        // FROM subqueries: one that limits across shards though joined on
        // the key (rule 8), one that aggregates with a parameter.
        "PREPARE w5 (int8) AS UPDATE users SET grp = 7 FROM (SELECT id FROM users ORDER BY score DESC NULLS LAST, id LIMIT $1) s WHERE users.id = s.id",
        "EXECUTE w5(3)",
        "PREPARE w6 (int8) AS UPDATE users u SET score = s.n FROM (SELECT count(*)::int AS n FROM orders WHERE qty > $1) s WHERE u.grp = 2",
        "EXECUTE w6(4)",
        "DEALLOCATE w1",
        "DEALLOCATE w2",
        "DEALLOCATE w3",
        "DEALLOCATE w5",
        "DEALLOCATE w6",
    ];
    same_script(&setup, &proxy, &script).await;
    // Through Parse/Bind/Execute, an EXECUTE whose FROM subquery cuts rows
    // across shards is refused (not run per shard).
    let limited = "PREPARE w7 (int8) AS UPDATE users SET grp = 8 FROM (SELECT id FROM users ORDER BY score DESC NULLS LAST, id LIMIT $1) s WHERE users.id = s.id";
    assert_eq!(outcome(&proxy, limited).await, Ok(vec!["0".to_owned()]));
    let e = proxy.execute("EXECUTE w7(3)", &[]).await.unwrap_err();
    assert_eq!(common::code(&e), Some("0A000"), "{}", common::describe(&e));
    let untyped = "PREPARE w4 AS UPDATE users SET score = 0 WHERE score > (SELECT avg(qty) FROM orders WHERE qty > $1)";
    assert_eq!(outcome(&proxy, untyped).await, Ok(vec!["0".to_owned()]));
    let (code, text) = message(&proxy, "EXECUTE w4(2)").await;
    assert_eq!(code, "0A000", "{text}");
    assert!(text.contains("declares every parameter's type"), "{text}");
    assert_eq!(outcome(&proxy, "SELECT 1").await, Ok(vec!["1".to_owned()]));
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
    // Bound in the extended protocol, the same bound.
    let bound =
        "UPDATE users SET score = 0 WHERE id = $1 AND score > (SELECT avg(score) FROM users)";
    let e = proxy.execute(bound, &[&1i64]).await.unwrap_err();
    assert_eq!(common::code(&e), Some("54000"), "{}", common::describe(&e));
    assert!(common::describe(&e).contains("cross_shard_gather_limit.rows"));

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

#[tokio::test(flavor = "multi_thread")]
async fn bound_pipelines_blocks_and_errors() {
    let setup = start(2, "cross_shard_finish = \"coordinator\"", 3409).await;
    let mut both = wires(&setup, 2).await;
    let ids = setup.data.user_ids();
    let (a, b) = (ids[3].to_string(), ids[11].to_string());
    let keyed = "UPDATE users SET score = (SELECT count(*) FROM orders WHERE qty > $1)::int \
                 WHERE id = $2 RETURNING id, score";
    let keyless =
        "UPDATE orders SET note = $1 WHERE qty IN (SELECT grp FROM users WHERE score > $2)";
    // Inside a block: a named statement bound and executed twice, then a
    // keyless one whose subquery sees the block's writes, before one Sync.
    let block = [
        wire::query("BEGIN"),
        wire::parse("w", keyed),
        wire::bind_text("", "w", &[Some("3"), Some(&a)]),
        wire::describe(b'P', ""),
        wire::execute(),
        wire::bind_text("", "w", &[Some("5"), Some(&b)]),
        wire::execute(),
        wire::parse("", keyless),
        wire::bind_text("", "", &[Some("blk"), Some("3")]),
        wire::execute(),
        wire::sync(),
        wire::query("COMMIT"),
    ];
    same_replies(&mut both, &block, 3).await;
    // A subquery that fails, inside a block and out: the error, the rest
    // up to the Sync skipped, the block failed.
    let failing =
        "UPDATE users SET score = 1 WHERE id = $1 AND score > (SELECT max(qty) / $2 FROM orders)";
    let failed = [
        wire::query("BEGIN"),
        wire::parse("", failing),
        wire::bind_text("", "", &[Some(&a), Some("0")]),
        wire::execute(),
        wire::bind_text("", "w", &[Some("1"), Some(&b)]),
        wire::execute(),
        wire::sync(),
        wire::query("SELECT 1"),
        wire::query("ROLLBACK"),
        wire::parse("", failing),
        wire::bind_text("", "", &[Some(&a), Some("0")]),
        wire::execute(),
        wire::sync(),
    ];
    same_replies(&mut both, &failed, 5).await;
    let rows = "SELECT users::text FROM users ORDER BY id";
    same_replies(&mut both, &[wire::query(rows)], 1).await;
    // Outside a block after another statement before the Sync: refused.
    let (proxy, _) = &mut both;
    let after = [
        wire::bind_text("", "w", &[Some("1"), Some(&a)]),
        wire::execute(),
        wire::bind_text("", "w", &[Some("2"), Some(&b)]),
        wire::execute(),
        wire::sync(),
    ];
    proxy.send(&after.concat()).await;
    let replies = proxy.until_ready().await;
    assert_eq!(wire::errors(&replies), ["0A000"], "{replies:?}");
    assert_eq!(common::proxy_panics(), 0);
}
