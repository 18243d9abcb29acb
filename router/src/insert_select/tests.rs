//! INSERT ... SELECT planned to move its rows, one line per case: the
//! target, its column list and the SELECT the coordinator runs; or why it
//! is not taken. `users` is sharded, `countries` omnisharded, `fam_1` a
//! family member.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use super::{is_insert_select, plan, Conflict, InsertSelect, NotMoved};
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

[[omnisharded_tables]]
database = "c"
tables = ["countries"]
"#;

fn sharding() -> &'static Sharding {
    static SHARDING: OnceLock<Sharding> = OnceLock::new();
    SHARDING.get_or_init(|| {
        let users = "[[users]]\nname = \"app\"\ndatabase = \"c\"\npassword = \"pw\"\n";
        let config = Config::from_toml(CONFIG, users).expect("the test config loads");
        Sharding::clone(&config.clusters["c"].sharding)
    })
}

fn planned(sql: &str) -> Result<InsertSelect, NotMoved> {
    plan(sql, sharding())
}

#[test]
fn plans_the_target_columns_and_select() {
    let p =
        planned("INSERT INTO users (id, \"Score\") SELECT g, g * 2 FROM generate_series(1, 9) g")
            .unwrap();
    assert_eq!(p.table, "\"users\"");
    assert_eq!(p.table_name, "users");
    assert_eq!(p.columns, Some(vec!["\"id\"".into(), "\"Score\"".into()]));
    assert_eq!(p.select_sql, "SELECT g, g * 2 FROM generate_series(1, 9) g");
    assert!(!p.copies);
    assert_eq!(
        p.copy_sql(&["\"id\"".into()]),
        "COPY \"users\" (\"id\") FROM STDIN"
    );
    assert_eq!(
        p.stage_sql("s", &["\"id\"".into()]),
        "CREATE TEMP TABLE pg_temp.s ON COMMIT DROP AS SELECT \"id\" FROM \"users\" WITH NO DATA"
    );
    let p =
        planned("INSERT INTO public.countries SELECT * FROM users ORDER BY id LIMIT 3").unwrap();
    assert_eq!(p.table, "\"public\".\"countries\"");
    assert_eq!(p.columns, None);
    assert!(p.copies);
    assert_eq!(p.select_sql, "SELECT * FROM users ORDER BY id LIMIT 3");
}

#[test]
fn moves_the_with_clause_onto_the_select() {
    let p = planned("WITH s AS (SELECT id FROM users) INSERT INTO users (id) SELECT id + 1 FROM s")
        .unwrap();
    assert_eq!(
        p.select_sql,
        "WITH s AS (SELECT id FROM users) SELECT id + 1 FROM s"
    );
}

#[test]
fn refuses_what_it_does_not_do_with_the_reason() {
    for (sql, why) in [
        (
            "INSERT INTO users (id) VALUES (1), (2)",
            NotMoved::NotInsertSelect,
        ),
        ("SELECT 1", NotMoved::NotInsertSelect),
        (
            "INSERT INTO users (id) SELECT 1; SELECT 1",
            NotMoved::NotInsertSelect,
        ),
        (
            "INSERT INTO users (id) SELECT 1 ON CONFLICT DO NOTHING",
            NotMoved::ConflictWithoutKey,
        ),
        (
            "INSERT INTO users (id, v) SELECT 1, 2 ON CONFLICT (v) DO NOTHING",
            NotMoved::ConflictWithoutKey,
        ),
        (
            "INSERT INTO users (id, v) SELECT 1, 2 ON CONFLICT (v) DO UPDATE SET v = 3",
            NotMoved::ConflictWithoutKey,
        ),
        (
            "INSERT INTO users (id, a[1]) SELECT 1, 2",
            NotMoved::Indirection("a".into()),
        ),
        (
            "INSERT INTO pg_catalog.pg_class SELECT 1",
            NotMoved::Family("pg_catalog.pg_class".into()),
        ),
    ] {
        assert_eq!(planned(sql), Err(why), "{sql}");
    }
}

#[test]
fn tells_insert_select_from_the_rest() {
    assert!(is_insert_select("INSERT INTO users SELECT 1"));
    assert!(is_insert_select(
        "WITH s AS (SELECT 1) INSERT INTO users (id) SELECT * FROM s"
    ));
    assert!(!is_insert_select(
        "INSERT INTO users (id) VALUES ((SELECT max(id) FROM users))"
    ));
    assert!(!is_insert_select("INSERT INTO users DEFAULT VALUES"));
    assert!(!is_insert_select("SELECT 1"));
    assert!(!is_insert_select("INSERT INTO users SELECT 1; SELECT 2"));
}

#[test]
fn stages_on_conflict_returning_and_overriding_with_the_clauses_unchanged() {
    for (sql, shard_sql) in [
        (
            "INSERT INTO users (id, v) SELECT g, 1 FROM t ON CONFLICT (id) DO NOTHING",
            "INSERT INTO users (\"id\", \"v\") SELECT \"id\", \"v\" FROM \"s\" \
             ON CONFLICT (id) DO NOTHING",
        ),
        (
            "INSERT INTO public.users AS u (id, v) SELECT g, 1 FROM t ON CONFLICT (v, id) \
             WHERE v > 0 DO UPDATE SET v = u.v + excluded.v WHERE u.v < 9 RETURNING u.id, v * 2",
            "INSERT INTO public.users AS u (\"id\", \"v\") SELECT \"id\", \"v\" FROM \
             \"public\".\"s\" ON CONFLICT (v, id) WHERE v > 0 DO UPDATE SET v = u.v + \
             excluded.v WHERE u.v < 9 RETURNING u.id, v * 2",
        ),
        (
            "INSERT INTO users (id, v) OVERRIDING SYSTEM VALUE SELECT g, 1 FROM t RETURNING *",
            "INSERT INTO users (\"id\", \"v\") OVERRIDING SYSTEM VALUE SELECT \"id\", \"v\" \
             FROM \"s\" RETURNING *",
        ),
        (
            "INSERT INTO countries (id, v) SELECT id, v FROM users ON CONFLICT DO NOTHING",
            "INSERT INTO countries (\"id\", \"v\") SELECT \"id\", \"v\" FROM \"s\" \
             ON CONFLICT DO NOTHING",
        ),
    ] {
        let p = planned(sql).unwrap();
        assert!(p.staged(), "{sql}");
        assert_eq!(p.conflict, Conflict::Checked, "{sql}");
        let columns = ["\"id\"".to_owned(), "\"v\"".to_owned()];
        assert_eq!(p.shard_insert_sql("s", &columns), shard_sql, "{sql}");
    }
    let p = planned("INSERT INTO users (id) SELECT 1 RETURNING id").unwrap();
    assert!(p.returning);
    assert_eq!(
        p.shard_stage_sql("s", &["\"id\"".into()]),
        "CREATE UNLOGGED TABLE \"s\" AS SELECT \"id\" FROM \"users\" WITH NO DATA"
    );
    assert_eq!(
        p.shard_copy_sql("s", &["\"id\"".into()]),
        "COPY \"s\" (\"id\") FROM STDIN"
    );
    assert_eq!(p.shard_drop_sql("s"), "DROP TABLE \"s\"");
    assert!(!planned("INSERT INTO users (id) SELECT 1").unwrap().staged());
}

#[test]
fn leaves_an_on_constraint_to_the_catalog() {
    let p =
        planned("INSERT INTO users (id) SELECT 1 ON CONFLICT ON CONSTRAINT users_pkey DO NOTHING")
            .unwrap();
    assert_eq!(
        p.conflict,
        Conflict::Constraint {
            name: "users_pkey".into(),
            keys: vec!["id".into()]
        }
    );
    assert_eq!(p.tail, " ON CONFLICT ON CONSTRAINT users_pkey DO NOTHING");
}
