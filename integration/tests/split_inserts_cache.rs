//! The per-shard statements of prepared split INSERTs are kept by the
//! part's shape (`proxy/src/session/statements/split_parts.rs`; a part goes
//! in chunks of 1, 2, 4, ... rows, each chunk a shape): SHOW LISTS's
//! `split_part_statements_written` stays put across Binds whose chunks have
//! shapes seen before (whichever shards they reach), grows for a new shape,
//! and grows again after a schema change through pgshard (the kept
//! statements were retired); DEALLOCATE and DISCARD ALL leave the shared
//! statement's parts valid. Every step's rows are checked on the shards,
//! whose hash partitions reject a misrouted row.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::Cluster;
use tokio_postgres::types::ToSql;
use tokio_postgres::ToStatement;

/// A prepared INSERT of `rows` rows of (tenant_id, id, item).
fn insert(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|r| format!("(${}, ${}, ${})", 3 * r + 1, 3 * r + 2, 3 * r + 3))
        .collect();
    format!(
        "INSERT INTO orders (tenant_id, id, item) VALUES {}",
        values.join(", ")
    )
}

/// SHOW LISTS's (split_part_statements_written, _reused).
async fn counters(admin: &tokio_postgres::Client) -> (u64, u64) {
    let lists: HashMap<String, String> = common::rows(admin, "SHOW LISTS")
        .await
        .into_iter()
        .map(|r| (r["list"].clone(), r["items"].clone()))
        .collect();
    let of = |name: &str| lists[name].parse::<u64>().unwrap();
    (
        of("split_part_statements_written"),
        of("split_part_statements_reused"),
    )
}

/// Keys of `tenant_id` in 1..=400 that hash to shard `i` of `n` (Postgres
/// computes it, as `rows_of` in split_inserts_extended.rs does).
async fn keys_on(client: &tokio_postgres::Client, i: usize, n: usize) -> Vec<i64> {
    let sql = format!(
        "SELECT k FROM generate_series(1, 400) k WHERE ((hashint8extended(k, 8816678312871386365)::numeric \
         + 18446744073709551616 + 5305509591434766563) % 18446744073709551616) % {n} = {i} ORDER BY k"
    );
    client
        .query(&sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| i64::from(r.get::<_, i32>(0)))
        .collect()
}

/// Run `statement` with rows (key, id, "item <id>") and check the count.
async fn run<S>(client: &tokio_postgres::Client, statement: &S, rows: &[(i64, i64)])
where
    S: ToStatement + ?Sized,
{
    let items: Vec<String> = rows.iter().map(|(_, id)| format!("item {id}")).collect();
    let params: Vec<&(dyn ToSql + Sync)> = rows
        .iter()
        .zip(&items)
        .flat_map(|((key, id), item)| [key as &(dyn ToSql + Sync), id, item])
        .collect();
    let inserted = client.execute(statement, &params).await.unwrap();
    assert_eq!(inserted, rows.len() as u64);
}

/// Rows of `orders` on each shard.
async fn held(cluster: &Cluster) -> Vec<i64> {
    let mut counts = Vec::new();
    for shard in cluster.shards().await {
        let row = shard
            .query_one("SELECT count(*) FROM orders", &[])
            .await
            .unwrap();
        counts.push(row.get(0));
    }
    counts
}

/// `a` keys of shard `s` and `b` keys of shard `t`, from `keys`, ids from
/// `first`.
fn mix(
    keys: &[Vec<i64>],
    (s, a): (usize, usize),
    (t, b): (usize, usize),
    first: i64,
) -> Vec<(i64, i64)> {
    let picked = keys[s][..a].iter().chain(&keys[t][..b]);
    picked.zip(first..).map(|(k, id)| (*k, id)).collect()
}

#[tokio::test]
async fn parts_statements_are_written_once_per_shape() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(4, "", "");
    let client = cluster.connect().await;
    let admin = cluster.admin().await;
    let probe = &cluster.shards().await[0];
    let mut keys = Vec::new();
    for i in 0..4 {
        keys.push(keys_on(probe, i, 4).await);
    }
    let sql = insert(10);
    let statement = client.prepare(&sql).await.unwrap();
    let (written0, reused0) = counters(&admin).await;

    // Shards 0 and 1, 4 + 6 rows, sent in chunks of 4 | 4, 2: two
    // statements written (4 and 2 rows), the 4 used again.
    run(&client, &statement, &mix(&keys, (0, 4), (1, 6), 1)).await;
    let (written, reused) = counters(&admin).await;
    assert_eq!((written - written0, reused - reused0), (2, 1));
    // Again, other ids: the kept statements, nothing written.
    for round in 0..3 {
        run(
            &client,
            &statement,
            &mix(&keys, (0, 4), (1, 6), 100 + 10 * round),
        )
        .await;
    }
    let (written1, reused1) = counters(&admin).await;
    assert_eq!((written1 - written, reused1 - reused), (0, 9));
    // Another shard set with parts of the same sizes: kept too (a part's
    // statement does not depend on its shard).
    run(&client, &statement, &mix(&keys, (2, 6), (3, 4), 200)).await;
    let (written2, reused2) = counters(&admin).await;
    assert_eq!((written2 - written1, reused2 - reused1), (0, 3));
    // Parts of new sizes (3 and 7: chunks of 2, 1 and 4, 2, 1): only the
    // 1-row chunk is new.
    run(&client, &statement, &mix(&keys, (0, 3), (2, 7), 300)).await;
    run(&client, &statement, &mix(&keys, (1, 7), (3, 3), 400)).await;
    let (written3, reused3) = counters(&admin).await;
    assert_eq!((written3 - written2, reused3 - reused2), (1, 9));
    assert_eq!(
        held(&cluster).await,
        vec![4 * 4 + 3, 4 * 6 + 7, 6 + 7, 4 + 3]
    );

    // A schema change through pgshard retires every shared statement: the
    // next Bind writes its parts again (and they run on the new schema).
    client
        .batch_execute("ALTER TABLE orders ADD COLUMN note text DEFAULT 'n'")
        .await
        .unwrap();
    let statement = client.prepare(&sql).await.unwrap();
    run(&client, &statement, &mix(&keys, (0, 4), (1, 6), 500)).await;
    let (written4, _) = counters(&admin).await;
    assert_eq!(written4 - written3, 2);
    let notes = client
        .query("SELECT count(*) FROM orders WHERE note = 'n'", &[])
        .await
        .unwrap()[0]
        .get::<_, i64>(0);
    assert_eq!(notes, 80);
    drop(statement);

    // DEALLOCATE (a dropped statement's Close) and DISCARD ALL end the
    // client's names; the shared statement and its parts stay valid.
    client.batch_execute("DISCARD ALL").await.unwrap();
    let statement = client.prepare(&sql).await.unwrap();
    run(&client, &statement, &mix(&keys, (0, 4), (1, 6), 600)).await;
    drop(statement);
    // The unnamed statement of the same text shares its parts too.
    run(&client, sql.as_str(), &mix(&keys, (0, 4), (1, 6), 700)).await;
    let (written5, _) = counters(&admin).await;
    assert_eq!(written5, written4);
    assert_eq!(held(&cluster).await.iter().sum::<i64>(), 100);
}
