//! A prepared split INSERT sends each shard's rows in chunks of a few fixed
//! sizes (powers of two up to `router::split::CHUNK_ROWS`): whatever the
//! rows' spread over shards, its parts' statements are a bounded few, each
//! prepared once per server (SHOW LISTS's `split_part_statements_written`
//! stops growing); the tag counts every chunk's rows; two split portals
//! bound before either runs each insert their own rows; a chunk that
//! fails leaves nothing anywhere; inside a transaction the chunks join it.
//! Shards' tables are hash partitions: a misrouted row fails loudly.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::wire::{self, Wire};
use common::Cluster;
use tokio_postgres::types::ToSql;

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

/// SHOW LISTS's split_part_statements_written.
async fn written(admin: &tokio_postgres::Client) -> u64 {
    let lists: HashMap<String, String> = common::rows(admin, "SHOW LISTS")
        .await
        .into_iter()
        .map(|r| (r["list"].clone(), r["items"].clone()))
        .collect();
    lists["split_part_statements_written"].parse().unwrap()
}

/// Rows of `orders` in the cluster, and on each shard.
async fn counts(cluster: &Cluster) -> Vec<i64> {
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

/// Run `statement` with rows (key, id, "i<id>"); its count.
async fn run(
    client: &tokio_postgres::Client,
    statement: &tokio_postgres::Statement,
    rows: &[(i64, i64)],
) -> Result<u64, tokio_postgres::Error> {
    let items: Vec<String> = rows.iter().map(|(_, id)| format!("i{id}")).collect();
    let params: Vec<&(dyn ToSql + Sync)> = rows
        .iter()
        .zip(&items)
        .flat_map(|((key, id), item)| [key as &(dyn ToSql + Sync), id, item])
        .collect();
    client.execute(statement, &params).await
}

#[tokio::test]
async fn parts_go_in_chunks_whose_statements_are_a_bounded_few() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let client = cluster.connect().await;
    let admin = cluster.admin().await;
    let statement = client.prepare(&insert(300)).await.unwrap();
    let before = written(&admin).await;
    // Ten Binds whose keys spread differently over the 2 shards: parts of
    // ever new sizes, in chunks of 1, 2, 4, ... 128 rows.
    let mut id = 0;
    for round in 0..10i64 {
        let rows: Vec<(i64, i64)> = (0..300)
            .map(|r| {
                id += 1;
                (1 + (r * (round + 3)) % (50 + 7 * round), id)
            })
            .collect();
        assert_eq!(run(&client, &statement, &rows).await.unwrap(), 300);
    }
    let written = written(&admin).await - before;
    assert!(written <= 8, "{written} part statements written");
    let held = counts(&cluster).await;
    assert_eq!(held.iter().sum::<i64>(), 3_000, "{held:?}");
    assert!(held.iter().all(|&n| n > 0), "{held:?}");

    // A duplicate key in the first chunk of one shard's part: nothing of
    // the statement stays anywhere.
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    client
        .execute(
            "INSERT INTO orders (tenant_id, id, item) VALUES ($1, 100000, 'there')",
            &[&a],
        )
        .await
        .unwrap();
    let mut rows: Vec<(i64, i64)> = (0..300)
        .map(|r| (if r % 2 == 0 { a } else { b }, 100_001 + r))
        .collect();
    rows[0] = (a, 100_000);
    let err = run(&client, &statement, &rows).await.unwrap_err();
    assert_eq!(common::code(&err), Some("23505"), "{err:?}");
    assert_eq!(counts(&cluster).await.iter().sum::<i64>(), 3_001);

    // Inside a transaction the chunks join it: ROLLBACK leaves nothing,
    // COMMIT keeps every row.
    rows[0] = (a, 200_000);
    for commit in [false, true] {
        client.batch_execute("BEGIN").await.unwrap();
        assert_eq!(run(&client, &statement, &rows).await.unwrap(), 300);
        let seen: i64 = client
            .query_one("SELECT count(*) FROM orders WHERE id >= 100001", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(seen, 300);
        let end = if commit { "COMMIT" } else { "ROLLBACK" };
        client.batch_execute(end).await.unwrap();
        let expected = if commit { 3_301 } else { 3_001 };
        assert_eq!(counts(&cluster).await.iter().sum::<i64>(), expected);
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// Two split portals bound before either executes (one pipeline, one
/// Sync), executed in the other order: each inserts its own rows, each
/// tag counts them; a split portal bound and never executed inserts
/// nothing.
#[tokio::test]
async fn split_portals_bound_together_keep_their_own_chunks() {
    common::watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    // 7 rows on each shard: chunks of 4, 2 and 1.
    let sql = insert(14);
    let values = |first: i64| -> Vec<String> {
        (0..14)
            .flat_map(|r| {
                let key = if r % 2 == 0 { a } else { b };
                [key.to_string(), (first + r).to_string(), format!("v{r}")]
            })
            .collect()
    };
    let (one, two, never) = (values(1), values(101), values(201));
    fn borrow(v: &[String]) -> Vec<Option<&str>> {
        v.iter().map(|s| Some(s.as_str())).collect()
    }
    let mut request = wire::parse("s", &sql);
    request.extend(wire::bind_text("p1", "s", &borrow(&one)));
    request.extend(wire::bind_text("p2", "s", &borrow(&two)));
    request.extend(wire::bind_text("p3", "s", &borrow(&never)));
    request.extend(wire::execute_portal("p2", 0));
    request.extend(wire::execute_portal("p1", 0));
    request.extend(wire::sync());
    raw.send(&request).await;
    let replies = raw.until_ready().await;
    assert!(wire::errors(&replies).is_empty(), "{replies:?}");
    assert_eq!(wire::command_tags(&replies), ["INSERT 0 14", "INSERT 0 14"]);
    let client = cluster.connect().await;
    let ids = common::column(
        &client,
        "SELECT string_agg(id::text, ',' ORDER BY id) AS ids FROM orders",
        "ids",
    )
    .await;
    let expected: Vec<String> = (1..=14).chain(101..=114).map(|i| i.to_string()).collect();
    assert_eq!(ids, [expected.join(",")]);
    assert_eq!(counts(&cluster).await, vec![14, 14]);
    assert_eq!(common::proxy_panics(), 0);
}
