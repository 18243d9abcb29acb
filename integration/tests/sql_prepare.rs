//! SQL-level PREPARE / EXECUTE / DEALLOCATE through pgshard on 2
//! partition-only shards, checked against one reference Postgres holding
//! every row (issue 38 point 2): EXECUTE answers as the statement it runs
//! (keyed and keyless, aggregates, ORDER BY / LIMIT merges, text and typed
//! arguments, writes), or is refused with 0A000; Postgres's own errors for
//! bad, duplicate and unknown statements; names forgotten by DEALLOCATE,
//! DEALLOCATE ALL and DISCARD ALL; transaction mode with the statement run
//! on servers other than the one that checked it; a query string that
//! starts with PREPARE; the extended protocol; session mode.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::wire::{self, Wire};
use common::{Cluster, USERS};
use integration::{PgServer, TestProxy};
use tokio_postgres::{Client, SimpleQueryMessage};

const SHARDING: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"big\"
column = \"id\"
data_type = \"bigint\"
hasher = \"postgres\"
";

const TABLE: &str = "(id bigint NOT NULL, v int, name text, amount numeric(10,2))";

/// 1,000 rows, the same on the shards (each its own partition) and on the
/// reference (all of them).
const ROWS: &str = "SELECT g, g % 10, 'n' || lpad((g * 7 % 1000)::text, 3, '0'), (g % 97) / 4.0 \
                    FROM generate_series(1, 1000) g";

/// `big` (sharded by `id`) and `omni` (a plain table on each database,
/// omnisharded) on `n` shards and a reference; pgshard over the shards with
/// `general` in its `[general]`.
fn start(n: usize, general: &str) -> (Cluster, PgServer, String) {
    common::watch_proxy_panics();
    let mut servers = common::servers(n + 1);
    let reference = servers.pop().unwrap();
    for (i, server) in servers.iter().enumerate() {
        let sql = format!(
            "SET ROLE app; CREATE TABLE big {TABLE} PARTITION BY HASH (id);\
             CREATE TABLE big_on_shard PARTITION OF big FOR VALUES WITH (MODULUS {n}, REMAINDER {i});\
             INSERT INTO big {ROWS} WHERE satisfies_hash_partition('big'::regclass, {n}, {i}, g::bigint);\
             CREATE TABLE omni (k int, t text); INSERT INTO omni VALUES (1, 'one'), (2, 'two');"
        );
        server.psql(&format!("shard_{i}"), &sql).unwrap();
    }
    let reference_db = format!("shard_{n}");
    let sql = format!(
        "SET ROLE app; CREATE TABLE big {TABLE}; INSERT INTO big {ROWS};\
         CREATE TABLE omni (k int, t text); INSERT INTO omni VALUES (1, 'one'), (2, 'two');"
    );
    reference.psql(&reference_db, &sql).unwrap();
    let config = common::sharded_config(&servers, general, SHARDING);
    let users = format!(
        "{USERS}[[users]]\nname = \"raw\"\ndatabase = \"prod\"\nauth_type = \"trust\"\n\
         server_user = \"app\"\nserver_password = \"app-pw\"\n"
    );
    let proxy = TestProxy::start(&config, &users).unwrap();
    let cluster = Cluster {
        proxy,
        databases: common::databases(&servers),
        general: String::new(),
        servers,
        copies_differ: None,
    };
    (cluster, reference, reference_db)
}

async fn reference_client(reference: &PgServer, database: &str) -> Client {
    common::connect(reference.port(), "app", "app-pw", database)
        .await
        .unwrap()
}

/// A simple query's rows (all statements' together) and last command tag,
/// or its SQLSTATE.
type Answer = Result<(Vec<Vec<Option<String>>>, String), String>;

async fn answer(client: &Client, sql: &str) -> Answer {
    let messages = client
        .simple_query(sql)
        .await
        .map_err(|e| common::code(&e).unwrap_or("?").to_owned())?;
    let mut rows = Vec::new();
    let mut tag = String::new();
    for message in messages {
        match message {
            SimpleQueryMessage::Row(row) => rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            SimpleQueryMessage::CommandComplete(n) => tag = n.to_string(),
            _ => {}
        }
    }
    Ok((rows, tag))
}

/// Run `sql` on both and require the same answer (rows in order: the
/// statements fix it, or return one row).
async fn same(pgshard: &Client, reference: &Client, sql: &str) {
    let got = answer(pgshard, sql).await;
    let want = answer(reference, sql).await;
    assert!(want.is_ok(), "{sql}: the reference fails: {want:?}");
    assert_eq!(got, want, "{sql}");
}

/// Statements prepared on both, each with the EXECUTEs compared.
const EXACT: &[(&str, &[&str])] = &[
    ("PREPARE c AS SELECT count(*) FROM big", &["EXECUTE c"]),
    (
        "PREPARE k(int8) AS SELECT id, v, name FROM big WHERE id = $1",
        &["EXECUTE k(5)", "EXECUTE k('7')", "EXECUTE k(NULL)", "EXECUTE k(2 + 3)", "EXECUTE k(-1)", "EXECUTE k(0000000000000000000000000042)"],
    ),
    (
        "PREPARE t AS SELECT id, name FROM big WHERE id = $1 OR id = $2 ORDER BY id",
        &["EXECUTE t(1, '2')", "EXECUTE t(999, 998)", "EXECUTE t('3', abs(-4))"],
    ),
    (
        "PREPARE tx(text) AS SELECT id FROM big WHERE name = $1 ORDER BY id",
        &["EXECUTE tx('n007')", "EXECUTE tx(7)"],
    ),
    (
        "PREPARE a(int) AS SELECT v, avg(amount), count(*), sum(id), min(name) FROM big WHERE v < $1 GROUP BY v ORDER BY v",
        &["EXECUTE a(5)", "EXECUTE a(0)", "EXECUTE a(10)"],
    ),
    (
        "PREPARE o AS SELECT id, name FROM big ORDER BY name DESC, id LIMIT $1 OFFSET $2",
        &["EXECUTE o(5, 3)", "EXECUTE o('2', 0)", "EXECUTE o(NULL, 995)", "EXECUTE o(0, 0)"],
    ),
    (
        "PREPARE h AS SELECT v, count(*), avg(id) FROM big GROUP BY v HAVING count(*) > $1 ORDER BY v",
        &["EXECUTE h(99)", "EXECUTE h(100)", "EXECUTE h(NULL)"],
    ),
    (
        "PREPARE n(numeric) AS SELECT id FROM big WHERE id = $1",
        &["EXECUTE n(5)", "EXECUTE n(5.0)", "EXECUTE n('6.00')"],
    ),
    (
        "PREPARE an(int8[]) AS SELECT id, v FROM big WHERE id = ANY($1) ORDER BY id",
        &["EXECUTE an('{1,2,3,500}')", "EXECUTE an(ARRAY[7, 8])", "EXECUTE an('{}')"],
    ),
    (
        "PREPARE lit AS SELECT id, v FROM big WHERE id = 42 AND v = $1",
        &["EXECUTE lit(2)", "EXECUTE lit(3)"],
    ),
    (
        "PREPARE s AS SELECT max(amount), stddev(amount), variance(v) FROM big WHERE v = $1",
        &["EXECUTE s(3)", "EXECUTE s(-1)"],
    ),
    (
        "PREPARE d AS SELECT DISTINCT v FROM big WHERE id > $1 ORDER BY v DESC LIMIT 3",
        &["EXECUTE d(500)", "EXECUTE d(995)"],
    ),
    (
        "PREPARE om(int) AS SELECT t FROM omni WHERE k = $1",
        &["EXECUTE om(2)"],
    ),
    ("PREPARE noparams AS VALUES (1, 'a')", &["EXECUTE noparams"]),
];

#[tokio::test(flavor = "multi_thread")]
async fn executes_answer_as_their_statements() {
    let (cluster, reference, reference_db) = start(2, "");
    let pgshard = cluster.connect().await;
    let direct = reference_client(&reference, &reference_db).await;
    for (prepare, executes) in EXACT {
        same(&pgshard, &direct, prepare).await;
        for execute in *executes {
            same(&pgshard, &direct, execute).await;
        }
    }
    // Writes: keyed INSERT, keyless UPDATE (every shard, atomically),
    // keyed DELETE with RETURNING, in and out of a transaction.
    let writes = [
        "PREPARE ins(int8, int) AS INSERT INTO big (id, v, name, amount) VALUES ($1, $2, 'new', 1.5) RETURNING id, v",
        "PREPARE upd AS UPDATE big SET v = v + 1 WHERE v = $1",
        "PREPARE del AS DELETE FROM big WHERE id = $1 RETURNING name",
        "EXECUTE ins(5001, 3)",
        "EXECUTE ins('5002', 4)",
        "EXECUTE upd(3)",
        "EXECUTE del(17)",
        "BEGIN",
        "EXECUTE ins(5003, 9)",
        "EXECUTE upd(9)",
        "EXECUTE c",
        "ROLLBACK",
        "BEGIN",
        "EXECUTE del(18)",
        "EXECUTE upd(7)",
        "COMMIT",
        "SELECT count(*), sum(v), sum(id) FROM big",
        "SELECT id, v, name FROM big WHERE id IN (5001, 5002, 5003, 17, 18) ORDER BY id",
    ];
    for sql in writes {
        same(&pgshard, &direct, sql).await;
    }
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn what_cannot_be_exact_is_refused_and_postgres_errors_are_postgres() {
    let (cluster, reference, reference_db) = start(2, "");
    let pgshard = cluster.connect().await;
    let direct = reference_client(&reference, &reference_db).await;
    let setup = [
        "PREPARE ins(int8, int) AS INSERT INTO big (id, v) VALUES ($1, $2)",
        "PREPARE o AS SELECT id FROM big ORDER BY id LIMIT $1",
        "PREPARE c AS SELECT count(*) FROM big",
        "PREPARE k(int8) AS SELECT v FROM big WHERE id = $1",
    ];
    for sql in setup {
        same(&pgshard, &direct, sql).await;
    }
    let refused = [
        // No key: the row's shard cannot be told.
        "EXECUTE ins(1000 + 1, 1)",
        "EXECUTE ins(NULL, 1)",
        // Forms pgshard does not take apart.
        "SELECT 1; EXECUTE c",
        "EXECUTE c; EXECUTE c",
        "SELECT 1; PREPARE p AS SELECT 1",
        "CREATE TABLE big_copy AS EXECUTE c",
        "EXPLAIN EXECUTE c",
    ];
    for sql in refused {
        let got = answer(&pgshard, sql).await;
        assert_eq!(got, Err("0A000".to_owned()), "{sql}");
    }
    // The merge needs a LIMIT's value: the coordinator finishes it (the
    // default; `cross_shard_finish = "refuse"` refuses it).
    same(&pgshard, &direct, "EXECUTE o(1 + 1)").await;
    // EXPLAIN EXECUTE of a statement on one shard runs there.
    let plan = answer(&pgshard, "EXPLAIN (COSTS OFF) EXECUTE k(5)")
        .await
        .unwrap();
    assert!(
        plan.0
            .iter()
            .flatten()
            .flatten()
            .any(|l| l.contains("big_on_shard")),
        "{plan:?}"
    );
    // Postgres's own errors, as one Postgres gives them.
    let errors = [
        ("PREPARE bad AS SELECT nope FROM big", "42703"),
        ("EXECUTE bad", "26000"),
        ("PREPARE c AS SELECT 1", "42P05"),
        ("PREPARE typo(nosuchtype) AS SELECT $1", "42704"),
        ("EXECUTE nothing", "26000"),
        ("DEALLOCATE nothing", "26000"),
        ("EXECUTE k(1, 2)", "42601"),
        // A key that is no bigint cannot be routed: the coordinator
        // finishes it (the default), with Postgres's error.
        ("EXECUTE k('abc')", "22P02"),
    ];
    for (sql, code) in errors {
        assert_eq!(
            answer(&pgshard, sql).await.map(drop),
            Err(code.to_owned()),
            "{sql}"
        );
        assert_eq!(
            answer(&direct, sql).await.map(drop),
            Err(code.to_owned()),
            "reference: {sql}"
        );
    }
    // Their messages and positions too: the client's names, its text.
    for sql in [
        "PREPARE bad AS\n  SELECT id, nope FROM big",
        "SELECT 1",
        "EXECUTE k(1, 2)",
        "EXECUTE k",
    ] {
        let got = pgshard.simple_query(sql).await.err();
        let want = direct.simple_query(sql).await.err();
        let fields = |e: Option<tokio_postgres::Error>| {
            e.and_then(|e| e.as_db_error().cloned()).map(|e| {
                (
                    e.code().clone(),
                    e.message().to_owned(),
                    e.detail().map(str::to_owned),
                    e.position().cloned(),
                )
            })
        };
        let got = fields(got);
        assert_eq!(got, fields(want), "{sql}");
        assert!(sql == "SELECT 1" || got.is_some(), "{sql}");
    }
    // A PREPARE that failed left no name behind; DEALLOCATE forgets one.
    for sql in [
        "PREPARE bad AS SELECT 1",
        "EXECUTE bad",
        "DEALLOCATE bad",
        "DEALLOCATE PREPARE k",
    ] {
        same(&pgshard, &direct, sql).await;
    }
    for sql in ["EXECUTE bad", "EXECUTE k(5)"] {
        assert_eq!(
            answer(&pgshard, sql).await.map(drop),
            Err("26000".to_owned()),
            "{sql}"
        );
    }
    // A protocol-level name and a SQL one share Postgres's namespace.
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    let exchanges = [
        (
            [wire::parse("s1", "SELECT 1"), wire::sync()].concat(),
            vec![],
        ),
        (wire::query("PREPARE s1 AS SELECT 2"), vec!["42P05"]),
        (wire::query("PREPARE p1 AS SELECT 2"), vec![]),
        (
            [wire::parse("p1", "SELECT 1"), wire::sync()].concat(),
            vec!["42P05"],
        ),
        (wire::query("DEALLOCATE s1"), vec![]),
        (wire::query("DEALLOCATE p1"), vec![]),
        (wire::query("EXECUTE p1"), vec!["26000"]),
    ];
    for (messages, codes) in exchanges {
        raw.send(&messages).await;
        assert_eq!(wire::errors(&raw.until_ready().await), codes);
    }
    // DEALLOCATE ALL and DISCARD ALL forget every name.
    for (forget, tag) in [
        ("DEALLOCATE ALL", "DEALLOCATE ALL"),
        ("DISCARD ALL", "DISCARD ALL"),
    ] {
        same(
            &pgshard,
            &direct,
            "PREPARE again AS SELECT count(*) FROM big",
        )
        .await;
        let forgotten = answer(&pgshard, forget).await;
        assert!(forgotten.is_ok(), "{forget}: {forgotten:?}");
        assert_eq!(
            answer(&pgshard, "EXECUTE again").await.map(drop),
            Err("26000".into()),
            "{tag}"
        );
        answer(&direct, "DEALLOCATE again").await.unwrap();
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// Transaction mode: the server that checked a PREPARE is busy elsewhere,
/// so other servers run its EXECUTEs (each prepares it first), and no
/// server is left needing a reset.
#[tokio::test(flavor = "multi_thread")]
async fn transaction_mode_runs_executes_on_any_server() {
    let (cluster, reference, reference_db) = start(2, "default_pool_size = 3");
    let direct = reference_client(&reference, &reference_db).await;
    let a = cluster.connect().await;
    let b = cluster.connect().await;
    for sql in [
        "PREPARE k(int8) AS SELECT id, name FROM big WHERE id = $1",
        "PREPARE c AS SELECT count(*), sum(amount) FROM big WHERE v = $1",
    ] {
        same(&a, &direct, sql).await;
    }
    // `b` holds a server of each shard in an open transaction.
    b.simple_query("BEGIN").await.unwrap();
    b.simple_query("SELECT count(*) FROM big").await.unwrap();
    for round in 0..20 {
        same(&a, &direct, &format!("EXECUTE k({})", round * 37 + 1)).await;
        same(&a, &direct, &format!("EXECUTE c({})", round % 10)).await;
    }
    b.simple_query("COMMIT").await.unwrap();
    // In an aborted transaction, as on Postgres: 25P02 for all of them.
    for sql in [
        "BEGIN",
        "EXECUTE k(1)",
        "SELECT 1 / 0",
        "PREPARE late AS SELECT 1",
        "EXECUTE k(1)",
        "EXECUTE c(1)",
        "DEALLOCATE k",
        "ROLLBACK",
        "EXECUTE late",
        "EXECUTE k(1)",
    ] {
        let (got, want) = (answer(&a, sql).await, answer(&direct, sql).await);
        assert_eq!(got, want, "{sql}");
    }
    // Many clients at once, each with its own names.
    let mut tasks = Vec::new();
    for client in 0..6 {
        let pgshard = cluster.connect().await;
        let direct = reference_client(&reference, &reference_db).await;
        tasks.push(tokio::spawn(async move {
            let prepare =
                format!("PREPARE p{client}(int8) AS SELECT v, name FROM big WHERE id = $1");
            same(&pgshard, &direct, &prepare).await;
            for i in 0..30 {
                same(
                    &pgshard,
                    &direct,
                    &format!("EXECUTE p{client}({})", i * 31 + client),
                )
                .await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    // Servers hold pgshard's names for the statements, never the client's.
    for _ in 0..4 {
        let (held, _) = answer(&a, "SELECT name FROM pg_prepared_statements")
            .await
            .unwrap();
        assert!(!held.is_empty());
        for name in held.iter().flatten().flatten() {
            assert!(name.starts_with("__pgshard_"), "{name}");
        }
    }
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_query_string_may_start_with_prepare() {
    let (cluster, reference, reference_db) = start(2, "");
    let pgshard = cluster.connect().await;
    let direct = reference_client(&reference, &reference_db).await;
    for sql in [
        "PREPARE q AS SELECT count(*) FROM big; EXECUTE q",
        "PREPARE q1(int8) AS SELECT id, v FROM big WHERE id = $1; EXECUTE q1(1)",
        "PREPARE q2 AS SELECT v, count(*) FROM big GROUP BY v ORDER BY v; PREPARE q3 AS SELECT 1;\n EXECUTE q2",
        "EXECUTE q",
        "EXECUTE q3",
        "PREPARE q4 AS SELECT 1;",
        "EXECUTE q4",
    ] {
        same(&pgshard, &direct, sql).await;
    }
    // A PREPARE that fails ends the string: what follows does not run.
    let sql = "PREPARE q5 AS SELECT nope; EXECUTE q";
    assert_eq!(answer(&pgshard, sql).await.map(drop), Err("42703".into()));
    assert_eq!(
        answer(&pgshard, "EXECUTE q5").await.map(drop),
        Err("26000".into())
    );
    // A name taken earlier in the string is Postgres's 42P05.
    let sql = "PREPARE q6 AS SELECT 1; PREPARE q6 AS SELECT 2";
    assert_eq!(answer(&pgshard, sql).await.map(drop), Err("42P05".into()));
    assert_eq!(
        answer(&pgshard, "EXECUTE q6").await.unwrap().0,
        vec![vec![Some("1".to_owned())]]
    );
}

/// EXECUTE sent through Parse/Bind/Execute (tokio-postgres's `query`),
/// PREPARE and DEALLOCATE too.
#[tokio::test(flavor = "multi_thread")]
async fn the_extended_protocol_executes_too() {
    let (cluster, reference, reference_db) = start(2, "");
    let pgshard = cluster.connect().await;
    let direct = reference_client(&reference, &reference_db).await;
    for client in [&pgshard, &direct] {
        client
            .execute(
                "PREPARE k(int8) AS SELECT id, name, amount::text FROM big WHERE id = $1",
                &[],
            )
            .await
            .unwrap();
        client
            .batch_execute("PREPARE c AS SELECT count(*) FROM big")
            .await
            .unwrap();
    }
    let rows = |rows: Vec<tokio_postgres::Row>| -> Vec<(i64, String, String)> {
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    };
    for execute in ["EXECUTE k(5)", "EXECUTE k('9')", "EXPLAIN EXECUTE k(5)"] {
        let got = pgshard.query(execute, &[]).await;
        let want = direct.query(execute, &[]).await.unwrap();
        if execute.starts_with("EXPLAIN") {
            assert_eq!(got.unwrap().len(), want.len());
            continue;
        }
        assert_eq!(rows(got.unwrap()), rows(want), "{execute}");
    }
    // A statement prepared by Parse, bound twice: each Bind routes anew.
    let statement = pgshard.prepare("EXECUTE k(7)").await.unwrap();
    assert_eq!(
        statement.columns().len(),
        3,
        "Describe gives the statement's row"
    );
    for _ in 0..2 {
        assert_eq!(pgshard.query(&statement, &[]).await.unwrap().len(), 1);
    }
    // On several shards: a segment merged as the statement's rows (the
    // shards running the statement its merge rewrites, with the arguments
    // of the parameters it keeps).
    for client in [&pgshard, &direct] {
        client
            .batch_execute(
                "PREPARE o AS SELECT v, count(*), min(name) FROM big WHERE id > $1 \
                 GROUP BY v HAVING count(*) > $2 ORDER BY max(name) DESC, v LIMIT $3 OFFSET $4",
            )
            .await
            .unwrap();
    }
    let c =
        |rows: Vec<tokio_postgres::Row>| -> Vec<i64> { rows.iter().map(|r| r.get(0)).collect() };
    assert_eq!(
        c(pgshard.query("EXECUTE c", &[]).await.unwrap()),
        vec![1000]
    );
    let o = |rows: Vec<tokio_postgres::Row>| -> Vec<(i32, i64, String)> {
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    };
    for execute in [
        "EXECUTE o(10, 97, 3, 1)",
        "EXECUTE o(500, 0, NULL, 2)",
        "EXECUTE o(0, 1000, 5, 0)",
    ] {
        let got = pgshard.query(execute, &[]).await.unwrap();
        assert_eq!(
            o(got),
            o(direct.query(execute, &[]).await.unwrap()),
            "{execute}"
        );
    }
    let err = pgshard.query("EXECUTE o(1, 2, 3)", &[]).await.unwrap_err();
    assert_eq!(common::code(&err), Some("42601"));
    let message = err.as_db_error().unwrap().message();
    assert_eq!(
        message,
        "wrong number of parameters for prepared statement \"o\""
    );
    // Errors skip to the Sync, as Postgres's do.
    let err = pgshard
        .execute("PREPARE k AS SELECT 1", &[])
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("42P05"));
    let err = pgshard
        .execute("PREPARE bad AS SELECT nope", &[])
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("42703"));
    let err = pgshard.query("EXECUTE bad", &[]).await.unwrap_err();
    assert_eq!(common::code(&err), Some("26000"));
    assert_eq!(pgshard.execute("DEALLOCATE k", &[]).await.unwrap(), 0);
    let err = pgshard.query("EXECUTE k(5)", &[]).await.unwrap_err();
    assert_eq!(common::code(&err), Some("26000"));
    pgshard.execute("DEALLOCATE ALL", &[]).await.unwrap();
    let err = pgshard.simple_query("EXECUTE c").await.unwrap_err();
    assert_eq!(common::code(&err), Some("26000"));
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn session_mode_prepares_the_same_way() {
    let (cluster, reference, reference_db) =
        start(2, "pooler_mode = \"session\"\ndefault_pool_size = 2");
    let pgshard = cluster.connect().await;
    let direct = reference_client(&reference, &reference_db).await;
    for sql in [
        "PREPARE k(int8) AS SELECT id, v FROM big WHERE id = $1",
        "PREPARE c AS SELECT v, count(*) FROM big GROUP BY v ORDER BY v",
        "EXECUTE k(3)",
        "EXECUTE c",
        "BEGIN",
        "EXECUTE k(4)",
        "EXECUTE c",
        "COMMIT",
        "DEALLOCATE k",
    ] {
        same(&pgshard, &direct, sql).await;
    }
    assert_eq!(
        answer(&pgshard, "EXECUTE k(3)").await.map(drop),
        Err("26000".into())
    );
}

/// A cluster of one database routes nothing, but its servers are pooled:
/// EXECUTE, EXPLAIN EXECUTE and CREATE TABLE AS EXECUTE run on whichever
/// server serves the client, in both protocols.
#[tokio::test(flavor = "multi_thread")]
async fn one_database_clusters_prepare_too() {
    let (cluster, reference, reference_db) = start(1, "default_pool_size = 2");
    let pgshard = cluster.connect().await;
    let other = cluster.connect().await;
    let direct = reference_client(&reference, &reference_db).await;
    for sql in [
        "PREPARE k(int8) AS SELECT id, v FROM big WHERE id = $1",
        "PREPARE c AS SELECT count(*) FROM big WHERE v = $1",
    ] {
        same(&pgshard, &direct, sql).await;
    }
    // The server that checked them is busy elsewhere.
    other.simple_query("BEGIN; SELECT 1").await.unwrap();
    for sql in [
        "EXECUTE k(5)",
        "EXECUTE c(3)",
        "CREATE TEMP TABLE copied AS EXECUTE c(4)",
        "SELECT * FROM copied",
        "DEALLOCATE c",
    ] {
        same(&pgshard, &direct, sql).await;
    }
    other.simple_query("COMMIT").await.unwrap();
    let plan = answer(&pgshard, "EXPLAIN (COSTS OFF) EXECUTE k(5)")
        .await
        .unwrap();
    assert!(!plan.0.is_empty());
    let rows = pgshard.query("EXECUTE k(6)", &[]).await.unwrap();
    assert_eq!(rows[0].get::<_, i64>(0), 6);
    assert_eq!(
        answer(&pgshard, "EXECUTE c(3)").await.map(drop),
        Err("26000".into())
    );
    assert_eq!(common::proxy_panics(), 0);
}
