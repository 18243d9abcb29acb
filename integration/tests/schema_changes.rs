//! Tables created from queries and renamed tables, through pgshard on two
//! shards whose `big` is hash-partitioned per shard (a misplaced row fails):
//! `CREATE TABLE ... AS`, `SELECT ... INTO`, materialized views and their
//! REFRESH are exact (each shard materializes its own rows of a table the
//! config shards like `big`) or refused with 0A000 before anything is
//! created, in both protocols; renaming a sharded table or its key column,
//! or a family member, is refused (issue 38, points 5 and 6).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{code, column, describe, postgres_hash_shard, Cluster};
use tokio_postgres::Client;

/// `big` by `id`; `bcs`, `bcm` sharded like it (created by the tests);
/// `bct` by `id` over 4 logical shards (not co-located with `big`).
const EXTRA: &str = "\
[[sharded_tables]]
database = \"prod\"
name = \"big\"
column = \"id\"

[[sharded_tables]]
database = \"prod\"
name = \"bcs\"
column = \"id\"

[[sharded_tables]]
database = \"prod\"
name = \"bcm\"
column = \"id\"

[[sharded_tables]]
database = \"prod\"
name = \"bct\"
column = \"id\"
shard_count = 4
";

/// Two shards with `big (id bigint primary key, v int)` hash-partitioned,
/// rows 1..=1000 with `v = id % 10` loaded through pgshard.
async fn cluster() -> Cluster {
    let cluster = Cluster::start_sharded_raw(2, "", EXTRA);
    for (i, server) in cluster.servers.iter().enumerate() {
        server
            .psql(
                &format!("shard_{i}"),
                &format!(
                    "SET ROLE app;\
                     CREATE TABLE big (id bigint PRIMARY KEY, v int) PARTITION BY HASH (id);\
                     CREATE TABLE big_on_shard PARTITION OF big FOR VALUES WITH (MODULUS 2, REMAINDER {i})"
                ),
            )
            .unwrap();
    }
    let client = cluster.connect().await;
    let values: Vec<String> = (1..=1000)
        .map(|id| format!("({id}, {})", id % 10))
        .collect();
    client
        .simple_query(&format!(
            "INSERT INTO big (id, v) VALUES {}",
            values.join(", ")
        ))
        .await
        .unwrap();
    cluster
}

async fn count(client: &Client, sql: &str) -> i64 {
    column(client, sql, "n").await[0].parse().unwrap()
}

/// `sql` is refused with 0A000 whose message contains `says`, in the simple
/// and the extended protocol.
async fn refused(client: &Client, sql: &str, says: &str) {
    let err = client.simple_query(sql).await.unwrap_err();
    assert_eq!(code(&err), Some("0A000"), "{sql}: {}", describe(&err));
    assert!(describe(&err).contains(says), "{sql}: {}", describe(&err));
    let err = client.execute(sql, &[]).await.unwrap_err();
    assert_eq!(code(&err), Some("0A000"), "{sql}: {}", describe(&err));
    assert!(describe(&err).contains(says), "{sql}: {}", describe(&err));
}

/// Whether `table` exists on any shard.
async fn exists_anywhere(cluster: &Cluster, table: &str) -> bool {
    for shard in cluster.shards().await {
        let sql = format!("SELECT count(*) AS n FROM pg_class WHERE relname = '{table}'");
        if count(&shard, &sql).await > 0 {
            return true;
        }
    }
    false
}

/// Each shard's part of `table` holds only ids that hash to it, and all of
/// `big`'s ids it holds are there.
async fn placed_like_big(cluster: &Cluster, table: &str) {
    let shards = cluster.shards().await;
    for (i, shard) in shards.iter().enumerate() {
        for id in column(shard, &format!("SELECT id FROM {table}"), "id").await {
            let id: i64 = id.parse().unwrap();
            assert_eq!(
                postgres_hash_shard(shard, id, 2).await,
                i,
                "{table}: id {id}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_from_sharded_rows_are_sharded_like_them_or_refused() {
    common::watch_proxy_panics();
    let cluster = cluster().await;
    let client = cluster.connect().await;
    assert_eq!(count(&client, "SELECT count(*) AS n FROM big").await, 1000);

    // Unlisted, so omnisharded: its copies would differ.
    let copies = "each shard would fill its copy of";
    for sql in [
        "CREATE TABLE bc AS SELECT * FROM big",
        "CREATE TEMP TABLE bc AS SELECT * FROM big WHERE id < 100",
        "CREATE UNLOGGED TABLE IF NOT EXISTS bc AS SELECT * FROM big",
        "SELECT * INTO bc FROM big",
        "SELECT id, v INTO TEMP bc FROM big WHERE v = 3",
        "CREATE MATERIALIZED VIEW bc AS SELECT count(*) AS n FROM big",
        "CREATE MATERIALIZED VIEW bc AS SELECT * FROM big WITH NO DATA",
        "EXPLAIN ANALYZE CREATE TABLE bc AS SELECT * FROM big",
    ] {
        refused(&client, sql, copies).await;
    }
    assert!(!exists_anywhere(&cluster, "bc").await);
    // Sharded like big, but the query does not keep the key, or is not
    // exact per shard.
    for (sql, says) in [
        (
            "CREATE TABLE bcs AS SELECT v AS id FROM big",
            "is not the sharding key of a sharded table the query reads",
        ),
        (
            "CREATE TABLE bcs AS SELECT v FROM big",
            "does not output id by name",
        ),
        (
            "CREATE TABLE bcs AS SELECT id FROM big ORDER BY id LIMIT 10",
            "need combining across shards",
        ),
        (
            "CREATE TABLE bcs AS SELECT id, rank() OVER (ORDER BY v) FROM big",
            "window function",
        ),
        (
            "CREATE TABLE bcs AS SELECT id, (SELECT count(*) FROM big) AS n FROM big",
            "a subquery reads big",
        ),
        (
            "CREATE TABLE bct AS SELECT * FROM big",
            "not co-located with bct",
        ),
        (
            "CREATE TABLE bcs AS SELECT 1 AS id",
            "reads no sharded table, but bcs is sharded by id",
        ),
    ] {
        refused(&client, sql, says).await;
    }
    assert!(!exists_anywhere(&cluster, "bcs").await);
    assert!(!exists_anywhere(&cluster, "bct").await);

    // Kept key, exact per shard: each shard creates its own part.
    client
        .simple_query("CREATE TABLE bcs AS SELECT * FROM big WHERE v <> 3")
        .await
        .unwrap();
    assert_eq!(count(&client, "SELECT count(*) AS n FROM bcs").await, 900);
    assert_eq!(
        count(&client, "SELECT count(*) AS n FROM bcs WHERE id = 13").await,
        0
    );
    assert_eq!(
        count(&client, "SELECT count(*) AS n FROM bcs WHERE id = 14").await,
        1
    );
    placed_like_big(&cluster, "bcs").await;
    client.simple_query("DROP TABLE bcs").await.unwrap();
    // The extended protocol, SELECT INTO, grouping by the key.
    client
        .execute(
            "SELECT id, count(*) AS n INTO bcs FROM big GROUP BY id",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(count(&client, "SELECT sum(n) AS n FROM bcs").await, 1000);
    placed_like_big(&cluster, "bcs").await;
    // A materialized view sharded like big, refreshed on every shard.
    client
        .simple_query("CREATE MATERIALIZED VIEW bcm AS SELECT b.id, b.v FROM (SELECT * FROM big) b")
        .await
        .unwrap();
    assert_eq!(count(&client, "SELECT count(*) AS n FROM bcm").await, 1000);
    client
        .simple_query("INSERT INTO big (id, v) VALUES (5000, 1)")
        .await
        .unwrap();
    client
        .execute("REFRESH MATERIALIZED VIEW bcm", &[])
        .await
        .unwrap();
    assert_eq!(count(&client, "SELECT count(*) AS n FROM bcm").await, 1001);
    assert_eq!(
        count(&client, "SELECT count(*) AS n FROM bcm WHERE id = 5000").await,
        1
    );
    placed_like_big(&cluster, "bcm").await;
    // From omnisharded rows into an omnisharded table: equal copies.
    client
        .simple_query(
            "INSERT INTO countries (code, name) VALUES ('fr', 'France'), ('de', 'Germany')",
        )
        .await
        .unwrap();
    client
        .simple_query("CREATE TABLE cc AS SELECT * FROM countries")
        .await
        .unwrap();
    assert_eq!(count(&client, "SELECT count(*) AS n FROM cc").await, 2);
    assert_eq!(common::proxy_panics(), 0);
    common::assert_copies_equal(&cluster).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn renames_that_would_move_rows_are_refused() {
    common::watch_proxy_panics();
    let cluster = cluster().await;
    let client = cluster.connect().await;
    refused(
        &client,
        "ALTER TABLE big RENAME TO big_old",
        "renaming big to big_old is refused: big is sharded by id",
    )
    .await;
    refused(
        &client,
        "ALTER TABLE big RENAME COLUMN id TO big_id",
        "renaming column id of big",
    )
    .await;
    refused(
        &client,
        "ALTER TABLE big DROP COLUMN id",
        "dropping column id of big",
    )
    .await;
    // Family members live on their key's shard.
    let direct = cluster.shard(0).await;
    let (mut on_0, mut on_1) = (None, None);
    for key in 1..50i64 {
        match postgres_hash_shard(&direct, key, 2).await {
            0 => on_0 = on_0.or(Some(key)),
            _ => on_1 = on_1.or(Some(key)),
        }
    }
    let (a, b) = (on_0.unwrap(), on_1.unwrap());
    client
        .simple_query(&format!("CREATE TABLE events_p{a} (n int)"))
        .await
        .unwrap();
    refused(
        &client,
        &format!("ALTER TABLE events_p{a} RENAME TO events_p{b}"),
        "is a member of table family events_p",
    )
    .await;
    // What keeps the placement runs.
    client
        .simple_query("ALTER TABLE big ADD COLUMN w int")
        .await
        .unwrap();
    client
        .simple_query("ALTER TABLE big RENAME COLUMN w TO w2")
        .await
        .unwrap();
    client
        .simple_query("CREATE TABLE scratch (n int)")
        .await
        .unwrap();
    client
        .simple_query("ALTER TABLE scratch RENAME TO scratch2")
        .await
        .unwrap();
    assert_eq!(count(&client, "SELECT count(*) AS n FROM big").await, 1000);
    assert_eq!(
        count(&client, "SELECT count(*) AS n FROM big WHERE id = 7").await,
        1
    );
    assert_eq!(common::proxy_panics(), 0);
    common::assert_copies_equal(&cluster).await;
}
