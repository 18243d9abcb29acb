//! Cross-shard planning cases: one line per statement.

use super::*;
use crate::sharding::{DataType, KeySpace, ShardFunction, ShardedTable};

/// 2 shards: `users` by `id`, `orders` by `user_id`, any table with a
/// `tenant` column by it; `r` omnisharded.
fn sharding() -> Sharding {
    let keys = KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::List(Vec::new()),
        placement: vec![0, 1],
        moving: None,
    };
    let entry = |name: Option<&str>, column: &str| ShardedTable {
        name: name.map(str::to_owned),
        schema: None,
        column: column.to_owned(),
        keys: keys.clone(),
    };
    Sharding {
        databases: 2,
        tables: vec![
            entry(Some("users"), "id"),
            entry(Some("orders"), "user_id"),
            entry(None, "tenant"),
        ],
        families: Vec::new(),
        omnisharded: vec![(None, "r".into())],
        cross_shard_disabled: false,
        unlisted_omnisharded: false,
        unlisted_by_columns: false,
        keyless: None,
        catalog: None,
        functions: Vec::new(),
    }
}

fn plan(sql: &str) -> Shape {
    super::plan(sql, &sharding()).shape
}

fn explain(sql: &str) -> Option<Explained> {
    super::explain(sql, &sharding())
}

/// The plan of `sql`, which must be mergeable.
fn merged(sql: &str) -> MergePlan {
    match plan(sql) {
        Shape::Merge(plan) => plan,
        other => panic!("{sql}: expected a merge, got {other:?}"),
    }
}

fn refused(sql: &str) -> String {
    match plan(sql) {
        Shape::Refuse(why) => why.to_string(),
        other => panic!("{sql}: expected a refusal, got {other:?}"),
    }
}

fn key(column: usize, descending: bool, nulls_first: bool) -> SortKey {
    SortKey {
        column,
        descending,
        nulls_first,
    }
}

#[test]
fn plain_reads_concatenate() {
    for sql in [
        "SELECT * FROM users WHERE score > 3",
        "SELECT u.id, o.qty FROM users u JOIN orders o ON o.user_id = u.id",
        "SELECT lower(name) FROM users",
        "SELECT * FROM (SELECT id FROM users WHERE score > 1) s",
        "WITH a AS (SELECT id FROM users) SELECT * FROM a",
        "VALUES (1), (2)",
        "SELECT now()",
        // Each shard locks the rows it returns.
        "SELECT * FROM users WHERE score > 3 FOR UPDATE",
        "SELECT id FROM users FOR NO KEY UPDATE SKIP LOCKED",
        "SELECT id FROM users FOR SHARE NOWAIT",
    ] {
        assert_eq!(plan(sql), Shape::Concat, "{sql}");
    }
}

#[test]
fn order_by_and_limit() {
    let p = merged("SELECT id, name FROM users ORDER BY name DESC, 1 LIMIT 5");
    assert_eq!(p.order, vec![key(1, true, true), key(0, false, false)]);
    assert_eq!(
        p.limit,
        Limit {
            count: Some(Bound::Value(5)),
            offset: None
        }
    );
    assert_eq!((p.shard_sql, p.hidden, p.groups), (None, 0, None));
    // Each shard locks up to its LIMIT's rows (more than one Postgres).
    let p = merged("SELECT id FROM users ORDER BY id LIMIT 2 OFFSET 1 FOR UPDATE");
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT id FROM users ORDER BY id LIMIT 3 FOR UPDATE")
    );

    let p = merged("SELECT id AS k FROM users ORDER BY k NULLS FIRST");
    assert_eq!(p.order, vec![key(0, false, true)]);

    let p = merged("SELECT id FROM users ORDER BY score, lower(name) DESC NULLS LAST");
    assert_eq!(p.order, vec![key(1, false, false), key(2, true, false)]);
    assert_eq!(p.hidden, 2);
    assert_eq!(
        p.shard_sql.as_deref(),
        Some(
            "SELECT id, score, lower(name) FROM users ORDER BY score, lower(name) DESC NULLS LAST"
        )
    );

    let p = merged("SELECT id FROM users ORDER BY id LIMIT 10 OFFSET 20");
    assert_eq!(
        p.limit,
        Limit {
            count: Some(Bound::Value(10)),
            offset: Some(Bound::Value(20))
        }
    );
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT id FROM users ORDER BY id LIMIT 30")
    );

    let p = merged("SELECT id FROM users ORDER BY id LIMIT $1 OFFSET $2");
    assert_eq!(
        p.limit,
        Limit {
            count: Some(Bound::Param(1)),
            offset: Some(Bound::Param(2))
        }
    );
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT id FROM users ORDER BY id LIMIT $1::bigint + $2::bigint")
    );

    // After a `*`, keys are hidden columns even when the star holds them.
    let p = merged("SELECT * FROM users ORDER BY id LIMIT 3");
    assert_eq!(
        (p.targets, p.hidden, p.order.clone()),
        (1, 1, vec![key(1, false, false)])
    );
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT *, id FROM users ORDER BY id LIMIT 3")
    );

    let p = merged("SELECT * FROM users OFFSET 3");
    assert_eq!(p.shard_sql.as_deref(), Some("SELECT * FROM users"));
    let p = merged("SELECT * FROM users LIMIT ALL");
    assert_eq!(p.limit, Limit::default());
}

#[test]
fn aggregates_and_groups() {
    use Aggregate::*;
    let p = merged("SELECT count(*), sum(score), min(name), max(created), bool_and(active), every(active) FROM users");
    let expected = [Count, Sum, Min, Max, BoolAnd, BoolAnd].map(Column::Aggregate);
    assert_eq!(p.groups.as_deref(), Some(&expected[..]));

    let p = merged("SELECT grp, count(*) AS n FROM users GROUP BY grp ORDER BY n DESC LIMIT 3");
    assert_eq!(
        p.groups,
        Some(vec![Column::Key, Column::Aggregate(Count), Column::Key])
    );
    assert_eq!(
        (p.order.clone(), p.group_hash),
        (vec![key(1, true, true)], Some(2))
    );
    assert!(!p.groups_streamed());
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT grp, count(*) AS n, pg_catalog.hash_record(ROW(grp)) FROM users GROUP BY grp ORDER BY pg_catalog.hash_record(ROW(grp))")
    );

    let p = merged("SELECT count(*) FROM users GROUP BY grp, active");
    assert_eq!(p.hidden, 3);
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Aggregate(Count),
            Column::Key,
            Column::Key,
            Column::Key
        ])
    );
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT count(*), grp, active, pg_catalog.hash_record(ROW(grp, active)) FROM users GROUP BY grp, active ORDER BY pg_catalog.hash_record(ROW(grp, active))")
    );

    let p = merged("SELECT grp AS g, sum(score) FROM users GROUP BY g ORDER BY sum(score)");
    assert_eq!((p.hidden, p.order.clone()), (1, vec![key(1, false, false)]));

    let p = merged("SELECT grp, avg(score) FROM users GROUP BY grp ORDER BY avg(score)");
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Key,
            Column::Average { count: 2 },
            Column::Aggregate(Count),
            Column::Key
        ])
    );
    assert_eq!(p.order, vec![key(1, false, false)]);
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT grp, pg_catalog.sum(score) AS avg, pg_catalog.count(score), pg_catalog.hash_record(ROW(grp)) FROM users GROUP BY grp ORDER BY pg_catalog.hash_record(ROW(grp))")
    );

    let p = merged("SELECT grp, max(score) FROM users GROUP BY grp ORDER BY max DESC");
    assert_eq!((p.hidden, p.order.clone()), (1, vec![key(1, true, true)]));

    let p = merged(
        "SELECT count(*)::int AS n, sum(score)::numeric(20,2), max(score)::bigint FROM users",
    );
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Aggregate(Count),
            Column::Aggregate(Sum),
            Column::Aggregate(Max)
        ])
    );

    let p = merged("SELECT grp FROM users GROUP BY grp HAVING count(*) > 2 AND (max(score) <= $1 OR grp IS NULL)");
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Key,
            Column::Aggregate(Count),
            Column::Aggregate(Max),
            Column::Key
        ])
    );
    let compare = |left, op, right| Predicate::Compare { left, op, right };
    assert_eq!(
        p.having,
        Some(Predicate::And(vec![
            compare(
                Operand::Column(1),
                Comparison::Gt,
                Operand::Literal("2".into())
            ),
            Predicate::Or(vec![
                compare(Operand::Column(2), Comparison::Le, Operand::Param(1)),
                Predicate::IsNull {
                    operand: Operand::Column(0),
                    negated: false
                },
            ]),
        ]))
    );
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT grp, count(*), max(score), pg_catalog.hash_record(ROW(grp)) FROM users GROUP BY grp ORDER BY pg_catalog.hash_record(ROW(grp))")
    );

    let p = merged("SELECT count(*) FILTER (WHERE active) FROM users");
    assert_eq!(p.groups, Some(vec![Column::Aggregate(Count)]));

    let p = merged("SELECT DISTINCT ON (grp) grp, id FROM users ORDER BY grp, score DESC");
    assert_eq!(
        (p.distinct_on.clone(), p.order.len(), p.hidden),
        (vec![0], 2, 1)
    );
    let p = merged("SELECT DISTINCT ON (grp) id FROM users");
    assert_eq!(
        (p.distinct_on.clone(), p.order.clone()),
        (vec![1], vec![key(1, false, false)])
    );
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT DISTINCT ON (grp) id, grp FROM users ORDER BY grp")
    );

    let p = merged("SELECT DISTINCT grp FROM users ORDER BY grp");
    assert_eq!(
        (p.distinct, p.groups.clone(), p.group_hash),
        (true, None, Some(1))
    );
    assert!(p.groups_streamed());
    assert_eq!(
        p.shard_sql.as_deref(),
        Some("SELECT DISTINCT grp, pg_catalog.hash_record(ROW(grp)) FROM users ORDER BY grp, pg_catalog.hash_record(ROW(grp))")
    );
}

#[test]
fn what_cannot_merge_is_refused() {
    for (sql, says) in [
        ("SELECT string_agg(name, ',') FROM users", "string_agg()"),
        (
            "SELECT json_agg(name ORDER BY name) FROM users",
            "json_agg()",
        ),
        ("SELECT count(DISTINCT grp) FROM users", "DISTINCT values"),
        ("SELECT sum(score) + 1 FROM users", "inside an expression"),
        ("SELECT min(score)::text FROM users", "inside an expression"),
        (
            "SELECT bool_and(active)::int FROM users",
            "inside an expression",
        ),
        (
            "SELECT coalesce(max(score), 0) FROM users",
            "inside an expression",
        ),
        (
            "SELECT grp FROM users GROUP BY grp HAVING count(*) > 2 AND lower(max(name)) = 'a'",
            "HAVING",
        ),
        (
            "SELECT id, rank() OVER (ORDER BY score) FROM users",
            "window function",
        ),
        (
            "SELECT id FROM users UNION SELECT user_id FROM orders",
            "set operation",
        ),
        (
            "SELECT * FROM users ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED",
            "FOR UPDATE / FOR SHARE with NOWAIT or SKIP LOCKED and LIMIT",
        ),
        (
            "SELECT * FROM users OFFSET 1 FOR SHARE NOWAIT",
            "FOR UPDATE / FOR SHARE with NOWAIT or SKIP LOCKED and LIMIT",
        ),
        (
            "SELECT DISTINCT ON (grp) grp, count(*) FROM users GROUP BY grp",
            "DISTINCT ON",
        ),
        (
            "SELECT DISTINCT count(*) FROM users GROUP BY grp",
            "DISTINCT with aggregates",
        ),
        (
            "SELECT grp, count(*) FROM users GROUP BY ROLLUP (grp)",
            "ROLLUP",
        ),
        (
            "SELECT * FROM (SELECT grp, count(*) FROM users GROUP BY grp) g",
            "subquery in FROM",
        ),
        (
            "WITH t AS (SELECT * FROM users LIMIT 5) SELECT * FROM t",
            "WITH query",
        ),
        ("SELECT * FROM users LIMIT (SELECT 1)", "LIMIT that is not"),
        (
            "SELECT * FROM users FETCH FIRST 2 ROWS WITH TIES",
            "WITH TIES",
        ),
        ("SELECT * FROM users ORDER BY 2", "position with *"),
        (
            "SELECT *, count(*) FROM users GROUP BY grp",
            "with * in the select list",
        ),
        (
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY score) FROM users",
            "percentile_cont",
        ),
    ] {
        let why = refused(sql);
        assert!(why.contains(says), "{sql}: {why}");
    }
}

#[test]
fn groups_of_a_sharding_key_are_whole_on_their_shard() {
    // Every aggregate is final on its shard: the rows concatenate.
    for sql in [
        "SELECT id, string_agg(name, ',') FROM users GROUP BY id",
        "SELECT id, count(DISTINCT grp), stddev(score) FROM users GROUP BY 1",
        "SELECT u.id, count(*) FROM users u JOIN orders o ON o.user_id = u.id GROUP BY u.id",
        "SELECT o.user_id, sum(o.qty) FROM users u JOIN orders o ON o.user_id = u.id GROUP BY o.user_id HAVING sum(o.qty) > 3",
        "SELECT tenant, count(*) FROM events GROUP BY tenant",
        "SELECT *, count(*) FROM users GROUP BY id",
    ] {
        let planned = super::plan(sql, &sharding());
        assert_eq!(planned.shape, Shape::Concat, "{sql}");
        assert!(planned.by_key, "{sql}");
    }
    // Sorted and cut like plain rows; HAVING stays on the shards.
    let p = merged("SELECT id, count(*) AS n FROM users GROUP BY id HAVING count(*) > 1 ORDER BY n DESC LIMIT 3");
    assert_eq!(p.groups, None);
    assert_eq!(p.having, None);
    assert_eq!(p.order, vec![key(1, true, true)]);
    assert_eq!(p.shard_sql, None);
    // Groups of rows whose key may be NULL-extended, or of a table that
    // may not have the column, or of no key, still merge.
    for sql in [
        "SELECT u.id, count(*) FROM orders o LEFT JOIN users u ON o.user_id = u.id GROUP BY u.id",
        "SELECT tenant, count(*) FROM events e JOIN r ON r.a = e.b GROUP BY tenant",
        "WITH users AS (SELECT 1 AS id) SELECT id, count(*) FROM users GROUP BY id",
        "SELECT grp, count(*) FROM users GROUP BY grp",
        "SELECT a, count(*) FROM r GROUP BY a",
    ] {
        let p = merged(sql);
        assert!(p.groups.is_some(), "{sql}");
    }
}

#[test]
fn spreads_run_as_sums_counts_and_squares() {
    let p = merged("SELECT grp, stddev(score) FILTER (WHERE active) FROM users GROUP BY grp");
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Key,
            Column::Spread {
                count: 2,
                squares: 3,
                sample: true,
                root: true
            },
            Column::Aggregate(Aggregate::Count),
            Column::Aggregate(Aggregate::Sum),
            Column::Key,
        ])
    );
    assert_eq!(
        p.shard_sql.as_deref(),
        Some(
            "SELECT grp, pg_catalog.sum(score) FILTER (WHERE active) AS stddev, \
             pg_catalog.count(score) FILTER (WHERE active), \
             pg_catalog.sum(score::numeric * score::numeric) FILTER (WHERE active), \
             pg_catalog.hash_record(ROW(grp)) FROM users GROUP BY grp \
             ORDER BY pg_catalog.hash_record(ROW(grp))"
        )
    );
    let p = merged("SELECT var_pop(amount) AS v FROM users");
    assert_eq!(
        p.groups.as_deref().map(|g| g[0]),
        Some(Column::Spread {
            count: 1,
            squares: 2,
            sample: false,
            root: false
        })
    );
    assert!(refused("SELECT stddev(score)::int FROM users").contains("inside an expression"));
}

#[test]
fn ordered_aggregates_run_as_arrays_with_their_keys() {
    let p = merged(
        "SELECT grp, string_agg(name, '; ' ORDER BY score DESC, name) FROM users GROUP BY grp",
    );
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Key,
            Column::Ordered {
                keys: 2,
                count: 2,
                descending: 0b01,
                nulls_first: 0b01,
                delimiter: Some(0)
            },
            Column::OrderedKey,
            Column::OrderedKey,
            Column::Key,
        ])
    );
    assert_eq!(p.delimiters, vec!["; ".to_owned()]);
    assert_eq!(
        p.shard_sql.as_deref(),
        Some(
            "SELECT grp, pg_catalog.array_agg(name ORDER BY score DESC, name) AS string_agg, \
             pg_catalog.array_agg(score ORDER BY score DESC, name), \
             pg_catalog.array_agg(name ORDER BY score DESC, name), \
             pg_catalog.hash_record(ROW(grp)) FROM users GROUP BY grp \
             ORDER BY pg_catalog.hash_record(ROW(grp))"
        )
    );
    let p = merged("SELECT array_agg(id ORDER BY created NULLS FIRST) AS ids FROM users");
    assert_eq!(
        p.groups.as_deref().map(|g| g[0]),
        Some(Column::Ordered {
            keys: 1,
            count: 1,
            descending: 0,
            nulls_first: 1,
            delimiter: None
        })
    );
    for sql in [
        "SELECT array_agg(id) FROM users",
        "SELECT string_agg(name, grp::text ORDER BY name) FROM users",
        "SELECT string_agg(DISTINCT name, ',' ORDER BY name) FROM users",
    ] {
        let why = refused(sql);
        assert!(why.contains("without an ORDER BY"), "{sql}: {why}");
    }
}

#[test]
fn distinct_aggregates_of_a_sharding_key_combine() {
    let p = merged("SELECT count(DISTINCT id), sum(DISTINCT users.id) FROM users");
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Aggregate(Aggregate::Count),
            Column::Aggregate(Aggregate::Sum)
        ])
    );
    let p = merged("SELECT grp, count(DISTINCT o.user_id) FROM orders o GROUP BY grp");
    assert_eq!(
        p.groups,
        Some(vec![
            Column::Key,
            Column::Aggregate(Aggregate::Count),
            Column::Key
        ])
    );
    for sql in [
        "SELECT count(DISTINCT grp) FROM users",
        "SELECT count(DISTINCT u.id) FROM orders u",
        "SELECT grp FROM users GROUP BY grp HAVING count(DISTINCT score) > 1",
        "SELECT bool_and(DISTINCT id > 3) FROM users",
    ] {
        let why = refused(sql);
        assert!(why.contains("DISTINCT values"), "{sql}: {why}");
    }
}

#[test]
fn explain_plans_the_select_it_explains() {
    let e = explain("EXPLAIN SELECT id FROM users ORDER BY id LIMIT 5 OFFSET 5").unwrap();
    assert!(e.text);
    assert!(matches!(e.shape, Shape::Merge(_)));
    assert_eq!(
        e.shard_sql.as_deref(),
        Some("EXPLAIN SELECT id FROM users ORDER BY id LIMIT 10")
    );
    let e = explain("EXPLAIN (FORMAT JSON, ANALYZE) SELECT * FROM users").unwrap();
    assert_eq!((e.text, e.shape, e.shard_sql), (false, Shape::Concat, None));
    assert!(matches!(
        explain("EXPLAIN SELECT rank() OVER () FROM users")
            .unwrap()
            .shape,
        Shape::Refuse(_)
    ));
    assert_eq!(explain("SELECT 1"), None);
}

#[test]
fn declare_plans_the_query_of_its_cursor() {
    let declare = |sql: &str| super::declare(sql, &sharding()).map(|p| p.shape);
    assert_eq!(
        declare("DECLARE c CURSOR FOR SELECT * FROM users"),
        Some(Shape::Concat)
    );
    let Some(Shape::Merge(plan)) =
        declare("DECLARE c NO SCROLL CURSOR WITH HOLD FOR SELECT id FROM users ORDER BY name")
    else {
        panic!("expected a merge");
    };
    assert_eq!(plan.hidden, 1);
    assert_eq!(
        plan.shard_sql.as_deref(),
        Some("DECLARE c NO SCROLL CURSOR WITH HOLD FOR SELECT id, name FROM users ORDER BY name")
    );
    let Some(Shape::Merge(plan)) = declare("DECLARE c CURSOR FOR SELECT id FROM users ORDER BY id")
    else {
        panic!("expected a merge");
    };
    assert_eq!((plan.hidden, plan.shard_sql), (0, None));
    assert!(matches!(
        declare("DECLARE c CURSOR FOR SELECT rank() OVER () FROM users"),
        Some(Shape::Refuse(_))
    ));
    assert_eq!(declare("SELECT 1"), None);
}

/// Rule 8: the shards' groups sorted by a hash of the group keys (after the
/// client's ORDER BY when it is all group keys): the shards' statement, the
/// hash column, whether groups stream in the client's order.
#[test]
fn groups_come_sorted_by_a_hash_of_their_keys() {
    // `#H` in the shards' statement: the hash of the keys in the second field.
    #[rustfmt::skip]
    let cases = [
        ("SELECT v, count(*) FROM t GROUP BY v", "v", "SELECT v, count(*), #H FROM t GROUP BY v ORDER BY #H", 2, true),
        ("SELECT count(*) FROM t GROUP BY v", "v", "SELECT count(*), v, #H FROM t GROUP BY v ORDER BY #H", 2, true),
        ("SELECT v, w, sum(x) FROM t GROUP BY 1, 2 ORDER BY 2 DESC, 1", "v, w", "SELECT v, w, sum(x), #H FROM t GROUP BY 1, 2 ORDER BY 2 DESC, 1, #H", 3, true),
        ("SELECT lower(s) AS l, count(*) FROM t GROUP BY l ORDER BY l LIMIT 5", "lower(s)", "SELECT lower(s) AS l, count(*), #H FROM t GROUP BY l ORDER BY l, #H", 2, true),
        ("SELECT v, count(*) FROM t GROUP BY v ORDER BY count(*) DESC LIMIT 5", "v", "SELECT v, count(*), #H FROM t GROUP BY v ORDER BY #H", 2, false),
        ("SELECT 'x' AS c, v, count(*) FROM t GROUP BY 1, 2", "v", "SELECT 'x' AS c, v, count(*), #H FROM t GROUP BY 1, 2 ORDER BY #H", 3, true),
        ("SELECT DISTINCT v, w FROM t", "v, w", "SELECT DISTINCT v, w, #H FROM t ORDER BY #H", 2, true),
        ("SELECT DISTINCT v FROM t ORDER BY v DESC", "v", "SELECT DISTINCT v, #H FROM t ORDER BY v DESC, #H", 1, true),
    ];
    for (sql, keys, shards, column, streamed) in cases {
        let p = merged(sql);
        let shards = shards.replace("#H", &format!("pg_catalog.hash_record(ROW({keys}))"));
        assert_eq!(p.shard_sql.as_deref(), Some(shards.as_str()), "{sql}");
        assert_eq!(
            (p.group_hash, p.groups_streamed()),
            (Some(column), streamed),
            "{sql}"
        );
    }
    // One group, a `*`, only constant keys, groups whole on a shard: no hash.
    for sql in [
        "SELECT count(*) FROM t",
        "SELECT DISTINCT * FROM t",
        "SELECT 1 AS one, count(*) FROM t GROUP BY 1",
        "SELECT DISTINCT ON (v) v, w FROM t",
        "SELECT id, count(*) FROM users GROUP BY id ORDER BY 2",
    ] {
        assert_eq!(merged(sql).group_hash, None, "{sql}");
    }
}
