//! Tables created through pgshard on a cluster sharded by a column-only
//! entry (`[[sharded_tables]] column = "id"`, issue 39): the next statement
//! of any client knows whether a new table has the key column (sharded by
//! it) or not (omnisharded), inside the creating transaction too, and COPY
//! into a table keyed that way is split by the key, with and without a
//! column list, in text, CSV and binary.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{code, Cluster};
use futures_util::SinkExt;
use tokio_postgres::Client;

/// Two shards; every table with a bigint `id` column is sharded by it.
fn cluster() -> Cluster {
    common::watch_proxy_panics();
    let servers = common::servers(2);
    let sharding =
        "[[sharded_tables]]\ndatabase = \"prod\"\ncolumn = \"id\"\ndata_type = \"bigint\"\n";
    Cluster::start_sharded(servers, "", sharding)
}

/// Rows of `table` on each shard, read directly.
async fn counts(cluster: &Cluster, table: &str) -> Vec<i64> {
    let mut counts = Vec::new();
    for shard in cluster.shards().await {
        let rows = shard
            .query(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .unwrap();
        counts.push(rows[0].get(0));
    }
    counts
}

/// The shard (0 or 1) that holds `id` of `table`, or `None`.
async fn holder(cluster: &Cluster, table: &str, id: i64) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        let rows = shard
            .query(&format!("SELECT 1 FROM {table} WHERE id = $1"), &[&id])
            .await
            .unwrap();
        if !rows.is_empty() {
            found.push(i);
        }
    }
    found
}

async fn copy_text(client: &Client, sql: &str, data: String) -> u64 {
    let sink = client.copy_in(sql).await.unwrap();
    let mut sink = std::pin::pin!(sink);
    sink.send(Bytes::from(data)).await.unwrap();
    sink.as_mut().finish().await.unwrap()
}

#[tokio::test]
async fn a_new_table_is_known_to_the_next_statement() {
    let cluster = cluster();
    let client = cluster.connect().await;
    // No key column: omnisharded, written on every shard at once.
    client
        .batch_execute("CREATE TABLE settings (k text PRIMARY KEY, v text)")
        .await
        .unwrap();
    client
        .batch_execute("INSERT INTO settings VALUES ('a', '1')")
        .await
        .unwrap();
    client
        .execute("INSERT INTO settings VALUES ($1, $2)", &[&"b", &"2"])
        .await
        .unwrap();
    assert_eq!(counts(&cluster, "settings").await, [2, 2]);
    // The key column: sharded, each row on its key's shard, in both
    // protocols, with and without a column list.
    client
        .batch_execute("CREATE TABLE big (id bigint PRIMARY KEY, v int)")
        .await
        .unwrap();
    let other = cluster.connect().await;
    other
        .batch_execute("INSERT INTO big VALUES (1, 1)")
        .await
        .unwrap();
    other
        .execute("INSERT INTO big (id, v) VALUES ($1, $2)", &[&2i64, &2i32])
        .await
        .unwrap();
    for id in [1, 2] {
        assert_eq!(holder(&cluster, "big", id).await.len(), 1, "id {id} once");
    }
    // A column added is used at once.
    client
        .batch_execute("ALTER TABLE big ADD COLUMN note text")
        .await
        .unwrap();
    other
        .execute(
            "INSERT INTO big (id, v, note) VALUES ($1, 3, 'new')",
            &[&3i64],
        )
        .await
        .unwrap();
    other
        .batch_execute("INSERT INTO big VALUES (4, 4, 'no list')")
        .await
        .unwrap();
    assert_eq!(counts(&cluster, "big").await.iter().sum::<i64>(), 4);
    // Inside the transaction that creates it, too.
    client.batch_execute("BEGIN").await.unwrap();
    client
        .batch_execute("CREATE TABLE made_in_txn (id bigint PRIMARY KEY)")
        .await
        .unwrap();
    client
        .batch_execute("INSERT INTO made_in_txn VALUES (7)")
        .await
        .unwrap();
    client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(holder(&cluster, "made_in_txn", 7).await.len(), 1);
}

/// Inside the creating transaction, a statement whose Parse, Bind,
/// Execute and Sync come at once (libpq's PQexecParams, psycopg, pgjdbc):
/// the catalog is read before the Parse, as the Bind finds it in flight.
#[tokio::test]
async fn in_a_transaction_a_parse_sent_with_its_bind_sees_the_new_table() {
    use tokio_postgres::types::Type;
    let cluster = cluster();
    let client = cluster.connect().await;
    client.batch_execute("BEGIN").await.unwrap();
    client
        .batch_execute("CREATE TABLE settings (k text PRIMARY KEY, v text)")
        .await
        .unwrap();
    let insert = "INSERT INTO settings (k, v) VALUES ($1, $2)";
    let typed = [(&"a" as _, Type::TEXT), (&"1" as _, Type::TEXT)];
    client.query_typed(insert, &typed).await.unwrap();
    client
        .batch_execute("ALTER TABLE settings ADD COLUMN note text")
        .await
        .unwrap();
    let insert = "INSERT INTO settings (k, v, note) VALUES ($1, $2, $3)";
    let typed = [
        (&"b" as _, Type::TEXT),
        (&"2" as _, Type::TEXT),
        (&"new" as _, Type::TEXT),
    ];
    client.query_typed(insert, &typed).await.unwrap();
    client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(counts(&cluster, "settings").await, [2, 2]);
}

#[tokio::test]
async fn copy_into_a_table_keyed_by_a_column_only_entry_is_split() {
    let cluster = cluster();
    let client = cluster.connect().await;
    client
        .batch_execute("CREATE TABLE big (id bigint PRIMARY KEY, v int)")
        .await
        .unwrap();
    let text: String = (1..=100).map(|k| format!("{k}\t{k}\n")).collect();
    assert_eq!(
        copy_text(&client, "COPY big (id, v) FROM STDIN", text).await,
        100
    );
    let text: String = (101..=200).map(|k| format!("{k}\t{k}\n")).collect();
    assert_eq!(copy_text(&client, "COPY big FROM STDIN", text).await, 100);
    let csv: String = (201..=300).map(|k| format!("{k},{k}\n")).collect();
    let sql = "COPY big FROM STDIN (FORMAT csv)";
    assert_eq!(copy_text(&client, sql, csv).await, 100);
    // Binary, without a column list.
    {
        use tokio_postgres::binary_copy::BinaryCopyInWriter;
        use tokio_postgres::types::{ToSql, Type};
        let sink = client
            .copy_in("COPY big FROM STDIN (FORMAT binary)")
            .await
            .unwrap();
        let writer = BinaryCopyInWriter::new(sink, &[Type::INT8, Type::INT4]);
        let mut writer = std::pin::pin!(writer);
        for k in 301..=400i64 {
            let v = k as i32;
            let row: [&(dyn ToSql + Sync); 2] = [&k, &v];
            writer.as_mut().write(&row).await.unwrap();
        }
        assert_eq!(writer.finish().await.unwrap(), 100);
    }
    let counts = counts(&cluster, "big").await;
    assert_eq!(counts.iter().sum::<i64>(), 400, "{counts:?}");
    assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
    for id in [1, 150, 250, 350] {
        assert_eq!(holder(&cluster, "big", id).await.len(), 1, "id {id} once");
    }
    // Created in the transaction that copies into it.
    client.batch_execute("BEGIN").await.unwrap();
    client
        .batch_execute("CREATE TABLE fresh (v int, id bigint)")
        .await
        .unwrap();
    let text: String = (1..=50).map(|k| format!("{k}\t{k}\n")).collect();
    assert_eq!(copy_text(&client, "COPY fresh FROM STDIN", text).await, 50);
    client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(holder(&cluster, "fresh", 7).await.len(), 1);
    // A COPY of rows without the key still fails, naming the line.
    let err = client
        .copy_in::<_, Bytes>("COPY big (v) FROM STDIN")
        .await
        .err()
        .map(|e| code(&e).map(str::to_owned));
    assert!(err.is_some(), "a COPY without the key column is refused");
}

#[tokio::test]
async fn a_table_made_behind_pgshards_back_is_looked_up_on_first_use() {
    let cluster = cluster();
    let client = cluster.connect().await;
    // Wait for the first catalog read, then make tables on the shards
    // directly: pgshard has not seen them.
    client.batch_execute("SELECT 1").await.unwrap();
    for shard in cluster.shards().await {
        shard
            .batch_execute(
                "CREATE TABLE plain (k text PRIMARY KEY, v text);\
                 CREATE TABLE keyed (id bigint PRIMARY KEY, v text)",
            )
            .await
            .unwrap();
    }
    // Without the key column: omnisharded, written everywhere.
    client
        .batch_execute("INSERT INTO plain VALUES ('a', '1')")
        .await
        .unwrap();
    assert_eq!(counts(&cluster, "plain").await, [1, 1]);
    // With it: sharded, in the extended protocol too.
    client
        .execute("INSERT INTO keyed VALUES ($1, 'x')", &[&5i64])
        .await
        .unwrap();
    assert_eq!(holder(&cluster, "keyed", 5).await.len(), 1);
}

/// An INSERT that names no columns, sent at once as the unnamed statement
/// (tokio-postgres's `query_typed`: Parse, Bind, Describe, Execute, Sync)
/// inside a transaction: the table's columns, read on the transaction's
/// server to route it, did not end the client's unnamed statement there.
#[tokio::test]
async fn an_insert_without_columns_sent_at_once_inside_a_transaction() {
    use tokio_postgres::types::Type;
    let cluster = cluster();
    let mut client = cluster.connect().await;
    client
        .batch_execute("CREATE TABLE k (id bigint PRIMARY KEY, val text)")
        .await
        .unwrap();
    let tx = client.transaction().await.unwrap();
    for id in 1..9i64 {
        let typed = [(&id as _, Type::INT8), (&"v" as _, Type::TEXT)];
        tx.query_typed("INSERT INTO k VALUES ($1, $2)", &typed)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    assert_eq!(counts(&cluster, "k").await.iter().sum::<i64>(), 8);
}
