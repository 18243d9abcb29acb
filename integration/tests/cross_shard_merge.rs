//! Cross-shard SELECTs merged by pgshard, checked against one reference
//! Postgres holding every row: a table of statements (ORDER BY, LIMIT /
//! OFFSET, aggregates, GROUP BY, DISTINCT) whose answers must be exactly the
//! reference's, and a table of statements the merge cannot answer: finished
//! on the coordinator by default (exactly the reference's answers too), and
//! refused with 0A000 under `cross_shard_finish = "refuse"`. The randomized
//! differential test is `cross_shard_diff.rs`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Cluster, USERS};
use integration::{PgServer, TestProxy};
use tokio_postgres::{Client, SimpleQueryMessage};

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"users\"
column = \"id\"
data_type = \"bigint\"
hasher = \"postgres\"
";

const TABLE: &str = "(id bigint NOT NULL, grp int, score int, name text, amount numeric(10,2), \
                     active bool, created date, seen timestamptz)";

/// Rows with NULLs, ties and every merged type, one keyed INSERT each.
fn rows() -> Vec<String> {
    let mut values = Vec::new();
    for id in 1..=240i64 {
        let grp = if id % 17 == 0 {
            "NULL".into()
        } else {
            (id % 7).to_string()
        };
        let score = if id % 23 == 0 {
            "NULL".into()
        } else {
            ((id * 37) % 101).to_string()
        };
        let name = format!("'n{:02}'", (id * 13) % 41);
        let amount = format!("{}.{:02}", (id * 7) % 90, (id * 11) % 100);
        let active = if id % 3 == 0 { "true" } else { "false" };
        let created = format!("date '2024-01-01' + {}", (id * 5) % 60);
        let seen = format!(
            "timestamptz '2024-03-01 00:00:00+00' + interval '{} minutes'",
            (id * 97) % 5000
        );
        values.push(format!(
            "INSERT INTO users (id, grp, score, name, amount, active, created, seen) \
             VALUES ({id}, {grp}, {score}, {name}, {amount}, {active}, {created}, {seen})"
        ));
    }
    values
}

/// Each shard holds its hash partition; the reference holds everything.
/// `general`: lines of pgshard's `[general]`.
fn start(n: usize, general: &str) -> (Cluster, PgServer, String) {
    common::watch_proxy_panics();
    let mut servers = common::servers(n + 1);
    let reference = servers.pop().unwrap();
    for (i, server) in servers.iter().enumerate() {
        let sql = format!(
            "SET ROLE app; CREATE TABLE users {TABLE} PARTITION BY HASH (id);\
             CREATE TABLE users_on_shard PARTITION OF users FOR VALUES WITH (MODULUS {n}, REMAINDER {i});"
        );
        server.psql(&format!("shard_{i}"), &sql).unwrap();
    }
    reference
        .psql(
            &format!("shard_{n}"),
            &format!(
                "SET ROLE app; CREATE TABLE users {TABLE}; {}",
                rows().join(";")
            ),
        )
        .unwrap();
    let proxy =
        TestProxy::start(&common::sharded_config(&servers, general, SHARDING), USERS).unwrap();
    let cluster = Cluster {
        proxy,
        databases: common::databases(&servers),
        general: String::new(),
        servers,
        copies_differ: None,
    };
    (cluster, reference, format!("shard_{n}"))
}

type Answer = Result<(Vec<String>, Vec<Vec<Option<String>>>), String>;

async fn answer(client: &Client, sql: &str, sorted: bool) -> Answer {
    let messages = client
        .simple_query(sql)
        .await
        .map_err(|e| common::code(&e).unwrap_or("?").to_owned())?;
    let mut names = Vec::new();
    let mut rows = Vec::new();
    for message in messages {
        if let SimpleQueryMessage::Row(row) = message {
            names = row.columns().iter().map(|c| c.name().to_owned()).collect();
            rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            );
        }
    }
    if sorted {
        rows.sort();
    }
    Ok((names, rows))
}

/// Statements whose answer is exact: `true` when their ORDER BY fixes the
/// row order (compared in order), else compared as sets of rows.
const EXACT: &[(&str, bool)] = &[
    ("SELECT count(*) FROM users", true),
    ("SELECT count(*), count(grp), sum(score), min(score), max(score) FROM users", true),
    ("SELECT sum(amount), min(amount), max(amount), min(name), max(name) FROM users", true),
    ("SELECT min(created), max(created), min(seen), max(seen) FROM users", true),
    ("SELECT bool_and(active), bool_or(active), every(id > 0) FROM users", true),
    ("SELECT sum(id) FROM users", true),
    ("SELECT count(*) FROM users WHERE id < 0", true),
    ("SELECT sum(score), max(name) FROM users WHERE id < 0", true),
    ("SELECT id, score FROM users ORDER BY score DESC NULLS LAST, id LIMIT 7", true),
    ("SELECT id, score FROM users ORDER BY score NULLS FIRST, id OFFSET 230", true),
    ("SELECT id FROM users ORDER BY name, id DESC LIMIT 5 OFFSET 10", true),
    ("SELECT id FROM users ORDER BY amount DESC, id LIMIT 12", true),
    ("SELECT id, created FROM users ORDER BY created, seen DESC, id LIMIT 9", true),
    ("SELECT id AS k FROM users ORDER BY k DESC LIMIT 3", true),
    ("SELECT id, lower(name) FROM users ORDER BY 2, 1 LIMIT 4", true),
    ("SELECT * FROM users ORDER BY id LIMIT 3 OFFSET 100", true),
    ("SELECT id FROM users LIMIT 0", true),
    ("SELECT grp, count(*), sum(score), min(name) FROM users GROUP BY grp ORDER BY grp", true),
    ("SELECT grp, count(*) AS n FROM users GROUP BY grp ORDER BY n DESC, grp LIMIT 3", true),
    ("SELECT count(*) FROM users GROUP BY grp, active", false),
    ("SELECT active, sum(amount) FROM users GROUP BY active", false),
    ("SELECT grp AS g, max(amount) FROM users GROUP BY g ORDER BY max(amount) DESC, g", true),
    ("SELECT name, count(*) FROM users WHERE score > 50 GROUP BY name ORDER BY name OFFSET 2 LIMIT 5", true),
    ("SELECT created, count(*) FROM users GROUP BY created ORDER BY created DESC LIMIT 4", true),
    ("SELECT DISTINCT grp FROM users", false),
    ("SELECT DISTINCT grp, active FROM users ORDER BY grp NULLS FIRST, active LIMIT 6", true),
    ("SELECT count(*) FILTER (WHERE active) FROM users", true),
    ("SELECT grp, count(*) FROM users GROUP BY grp HAVING count(*) > 30 ORDER BY grp", true),
    ("SELECT grp FROM users GROUP BY grp HAVING sum(score) >= 1500 AND NOT max(name) < 'n39' OR grp IS NULL", false),
    ("SELECT active, count(*) FROM users GROUP BY active HAVING avg(score) > 49.5", false),
    ("SELECT count(*) FROM users HAVING count(*) > 1000", true),
    ("SELECT DISTINCT ON (grp) grp, id, score FROM users ORDER BY grp NULLS FIRST, score DESC NULLS LAST, id", true),
    ("SELECT DISTINCT ON (active) id FROM users ORDER BY active, id DESC LIMIT 1 OFFSET 1", true),
    ("SELECT avg(score), avg(amount), avg(id) FROM users", true),
    ("SELECT count(*)::int AS n, sum(score)::numeric(20,2), max(amount)::int FROM users", true),
    ("SELECT grp, count(*)::int FROM users GROUP BY grp ORDER BY 2 DESC, 1", true),
    ("SELECT grp, avg(score) FROM users GROUP BY grp ORDER BY avg(score) DESC NULLS LAST, grp", true),
    ("SELECT active, avg(amount) AS mean FROM users WHERE id > 300 GROUP BY active", false),
    ("SELECT id, name FROM users WHERE score > 90", false),
    ("SELECT stddev(score), variance(score), stddev_pop(amount), var_pop(amount), var_samp(id) FROM users", true),
    ("SELECT grp, stddev(amount) AS s, count(*) FROM users GROUP BY grp ORDER BY s DESC NULLS LAST, grp", true),
    ("SELECT active, stddev_samp(score) FILTER (WHERE grp > 2) FROM users GROUP BY active HAVING variance(score) > 10", false),
    ("SELECT stddev(score) FROM users WHERE id = 5 OR id = 6", true),
    ("SELECT stddev(score), var_pop(score) FROM users WHERE id < 0", true),
    ("SELECT grp, string_agg(name, ',' ORDER BY name, id) FROM users GROUP BY grp ORDER BY grp", true),
    ("SELECT array_agg(id ORDER BY score DESC NULLS LAST, id) AS ids FROM users WHERE id < 60", true),
    ("SELECT active, array_agg(name || ' \"q\"' ORDER BY id DESC) FILTER (WHERE grp = 3), string_agg(name, '; ' ORDER BY seen, id) FROM users GROUP BY active", false),
    ("SELECT string_agg(name, ',' ORDER BY name) FROM users WHERE id < 0", true),
    ("SELECT array_agg(amount ORDER BY created DESC, amount, id), array_agg(created ORDER BY id) FROM users WHERE id % 5 = 0", true),
    ("SELECT grp, string_agg(CASE WHEN id % 2 = 0 THEN name END, '' ORDER BY id) AS s FROM users GROUP BY grp HAVING count(*) > 30 ORDER BY s", true),
    // Groups of the sharding key are whole on their shard: any aggregate.
    ("SELECT id, string_agg(name, ',' ORDER BY name), stddev(score) FROM users WHERE score > 80 GROUP BY id", false),
    ("SELECT id, count(*) AS n FROM users GROUP BY id HAVING count(*) >= 1 ORDER BY id DESC LIMIT 5 OFFSET 2", true),
    ("SELECT DISTINCT count(*) FROM users GROUP BY id", false),
    ("SELECT 1 AS one, count(*) FROM users GROUP BY id ORDER BY 2, one LIMIT 2", true),
    // DISTINCT values of the sharding key are on one shard each.
    ("SELECT count(DISTINCT id), sum(DISTINCT id), avg(DISTINCT id), max(DISTINCT id) FROM users", true),
    ("SELECT grp, count(DISTINCT id) FROM users GROUP BY grp ORDER BY grp", true),
    // Sorted groups (rule 8): streamed, in a key order, top-N and held.
    ("SELECT name, count(*), sum(score) FROM users GROUP BY name", false),
    ("SELECT lower(name) AS l, grp, count(*) FROM users GROUP BY 1, grp ORDER BY grp DESC NULLS LAST, l LIMIT 7 OFFSET 3", true),
    ("SELECT name, count(*) AS n FROM users GROUP BY name ORDER BY n DESC, name LIMIT 4", true),
    ("SELECT grp, active, avg(score) FROM users GROUP BY grp, active HAVING count(*) > 3 ORDER BY avg(score), grp, active", true),
    ("SELECT DISTINCT grp, active FROM users", false),
    ("SELECT DISTINCT grp FROM users ORDER BY grp DESC LIMIT 2", true),
    // DISTINCT over the groups' aggregates, the groups off the key: equal
    // counts of different groups are one row.
    ("SELECT DISTINCT count(*) FROM users GROUP BY grp", false),
    ("SELECT DISTINCT count(*) > 30 AS big FROM users GROUP BY name", false),
    ("SELECT DISTINCT active, count(*) FROM users GROUP BY active, grp ORDER BY 1, 2", true),
];

/// Statements the streaming merge cannot answer: with `cross_shard_finish
/// = "refuse"` pgshard refuses them (0A000) rather than answer wrongly.
const REFUSED: &[&str] = &[
    "SELECT count(DISTINCT grp) FROM users",
    "SELECT grp FROM users GROUP BY grp HAVING count(*) > 30 AND lower(max(name)) = 'n1'",
    "SELECT id, rank() OVER (ORDER BY score) FROM users",
    "SELECT string_agg(name, ',') FROM users",
    "SELECT array_agg(id) FROM users",
    "SELECT sum(score) * 2 FROM users",
    "SELECT * FROM (SELECT grp, count(*) FROM users GROUP BY grp) g",
    "SELECT id FROM users UNION SELECT id FROM users",
    "SELECT DISTINCT count(*) FROM users GROUP BY grp",
];

/// [`REFUSED`]'s statements as the coordinator answers them by default,
/// each exactly the reference's answer (the aggregates in an order no
/// ORDER BY fixes are measured, not listed: their order is any, as on one
/// Postgres).
const FINISHED: &[&str] = &[
    "SELECT count(DISTINCT grp) FROM users",
    "SELECT grp FROM users GROUP BY grp HAVING count(*) > 30 AND lower(max(name)) = 'n1'",
    "SELECT id, rank() OVER (ORDER BY score) FROM users",
    "SELECT length(string_agg(name, ',')), count(*) FROM users",
    "SELECT cardinality(array_agg(id)), sum(id) FROM users",
    "SELECT sum(score) * 2 FROM users",
    "SELECT * FROM (SELECT grp, count(*) FROM users GROUP BY grp) g",
    "SELECT id FROM users UNION SELECT id FROM users",
    "SELECT DISTINCT count(*) FROM users GROUP BY grp",
];

async fn check(n: usize) {
    let (cluster, reference, database) = start(n, "");
    let proxy = cluster.connect().await;
    for insert in rows() {
        proxy.simple_query(&insert).await.unwrap();
    }
    let direct = common::connect(reference.port(), "app", "app-pw", &database)
        .await
        .unwrap();
    let mut failures = Vec::new();
    for &(sql, ordered) in EXACT {
        let expected = answer(&direct, sql, !ordered).await;
        let got = answer(&proxy, sql, !ordered).await;
        assert!(
            expected.is_ok(),
            "{sql}: the reference failed: {expected:?}"
        );
        if got != expected {
            failures.push(format!(
                "{sql}\n  pgshard:   {got:?}\n  reference: {expected:?}"
            ));
        }
    }
    for sql in FINISHED {
        let expected = answer(&direct, sql, true).await;
        assert!(
            expected.is_ok(),
            "{sql}: the reference failed: {expected:?}"
        );
        let got = answer(&proxy, sql, true).await;
        if got != expected {
            failures.push(format!(
                "{sql} (finished on the coordinator)\n  pgshard:   {got:?}\n  reference: {expected:?}"
            ));
        }
    }
    explain(&proxy, n).await;
    // A row without its key is placed nowhere, so no NULL-key group can be
    // split across shards (the column's NOT NULL is not what refuses it).
    let null_key = proxy
        .simple_query("INSERT INTO users (id, grp) VALUES (NULL, 1)")
        .await;
    let code = null_key
        .err()
        .as_ref()
        .and_then(common::code)
        .map(str::to_owned);
    assert!(
        code.as_deref().is_some_and(|c| c != "23502"),
        "a NULL sharding key must be refused by pgshard: {code:?}"
    );
    // The session is still usable after the refusals.
    assert_eq!(
        answer(&proxy, "SELECT count(*) FROM users", true)
            .await
            .unwrap()
            .1,
        vec![vec![Some("240".to_owned())]]
    );
    assert_eq!(common::proxy_panics(), 0);
    assert!(
        failures.is_empty(),
        "{} of the cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// EXPLAIN says how pgshard routes and merges, before the shards' plans.
async fn explain(proxy: &Client, n: usize) {
    let sql = "EXPLAIN SELECT id FROM users ORDER BY score LIMIT 3 OFFSET 1";
    let lines = common::column(proxy, sql, "QUERY PLAN").await;
    assert!(
        lines[0].starts_with(&format!("pgshard: runs on {n} shards")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("k-way merge")), "{lines:?}");
    let shard_sql =
        "pgshard: shards run: EXPLAIN SELECT id, score FROM users ORDER BY score LIMIT 4";
    assert!(lines.iter().any(|l| l == shard_sql), "{lines:?}");
    // Each shard's plan follows: one Limit node per shard.
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("Limit")).count(),
        n,
        "{lines:?}"
    );
    let lines = common::column(
        proxy,
        "EXPLAIN (FORMAT JSON) SELECT count(*) FROM users",
        "QUERY PLAN",
    )
    .await;
    assert_eq!(lines.len(), n, "JSON plans get no pgshard lines: {lines:?}");
    // What the merge cannot answer is finished on the coordinator.
    let lines = common::column(
        proxy,
        "EXPLAIN SELECT rank() OVER () FROM users",
        "QUERY PLAN",
    )
    .await;
    assert!(
        lines[0].starts_with("pgshard: finished on the coordinator (database 0"),
        "{lines:?}"
    );
}

/// With `cross_shard_finish = "refuse"`, what the merge cannot answer is
/// refused (0A000), its EXPLAIN too, and the session stays usable.
#[tokio::test(flavor = "multi_thread")]
async fn unmergeable_selects_are_refused_when_told_to() {
    let (cluster, _reference, _) = start(2, "cross_shard_finish = \"refuse\"");
    let proxy = cluster.connect().await;
    for insert in rows() {
        proxy.simple_query(&insert).await.unwrap();
    }
    let mut failures = Vec::new();
    for sql in REFUSED {
        match answer(&proxy, sql, true).await {
            Err(code) if code == "0A000" => {}
            other => failures.push(format!("{sql}: expected 0A000, got {other:?}")),
        }
    }
    let refused = proxy
        .simple_query("EXPLAIN SELECT rank() OVER () FROM users")
        .await;
    assert_eq!(refused.err().as_ref().and_then(common::code), Some("0A000"));
    assert_eq!(
        answer(&proxy, "SELECT count(*) FROM users", true)
            .await
            .unwrap()
            .1,
        vec![vec![Some("240".to_owned())]]
    );
    assert_eq!(common::proxy_panics(), 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_shard_selects_match_one_postgres_on_two_shards() {
    check(2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cross_shard_selects_match_one_postgres_on_four_shards() {
    check(4).await;
}
