//! tokio-postgres's checks for the driver suite in mode `columns` (two
//! shards, only a column-only `[[sharded_tables]]` entry on `id`, no
//! table): the application's own tables, created and written at once by
//! the creating client and by another one connected before, a table with
//! id (sharded by it) and one without (a copy on every shard): INSERTs in
//! the simple protocol, as named statements (tokio-postgres prepares every
//! query) and unnamed ones sent at once (`query_typed`); COPY in text and
//! binary; all of it inside a transaction too; ALTER TABLE ADD COLUMN
//! followed at once by writes of the new column; adding the key column to
//! a table without it refused. Where the rows landed is read from each
//! shard directly.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures_util::SinkExt;
use integration::driver_cluster::{self, DriverCluster};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, CopyInSink, GenericClient, NoTls};

type Check = Result<(), String>;

/// A check to run, borrowing the cluster.
type PendingCheck<'c> = std::pin::Pin<Box<dyn Future<Output = Check> + 'c>>;

const KEYED: &str = "id bigint PRIMARY KEY, val text";
const PLAIN: &str = "k text PRIMARY KEY, v text";

/// Run every check against `cluster`; one line per check, then the summary.
pub async fn run(cluster: &DriverCluster) -> String {
    let mut report = String::new();
    let (mut passed, mut failed) = (0, 0);
    let checks: [(&str, PendingCheck<'_>); 5] = [
        ("columns_create_insert", Box::pin(create_insert(cluster))),
        ("columns_create_copy", Box::pin(create_copy(cluster))),
        ("columns_add_column", Box::pin(add_column(cluster))),
        ("columns_in_transaction", Box::pin(in_transaction(cluster))),
        (
            "columns_add_key_refused",
            Box::pin(add_key_refused(cluster)),
        ),
    ];
    for (name, check) in checks {
        let result = tokio::time::timeout(Duration::from_secs(30), check)
            .await
            .unwrap_or_else(|_| Err("hung for 30 s".into()));
        match result {
            Ok(()) => {
                passed += 1;
                report.push_str(&format!("ok {name}\n"));
            }
            Err(why) => {
                failed += 1;
                report.push_str(&format!("FAIL {name}: {why}\n"));
            }
        }
    }
    report.push_str(&format!(
        "tokio-postgres columns: {passed} passed, {failed} failed\n"
    ));
    report
}

async fn connect_to(port: u16, database: &str) -> Result<Client, String> {
    let conninfo = format!(
        "host=127.0.0.1 port={port} user={} password={} dbname={database}",
        driver_cluster::USER,
        driver_cluster::PASSWORD,
    );
    let (client, connection) = tokio_postgres::connect(&conninfo, NoTls)
        .await
        .map_err(|e| format!("connect to {database}: {e}"))?;
    tokio::spawn(connection);
    Ok(client)
}

async fn connect(cluster: &DriverCluster) -> Result<Client, String> {
    connect_to(cluster.proxy.port(), driver_cluster::DATABASE).await
}

fn err(context: &str) -> impl Fn(tokio_postgres::Error) -> String + '_ {
    move |e| match e.as_db_error() {
        Some(db) => format!("{context}: {} {}", db.code().code(), db.message()),
        None => format!("{context}: {e}"),
    }
}

/// A row as text, NULL as "NULL".
type Row = Vec<String>;

fn row(values: &[&str]) -> Row {
    values.iter().map(|v| (*v).to_owned()).collect()
}

/// Rows of `sql` as text (its columns cast to text by the caller).
async fn text_rows(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, String> {
    let rows = client.query(sql, params).await.map_err(err(sql))?;
    Ok(rows
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| {
                    r.get::<_, Option<String>>(i)
                        .unwrap_or_else(|| "NULL".into())
                })
                .collect()
        })
        .collect())
}

/// `columns` of `table` as text, for selecting.
fn as_text(columns: &str) -> String {
    columns
        .split(", ")
        .map(|c| format!("{c}::text"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each shard's rows of `columns` of `table`, read directly.
async fn per_shard(
    cluster: &DriverCluster,
    table: &str,
    columns: &str,
) -> Result<Vec<Vec<Row>>, String> {
    let mut out = Vec::new();
    for (i, server) in cluster.servers.iter().enumerate() {
        let direct = connect_to(server.port(), &format!("shard_{i}")).await?;
        let sql = format!("SELECT {} FROM {table}", as_text(columns));
        out.push(text_rows(&direct, &sql, &[]).await?);
    }
    Ok(out)
}

fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort();
    rows
}

/// `want` (rows whose first value is id) is `table` sharded by id: each row
/// on exactly one shard, every shard holding some, and pgshard reading each
/// by its key from where it is.
async fn expect_sharded(
    cluster: &DriverCluster,
    client: &Client,
    table: &str,
    columns: &str,
    want: Vec<Row>,
) -> Check {
    let shards = per_shard(cluster, table, columns).await?;
    let counts: Vec<usize> = shards.iter().map(Vec::len).collect();
    let all = sorted(shards.into_iter().flatten().collect());
    let want = sorted(want);
    if all != want {
        return Err(format!(
            "{table}: the shards' rows together are {all:?}, want {want:?}"
        ));
    }
    if counts.contains(&0) {
        return Err(format!(
            "{table}: a shard holds none of the {} rows: {counts:?}",
            want.len()
        ));
    }
    for r in &want {
        let id: i64 = r[0].parse().map_err(|e| format!("id {}: {e}", r[0]))?;
        let sql = format!("SELECT {} FROM {table} WHERE id = $1", as_text(columns));
        let got = text_rows(client, &sql, &[&id]).await?;
        if got != [r.clone()] {
            return Err(format!(
                "{table}: id {id} read by key through pgshard: {got:?}"
            ));
        }
    }
    Ok(())
}

/// Every shard holds all the rows `want` of `table`.
async fn expect_copies(
    cluster: &DriverCluster,
    table: &str,
    columns: &str,
    want: Vec<Row>,
) -> Check {
    let want = sorted(want);
    for (i, rows) in per_shard(cluster, table, columns)
        .await?
        .into_iter()
        .enumerate()
    {
        let rows = sorted(rows);
        if rows != want {
            return Err(format!(
                "{table}: rows on shard {i} are {rows:?}, want {want:?}"
            ));
        }
    }
    Ok(())
}

fn keyed_rows(ids: std::ops::Range<i64>, note: bool) -> Vec<Row> {
    ids.map(|i| {
        let mut r = vec![i.to_string(), format!("v{i}")];
        if note {
            r.push(format!("n{i}"));
        }
        r
    })
    .collect()
}

/// Two clients (the second connected before any DDL) and this check's two
/// tables, dropped first.
async fn setup(
    cluster: &DriverCluster,
    name: &str,
) -> Result<(Client, Client, String, String), String> {
    let a = connect(cluster).await?;
    let b = connect(cluster).await?;
    let (keyed, plain) = (format!("drv_tokio_{name}_k"), format!("drv_tokio_{name}_p"));
    for table in [&keyed, &plain] {
        a.batch_execute(&format!("DROP TABLE IF EXISTS {table}"))
            .await
            .map_err(err("drop"))?;
    }
    Ok((a, b, keyed, plain))
}

async fn simple(client: &impl GenericClient, what: &str, sql: &str) -> Check {
    client.batch_execute(sql).await.map_err(err(what))
}

/// An INSERT sent at once as the unnamed statement (Parse, Bind, Describe,
/// Execute, Sync), its parameters typed.
async fn unnamed(
    client: &impl GenericClient,
    what: &str,
    sql: &str,
    params: &[(&(dyn ToSql + Sync), Type)],
) -> Check {
    client
        .query_typed(sql, params)
        .await
        .map(drop)
        .map_err(err(what))
}

/// COPY `sql` with `data` as one CopyData: the rows copied.
async fn copy_text(
    sink: Result<CopyInSink<Bytes>, tokio_postgres::Error>,
    data: String,
) -> Result<u64, String> {
    let sink = sink.map_err(err("COPY"))?;
    let mut sink = std::pin::pin!(sink);
    sink.send(Bytes::from(data))
        .await
        .map_err(err("copy data"))?;
    sink.as_mut().finish().await.map_err(err("copy done"))
}

async fn create_insert(cluster: &DriverCluster) -> Check {
    let (a, b, keyed, plain) = setup(cluster, "ci").await?;
    simple(&a, "create", &format!("CREATE TABLE {keyed} ({KEYED})")).await?;
    simple(
        &b,
        "simple INSERT without a column list",
        &format!("INSERT INTO {keyed} VALUES (1, 'v1')"),
    )
    .await?;
    simple(
        &b,
        "simple INSERT",
        &format!("INSERT INTO {keyed} (id, val) VALUES (2, 'v2')"),
    )
    .await?;
    for i in 3..9i64 {
        let sql = format!("INSERT INTO {keyed} (id, val) VALUES ($1, $2)");
        b.execute(&sql, &[&i, &format!("v{i}")])
            .await
            .map_err(err("named INSERT"))?;
    }
    for i in 9..17i64 {
        let val = format!("v{i}");
        let sql = format!("INSERT INTO {keyed} VALUES ($1, $2)");
        unnamed(
            &a,
            "unnamed INSERT",
            &sql,
            &[(&i, Type::INT8), (&val, Type::TEXT)],
        )
        .await?;
    }
    expect_sharded(cluster, &a, &keyed, "id, val", keyed_rows(1..17, false)).await?;
    simple(&a, "create", &format!("CREATE TABLE {plain} ({PLAIN})")).await?;
    simple(
        &b,
        "simple INSERT into the table without id",
        &format!("INSERT INTO {plain} VALUES ('s', 'simple')"),
    )
    .await?;
    let sql = format!("INSERT INTO {plain} (k, v) VALUES ($1, $2)");
    b.execute(&sql, &[&"e", &"extended"])
        .await
        .map_err(err("named INSERT into it"))?;
    unnamed(
        &b,
        "unnamed INSERT into it",
        &sql,
        &[(&"u", Type::TEXT), (&"unnamed", Type::TEXT)],
    )
    .await?;
    let want = vec![
        row(&["s", "simple"]),
        row(&["e", "extended"]),
        row(&["u", "unnamed"]),
    ];
    expect_copies(cluster, &plain, "k, v", want).await
}

async fn create_copy(cluster: &DriverCluster) -> Check {
    let (a, _b, keyed, plain) = setup(cluster, "cc").await?;
    simple(&a, "create", &format!("CREATE TABLE {keyed} ({KEYED})")).await?;
    let text: String = (1..21).map(|i| format!("{i}\tv{i}\n")).collect();
    let n = copy_text(
        a.copy_in(&format!("COPY {keyed} (id, val) FROM STDIN"))
            .await,
        text,
    )
    .await?;
    if n != 20 {
        return Err(format!("COPY text: {n} rows"));
    }
    let sink = a
        .copy_in(&format!("COPY {keyed} FROM STDIN (FORMAT binary)"))
        .await
        .map_err(err("COPY binary"))?;
    let writer = BinaryCopyInWriter::new(sink, &[Type::INT8, Type::TEXT]);
    let mut writer = std::pin::pin!(writer);
    for i in 21..41i64 {
        let val = format!("v{i}");
        let values: [&(dyn ToSql + Sync); 2] = [&i, &val];
        writer
            .as_mut()
            .write(&values)
            .await
            .map_err(err("COPY binary row"))?;
    }
    let n = writer.finish().await.map_err(err("COPY binary done"))?;
    if n != 20 {
        return Err(format!("COPY binary: {n} rows"));
    }
    expect_sharded(cluster, &a, &keyed, "id, val", keyed_rows(1..41, false)).await?;
    simple(&a, "create", &format!("CREATE TABLE {plain} ({PLAIN})")).await?;
    let copy = a.copy_in(&format!("COPY {plain} FROM STDIN")).await;
    copy_text(copy, "k0\tv0\nk1\tv1\n".into()).await?;
    expect_copies(
        cluster,
        &plain,
        "k, v",
        vec![row(&["k0", "v0"]), row(&["k1", "v1"])],
    )
    .await
}

async fn add_column(cluster: &DriverCluster) -> Check {
    let (a, b, keyed, plain) = setup(cluster, "ac").await?;
    // One statement per query string: one whose statements all go to
    // every shard is refused on a sharded cluster.
    simple(&a, "create", &format!("CREATE TABLE {keyed} ({KEYED})")).await?;
    simple(&a, "create", &format!("CREATE TABLE {plain} ({PLAIN})")).await?;
    let insert = format!("INSERT INTO {keyed} (id, val) VALUES ($1, $2)");
    b.execute(&insert, &[&1i64, &"v1"])
        .await
        .map_err(err("INSERT before"))?;
    let insert = format!("INSERT INTO {plain} (k, v) VALUES ($1, $2)");
    b.execute(&insert, &[&"a", &"before"])
        .await
        .map_err(err("INSERT before"))?;
    simple(
        &a,
        "add column",
        &format!("ALTER TABLE {keyed} ADD COLUMN note text"),
    )
    .await?;
    simple(
        &b,
        "simple INSERT of the new column",
        &format!("INSERT INTO {keyed} (id, val, note) VALUES (2, 'v2', 'n2')"),
    )
    .await?;
    simple(
        &b,
        "simple INSERT without a column list",
        &format!("INSERT INTO {keyed} VALUES (3, 'v3', 'n3')"),
    )
    .await?;
    for i in 4..9i64 {
        let sql = format!("INSERT INTO {keyed} (id, val, note) VALUES ($1, $2, $3)");
        b.execute(&sql, &[&i, &format!("v{i}"), &format!("n{i}")])
            .await
            .map_err(err("named INSERT"))?;
    }
    let sql = format!("INSERT INTO {keyed} VALUES ($1, $2, $3)");
    unnamed(
        &a,
        "unnamed INSERT without a column list",
        &sql,
        &[
            (&9i64, Type::INT8),
            (&"v9", Type::TEXT),
            (&"n9", Type::TEXT),
        ],
    )
    .await?;
    let text: String = (10..17).map(|i| format!("{i}\tv{i}\tn{i}\n")).collect();
    let copy = b
        .copy_in(&format!("COPY {keyed} (id, val, note) FROM STDIN"))
        .await;
    copy_text(copy, text).await?;
    let mut want = vec![row(&["1", "v1", "NULL"])];
    want.extend(keyed_rows(2..17, true));
    expect_sharded(cluster, &a, &keyed, "id, val, note", want).await?;
    simple(
        &a,
        "add column",
        &format!("ALTER TABLE {plain} ADD COLUMN note text"),
    )
    .await?;
    simple(
        &b,
        "simple INSERT of the new column",
        &format!("INSERT INTO {plain} VALUES ('s', 'simple', 'n')"),
    )
    .await?;
    let sql = format!("INSERT INTO {plain} (k, v, note) VALUES ($1, $2, $3)");
    b.execute(&sql, &[&"e", &"ext", &"n"])
        .await
        .map_err(err("named INSERT of it"))?;
    let want = vec![
        row(&["a", "before", "NULL"]),
        row(&["s", "simple", "n"]),
        row(&["e", "ext", "n"]),
    ];
    expect_copies(cluster, &plain, "k, v, note", want).await
}

async fn in_transaction(cluster: &DriverCluster) -> Check {
    let (mut c, _b, keyed, plain) = setup(cluster, "tx").await?;
    let tx = c.transaction().await.map_err(err("begin"))?;
    simple(&tx, "create", &format!("CREATE TABLE {keyed} ({KEYED})")).await?;
    simple(
        &tx,
        "simple INSERT",
        &format!("INSERT INTO {keyed} VALUES (1, 'v1')"),
    )
    .await?;
    for i in 2..5i64 {
        let sql = format!("INSERT INTO {keyed} (id, val) VALUES ($1, $2)");
        tx.execute(&sql, &[&i, &format!("v{i}")])
            .await
            .map_err(err("named INSERT"))?;
    }
    for i in 5..9i64 {
        let val = format!("v{i}");
        let sql = format!("INSERT INTO {keyed} VALUES ($1, $2)");
        unnamed(
            &tx,
            "unnamed INSERT",
            &sql,
            &[(&i, Type::INT8), (&val, Type::TEXT)],
        )
        .await?;
    }
    let text: String = (9..17).map(|i| format!("{i}\tv{i}\n")).collect();
    copy_text(
        tx.copy_in(&format!("COPY {keyed} (id, val) FROM STDIN"))
            .await,
        text,
    )
    .await?;
    simple(&tx, "create", &format!("CREATE TABLE {plain} ({PLAIN})")).await?;
    let sql = format!("INSERT INTO {plain} (k, v) VALUES ($1, $2)");
    unnamed(
        &tx,
        "INSERT into the table without id",
        &sql,
        &[(&"a", Type::TEXT), (&"1", Type::TEXT)],
    )
    .await?;
    simple(
        &tx,
        "add column",
        &format!("ALTER TABLE {keyed} ADD COLUMN note text"),
    )
    .await?;
    let sql = format!("INSERT INTO {keyed} (id, val, note) VALUES ($1, $2, $3)");
    tx.execute(&sql, &[&17i64, &"v17", &"n"])
        .await
        .map_err(err("INSERT of the new column"))?;
    tx.commit().await.map_err(err("commit"))?;
    let mut want: Vec<Row> = (1..17)
        .map(|i| vec![i.to_string(), format!("v{i}"), "NULL".into()])
        .collect();
    want.push(row(&["17", "v17", "n"]));
    expect_sharded(cluster, &c, &keyed, "id, val, note", want).await?;
    expect_copies(cluster, &plain, "k, v", vec![row(&["a", "1"])]).await
}

/// A table without id is omnisharded (every shard holds all its rows):
/// given id it would be sharded by it with every row still everywhere.
async fn add_key_refused(cluster: &DriverCluster) -> Check {
    let (c, _b, _keyed, plain) = setup(cluster, "kr").await?;
    simple(&c, "create", &format!("CREATE TABLE {plain} ({PLAIN})")).await?;
    simple(
        &c,
        "INSERT",
        &format!("INSERT INTO {plain} VALUES ('a', '1')"),
    )
    .await?;
    let refused = c
        .batch_execute(&format!("ALTER TABLE {plain} ADD COLUMN id bigint"))
        .await
        .err()
        .ok_or("adding the key column: want SQLSTATE 0A000, got success")?;
    let db = refused
        .as_db_error()
        .ok_or(format!("adding the key column: {refused}"))?;
    if db.code().code() != "0A000"
        || !db.message().contains("omnisharded")
        || !db.message().contains(&plain)
    {
        return Err(format!(
            "the refusal does not say why: {} {}",
            db.code().code(),
            db.message()
        ));
    }
    let sql = format!("INSERT INTO {plain} (k, v) VALUES ($1, $2)");
    c.execute(&sql, &[&"b", &"2"])
        .await
        .map_err(err("INSERT after the refusal"))?;
    expect_copies(
        cluster,
        &plain,
        "k, v",
        vec![row(&["a", "1"]), row(&["b", "2"])],
    )
    .await
}
