//! Protocol defects real drivers found (postgres.js, asyncpg, psycopg,
//! node-postgres, pgjdbc), each reproduced here on the raw protocol or with
//! tokio-postgres against real servers: shared statements gone stale after
//! DDL, 16-bit counts read as signed, a pipelined fan-out that hung and
//! leaked its server, errors in a deferred transaction, cursors in a
//! deferred transaction, admin counters, abandoned sessions, fan-out
//! statements broken after one failure, and a Query after an unsynced
//! prepare (asyncpg) that kept its server.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::wire::{self, errors, first_column, tags, Read, Wire};
use common::{code, rows, Cluster};

/// One server behind pgshard in transaction mode, `general` added.
fn unsharded(general: &str) -> Cluster {
    Cluster::start_with(1, general, &common::raw_users())
}

/// `n` shards holding only their own partitions (see `create_sharded_schema`).
/// Tables the config does not name (`whoami`, one row per shard saying
/// which) are read from every shard: `unlisted_tables = "sharded"`.
fn sharded(n: usize, general: &str) -> Cluster {
    let general = format!("unlisted_tables = \"sharded\"\n{general}");
    Cluster::start_sharded_raw(n, &general, "")
}

async fn login(cluster: &Cluster) -> Wire {
    Wire::login(cluster.port(), "raw", "prod").await
}

/// Send `messages` in one write and read up to ReadyForQuery.
async fn exchange(raw: &mut Wire, messages: &[Vec<u8>]) -> Vec<(u8, bytes::Bytes)> {
    raw.send(&messages.concat()).await;
    raw.until_ready().await
}

/// Parse (unnamed or `name`) + Bind + Execute + Sync of `sql` with text
/// parameters.
async fn run_extended(
    raw: &mut Wire,
    name: &str,
    sql: &str,
    params: &[Option<&str>],
) -> Vec<(u8, bytes::Bytes)> {
    exchange(
        raw,
        &[
            wire::parse(name, sql),
            wire::bind_text("", name, params),
            wire::execute(),
            wire::sync(),
        ],
    )
    .await
}

/// Defect 1: the unnamed statement is parsed afresh, as on Postgres: after
/// `DROP TABLE t; CREATE TABLE t (x text)` the same text works (psycopg
/// with `prepare=False`), for a SELECT and for `INSERT ... RETURNING`.
#[tokio::test]
async fn unnamed_statements_follow_ddl() {
    let cluster = unsharded("default_pool_size = 1");
    let mut raw = login(&cluster).await;
    exchange(&mut raw, &[wire::query("CREATE TABLE t (x int)")]).await;
    let select = "SELECT x FROM t WHERE $1::int = 1";
    let insert = "INSERT INTO t VALUES ($1) RETURNING *";
    let replies = run_extended(&mut raw, "", insert, &[Some("7")]).await;
    assert_eq!(first_column(&replies), vec!["7"], "{replies:?}");
    let replies = run_extended(&mut raw, "", select, &[Some("1")]).await;
    assert_eq!(first_column(&replies), vec!["7"], "{replies:?}");
    exchange(
        &mut raw,
        &[wire::query("DROP TABLE t; CREATE TABLE t (x text)")],
    )
    .await;
    let replies = run_extended(&mut raw, "", insert, &[Some("seven")]).await;
    assert_eq!(errors(&replies), Vec::<String>::new(), "{replies:?}");
    assert_eq!(first_column(&replies), vec!["seven"]);
    let replies = run_extended(&mut raw, "", select, &[Some("1")]).await;
    assert_eq!(errors(&replies), Vec::<String>::new(), "{replies:?}");
    assert_eq!(first_column(&replies), vec!["seven"]);
    // Describe-first of the unnamed statement, in another batch than its
    // Bind (the server may change in between in transaction mode).
    let replies = exchange(
        &mut raw,
        &[
            wire::parse("", select),
            wire::describe(b'S', ""),
            wire::sync(),
        ],
    )
    .await;
    assert_eq!(tags(&replies), "1tTZ", "{replies:?}");
    let replies = exchange(
        &mut raw,
        &[
            wire::bind_text("", "", &[Some("1")]),
            wire::execute(),
            wire::sync(),
        ],
    )
    .await;
    assert_eq!(tags(&replies), "2DCZ", "{replies:?}");
}

/// Defect 1: a named statement whose server copy is stale fails as it
/// does on Postgres, and the client's recovery (a Parse under a new name,
/// postgres.js) gets a new server statement; a DDL through pgshard makes
/// later Parses of any text new statements too.
#[tokio::test]
async fn stale_named_statements_can_be_prepared_again() {
    let cluster = unsharded("default_pool_size = 1");
    let mut raw = login(&cluster).await;
    let direct = cluster.shard(0).await;
    direct
        .batch_execute("CREATE TABLE s (x int); INSERT INTO s VALUES (1)")
        .await
        .unwrap();
    let sql = "SELECT x FROM s";
    let replies = run_extended(&mut raw, "first", sql, &[]).await;
    assert_eq!(first_column(&replies), vec!["1"], "{replies:?}");
    // DDL behind pgshard's back: the server copy is stale.
    direct
        .batch_execute("ALTER TABLE s ALTER COLUMN x TYPE text")
        .await
        .unwrap();
    let replies = exchange(
        &mut raw,
        &[
            wire::bind_text("", "first", &[]),
            wire::execute(),
            wire::sync(),
        ],
    )
    .await;
    assert_eq!(
        errors(&replies),
        vec!["0A000"],
        "as on Postgres: {replies:?}"
    );
    let replies = run_extended(&mut raw, "second", sql, &[]).await;
    assert_eq!(errors(&replies), Vec::<String>::new(), "{replies:?}");
    assert_eq!(first_column(&replies), vec!["1"]);

    // Through pgshard: another client's DDL; a new Parse of a text prepared
    // before it is analysed afresh.
    let sql = "SELECT x FROM u WHERE $1::int = 1";
    exchange(
        &mut raw,
        &[wire::query(
            "CREATE TABLE u (x int); INSERT INTO u VALUES (5)",
        )],
    )
    .await;
    let replies = run_extended(&mut raw, "u1", sql, &[Some("1")]).await;
    assert_eq!(first_column(&replies), vec!["5"], "{replies:?}");
    let mut other = login(&cluster).await;
    exchange(
        &mut other,
        &[wire::query("ALTER TABLE u ALTER COLUMN x TYPE text")],
    )
    .await;
    let replies = run_extended(&mut other, "u2", sql, &[Some("1")]).await;
    assert_eq!(errors(&replies), Vec::<String>::new(), "{replies:?}");
    assert_eq!(first_column(&replies), vec!["5"]);
}

/// Defect 3: statement tracking stays true when an error makes the server
/// skip messages pgshard answered or injected: a Parse answered locally
/// (the server already had the statement) and a Close pgshard injected to
/// make room (`prepared_statements_limit`). Before, the client's name
/// outlived a skipped Parse (42P05 on the next Parse of it), and a skipped
/// Close left the server holding a statement pgshard thought gone (42P05
/// "__pgshard_N already exists" on its next use).
#[tokio::test]
async fn statement_tracking_survives_skipped_messages() {
    let cluster = unsharded("default_pool_size = 1\nprepared_statements_limit = 2");
    let mut raw = login(&cluster).await;
    let failing = "SELECT 1 / $1::int";
    for (name, sql) in [("a", "SELECT 2"), ("b", "SELECT 3")] {
        let replies = run_extended(&mut raw, name, sql, &[]).await;
        assert_eq!(tags(&replies), "12DCZ", "{replies:?}");
    }
    // The server holds "SELECT 2" and "SELECT 3". An error at Bind skips
    // the rest: a Parse the server would answer from what it has, and a
    // Parse that needs room (a Close of the oldest first).
    let replies = exchange(
        &mut raw,
        &[
            wire::parse("f", failing),
            wire::bind_text("", "f", &[Some("0")]),
            wire::execute(),
            wire::parse("again", "SELECT 2"),
            wire::parse("new", "SELECT 4"),
            wire::sync(),
        ],
    )
    .await;
    assert_eq!(tags(&replies), "1EZ", "{replies:?}");
    assert_eq!(errors(&replies), vec!["22012"]);
    // As on Postgres: "again" and "new" do not exist; making them works,
    // and every statement runs.
    for (name, sql, value) in [
        ("again", "SELECT 2", "2"),
        ("new", "SELECT 4", "4"),
        ("c", "SELECT 3", "3"),
        ("a2", "SELECT 2", "2"),
    ] {
        let replies = run_extended(&mut raw, name, sql, &[]).await;
        assert_eq!(
            errors(&replies),
            Vec::<String>::new(),
            "{name}: {replies:?}"
        );
        assert_eq!(first_column(&replies), vec![value]);
    }
    let replies = run_extended(&mut raw, "f2", failing, &[Some("1")]).await;
    assert_eq!(first_column(&replies), vec!["1"], "{replies:?}");
}

/// `SELECT cardinality(ARRAY[$1::int, ..., $n::int])`.
fn many_params(n: usize) -> String {
    let list: Vec<String> = (1..=n).map(|i| format!("${i}::int")).collect();
    format!("SELECT cardinality(ARRAY[{}])", list.join(","))
}

/// Defect 2: parameter counts are unsigned 16-bit: 32,768 and 65,535
/// parameters work, on one server and on a sharded cluster.
#[tokio::test]
async fn parameter_counts_up_to_65535() {
    for cluster in [unsharded(""), sharded(2, "")] {
        let mut raw = login(&cluster).await;
        for n in [32_768, 65_535] {
            let params = vec![Some("1"); n];
            let replies = run_extended(&mut raw, "", &many_params(n), &params).await;
            assert_eq!(
                first_column(&replies),
                vec![n.to_string()],
                "{n}: {:?}",
                errors(&replies)
            );
        }
    }
}

/// Defect 4: Parse(named) + Describe + Bind + Execute + Sync in one batch
/// for statements that go to several shards (postgres.js tagged templates)
/// is answered in full, and holds no server afterwards.
#[tokio::test]
async fn pipelined_fan_out_with_describe_is_answered() {
    let cluster = sharded(2, "default_pool_size = 2");
    let mut raw = login(&cluster).await;
    for (i, sql) in [
        "CREATE TABLE IF NOT EXISTS pipe_t (a int)",
        "SELECT shard FROM whoami",
        "DROP TABLE IF EXISTS pipe_t",
    ]
    .iter()
    .enumerate()
    {
        let name = format!("s{i}");
        let batch = [
            wire::parse(&name, sql),
            wire::describe(b'S', &name),
            wire::bind_text("", &name, &[]),
            wire::execute(),
            wire::sync(),
        ];
        raw.send(&batch.concat()).await;
        let mut replies = Vec::new();
        loop {
            match raw.read_within(Duration::from_secs(5)).await {
                Read::Message(tag, body) => {
                    replies.push((tag, body));
                    if tag == b'Z' {
                        break;
                    }
                }
                other => panic!("{sql}: {other:?} after {:?}", tags(&replies)),
            }
        }
        assert_eq!(errors(&replies), Vec::<String>::new(), "{sql}: {replies:?}");
        let expected = if i == 1 { "1tT2DDCZ" } else { "1tn2CZ" };
        assert_eq!(tags(&replies), expected, "{sql}");
    }
    drop(raw);
    let admin = cluster.admin().await;
    wait_for_idle_pools(&admin).await;
}

/// Defect 5: an error before a transaction's first keyed statement aborts
/// it, as on Postgres.
#[tokio::test]
async fn errors_abort_a_deferred_transaction() {
    let cluster = sharded(2, "");
    let client = cluster.connect().await;
    client.batch_execute("BEGIN").await.unwrap();
    let err = client.simple_query("SELECT 1/0").await.unwrap_err();
    assert_eq!(code(&err), Some("22012"));
    let err = client.simple_query("SELECT 1").await.unwrap_err();
    assert_eq!(code(&err), Some("25P02"));
    let err = client
        .simple_query("SELECT * FROM orders WHERE tenant_id = 1")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("25P02"));
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        common::column(&client, "SELECT 2 AS two", "two").await,
        vec!["2"]
    );
    // The extended protocol: the error comes at Bind.
    let mut raw = login(&cluster).await;
    exchange(&mut raw, &[wire::query("BEGIN")]).await;
    let replies = run_extended(&mut raw, "", "SELECT 1 / $1::int", &[Some("0")]).await;
    assert_eq!(errors(&replies), vec!["22012"]);
    assert_eq!(replies.last().unwrap().1[..], b"E"[..], "status E");
    let replies = run_extended(&mut raw, "", "SELECT 1", &[]).await;
    assert_eq!(errors(&replies), vec!["25P02"]);
    let replies = exchange(&mut raw, &[wire::query("COMMIT")]).await;
    assert_eq!(tags(&replies), "CZ");
    assert_eq!(&replies[0].1[..], b"ROLLBACK\0");
}

/// A second BEGIN inside a deferred transaction gets Postgres's warning
/// and leaves the transaction deferred: it opens later on the shard of its
/// first keyed statement, not on the shard the BEGIN happened to reach.
#[tokio::test]
async fn nested_begin_keeps_the_transaction_deferred() {
    let cluster = sharded(2, "");
    let mut raw = login(&cluster).await;
    exchange(&mut raw, &[wire::query("BEGIN")]).await;
    let replies = exchange(&mut raw, &[wire::query("BEGIN")]).await;
    assert_eq!(tags(&replies), "NCZ");
    assert!(
        String::from_utf8_lossy(&replies[0].1).contains("25001"),
        "the warning's SQLSTATE"
    );
    assert_eq!(&replies[1].1[..], b"BEGIN\0");
    assert_eq!(&replies[2].1[..], b"T");
    // In the extended protocol the warning comes with the Execute, as
    // Postgres sends it: after BindComplete, before CommandComplete.
    let replies = run_extended(&mut raw, "", "BEGIN", &[]).await;
    assert_eq!(tags(&replies), "12NCZ");
    assert_eq!(&replies.last().unwrap().1[..], b"T");
    // A key of one shard, then a key of the other: the transaction opened
    // on the first key's shard and the other joins it; ROLLBACK ends it on
    // both.
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let insert =
        |k: i64| format!("INSERT INTO orders (tenant_id, id, item) VALUES ({k}, {k}, 'nested')");
    let replies = exchange(&mut raw, &[wire::query(&insert(a))]).await;
    assert_eq!(tags(&replies), "CZ");
    let replies = exchange(&mut raw, &[wire::query(&insert(b))]).await;
    assert_eq!(tags(&replies), "CZ");
    assert_eq!(&replies[1].1[..], b"T");
    let replies = exchange(&mut raw, &[wire::query("ROLLBACK")]).await;
    assert_eq!(tags(&replies), "CZ");
    assert_eq!(&replies[1].1[..], b"I");
    for shard in cluster.shards().await {
        let rows = common::column(&shard, "SELECT count(*) AS n FROM orders", "n").await;
        assert_eq!(rows, vec!["0"]);
    }
}

/// Defect 6: a cursor (named portal fetched across Syncs) on a keyless
/// query inside a transaction keeps its portal (asyncpg, pgjdbc).
#[tokio::test]
async fn cursors_in_a_deferred_transaction_keep_their_portal() {
    let cluster = sharded(2, "");
    let mut client = cluster.connect().await;
    let txn = client.transaction().await.unwrap();
    let statement = txn
        .prepare("SELECT g FROM generate_series(1, 1000) g")
        .await
        .unwrap();
    let portal = txn.bind(&statement, &[]).await.unwrap();
    let mut seen = 0;
    loop {
        let rows = txn.query_portal(&portal, 10).await.unwrap();
        if rows.is_empty() {
            break;
        }
        for row in rows {
            seen += 1;
            assert_eq!(row.get::<_, i32>(0), seen);
        }
    }
    assert_eq!(seen, 1000);
    // A keyed statement afterwards joins the same transaction if it lives
    // on the same shard, or is refused; either way the cursor worked.
    txn.commit().await.unwrap();
}

/// The `SHOW POOLS` rows of cluster `prod`, user `app` (one per shard).
async fn pool_rows(admin: &tokio_postgres::Client) -> Vec<HashMap<String, String>> {
    rows(admin, "SHOW POOLS")
        .await
        .into_iter()
        .filter(|r| r["database"] == "prod" && r["user"] == "app")
        .collect()
}

/// Wait until no client holds or waits for a server, failing after 10 s.
async fn wait_for_idle_pools(admin: &tokio_postgres::Client) {
    let mut last = Vec::new();
    for _ in 0..100 {
        last = pool_rows(admin).await;
        if last
            .iter()
            .all(|r| r["cl_active"] == "0" && r["cl_waiting"] == "0" && r["sv_active"] == "0")
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("pools still busy: {last:?}");
}

/// Defect 7: `cl_active` counts the clients holding a server, fan-outs
/// included, and drops back to 0; `total_received` counts client bytes.
#[tokio::test]
async fn admin_counters_stay_true() {
    let cluster = sharded(2, "");
    let admin = cluster.admin().await;
    {
        let client = cluster.connect().await;
        client.simple_query("SELECT * FROM orders").await.unwrap();
        client
            .simple_query("SELECT * FROM orders WHERE tenant_id = 3")
            .await
            .unwrap();
        client.batch_execute("BEGIN").await.unwrap();
        client
            .simple_query("SELECT * FROM orders WHERE tenant_id = 3")
            .await
            .unwrap();
        let active: usize = pool_rows(&admin)
            .await
            .iter()
            .map(|r| r["cl_active"].parse::<usize>().unwrap())
            .sum();
        assert_eq!(active, 1, "one client holds one server");
        client.batch_execute("COMMIT").await.unwrap();
    }
    wait_for_idle_pools(&admin).await;
    let stats = rows(&admin, "SHOW STATS").await;
    let received: u64 = stats
        .iter()
        .filter(|r| r["database"] == "prod")
        .map(|r| r["total_received"].parse::<u64>().unwrap())
        .sum();
    assert!(
        received > 0,
        "total_received counts client bytes: {stats:?}"
    );
}

/// Defect 8: clients that leave while waiting for a server, in a fan-out,
/// or during PAUSE release everything; the pools serve afterwards.
#[tokio::test]
async fn abandoned_sessions_release_everything() {
    let cluster = sharded(2, "default_pool_size = 2\ncheckout_timeout = 30000");
    let admin = cluster.admin().await;
    // Holds shard 0's and shard 1's servers, so that others wait.
    let holders = [cluster.connect().await, cluster.connect().await];
    for holder in &holders {
        holder.batch_execute("BEGIN").await.unwrap();
    }
    holders[0]
        .simple_query("SELECT * FROM orders WHERE tenant_id = 1")
        .await
        .unwrap();
    holders[1]
        .simple_query("SELECT * FROM orders WHERE tenant_id = 2")
        .await
        .unwrap();
    let abandon = |sql: &'static str| {
        let port = cluster.port();
        async move {
            let mut tasks = Vec::new();
            for _ in 0..100 {
                tasks.push(tokio::spawn(async move {
                    let mut raw = Wire::login(port, "raw", "prod").await;
                    raw.send(&wire::query(sql)).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    drop(raw);
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
        }
    };
    // Waiting on a fan-out's checkout and on a keyed checkout.
    abandon("SELECT * FROM orders").await;
    abandon("SELECT * FROM orders WHERE tenant_id = 1").await;
    for holder in &holders {
        holder.batch_execute("COMMIT").await.unwrap();
    }
    // In a running fan-out.
    abandon("SELECT pg_sleep(20) FROM whoami").await;
    // During PAUSE.
    admin.simple_query("PAUSE").await.unwrap();
    abandon("SELECT 1").await;
    admin.simple_query("RESUME").await.unwrap();
    wait_for_idle_pools(&admin).await;
    // Sessions notice their client left as soon as they next look.
    let mut clients = Vec::new();
    for _ in 0..100 {
        clients = rows(&admin, "SHOW CLIENTS").await;
        if clients.iter().all(|c| c["user"] != "raw") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        clients.iter().all(|c| c["user"] != "raw"),
        "abandoned clients still listed after 10 s: {clients:?}"
    );
    let client = cluster.connect().await;
    let started = std::time::Instant::now();
    client.simple_query("SELECT * FROM orders").await.unwrap();
    client
        .simple_query("SELECT * FROM orders WHERE tenant_id = 5")
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "pools serve");
}

/// Defect 9: a statement sent to several shards that fails at run time
/// works with the next parameters, on this connection and on new ones.
#[tokio::test]
async fn fan_out_statements_survive_a_failure() {
    let cluster = sharded(2, "");
    let sql = "SELECT shard FROM whoami WHERE shard < 10 / $1::int";
    for _ in 0..2 {
        let client = cluster.connect().await;
        let statement = client.prepare(sql).await.unwrap();
        let err = client.query(&statement, &[&0i32]).await.unwrap_err();
        assert_eq!(code(&err), Some("22012"));
        for _ in 0..3 {
            let rows = client.query(&statement, &[&2i32]).await.unwrap();
            assert_eq!(rows.len(), 2);
        }
    }
    let mut raw = login(&cluster).await;
    let replies = run_extended(&mut raw, "", sql, &[Some("0")]).await;
    assert_eq!(errors(&replies), vec!["22012"]);
    let replies = run_extended(&mut raw, "", sql, &[Some("5")]).await;
    assert_eq!(tags(&replies), "12DDCZ", "{replies:?}");
}

/// A list setting given at startup (`-c search_path=a,public`, asyncpg's
/// `server_settings`) means what it means to Postgres: two schemas, not
/// one quoted name.
#[tokio::test]
async fn startup_list_settings_keep_their_meaning() {
    let cluster = unsharded("");
    let options = "options='-c search_path=a,public'";
    let through = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=prod {options}",
        cluster.port()
    ))
    .await
    .unwrap();
    let direct = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=shard_0 {options}",
        cluster.servers[0].port()
    ))
    .await
    .unwrap();
    for sql in [
        "SHOW search_path",
        "SELECT current_schemas(false)::text",
        "SHOW application_name",
    ] {
        let got: Vec<String> = through
            .simple_query(sql)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .collect();
        let expected_values: Vec<String> = direct
            .simple_query(sql)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .collect();
        assert_eq!(got, expected_values, "{sql}");
    }
}

/// Statements that need the transaction block (DECLARE, SAVEPOINT) before
/// a transaction's first keyed statement open it, instead of running
/// outside it and failing (psycopg's server-side cursors on keyless
/// queries).
#[tokio::test]
async fn cursors_and_savepoints_open_a_deferred_transaction() {
    let cluster = sharded(2, "");
    let client = cluster.connect().await;
    // One statement per query: BEGIN is answered by pgshard.
    for sql in [
        "BEGIN",
        "DECLARE c CURSOR FOR SELECT g FROM generate_series(1, 5) g",
    ] {
        client.batch_execute(sql).await.unwrap();
    }
    let fetched = common::column(&client, "FETCH 3 FROM c", "g").await;
    assert_eq!(fetched, vec!["1", "2", "3"]);
    let fetched = common::column(&client, "FETCH 9 FROM c", "g").await;
    assert_eq!(fetched, vec!["4", "5"]);
    for sql in [
        "CLOSE c",
        "COMMIT",
        "BEGIN",
        "SAVEPOINT a",
        "RELEASE a",
        "SAVEPOINT b",
    ] {
        client.batch_execute(sql).await.unwrap();
    }
    let err = client.simple_query("SELECT 1/0").await.unwrap_err();
    assert_eq!(code(&err), Some("22012"));
    client
        .batch_execute("ROLLBACK TO SAVEPOINT b")
        .await
        .unwrap();
    assert_eq!(
        common::column(&client, "SELECT 7 AS x", "x").await,
        vec!["7"]
    );
    client.batch_execute("ROLLBACK").await.unwrap();
}

/// Pipelined statements, each with its own Sync, on alternating shards
/// (postgres.js on one connection): an error in one segment skips only
/// that segment's messages, not those of the segment being sent when the
/// error arrives.
#[tokio::test]
async fn an_error_skips_only_its_own_segment() {
    let cluster = sharded(2, "");
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let client = cluster.connect().await;
    for key in [a, b] {
        client
            .simple_query(&format!(
                "INSERT INTO orders (tenant_id, id, item) VALUES ({key}, 1, 'x')"
            ))
            .await
            .unwrap();
    }
    let mut raw = login(&cluster).await;
    let mut batch = Vec::new();
    let read = |key: i64| format!("SELECT tenant_id FROM orders WHERE tenant_id = {key}");
    let statements = [
        format!("SELECT 1/0 FROM orders WHERE tenant_id = {a}"),
        read(b),
        read(a),
        format!("SELECT tenant_id FROM orders WHERE tenant_id IN ({a}, {b}) ORDER BY 1"),
        format!("SELECT 1/0 FROM orders WHERE tenant_id IN ({a}, {b})"),
        read(b),
    ];
    for (i, sql) in statements.iter().enumerate() {
        let name = format!("p{i}");
        batch.extend([
            wire::parse(&name, sql),
            wire::describe(b'S', &name),
            wire::bind_text("", &name, &[]),
            wire::execute(),
            wire::sync(),
        ]);
    }
    raw.send(&batch.concat()).await;
    let expected: [(&str, Vec<i64>); 6] = [
        ("1tTEZ", vec![]),
        ("1tT2DCZ", vec![b]),
        ("1tT2DCZ", vec![a]),
        ("1tT2DDCZ", vec![a.min(b), a.max(b)]),
        ("1tTEZ", vec![]),
        ("1tT2DCZ", vec![b]),
    ];
    for (i, (tags_expected, keys)) in expected.into_iter().enumerate() {
        let replies = raw.until_ready().await;
        assert_eq!(tags(&replies), tags_expected, "statement {i}: {replies:?}");
        let mut got = first_column(&replies);
        got.sort();
        let mut want: Vec<String> = keys.iter().map(i64::to_string).collect();
        want.sort();
        assert_eq!(got, want, "statement {i}");
    }
}

/// A SET sent through the extended protocol (postgres.js, named pg
/// statements) is the client's setting from then on, as a simple-query SET
/// is: on later transactions, whichever server runs them.
#[tokio::test]
async fn extended_protocol_settings_are_kept() {
    let cluster = unsharded("default_pool_size = 2");
    let mut raw = login(&cluster).await;
    for name in ["", "tz"] {
        let replies = run_extended(&mut raw, name, "SET TimeZone = 'America/New_York'", &[]).await;
        assert_eq!(errors(&replies), Vec::<String>::new(), "{replies:?}");
        for _ in 0..3 {
            let replies = exchange(&mut raw, &[wire::query("SHOW TimeZone")]).await;
            assert_eq!(first_column(&replies), vec!["America/New_York"]);
        }
        exchange(&mut raw, &[wire::query("RESET TimeZone")]).await;
    }
    // A SET followed by an error in the same segment is rolled back with
    // the implicit transaction, as on Postgres.
    let replies = exchange(
        &mut raw,
        &[
            wire::parse("", "SET TimeZone = 'Asia/Tokyo'"),
            wire::bind_text("", "", &[]),
            wire::execute(),
            wire::parse("", "SELECT 1/0"),
            wire::bind_text("", "", &[]),
            wire::execute(),
            wire::sync(),
        ],
    )
    .await;
    assert_eq!(errors(&replies), vec!["22012"]);
    let replies = exchange(&mut raw, &[wire::query("SHOW TimeZone")]).await;
    assert_ne!(first_column(&replies), vec!["Asia/Tokyo"]);
}

/// Session mode: RESET and SET ... TO DEFAULT return to the client's
/// startup values, as on Postgres.
#[tokio::test]
async fn session_mode_reset_returns_to_startup_values() {
    let cluster = unsharded("pooler_mode = \"session\"");
    let client = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=prod application_name=foo",
        cluster.port()
    ))
    .await
    .unwrap();
    let show = "SHOW application_name";
    for reset in [
        "SET application_name = DEFAULT",
        "RESET application_name",
        "RESET ALL",
    ] {
        client
            .batch_execute("SET application_name = 'bar'")
            .await
            .unwrap();
        assert_eq!(
            common::column(&client, show, "application_name").await,
            vec!["bar"]
        );
        client.batch_execute(reset).await.unwrap();
        assert_eq!(
            common::column(&client, show, "application_name").await,
            vec!["foo"],
            "after {reset}"
        );
    }
}

/// A statement that goes to several shards fetched in parts before a
/// Flush (pg-cursor, postgres.js `.cursor()`) is refused at once instead
/// of waiting for a Sync that never comes; with a row-limited Execute
/// before the Sync, its rows come in parts (`tests/cursors.rs`).
#[tokio::test]
async fn fan_out_cursors_are_refused_not_hung() {
    let cluster = sharded(2, "");
    let mut raw = login(&cluster).await;
    let sql = "SELECT tenant_id FROM orders";
    let limited = [
        wire::parse("", sql),
        wire::bind_text("c", "", &[]),
        wire::execute_portal("c", 10),
        wire::sync(),
    ];
    let replies = exchange(&mut raw, &limited).await;
    assert_eq!(tags(&replies), "12CZ", "{replies:?}");
    for (tail, synced) in [
        (
            vec![wire::describe(b'P', "c"), wire::message(b'H', &[])],
            false,
        ),
        (
            vec![wire::execute_portal("c", 10), wire::message(b'H', &[])],
            false,
        ),
    ] {
        let mut batch = vec![wire::parse("", sql), wire::bind_text("c", "", &[])];
        batch.extend(tail);
        raw.send(&batch.concat()).await;
        // Without a Sync the client waits for the replies: they must come.
        let mut replies = Vec::new();
        while let Read::Message(tag, body) = raw.read_within(Duration::from_secs(3)).await {
            replies.push((tag, body));
            if tag == b'E' {
                break;
            }
        }
        assert_eq!(tags(&replies), "1E", "{replies:?}");
        assert_eq!(errors(&replies), vec!["0A000"]);
        if !synced {
            raw.send(&wire::sync()).await;
        }
        let rest = raw.until_ready().await;
        assert_eq!(tags(&rest), "Z");
        let after = exchange(&mut raw, &[wire::query("SELECT 5")]).await;
        assert_eq!(
            first_column(&after),
            vec!["5"],
            "{replies:?} then {after:?}"
        );
    }
}

/// Several statements before one Sync, some going to several shards (pgx
/// batches, libpq and psycopg pipelines): each gets its replies in order,
/// rows of every shard and summed counts; and the segment is all or
/// nothing, as one implicit transaction on Postgres is.
#[tokio::test]
async fn pipelines_with_cross_shard_statements() {
    let cluster = sharded(2, "");
    let mut raw = login(&cluster).await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let insert = "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 1, 'p')";
    let (a_text, b_text) = (a.to_string(), b.to_string());
    let batch = [
        // DDL to every shard, a keyed insert to each shard, a read of
        // every shard (described first), an unnamed statement re-parsed.
        wire::parse("ddl", "CREATE TABLE IF NOT EXISTS pipe_x (a int)"),
        wire::bind_text("", "ddl", &[]),
        wire::execute(),
        wire::parse("ins", insert),
        wire::bind_text("", "ins", &[Some(&a_text)]),
        wire::execute(),
        wire::bind_text("", "ins", &[Some(&b_text)]),
        wire::execute(),
        wire::parse("", "SELECT tenant_id FROM orders ORDER BY 1"),
        wire::bind_text("", "", &[]),
        wire::describe(b'P', ""),
        wire::execute(),
        wire::parse("", "SELECT 42"),
        wire::bind_text("", "", &[]),
        wire::execute(),
        wire::sync(),
    ];
    let replies = exchange(&mut raw, &batch).await;
    assert_eq!(errors(&replies), Vec::<String>::new(), "{replies:?}");
    assert_eq!(tags(&replies), "12C12C2C12TDDC12DCZ", "{replies:?}");
    let commands: Vec<String> = replies
        .iter()
        .filter(|(tag, _)| *tag == b'C')
        .map(|(_, body)| String::from_utf8_lossy(&body[..body.len() - 1]).into_owned())
        .collect();
    assert_eq!(
        commands,
        vec![
            "CREATE TABLE",
            "INSERT 0 1",
            "INSERT 0 1",
            "SELECT 2",
            "SELECT 1"
        ]
    );
    let mut rows = first_column(&replies);
    rows.sort();
    let mut want = vec![a.to_string(), b.to_string(), "42".to_owned()];
    want.sort();
    assert_eq!(rows, want);

    // All or nothing: a failure on one shard leaves nothing of the
    // segment anywhere (the DDL included).
    let batch = [
        wire::parse("", "CREATE TABLE pipe_y (a int)"),
        wire::bind_text("", "", &[]),
        wire::execute(),
        wire::bind_text("", "ins", &[Some(&b_text)]),
        wire::execute(),
        wire::sync(),
    ];
    let replies = exchange(&mut raw, &batch).await;
    assert_eq!(errors(&replies), vec!["23505"], "{replies:?}");
    for shard in cluster.shards().await {
        let found = common::column(
            &shard,
            "SELECT count(*)::text AS n FROM pg_tables WHERE tablename = 'pipe_y'",
            "n",
        )
        .await;
        assert_eq!(found, vec!["0"], "pipe_y left behind");
    }
    let replies = exchange(&mut raw, &[wire::query("SELECT 5")]).await;
    assert_eq!(first_column(&replies), vec!["5"]);

    // The unnamed statement parsed before the segment began is the one a
    // Bind inside it means; a Parse an error skipped never happened.
    let batch = [
        wire::parse("", "SELECT 7"),
        wire::bind_text("", "ddl", &[]),
        wire::execute(),
        wire::bind_text("", "", &[]),
        wire::execute(),
        wire::bind_text("", "ins", &[Some(&b_text)]),
        wire::execute(),
        wire::parse("late", "SELECT 8"),
        wire::sync(),
    ];
    let replies = exchange(&mut raw, &batch).await;
    assert_eq!(tags(&replies), "12NC2DC2EZ", "{replies:?}");
    assert_eq!(first_column(&replies), vec!["7"]);
    let replies = run_extended(&mut raw, "late", "SELECT 8", &[]).await;
    assert_eq!(first_column(&replies), vec!["8"], "{replies:?}");
}

/// A keyless read's shards are read concurrently: the rows of a fast shard
/// reach the client while a slow one is still working.
#[tokio::test]
async fn a_slow_shard_does_not_hold_back_the_others() {
    let cluster = sharded(2, "");
    let mut raw = login(&cluster).await;
    let started = std::time::Instant::now();
    raw.send(&wire::query(
        "SELECT shard FROM whoami, LATERAL (SELECT pg_sleep(CASE WHEN shard = 0 THEN 3 ELSE 0 END)) s",
    ))
    .await;
    let mut first_row = None;
    let mut rows = Vec::new();
    loop {
        let (tag, body) = raw.recv().await;
        if tag == b'D' {
            first_row.get_or_insert(started.elapsed());
            rows.push(first_column(&[(tag, body)]).remove(0));
        }
        if tag == b'Z' {
            break;
        }
    }
    assert_eq!(rows, vec!["1", "0"], "the fast shard's row first");
    let first_row = first_row.unwrap();
    assert!(
        first_row < Duration::from_millis(2500),
        "first row after {first_row:?}"
    );
    assert!(started.elapsed() >= Duration::from_secs(3));
}

/// A merge whose LIMIT is reached cancels the shards still running: the
/// client gets its row and a clean end, not the slow shard's 20 seconds or
/// its 57014, and the cancelled servers serve the next statements.
#[tokio::test]
async fn a_reached_limit_cancels_the_slower_shards() {
    let cluster = sharded(2, "");
    let client = cluster.connect().await;
    let started = std::time::Instant::now();
    let rows = common::column(
        &client,
        "SELECT shard FROM whoami, LATERAL (SELECT pg_sleep(CASE WHEN shard = 0 THEN 20 ELSE 0 END)) s LIMIT 1",
        "shard",
    )
    .await;
    assert_eq!(rows, vec!["1"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the slow shard was waited for: {:?}",
        started.elapsed()
    );
    // The cancel was delivered before the servers went back: statements
    // that take a while on them now are not cancelled.
    for _ in 0..3 {
        let rows = common::column(
            &client,
            "SELECT shard FROM whoami, LATERAL (SELECT pg_sleep(0.2)) s ORDER BY shard",
            "shard",
        )
        .await;
        assert_eq!(rows, vec!["0", "1"]);
    }
}

/// A CancelRequest and `query_timeout` stop a statement on every shard.
#[tokio::test]
async fn cancel_and_query_timeout_stop_a_fan_out() {
    let cluster = sharded(2, "");
    let client = cluster.connect().await;
    let token = client.cancel_token();
    let started = std::time::Instant::now();
    let cancel = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    let err = client
        .simple_query("SELECT pg_sleep(20) FROM whoami")
        .await
        .unwrap_err();
    cancel.await.unwrap();
    assert_eq!(code(&err), Some("57014"), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        common::column(&client, "SELECT 3 AS x", "x").await,
        vec!["3"]
    );

    let cluster = sharded(2, "query_timeout = 500");
    let client = cluster.connect().await;
    let started = std::time::Instant::now();
    let err = client
        .simple_query("SELECT pg_sleep(20) FROM whoami")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("57014"), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let admin = cluster.admin().await;
    wait_for_idle_pools(&admin).await;
}

/// asyncpg prepares with Parse, Describe and Flush (no Sync), and may then
/// send a Query (its `copy_records_to_table` prepares a query it never
/// runs, then COPYs): the Query ends those messages as a Sync would, so the
/// server goes back to the pool after it, and the statement stays usable.
#[tokio::test]
async fn a_query_after_an_unsynced_prepare_syncs_it() {
    let cluster = unsharded("");
    let admin = cluster.admin().await;
    let mut raw = login(&cluster).await;
    raw.send(
        &[
            wire::parse("s1", "SELECT 1"),
            wire::describe(b'S', "s1"),
            wire::message(b'H', &[]),
        ]
        .concat(),
    )
    .await;
    let mut described = Vec::new();
    while described.last() != Some(&b'T') {
        described.push(raw.recv().await.0);
    }
    assert_eq!(described, b"1tT");
    let replies = exchange(&mut raw, &[wire::query("SELECT 2")]).await;
    assert_eq!(first_column(&replies), ["2"]);
    let raw_pool = rows(&admin, "SHOW POOLS")
        .await
        .into_iter()
        .find(|r| r["database"] == "prod" && r["user"] == "raw")
        .unwrap();
    assert_eq!(raw_pool["sv_active"], "0", "{raw_pool:?}");
    let replies = exchange(&mut raw, &[wire::bind("s1"), wire::execute(), wire::sync()]).await;
    assert_eq!(first_column(&replies), ["1"], "{}", tags(&replies));
}

/// The same inside a transaction that creates a table on a cluster with a
/// column-only entry: the statement after the Query sees the new table
/// (the catalog is read on the transaction's server, which the unsynced
/// prepare kept busy).
#[tokio::test]
async fn a_query_after_an_unsynced_prepare_lets_the_catalog_be_read() {
    let column_only =
        "[[sharded_tables]]\ndatabase = \"prod\"\ncolumn = \"id\"\ndata_type = \"bigint\"\n";
    let cluster = Cluster::start_sharded_raw(2, "", column_only);
    let mut raw = login(&cluster).await;
    let replies = exchange(&mut raw, &[wire::query("BEGIN")]).await;
    assert_eq!(errors(&replies), Vec::<String>::new());
    raw.send(
        &[
            wire::parse("s1", "SELECT 1"),
            wire::describe(b'S', "s1"),
            wire::message(b'H', &[]),
        ]
        .concat(),
    )
    .await;
    while raw.recv().await.0 != b'T' {}
    let create = wire::query("CREATE TABLE settings (k text PRIMARY KEY, v text)");
    let replies = exchange(&mut raw, &[create]).await;
    assert_eq!(errors(&replies), Vec::<String>::new());
    let insert = "INSERT INTO settings (k, v) VALUES ($1, $2)";
    let replies = run_extended(&mut raw, "", insert, &[Some("a"), Some("1")]).await;
    assert_eq!(errors(&replies), Vec::<String>::new(), "{}", tags(&replies));
    let replies = exchange(&mut raw, &[wire::query("COMMIT")]).await;
    assert_eq!(errors(&replies), Vec::<String>::new());
    for shard in cluster.shards().await {
        let rows = shard.query("SELECT k FROM settings", &[]).await.unwrap();
        assert_eq!(rows.len(), 1, "a copy on every shard");
    }
}

/// pgjdbc with autocommit off sends its BEGIN with the transaction's first
/// statement, before one Sync: here DDL, which goes to every shard.
#[tokio::test]
async fn begin_sent_with_a_statement_for_every_shard() {
    let cluster = sharded(2, "");
    let mut raw = login(&cluster).await;
    let replies = exchange(
        &mut raw,
        &[
            wire::parse("", "BEGIN"),
            wire::bind(""),
            wire::execute(),
            wire::parse("", "CREATE TABLE made_in_txn (a int)"),
            wire::bind(""),
            wire::describe(b'P', ""),
            wire::execute(),
            wire::sync(),
        ],
    )
    .await;
    assert_eq!(tags(&replies), "12C12nCZ");
    assert_eq!(wire::command_tags(&replies), ["BEGIN", "CREATE TABLE"]);
    assert_eq!(replies.last().unwrap().1.as_ref(), b"T");
    let replies = exchange(&mut raw, &[wire::query("COMMIT")]).await;
    assert_eq!(wire::command_tags(&replies), ["COMMIT"]);
    for shard in cluster.shards().await {
        shard
            .batch_execute("SELECT a FROM made_in_txn")
            .await
            .unwrap();
    }
}

/// pgjdbc's `executeUpdate` sends its Execute with a row limit of 1; a
/// statement that returns no rows ignores it on Postgres, so one that goes
/// to every shard (a write to an omnisharded table, a keyless UPDATE, DDL)
/// runs; one that returns rows still cannot be fetched in parts.
#[tokio::test]
async fn a_row_limit_on_a_statement_without_rows_changes_nothing() {
    let cluster = sharded(2, "");
    let mut raw = login(&cluster).await;
    let limited = |sql: &str| {
        vec![
            wire::parse("", sql),
            wire::bind(""),
            wire::describe(b'P', ""),
            wire::execute_portal("", 1),
            wire::sync(),
        ]
    };
    for (sql, tag) in [
        (
            "INSERT INTO countries VALUES ('fr', 'France')",
            "INSERT 0 1",
        ),
        ("UPDATE countries SET name = 'FR'", "UPDATE 1"),
        (
            "UPDATE orders SET item = item WHERE item = 'none'",
            "UPDATE 0",
        ),
        ("CREATE TABLE made_here (a int)", "CREATE TABLE"),
    ] {
        let replies = exchange(&mut raw, &limited(sql)).await;
        assert_eq!(
            wire::command_tags(&replies),
            [tag],
            "{sql}: {}",
            tags(&replies)
        );
    }
    for shard in cluster.shards().await {
        let rows = shard
            .query("SELECT name FROM countries", &[])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        shard
            .batch_execute("SELECT a FROM made_here")
            .await
            .unwrap();
    }
    let returning = "UPDATE countries SET name = 'Fr' RETURNING name";
    let replies = exchange(&mut raw, &limited(returning)).await;
    assert_eq!(errors(&replies), ["0A000"], "{}", tags(&replies));
}
