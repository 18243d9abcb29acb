//! Cross-shard SELECTs the streaming merge refuses, finished on the
//! coordinator (`cross_shard_finish = "coordinator"`, issue 34) in the
//! simple protocol outside transaction blocks: answered exactly as one
//! reference Postgres holding every row answers them (columns and rows);
//! no temp table left behind; past `cross_shard_gather_limit` a 54000
//! error and the session goes on; a shard down gives a clear error and the
//! session goes on; inside a block, in the extended protocol and with the
//! default config the statement is still refused with 0A000.

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

struct Setup {
    servers: Vec<PgServer>,
    /// Kept alive for the test's length.
    _reference: PgServer,
    direct: Client,
    proxy: TestProxy,
}

/// 2 shards and a reference, loaded; pgshard with `general` lines.
async fn start(general: &str) -> Setup {
    common::watch_proxy_panics();
    let data = Data::generate(34);
    let mut servers = common::servers(3);
    let reference = servers.pop().unwrap();
    let mut shards = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let db = format!("shard_{i}");
        shards.push(connect(server.port(), "app", "app-pw", &db).await.unwrap());
    }
    let direct = connect(reference.port(), "app", "app-pw", "shard_2")
        .await
        .unwrap();
    data::load(&data, &shards, &direct).await;
    let config = sharded_config(&servers, general, data::SHARDING);
    let proxy = TestProxy::start(&config, USERS).unwrap();
    Setup {
        servers,
        _reference: reference,
        direct,
        proxy,
    }
}

async fn client(setup: &Setup) -> Client {
    connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap()
}

/// Temp tables on shard 0 (the coordinator), of any session.
async fn temp_tables(setup: &Setup) -> String {
    let shard = connect(setup.servers[0].port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    let rows = shard
        .simple_query("SELECT count(*) FROM pg_class WHERE relpersistence = 't'")
        .await
        .unwrap();
    rows.into_iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap()
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

#[tokio::test(flavor = "multi_thread")]
async fn refused_where_it_comes_later_and_by_default() {
    let setup = start("cross_shard_finish = \"coordinator\"").await;
    let proxy = client(&setup).await;
    // Inside a transaction block: refused, saying so; the block is over.
    proxy.simple_query("BEGIN").await.unwrap();
    let (code, message) = answer(&proxy, ONE, false).await.unwrap_err();
    assert_eq!(code, "0A000", "{message}");
    assert!(
        message.contains("not inside a transaction block"),
        "{message}"
    );
    assert!(message.contains("comes later"), "{message}");
    proxy.simple_query("ROLLBACK").await.unwrap();
    // The extended protocol: refused, saying so.
    let err = proxy.query(ONE, &[]).await.unwrap_err();
    let message = common::describe(&err);
    assert_eq!(common::code(&err), Some("0A000"), "{message}");
    assert!(
        message.contains("not in the extended protocol"),
        "{message}"
    );
    let err = proxy
        .query(
            "SELECT u.id FROM users u JOIN orders o ON u.grp = o.qty",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"));
    assert!(common::describe(&err).contains("comes later"));
    // And the simple protocol outside a block still answers it.
    assert!(answer(&proxy, ONE, false).await.is_ok());

    // The default config refuses, as before this path existed.
    let config = sharded_config(&setup.servers, "", data::SHARDING);
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
