//! Unit tests of the catalog: names as sequence functions spell them, what
//! bodies reach (SQL, PL/pgSQL, DO, other languages), simple views. Routing
//! with a catalog is tested end to end in `router/tests/behind_names.rs`.

use super::reach::{of_code, of_function, of_view};
use super::*;
use crate::summary::{InlineCode, TableRef};

fn names(tables: &[TableRef]) -> Vec<&str> {
    tables.iter().map(|t| t.name.as_str()).collect()
}

fn plpgsql(body: &str) -> Reach {
    of_function(
        "plpgsql",
        &format!("CREATE FUNCTION f(k bigint) RETURNS bigint LANGUAGE plpgsql AS $f${body}$f$"),
    )
}

#[test]
fn names_as_regclass_literals_spell_them() {
    let split = |s: &str| split_spelled(s);
    assert_eq!(split("s"), Some((None, "s".into())));
    assert_eq!(split("S"), Some((None, "s".into())));
    assert_eq!(split(" app.S "), Some((Some("app".into()), "s".into())));
    assert_eq!(split("\"My\"\"Seq\""), Some((None, "My\"Seq".into())));
    assert_eq!(split("\"a.b\".c"), Some((Some("a.b".into()), "c".into())));
    assert_eq!(split("a.b.c"), None);
    assert_eq!(split(""), None);
    assert_eq!(split("\"open"), None);
    assert_eq!(split("a b"), None);
}

#[test]
fn sql_functions_reach_their_statements_tables() {
    let reach = of_function(
        "sql",
        "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ INSERT INTO log SELECT * FROM big; SELECT g(1) $$",
    );
    assert_eq!(names(&reach.reads), ["big", "log"]);
    assert_eq!(names(&reach.writes), ["log"]);
    assert_eq!(reach.calls.len(), 1);
    assert_eq!(reach.opaque, None);
    let returns = of_function(
        "sql",
        "CREATE FUNCTION f() RETURNS bigint LANGUAGE sql RETURN (SELECT count(*) FROM big)",
    );
    assert_eq!(names(&returns.reads), ["big"]);
    let bad = of_function(
        "sql",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELEC 1'",
    );
    assert!(bad.opaque.is_some());
}

#[test]
fn plpgsql_bodies_are_read_statement_by_statement() {
    let reach = plpgsql(
        "DECLARE n bigint; r record;
         BEGIN
           n := (SELECT count(*) FROM a WHERE id = k);
           SELECT count(*) INTO n FROM b;
           INSERT INTO c VALUES (k, n);
           IF n > (SELECT max(v) FROM d) THEN RETURN 1; END IF;
           FOR r IN SELECT * FROM e LOOP n := n + 1; END LOOP;
           PERFORM nextval('s');
           RETURN n + g();
         END",
    );
    let mut reads = names(&reach.reads);
    reads.sort_unstable();
    assert_eq!(reads, ["a", "b", "c", "d", "e"]);
    assert_eq!(names(&reach.writes), ["c"]);
    let mut calls: Vec<&str> = reach.calls.iter().map(|c| c.name.as_str()).collect();
    calls.sort_unstable();
    assert_eq!(calls, ["count", "count", "g", "max", "nextval"]);
    assert_eq!(reach.opaque, None);
    for dynamic in [
        "BEGIN EXECUTE 'SELECT 1'; RETURN 1; END",
        "DECLARE r record; BEGIN FOR r IN EXECUTE 'SELECT 1' LOOP END LOOP; RETURN 1; END",
    ] {
        let reach = plpgsql(dynamic);
        assert!(reach.opaque.unwrap().contains("run time"), "{dynamic}");
    }
    assert!(plpgsql("BEGIN RETURN; END IF").opaque.is_some());
}

#[test]
fn trigger_functions_and_do_blocks() {
    // libpg_query's rendering of a trigger function is not valid JSON.
    let trigger = of_function(
        "plpgsql",
        "CREATE FUNCTION t() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.v := 1; INSERT INTO audit VALUES (NEW.id); RETURN NEW; END$$",
    );
    assert_eq!(names(&trigger.writes), ["audit"]);
    assert_eq!(trigger.opaque, None);
    let code = |language: &str, body: &str| InlineCode {
        language: language.into(),
        body: body.into(),
    };
    let block = of_code(&code("plpgsql", "BEGIN DELETE FROM big; END"), 0);
    assert_eq!(names(&block.writes), ["big"]);
    let nested = of_code(&code("plpgsql", "BEGIN EXECUTE 'x'; END"), 0);
    assert!(nested.opaque.is_some());
    assert!(of_code(&code("plpython3u", "pass"), 0).opaque.is_some());
    assert!(of_code(&code("plpgsql", "BEGIN $pgshard_do$ END"), 0)
        .opaque
        .is_some());
}

#[test]
fn other_languages() {
    assert_eq!(of_function("c", "anything"), Reach::default());
    assert_eq!(of_function("internal", "anything"), Reach::default());
    assert!(of_function("plperl", "anything")
        .opaque
        .unwrap()
        .contains("plperl"));
}

#[test]
fn simple_views_are_one_tables_rows() {
    let simple = |query: &str| of_view(query).1;
    let view = simple("SELECT big.id, big.v AS w, big.v + 1 AS x FROM public.big WHERE big.v > 3")
        .unwrap();
    assert_eq!(view.base.name, "big");
    assert_eq!(view.base.schema.as_deref(), Some("public"));
    assert_eq!(
        view.columns,
        [
            ("id".to_owned(), Some("id".to_owned())),
            ("w".to_owned(), Some("v".to_owned())),
            ("x".to_owned(), None),
        ]
    );
    for not_simple in [
        "SELECT count(*) AS n FROM big",
        "SELECT DISTINCT id FROM big",
        "SELECT id FROM big GROUP BY id",
        "SELECT id FROM big LIMIT 1",
        "SELECT big.id FROM big JOIN c ON true",
        "SELECT id FROM big UNION SELECT id FROM c",
        "SELECT id, (SELECT 1) AS one FROM big",
        "SELECT id, row_number() OVER () AS n FROM big",
        "SELECT id FROM (SELECT id FROM big) s",
    ] {
        assert_eq!(simple(not_simple), None, "{not_simple}");
    }
    let (reach, _) = of_view("SELECT a.id FROM a JOIN b ON a.id = b.id");
    assert_eq!(names(&reach.reads), ["a", "b"]);
    assert!(reach.writes.is_empty());
}

#[test]
fn lookups_by_name_and_schema() {
    let catalog = Catalog::from_rows([
        CatalogRow::Sequence {
            schema: "app".into(),
            name: "s".into(),
            owner: None,
        },
        CatalogRow::View {
            schema: "public".into(),
            name: "v".into(),
            materialized: false,
            definition: " SELECT 1 AS one;".into(),
            columns: vec!["one".into()],
        },
        CatalogRow::View {
            schema: "public".into(),
            name: "m".into(),
            materialized: true,
            definition: " SELECT 1 AS one;".into(),
            columns: vec!["one".into()],
        },
    ]);
    assert!(catalog.sequence("s").is_some());
    assert!(catalog.sequence("app.s").is_some());
    assert!(catalog.sequence("public.s").is_none());
    assert!(catalog.sequence("v").is_none());
    let (_, view) = catalog.view(None, "v").unwrap();
    assert_eq!(view.query, "SELECT 1 AS one");
    assert!(catalog.view(Some("other"), "v").is_none());
    // A materialized view holds rows: it is read as a table, not expanded.
    assert!(catalog.view(None, "m").is_none());
    assert!(catalog.has_views());
    assert!(Catalog::default().is_empty());
}

#[test]
fn tables_columns_and_primary_keys() {
    let table = |schema: &str, name: &str, columns: &[&str], key: &[&str]| {
        CatalogRow::Table(Table {
            schema: schema.into(),
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
            primary_key: key.iter().map(|c| c.to_string()).collect(),
        })
    };
    let catalog = Catalog::from_rows([
        table("public", "users", &["id", "name", "Odd Col"], &["id"]),
        table("public", "events", &["day", "seq", "v"], &["seq", "day"]),
        table("app", "events", &["day", "seq", "v"], &["seq", "day"]),
        table("public", "log", &["at", "line"], &[]),
        table("app", "log", &["at", "line", "level"], &[]),
        // A later row of the same schema and name replaces the first.
        table("public", "users", &["id", "name"], &["id"]),
    ]);
    let columns = |schema, name| catalog.columns(schema, name).map(<[String]>::to_vec);
    assert_eq!(columns(None, "users").unwrap(), ["id", "name"]);
    assert_eq!(catalog.primary_key(None, "users").unwrap(), ["id"]);
    // Two schemas, one definition: the name means that definition.
    assert_eq!(catalog.primary_key(None, "events").unwrap(), ["seq", "day"]);
    // Two schemas, two definitions: unknown unless the schema is named.
    assert_eq!(columns(None, "log"), None);
    assert_eq!(
        columns(Some("app"), "log").unwrap(),
        ["at", "line", "level"]
    );
    assert_eq!(catalog.primary_key(Some("public"), "log").unwrap(), [""; 0]);
    assert_eq!(columns(Some("other"), "users"), None);
    assert_eq!(columns(None, "nope"), None);
    // Tables are not something routing looks behind.
    assert!(Catalog::from_rows([table("public", "t", &["a"], &[])]).is_empty());
}
