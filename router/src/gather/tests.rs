//! The gather planner, one line per case: a statement, the shard SELECT of
//! each gather in order, and the finish; or the refusal's text. TPC-H's
//! `lineitem` and `orders` are sharded by order key, `part`, `customer` and
//! `nation` omnisharded; `users` and `events` sharded; `loose` is a table
//! the config does not name but the catalog lists; `v` a view.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use super::{plan, GatherOptions, GatherPlan, NotGathered};
use crate::catalog::{Catalog, CatalogRow, Table};
use crate::config::Config;
use crate::sharding::Sharding;

const CONFIG: &str = r#"
[general]
unlisted_tables = "sharded"

[[databases]]
name = "c"
host = "127.0.0.1"
database_name = "db0"
shard = 0

[[databases]]
name = "c"
host = "127.0.0.1"
database_name = "db1"
shard = 1

[[sharded_tables]]
database = "c"
name = "lineitem"
column = "l_orderkey"
data_type = "bigint"

[[sharded_tables]]
database = "c"
name = "orders"
column = "o_orderkey"
data_type = "bigint"

[[sharded_tables]]
database = "c"
name = "users"
column = "id"
data_type = "bigint"

[[sharded_tables]]
database = "c"
name = "events"
column = "id"
data_type = "bigint"

[[omnisharded_tables]]
database = "c"
tables = ["part", "customer", "nation"]
"#;

const TABLES: &[(&str, &[&str])] = &[
    (
        "lineitem",
        &[
            "l_orderkey",
            "l_partkey",
            "l_quantity",
            "l_extendedprice",
            "l_shipdate",
        ],
    ),
    (
        "orders",
        &["o_orderkey", "o_custkey", "o_orderdate", "o_comment"],
    ),
    ("part", &["p_partkey", "p_name"]),
    ("customer", &["c_custkey", "c_name"]),
    ("users", &["id", "name", "score", "grp"]),
    ("loose", &["k", "v"]),
];

fn sharding() -> &'static Sharding {
    static SHARDING: OnceLock<Sharding> = OnceLock::new();
    SHARDING.get_or_init(|| {
        let users = "[[users]]\nname = \"app\"\ndatabase = \"c\"\npassword = \"pw\"\n";
        let config = Config::from_toml(CONFIG, users).expect("the test config loads");
        let mut sharding = Sharding::clone(&config.clusters["c"].sharding);
        let mut rows: Vec<CatalogRow> = TABLES
            .iter()
            .map(|(name, columns)| {
                CatalogRow::Table(Table {
                    schema: "public".into(),
                    name: (*name).into(),
                    columns: columns.iter().map(|c| (*c).into()).collect(),
                    primary_key: match *name {
                        "users" => vec!["id".into()],
                        _ => Vec::new(),
                    },
                })
            })
            .collect();
        rows.push(CatalogRow::View {
            schema: "public".into(),
            name: "v".into(),
            materialized: false,
            definition: "SELECT id FROM users".into(),
            columns: vec!["id".into()],
        });
        sharding.catalog = Some(Arc::new(Catalog::from_rows(rows)));
        sharding
    })
}

fn planned(sql: &str) -> Result<GatherPlan, NotGathered> {
    plan(sql, sharding(), &GatherOptions::default())
}

/// `sql` gathers `gathers` (their shard SELECTs, in order) and finishes
/// with `finish`; the finish parses.
#[track_caller]
fn check(sql: &str, gathers: &[&str], finish: &str) {
    let plan = planned(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let got: Vec<&str> = plan.gathers.iter().map(|g| g.shard_sql.as_str()).collect();
    assert_eq!(got, gathers, "gathers of {sql}");
    assert_eq!(plan.finish_sql, finish, "finish of {sql}");
    parser_ffi::parse_protobuf(&plan.finish_sql).expect("the finish parses");
}

/// `sql` is refused with a message containing `text`.
#[track_caller]
fn refused(sql: &str, text: &str) {
    match planned(sql) {
        Ok(plan) => panic!("{sql}: planned {plan:?}, expected a refusal with {text:?}"),
        Err(err) => assert!(err.to_string().contains(text), "{sql}: {err}"),
    }
}

#[test]
#[rustfmt::skip]
fn leaves_and_columns() {
    check("SELECT count(*) FROM lineitem", &["SELECT l_orderkey FROM lineitem"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"lineitem\"");
    check("SELECT sum(l_quantity) FROM lineitem l WHERE l.l_partkey > 3", &["SELECT l_partkey, l_quantity FROM lineitem l WHERE l.l_partkey > 3"], "SELECT sum(l_quantity) FROM pg_temp.pgshard_g1 l WHERE l.l_partkey > 3");
    check("SELECT * FROM lineitem", &["SELECT * FROM lineitem"], "SELECT * FROM pg_temp.pgshard_g1 AS \"lineitem\"");
    check("SELECT l.* FROM lineitem l, part", &["SELECT * FROM lineitem l"], "SELECT l.* FROM pg_temp.pgshard_g1 l, part");
    check("SELECT p.* FROM lineitem l, part p WHERE l_partkey = p_partkey", &["SELECT l_partkey FROM lineitem l"], "SELECT p.* FROM pg_temp.pgshard_g1 l, part p WHERE l_partkey = p_partkey");
    check("SELECT a FROM lineitem AS l (a, b)", &["SELECT * FROM lineitem l(a, b)"], "SELECT a FROM pg_temp.pgshard_g1 AS l (a, b)");
    check("SELECT * FROM lineitem NATURAL JOIN orders", &["SELECT * FROM lineitem", "SELECT * FROM orders"], "SELECT * FROM pg_temp.pgshard_g1 AS \"lineitem\" NATURAL JOIN pg_temp.pgshard_g2 AS \"orders\"");
    check("SELECT l.l_bogus FROM lineitem l", &["SELECT * FROM lineitem l"], "SELECT l.l_bogus FROM pg_temp.pgshard_g1 l");
    check("SELECT count(*) FROM public.lineitem", &["SELECT l_orderkey FROM public.lineitem"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"lineitem\"");
    check("SELECT count(*) FROM ONLY lineitem", &["SELECT l_orderkey FROM ONLY lineitem"], "SELECT count(*) FROM ONLY pg_temp.pgshard_g1 AS \"lineitem\"");
    check("SELECT count(*) FROM lineitem *", &["SELECT l_orderkey FROM lineitem"], "SELECT count(*) FROM pg_temp.pgshard_g1 * AS \"lineitem\"");
    check("SELECT count(*) FROM \"lineitem\"", &["SELECT l_orderkey FROM lineitem"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"lineitem\"");
    check("SELECT j.score FROM (users JOIN lineitem ON l_orderkey = id) AS j", &["SELECT id, score FROM users", "SELECT l_orderkey FROM lineitem"], "SELECT j.score FROM (pg_temp.pgshard_g1 AS \"users\" JOIN pg_temp.pgshard_g2 AS \"lineitem\" ON l_orderkey = id) AS j");
    // Omnisharded and catalog tables are read in place; CTEs are no tables.
    check("SELECT p_name FROM part", &[], "SELECT p_name FROM part");
    check("WITH lineitem AS (SELECT 1 AS x) SELECT x FROM lineitem", &[], "WITH lineitem AS (SELECT 1 AS x) SELECT x FROM lineitem");
    check("WITH c AS (SELECT l_orderkey FROM lineitem) SELECT count(*) FROM c", &["SELECT l_orderkey FROM lineitem"], "WITH c AS (SELECT l_orderkey FROM pg_temp.pgshard_g1 AS \"lineitem\") SELECT count(*) FROM c");
    // A CTE body sees the CTEs before it (all of them when RECURSIVE).
    refused("WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", "b is not a table the catalog lists");
    check("WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", &[], "WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a");
    check("SELECT (WITH users AS (SELECT 1 AS id) SELECT max(id) FROM users), (SELECT max(id) FROM users)", &["SELECT id FROM users"], "SELECT (WITH users AS (SELECT 1 AS id) SELECT max(id) FROM users), (SELECT max(id) FROM pg_temp.pgshard_g1 AS \"users\")");
    // An unlisted table the catalog lists is sharded by a key pgshard does not know.
    check("SELECT v FROM loose", &["SELECT v FROM loose"], "SELECT v FROM pg_temp.pgshard_g1 AS \"loose\"");
    // Parameters stay in the finish.
    check("SELECT name FROM users WHERE score > $1", &["SELECT name, score FROM users"], "SELECT name FROM pg_temp.pgshard_g1 AS \"users\" WHERE score > $1");
    assert!(planned("SELECT name FROM users WHERE score > $1").unwrap().finish_params);
}

#[test]
#[rustfmt::skip]
fn pushed_conditions() {
    // Own columns, listed nodes: pushed (and kept in the finish).
    check("SELECT o_custkey FROM orders WHERE o_orderdate >= DATE '1995-01-01' AND o_comment NOT LIKE '%special%requests%'", &["SELECT o_custkey, o_orderdate, o_comment FROM orders WHERE o_orderdate >= '1995-01-01'::date AND o_comment NOT LIKE '%special%requests%'"], "SELECT o_custkey FROM pg_temp.pgshard_g1 AS \"orders\" WHERE o_orderdate >= DATE '1995-01-01' AND o_comment NOT LIKE '%special%requests%'");
    check("SELECT count(*) FROM orders o WHERE o.o_orderkey IN (1, 2) OR lower(o.o_comment) = 'x'", &["SELECT o_orderkey, o_comment FROM orders o WHERE o.o_orderkey IN (1, 2) OR lower(o.o_comment) = 'x'"], "SELECT count(*) FROM pg_temp.pgshard_g1 o WHERE o.o_orderkey IN (1, 2) OR lower(o.o_comment) = 'x'");
    check("SELECT count(*) FROM users WHERE score BETWEEN 1 AND 5 AND name IS NOT NULL AND coalesce(grp, 0) <> 3", &["SELECT name, score, grp FROM users WHERE score BETWEEN 1 AND 5 AND name IS NOT NULL AND COALESCE(grp, 0) <> 3"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"users\" WHERE score BETWEEN 1 AND 5 AND name IS NOT NULL AND coalesce(grp, 0) <> 3");
    // Not pushed: parameters, volatile or unlisted functions, sublinks, another table's columns.
    check("SELECT count(*) FROM users WHERE score > $1", &["SELECT score FROM users"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"users\" WHERE score > $1");
    check("SELECT count(*) FROM users WHERE score > random() * 10", &["SELECT score FROM users"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"users\" WHERE score > random() * 10");
    check("SELECT count(*) FROM orders WHERE o_orderdate > now()", &["SELECT o_orderdate FROM orders"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"orders\" WHERE o_orderdate > now()");
    check("SELECT count(*) FROM orders WHERE o_orderdate > CURRENT_DATE", &["SELECT o_orderdate FROM orders"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"orders\" WHERE o_orderdate > CURRENT_DATE");
    check("SELECT count(*) FROM users WHERE score > (SELECT avg(score) FROM users)", &["SELECT score FROM users"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"users\" WHERE score > (SELECT avg(score) FROM pg_temp.pgshard_g1 AS \"users\")");
    check("SELECT count(*) FROM orders, customer WHERE c_custkey = o_custkey AND c_name = 'x' AND o_custkey > 5", &["SELECT o_custkey FROM orders WHERE o_custkey > 5"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"orders\", customer WHERE c_custkey = o_custkey AND c_name = 'x' AND o_custkey > 5");
    // An INNER join's ON on preserved sides pushes; an outer join's nullable side gets nothing.
    check("SELECT count(*) FROM orders JOIN lineitem ON l_orderkey = o_orderkey AND l_quantity > 5", &["SELECT o_orderkey FROM orders", "SELECT l_orderkey, l_quantity FROM lineitem WHERE l_quantity > 5"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"orders\" JOIN pg_temp.pgshard_g2 AS \"lineitem\" ON l_orderkey = o_orderkey AND l_quantity > 5");
    check("SELECT count(*) FROM customer LEFT JOIN orders ON c_custkey = o_custkey WHERE o_comment IS NULL", &["SELECT o_custkey, o_comment FROM orders"], "SELECT count(*) FROM customer LEFT JOIN pg_temp.pgshard_g1 AS \"orders\" ON c_custkey = o_custkey WHERE o_comment IS NULL");
    check("SELECT count(*) FROM orders LEFT JOIN lineitem ON l_orderkey = o_orderkey WHERE o_custkey = 3", &["SELECT o_orderkey, o_custkey FROM orders WHERE o_custkey = 3", "SELECT l_orderkey FROM lineitem"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"orders\" LEFT JOIN pg_temp.pgshard_g2 AS \"lineitem\" ON l_orderkey = o_orderkey WHERE o_custkey = 3");
    // The ON of a join filters its INNER sides and its nullable side first; not its preserved side, nor a FULL join's.
    check("SELECT count(*) FROM customer LEFT JOIN orders o ON c_custkey = o.o_custkey AND o.o_comment IS NULL", &["SELECT o_custkey, o_comment FROM orders o WHERE o.o_comment IS NULL"], "SELECT count(*) FROM customer LEFT JOIN pg_temp.pgshard_g1 o ON c_custkey = o.o_custkey AND o.o_comment IS NULL");
    check("SELECT count(*) FROM orders o RIGHT JOIN customer ON c_custkey = o.o_custkey AND o.o_custkey > 2", &["SELECT o_custkey FROM orders o WHERE o.o_custkey > 2"], "SELECT count(*) FROM pg_temp.pgshard_g1 o RIGHT JOIN customer ON c_custkey = o.o_custkey AND o.o_custkey > 2");
    check("SELECT count(*) FROM orders o LEFT JOIN customer ON c_custkey = o.o_custkey AND o.o_custkey > 2", &["SELECT o_custkey FROM orders o"], "SELECT count(*) FROM pg_temp.pgshard_g1 o LEFT JOIN customer ON c_custkey = o.o_custkey AND o.o_custkey > 2");
    check("SELECT count(*) FROM orders o FULL JOIN lineitem l ON l.l_orderkey = o.o_orderkey AND o.o_custkey > 2 AND l.l_quantity > 1", &["SELECT o_orderkey, o_custkey FROM orders o", "SELECT l_orderkey, l_quantity FROM lineitem l"], "SELECT count(*) FROM pg_temp.pgshard_g1 o FULL JOIN pg_temp.pgshard_g2 l ON l.l_orderkey = o.o_orderkey AND o.o_custkey > 2 AND l.l_quantity > 1");
    check("SELECT count(*) FROM customer LEFT JOIN (orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey AND l.l_quantity > 1) ON c_custkey = o.o_custkey WHERE o.o_custkey IS NULL", &["SELECT o_orderkey, o_custkey FROM orders o", "SELECT l_orderkey, l_quantity FROM lineitem l WHERE l.l_quantity > 1"], "SELECT count(*) FROM customer LEFT JOIN (pg_temp.pgshard_g1 o JOIN pg_temp.pgshard_g2 l ON l.l_orderkey = o.o_orderkey AND l.l_quantity > 1) ON c_custkey = o.o_custkey WHERE o.o_custkey IS NULL");
    // An unqualified column another item of the level may have: not pushed.
    check("SELECT count(*) FROM users, (SELECT 1 AS score) s WHERE score > 3", &["SELECT score FROM users"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"users\", (SELECT 1 AS score) s WHERE score > 3");
    check("SELECT count(*) FROM users JOIN users u2 USING (id) WHERE id > 3", &["SELECT id FROM users", "SELECT id FROM users u2"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"users\" JOIN pg_temp.pgshard_g2 u2 USING (id) WHERE id > 3");
}

#[test]
#[rustfmt::skip]
fn every_level() {
    // Identical gathers are one.
    check("SELECT name FROM users UNION SELECT name FROM users", &["SELECT name FROM users"], "SELECT name FROM pg_temp.pgshard_g1 AS \"users\" UNION SELECT name FROM pg_temp.pgshard_g1 AS \"users\"");
    check("SELECT id, rank() OVER (ORDER BY score) FROM users", &["SELECT id, score FROM users"], "SELECT id, rank() OVER (ORDER BY score) FROM pg_temp.pgshard_g1 AS \"users\"");
    check("SELECT count(*) FROM (SELECT id FROM users LIMIT 10) s", &["SELECT id FROM users"], "SELECT count(*) FROM (SELECT id FROM pg_temp.pgshard_g1 AS \"users\" LIMIT 10) s");
    check("SELECT u.id FROM users u, LATERAL (SELECT l_quantity FROM lineitem WHERE l_orderkey = u.id LIMIT 1) x", &["SELECT id FROM users u", "SELECT l_orderkey, l_quantity FROM lineitem"], "SELECT u.id FROM pg_temp.pgshard_g1 u, LATERAL (SELECT l_quantity FROM pg_temp.pgshard_g2 AS \"lineitem\" WHERE l_orderkey = u.id LIMIT 1) x");
    check("SELECT grp, count(DISTINCT name) FROM users GROUP BY ROLLUP (grp)", &["SELECT name, grp FROM users"], "SELECT grp, count(DISTINCT name) FROM pg_temp.pgshard_g1 AS \"users\" GROUP BY ROLLUP (grp)");
    check("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY score) FROM users", &["SELECT score FROM users"], "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY score) FROM pg_temp.pgshard_g1 AS \"users\"");
    check("SELECT id FROM users WHERE EXISTS (SELECT 1 FROM events e WHERE e.id = users.id)", &["SELECT id FROM users", "SELECT * FROM events e"], "SELECT id FROM pg_temp.pgshard_g1 AS \"users\" WHERE EXISTS (SELECT 1 FROM pg_temp.pgshard_g2 e WHERE e.id = users.id)");
    check("SELECT 1; ", &[], "SELECT 1");
    check("  SELECT count(*) FROM users ;", &["SELECT id FROM users"], "SELECT count(*) FROM pg_temp.pgshard_g1 AS \"users\"");
}

#[test]
#[rustfmt::skip]
fn refusals() {
    refused("UPDATE users SET score = 1", "only a SELECT");
    refused("SELECT 1; SELECT 2", "only a SELECT");
    refused("SELECT * INTO made FROM users", "only a SELECT");
    check("SELECT * FROM users FOR UPDATE", &["SELECT * FROM users FOR UPDATE"], "SELECT * FROM pg_temp.pgshard_g1 AS \"users\" FOR UPDATE");
    refused("SELECT * FROM (SELECT * FROM users FOR SHARE) s", "FOR UPDATE/SHARE");
    refused("SELECT (WITH d AS (DELETE FROM users RETURNING id) SELECT count(*) FROM d)", "data-modifying WITH");
    refused("SELECT u FROM users u", "a whole-row reference to u");
    refused("SELECT row_to_json(users) FROM users", "a whole-row reference to users");
    refused("SELECT ctid FROM users", "the system column ctid of users");
    refused("SELECT u.tableoid FROM users u", "the system column tableoid of u");
    refused("SELECT public.users.id FROM public.users", "written with its schema");
    refused("SELECT * FROM users TABLESAMPLE SYSTEM (10)", "TABLESAMPLE on users");
    refused("SELECT * FROM v", "v is not a table");
    refused("SELECT * FROM nowhere", "nowhere is not a table");
    refused("SELECT * FROM XMLTABLE('/a' PASSING '<a/>' COLUMNS x int) x, users", "pgshard cannot read a FROM item");
    let on_one = GatherOptions { coordinator: 1, ..GatherOptions::default() };
    let err = plan("SELECT nextval('s'), id FROM users", sharding(), &on_one).unwrap_err();
    assert_eq!(err, NotGathered::Sequence("nextval".into()));
    assert!(planned("SELECT nextval('s'), id FROM users").is_ok());
    let many: Vec<String> = (0..65).map(|i| format!("SELECT id FROM users u{i} WHERE score = {i}")).collect();
    refused(&many.join(" UNION ALL "), "at most 64");
}

#[test]
fn primary_keys_for_group_by() {
    let key = |sql: &str| planned(sql).unwrap().gathers[0].key_sql.clone();
    let added = Some("ALTER TABLE pg_temp.pgshard_g1 ADD PRIMARY KEY (\"id\")".to_owned());
    assert_eq!(
        key("SELECT u.id, u.name, count(*) FROM users u GROUP BY u.id"),
        added
    );
    assert_eq!(key("SELECT id, name FROM users GROUP BY id, grp"), added);
    assert_eq!(key("SELECT name FROM users GROUP BY name"), None);
    assert_eq!(key("SELECT id FROM users"), None);
    assert_eq!(
        key("SELECT count(*) FROM lineitem GROUP BY l_orderkey"),
        None
    );
}

#[test]
fn creates_and_lines() {
    let plan = planned("SELECT l_quantity FROM lineitem l WHERE l.l_partkey = 3").unwrap();
    assert_eq!(
        plan.gathers[0].create_sql,
        "CREATE TEMP TABLE pg_temp.pgshard_g1 ON COMMIT DROP AS SELECT l_partkey, l_quantity FROM lineitem l WITH NO DATA"
    );
    assert_eq!(plan.gathers[0].table.name, "lineitem");
    assert_eq!(
        plan.lines,
        vec![
            "Gather pgshard_g1: SELECT l_partkey, l_quantity FROM lineitem l WHERE l.l_partkey = 3"
                .to_owned(),
            "Finish on database 0".to_owned(),
        ]
    );
}

#[test]
fn explain_plans_the_select() {
    let sql = "EXPLAIN (COSTS OFF) SELECT count(DISTINCT grp) FROM users";
    let plan = planned(sql).unwrap();
    assert_eq!(
        plan.finish_sql,
        "EXPLAIN (COSTS OFF) SELECT count(DISTINCT grp) FROM pg_temp.pgshard_g1 AS \"users\""
    );
    let explain = plan.explain.unwrap();
    assert!(!explain.analyze && explain.text);
    assert_eq!(
        explain.query,
        "SELECT count(DISTINCT grp) FROM pg_temp.pgshard_g1 users"
    );
    let options = |sql: &str| planned(sql).map(|p| p.explain.map(|e| (e.analyze, e.text)));
    assert_eq!(
        options("EXPLAIN ANALYZE SELECT count(DISTINCT grp) FROM users"),
        Ok(Some((true, true)))
    );
    assert_eq!(
        options("EXPLAIN (ANALYZE off, FORMAT json) SELECT count(DISTINCT grp) FROM users"),
        Ok(Some((false, false)))
    );
    assert_eq!(
        options("EXPLAIN (ANALYZE true, FORMAT text) SELECT 1 FROM users"),
        Ok(Some((true, true)))
    );
    assert_eq!(options("SELECT 1 FROM users"), Ok(None));
    refused("EXPLAIN UPDATE users SET grp = 1", "only a SELECT");
}

#[test]
fn omnisharded_tables_gathered_only_when_asked() {
    let sql =
        "SELECT p.p_name, count(*) FROM users u JOIN part p ON p.p_partkey = u.grp GROUP BY 1";
    assert_eq!(planned(sql).unwrap().gathers.len(), 1);
    let all = GatherOptions {
        gather_all: true,
        ..GatherOptions::default()
    };
    let plan = plan(sql, sharding(), &all).unwrap();
    let tables: Vec<&str> = plan.gathers.iter().map(|g| g.table.name.as_str()).collect();
    assert_eq!(tables, ["users", "part"]);
    assert!(
        plan.finish_sql.contains("pg_temp.pgshard_g2 p"),
        "{}",
        plan.finish_sql
    );
    // Catalog tables are still read in place.
    let catalog = plan_all("SELECT relname FROM pg_class c JOIN users u ON u.grp = c.relnatts");
    assert_eq!(catalog, ["users"]);
}

fn plan_all(sql: &str) -> Vec<String> {
    let all = GatherOptions {
        gather_all: true,
        ..GatherOptions::default()
    };
    plan(sql, sharding(), &all)
        .unwrap()
        .gathers
        .into_iter()
        .map(|g| g.table.name)
        .collect()
}

#[test]
#[rustfmt::skip]
fn cursors_and_serials() {
    check("DECLARE c CURSOR FOR SELECT count(*) FROM lineitem", &["SELECT l_orderkey FROM lineitem"], "DECLARE c CURSOR FOR SELECT count(*) FROM pg_temp.pgshard_g1 AS \"lineitem\"");
    check("DECLARE \"C x\" NO SCROLL CURSOR WITH HOLD FOR SELECT id, rank() OVER (ORDER BY score) FROM users", &["SELECT id, score FROM users"], "DECLARE \"C x\" NO SCROLL CURSOR WITH HOLD FOR SELECT id, rank() OVER (ORDER BY score) FROM pg_temp.pgshard_g1 AS \"users\"");
    refused("DECLARE c CURSOR FOR SELECT id FROM users FOR UPDATE", "FOR UPDATE/SHARE");
    let cursor = |sql: &str| planned(sql).unwrap().cursor.map(|c| (c.name, c.hold));
    assert_eq!(cursor("DECLARE c CURSOR FOR SELECT 1"), Some(("c".into(), false)));
    assert_eq!(cursor("DECLARE \"C x\" CURSOR WITH HOLD FOR SELECT id FROM users"), Some(("C x".into(), true)));
    assert_eq!(cursor("SELECT count(*) FROM users"), None);
    let serial = GatherOptions { serial: 7, ..GatherOptions::default() };
    let plan = plan("SELECT u.id FROM users u JOIN events e ON e.id = u.score", sharding(), &serial).unwrap();
    let temps: Vec<&str> = plan.gathers.iter().map(|g| g.temp.as_str()).collect();
    assert_eq!(temps, ["pgshard_7_g1", "pgshard_7_g2"]);
    assert_eq!(plan.finish_sql, "SELECT u.id FROM pg_temp.pgshard_7_g1 u JOIN pg_temp.pgshard_7_g2 e ON e.id = u.score");
    assert!(plan.gathers[0].create_sql.starts_with("CREATE TEMP TABLE pg_temp.pgshard_7_g1 ON COMMIT DROP AS "));
}

#[test]
#[rustfmt::skip]
fn data_modifying_with() {
    // Each write is a gather of its own text, its rows read back under the WITH query's name.
    check("WITH u AS (UPDATE users SET score = score + 1 WHERE grp = 2 RETURNING id, score) SELECT round(avg(score), 2) FROM u", &["UPDATE users SET score = score + 1 WHERE grp = 2 RETURNING id, score"], "WITH u AS (SELECT * FROM pg_temp.pgshard_w1) SELECT round(avg(score), 2) FROM u");
    check("WITH d AS (DELETE FROM events WHERE id < 5 RETURNING *), s AS (SELECT p_name FROM part) SELECT count(*) FROM d, s, lineitem WHERE l_quantity > 2", &["DELETE FROM events WHERE id < 5 RETURNING *", "SELECT l_quantity FROM lineitem"], "WITH d AS (SELECT * FROM pg_temp.pgshard_w1), s AS (SELECT p_name FROM part) SELECT count(*) FROM d, s, pg_temp.pgshard_g1 AS \"lineitem\" WHERE l_quantity > 2");
    check("WITH i AS (INSERT INTO users (id, name) VALUES (1, 'a') RETURNING id), d AS (DELETE FROM events WHERE id = 3) SELECT * FROM i", &["INSERT INTO users (id, name) VALUES (1, 'a') RETURNING id", "DELETE FROM events WHERE id = 3"], "WITH i AS (SELECT * FROM pg_temp.pgshard_w1) SELECT * FROM i");
    let plan = planned("WITH u AS (UPDATE users u SET score = 1 FROM orders o WHERE o.o_custkey = u.id RETURNING u.id, o.o_comment) SELECT * FROM u").unwrap();
    assert_eq!(plan.gathers[0].create_sql, "CREATE TEMP TABLE pg_temp.pgshard_w1 ON COMMIT DROP AS SELECT u.id, o.o_comment FROM users u, orders o WITH NO DATA");
    assert_eq!(plan.gathers[0].write, Some(super::Write { inserts: false, returning: true }));
    assert_eq!(plan.lines[0], "Write pgshard_w1: UPDATE users u SET score = 1 FROM orders o WHERE o.o_custkey = u.id RETURNING u.id, o.o_comment");
    // The snapshot rule: no other part reads or writes what a WITH query writes.
    refused("WITH d AS (DELETE FROM users RETURNING id) SELECT count(*) FROM d JOIN users USING (id)", "users is written by a data-modifying WITH query");
    refused("WITH d AS (DELETE FROM users RETURNING id) SELECT (SELECT max(id) FROM public.users) FROM d", "users is written by a data-modifying WITH query");
    refused("WITH s AS (SELECT * FROM users), d AS (DELETE FROM users RETURNING id) SELECT count(*) FROM d", "users is written by a data-modifying WITH query");
    refused("WITH a AS (DELETE FROM users RETURNING id), b AS (DELETE FROM events WHERE id IN (SELECT id FROM users) RETURNING id) SELECT 1", "users is written by a data-modifying WITH query");
    refused("WITH a AS (DELETE FROM users RETURNING id), b AS (UPDATE users SET score = 0 RETURNING id) SELECT 1", "users is written by two data-modifying WITH queries");
    refused("WITH a AS (SELECT 1 AS id), b AS (DELETE FROM users WHERE id IN (SELECT id FROM a) RETURNING id) SELECT 1", "reads the WITH query a");
    refused("WITH d AS (DELETE FROM users) SELECT * FROM d", "WITH query \"d\" does not have a RETURNING clause");
    refused("WITH p AS (UPDATE part SET p_name = 'x' RETURNING p_partkey) SELECT count(*) FROM p", "part, which is not a sharded table");
    refused("WITH m AS (MERGE INTO users u USING events e ON u.id = e.id WHEN MATCHED THEN DELETE RETURNING u.id) SELECT * FROM m", "MERGE");
    // Not under EXPLAIN or DECLARE, nor below the top level (Postgres refuses that too).
    refused("EXPLAIN WITH d AS (DELETE FROM users RETURNING id) SELECT count(*) FROM d", "data-modifying WITH");
    refused("DECLARE c CURSOR FOR WITH d AS (DELETE FROM users RETURNING id) SELECT count(*) FROM d", "data-modifying WITH");
    refused("SELECT * FROM (WITH d AS (DELETE FROM users RETURNING id) SELECT id FROM d) s", "data-modifying WITH");
}

#[test]
#[rustfmt::skip]
fn locking_clauses() {
    // Pushed into the gathers of the tables a clause covers, the strongest one.
    check("SELECT u.name FROM users u JOIN events e ON e.id = u.grp WHERE u.score > 3 FOR UPDATE OF u", &["SELECT id, name, score, grp FROM users u WHERE u.score > 3 FOR UPDATE", "SELECT * FROM events e"], "SELECT u.name FROM pg_temp.pgshard_g1 u JOIN pg_temp.pgshard_g2 e ON e.id = u.grp WHERE u.score > 3 FOR UPDATE OF u");
    check("SELECT u.name FROM users u, events e WHERE e.id = u.grp FOR SHARE OF e FOR NO KEY UPDATE OF u, e NOWAIT", &["SELECT id, name, grp FROM users u FOR NO KEY UPDATE NOWAIT", "SELECT * FROM events e FOR NO KEY UPDATE NOWAIT"], "SELECT u.name FROM pg_temp.pgshard_g1 u, pg_temp.pgshard_g2 e WHERE e.id = u.grp FOR SHARE OF e FOR NO KEY UPDATE OF u, e NOWAIT");
    check("SELECT name FROM users, part WHERE p_partkey = id FOR KEY SHARE SKIP LOCKED", &["SELECT id, name FROM users FOR KEY SHARE SKIP LOCKED"], "SELECT name FROM pg_temp.pgshard_g1 AS \"users\", part WHERE p_partkey = id FOR KEY SHARE SKIP LOCKED");
    // Tables of a sublink are read as they are.
    check("SELECT name FROM users WHERE grp IN (SELECT id FROM events) FOR UPDATE", &["SELECT id, name, grp FROM users FOR UPDATE", "SELECT * FROM events"], "SELECT name FROM pg_temp.pgshard_g1 AS \"users\" WHERE grp IN (SELECT id FROM pg_temp.pgshard_g2 AS \"events\") FOR UPDATE");
    check("SELECT name FROM users ORDER BY name LIMIT 3 FOR UPDATE", &["SELECT name FROM users FOR UPDATE"], "SELECT name FROM pg_temp.pgshard_g1 AS \"users\" ORDER BY name LIMIT 3 FOR UPDATE");
    refused("SELECT name FROM users ORDER BY name LIMIT 3 FOR UPDATE SKIP LOCKED", "NOWAIT or SKIP LOCKED and LIMIT");
    refused("SELECT name FROM users OFFSET 2 FOR UPDATE NOWAIT", "NOWAIT or SKIP LOCKED and LIMIT");
    refused("SELECT * FROM (SELECT id FROM users) s, events FOR UPDATE", "over a FROM subquery");
    refused("SELECT * FROM users u, events FOR UPDATE OF s", "OF a name");
    refused("SELECT id FROM users UNION SELECT id FROM events FOR UPDATE", "FOR UPDATE/SHARE in a subquery");
    refused("WITH s AS (SELECT id FROM users FOR UPDATE) SELECT * FROM s JOIN events USING (id)", "FOR UPDATE/SHARE in a subquery");
}
