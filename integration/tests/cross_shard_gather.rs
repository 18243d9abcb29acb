//! Cross-shard SELECTs the streaming merge refuses, finished on the
//! coordinator (`cross_shard_finish = "coordinator"`, the default, issue 34) in the
//! simple protocol outside transaction blocks: answered exactly as one
//! reference Postgres holding every row answers them (columns and rows);
//! no temp table left behind; past `cross_shard_gather_limit` a 54000
//! error and the session goes on; a shard down gives a clear error and the
//! session goes on; inside transaction blocks (READ ONLY ones, two-phase
//! ones) the gathers see the block's writes and snapshot and an error ends
//! the block; EXPLAIN says what runs where; in the extended protocol
//! (named portals in blocks too); with `cross_shard_finish = "refuse"` the
//! statement is refused with 0A000.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[allow(dead_code)]
mod cross_shard_diff {
    pub mod data;
    pub mod setup;
}

use common::{connect, sharded_config, USERS};
use cross_shard_diff::data;
use cross_shard_diff::setup::{self, client, temp_tables, Setup};
use tokio_postgres::{Client, SimpleQueryMessage};

/// Statements the streaming path refuses, with whether their ORDER BY
/// fixes the row order (else compared as sets of rows).
const GATHERED: &[(&str, bool)] = &[
    ("SELECT round(avg(score), 2) FROM users", true),
    ("SELECT count(DISTINCT grp) FROM users", true),
    ("SELECT count(DISTINCT grp) FROM orders o JOIN users u ON u.id = o.user_id", true),
    ("SELECT count(*) FROM (SELECT id FROM users ORDER BY id LIMIT 10) s", true),
    ("SELECT grp FROM users UNION SELECT qty FROM orders ORDER BY 1", true),
    ("SELECT name FROM users INTERSECT SELECT note FROM orders", false),
    ("SELECT id, rank() OVER (ORDER BY score DESC NULLS LAST, id) FROM users ORDER BY id", true),
    ("SELECT id, sum(qty) OVER (PARTITION BY user_id ORDER BY id) FROM orders ORDER BY id, user_id", true),
    ("SELECT grp, count(*) FROM users GROUP BY ROLLUP (grp) ORDER BY grp NULLS FIRST, 2", true),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY score) FROM users", true),
    ("SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.score > 50", false),
    ("SELECT u.grp, o.qty, count(*) FROM users u JOIN orders o ON u.grp = o.qty GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2", true),
    ("SELECT grp, count(*) AS n FROM users GROUP BY grp ORDER BY count(*) DESC, grp NULLS FIRST", true),
    ("SELECT id FROM users WHERE score > (SELECT avg(score) FROM users)", false),
    ("SELECT id FROM users WHERE id = 5 AND score > (SELECT avg(score) FROM users)", false),
    ("SELECT t.team, count(o.id) FROM teams t LEFT JOIN users u ON u.grp = t.grp LEFT JOIN orders o ON o.user_id = u.id AND o.note <> 'gift' GROUP BY t.team ORDER BY t.team", true),
    ("SELECT id FROM users u WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.qty = u.grp)", false),
    ("WITH s AS (SELECT grp, count(*) AS c FROM users GROUP BY grp) SELECT max(c) FROM s", true),
    ("SELECT u.id, u.name, count(o.id) FROM users u LEFT JOIN orders o ON o.user_id = u.id GROUP BY u.id", false),
    ("SELECT sum(price) * 2, stddev(qty)::numeric(20,6) FROM orders", true),
    ("SELECT DISTINCT ON (grp) grp, id FROM users ORDER BY grp, id", true),
];

/// A statement the gather path takes, for the refusal and bound tests.
const ONE: &str =
    "SELECT id, rank() OVER (ORDER BY score DESC NULLS LAST, id) FROM users ORDER BY id";

type Answer = Result<(Vec<String>, Vec<Vec<Option<String>>>), (String, String)>;

async fn answer(client: &Client, sql: &str, sorted: bool) -> Answer {
    let messages = client.simple_query(sql).await.map_err(|e| {
        let code = common::code(&e).unwrap_or("?").to_owned();
        (code, common::describe(&e))
    })?;
    let mut names = Vec::new();
    let mut rows = Vec::new();
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
    if sorted {
        rows.sort();
    }
    Ok((names, rows))
}

/// 2 shards and a reference, loaded; pgshard with `general` lines.
async fn start(general: &str) -> Setup {
    setup::start(general, 34).await
}

#[tokio::test(flavor = "multi_thread")]
async fn gathered_statements_match_one_postgres() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    let mut failures = Vec::new();
    for &(sql, ordered) in GATHERED {
        let got = answer(&proxy, sql, !ordered).await;
        let want = answer(&setup.direct, sql, !ordered).await;
        if got != want {
            failures.push(format!(
                "{sql}\n  pgshard:   {got:?}\n  reference: {want:?}"
            ));
        }
        assert!(want.is_ok(), "{sql}: the reference failed: {want:?}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The same connection runs ordinary statements after them.
    let (_, rows) = answer(&proxy, "SELECT count(*) FROM users", false)
        .await
        .unwrap();
    let (_, want) = answer(&setup.direct, "SELECT count(*) FROM users", false)
        .await
        .unwrap();
    assert_eq!(rows, want);
    // The temp tables went with their transactions.
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

/// Run `sqls` one after another on `client`, their answers (an error
/// stops nothing: each statement's answer is kept).
async fn answers(client: &Client, sqls: &[&str]) -> Vec<Answer> {
    let mut out = Vec::new();
    for sql in sqls {
        let ordered = GATHERED.iter().any(|(g, o)| g == sql && *o) || sql.contains("ORDER BY");
        out.push(answer(client, sql, !ordered).await);
    }
    out
}

/// The same script through pgshard and on the reference: the same answers.
async fn same_script(setup: &Setup, proxy: &Client, script: &[&str]) {
    let got = answers(proxy, script).await;
    let want = answers(&setup.direct, script).await;
    for ((sql, got), want) in script.iter().zip(&got).zip(&want) {
        assert_eq!(got, want, "{sql}\n  in {script:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn inside_blocks_gathers_see_the_blocks_writes_and_snapshot() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    let mut script = vec![
        "BEGIN",
        // Writes on both shards and on the omnisharded table.
        "UPDATE users SET score = score + 1000 WHERE id IN (1, 2, 3, 4, 5, 6)",
        "DELETE FROM orders WHERE id % 3 = 0",
        "UPDATE teams SET team = team || '!' WHERE grp % 2 = 0",
    ];
    script.extend(GATHERED.iter().map(|(sql, _)| *sql));
    // The same statement twice: its temp tables went after the first.
    script.extend([ONE, ONE, "ROLLBACK"]);
    same_script(&setup, &proxy, &script).await;
    // After the block, the writes are gone on both.
    same_script(&setup, &proxy, &[ONE, GATHERED[2].0]).await;

    // REPEATABLE READ: a write committed meanwhile by another session is
    // not seen by the block's gathers, as on one Postgres.
    let other = client(&setup).await;
    let count = "SELECT count(DISTINCT score) FROM users";
    proxy
        .simple_query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await
        .unwrap();
    let before = answer(&proxy, count, false).await.unwrap();
    other
        .simple_query("UPDATE users SET score = 5000000 + (id % 1000)::int WHERE id % 3 = 0")
        .await
        .unwrap();
    assert_eq!(answer(&proxy, count, false).await.unwrap(), before);
    proxy.simple_query("COMMIT").await.unwrap();
    let after = answer(&proxy, count, false).await.unwrap();
    assert_ne!(after, before, "the committed write is seen after the block");
    setup
        .direct
        .simple_query("UPDATE users SET score = 5000000 + (id % 1000)::int WHERE id % 3 = 0")
        .await
        .unwrap();
    assert_eq!(after, answer(&setup.direct, count, false).await.unwrap());
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_blocks_and_errors_inside_blocks() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    // A READ ONLY block: the coordinator is a session of its own.
    let mut script = vec!["BEGIN READ ONLY", "SELECT count(*) FROM teams"];
    script.extend(GATHERED.iter().map(|(sql, _)| *sql));
    script.push("COMMIT");
    same_script(&setup, &proxy, &script).await;
    // An error in the finish ends the block (25P02 after it); ROLLBACK
    // works and the session goes on.
    let failing = "SELECT 1 / (count(DISTINCT grp) - count(DISTINCT grp)) FROM users";
    let script = [
        "BEGIN",
        "UPDATE users SET score = 1 WHERE id = 3",
        failing,
        "SELECT count(*) FROM users",
        "ROLLBACK",
        ONE,
    ];
    same_script(&setup, &proxy, &script).await;
    // An error inside a READ ONLY block, on the session of its own.
    let script = ["BEGIN READ ONLY", failing, "SELECT 1", "ROLLBACK"];
    same_script(&setup, &proxy, &script).await;
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_phase_blocks_gather_through_a_session_of_its_own() {
    let setup = start(
        "cross_shard_finish = \"coordinator\"\ntwo_phase_commit = true\n\
         two_phase_commit_wal_dir = \"/tmp/pgshard-tests-2pc-gather\"",
    )
    .await;
    let proxy = client(&setup).await;
    // Writes on both shards, a gather, writes again: COMMIT is two-phase
    // and succeeds (no temp table touched the block's servers).
    let mut script = vec![
        "BEGIN",
        "UPDATE users SET score = -score WHERE id IN (1, 2, 3, 4, 5, 6)",
        "UPDATE teams SET weight = 0",
    ];
    script.extend(GATHERED.iter().map(|(sql, _)| *sql));
    script.extend([
        "UPDATE users SET grp = 9 WHERE id IN (7, 8, 9, 10)",
        "COMMIT",
    ]);
    same_script(&setup, &proxy, &script).await;
    same_script(&setup, &proxy, &[ONE, GATHERED[15].0]).await;
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

/// An EXPLAIN's lines (its one column).
async fn explained(client: &Client, sql: &str) -> Vec<String> {
    let (_, rows) = answer(client, sql, false).await.unwrap();
    rows.into_iter()
        .map(|row| row[0].clone().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_says_what_runs_where() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    let lines = explained(&proxy, &format!("EXPLAIN (COSTS OFF) {ONE}")).await;
    assert_eq!(
        lines[0],
        "pgshard: finished on the coordinator (database 0, a session of its own)"
    );
    assert_eq!(
        lines[1],
        "pgshard: gather pgshard_g1 from shards 0, 1: SELECT id, score FROM users"
    );
    assert!(
        lines[2].contains("nothing gathered without ANALYZE"),
        "{lines:?}"
    );
    assert!(
        lines[3].starts_with("pgshard: coordinator runs: SELECT id, rank() OVER"),
        "{lines:?}"
    );
    assert!(lines[3].contains("pg_temp.pgshard_g1"), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("WindowAgg")), "{lines:?}");
    // ANALYZE gathers: the rows are counted.
    let lines = explained(&proxy, &format!("EXPLAIN (ANALYZE, COSTS OFF) {ONE}")).await;
    let (_, rows) = answer(&setup.direct, "SELECT count(*) FROM users", false)
        .await
        .unwrap();
    let count = rows[0][0].clone().unwrap();
    assert!(
        lines[2].starts_with(&format!("pgshard: gathered {count} row(s)")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("actual")), "{lines:?}");
    // Inside a block: the transaction's server.
    proxy.simple_query("BEGIN").await.unwrap();
    let lines = explained(&proxy, &format!("EXPLAIN {}", GATHERED[1].0)).await;
    assert!(lines[0].contains("the transaction's server"), "{lines:?}");
    proxy.simple_query("COMMIT").await.unwrap();
    proxy.simple_query("BEGIN READ ONLY").await.unwrap();
    let lines = explained(&proxy, &format!("EXPLAIN {}", GATHERED[1].0)).await;
    assert!(
        lines[0].contains("a session of its own; the gathers read the transaction's servers"),
        "{lines:?}"
    );
    proxy.simple_query("COMMIT").await.unwrap();
    // Other formats: the coordinator's plan only.
    let lines = explained(&proxy, &format!("EXPLAIN (FORMAT JSON) {ONE}")).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("\"Plan\""), "{lines:?}");
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

type Params<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

/// One value of `row` as text, read as whichever of the types the tests
/// use it is.
fn value(row: &tokio_postgres::Row, i: usize) -> String {
    row.try_get::<_, Option<i64>>(i)
        .map(|v| format!("{v:?}"))
        .or_else(|_| row.try_get::<_, Option<i32>>(i).map(|v| format!("{v:?}")))
        .or_else(|_| {
            row.try_get::<_, Option<String>>(i)
                .map(|v| format!("{v:?}"))
        })
        .or_else(|_| row.try_get::<_, Option<f64>>(i).map(|v| format!("{v:?}")))
        .unwrap_or_else(|e| format!("unreadable: {e}"))
}

/// `sql` with `params` through the extended protocol: its rows as text, or
/// its error's code and message.
async fn extended(client: &Client, sql: &str, params: Params<'_>) -> Result<Vec<String>, String> {
    let rows = client.query(sql, params).await.map_err(|e| {
        format!(
            "{}: {}",
            common::code(&e).unwrap_or("?"),
            common::describe(&e)
        )
    })?;
    Ok(rows
        .iter()
        .map(|row| {
            (0..row.len())
                .map(|i| value(row, i))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_extended_protocol_with_parameters() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    let ranked = "SELECT id, rank() OVER (ORDER BY score DESC NULLS LAST, id) FROM users \
                  WHERE score > $1 AND name <> $2 ORDER BY id";
    let joined = "SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty \
                  WHERE o.qty = $1::int ORDER BY 1, 2";
    let cases: [(&str, Params<'_>); 4] = [
        (ONE, &[]),
        (ranked, &[&50i32, &"x"]),
        (joined, &[&3i32]),
        ("SELECT count(DISTINCT grp) + $1 FROM users", &[&1i64]),
    ];
    for (sql, params) in cases {
        let got = extended(&proxy, sql, params).await;
        let want = extended(&setup.direct, sql, params).await;
        assert!(want.is_ok(), "{sql}: {want:?}");
        assert_eq!(got, want, "{sql}");
    }
    // Prepared once, run with other values; inside a block too.
    let statement = proxy.prepare(ranked).await.unwrap();
    for score in [0i32, 40, 90] {
        let got = proxy.query(&statement, &[&score, &"y"]).await.unwrap();
        let want = setup.direct.query(ranked, &[&score, &"y"]).await.unwrap();
        let ids = |rows: &[tokio_postgres::Row]| -> Vec<(i64, i64)> {
            rows.iter().map(|r| (r.get(0), r.get(1))).collect()
        };
        assert_eq!(ids(&got), ids(&want), "score > {score}");
    }
    let write = "UPDATE users SET score = 1000, name = 'z' WHERE score < 30";
    let mut in_block = Vec::new();
    for client in [&proxy, &setup.direct] {
        client.simple_query("BEGIN").await.unwrap();
        client.simple_query(write).await.unwrap();
        let rows = client.query(ranked, &[&999i32, &"y"]).await.unwrap();
        client.simple_query("ROLLBACK").await.unwrap();
        in_block.push(
            rows.iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect::<Vec<(i64, i64)>>(),
        );
    }
    assert!(
        !in_block[1].is_empty(),
        "the reference sees the block's write"
    );
    assert_eq!(in_block[0], in_block[1], "the block's own write is seen");
    // A named portal (read across Syncs) inside a block: answered whole
    // (read in parts: cross_shard_portals.rs).
    let mut other = client(&setup).await;
    let tx = other.transaction().await.unwrap();
    let portal = tx.bind(ONE, &[]).await.unwrap();
    let got = tx.query_portal(&portal, 0).await.unwrap();
    tx.commit().await.unwrap();
    let want = setup.direct.query(ONE, &[]).await.unwrap();
    let ids = |rows: &[tokio_postgres::Row]| -> Vec<(i64, i64)> {
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    assert_eq!(ids(&got), ids(&want), "a named portal");
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_when_told_to() {
    // The default config finishes on the coordinator...
    let setup = start("").await;
    let direct = answer(&setup.direct, ONE, false).await;
    assert!(direct.is_ok(), "the reference: {direct:?}");
    let proxy = client(&setup).await;
    assert_eq!(answer(&proxy, ONE, false).await, direct, "{ONE}");
    // ...`cross_shard_finish = "refuse"` refuses, as before this path
    // existed (as PgDog does), once RELOADed.
    let config = sharded_config(
        &setup.servers,
        "cross_shard_finish = \"refuse\"",
        data::SHARDING,
    );
    setup.proxy.rewrite_config(&config, USERS).unwrap();
    let admin = connect(setup.proxy.port(), "admin", "admin-pw", "admin")
        .await
        .unwrap();
    admin.simple_query("RELOAD").await.unwrap();
    let fresh = client(&setup).await;
    let (code, message) = answer(&fresh, ONE, false).await.unwrap_err();
    assert_eq!(code, "0A000");
    assert!(message.contains("window function"), "{message}");
    assert!(!message.contains("coordinator"), "{message}");
    // In a block too.
    fresh.simple_query("BEGIN").await.unwrap();
    let (code, _) = answer(&fresh, ONE, false).await.unwrap_err();
    assert_eq!(code, "0A000");
    fresh.simple_query("ROLLBACK").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gather_limit_fails_with_54000_and_the_session_goes_on() {
    let setup = start(
        "cross_shard_finish = \"coordinator\"\ncross_shard_gather_limit = { rows = 20, bytes = 100000 }",
    )
    .await;
    let proxy = client(&setup).await;
    let (code, message) = answer(&proxy, ONE, false).await.unwrap_err();
    assert_eq!(code, "54000", "{message}");
    assert!(
        message.contains("more than 20 rows (cross_shard_gather_limit.rows)"),
        "{message}"
    );
    assert!(message.contains("database 0"), "{message}");
    // A gather within the bound (a pushed key: one shard, one row) runs on
    // the same connection.
    let small = "SELECT id, rank() OVER (ORDER BY score) FROM users WHERE id = 5";
    assert_eq!(
        answer(&proxy, small, false).await,
        answer(&setup.direct, small, false).await
    );
    assert_eq!(temp_tables(&setup).await, "0");
    // Inside a block (the coordinator's own part counted too): 54000, the
    // block is over.
    proxy.simple_query("BEGIN").await.unwrap();
    let (code, message) = answer(&proxy, ONE, false).await.unwrap_err();
    assert_eq!(code, "54000", "{message}");
    let (code, _) = answer(&proxy, "SELECT 1", false).await.unwrap_err();
    assert_eq!(code, "25P02");
    proxy.simple_query("ROLLBACK").await.unwrap();
    // Bytes: a wide row each.
    let config = sharded_config(
        &setup.servers,
        "cross_shard_finish = \"coordinator\"\ncross_shard_gather_limit = { bytes = 200 }",
        data::SHARDING,
    );
    setup.proxy.rewrite_config(&config, USERS).unwrap();
    let admin = connect(setup.proxy.port(), "admin", "admin-pw", "admin")
        .await
        .unwrap();
    admin.simple_query("RELOAD").await.unwrap();
    let (code, message) = answer(&proxy, ONE, false).await.unwrap_err();
    assert_eq!(code, "54000", "{message}");
    assert!(
        message.contains("(cross_shard_gather_limit.bytes)"),
        "{message}"
    );
    assert_eq!(
        answer(&proxy, "SELECT 1", false).await.unwrap().1,
        vec![vec![Some("1".to_owned())]]
    );
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shard_down_fails_the_statement_and_the_session_goes_on() {
    let mut setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    assert!(answer(&proxy, ONE, false).await.is_ok());
    setup.servers[1].stop().unwrap();
    let (code, message) = answer(&proxy, ONE, false).await.unwrap_err();
    assert!(
        code.starts_with("08") || code == "57P01" || code == "53300",
        "{code}: {message}"
    );
    // The coordinator's database (shard 0) still answers.
    let keyed = "SELECT count(*) FROM teams";
    assert_eq!(
        answer(&proxy, keyed, false).await,
        answer(&setup.direct, keyed, false).await
    );
    setup.servers[1].start_again().unwrap();
    // Once the shard is back, the statement is answered again.
    let mut answered = false;
    for _ in 0..50 {
        if answer(&proxy, ONE, false).await == answer(&setup.direct, ONE, false).await {
            answered = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(answered, "the statement fails after the shard is back");
    assert_eq!(temp_tables(&setup).await, "0");
    assert_eq!(common::proxy_panics(), 0);
}
