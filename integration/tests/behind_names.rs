//! Statements that reach a sharded table through a name (issue 38): views,
//! functions, DO blocks, triggers and sequences, on two real shards. Each
//! answers as one Postgres holding every row would, or fails with 0A000
//! naming what it went through; no omnisharded table's copies differ after
//! (the harness compares them when each cluster is dropped).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{code, Cluster};
use tokio_postgres::Client;

/// `big` sharded by `id`; `big_v(k)` may run on the shard of its key.
const EXTRA: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"big\"
column = \"id\"
data_type = \"bigint\"

[[sharded_functions]]
database = \"prod\"
name = \"big_v\"
argument = 1
table = \"big\"
";

/// A cluster of two shards with `big` holding ids 1..=1000 (`v = id % 10`)
/// and the omnisharded `omni`.
async fn cluster() -> (Cluster, Client) {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", EXTRA);
    let client = cluster.connect().await;
    run(
        &client,
        &[
            "CREATE TABLE big (id bigint PRIMARY KEY, v int NOT NULL)",
            "CREATE TABLE omni (k bigint PRIMARY KEY, n bigint)",
        ],
    )
    .await;
    let rows: Vec<String> = (1..=1000).map(|i| format!("({i}, {})", i % 10)).collect();
    client
        .batch_execute(&format!(
            "INSERT INTO big (id, v) VALUES {}",
            rows.join(", ")
        ))
        .await
        .unwrap();
    (cluster, client)
}

/// Run `statements` one at a time (a string of statements for several
/// shards is refused).
async fn run(client: &Client, statements: &[&str]) {
    for sql in statements {
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|err| panic!("{sql}: {err:?}"));
    }
}

/// The first value `sql` returns, as text, in the simple protocol.
async fn simple(client: &Client, sql: &str) -> String {
    let messages = client.simple_query(sql).await.unwrap();
    messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{sql}: no row"))
}

/// The one value `sql` returns (text), in the simple and the extended
/// protocol, which must agree.
async fn value(client: &Client, sql: &str) -> String {
    let simple = simple(client, sql).await;
    let rows = client.query(sql, &[]).await.unwrap();
    let row = &rows[0];
    let extended = (row.try_get::<_, String>(0).ok())
        .or_else(|| row.try_get::<_, i64>(0).ok().map(|v| v.to_string()))
        .or_else(|| row.try_get::<_, i32>(0).ok().map(|v| v.to_string()))
        .unwrap_or_else(|| panic!("{sql}: a text or integer value"));
    assert_eq!(simple, extended, "{sql}: the protocols disagree");
    extended
}

/// `sql` fails with 0A000 in both protocols, its message naming `what`.
async fn refused(client: &Client, sql: &str, what: &str) {
    let simple = client.simple_query(sql).await.unwrap_err();
    let extended = client.query(sql, &[]).await.unwrap_err();
    for err in [simple, extended] {
        assert_eq!(code(&err), Some("0A000"), "{sql}: {err:?}");
        let message = common::describe(&err);
        assert!(message.contains(what), "{sql}: {message}");
    }
}

#[tokio::test]
async fn views_read_and_write_as_their_queries() {
    let (cluster, client) = cluster().await;
    client
        .batch_execute("CREATE VIEW bigv AS SELECT * FROM big WHERE v >= 0")
        .await
        .unwrap();
    // Known at once, to every client: read as the view's query.
    let other = cluster.connect().await;
    assert_eq!(value(&other, "SELECT count(*) FROM bigv").await, "1000");
    assert_eq!(
        value(&client, "SELECT count(*) FROM bigv WHERE id < 100").await,
        "99"
    );
    assert_eq!(value(&client, "SELECT v FROM bigv WHERE id = 5").await, "5");
    assert_eq!(
        value(&client, "SELECT sum(v) FROM bigv b WHERE b.v > 8").await,
        "900"
    );
    // A view over a view, and a view that aggregates.
    run(
        &client,
        &[
            "CREATE VIEW bigv2 AS SELECT id FROM bigv",
            "CREATE VIEW bigc AS SELECT count(*) AS n FROM big",
        ],
    )
    .await;
    assert_eq!(value(&client, "SELECT count(*) FROM bigv2").await, "1000");
    // The aggregating view is finished on the coordinator (the default).
    assert_eq!(value(&client, "SELECT n FROM bigc").await, "1000");
    // A write through the view lands once, on its key's shard.
    client
        .execute("INSERT INTO bigv VALUES (5000, 1)", &[])
        .await
        .unwrap();
    let mut found = 0;
    for shard in cluster.shards().await {
        let rows = shard
            .query("SELECT 1 FROM big WHERE id = 5000", &[])
            .await
            .unwrap();
        found += rows.len();
    }
    assert_eq!(found, 1, "the row went to one shard");
    assert_eq!(
        value(&client, "SELECT v FROM bigv WHERE id = 5000").await,
        "1"
    );
    client
        .execute("UPDATE bigv SET v = 2 WHERE id = 5000", &[])
        .await
        .unwrap();
    assert_eq!(
        value(&client, "SELECT v FROM big WHERE id = 5000").await,
        "2"
    );
    // A view whose column named like the key is not the key is refused
    // for writes.
    client
        .batch_execute("CREATE VIEW swapped AS SELECT v AS id, id AS v FROM big")
        .await
        .unwrap();
    refused(
        &client,
        "INSERT INTO swapped VALUES (1, 6000)",
        "view swapped",
    )
    .await;
    // A view made behind pgshard's back is known after RELOAD.
    for shard in cluster.shards().await {
        shard
            .batch_execute("CREATE VIEW elsewhere AS SELECT id FROM big")
            .await
            .unwrap();
    }
    // So is a materialized view of each shard's own rows, which the
    // config does not shard: refused when read.
    for shard in cluster.shards().await {
        shard
            .batch_execute("CREATE MATERIALIZED VIEW counted AS SELECT count(*) AS n FROM big")
            .await
            .unwrap();
    }
    cluster.admin().await.simple_query("RELOAD").await.unwrap();
    assert_eq!(
        value(&client, "SELECT count(*) FROM elsewhere").await,
        "1001"
    );
    refused(
        &client,
        "SELECT n FROM counted",
        "materialized view counted",
    )
    .await;
    for shard in cluster.shards().await {
        shard
            .batch_execute("DROP MATERIALIZED VIEW counted")
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn functions_and_do_blocks_that_reach_sharded_tables_are_refused() {
    let (_cluster, client) = cluster().await;
    run(
        &client,
        &[
            "CREATE FUNCTION nbig() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM big'",
            "CREATE FUNCTION nbig_pl() RETURNS bigint LANGUAGE plpgsql AS $$\
               DECLARE n bigint; BEGIN SELECT count(*) INTO n FROM big; RETURN n; END $$",
            "CREATE FUNCTION via() RETURNS bigint LANGUAGE sql AS 'SELECT nbig()'",
            "CREATE FUNCTION dynamic() RETURNS bigint LANGUAGE plpgsql AS $$\
               DECLARE n bigint; BEGIN EXECUTE 'SELECT 1' INTO n; RETURN n; END $$",
            "CREATE FUNCTION nomni() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM omni'",
            "CREATE FUNCTION add_omni(k bigint) RETURNS bigint LANGUAGE sql AS\
               'INSERT INTO omni VALUES (k, 1) RETURNING k'",
            "CREATE FUNCTION big_v(k bigint) RETURNS int LANGUAGE sql AS\
               'SELECT v FROM big WHERE id = k'",
        ],
    )
    .await;
    refused(&client, "SELECT nbig()", "function nbig").await;
    refused(&client, "SELECT nbig_pl()", "function nbig_pl").await;
    refused(&client, "SELECT via()", "reaches big").await;
    refused(&client, "SELECT dynamic()", "built at run time").await;
    refused(
        &client,
        "DO $$ BEGIN PERFORM count(*) FROM big; END $$",
        "DO block",
    )
    .await;
    // Over omnisharded tables: as before, and writes reach every copy.
    assert_eq!(value(&client, "SELECT nomni()").await, "0");
    assert_eq!(simple(&client, "SELECT add_omni(7)").await, "7");
    client
        .batch_execute("DO $$ BEGIN INSERT INTO omni VALUES (8, 2); END $$")
        .await
        .unwrap();
    assert_eq!(value(&client, "SELECT count(*) FROM omni").await, "2");
    // A [[sharded_functions]] entry runs on its key's shard.
    assert_eq!(value(&client, "SELECT big_v(17)").await, "7");
    let keyed = client
        .query("SELECT big_v($1)::text", &[&23i64])
        .await
        .unwrap();
    assert_eq!(keyed[0].get::<_, String>(0), "3");
    refused(&client, "SELECT big_v(k) FROM omni", "big_v").await;
}

#[tokio::test]
async fn sequences_every_shard_holds_hand_out_each_value_once() {
    let (cluster, client) = cluster().await;
    client.batch_execute("CREATE SEQUENCE s").await.unwrap();
    let other = cluster.connect().await;
    let mut values = Vec::new();
    for client in [&client, &other] {
        values.push(simple(client, "SELECT nextval('s')").await);
        let rows = client.query("SELECT nextval('s')", &[]).await.unwrap();
        values.push(rows[0].get::<_, i64>(0).to_string());
    }
    assert_eq!(values, ["1", "2", "3", "4"]);
    refused(&client, "SELECT nextval('s'), v FROM big", "sequence s").await;
}

#[tokio::test]
async fn triggers_that_write_other_tables_refuse_the_write() {
    let (_cluster, client) = cluster().await;
    run(
        &client,
        &[
            "CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$\
               BEGIN INSERT INTO omni VALUES (NEW.id, NEW.v); RETURN NEW; END $$",
            "CREATE TRIGGER big_audit AFTER INSERT ON big FOR EACH ROW EXECUTE FUNCTION audit()",
            "CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS $$\
               BEGIN NEW.v := NEW.v + 1; RETURN NEW; END $$",
        ],
    )
    .await;
    refused(
        &client,
        "INSERT INTO big VALUES (7001, 1)",
        "trigger big_audit on big",
    )
    .await;
    run(
        &client,
        &[
            "DROP TRIGGER big_audit ON big",
            "CREATE TRIGGER big_stamp BEFORE INSERT ON big FOR EACH ROW EXECUTE FUNCTION stamp()",
        ],
    )
    .await;
    // A trigger that touches no other table is fine.
    client
        .execute("INSERT INTO big VALUES (7001, 1)", &[])
        .await
        .unwrap();
    assert_eq!(
        value(&client, "SELECT v FROM big WHERE id = 7001").await,
        "2"
    );
}

#[tokio::test]
async fn a_transaction_sees_the_names_it_makes() {
    let (cluster, client) = cluster().await;
    for end in ["ROLLBACK", "COMMIT"] {
        client.batch_execute("BEGIN").await.unwrap();
        run(
            &client,
            &[
                "CREATE VIEW txv AS SELECT id FROM big",
                "CREATE FUNCTION txf() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM big'",
            ],
        )
        .await;
        assert_eq!(simple(&client, "SELECT count(*) FROM txv").await, "1000");
        let err = client.simple_query("SELECT txf()").await.unwrap_err();
        assert_eq!(code(&err), Some("0A000"), "{err:?}");
        client.batch_execute("ROLLBACK").await.unwrap();
        if end == "COMMIT" {
            client.batch_execute("BEGIN").await.unwrap();
            run(&client, &["CREATE VIEW txv AS SELECT id FROM big"]).await;
            client.batch_execute("COMMIT").await.unwrap();
        }
    }
    // Committed: every client reads it as its query.
    let other = cluster.connect().await;
    assert_eq!(value(&other, "SELECT count(*) FROM txv").await, "1000");
    let gone = other.simple_query("SELECT txf()").await.unwrap_err();
    assert_eq!(code(&gone), Some("42883"), "rolled back: {gone:?}");
}

/// The catalog pgshard reads lists each ordinary and partitioned table's
/// columns (in order, dropped ones left out, names as stored) and primary
/// key (in key order), as Postgres's catalog has them; a name whose
/// tables differ between schemas is unknown unless its schema is given.
#[tokio::test(flavor = "multi_thread")]
async fn the_catalog_lists_tables_columns_and_primary_keys() {
    use proxy::conn::server::{ServerConn, ServerTarget};
    let servers = common::servers(1);
    servers[0]
        .psql(
            "shard_0",
            "SET ROLE app;\
             CREATE TABLE t_cols (a int, \"Odd Name\" text, gone int, c bigint, PRIMARY KEY (c, a));\
             ALTER TABLE t_cols DROP COLUMN gone;\
             CREATE TABLE t_part (k int, v text) PARTITION BY RANGE (k);\
             CREATE SCHEMA other;\
             CREATE TABLE other.t_part (k int PRIMARY KEY);\
             CREATE TABLE other.t_cols (a int, \"Odd Name\" text, c bigint, PRIMARY KEY (c, a))",
        )
        .unwrap();
    let target = ServerTarget {
        host: "127.0.0.1".to_owned(),
        port: servers[0].port(),
        database: "shard_0".to_owned(),
        user: "app".to_owned(),
        password: Some("app-pw".to_owned()),
        replication: false,
    };
    let mut conn = ServerConn::connect(&target, std::time::Duration::from_secs(5), 0)
        .await
        .unwrap();
    let sharding = router::sharding::Sharding::default();
    let read = proxy::execute::catalog::read_on(&mut conn, &sharding)
        .await
        .unwrap();
    let catalog = read.catalog;
    // Two schemas, one definition: the name means it.
    assert_eq!(
        catalog.columns(None, "t_cols").unwrap(),
        ["a", "Odd Name", "c"]
    );
    assert_eq!(catalog.primary_key(None, "t_cols").unwrap(), ["c", "a"]);
    // Two schemas, two definitions: known only with the schema.
    assert_eq!(catalog.columns(None, "t_part"), None);
    assert_eq!(
        catalog.columns(Some("public"), "t_part").unwrap(),
        ["k", "v"]
    );
    assert_eq!(
        catalog.primary_key(Some("public"), "t_part").unwrap(),
        [""; 0]
    );
    assert_eq!(catalog.primary_key(Some("other"), "t_part").unwrap(), ["k"]);
    // The harness's own table, Postgres's catalogs: not listed / listed.
    assert_eq!(catalog.columns(None, "whoami").unwrap(), ["shard"]);
    assert_eq!(catalog.columns(None, "pg_class"), None);
}
