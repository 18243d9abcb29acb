//! Carried rows (rules 5-7): FROM/USING subqueries, WITH queries and
//! row-valued subqueries, their SELECTs run first, and the write once
//! given their rows: typed VALUES, aliases and names kept, quoting, NULLs,
//! arrays, empty results; and what is refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::tests::{planned, rows};
use super::{Answer, Kind, NotCarried};

/// `sql` carries places of `kinds` (their text deparsed as `subqueries`)
/// and, given `answers`, becomes `write`.
#[track_caller]
fn check(sql: &str, carried: &[(Kind, &str)], answers: &[Answer], write: &str) {
    let plan = planned(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let got: Vec<(Kind, &str)> = plan
        .carried
        .iter()
        .map(|c| (c.kind, c.subquery.as_str()))
        .collect();
    assert_eq!(got, carried, "carried by {sql}");
    for carry in &plan.carried {
        parser_ffi::parse_protobuf(&carry.sql).expect("the carried SELECT parses");
        if carry.kind == Kind::Rows {
            assert!(carry.sql.contains("LIMIT 1001"), "{}", carry.sql);
            assert!(carry.sql.contains("pgshard_present"), "{}", carry.sql);
        }
    }
    assert_eq!(plan.write_sql(answers).unwrap(), write, "write of {sql}");
}

#[test]
fn from_and_using_subqueries() {
    check(
        "UPDATE users SET score = s.m FROM (SELECT max(total) AS m, user_id FROM orders GROUP BY user_id) s WHERE users.score = s.m",
        &[(Kind::Rows, "SELECT max(total) AS m, user_id FROM orders GROUP BY user_id")],
        &[rows(&["m", "user_id"], &["integer", "bigint"], &[&[Some("7"), Some("1")], &[None, Some("2")]])],
        "UPDATE users SET score = s.m FROM (SELECT * FROM (VALUES ('7'::int, '1'::bigint), (NULL::int, '2'::bigint)) pgshard_values(m, user_id)) s WHERE users.score = s.m",
    );
    // The alias's column list is kept; an empty result still types.
    check(
        "DELETE FROM orders USING (SELECT score FROM users ORDER BY score LIMIT 3) AS top(x) WHERE orders.total = top.x",
        &[(Kind::Rows, "SELECT score FROM users ORDER BY score LIMIT 3")],
        &[rows(&["score"], &["integer"], &[])],
        "DELETE FROM orders USING (SELECT NULL::int AS score WHERE false) top(x) WHERE orders.total = top.x",
    );
    // Quotes in names and values, arrays, through a join.
    check(
        "UPDATE users SET name = s.\"it's \"\"q\"\"\" FROM countries c JOIN (SELECT name AS \"it's \"\"q\"\"\", array_agg(id) AS a FROM users GROUP BY name) s ON true WHERE users.id = 1",
        &[(Kind::Rows, "SELECT name AS \"it's \"\"q\"\"\", array_agg(id) AS a FROM users GROUP BY name")],
        &[rows(&["it's \"q\"", "a"], &["text", "bigint[]"], &[&[Some("o'k"), Some("{1,NULL}")]])],
        "UPDATE users SET name = s.\"it's \"\"q\"\"\" FROM countries c JOIN (SELECT * FROM (VALUES ('o''k'::text, '{1,NULL}'::bigint[])) pgshard_values(\"it's \"\"q\"\"\", a)) s ON true WHERE users.id = 1",
    );
    // Over omnisharded rows only: nothing to carry.
    let plan = planned(
        "UPDATE users SET name = c.name FROM (SELECT code, name FROM countries) c WHERE users.id = 1 AND users.score > (SELECT avg(total) FROM orders)",
    )
    .unwrap();
    assert_eq!(plan.carried.len(), 1);
    assert_eq!(plan.carried[0].kind, Kind::Scalar);
}

#[test]
fn with_queries() {
    check(
        "WITH s AS (SELECT avg(score) AS a FROM users) UPDATE users SET flag = true FROM s WHERE users.score > s.a",
        &[(Kind::Rows, "SELECT avg(score) AS a FROM users")],
        &[rows(&["a"], &["numeric"], &[&[Some("2.5")]])],
        "WITH s AS (SELECT * FROM (VALUES ('2.5'::numeric)) pgshard_values(a)) UPDATE users SET flag = true FROM s WHERE users.score > s.a",
    );
    // A CTE's column list is kept; a subquery naming a CTE runs after the
    // write's WITH.
    let sql = "WITH big(i) AS (SELECT id FROM users ORDER BY score DESC LIMIT 2) DELETE FROM orders WHERE user_id IN (SELECT i FROM big)";
    let plan = planned(sql).unwrap();
    let kinds: Vec<Kind> = plan.carried.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [Kind::Rows, Kind::Array]);
    assert!(
        plan.carried[0].sql.starts_with("WITH big(i) AS"),
        "{}",
        plan.carried[0].sql
    );
    assert!(
        plan.carried[0].sql.contains("FROM big)"),
        "{}",
        plan.carried[0].sql
    );
    assert!(
        plan.carried[1].sql.starts_with("WITH big(i) AS"),
        "{}",
        plan.carried[1].sql
    );
    let write = plan
        .write_sql(&[
            rows(&["id"], &["bigint"], &[&[Some("4")]]),
            super::tests::value("bigint[]", Some("{4}"), Some("1")),
        ])
        .unwrap();
    assert_eq!(
        write,
        "WITH big(i) AS (SELECT * FROM (VALUES ('4'::bigint)) pgshard_values(id)) DELETE FROM orders WHERE user_id = ANY('{4}'::bigint[])"
    );
}

#[test]
fn row_valued_subqueries() {
    check(
        "UPDATE users SET (score, name) = (SELECT max(total), 'x' FROM orders) WHERE id = 3",
        &[(Kind::Rows, "SELECT max(total), 'x' FROM orders")],
        &[rows(&["max", "?column?"], &["integer", "text"], &[&[Some("9"), Some("x")]])],
        "UPDATE users SET (score, name) = (SELECT * FROM (VALUES ('9'::int, 'x'::text)) pgshard_values(max, \"?column?\")) WHERE id = 3",
    );
    check(
        "DELETE FROM users WHERE (id, score) NOT IN (SELECT user_id, total FROM orders)",
        &[(Kind::Rows, "SELECT user_id, total FROM orders")],
        &[rows(&["user_id", "total"], &["bigint", "integer"], &[&[Some("1"), None]])],
        "DELETE FROM users WHERE NOT (id, score) IN (SELECT * FROM (VALUES ('1'::bigint, NULL::int)) pgshard_values(user_id, total))",
    );
    check(
        "UPDATE users SET flag = false WHERE (id, score) = (SELECT user_id, total FROM orders WHERE total > 5)",
        &[(Kind::Rows, "SELECT user_id, total FROM orders WHERE total > 5")],
        &[rows(&["user_id", "total"], &["bigint", "integer"], &[])],
        "UPDATE users SET flag = false WHERE (id, score) = (SELECT NULL::bigint AS user_id, NULL::int AS total WHERE false)",
    );
}

#[test]
fn refused_and_mismatched() {
    let refused = |sql: &str| planned(sql).unwrap_err();
    assert!(matches!(
        refused("UPDATE users SET score = 1 FROM (SELECT * FROM orders LIMIT 3) s WHERE users.id = s.user_id"),
        NotCarried::Star(_)
    ));
    assert!(matches!(
        refused("WITH RECURSIVE r(n) AS (SELECT max(total) FROM orders UNION ALL SELECT n - 1 FROM r WHERE n > 0) SEARCH DEPTH FIRST BY n SET o UPDATE users SET score = 1 FROM r"),
        NotCarried::SearchCycle(_)
    ));
    assert!(matches!(
        refused("WITH d AS (DELETE FROM orders RETURNING user_id) UPDATE users SET score = 1 FROM (SELECT max(total) AS m FROM orders) s"),
        NotCarried::NotWrite
    ));
    assert!(matches!(
        refused("UPDATE users SET score = 1 FROM (SELECT max(total) AS m FROM orders WHERE total > $1) s"),
        NotCarried::Parameters(_)
    ));
    // ARRAY(SELECT ...) is not carried (its rows' order counts).
    assert!(matches!(
        refused(
            "UPDATE users SET name = ARRAY(SELECT name FROM users ORDER BY 1)::text WHERE id = 1"
        ),
        NotCarried::Nothing
    ));
    let plan = planned("UPDATE users SET score = s.m FROM (SELECT max(total) AS m FROM orders) s")
        .unwrap();
    let record = rows(&["m"], &["record"], &[&[Some("(1)")]]);
    assert!(matches!(
        plan.write_sql(&[record]),
        Err(NotCarried::Record(_))
    ));
    let short = rows(&["m"], &["integer"], &[&[]]);
    assert_eq!(plan.write_sql(&[short]), Err(NotCarried::Mismatch));
    let value = super::tests::value("integer", Some("1"), None);
    assert_eq!(plan.write_sql(&[value]), Err(NotCarried::Mismatch));
    // A type name that is not one name is not taken.
    let injected = rows(&["m"], &["int); DROP TABLE users; --"], &[&[Some("1")]]);
    assert!(plan.write_sql(&[injected]).is_err());
}

#[test]
fn placed_writes_that_cut_rows_across_shards() {
    let cuts = |sql: &str| super::cuts_rows(sql, super::tests::sharding(), 0, 1000);
    // Joined on the key, but limited, grouped or deduplicated across shards.
    assert!(cuts("UPDATE users SET flag = true FROM (SELECT id FROM users ORDER BY score LIMIT 3) s WHERE users.id = s.id"));
    assert!(cuts("DELETE FROM orders USING (SELECT DISTINCT user_id FROM orders) s WHERE orders.user_id = s.user_id"));
    assert!(cuts("WITH s AS (SELECT user_id, count(*) AS c FROM orders GROUP BY user_id) UPDATE users SET score = s.c FROM s WHERE users.id = s.user_id"));
    // `*` cannot be carried: cut all the same, so the write is refused.
    assert!(cuts(
        "UPDATE users SET flag = true FROM (SELECT * FROM users LIMIT 3) s WHERE users.id = s.id"
    ));
    // Rows each shard computes alike, or every database holds.
    assert!(!cuts("UPDATE users SET flag = true FROM (SELECT id FROM users WHERE score > 3) s WHERE users.id = s.id"));
    assert!(!cuts("UPDATE users SET name = c.name FROM (SELECT code, name FROM countries LIMIT 1) c WHERE users.id = 1"));
    assert!(!cuts("UPDATE users SET flag = true WHERE id = 1"));
    assert!(!cuts("SELECT * FROM (SELECT id FROM users LIMIT 3) s"));
}
