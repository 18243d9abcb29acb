//! Multi-row INSERTs whose rows belong to several shards, split by pgshard
//! into one INSERT per shard: every row lands on its own shard (the shards'
//! tables are hash partitions that reject any other row), the command tag
//! counts them all, RETURNING rows come back in the client's order, ON
//! CONFLICT on the key works, a failing shard gives its error and rolls
//! every shard back, and what cannot be split is
//! refused with the reason. With bind parameters (extended protocol):
//! `split_inserts_extended.rs`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::wire::{self, Wire};
use common::Cluster;
use tokio_postgres::SimpleQueryMessage;

/// `n` shards with the common schema; users `app` and `raw` (trust, for
/// the wire-level client).
fn cluster(n: usize) -> Cluster {
    cluster_with(n, "")
}

/// `cluster(n)` with `extra` sections in pgdog.toml.
fn cluster_with(n: usize, extra: &str) -> Cluster {
    common::watch_proxy_panics();
    Cluster::start_sharded_raw(n, "", extra)
}

/// `VALUES` rows for keys `keys`: (tenant_id, id, item).
fn values(keys: impl Iterator<Item = i64>) -> String {
    keys.map(|k| format!("({k}, {}, 'item {k}')", k * 10))
        .collect::<Vec<_>>()
        .join(", ")
}

fn tag(messages: &[SimpleQueryMessage]) -> Option<u64> {
    messages.iter().find_map(|m| match m {
        SimpleQueryMessage::CommandComplete(n) => Some(*n),
        _ => None,
    })
}

#[tokio::test]
async fn rows_are_split_by_shard() {
    for n in [2, 3] {
        let cluster = cluster(n);
        let client = cluster.connect().await;
        let sql = format!(
            "INSERT INTO orders (tenant_id, id, item) VALUES {}",
            values(1..=40)
        );
        assert_eq!(tag(&client.simple_query(&sql).await.unwrap()), Some(40));
        // Each shard holds exactly its keys (its partition would refuse
        // any other), and together they hold all of them.
        let mut total = 0;
        for (i, shard) in cluster.shards().await.iter().enumerate() {
            let keys = common::column(shard, "SELECT tenant_id FROM orders", "tenant_id").await;
            for key in &keys {
                let key: i64 = key.parse().unwrap();
                assert_eq!(common::postgres_hash_shard(shard, key, n).await, i);
            }
            total += keys.len();
        }
        assert_eq!(total, 40, "{n} shards");

        // RETURNING comes back in the order of the VALUES rows.
        let sql = format!(
            "INSERT INTO orders (id, tenant_id, item) VALUES {} RETURNING tenant_id, item",
            (41..=60)
                .rev()
                .map(|k| format!("({}, {k}, 'r{k}')", k * 10))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let returned = common::column(&client, &sql, "tenant_id").await;
        let expected: Vec<String> = (41..=60).rev().map(|k| k.to_string()).collect();
        assert_eq!(returned, expected);

        // ON CONFLICT on a target with the key updates on each shard.
        let sql = format!(
            "INSERT INTO orders (tenant_id, id, item) VALUES {} \
             ON CONFLICT (tenant_id, id) DO UPDATE SET item = 'again'",
            values(1..=10)
        );
        assert_eq!(tag(&client.simple_query(&sql).await.unwrap()), Some(10));
        let again = common::column(
            &client,
            "SELECT count(*) AS n FROM orders WHERE item = 'again'",
            "n",
        )
        .await;
        assert_eq!(again, vec!["10"]);
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// INSERTs of one template (the same text but for their literals), one
/// after another on a session: the first is parsed, the next split by its
/// layout without a parse. Every row lands on its shard with its key as
/// Postgres reads it (negative, leading zeros, a string cast), and a text
/// of the template whose key does not fit is refused with its value.
#[tokio::test]
async fn inserts_of_one_template_split_like_the_first() {
    let cluster = cluster(2);
    let client = cluster.connect().await;
    let rows = |batch: i64| {
        (1..=30)
            .map(|k| batch * 100 + k)
            .map(|k| match k % 3 {
                0 => format!("(-{k}, {k}, 'minus')"),
                1 => format!("(000{k}, {k}, 'zeros')"),
                _ => format!("('{k:05}'::bigint, {k}, 'cast')"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    for batch in 0..5 {
        let sql = format!(
            "INSERT INTO orders (tenant_id, id, item) VALUES {}",
            rows(batch)
        );
        assert_eq!(tag(&client.simple_query(&sql).await.unwrap()), Some(30));
    }
    let mut total = 0;
    for (i, shard) in cluster.shards().await.iter().enumerate() {
        let keys = common::column(shard, "SELECT tenant_id FROM orders", "tenant_id").await;
        for key in &keys {
            let key: i64 = key.parse().unwrap();
            assert_eq!(key.abs() % 3 == 0, key < 0, "{key}");
            assert_eq!(common::postgres_hash_shard(shard, key, 2).await, i);
        }
        total += keys.len();
    }
    assert_eq!(total, 150);
    // The template's text with a key that is not a bigint.
    let sql = format!(
        "INSERT INTO orders (tenant_id, id, item) VALUES {}",
        rows(5).replacen("(-501,", "(-1.5,", 1)
    );
    let err = client.simple_query(&sql).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    assert!(common::describe(&err).contains("\"-1.5\""), "{err:?}");
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn a_failing_shard_rolls_every_shard_back() {
    let cluster = cluster(2);
    let shards = cluster.shards().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    // Row (b, 1) exists on shard 1: the split INSERT fails there only.
    let client = cluster.connect().await;
    client
        .simple_query(&format!(
            "INSERT INTO orders (tenant_id, id, item) VALUES ({b}, 1, 'x')"
        ))
        .await
        .unwrap();
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    raw.send(&wire::query(&format!(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a'), ({b}, 1, 'b')"
    )))
    .await;
    let replies = raw.until_ready().await;
    let text = |tag: u8| -> Vec<String> {
        replies
            .iter()
            .filter(|(t, _)| *t == tag)
            .map(|(_, body)| String::from_utf8_lossy(body).into_owned())
            .collect()
    };
    assert!(
        text(b'E').iter().any(|e| e.contains("23505")),
        "{replies:?}"
    );
    assert_eq!(
        replies.last().map(|(t, body)| (*t, body.to_vec())),
        Some((b'Z', b"I".to_vec()))
    );
    // Shard 0's part ran in a transaction of its own, rolled back with
    // shard 1's: no row anywhere.
    assert_eq!(
        common::column(
            &shards[0],
            &format!("SELECT item FROM orders WHERE tenant_id = {a}"),
            "item"
        )
        .await,
        Vec::<String>::new()
    );
    // The session goes on.
    assert_eq!(
        common::column(&client, "SELECT 1 AS one", "one").await,
        vec!["1"]
    );
}

/// A split INSERT outside a transaction whose commit fails on a shard (a
/// deferred constraint trigger, checked at COMMIT) gets the error alone,
/// as from one Postgres: no `INSERT 0 n` before it.
#[tokio::test]
async fn a_failed_commit_is_reported_without_the_tag() {
    let cluster = cluster(2);
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    for shard in cluster.shards().await {
        shard
            .batch_execute(
                "CREATE FUNCTION refuse_late() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN RAISE EXCEPTION 'late row refused at commit' USING ERRCODE = '23514'; END $$; \
                 CREATE CONSTRAINT TRIGGER late AFTER INSERT ON orders_on_shard \
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.item = 'late') \
                 EXECUTE FUNCTION refuse_late()",
            )
            .await
            .unwrap();
    }
    let mut raw = Wire::login(cluster.port(), "raw", "prod").await;
    raw.send(&wire::query(&format!(
        "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a'), ({b}, 1, 'late')"
    )))
    .await;
    let replies = raw.until_ready().await;
    let tags: Vec<u8> = replies.iter().map(|(t, _)| *t).collect();
    assert_eq!(tags, b"EZ", "{replies:?}");
    assert!(
        String::from_utf8_lossy(&replies[0].1).contains("late row refused at commit"),
        "{replies:?}"
    );
    // The failing shard's row is nowhere; a tag now goes out as before.
    let client = cluster.connect().await;
    let late = format!("SELECT item FROM orders WHERE tenant_id = {b}");
    let none: Vec<String> = Vec::new();
    assert_eq!(common::column(&client, &late, "item").await, none);
    let sql =
        format!("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 2, 'x'), ({b}, 2, 'y')");
    assert_eq!(tag(&client.simple_query(&sql).await.unwrap()), Some(2));
    assert_eq!(common::proxy_panics(), 0);
}

/// An INSERT without a column list gets the table's columns (read from a
/// shard's catalog) so its key can be routed, split or refused.
#[tokio::test]
async fn inserts_without_a_column_list_are_routed_by_the_tables_columns() {
    let cluster = cluster(2);
    let client = cluster.connect().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let one = client
        .simple_query(&format!("INSERT INTO orders VALUES ({b}, 1, 'one')"))
        .await
        .unwrap();
    assert_eq!(tag(&one), Some(1));
    let two = client
        .simple_query(&format!(
            "INSERT INTO orders VALUES ({a}, 2, 'two'), ({b}, 2, 'two') RETURNING tenant_id"
        ))
        .await
        .unwrap();
    assert_eq!(tag(&two), Some(2));
    let shards = cluster.shards().await;
    let on = |i: usize| common::column(&shards[i], "SELECT count(*) AS n FROM orders", "n");
    assert_eq!(
        (on(0).await, on(1).await),
        (vec!["1".to_owned()], vec!["2".to_owned()])
    );
    // Still refused: no key among its values.
    let err = client
        .simple_query("INSERT INTO orders DEFAULT VALUES")
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"));
}

/// What pgshard knows of a table's definition (its column order, which
/// an INSERT or COPY without a column list needs) is forgotten when DDL
/// goes through pgshard, also inside a transaction: a table created again
/// with its key elsewhere is routed by the new order.
#[tokio::test]
async fn ddl_through_pgshard_refreshes_what_it_knows_of_a_table() {
    let extra = "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"moved\"\n\
                 column = \"k\"\ndata_type = \"bigint\"\nhasher = \"postgres\"\n";
    let cluster = cluster_with(2, extra);
    let client = cluster.connect().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let shards = cluster.shards().await;
    let on = |i: usize, sql: &'static str| common::column(&shards[i], sql, "k");
    client
        .batch_execute("CREATE TABLE moved (k bigint NOT NULL, v text)")
        .await
        .unwrap();
    client
        .simple_query(&format!("INSERT INTO moved VALUES ({a}, 'first')"))
        .await
        .unwrap();
    assert_eq!(on(0, "SELECT k FROM moved").await, [a.to_string()]);
    // The key moves to the second column, inside a transaction.
    for sql in [
        "BEGIN",
        "DROP TABLE moved",
        "CREATE TABLE moved (v text, k bigint NOT NULL)",
    ] {
        client.batch_execute(sql).await.unwrap();
    }
    client
        .simple_query(&format!("INSERT INTO moved VALUES ('second', {b})"))
        .await
        .unwrap();
    client.batch_execute("COMMIT").await.unwrap();
    assert_eq!(on(0, "SELECT k FROM moved").await, Vec::<String>::new());
    assert_eq!(on(1, "SELECT k FROM moved").await, [b.to_string()]);
    // A column added in front moves it again.
    for sql in [
        "ALTER TABLE moved DROP COLUMN v",
        "ALTER TABLE moved ADD COLUMN w text",
    ] {
        client.batch_execute(sql).await.unwrap();
    }
    client
        .simple_query(&format!("INSERT INTO moved VALUES ({a}, 'third')"))
        .await
        .unwrap();
    assert_eq!(on(0, "SELECT k FROM moved").await, [a.to_string()]);
}

/// INSERT ... SELECT runs on every shard only when each row stays on its
/// shard (the key comes from a co-located key); otherwise its rows go to
/// their shards from the coordinator, in either protocol.
#[tokio::test]
async fn insert_select_keeps_rows_on_their_shards() {
    let cluster = cluster(2);
    let client = cluster.connect().await;
    let sql = format!(
        "INSERT INTO orders (tenant_id, id, item) VALUES {}",
        values(1..=20)
    );
    client.simple_query(&sql).await.unwrap();
    // counters is sharded like orders (bigint, same hasher): co-located.
    let copied = client
        .simple_query(
            "INSERT INTO counters (partition_id, next) SELECT tenant_id, id FROM orders WHERE id > 100",
        )
        .await
        .unwrap();
    assert_eq!(tag(&copied), Some(10));
    let statement =
        "INSERT INTO counters (next, partition_id) SELECT id, tenant_id FROM orders WHERE id <= 100";
    assert_eq!(client.execute(statement, &[]).await.unwrap(), 10);
    // Rows whose keys come from elsewhere: sent to their shards from the
    // coordinator, in the extended protocol as in the simple one
    // (`cross_shard_insert_select.rs`), where the shards' partitions take
    // only their own keys.
    for (sql, rows) in [
        ("INSERT INTO counters (partition_id, next) SELECT id + 5000, tenant_id FROM orders", 20),
        ("INSERT INTO counters (partition_id, next) SELECT 2000, id FROM orders LIMIT 1", 1),
        ("INSERT INTO counters (partition_id, next) SELECT tenant_id + 3000, id FROM orders ORDER BY id LIMIT 3", 3),
    ] {
        assert_eq!(client.execute(sql, &[]).await.unwrap(), rows, "{sql}");
    }
    let count = common::column(&client, "SELECT count(*) AS n FROM counters", "n").await;
    assert_eq!(count, vec!["44"]);
    let moved = client
        .simple_query(
            "INSERT INTO counters (partition_id, next) SELECT id + 1000, tenant_id FROM orders",
        )
        .await
        .unwrap();
    assert_eq!(tag(&moved), Some(20));
    let err = client
        .simple_query("INSERT INTO counters (partition_id, next) SELECT 1, id FROM orders")
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("23505"), "{err:?}");
    let count = common::column(&client, "SELECT count(*) AS n FROM counters", "n").await;
    assert_eq!(count, vec!["64"]);
}

#[tokio::test]
async fn what_cannot_be_split_is_refused_with_the_reason() {
    let cluster = cluster(2);
    let client = cluster.connect().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    for (sql, says) in [
        (
            format!("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a'), ({b}, 1, 'b') ON CONFLICT DO NOTHING"),
            "ON CONFLICT target",
        ),
        (
            format!("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a'), ({b}, 1, 'b') \
             ON CONFLICT (tenant_id, id) DO NOTHING RETURNING id"),
            "RETURNING",
        ),
    ] {
        let sql = sql.as_str();
        let err = client.simple_query(sql).await.unwrap_err();
        assert_eq!(common::code(&err), Some("0A000"), "{sql}");
        assert!(common::describe(&err).contains(says), "{sql}: {err:?}");
    }
    // Inside a transaction the parts join it on each shard, and go with
    // its ROLLBACK.
    client.simple_query("BEGIN").await.unwrap();
    client.simple_query("SELECT 1").await.unwrap();
    let inserted = client
        .simple_query(&format!(
            "INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 7, 'a'), ({b}, 7, 'b')"
        ))
        .await
        .unwrap();
    assert_eq!(tag(&inserted), Some(2));
    let seen = common::column(&client, "SELECT count(*) AS n FROM orders", "n").await;
    assert_eq!(seen, vec!["2"]);
    client.simple_query("ROLLBACK").await.unwrap();
    let count = common::column(&client, "SELECT count(*) AS n FROM orders", "n").await;
    assert_eq!(count, vec!["0"]);
}

/// PgDog's `[rewrite]` section: with splitting off (PgDog's default once
/// the section is written), such an INSERT is refused as before.
#[tokio::test]
async fn rewrite_split_inserts_error_refuses_the_split() {
    let cluster = cluster_with(2, "[rewrite]\nenabled = true\nsplit_inserts = \"error\"\n");
    let client = cluster.connect().await;
    let (a, b) = common::keys_on_both_shards(&cluster).await;
    let sql =
        format!("INSERT INTO orders (tenant_id, id, item) VALUES ({a}, 1, 'a'), ({b}, 1, 'b')");
    let err = client.simple_query(&sql).await.unwrap_err();
    assert_eq!(common::code(&err), Some("0A000"), "{err:?}");
    assert!(
        common::describe(&err).contains("rows of orders go to shards"),
        "{err:?}"
    );
}

/// Cluster-wide unique ids, the documented way (docs/sharding.md, "Unique ids across
/// shards"): the identity column's sequence on shard `s` of `n` starts at
/// `s + 1` and steps by `n`, set once per shard through pgshard with a
/// shard override. Ids then never repeat across shards.
#[tokio::test]
async fn identity_columns_stepped_per_shard_never_collide() {
    let items =
        "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"items\"\ncolumn = \"tenant_id\"\n\
                 data_type = \"bigint\"\nhasher = \"postgres\"\n";
    let n = 3;
    let cluster = cluster_with(n, items);
    let client = cluster.connect().await;
    client
        .simple_query(
            "CREATE TABLE items (tenant_id bigint NOT NULL, \
             id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, note text)",
        )
        .await
        .unwrap();
    for s in 0..n {
        client
            .simple_query(&format!(
                "/* pgdog_shard: {s} */ ALTER TABLE items ALTER COLUMN id \
                 SET INCREMENT BY {n} RESTART WITH {}",
                s + 1
            ))
            .await
            .unwrap();
    }
    let rows: Vec<String> = (1..=90).map(|k| format!("({k}, 'n{k}')")).collect();
    let sql = format!(
        "INSERT INTO items (tenant_id, note) VALUES {}",
        rows.join(", ")
    );
    assert_eq!(tag(&client.simple_query(&sql).await.unwrap()), Some(90));
    let mut ids = std::collections::HashSet::new();
    for (s, shard) in cluster.shards().await.iter().enumerate() {
        let on_shard = common::column(shard, "SELECT id FROM items", "id").await;
        assert!(!on_shard.is_empty(), "shard {s} got no rows");
        for id in on_shard {
            let id: usize = id.parse().unwrap();
            assert_eq!(id % n, (s + 1) % n, "shard {s}'s id {id}");
            assert!(ids.insert(id), "id {id} repeats");
        }
    }
    assert_eq!(ids.len(), 90);
}
