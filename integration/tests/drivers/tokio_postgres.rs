//! tokio-postgres's checks for the driver suite, run in-process: named
//! statements across DDL (tokio-postgres prepares every query under a name
//! and closes it when dropped), describe errors, 32,767 parameters (the most
//! it encodes), pipelined queries on one connection, portals fetched in
//! pieces inside a transaction, COPY both ways, errors and savepoints in
//! transactions, LISTEN/NOTIFY (session mode), cancel, and many clients
//! over a small pool. Each check reports `ok`/`FAIL` like the other
//! drivers' checks.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt, TryStreamExt};
use integration::driver_cluster::{self, DriverCluster, Mode};
use tokio_postgres::{AsyncMessage, Client, NoTls};

type Check = Result<(), String>;

/// Run every check against `cluster`; one line per check, then the summary.
pub async fn run(cluster: &DriverCluster) -> String {
    let port = cluster.proxy.port();
    let mode = cluster.mode;
    let mut report = String::new();
    let (mut passed, mut failed) = (0, 0);
    macro_rules! check {
        ($name:literal, $body:expr) => {
            match limit($body).await {
                Ok(()) => {
                    passed += 1;
                    report.push_str(&format!("ok {}\n", $name));
                }
                Err(why) => {
                    failed += 1;
                    report.push_str(&format!("FAIL {}: {why}\n", $name));
                }
            }
        };
    }
    check!("prepared_across_ddl", prepared_across_ddl(port, mode));
    check!("describe_errors", describe_errors(port));
    check!("large_param_count", large_param_count(port));
    check!("pipelined_queries", pipelined_queries(port));
    check!("portal_in_transaction", portal_in_transaction(port, mode));
    check!("copy", copy(port, mode));
    check!("transaction_errors_and_savepoints", savepoints(port));
    check!("listen_notify", listen_notify(port));
    check!("cancel", cancel(port));
    check!("many_clients_small_pool", many_clients(port, mode));
    report.push_str(&format!(
        "tokio-postgres {mode}: {passed} passed, {failed} failed\n"
    ));
    report
}

async fn limit(check: impl Future<Output = Check>) -> Check {
    tokio::time::timeout(Duration::from_secs(30), check)
        .await
        .unwrap_or_else(|_| Err("hung for 30 s".into()))
}

async fn connect(port: u16) -> Result<Client, String> {
    let (client, connection) = tokio_postgres::connect(&conninfo(port), NoTls)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    tokio::spawn(connection);
    Ok(client)
}

fn conninfo(port: u16) -> String {
    format!(
        "host=127.0.0.1 port={port} user={} password={} dbname={}",
        driver_cluster::USER,
        driver_cluster::PASSWORD,
        driver_cluster::DATABASE
    )
}

fn err(context: &str) -> impl Fn(tokio_postgres::Error) -> String + '_ {
    move |e| match e.as_db_error() {
        Some(db) => format!("{context}: {} {}", db.code().code(), db.message()),
        None => format!("{context}: {e}"),
    }
}

fn code(e: &tokio_postgres::Error) -> Option<&str> {
    e.code().map(|c| c.code())
}

fn expect_code(result: Result<impl Sized, tokio_postgres::Error>, want: &str) -> Check {
    match result {
        Ok(_) => Err(format!("expected {want}, got success")),
        Err(e) if code(&e) == Some(want) => Ok(()),
        Err(e) => Err(format!("expected {want}, got {}", err("")(e))),
    }
}

/// A key of `drv_items` for this driver's checks.
fn key(n: i64) -> i64 {
    7_300_000_000 + n
}

/// The same query text before and after a DDL that changes the column's
/// type, on one connection and on a new one: as on Postgres, a statement
/// prepared after the DDL sees the new type.
async fn prepared_across_ddl(port: u16, mode: Mode) -> Check {
    let client = connect(port).await?;
    let table = "drv_tokio_ddl";
    // On two shards the DDL goes to both; reads of the table fan out and
    // rows (none here) are concatenated.
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS {table}"))
        .await
        .map_err(err("drop"))?;
    client
        .batch_execute(&format!("CREATE TABLE {table} (x int)"))
        .await
        .map_err(err("create"))?;
    let sql = format!("SELECT x FROM {table} WHERE $1::int = 1");
    let rows = client.query(&sql, &[&1i32]).await.map_err(err("before"))?;
    if !rows.is_empty() {
        return Err(format!("{} rows from an empty table", rows.len()));
    }
    // One statement per query: a query string whose statements go to
    // several shards is refused on a sharded cluster.
    for sql in [
        format!("DROP TABLE {table}"),
        format!("CREATE TABLE {table} (x text)"),
    ] {
        client.batch_execute(&sql).await.map_err(err("recreate"))?;
    }
    let statement = client.prepare(&sql).await.map_err(err("prepare after"))?;
    if statement.columns()[0].type_() != &tokio_postgres::types::Type::TEXT {
        return Err(format!(
            "column type {} after DDL",
            statement.columns()[0].type_()
        ));
    }
    client
        .query(&statement, &[&1i32])
        .await
        .map_err(err("after"))?;
    let other = connect(port).await?;
    other
        .query(&sql, &[&1i32])
        .await
        .map_err(err("new client"))?;
    if mode != Mode::Sharded {
        client
            .execute(&format!("INSERT INTO {table} VALUES ($1)"), &[&"t"])
            .await
            .map_err(err("insert text"))?;
    }
    client
        .batch_execute(&format!("DROP TABLE {table}"))
        .await
        .map_err(err("drop"))
}

async fn describe_errors(port: u16) -> Check {
    let client = connect(port).await?;
    for _ in 0..3 {
        expect_code(client.query("SELECT 1/0", &[]).await, "22012")?;
    }
    for _ in 0..3 {
        expect_code(client.prepare("SELECT * FROM no_such_table").await, "42P01")?;
    }
    let row = client
        .query_one("SELECT 1 AS one", &[])
        .await
        .map_err(err("after"))?;
    (row.get::<_, i32>(0) == 1)
        .then_some(())
        .ok_or("wrong value".into())
}

async fn large_param_count(port: u16) -> Check {
    let client = connect(port).await?;
    let n = i16::MAX as usize;
    let list: Vec<String> = (1..=n).map(|i| format!("${i}::int")).collect();
    let sql = format!("SELECT cardinality(ARRAY[{}])", list.join(","));
    let values: Vec<i32> = vec![1; n];
    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        values.iter().map(|v| v as _).collect();
    let row = client
        .query_one(&sql, &params)
        .await
        .map_err(err("query"))?;
    let got: i32 = row.get(0);
    (got as usize == n)
        .then_some(())
        .ok_or(format!("cardinality {got}"))
}

/// Queries issued together on one connection are pipelined by
/// tokio-postgres; one failing in the middle fails alone.
async fn pipelined_queries(port: u16) -> Check {
    let client = connect(port).await?;
    let futures = (0..20i64).map(|i| {
        let client = &client;
        async move {
            if i == 10 {
                client.query_one("SELECT 1/0", &[]).await.map(|_| 0)
            } else {
                let row = client.query_one("SELECT $1::int8 AS n", &[&i]).await?;
                Ok(row.get::<_, i64>(0))
            }
        }
    });
    let results = futures_util::future::join_all(futures).await;
    for (i, result) in results.into_iter().enumerate() {
        match (i, result) {
            (10, result) => expect_code(result, "22012")?,
            (i, Ok(n)) if n == i as i64 => {}
            (i, other) => return Err(format!("query {i}: {other:?}")),
        }
    }
    Ok(())
}

/// A portal read 10 rows at a time inside a transaction, keyless and (on
/// two shards) keyed.
async fn portal_in_transaction(port: u16, mode: Mode) -> Check {
    let mut client = connect(port).await?;
    let txn = client.transaction().await.map_err(err("begin"))?;
    let statement = txn
        .prepare("SELECT g FROM generate_series(1, 1000) g")
        .await
        .map_err(err("prepare"))?;
    let portal = txn.bind(&statement, &[]).await.map_err(err("bind"))?;
    let mut seen = 0;
    loop {
        let rows = txn.query_portal(&portal, 10).await.map_err(err("fetch"))?;
        if rows.is_empty() {
            break;
        }
        seen += rows.len();
    }
    if seen != 1000 {
        return Err(format!("{seen} rows"));
    }
    txn.commit().await.map_err(err("commit"))?;
    if mode == Mode::Sharded {
        let txn = client.transaction().await.map_err(err("begin"))?;
        txn.execute(
            "INSERT INTO drv_items (id, val) VALUES ($1, 'portal') ON CONFLICT (id) DO NOTHING",
            &[&key(1)],
        )
        .await
        .map_err(err("keyed insert"))?;
        let statement = txn
            .prepare("SELECT val FROM drv_items WHERE id = $1")
            .await
            .map_err(err("prepare keyed"))?;
        let portal = txn
            .bind(&statement, &[&key(1)])
            .await
            .map_err(err("bind keyed"))?;
        let rows = txn
            .query_portal(&portal, 1)
            .await
            .map_err(err("fetch keyed"))?;
        if rows.len() != 1 {
            return Err(format!("keyed portal gave {} rows", rows.len()));
        }
        txn.rollback().await.map_err(err("rollback"))?;
    }
    Ok(())
}

async fn copy(port: u16, mode: Mode) -> Check {
    let client = connect(port).await?;
    if mode == Mode::Sharded {
        // COPY of a keyed query's rows goes to that key's shard.
        client
            .execute(
                "INSERT INTO drv_items (id, val) VALUES ($1, 'copy') ON CONFLICT (id) DO UPDATE SET val = 'copy'",
                &[&key(2)],
            )
            .await
            .map_err(err("insert"))?;
        let out = copy_out(
            &client,
            &format!(
                "COPY (SELECT id, val FROM drv_items WHERE id = {}) TO STDOUT",
                key(2)
            ),
        )
        .await?;
        return (out == format!("{}\tcopy\n", key(2)))
            .then_some(())
            .ok_or(format!("copied {out:?}"));
    }
    client
        .batch_execute(
            "DROP TABLE IF EXISTS drv_tokio_copy; CREATE TABLE drv_tokio_copy (a int, b text)",
        )
        .await
        .map_err(err("create"))?;
    let sink = client
        .copy_in("COPY drv_tokio_copy FROM STDIN")
        .await
        .map_err(err("copy in"))?;
    futures_util::pin_mut!(sink);
    for i in 0..100 {
        sink.send(Bytes::from(format!("{i}\trow {i}\n")))
            .await
            .map_err(err("send"))?;
    }
    let copied = sink.finish().await.map_err(err("finish"))?;
    if copied != 100 {
        return Err(format!("COPY FROM copied {copied}"));
    }
    let out = copy_out(
        &client,
        "COPY (SELECT a, b FROM drv_tokio_copy ORDER BY a) TO STDOUT",
    )
    .await?;
    if out.lines().count() != 100 || !out.starts_with("0\trow 0\n") {
        return Err(format!("COPY TO gave {} lines", out.lines().count()));
    }
    client
        .batch_execute("DROP TABLE drv_tokio_copy")
        .await
        .map_err(err("drop"))
}

async fn copy_out(client: &Client, sql: &str) -> Result<String, String> {
    let stream = client.copy_out(sql).await.map_err(err("copy out"))?;
    let chunks: Vec<Bytes> = stream.try_collect().await.map_err(err("copy out data"))?;
    Ok(chunks
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect())
}

/// An error aborts the transaction (25P02 until ROLLBACK); a savepoint
/// undoes an error inside it. On two shards, after a keyed statement.
async fn savepoints(port: u16) -> Check {
    let client = connect(port).await?;
    client.batch_execute("BEGIN").await.map_err(err("begin"))?;
    expect_code(client.simple_query("SELECT 1/0").await, "22012")?;
    expect_code(client.simple_query("SELECT 1").await, "25P02")?;
    client
        .batch_execute("ROLLBACK")
        .await
        .map_err(err("rollback"))?;

    client.batch_execute("BEGIN").await.map_err(err("begin"))?;
    let insert = "INSERT INTO drv_items (id, val) VALUES ($1, $2)";
    client
        .execute("DELETE FROM drv_items WHERE id = $1", &[&key(3)])
        .await
        .map_err(err("delete"))?;
    client
        .execute(insert, &[&key(3), &"kept"])
        .await
        .map_err(err("insert"))?;
    client
        .batch_execute("SAVEPOINT sp")
        .await
        .map_err(err("savepoint"))?;
    expect_code(client.execute(insert, &[&key(3), &"dup"]).await, "23505")?;
    client
        .batch_execute("ROLLBACK TO SAVEPOINT sp")
        .await
        .map_err(err("rollback to"))?;
    client
        .batch_execute("RELEASE sp")
        .await
        .map_err(err("release"))?;
    client
        .batch_execute("COMMIT")
        .await
        .map_err(err("commit"))?;
    let row = client
        .query_one("SELECT val FROM drv_items WHERE id = $1", &[&key(3)])
        .await
        .map_err(err("read"))?;
    (row.get::<_, &str>(0) == "kept")
        .then_some(())
        .ok_or("savepoint lost the row".into())
}

async fn listen_notify(port: u16) -> Check {
    let (listener, mut connection) = tokio_postgres::connect(&conninfo(port), NoTls)
        .await
        .map_err(err("connect"))?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    tokio::spawn(stream.for_each(move |message| {
        if let Ok(AsyncMessage::Notification(n)) = message {
            let _ = tx.send(n.payload().to_owned());
        }
        futures_util::future::ready(())
    }));
    listener
        .batch_execute("LISTEN drv_tokio")
        .await
        .map_err(err("listen"))?;
    let sender = connect(port).await?;
    sender
        .batch_execute("NOTIFY drv_tokio, 'hello'")
        .await
        .map_err(err("notify"))?;
    match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        Ok(Some(payload)) if payload == "hello" => Ok(()),
        other => Err(format!("no notification: {other:?}")),
    }
}

async fn cancel(port: u16) -> Check {
    let client = connect(port).await?;
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(NoTls).await
    });
    let started = std::time::Instant::now();
    expect_code(client.simple_query("SELECT pg_sleep(10)").await, "57014")?;
    canceller
        .await
        .map_err(|e| format!("canceller: {e}"))?
        .map_err(err("cancel"))?;
    if started.elapsed() > Duration::from_secs(5) {
        return Err(format!("cancel took {:?}", started.elapsed()));
    }
    client
        .simple_query("SELECT 1")
        .await
        .map_err(err("after"))?;
    Ok(())
}

/// 32 clients at once over 4 server connections, 5 transactions each (in
/// session mode each client holds a server: as many clients as the pool
/// has connections).
async fn many_clients(port: u16, mode: Mode) -> Check {
    let clients = if mode == Mode::Session {
        driver_cluster::POOL_SIZE as i64
    } else {
        32
    };
    let mut tasks = Vec::new();
    for c in 0..clients {
        tasks.push(tokio::spawn(async move {
            let client = connect(port).await?;
            for t in 0..5i64 {
                client.batch_execute("BEGIN").await.map_err(err("begin"))?;
                let n: i64 = client
                    .query_one("SELECT $1::int8 + 1", &[&(c * 10 + t)])
                    .await
                    .map_err(err("query"))?
                    .get(0);
                if n != c * 10 + t + 1 {
                    return Err(format!("client {c}: {n}"));
                }
                client
                    .batch_execute("COMMIT")
                    .await
                    .map_err(err("commit"))?;
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| format!("task: {e}"))??;
    }
    Ok(())
}
