//! Routing by sharding key through pgshard, on 2- and 4-shard clusters whose
//! shard databases each hold only their own hash partition of the sharded
//! tables, so that a misrouted row fails loudly: keyed writes and reads in
//! both protocols, keyless fan-out, deferred transactions, omnisharded and
//! table-family tables, `cross_shard_disabled`, manual overrides, the
//! query cache, bad keys and subqueries.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;

use common::{
    code, column, create_sharded_schema, describe, postgres_hash_shard, rows, Cluster, TextParam,
    SHARDING,
};
use futures_util::FutureExt;
use integration::TestProxy;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, SimpleQueryMessage};

#[tokio::test(flavor = "multi_thread")]
async fn routes_by_key_on_two_shards() {
    routes_by_key(2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn routes_by_key_on_four_shards() {
    routes_by_key(4).await;
}

type Section = for<'a> fn(&'a Cluster) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Every section runs, even after one fails (each starts from data it owns),
/// so one run reports every broken behaviour; the test fails at the end
/// naming them.
async fn routes_by_key(n: usize) {
    common::watch_proxy_panics();
    let servers = common::servers(n);
    create_sharded_schema(&servers);
    // `whoami` (one row per shard saying which) is read from every shard.
    let cluster = Cluster::start_sharded(servers, "unlisted_tables = \"sharded\"", SHARDING);
    let sections: [(&str, Section); 11] = [
        ("inserts and reads", |c| Box::pin(inserts_and_reads(c))),
        ("transactions", |c| Box::pin(transactions(c))),
        ("cross-shard transaction", |c| {
            Box::pin(cross_shard_transaction(c))
        }),
        ("omnisharded table", |c| Box::pin(omnisharded(c))),
        ("table family", |c| Box::pin(table_family(c))),
        ("overrides", |c| Box::pin(overrides(c))),
        ("query cache", |c| Box::pin(query_cache(c))),
        ("set local in a deferred transaction", |c| {
            Box::pin(set_local_in_deferred_transaction(c))
        }),
        ("bad keys", |c| Box::pin(bad_keys(c))),
        ("cross_shard_disabled", |c| {
            Box::pin(cross_shard_disabled(c))
        }),
        ("subqueries", |c| Box::pin(subqueries(c))),
    ];
    let mut failed = Vec::new();
    for (name, section) in sections {
        let started = std::time::Instant::now();
        match AssertUnwindSafe(section(&cluster)).catch_unwind().await {
            Ok(()) => println!("[{n} shards] {name}: ok ({:?})", started.elapsed()),
            Err(_) => {
                println!("[{n} shards] {name}: FAILED (see the panic above)");
                failed.push(name);
            }
        }
    }
    assert!(failed.is_empty(), "{n} shards: failed sections: {failed:?}");
    assert_eq!(common::proxy_panics(), 0, "a proxy task panicked");
}

/// The shards (direct connections) where `sql` returns a row.
async fn holders(shards: &[Client], sql: &str, params: &[&(dyn ToSql + Sync)]) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, shard) in shards.iter().enumerate() {
        if !shard.query(sql, params).await.unwrap().is_empty() {
            found.push(i);
        }
    }
    found
}

/// The shards holding order (`tenant`, `id`).
async fn order_on(shards: &[Client], tenant: i64, id: i64) -> Vec<usize> {
    let sql = "SELECT 1 FROM orders WHERE tenant_id = $1 AND id = $2";
    holders(shards, sql, &[&tenant, &id]).await
}

/// Insert an order in the simple protocol, the key as a literal.
async fn insert_simple(client: &Client, tenant: i64, id: i64, item: &str) {
    let sql = format!("INSERT INTO orders (tenant_id, id, item) VALUES ({tenant}, {id}, '{item}')");
    simple(client, &sql).await;
}

/// Run a simple query that must succeed; the panic names the SQL.
async fn simple(client: &Client, sql: &str) -> Vec<SimpleQueryMessage> {
    client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)))
}

/// The tenants of the insert section: small ones and the extremes.
fn tenants() -> Vec<i64> {
    (1..=198).chain([-1, i64::MAX]).collect()
}

/// Where Postgres's hashing puts each of `keys` (asked on shard 0).
async fn expected_shards(cluster: &Cluster, keys: &[i64]) -> BTreeMap<i64, usize> {
    let oracle = cluster.shard(0).await;
    let n = cluster.servers.len();
    let mut shards = BTreeMap::new();
    for &key in keys {
        shards.insert(key, postgres_hash_shard(&oracle, key, n).await);
    }
    shards
}

/// Two keys of `from` on different shards.
async fn keys_on_two_shards(cluster: &Cluster, from: i64) -> ((i64, usize), (i64, usize)) {
    let keys: Vec<i64> = (from..from + 50).collect();
    let shards = expected_shards(cluster, &keys).await;
    let a = (from, shards[&from]);
    let b = shards
        .iter()
        .find(|(_, &s)| s != a.1)
        .map(|(&k, &s)| (k, s))
        .unwrap();
    (a, b)
}

async fn inserts_and_reads(cluster: &Cluster) {
    let n = cluster.servers.len();
    let client = cluster.connect().await;
    let tenants = tenants();
    // id 1: simple protocol, key as a literal.
    for t in &tenants {
        simple(
            &client,
            &format!("INSERT INTO orders (tenant_id, id, item) VALUES ({t}, 1, 'simple')"),
        )
        .await;
    }
    // id 2: a named prepared statement, parameters in binary (tokio-postgres
    // sends i64 as 8 big-endian bytes).
    let insert = client
        .prepare("INSERT INTO orders (tenant_id, id, item) VALUES ($1, $2, $3)")
        .await
        .unwrap_or_else(|e| panic!("prepare INSERT: {}", describe(&e)));
    for t in &tenants {
        client
            .execute(&insert, &[t, &2i64, &"binary"])
            .await
            .unwrap_or_else(|e| panic!("binary INSERT of tenant {t}: {}", describe(&e)));
    }
    // id 3: the same statement with every parameter in text format.
    for t in &tenants {
        client
            .execute(
                &insert,
                &[
                    &TextParam(t.to_string()),
                    &TextParam("3".into()),
                    &TextParam("text".into()),
                ],
            )
            .await
            .unwrap_or_else(|e| panic!("text-format INSERT of tenant {t}: {}", describe(&e)));
    }
    // id 4: the unnamed statement (Parse, Describe, Sync, then Bind).
    for t in &tenants {
        client
            .execute(
                "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 4, 'unnamed')",
                &[t],
            )
            .await
            .unwrap_or_else(|e| panic!("unnamed INSERT of tenant {t}: {}", describe(&e)));
    }
    let total = tenants.len() * 4;

    // Each row is on exactly one shard: the one Postgres's hash picks.
    let expected = expected_shards(cluster, &tenants).await;
    let mut seen: BTreeMap<(i64, i64), Vec<usize>> = BTreeMap::new();
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        let rows = shard
            .query("SELECT tenant_id, id FROM orders", &[])
            .await
            .unwrap();
        assert!(!rows.is_empty(), "shard {i} of {n} got no rows");
        for row in rows {
            let key: (i64, i64) = (row.get(0), row.get(1));
            assert_eq!(expected[&key.0], i, "tenant {} found on shard {i}", key.0);
            seen.entry(key).or_default().push(i);
        }
    }
    assert_eq!(seen.len(), total, "rows on the shards");
    for (key, shards) in &seen {
        assert_eq!(shards.len(), 1, "row {key:?} is on shards {shards:?}");
    }

    // Keyed reads return the tenant's rows only, in both protocols.
    let select = client
        .prepare("SELECT id, item FROM orders WHERE tenant_id = $1 ORDER BY id")
        .await
        .unwrap();
    for t in &tenants {
        let rows = client
            .query(&select, &[t])
            .await
            .unwrap_or_else(|e| panic!("keyed SELECT of tenant {t}: {}", describe(&e)));
        let got: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            got,
            vec![
                (1, "simple".to_owned()),
                (2, "binary".to_owned()),
                (3, "text".to_owned()),
                (4, "unnamed".to_owned())
            ],
            "tenant {t}"
        );
    }
    for t in tenants.iter().step_by(10) {
        let ids = column(
            &client,
            &format!("SELECT id FROM orders WHERE tenant_id = {t} ORDER BY id"),
            "id",
        )
        .await;
        assert_eq!(
            ids,
            ["1", "2", "3", "4"],
            "simple keyed SELECT of tenant {t}"
        );
    }

    // Keyless reads fan out: every row once, from all shards.
    let all = rows(&client, "SELECT * FROM orders").await;
    let keys: BTreeSet<(String, String)> = all
        .iter()
        .map(|r| (r["tenant_id"].clone(), r["id"].clone()))
        .collect();
    assert_eq!(all.len(), total, "simple keyless SELECT *");
    assert_eq!(keys.len(), total, "distinct rows of keyless SELECT *");
    let all = client
        .query("SELECT tenant_id, id FROM orders", &[])
        .await
        .unwrap_or_else(|e| panic!("extended keyless SELECT: {}", describe(&e)));
    assert_eq!(all.len(), total, "extended keyless SELECT");
    let counts = column(&client, "SELECT count(*) FROM orders", "count").await;
    let sum: usize = counts.iter().map(|c| c.parse::<usize>().unwrap()).sum();
    assert!(
        counts.len() == n || counts.len() == 1,
        "count(*) gave {counts:?}: one row per shard (concatenated) or one merged row"
    );
    assert_eq!(sum, total, "count(*) rows {counts:?}");
    // The merged CommandComplete counts every shard's rows.
    let tag = client
        .simple_query("SELECT tenant_id FROM orders")
        .await
        .unwrap()
        .into_iter()
        .find_map(|m| match m {
            SimpleQueryMessage::CommandComplete(rows) => Some(rows),
            _ => None,
        });
    assert_eq!(tag, Some(total as u64), "CommandComplete of keyless SELECT");
}

async fn transactions(cluster: &Cluster) {
    let n = cluster.servers.len();
    let (a, b) = keys_on_two_shards(cluster, 1000).await;
    let shards = cluster.shards().await;
    let mut client = cluster.connect().await;

    // Simple protocol: BEGIN is deferred, opened on tenant a's shard.
    simple(&client, "BEGIN").await;
    insert_simple(&client, a.0, 1, "txn").await;
    let items = column(
        &client,
        &format!("SELECT item FROM orders WHERE tenant_id = {}", a.0),
        "item",
    )
    .await;
    assert_eq!(items, ["txn"], "read own write inside the transaction");
    simple(&client, "COMMIT").await;
    let other = cluster.connect().await;
    let items = column(
        &other,
        &format!("SELECT item FROM orders WHERE tenant_id = {}", a.0),
        "item",
    )
    .await;
    assert_eq!(items, ["txn"], "committed row seen by another client");
    assert_eq!(order_on(&shards, a.0, 1).await, [a.1], "committed row");

    // What lib/pq sends: the BEGIN options reach the server that opens it.
    simple(&client, "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE").await;
    client
        .execute(
            "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 2, 'libpq')",
            &[&b.0],
        )
        .await
        .unwrap_or_else(|e| panic!("INSERT after BEGIN ISOLATION LEVEL ...: {}", describe(&e)));
    simple(&client, "COMMIT").await;
    assert_eq!(order_on(&shards, b.0, 2).await, [b.1], "lib/pq-style row");
    simple(&client, "BEGIN ISOLATION LEVEL REPEATABLE READ READ WRITE").await;
    client
        .query("SELECT id FROM orders WHERE tenant_id = $1", &[&a.0])
        .await
        .unwrap();
    let level = column(
        &client,
        "SHOW transaction_isolation",
        "transaction_isolation",
    )
    .await;
    assert_eq!(
        level,
        ["repeatable read"],
        "the deferred BEGIN's options were used when it was opened on the shard"
    );
    simple(&client, "COMMIT").await;

    // A deferred transaction with no statements ends without a server.
    for end in ["ROLLBACK", "COMMIT"] {
        simple(&client, "BEGIN").await;
        simple(&client, end).await;
    }
    // Statements with no data dependency before the first keyed one.
    simple(&client, "BEGIN").await;
    assert_eq!(column(&client, "SELECT 1 AS one", "one").await, ["1"]);
    insert_simple(&client, a.0, 3, "late key").await;
    simple(&client, "ROLLBACK").await;
    assert!(order_on(&shards, a.0, 3).await.is_empty(), "rolled back");

    // tokio-postgres: BEGIN, then Parse/Describe/Sync before the Bind with
    // the key, inside the transaction.
    let tx = client.transaction().await.unwrap();
    let insert = tx
        .prepare("INSERT INTO orders (tenant_id, id, item) VALUES ($1, $2, $3) RETURNING id")
        .await
        .unwrap_or_else(|e| panic!("prepare in transaction: {}", describe(&e)));
    let select = tx
        .prepare("SELECT item FROM orders WHERE tenant_id = $1 AND id = $2")
        .await
        .unwrap();
    let rows = tx
        .query(&insert, &[&b.0, &10i64, &"prepared"])
        .await
        .unwrap_or_else(|e| panic!("prepared INSERT in transaction: {}", describe(&e)));
    assert_eq!(rows[0].get::<_, i64>(0), 10);
    let rows = tx.query(&select, &[&b.0, &10i64]).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, String>(0), "prepared");
    tx.commit().await.unwrap();
    assert_eq!(
        order_on(&shards, b.0, 10).await,
        [b.1],
        "prepared transaction's row ({n} shards)"
    );
    // The statement prepared in the transaction still works after it.
    let rows = client.query(&select, &[&b.0, &10i64]).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(column(&client, "SELECT 1 AS one", "one").await, ["1"]);
}

async fn cross_shard_transaction(cluster: &Cluster) {
    let (a, b) = keys_on_two_shards(cluster, 2000).await;
    let shards = cluster.shards().await;
    let mut client = cluster.connect().await;

    // Simple protocol: the second shard joins the transaction; an error
    // aborts it everywhere; ROLLBACK leaves nothing on either shard.
    simple(&client, "BEGIN").await;
    insert_simple(&client, a.0, 1, "first").await;
    insert_simple(&client, b.0, 1, "second").await;
    let err = client.simple_query("SELECT 1/0").await.unwrap_err();
    assert_eq!(code(&err), Some("22012"));
    for sql in [
        "SELECT 1".to_owned(),
        format!("SELECT * FROM orders WHERE tenant_id = {}", a.0),
    ] {
        let err = client.simple_query(&sql).await.unwrap_err();
        assert_eq!(
            code(&err),
            Some("25P02"),
            "{sql} after the error: {}",
            describe(&err)
        );
    }
    simple(&client, "ROLLBACK").await;
    for key in [a.0, b.0] {
        let found = order_on(&shards, key, 1).await;
        assert!(found.is_empty(), "tenant {key}'s row survived the rollback");
    }
    assert_eq!(column(&client, "SELECT 1 AS one", "one").await, ["1"]);

    // Extended protocol, through tokio-postgres's transaction: rolled
    // back, then committed on both shards.
    for commit in [false, true] {
        let tx = client.transaction().await.unwrap();
        for (key, item) in [(a.0, "first"), (b.0, "second")] {
            tx.execute(
                "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 2, $2)",
                &[&key, &item],
            )
            .await
            .unwrap_or_else(|e| panic!("extended INSERT in a transaction: {}", describe(&e)));
        }
        let rows = tx
            .query("SELECT item FROM orders WHERE tenant_id = $1", &[&a.0])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        match commit {
            true => tx.commit().await.unwrap(),
            false => tx.rollback().await.unwrap(),
        }
        assert_eq!(order_on(&shards, a.0, 2).await.is_empty(), !commit);
        assert_eq!(order_on(&shards, b.0, 2).await.is_empty(), !commit);
    }

    // All in the extended protocol, COMMIT too.
    client.execute("BEGIN", &[]).await.unwrap();
    for (key, item) in [(a.0, "first"), (b.0, "second")] {
        client
            .execute(
                "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 3, $2)",
                &[&key, &item],
            )
            .await
            .unwrap();
    }
    client
        .execute("COMMIT", &[])
        .await
        .unwrap_or_else(|e| panic!("extended COMMIT: {}", describe(&e)));
    assert_eq!(order_on(&shards, a.0, 3).await, [a.1]);
    assert_eq!(order_on(&shards, b.0, 3).await, [b.1]);
    let rows = client
        .query(
            "SELECT id FROM orders WHERE tenant_id = $1 AND id = 3",
            &[&a.0],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
}

async fn omnisharded(cluster: &Cluster) {
    let client = cluster.connect().await;
    simple(
        &client,
        "INSERT INTO countries (code, name) VALUES ('fr', 'France')",
    )
    .await;
    client
        .execute(
            "INSERT INTO countries (code, name) VALUES ($1, $2)",
            &[&"jp", &"Japan"],
        )
        .await
        .unwrap_or_else(|e| panic!("extended INSERT into countries: {}", describe(&e)));
    simple(
        &client,
        "UPDATE countries SET name = 'Nippon' WHERE code = 'jp'",
    )
    .await;
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        let rows = shard
            .query("SELECT code, name FROM countries ORDER BY code", &[])
            .await
            .unwrap();
        let got: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            got,
            [
                ("fr".to_owned(), "France".to_owned()),
                ("jp".to_owned(), "Nippon".to_owned())
            ],
            "countries on shard {i}"
        );
    }
    for _ in 0..cluster.servers.len() {
        let codes = column(&client, "SELECT code FROM countries ORDER BY code", "code").await;
        assert_eq!(codes, ["fr", "jp"], "one copy of countries");
        let rows = client
            .query("SELECT name FROM countries WHERE code = $1", &[&"fr"])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
    }
}

async fn table_family(cluster: &Cluster) {
    let n = cluster.servers.len();
    let client = cluster.connect().await;
    let shards = cluster.shards().await;
    let partitions: Vec<i64> = (0..8).collect();
    let expected = expected_shards(cluster, &partitions).await;
    for p in &partitions {
        simple(
            &client,
            &format!("CREATE TABLE events_p{p} (off bigint PRIMARY KEY, payload bytea NOT NULL)"),
        )
        .await;
    }
    for p in &partitions {
        let sql = format!("SELECT 1 WHERE to_regclass('events_p{p}') IS NOT NULL");
        let found = holders(&shards, &sql, &[]).await;
        assert_eq!(found, [expected[p]], "events_p{p} (key {p}, {n} shards)");
    }
    // Co-location: partition 7's counter row (a hash-partitioned table keyed
    // by partition_id) is on the shard of events_p7.
    client
        .execute(
            "INSERT INTO counters (partition_id, next) VALUES ($1, 0)",
            &[&7i64],
        )
        .await
        .unwrap_or_else(|e| panic!("INSERT INTO counters: {}", describe(&e)));
    let found = holders(
        &shards,
        "SELECT 1 FROM counters WHERE partition_id = 7",
        &[],
    )
    .await;
    assert_eq!(found, [expected[&7]], "counter row of partition 7");
    // One transaction over both, as a log writer does.
    simple(&client, "BEGIN").await;
    let next = column(
        &client,
        "UPDATE counters SET next = next + 2 WHERE partition_id = 7 RETURNING next",
        "next",
    )
    .await;
    assert_eq!(next, ["2"]);
    simple(
        &client,
        "INSERT INTO events_p7 (off, payload) VALUES (0, '\\x00'), (1, '\\x01')",
    )
    .await;
    simple(&client, "COMMIT").await;
    let rows = client
        .query("SELECT off FROM events_p7 ORDER BY off", &[])
        .await
        .unwrap_or_else(|e| panic!("SELECT FROM events_p7: {}", describe(&e)));
    let offs: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(offs, [0, 1]);
    // Prepared statements on a family table, as drivers send them: Parse,
    // Describe, Sync before any Bind. The table exists on one shard only,
    // so the Describe must go there (the key is in the table name, not in a
    // parameter); repeated so that "any shard" cannot pass by luck.
    for round in 0..2 * n {
        let select = client
            .prepare("SELECT off FROM events_p7 WHERE off >= $1 ORDER BY off")
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "prepare #{round} of a SELECT on events_p7 (which is on shard {} only): {}",
                    expected[&7],
                    describe(&e)
                )
            });
        let rows = client.query(&select, &[&0i64]).await.unwrap();
        // The two rows above plus one per earlier round.
        assert_eq!(rows.len(), 2 + round);
        let insert = client
            .prepare("INSERT INTO events_p7 (off, payload) VALUES ($1, $2)")
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "prepare #{round} of an INSERT into events_p7 (on shard {} only): {}",
                    expected[&7],
                    describe(&e)
                )
            });
        client
            .execute(&insert, &[&(100 + round as i64), &vec![1u8]])
            .await
            .unwrap();
    }
    // A family table of a key no shard has a table for: Postgres's error.
    let err = client
        .simple_query("SELECT * FROM events_p999")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("42P01"), "{}", describe(&err));
}

async fn overrides(cluster: &Cluster) {
    let n = cluster.servers.len();
    let client = cluster.connect().await;
    for s in 0..n {
        let got = column(
            &client,
            &format!("/* pgdog_shard: {s} */ SELECT shard FROM whoami"),
            "shard",
        )
        .await;
        assert_eq!(got, [s.to_string()], "pgdog_shard comment");
    }
    let got = column(
        &client,
        "/* pgdog_shard: 1 */ SELECT shard FROM whoami",
        "shard",
    )
    .await;
    assert_eq!(got, ["1"]);
    // Without an override, a table pgshard does not know is read everywhere
    // (this cluster has `unlisted_tables = "sharded"`).
    let mut got = column(&client, "SELECT shard FROM whoami", "shard").await;
    got.sort();
    let all: Vec<String> = (0..n).map(|s| s.to_string()).collect();
    assert_eq!(got, all, "keyless read of an unknown table");

    let session = cluster.connect().await;
    simple(&session, "SET pgdog.shard = 0").await;
    for _ in 0..3 {
        assert_eq!(
            column(&session, "SELECT shard FROM whoami", "shard").await,
            ["0"]
        );
        let rows = session
            .query("SELECT shard FROM whoami", &[])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "SET pgdog.shard, extended protocol");
        assert_eq!(rows[0].get::<_, i32>(0), 0);
    }
    let last = n - 1;
    simple(&session, &format!("SET pgdog.shard = {last}")).await;
    assert_eq!(
        column(&session, "SELECT shard FROM whoami", "shard").await,
        [last.to_string()]
    );
    // A comment wins over the session's setting.
    assert_eq!(
        column(
            &session,
            "/* pgdog_shard: 0 */ SELECT shard FROM whoami",
            "shard"
        )
        .await,
        ["0"]
    );
    let err = session
        .simple_query(&format!("SET pgdog.shard = {n}"))
        .await
        .unwrap_err();
    println!("SET pgdog.shard = {n} refused: {}", describe(&err));
    simple(&session, "RESET pgdog.shard").await;
    assert_eq!(
        column(&session, "SELECT shard FROM whoami", "shard")
            .await
            .len(),
        n,
        "after RESET pgdog.shard"
    );

    // The same settings in the extended protocol (JDBC, psycopg).
    let extended = cluster.connect().await;
    extended
        .execute(&format!("SET pgdog.shard = {last}"), &[])
        .await
        .unwrap_or_else(|e| panic!("extended SET pgdog.shard: {}", describe(&e)));
    let rows = extended
        .query("SELECT shard FROM whoami", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "extended SET pgdog.shard pins the session");
    assert_eq!(rows[0].get::<_, i32>(0), last as i32);
    let err = extended
        .execute(&format!("SET pgdog.shard = {n}"), &[])
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("22023"), "{}", describe(&err));
    extended.execute("RESET pgdog.shard", &[]).await.unwrap();
    let rows = extended
        .query("SELECT shard FROM whoami", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), n, "after an extended RESET pgdog.shard");

    // Sharding keys, hashed like orders.tenant_id (the first sharded table).
    let oracle = cluster.shard(0).await;
    for key in [1i64, 2, 3, 42] {
        let expected = postgres_hash_shard(&oracle, key, n).await.to_string();
        let got = column(
            &client,
            &format!("/* pgdog_sharding_key: {key} */ SELECT shard FROM whoami"),
            "shard",
        )
        .await;
        assert_eq!(got, [expected.as_str()], "pgdog_sharding_key comment {key}");
        let session = cluster.connect().await;
        simple(&session, &format!("SET pgdog.sharding_key = '{key}'")).await;
        assert_eq!(
            column(&session, "SELECT shard FROM whoami", "shard").await,
            [expected],
            "SET pgdog.sharding_key = '{key}'"
        );
    }
}

/// `BEGIN; SET LOCAL ...; <keyed statement>` (the row-level-security
/// pattern): the SET LOCAL travels with the deferred BEGIN to the shard the
/// statement picks, lasts for the transaction only, and its errors reach the
/// client.
async fn set_local_in_deferred_transaction(cluster: &Cluster) {
    let (a, _) = keys_on_two_shards(cluster, 5000).await;
    let client = cluster.connect().await;
    let read = format!(
        "SELECT current_setting('app.tenant', true) AS tenant, \
         current_setting('statement_timeout') AS timeout, count(*) AS n \
         FROM orders WHERE tenant_id = {}",
        a.0
    );
    simple(&client, "BEGIN").await;
    simple(&client, "SET LOCAL app.tenant = '42' -- trailing comment").await;
    simple(&client, "set local statement_timeout to '4321ms'").await;
    assert_eq!(column(&client, &read, "tenant").await, ["42"]);
    assert_eq!(column(&client, &read, "timeout").await, ["4321ms"]);
    simple(&client, "COMMIT").await;
    // Gone with the transaction, on whichever server serves the next one.
    simple(&client, "BEGIN").await;
    // Unset ('' on a server that saw it, NULL on one that did not).
    let tenant = column(&client, &read, "tenant").await;
    assert_eq!(tenant.len(), 1, "{tenant:?}");
    assert_ne!(tenant, ["42"]);
    assert_eq!(column(&client, &read, "timeout").await, ["0"]);
    simple(&client, "COMMIT").await;

    // A bad value: SET is answered at once, the error comes with the
    // transaction's first statement, and the transaction is aborted.
    simple(&client, "BEGIN").await;
    simple(&client, "SET LOCAL statement_timeout = 'soon'").await;
    let err = client.simple_query(&read).await.unwrap_err();
    let message = describe(&err);
    assert!(message.contains("statement_timeout"), "{message}");
    simple(&client, "ROLLBACK").await;
    assert_eq!(column(&client, &read, "timeout").await, ["0"]);

    // The same in the extended protocol (what JDBC and psycopg send):
    // BEGIN, SET LOCAL, COMMIT and ROLLBACK as Parse/Bind/Execute.
    let shards = cluster.shards().await;
    let read = "SELECT current_setting('app.tenant', true) AS tenant, count(*) AS n \
                FROM orders WHERE tenant_id = $1";
    client.execute("BEGIN", &[]).await.unwrap();
    client
        .execute("SET LOCAL app.tenant = '77'", &[])
        .await
        .unwrap();
    let row = client.query_one(read, &[&a.0]).await.unwrap();
    assert_eq!(row.get::<_, Option<String>>(0).as_deref(), Some("77"));
    client
        .execute(
            "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 9, 'extended')",
            &[&a.0],
        )
        .await
        .unwrap();
    client.execute("ROLLBACK", &[]).await.unwrap();
    assert!(
        order_on(&shards, a.0, 9).await.is_empty(),
        "the extended-protocol ROLLBACK undid the insert"
    );
    client.execute("BEGIN", &[]).await.unwrap();
    client
        .execute(
            "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 9, 'extended')",
            &[&a.0],
        )
        .await
        .unwrap();
    client.execute("COMMIT", &[]).await.unwrap();
    assert_eq!(order_on(&shards, a.0, 9).await, [a.1], "committed");
    // BEGIN then COMMIT with nothing in between: answered by pgshard.
    client.execute("BEGIN", &[]).await.unwrap();
    client.execute("COMMIT", &[]).await.unwrap();
    let row = client.query_one(read, &[&a.0]).await.unwrap();
    assert_ne!(row.get::<_, Option<String>>(0).as_deref(), Some("77"));
}

async fn query_cache(cluster: &Cluster) {
    let admin = cluster.admin().await;
    // SHOW STATS carries the shared cache's counters on every row.
    let counters = |rows: Vec<HashMap<String, String>>| {
        let row = rows.first().cloned().unwrap_or_default();
        [
            "query_cache_hits",
            "query_cache_misses",
            "query_cache_evictions",
        ]
        .map(|c| {
            row.get(c)
                .unwrap_or_else(|| panic!("no {c} in SHOW STATS: {row:?}"))
                .parse::<u64>()
                .unwrap()
        })
    };
    let before = counters(rows(&admin, "SHOW STATS").await);
    let client = cluster.connect().await;
    for t in [42, 43, 42, 44, 42] {
        simple(
            &client,
            &format!("SELECT item, 'cache probe' AS probe FROM orders WHERE tenant_id = {t}"),
        )
        .await;
    }
    let after = counters(rows(&admin, "SHOW STATS").await);
    // The first text parses; the others share its template.
    assert!(after[0] >= before[0] + 4, "hits {before:?} -> {after:?}");
    assert!(after[1] > before[1], "misses {before:?} -> {after:?}");
    let cache = rows(&admin, "SHOW QUERY_CACHE").await;
    println!("SHOW QUERY_CACHE: {cache:?}");
    assert!(!cache.is_empty(), "SHOW QUERY_CACHE returned no rows");
    let hits: u64 = cache
        .iter()
        .map(|row| {
            row.get("hits")
                .unwrap_or_else(|| panic!("no hits column in {row:?}"))
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert!(hits > 0, "no cache hits after repeating a query: {cache:?}");
}

async fn bad_keys(cluster: &Cluster) {
    let (a, b) = keys_on_two_shards(cluster, 3000).await;
    let client = cluster.connect().await;
    let failures = [
        // Not a bigint.
        "SELECT * FROM orders WHERE tenant_id = 'abc'".to_owned(),
        format!(
            "INSERT INTO orders (tenant_id, id, item) VALUES ('{}x', 1, 'bad')",
            a.0
        ),
        // No key at all.
        "INSERT INTO orders (id, item) VALUES (1, 'no key')".to_owned(),
    ];
    for sql in &failures {
        let err = client.simple_query(sql).await.unwrap_err();
        println!("refused as expected: {sql}: {}", describe(&err));
        assert!(err.as_db_error().is_some(), "{sql}: {err:?}");
        assert_eq!(
            column(&client, "SELECT 1 AS one", "one").await,
            ["1"],
            "connection after {sql}"
        );
    }
    // Rows for two shards in one INSERT: split in both protocols
    // (`split_inserts.rs`, `split_inserts_extended.rs`).
    let split = format!(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({}, 900001, 'a'), ({}, 900001, 'b')",
        a.0, b.0
    );
    client.simple_query(&split).await.unwrap();
    client
        .simple_query("DELETE FROM orders WHERE id = 900001")
        .await
        .unwrap();
    let inserted = client
        .execute(
            "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 900002, 'a'), ($2, 900002, 'b')",
            &[&a.0, &b.0],
        )
        .await
        .unwrap();
    assert_eq!(inserted, 2);
    client
        .simple_query("DELETE FROM orders WHERE id = 900002")
        .await
        .unwrap();
    let err = client
        .query(
            "SELECT * FROM orders WHERE tenant_id = $1",
            &[&TextParam("abc".into())],
        )
        .await
        .unwrap_err();
    println!(
        "refused as expected: text parameter 'abc': {}",
        describe(&err)
    );
    assert!(err.as_db_error().is_some(), "{err:?}");
    let rows = client
        .query("SELECT 1::int AS one", &[])
        .await
        .unwrap_or_else(|e| panic!("after a bad key: {}", describe(&e)));
    assert_eq!(rows[0].get::<_, i32>(0), 1);
    // Nothing was written by the refused INSERTs.
    let shards = cluster.shards().await;
    let sql = "SELECT 1 FROM orders WHERE tenant_id = ANY($1)";
    let found = holders(&shards, sql, &[&vec![a.0, b.0]]).await;
    assert!(
        found.is_empty(),
        "a refused INSERT wrote to shards {found:?}"
    );
}

async fn cross_shard_disabled(cluster: &Cluster) {
    let proxy = TestProxy::start(
        &common::sharded_config(&cluster.servers, "cross_shard_disabled = true", SHARDING),
        common::USERS,
    )
    .unwrap();
    let client = common::connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    for sql in ["SELECT * FROM orders", "SELECT count(*) FROM orders"] {
        let err = client.simple_query(sql).await.unwrap_err();
        let message = describe(&err);
        println!("cross_shard_disabled refused: {sql}: {message}");
        assert!(
            message.contains("cross_shard_disabled") || message.contains("cross-shard"),
            "{sql}: the error should say why: {message}"
        );
    }
    let err = client
        .query("SELECT id FROM orders WHERE tenant_id > $1", &[&0i64])
        .await
        .unwrap_err();
    assert!(err.as_db_error().is_some(), "{err:?}");
    let ids = column(
        &client,
        "SELECT id FROM orders WHERE tenant_id = 5 ORDER BY id",
        "id",
    )
    .await;
    assert_eq!(ids, ["1", "2", "3", "4"], "keyed read");
    let rows = client
        .query(
            "SELECT id FROM orders WHERE tenant_id = $1 ORDER BY id",
            &[&5i64],
        )
        .await
        .unwrap_or_else(|e| panic!("keyed extended read: {}", describe(&e)));
    assert_eq!(rows.len(), 4);
    // One copy of an omnisharded table is one database: allowed.
    let rows = client
        .query("SELECT code FROM countries", &[])
        .await
        .unwrap_or_else(|e| panic!("omnisharded read: {}", describe(&e)));
    assert!(!rows.is_empty());
}

/// Subqueries whose rows live elsewhere than the statement's (issue 18):
/// exact, that is on the statement's one shard, correlated on the
/// sharding key, or (by default, issue 34) finished on the coordinator;
/// with `cross_shard_finish = "refuse"` the others are refused with 0A000
/// (router/tests/routes' cases, `cross_shard_gather.rs`).
async fn subqueries(cluster: &Cluster) {
    let (a, b) = keys_on_two_shards(cluster, 7000).await;
    let (a, b) = (a.0, b.0);
    let client = cluster.connect().await;
    for (tenant, items) in [(a, ["x", "y", "z"]), (b, ["x", "y", "w"])] {
        for (id, item) in (1..).zip(items) {
            insert_simple(&client, tenant, id, item).await;
        }
    }
    // Each would run its subquery over one shard's rows: the coordinator
    // finishes them, with the answers of the statements with the
    // subquery's value written in (each on one shard).
    let average = column(
        &client,
        "SELECT avg(id) AS v FROM orders WHERE item = 'y'",
        "v",
    )
    .await;
    let finished = [
        (
            format!("SELECT tenant_id || '/' || id AS r FROM orders WHERE tenant_id IN ({a}, {b}) AND item = (SELECT item FROM orders WHERE tenant_id = {a} AND id = 1) ORDER BY 1"),
            {
                let mut want = vec![format!("{a}/1"), format!("{b}/1")];
                want.sort();
                want
            },
        ),
        (
            format!("SELECT id AS r FROM orders WHERE tenant_id = {a} AND id >= (SELECT avg(id) FROM orders WHERE item = 'y') ORDER BY id"),
            column(
                &client,
                &format!("SELECT id AS r FROM orders WHERE tenant_id = {a} AND id >= {} ORDER BY id", average[0]),
                "r",
            )
            .await,
        ),
        (
            format!("SELECT id AS r FROM orders WHERE tenant_id = {a} AND item IN (SELECT item FROM orders WHERE tenant_id = {b}) ORDER BY id"),
            vec!["1".to_owned(), "2".to_owned()],
        ),
    ];
    for (sql, want) in &finished {
        let got = column(&client, sql, "r").await;
        assert_eq!(&got, want, "{sql}");
    }
    let rows = client
        .query(
            "SELECT id FROM orders WHERE tenant_id = $1 AND item IN (SELECT item FROM orders WHERE tenant_id = $2) ORDER BY id",
            &[&a, &b],
        )
        .await
        .unwrap_or_else(|e| panic!("keyed IN another shard's keyed subquery: {}", describe(&e)));
    let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        ids,
        [1, 2],
        "extended protocol, finished on the coordinator"
    );
    // Both levels on the statement's shard.
    let ids = column(
        &client,
        &format!("SELECT id FROM orders WHERE tenant_id = {a} AND item IN (SELECT item FROM orders WHERE tenant_id = {a} AND id > 1) ORDER BY id"),
        "id",
    )
    .await;
    assert_eq!(ids, ["2", "3"], "keyed subquery on the outer query's shard");
    // A keyed subquery alone goes to its shard (not one row per shard).
    let counts = column(
        &client,
        &format!("SELECT (SELECT count(*) FROM orders WHERE tenant_id = {b}) AS n"),
        "n",
    )
    .await;
    assert_eq!(counts, ["3"], "scalar subquery on its shard");
    // Correlated on the key: each shard meets its own rows' partners.
    let rows = client
        .query(
            "SELECT o.tenant_id, o.id FROM orders o WHERE o.tenant_id = ANY($1) AND EXISTS (SELECT 1 FROM orders p WHERE p.tenant_id = o.tenant_id AND p.id = o.id + 1)",
            &[&vec![a, b]],
        )
        .await
        .unwrap_or_else(|e| panic!("correlated EXISTS: {}", describe(&e)));
    let mut got: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    got.sort_unstable();
    let mut want = vec![(a, 1), (a, 2), (b, 1), (b, 2)];
    want.sort_unstable();
    assert_eq!(got, want, "correlated EXISTS across shards");
}
