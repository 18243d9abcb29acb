//! Rule 15 end to end: statements that reach sharded tables through views,
//! functions, DO blocks, triggers and sequences, routed against a cluster
//! with a catalog built from rows shaped as the proxy reads them
//! (`pg_get_viewdef`, `pg_get_functiondef`), one line per case.
//!
//! 2 databases; `big` and `big2` sharded by bigint `id` (key 1 -> 0, 3 ->
//! 1), `omni` omnisharded; `big_for(k)` a `[[sharded_functions]]` entry.
//! Expected routes as in `routes.rs`: `"any"`, `"all"`, `"N"`, `"w "` for
//! a write, `"err: text"` for an error whose message contains `text`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use router::catalog::expand::expand;
use router::catalog::{Catalog, CatalogRow};
use router::config::Config;
use router::route::{route_all, Overrides, ParamValue, Route};
use router::sharding::Sharding;

const CONFIG: &str = r#"
[[databases]]
name = "prod"
host = "127.0.0.1"
database_name = "db0"
shard = 0
[[databases]]
name = "prod"
host = "127.0.0.1"
database_name = "db1"
shard = 1
[[sharded_tables]]
database = "prod"
name = "big"
column = "id"
[[sharded_tables]]
database = "prod"
name = "big2"
column = "id"
[[omnisharded_tables]]
database = "prod"
tables = ["omni"]
[[sharded_functions]]
database = "prod"
name = "big_for"
argument = 1
table = "big"
"#;

fn function(name: &str, language: &str, body: &str) -> CatalogRow {
    returning(name, "bigint", language, body)
}

fn returning(name: &str, returns: &str, language: &str, body: &str) -> CatalogRow {
    CatalogRow::Function {
        schema: "public".into(),
        name: name.into(),
        language: language.into(),
        definition: format!(
            "CREATE OR REPLACE FUNCTION public.{name}()\n RETURNS {returns}\n LANGUAGE {language}\nAS $function${body}$function$\n"
        ),
    }
}

fn view(name: &str, definition: &str, columns: &[&str]) -> CatalogRow {
    CatalogRow::View {
        schema: "public".into(),
        name: name.into(),
        materialized: false,
        definition: definition.into(),
        columns: columns.iter().map(|c| format!("\"{c}\"")).collect(),
    }
}

fn trigger(table: &str, name: &str, function: &str) -> CatalogRow {
    CatalogRow::Trigger {
        schema: "public".into(),
        table: table.into(),
        name: name.into(),
        function: ("public".into(), function.into()),
    }
}

fn sequence(name: &str, owner: Option<(&str, &str)>) -> CatalogRow {
    CatalogRow::Sequence {
        schema: "public".into(),
        name: name.into(),
        owner: owner.map(|(t, c)| ("public".into(), t.into(), c.into())),
    }
}

fn sharding() -> &'static Arc<Sharding> {
    static SHARDING: OnceLock<Arc<Sharding>> = OnceLock::new();
    SHARDING.get_or_init(|| {
        let users = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";
        let config = Config::from_toml(CONFIG, users).expect("fixture config loads");
        let mut sharding = Sharding::clone(&config.clusters["prod"].sharding);
        let plpgsql = |name: &str, body: &str| function(name, "plpgsql", body);
        let trigger_function = |name: &str, body: &str| returning(name, "trigger", "plpgsql", body);
        sharding.catalog = Some(Arc::new(Catalog::from_rows([
            view("bigv", " SELECT big.id,\n    big.v\n   FROM big;", &["id", "v"]),
            view("bigv2", " SELECT bigv.id\n   FROM bigv;", &["id"]),
            view("bigagg", " SELECT count(*) AS n\n   FROM big;", &["n"]),
            view("renamed", " SELECT big.v AS id,\n    big.id AS v\n   FROM big;", &["id", "v"]),
            view("omniv", " SELECT omni.k\n   FROM omni;", &["k"]),
            CatalogRow::View {
                schema: "public".into(),
                name: "bigm".into(),
                materialized: true,
                definition: " SELECT count(*) AS n\n   FROM big;".into(),
                columns: vec!["n".into()],
            },
            CatalogRow::View {
                schema: "public".into(),
                name: "omnim".into(),
                materialized: true,
                definition: " SELECT omni.k\n   FROM omni;".into(),
                columns: vec!["k".into()],
            },
            sequence("s", None),
            sequence("big_id_seq", Some(("big", "id"))),
            sequence("omni_k_seq", Some(("omni", "k"))),
            function("nbig", "sql", "SELECT count(*) FROM big"),
            function("nomni", "sql", "SELECT count(*) FROM omni"),
            function("via_view", "sql", "SELECT count(*) FROM bigv"),
            // A `BEGIN ATOMIC` body, as `pg_get_functiondef` prints one.
            CatalogRow::Function {
                schema: "public".into(),
                name: "atomic".into(),
                language: "sql".into(),
                definition: "CREATE OR REPLACE FUNCTION public.atomic()\n RETURNS bigint\n LANGUAGE sql\nBEGIN ATOMIC\n SELECT count(*) AS count\n    FROM big;\nEND\n".into(),
            },
            plpgsql("add_omni", "BEGIN INSERT INTO omni VALUES (1); RETURN 1; END"),
            plpgsql("calls_nbig", "BEGIN RETURN nbig(); END"),
            plpgsql(
                "assigns",
                "DECLARE n bigint; BEGIN n := (SELECT count(*) FROM big); RETURN n; END",
            ),
            plpgsql("dyn", "BEGIN EXECUTE 'SELECT 1'; RETURN 1; END"),
            function("py", "plpython3u", "return 1"),
            function("compiled", "c", "whatever"),
            function("big_for", "sql", "SELECT count(*) FROM big WHERE id = $1"),
            trigger_function("touch", "BEGIN NEW.v := 1; RETURN NEW; END"),
            trigger_function("audit", "BEGIN INSERT INTO omni VALUES (NEW.id); RETURN NEW; END"),
            trigger_function("audit2", "BEGIN PERFORM count(*) FROM big; RETURN NEW; END"),
            trigger_function("stamp", "BEGIN NEW.v := nextval('s'); RETURN NEW; END"),
            trigger("big", "t1", "touch"),
            trigger("big2", "t2", "audit"),
            trigger("omni", "t3", "audit2"),
            trigger("stamped", "t4", "stamp"),
        ])));
        Arc::new(sharding)
    })
}

/// `sql`'s route, as in `routes.rs`.
fn route(sql: &str, params: &[&'static str]) -> String {
    route_with(sql, params, &Overrides::default())
}

fn route_with(sql: &str, params: &[&'static str], overrides: &Overrides) -> String {
    let tree = parser_ffi::ParseTree::parse(sql).unwrap();
    let summary = router::extract::summarize(&tree).unwrap();
    let params: Vec<ParamValue> = params
        .iter()
        .map(|p| ParamValue::Text(p.as_bytes()))
        .collect();
    match route_all(&summary, &params, overrides, sharding()) {
        Ok(routed) => {
            let route = match routed.route {
                Route::Any => "any".to_owned(),
                Route::All => "all".to_owned(),
                Route::Shard(s) => s.to_string(),
                Route::Shards(s) => s
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            if routed.write {
                format!("w {route}")
            } else {
                route
            }
        }
        Err(err) => format!("err: {err}"),
    }
}

#[track_caller]
fn check(sql: &str, params: &[&'static str], expected: &str) {
    let got = route(sql, params);
    match expected.strip_prefix("err: ") {
        Some(part) => assert!(
            got.starts_with("err: ") && got.contains(part),
            "{sql}: expected an error with {part:?}, got {got:?}"
        ),
        None => assert_eq!(got, expected, "{sql}"),
    }
}

/// The expansion of `sql`, then its route.
#[track_caller]
fn check_expanded(sql: &str, expanded: &str, expected: &str) {
    let text = expand(sql, sharding()).unwrap().expect("names a view");
    assert_eq!(text, expanded, "{sql}");
    check(&text, &[], expected);
}

#[test]
fn functions_that_reach_sharded_tables_are_refused() {
    check("SELECT nbig()", &[], "err: function nbig");
    check(
        "SELECT nbig()",
        &[],
        "err: it reaches big, which is sharded",
    );
    check("SELECT via_view()", &[], "err: reaches big");
    check("SELECT calls_nbig()", &[], "err: reaches big");
    check("SELECT assigns()", &[], "err: function assigns");
    check("SELECT atomic()", &[], "err: function atomic");
    check(
        "SELECT * FROM omni WHERE k = nbig()",
        &[],
        "err: function nbig",
    );
    check(
        "SELECT 1 FROM big WHERE id = 1 AND v < nbig()",
        &[],
        "err: nbig",
    );
    check("CALL nbig()", &[], "err: function nbig");
    // Code pgshard cannot read reaches anything.
    check("SELECT dyn()", &[], "err: built at run time");
    check("SELECT py()", &[], "err: plpython3u");
    // Postgres's own, and compiled ones, reach no table.
    check("SELECT compiled(), now(), pg_catalog.nbig()", &[], "any");
    // Overrides decide first.
    let shard_1 = Overrides {
        shard: Some(1),
        sharding_key: None,
    };
    assert_eq!(route_with("SELECT nbig()", &[], &shard_1), "1");
}

#[test]
fn functions_over_omnisharded_tables() {
    check("SELECT nomni()", &[], "any");
    check("SELECT nomni() FROM big WHERE id = 3", &[], "1");
    // A write of copies runs everywhere, from rows every database has.
    check("SELECT add_omni()", &[], "w all");
    check("SELECT add_omni() FROM omni", &[], "w all");
    check(
        "SELECT add_omni() FROM big WHERE id = 1",
        &[],
        "err: diverge",
    );
}

#[test]
fn sharded_functions_run_on_their_keys_shard() {
    check("SELECT big_for(1)", &[], "0");
    check("SELECT big_for(3)", &[], "1");
    check("SELECT big_for($1)", &["3"], "1");
    check(
        "SELECT * FROM big WHERE id = 3 AND v = big_for(3)",
        &[],
        "1",
    );
    check(
        "SELECT * FROM big WHERE id = 1 AND v = big_for(3)",
        &[],
        "err: function big_for",
    );
    check(
        "SELECT big_for(k) FROM omni",
        &[],
        "err: not a constant or parameter",
    );
}

#[test]
fn do_blocks() {
    check(
        "DO $$ BEGIN PERFORM count(*) FROM big; END $$",
        &[],
        "err: this DO block",
    );
    check(
        "DO $$ BEGIN INSERT INTO omni VALUES (1); END $$",
        &[],
        "w all",
    );
    check("DO $$ BEGIN RAISE NOTICE 'hi'; END $$", &[], "w any");
    check(
        "DO $$ BEGIN PERFORM nbig(); END $$",
        &[],
        "err: function nbig",
    );
    check(
        "DO $$ BEGIN EXECUTE 'DELETE FROM big'; END $$",
        &[],
        "err: built at run time",
    );
}

#[test]
fn triggers_on_written_tables() {
    check("INSERT INTO big (id, v) VALUES (1, 2)", &[], "w 0");
    check(
        "INSERT INTO big2 (id, v) VALUES (1, 2)",
        &[],
        "err: trigger t2 on big2",
    );
    check("UPDATE big2 SET v = 1 WHERE id = 3", &[], "err: trigger t2");
    check(
        "INSERT INTO omni VALUES (1)",
        &[],
        "err: trigger t3 on omni",
    );
    check(
        "INSERT INTO stamped (id) VALUES (1)",
        &[],
        "err: sequence s",
    );
}

#[test]
fn sequences_every_database_holds_draw_on_database_0() {
    check("SELECT nextval('s')", &[], "0");
    check("SELECT setval('s', 10)", &[], "0");
    check("SELECT nextval('public.s'::regclass)", &[], "0");
    check("SELECT nextval('not_known')", &[], "0");
    check("SELECT nextval($1)", &["s"], "0");
    check("SELECT nextval('omni_k_seq')", &[], "0");
    // A sharded table's own sequence keeps its meaning on each database.
    check("SELECT nextval('big_id_seq')", &[], "any");
    check("SELECT nextval($1)", &["big_id_seq"], "any");
    check("SELECT nextval('s'), v FROM big WHERE id = 1", &[], "0");
    check(
        "SELECT nextval('s'), v FROM big WHERE id = 3",
        &[],
        "err: sequence s",
    );
    check("SELECT nextval('s'), v FROM big", &[], "err: sequence s");
    check(
        "INSERT INTO other VALUES (nextval('s'))",
        &[],
        "err: sequence s",
    );
}

#[test]
fn views_are_read_as_their_queries() {
    check("SELECT count(*) FROM bigv", &[], "err: view bigv");
    check_expanded(
        "SELECT count(*) FROM bigv",
        "SELECT count(*) FROM (SELECT big.id,\n    big.v\n   FROM big) AS \"bigv\"",
        "all",
    );
    check_expanded(
        "SELECT * FROM public.bigv b JOIN omni ON omni.k = b.v WHERE b.id = 3",
        "SELECT * FROM (SELECT big.id,\n    big.v\n   FROM big) b JOIN omni ON omni.k = b.v WHERE b.id = 3",
        // The key passes through the view's column.
        "1",
    );
    check_expanded(
        "SELECT id FROM bigv2",
        "SELECT id FROM (SELECT bigv.id\n   FROM (SELECT big.id,\n    big.v\n   FROM big) AS \"bigv\") AS \"bigv2\"",
        "all",
    );
    check_expanded(
        "SELECT k FROM omniv",
        "SELECT k FROM (SELECT omni.k\n   FROM omni) AS \"omniv\"",
        "any",
    );
    let none = expand("SELECT * FROM big; DROP VIEW bigv", sharding()).unwrap();
    assert_eq!(none, None);
    let clash = expand("WITH bigv AS (SELECT 1) SELECT * FROM bigv", sharding());
    assert!(clash.unwrap_err().to_string().contains("CTE named bigv"));
    let only = expand("SELECT * FROM ONLY bigv", sharding());
    assert!(only.unwrap_err().to_string().contains("ONLY"));
}

#[test]
fn writes_through_views_write_their_table() {
    check_expanded(
        "INSERT INTO bigv (id, v) VALUES (3, 1)",
        "INSERT INTO \"big\" AS \"bigv\" (id, v) VALUES (3, 1)",
        "w 1",
    );
    check_expanded(
        "UPDATE bigv SET v = 2 WHERE id = 1",
        "UPDATE \"big\" AS \"bigv\" SET v = 2 WHERE id = 1",
        "w 0",
    );
    check_expanded(
        "DELETE FROM bigv AS x WHERE x.id = 3",
        "DELETE FROM \"big\" AS x WHERE x.id = 3",
        "w 1",
    );
    let renamed = expand("INSERT INTO renamed (id, v) VALUES (3, 1)", sharding());
    assert!(renamed
        .unwrap_err()
        .to_string()
        .contains("not the sharding key id"));
    let aggregate = expand("UPDATE bigagg SET n = 1", sharding());
    assert!(aggregate
        .unwrap_err()
        .to_string()
        .contains("one table's rows"));
}

#[test]
fn tables_created_from_queries_look_behind_names_too() {
    check("CREATE TABLE t AS SELECT nbig()", &[], "err: function nbig");
    check(
        "CREATE TABLE t AS SELECT nextval('s')",
        &[],
        "err: sequence s",
    );
}

#[test]
fn materialized_views_of_sharded_rows_the_config_does_not_shard_are_refused() {
    check("SELECT n FROM bigm", &[], "err: materialized view bigm");
    check(
        "SELECT n FROM bigm",
        &[],
        "err: add a [[sharded_tables]] entry for bigm",
    );
    check("SELECT k FROM omnim", &[], "any");
    // Its own name does not stand for its query: it is not expanded.
    assert_eq!(expand("SELECT n FROM bigm", sharding()).unwrap(), None);
}
