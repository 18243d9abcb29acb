//! Writes whose FROM/USING subqueries, WITH queries or row-valued
//! subqueries read across shards (issue 34): their rows run first on the
//! coordinator path and are carried into the write as a typed VALUES
//! list. Hand-picked scripts on 2 and 4 shards against one reference
//! Postgres (tags or error codes, then whole tables): aggregates, LIMIT,
//! empty results, NULLs, arrays, quotes in names and values, more rows
//! than a row comparison takes, a block rolled back; the bound (54000),
//! correlated subqueries and `*` (refused). The generated writes of
//! `cross_shard_writes.rs` have these forms too, in both protocols.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[allow(dead_code)]
mod cross_shard_diff {
    pub mod data;
}

#[allow(dead_code)]
mod carried_writes {
    pub mod setup;
}

use carried_writes::setup::{client, contents, message, outcome, same_script, start};

/// Carried rows in every place, on `n` shards.
async fn rows_in_every_place(n: usize, seed: u64) {
    let setup = start(n, "cross_shard_finish = \"coordinator\"", seed).await;
    let proxy = client(&setup).await;
    let id = setup.data.user_ids()[5];
    let keyed_from = format!(
        "UPDATE users SET score = s.m, name = s.n FROM (SELECT max(qty) AS m, \
         min(note) AS n FROM orders WHERE qty > 3) AS s WHERE users.id = {id} \
         RETURNING users.id, s.m, s.n"
    );
    let script = [
        // FROM: an aggregate per group, joined on a column that is no key.
        "UPDATE users SET score = s.m FROM (SELECT qty AS g, count(*)::int AS m FROM orders GROUP BY qty) AS s WHERE users.grp = s.g",
        keyed_from.as_str(),
        // USING: LIMIT across shards; an empty subquery; NULLs in its rows.
        "DELETE FROM orders USING (SELECT grp FROM users ORDER BY score DESC NULLS LAST, id LIMIT 3) AS top WHERE orders.qty = top.grp",
        "DELETE FROM orders USING (SELECT grp FROM users WHERE score > 1000) AS none WHERE orders.qty = none.grp",
        // Joined on the key, but a LIMIT or a grouping across shards.
        "UPDATE users SET grp = 7 FROM (SELECT id FROM users ORDER BY score DESC NULLS LAST, id LIMIT 3) AS s WHERE users.id = s.id",
        "DELETE FROM orders USING (SELECT user_id, max(qty) AS m FROM orders GROUP BY user_id ORDER BY m DESC, user_id LIMIT 2) AS s WHERE orders.user_id = s.user_id",
        "UPDATE orders SET note = coalesce(s.n, 'null name') FROM (SELECT grp, name AS n FROM users ORDER BY id LIMIT 6) AS s(g) WHERE orders.qty = s.g",
        // Arrays, quotes in names and values, column aliases kept.
        "UPDATE users SET name = s.\"it's \"\"q\"\"\" || array_length(s.a, 1) FROM (SELECT 'o''k' AS \"it's \"\"q\"\"\", array_agg(qty ORDER BY qty) AS a FROM orders WHERE qty < 4) AS s WHERE users.grp = 2",
        // WITH: used in FROM and in a WHERE subquery; one CTE naming another.
        "WITH s AS (SELECT avg(score) AS a FROM users) UPDATE users SET active = (score > s.a) FROM s",
        "WITH big AS (SELECT id FROM users WHERE score IS NOT NULL ORDER BY score DESC, id LIMIT 4), o AS (SELECT user_id FROM orders WHERE user_id IN (SELECT id FROM big)) DELETE FROM orders WHERE qty > 5 AND user_id IN (SELECT user_id FROM o)",
        "WITH e(x, y) AS (SELECT grp, score FROM users WHERE false) UPDATE users SET score = 0 FROM e WHERE users.grp = e.x",
        // Row-valued: SET, IN (NULLs in the set), comparisons.
        "UPDATE users SET (grp, score) = (SELECT min(qty), max(qty) FROM orders) WHERE grp = 3",
        "DELETE FROM orders WHERE (qty, note) IN (SELECT grp, name FROM users)",
        "UPDATE orders SET qty = 0 WHERE (qty, qty) NOT IN (SELECT grp, grp FROM users WHERE grp IS NOT NULL)",
        "UPDATE users SET score = -1 WHERE (grp, active) = (SELECT max(qty), true FROM orders)",
        // More rows than a row comparison takes: 21000, as on Postgres.
        "UPDATE users SET (grp, score) = (SELECT qty, qty FROM orders) WHERE grp = 1",
        "DELETE FROM users WHERE (grp, score) = (SELECT qty, qty FROM orders)",
    ];
    same_script(&setup, &proxy, &script).await;
    // A block rolled back leaves nothing anywhere.
    let script = [
        "BEGIN",
        "UPDATE users SET score = s.m FROM (SELECT max(qty) AS m FROM orders) AS s",
        "WITH s AS (SELECT count(*) AS c FROM orders) DELETE FROM users USING s WHERE users.score < s.c",
        "SELECT count(*) FROM users",
        "ROLLBACK",
    ];
    same_script(&setup, &proxy, &script).await;
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_in_every_place_on_2_shards() {
    rows_in_every_place(2, 3411).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_in_every_place_on_4_shards() {
    rows_in_every_place(4, 3412).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bound_and_the_refusals() {
    let setup = start(
        2,
        "cross_shard_finish = \"coordinator\"\ncross_shard_gather_limit = { rows = 20, bytes = 100000 }",
        3413,
    )
    .await;
    let proxy = client(&setup).await;
    // Few rows gathered, more carried.
    let many = "UPDATE users SET score = 0 FROM (SELECT g FROM generate_series(1, 100) g, \
                (SELECT count(*) AS c FROM orders WHERE qty > 1000) AS o WHERE g > o.c) AS s \
                WHERE users.grp = s.g";
    let (code, text) = message(&proxy, many).await;
    assert_eq!(code, "54000", "{text}");
    assert!(text.contains("cross_shard_gather_limit.rows"), "{text}");
    let e = proxy.execute(many, &[]).await.unwrap_err();
    assert_eq!(common::code(&e), Some("54000"), "{}", common::describe(&e));
    assert!(contents(&proxy).await == contents(&setup.direct).await);
    // A LATERAL subquery naming another FROM item: correlated, refused.
    let lateral = "UPDATE users SET score = s.m FROM teams t, LATERAL (SELECT max(qty) AS m \
                   FROM orders WHERE qty > 1000 AND qty = t.grp) AS s WHERE users.grp = t.grp";
    let (code, text) = message(&proxy, lateral).await;
    assert_eq!(code, "0A000", "{text}");
    assert!(text.contains("correlated"), "{text}");
    // `*`: its columns cannot be counted from the text.
    let star = "UPDATE users SET score = 1 FROM (SELECT * FROM orders WHERE qty > 1000 \
                ORDER BY user_id, id LIMIT 3) AS s WHERE users.grp = s.qty";
    let (code, text) = message(&proxy, star).await;
    assert_eq!(code, "0A000", "{text}");
    assert!(text.contains("list the columns"), "{text}");
    // A plain table that is not co-located: the routing's refusal stands.
    let table = "UPDATE orders SET note = u.name FROM users u WHERE orders.qty = u.grp";
    let (code, text) = message(&proxy, table).await;
    assert_eq!(code, "0A000", "{text}");
    // The session goes on; nothing was written.
    assert_eq!(outcome(&proxy, "SELECT 1").await, Ok(vec!["1".to_owned()]));
    assert!(contents(&proxy).await == contents(&setup.direct).await);
    assert_eq!(common::proxy_panics(), 0);
}
