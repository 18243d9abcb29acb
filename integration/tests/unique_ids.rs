//! `pgdog.unique_id()` through several pgshard instances (each its own
//! node id) over two shards: ids from every instance, in single-row and
//! split multi-row INSERTs and in SELECTs inside transactions, are never
//! duplicated, carry their instance's node id and increase per client; what
//! cannot be replaced exactly is refused with 0A000; prepared statements
//! get new ids at every execution; a second instance with
//! a node id in use refuses to start; SETUP SHARDED SEQUENCES steps the
//! shards' sequences so that their values never collide.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::{raw_users, sharded_config, Cluster, SHARDING};
use integration::TestProxy;
use tokio_postgres::SimpleQueryMessage;

const NODES: [u64; 3] = [1, 2, 3];

fn node_of(id: i64) -> u64 {
    ((id as u64) >> 12) & 1023
}

/// The first value of each row.
fn values(messages: &[SimpleQueryMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(row.get(0).unwrap_or("").to_owned()),
            _ => None,
        })
        .collect()
}

/// One client's work through one instance: single-row INSERTs, split
/// three-row INSERTs, SELECTs in a transaction and a prepared two-row
/// INSERT (extended protocol); the ids it saw, in order.
async fn client_work(port: u16, node: u64, client_no: usize) -> Vec<i64> {
    let client = common::connect(port, "app", "app-pw", "prod")
        .await
        .unwrap();
    let prepared = client
        .prepare(
            "INSERT INTO orders (tenant_id, id, item) VALUES (pgdog.unique_id(), 4, $1), \
             (pgdog.unique_id(), 5, $1) RETURNING tenant_id",
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    for i in 0..20 {
        let item = format!("n{node}c{client_no}i{i}");
        if i % 4 == 3 {
            // The extended protocol: a prepared split INSERT.
            let rows = client
                .query(&prepared, &[&format!("{item}p")])
                .await
                .unwrap();
            seen.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
            continue;
        }
        let sql = match i % 4 {
            0 => format!(
                "INSERT INTO orders (tenant_id, id, item) VALUES (pgdog.unique_id(), 1, '{item}') \
                 RETURNING tenant_id"
            ),
            1 => format!(
                "INSERT INTO orders (tenant_id, id, item) VALUES (pgdog.unique_id(), 1, '{item}a'), \
                 (pgdog.unique_id(), 2, '{item}b'), (pgdog.unique_id(), 3, '{item}c') \
                 RETURNING tenant_id"
            ),
            _ => "BEGIN; SELECT pgdog.unique_id(); COMMIT".to_owned(),
        };
        let messages = client.simple_query(&sql).await.unwrap();
        seen.extend(values(&messages).iter().map(|v| v.parse::<i64>().unwrap()));
    }
    seen
}

#[tokio::test]
async fn ids_from_several_instances_never_collide() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "node_id = 1", "");
    let others: Vec<TestProxy> = NODES[1..]
        .iter()
        .map(|node| {
            let config = sharded_config(&cluster.servers, &format!("node_id = {node}"), SHARDING);
            TestProxy::start(&config, &raw_users()).unwrap()
        })
        .collect();
    let ports: Vec<u16> = std::iter::once(cluster.port())
        .chain(others.iter().map(TestProxy::port))
        .collect();
    let mut tasks = Vec::new();
    for (port, node) in ports.iter().zip(NODES) {
        for client_no in 0..4 {
            let port = *port;
            tasks.push((node, tokio::spawn(client_work(port, node, client_no))));
        }
    }
    let mut all = BTreeSet::new();
    let mut count = 0;
    for (node, task) in tasks {
        let seen = task.await.unwrap();
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "node {node}: not increasing"
        );
        assert!(
            seen.iter().all(|&id| node_of(id) == node),
            "node {node}: node bits"
        );
        count += seen.len();
        all.extend(seen);
    }
    assert_eq!(all.len(), count, "duplicate ids");
    // Every inserted row is on the shard its id hashes to (the partitions
    // refuse any other), both shards have some, and no id is on both.
    let mut stored = Vec::new();
    for shard in cluster.shards().await {
        let ids = common::column(&shard, "SELECT tenant_id FROM orders", "tenant_id").await;
        assert!(!ids.is_empty());
        stored.extend(ids);
    }
    let distinct: BTreeSet<_> = stored.iter().collect();
    assert_eq!(distinct.len(), stored.len());
    // 4 clients x 3 instances x (5 single + 5 x 3 split + 5 x 2 prepared).
    assert_eq!(stored.len(), 12 * (5 + 15 + 10));
}

#[tokio::test]
async fn select_answers_with_the_column_postgres_names() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "node_id = 9", "");
    let client = cluster.connect().await;
    let rows = client
        .simple_query("SELECT pgdog.unique_id(), PGDOG.UNIQUE_ID() AS id, pgdog.unique_id()::text")
        .await
        .unwrap();
    let SimpleQueryMessage::Row(row) = &rows[1] else {
        panic!("no row: {rows:?}")
    };
    let names: Vec<&str> = row.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["unique_id", "id", "unique_id"]);
    let ids: Vec<i64> = (0..3)
        .map(|i| row.get(i).unwrap().parse().unwrap())
        .collect();
    assert!(ids[0] < ids[1] && ids[1] < ids[2]);
    assert!(ids.iter().all(|&id| node_of(id) == 9));
}

#[tokio::test]
async fn what_cannot_be_exact_is_refused() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let client = cluster.connect().await;
    for sql in [
        "SELECT pgdog.unique_id() FROM generate_series(1, 3)",
        "UPDATE orders SET id = pgdog.unique_id() WHERE tenant_id = 1",
        "INSERT INTO orders (tenant_id, id, item) VALUES ((SELECT pgdog.unique_id()), 1, 'x')",
    ] {
        let err = client.simple_query(sql).await.unwrap_err();
        assert_eq!(common::code(&err), Some("0A000"), "{sql}: {err:?}");
        assert!(
            common::describe(&err).contains("once per row"),
            "{sql}: {err:?}"
        );
    }
    // The extended protocol refuses the same places.
    let err = client
        .query(
            "SELECT pgdog.unique_id() FROM orders WHERE tenant_id = $1",
            &[&1i64],
        )
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    // Inside a transaction the refusal fails it, as an error would.
    client.simple_query("BEGIN").await.unwrap();
    let err = client
        .simple_query("SELECT pgdog.unique_id() FROM orders")
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"));
    let err = client.simple_query("SELECT 1").await.unwrap_err();
    assert_eq!(common::code(&err), Some("25P02"));
    client.simple_query("ROLLBACK").await.unwrap();
    // The session goes on.
    let ids = values(
        &client
            .simple_query("SELECT pgdog.unique_id()")
            .await
            .unwrap(),
    );
    assert_eq!(ids.len(), 1);
}

#[tokio::test]
async fn a_node_id_in_use_is_refused() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "node_id = 4", "");
    let config = |general: &str| sharded_config(&cluster.servers, general, SHARDING);
    let err = TestProxy::start(&config("node_id = 4"), &raw_users()).unwrap_err();
    assert!(err.to_string().contains("node id 4 is in use"), "{err}");
    // Another node id starts; once it stops, its node id is free again.
    let five = TestProxy::start(&config("node_id = 5"), &raw_users()).unwrap();
    drop(five);
    let five = TestProxy::start(&config("node_id = 5"), &raw_users()).unwrap();
    // Two instances with no node id both start (most deployments never
    // call pgdog.unique_id()), but the second refuses to make ids.
    let first = TestProxy::start(&config(""), &raw_users()).unwrap();
    let second = TestProxy::start(&config(""), &raw_users()).unwrap();
    let client = common::connect(first.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    let ids = values(
        &client
            .simple_query("SELECT pgdog.unique_id()")
            .await
            .unwrap(),
    );
    assert_eq!(node_of(ids[0].parse().unwrap()), 0);
    let client = common::connect(second.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    let err = client
        .simple_query("SELECT pgdog.unique_id()")
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("55000"), "{err:?}");
    assert!(
        common::describe(&err).contains("node id 0 is in use"),
        "{err:?}"
    );
    drop(five);
}

const EVENTS: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"events\"
column = \"tenant_id\"
data_type = \"bigint\"
";

/// The admin command's rows as (shard, restart, action).
async fn setup_sequences(admin: &tokio_postgres::Client) -> Vec<(String, String, String)> {
    let messages = admin
        .simple_query("SETUP SHARDED SEQUENCES prod")
        .await
        .unwrap();
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some((
                row.get("shard").unwrap().to_owned(),
                row.get("restart").unwrap().to_owned(),
                row.get("action").unwrap().to_owned(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn setup_sharded_sequences_then_inserts_never_collide() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", EVENTS);
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        shard
            .batch_execute(
                "CREATE TABLE events (id bigserial PRIMARY KEY, tenant_id bigint NOT NULL)",
            )
            .await
            .unwrap();
        if i == 0 {
            // Rows made before: ids up to 5 on shard 0.
            shard
                .batch_execute("INSERT INTO events (tenant_id) SELECT 0 FROM generate_series(1, 5)")
                .await
                .unwrap();
        }
    }
    let admin = cluster.admin().await;
    let stepped = setup_sequences(&admin).await;
    assert_eq!(
        stepped,
        [
            ("0".into(), "7".into(), "stepped".into()),
            ("1".into(), "6".into(), "stepped".into())
        ]
    );
    // Idempotent.
    let again = setup_sequences(&admin).await;
    assert!(
        again
            .iter()
            .all(|(_, _, action)| action == "already stepped"),
        "{again:?}"
    );
    // Concurrent inserts through pgshard, keys on both shards.
    let mut tasks = Vec::new();
    for client_no in 0..4i64 {
        let port = cluster.port();
        tasks.push(tokio::spawn(async move {
            let client = common::connect(port, "app", "app-pw", "prod")
                .await
                .unwrap();
            for k in 0..25i64 {
                let sql = format!(
                    "INSERT INTO events (tenant_id) VALUES ({})",
                    client_no * 100 + k
                );
                client.simple_query(&sql).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut all = BTreeSet::new();
    let mut count = 0;
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        let ids = common::column(shard, "SELECT id FROM events", "id").await;
        for id in &ids {
            let id: i64 = id.parse().unwrap();
            // Shard 0's sequence gives odd values, shard 1's even ones
            // (the 5 rows made before are shard 0's 1..=5).
            assert!(id <= 5 || id % 2 == (i as i64 + 1) % 2, "shard {i}: {id}");
        }
        count += ids.len();
        all.extend(ids);
    }
    assert_eq!(count, 105);
    assert_eq!(all.len(), count, "duplicate ids across shards");
}

#[tokio::test]
async fn prepared_statements_get_new_ids_at_every_execution() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "node_id = 6", "");
    let client = cluster.connect().await;
    // Prepared once (Parse, Describe), executed many times: a new id each.
    let select = client
        .prepare("SELECT pgdog.unique_id(), $1::text AS label")
        .await
        .unwrap();
    assert_eq!(select.params().len(), 1, "the client's parameters only");
    let names: Vec<&str> = select.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["unique_id", "label"]);
    assert_eq!(
        select.columns()[0].type_(),
        &tokio_postgres::types::Type::INT8
    );
    let mut last = 0i64;
    for i in 0..10 {
        let row = client
            .query_one(&select, &[&format!("x{i}")])
            .await
            .unwrap();
        let id: i64 = row.get(0);
        assert!(id > last && node_of(id) == 6);
        assert_eq!(row.get::<_, String>(1), format!("x{i}"));
        last = id;
    }
    // A prepared multi-row INSERT: its rows split by their new ids, in a
    // transaction too.
    let insert = client
        .prepare(
            "INSERT INTO orders (tenant_id, id, item) VALUES (pgdog.unique_id(), $1, $2), \
             (pgdog.unique_id(), $1, $2) RETURNING tenant_id",
        )
        .await
        .unwrap();
    let mut ids = BTreeSet::new();
    for i in 0..10i64 {
        let rows = client
            .query(&insert, &[&i, &format!("p{i}")])
            .await
            .unwrap();
        ids.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
    }
    client.batch_execute("BEGIN").await.unwrap();
    let rows = client.query(&insert, &[&99i64, &"in txn"]).await.unwrap();
    ids.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
    client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(ids.len(), 22);
    let mut stored = 0;
    for shard in cluster.shards().await {
        let on_shard = common::column(&shard, "SELECT tenant_id FROM orders", "tenant_id").await;
        assert!(!on_shard.is_empty(), "both shards hold rows");
        stored += on_shard.len();
    }
    assert_eq!(stored, 22);
}
