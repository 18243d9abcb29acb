//! Carried subqueries, one line per case: a write, the subqueries it
//! carries (their SELECTs' inner text) and the write once given results;
//! or why nothing is carried. `users` and `orders` are sharded, `countries`
//! omnisharded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use super::{plan, plan_bound, Answer, CarryPlan, Kind, NotCarried, Rows, Value};
use crate::catalog::{Catalog, CatalogRow, Table};
use crate::config::Config;
use crate::sharding::Sharding;

const CONFIG: &str = r#"
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
name = "users"
column = "id"
data_type = "bigint"

[[sharded_tables]]
database = "c"
name = "orders"
column = "user_id"
data_type = "bigint"

[[omnisharded_tables]]
database = "c"
tables = ["countries"]
"#;

pub(super) fn sharding() -> &'static Sharding {
    static SHARDING: OnceLock<Sharding> = OnceLock::new();
    SHARDING.get_or_init(|| {
        let users = "[[users]]\nname = \"app\"\ndatabase = \"c\"\npassword = \"pw\"\n";
        let config = Config::from_toml(CONFIG, users).expect("the test config loads");
        let mut sharding = Sharding::clone(&config.clusters["c"].sharding);
        let tables: &[(&str, &[&str])] = &[
            ("users", &["id", "score", "flag", "name"]),
            ("orders", &["id", "user_id", "total"]),
            ("countries", &["code", "name"]),
        ];
        let rows: Vec<CatalogRow> = tables
            .iter()
            .map(|(name, columns)| {
                CatalogRow::Table(Table {
                    schema: "public".into(),
                    name: (*name).into(),
                    columns: columns.iter().map(|c| (*c).into()).collect(),
                    primary_key: Vec::new(),
                })
            })
            .collect();
        sharding.catalog = Some(Arc::new(Catalog::from_rows(rows)));
        sharding
    })
}

pub(super) fn planned(sql: &str) -> Result<CarryPlan, NotCarried> {
    plan(sql, sharding(), 0, MAX_ROWS)
}

const MAX_ROWS: u64 = 1000;

pub(super) fn value(type_name: &str, text: Option<&str>, dimensions: Option<&str>) -> Answer {
    Answer::Value(Value {
        type_name: type_name.into(),
        text: text.map(Into::into),
        dimensions: dimensions.map(Into::into),
    })
}

/// `sql` carries subqueries of `kinds` (their text deparsed as
/// `subqueries`) and, given `values`, becomes `write`.
#[track_caller]
fn check(sql: &str, carried: &[(Kind, &str)], values: &[Answer], write: &str) {
    let plan = planned(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let got: Vec<(Kind, &str)> = plan
        .carried
        .iter()
        .map(|c| (c.kind, c.subquery.as_str()))
        .collect();
    assert_eq!(got, carried, "carried by {sql}");
    for carry in &plan.carried {
        parser_ffi::parse_protobuf(&carry.sql).expect("the carried SELECT parses");
    }
    assert_eq!(plan.write_sql(values).unwrap(), write, "write of {sql}");
}

#[track_caller]
fn not_carried(sql: &str, text: &str) {
    match planned(sql) {
        Ok(plan) => panic!("{sql}: carried {:?}, expected {text:?}", plan.carried),
        Err(err) => assert!(err.to_string().contains(text), "{sql}: {err}"),
    }
}

#[test]
fn scalars_sets_and_exists() {
    check(
        "UPDATE users SET flag = true WHERE id = 5 AND score > (SELECT avg(score) FROM users)",
        &[(Kind::Scalar, "SELECT avg(score) FROM users")],
        &[value("numeric", Some("50.5"), None)],
        "UPDATE users SET flag = true WHERE id = 5 AND score > '50.5'::numeric",
    );
    check(
        "UPDATE users SET flag = true WHERE score > (SELECT avg(score) FROM users)",
        &[(Kind::Scalar, "SELECT avg(score) FROM users")],
        &[value("numeric", None, None)],
        "UPDATE users SET flag = true WHERE score > NULL::numeric",
    );
    check(
        "DELETE FROM orders WHERE user_id IN (SELECT id FROM users WHERE score > 90)",
        &[(Kind::Array, "SELECT id FROM users WHERE score > 90")],
        &[value("bigint[]", Some("{1,NULL,3}"), Some("1"))],
        "DELETE FROM orders WHERE user_id = ANY('{1,NULL,3}'::bigint[])",
    );
    check(
        "DELETE FROM orders WHERE user_id NOT IN (SELECT id FROM users)",
        &[(Kind::Array, "SELECT id FROM users")],
        &[value("bigint[]", None, None)],
        "DELETE FROM orders WHERE NOT user_id = ANY('{}'::bigint[])",
    );
    check(
        "UPDATE orders SET total = 0 WHERE total > ALL (SELECT score FROM users WHERE name = 'it''s')",
        &[(Kind::Array, "SELECT score FROM users WHERE name = 'it''s'")],
        &[value("integer[]", Some("{7}"), Some("1"))],
        "UPDATE orders SET total = 0 WHERE total > ALL('{7}'::int[])",
    );
    check(
        "DELETE FROM users WHERE id = 3 AND EXISTS (SELECT 1 FROM orders WHERE total > 10)",
        &[(Kind::Exists, "SELECT 1 FROM orders WHERE total > 10")],
        &[value("boolean", Some("true"), None)],
        "DELETE FROM users WHERE id = 3 AND true::boolean",
    );
    check(
        "UPDATE users SET score = (SELECT max(total) FROM orders), name = 'x' WHERE id = 1",
        &[(Kind::Scalar, "SELECT max(total) FROM orders")],
        &[value("bpchar", Some("it's"), None)],
        "UPDATE users SET score = 'it''s'::bpchar, name = 'x' WHERE id = 1",
    );
    check(
        "INSERT INTO users (id, score) VALUES (9, (SELECT count(*) FROM orders))",
        &[(Kind::Scalar, "SELECT count(*) FROM orders")],
        &[value("bigint", Some("4"), None)],
        "INSERT INTO users (id, score) VALUES (9, '4'::bigint)",
    );
}

#[test]
fn only_what_reads_across_shards() {
    // The omnisharded subquery stays; the second one is carried.
    check(
        "UPDATE users SET flag = (SELECT count(*) > 0 FROM countries) WHERE score IN (SELECT total FROM orders)",
        &[(Kind::Array, "SELECT total FROM orders")],
        &[value("integer[]", Some("{1}"), Some("1"))],
        "UPDATE users SET flag = (SELECT count(*) > 0 FROM countries) WHERE score = ANY('{1}'::int[])",
    );
    not_carried(
        "UPDATE users SET flag = true WHERE code IN (SELECT code FROM countries)",
        "no subquery",
    );
    not_carried(
        "SELECT * FROM users WHERE id IN (SELECT 1)",
        "only one UPDATE",
    );
    not_carried(
        "WITH x AS (DELETE FROM orders RETURNING user_id) DELETE FROM users WHERE id IN (SELECT id FROM orders)",
        "only one UPDATE",
    );
    not_carried(
        "DELETE FROM users WHERE id IN (SELECT user_id FROM orders WHERE total > $1)",
        "parameters",
    );
}

#[test]
fn bound_subqueries_keep_their_parameters() {
    let sql = "UPDATE users SET score = $1 WHERE id = $2 AND score > (SELECT avg(score) FROM users WHERE name = $3)";
    assert!(matches!(planned(sql), Err(NotCarried::Parameters(_))));
    let plan = plan_bound(sql, sharding(), 0, MAX_ROWS).unwrap();
    let got: Vec<(Kind, &str)> = plan
        .carried
        .iter()
        .map(|c| (c.kind, c.subquery.as_str()))
        .collect();
    assert_eq!(
        got,
        [(Kind::Scalar, "SELECT avg(score) FROM users WHERE name = $3")]
    );
    assert!(
        plan.carried[0].sql.contains("name = $3"),
        "{}",
        plan.carried[0].sql
    );
    assert_eq!(
        plan.write_sql(&[value("numeric", Some("2.5"), None)])
            .unwrap(),
        "UPDATE users SET score = $1 WHERE id = $2 AND score > '2.5'::numeric"
    );
}

#[test]
fn results_that_cannot_be_carried() {
    let sql = "DELETE FROM orders WHERE user_id IN (SELECT id FROM users)";
    let plan = planned(sql).unwrap();
    let arrays = plan.write_sql(&[value("integer[]", Some("{{1},{2}}"), Some("2"))]);
    assert!(
        matches!(arrays, Err(NotCarried::ArrayOfArrays(_))),
        "{arrays:?}"
    );
    let records = plan.write_sql(&[value("record[]", Some("{}"), Some("1"))]);
    assert!(matches!(records, Err(NotCarried::Record(_))), "{records:?}");
    assert_eq!(plan.write_sql(&[]), Err(NotCarried::Mismatch));
}

pub(super) fn rows(names: &[&str], types: &[&str], rows: &[&[Option<&str>]]) -> Answer {
    Answer::Rows(Rows {
        names: names.iter().map(|n| (*n).into()).collect(),
        types: types.iter().map(|t| (*t).into()).collect(),
        rows: rows
            .iter()
            .map(|row| row.iter().map(|v| v.map(Into::into)).collect())
            .collect(),
    })
}
