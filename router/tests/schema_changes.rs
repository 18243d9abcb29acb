//! Schema changes that would leave a table's rows where its name or key no
//! longer says they are (route rule 14), and tables created from queries
//! over sharded rows (`router::create_as`): one line per statement, against
//! clusters loaded from `pgdog.toml` text.
//!
//! `big` and `big2` are sharded by `id` bigint in one key space, `items` by
//! `tenant` text; `bcs` (not yet created) by `id` like `big`, `bct` by `id`
//! with 4 shards (not co-located with `big`); `events_p<N>` is a family;
//! `countries` is omnisharded; other tables are unlisted. The `columns`
//! cluster also has a column-only entry for `customer_id`. Family keys 2 and
//! 3 live on databases 0 and 1 (bigint hash, modulus 2).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use router::config::Config;
use router::create_as::{check as check_create_as, CreateAsError};
use router::route::{route_all, Overrides, Route};
use router::sharding::Sharding;

const TABLES: &str = r#"
[[sharded_tables]]
database = "c"
name = "big"
column = "id"

[[sharded_tables]]
database = "c"
name = "big2"
column = "id"

[[sharded_tables]]
database = "c"
name = "bcs"
column = "id"

[[sharded_tables]]
database = "c"
name = "bct"
column = "id"
shard_count = 4

[[sharded_tables]]
database = "c"
name = "items"
column = "tenant"
data_type = "text"

[[sharded_tables]]
database = "c"
name_prefix = "events_p"

[[omnisharded_tables]]
database = "c"
tables = ["countries"]
"#;

const COLUMN_ONLY: &str = r#"
[[sharded_tables]]
database = "c"
column = "customer_id"
"#;

fn cluster(extra: &str, general: &str) -> Sharding {
    let mut toml = format!("[general]\n{general}\n");
    for shard in 0..2 {
        toml.push_str(&format!(
            "[[databases]]\nname = \"c\"\nhost = \"127.0.0.1\"\ndatabase_name = \"db{shard}\"\nshard = {shard}\n"
        ));
    }
    toml.push_str(TABLES);
    toml.push_str(extra);
    let users = "[[users]]\nname = \"app\"\ndatabase = \"c\"\npassword = \"pw\"\n";
    let config = Config::from_toml(&toml, users).expect("fixture config loads");
    Sharding::clone(&config.clusters["c"].sharding)
}

/// The route of `sql` on `sharding`: `"all"`, `"N"`, `"any"`, or `"err: text"`.
fn route(sharding: &Sharding, sql: &str) -> String {
    let tree = parser_ffi::ParseTree::parse(sql).unwrap();
    let summary = router::extract::summarize(&tree).unwrap();
    match route_all(&summary, &[], &Overrides::default(), sharding) {
        Ok(routed) => match routed.route {
            Route::All => "all".to_owned(),
            Route::Any => "any".to_owned(),
            Route::Shard(s) => s.to_string(),
            Route::Shards(s) => format!("{s:?}"),
        },
        Err(err) => format!("err: {err}"),
    }
}

#[track_caller]
fn check_route(sharding: &Sharding, sql: &str, expected: &str) {
    let got = route(sharding, sql);
    let ok = match expected.strip_prefix("err: ") {
        Some(text) => got.starts_with("err: ") && got.contains(text),
        None => got == expected,
    };
    assert!(ok, "{sql}\n    expected {expected}\n    got      {got}");
}

/// `create_as::check` of `sql`: `"none"`, `"keeps table.column"`, or
/// `"err: text"`.
#[track_caller]
fn check_query(sharding: &Sharding, sql: &str, expected: &str) {
    let got = match check_create_as(sql, sharding) {
        Ok(None) => "none".to_owned(),
        Ok(Some(kept)) => format!("keeps {}.{}", kept.table.name, kept.column),
        Err(err) => format!("err: {err}"),
    };
    let ok = match expected.strip_prefix("err: ") {
        Some(text) => got.starts_with("err: ") && got.contains(text),
        None => got == expected,
    };
    assert!(ok, "{sql}\n    expected {expected}\n    got      {got}");
}

#[test]
fn renaming_a_table_keeps_its_placement_or_is_refused() {
    let c = cluster("", "");
    check_route(&c, "ALTER TABLE big RENAME TO big_old", "err: renaming big to big_old is refused: big is sharded by id (a [[sharded_tables]] entry names it), but big_old is not in the sharding config, so omnisharded");
    check_route(&c, "ALTER TABLE big RENAME TO big2", "all");
    check_route(
        &c,
        "ALTER TABLE big RENAME TO bct",
        "err: renaming big to bct",
    );
    check_route(
        &c,
        "ALTER TABLE big RENAME TO items",
        "err: renaming big to items",
    );
    check_route(&c, "ALTER TABLE big SET SCHEMA archive", "all");
    check_route(
        &c,
        "ALTER TABLE public.big RENAME TO big_old",
        "err: renaming public.big to public.big_old",
    );
    check_route(
        &c,
        "ALTER TABLE events_p2 RENAME TO events_p3",
        "err: events_p2 is a member of table family events_p",
    );
    check_route(&c, "ALTER TABLE events_p2 RENAME TO events_p02", "0");
    check_route(
        &c,
        "ALTER TABLE events_p2 RENAME TO archive_2",
        "err: renaming events_p2 to archive_2",
    );
    check_route(&c, "ALTER TABLE foo RENAME TO bar", "all");
    check_route(
        &c,
        "ALTER TABLE foo RENAME TO big",
        "err: renaming foo to big",
    );
    check_route(
        &c,
        "ALTER TABLE foo RENAME TO events_p2",
        "err: renaming foo to events_p2",
    );
    check_route(&c, "ALTER TABLE countries RENAME TO nations", "all");
    check_route(
        &c,
        "ALTER MATERIALIZED VIEW big RENAME TO big_old",
        "err: renaming big to big_old",
    );
    check_route(&c, "ALTER FOREIGN TABLE big SET SCHEMA archive", "all");
    // Views are not placed by the config.
    check_route(&c, "ALTER VIEW big RENAME TO big_old", "all");
    // Overrides decide first (rule 2).
    let tree = parser_ffi::ParseTree::parse("ALTER TABLE big RENAME TO big_old").unwrap();
    let summary = router::extract::summarize(&tree).unwrap();
    let overrides = Overrides {
        shard: Some(1),
        sharding_key: None,
    };
    assert!(route_all(&summary, &[], &overrides, &c).is_ok());

    let sharded = cluster("", "unlisted_tables = \"sharded\"");
    check_route(&sharded, "ALTER TABLE foo RENAME TO bar", "all");
    check_route(&sharded, "ALTER TABLE countries RENAME TO nations", "err: countries is omnisharded ([[omnisharded_tables]] names it), but nations is not in the sharding config (so is treated as sharded by a key pgshard does not know)");
    let columns = cluster(COLUMN_ONLY, "");
    check_route(&columns, "ALTER TABLE foo RENAME TO bar", "all");
    check_route(
        &columns,
        "ALTER TABLE countries RENAME TO nations",
        "err: renaming countries to nations",
    );
}

#[test]
fn the_key_column_stays_as_the_config_names_it() {
    let c = cluster("", "");
    check_route(&c, "ALTER TABLE big RENAME COLUMN id TO big_id", "err: renaming column id of big is refused: id is the sharding key column that places big's rows");
    check_route(
        &c,
        "ALTER TABLE big RENAME id TO big_id",
        "err: renaming column id of big",
    );
    check_route(
        &c,
        "ALTER TABLE big DROP COLUMN id",
        "err: dropping column id of big",
    );
    check_route(
        &c,
        "ALTER TABLE big DROP COLUMN v, DROP COLUMN id CASCADE",
        "err: dropping column id of big",
    );
    check_route(&c, "ALTER TABLE big DROP COLUMN v", "all");
    check_route(&c, "ALTER TABLE big ADD COLUMN w int", "all");
    check_route(&c, "ALTER TABLE big RENAME COLUMN v TO w", "all");
    check_route(&c, "ALTER TABLE foo RENAME COLUMN id TO x", "all");
    check_route(&c, "ALTER TABLE foo ADD COLUMN customer_id bigint", "all");
    let columns = cluster(COLUMN_ONLY, "");
    check_route(
        &columns,
        "ALTER TABLE foo ADD COLUMN customer_id bigint",
        "err: adding column customer_id of foo",
    );
    check_route(
        &columns,
        "ALTER TABLE foo RENAME COLUMN customer_id TO c",
        "err: renaming column customer_id of foo",
    );
    check_route(
        &columns,
        "ALTER TABLE foo RENAME COLUMN c TO customer_id",
        "err: renaming a column to customer_id of foo",
    );
    check_route(
        &columns,
        "ALTER TABLE foo DROP COLUMN customer_id",
        "err: dropping column customer_id of foo",
    );
    check_route(
        &columns,
        "ALTER TABLE countries ADD COLUMN customer_id bigint",
        "all",
    );
    check_route(
        &columns,
        "ALTER TABLE big ADD COLUMN customer_id bigint",
        "all",
    );
}

#[test]
fn a_table_the_catalog_shows_without_a_key_column_does_not_get_one() {
    // The catalog read: `foo` has no customer_id, so it is omnisharded.
    let mut columns = cluster(COLUMN_ONLY, "");
    let mut keyless = router::sharding::KeylessTables::default();
    keyless.tables.insert(("public".into(), "foo".into()));
    columns.keyless = Some(std::sync::Arc::new(keyless));
    check_route(&columns, "INSERT INTO foo VALUES (1)", "all");
    check_route(&columns, "ALTER TABLE foo ADD COLUMN customer_id bigint", "err: adding column customer_id to foo is refused: foo has no customer_id column, so it is omnisharded (every shard holds a copy of all its rows); with a customer_id column the column-only [[sharded_tables]] entry would shard it by customer_id while every shard still held every row");
    check_route(
        &columns,
        "ALTER TABLE public.foo ADD COLUMN note text, ADD COLUMN customer_id bigint",
        "err: list it in [[omnisharded_tables]] and RELOAD first",
    );
    check_route(
        &columns,
        "ALTER TABLE foo RENAME COLUMN c TO customer_id",
        "err: renaming a column of foo to customer_id is refused: foo has no customer_id column",
    );
    check_route(&columns, "ALTER TABLE foo ADD COLUMN note text", "all");
    // Listed in [[omnisharded_tables]], it stays omnisharded with the column.
    check_route(
        &columns,
        "ALTER TABLE countries ADD COLUMN customer_id bigint",
        "all",
    );
}

#[test]
fn tables_created_from_queries_are_placed_as_their_rows() {
    let c = cluster("", "");
    let copies = "err: CREATE TABLE bc AS (or SELECT INTO, or a materialized view) reads big, which is sharded, but bc is not in the sharding config, so omnisharded (a copy on every shard): each shard would fill its copy of bc from its own rows of big, and the copies would differ; add a [[sharded_tables]] entry for bc";
    check_route(&c, "CREATE TABLE bc AS SELECT * FROM big", copies);
    check_route(
        &c,
        "CREATE TEMP TABLE bc AS SELECT * FROM big WHERE id < 100",
        copies,
    );
    check_route(
        &c,
        "CREATE UNLOGGED TABLE IF NOT EXISTS bc AS SELECT * FROM big",
        copies,
    );
    check_route(&c, "SELECT * INTO bc FROM big", copies);
    check_route(
        &c,
        "EXPLAIN ANALYZE CREATE TABLE bc AS SELECT * FROM big",
        copies,
    );
    check_route(
        &c,
        "CREATE MATERIALIZED VIEW bc AS SELECT count(*) AS n FROM big",
        "err: CREATE TABLE bc AS",
    );
    check_route(
        &c,
        "CREATE MATERIALIZED VIEW bc AS SELECT * FROM big WITH NO DATA",
        "err: CREATE TABLE bc AS",
    );
    check_route(
        &c,
        "CREATE TABLE bc AS SELECT * FROM countries c WHERE c.code IN (SELECT code FROM big)",
        "err: CREATE TABLE bc AS",
    );
    check_route(
        &c,
        "CREATE TABLE events_p2 AS SELECT * FROM big",
        "err: CREATE TABLE events_p2 AS",
    );
    // Empty, or from rows every database holds: fine.
    check_route(
        &c,
        "CREATE TABLE bc AS SELECT * FROM big WITH NO DATA",
        "all",
    );
    check_route(&c, "CREATE TABLE bc AS SELECT * FROM countries", "all");
    check_route(&c, "CREATE TABLE events_p2 AS SELECT * FROM countries", "0");
    check_route(&c, "EXPLAIN CREATE TABLE bc AS SELECT * FROM big", "all");
    // Sharded from copies: every shard would hold every row.
    check_route(&c, "CREATE TABLE bcs AS SELECT 1 AS id", "err: CREATE TABLE bcs AS (or SELECT INTO, or a materialized view) reads no sharded table, but bcs is sharded by id");
    check_route(
        &c,
        "CREATE TABLE bcs AS SELECT * FROM countries",
        "err: reads no sharded table",
    );
    // Sharded from sharded rows: every database creates its part (the
    // query is checked by create_as), joins and sublinks by rules 12-13.
    check_route(&c, "CREATE TABLE bcs AS SELECT * FROM big", "all");
    check_route(
        &c,
        "CREATE TABLE bcs AS SELECT * FROM big WHERE id = 5",
        "all",
    );
    check_route(
        &c,
        "CREATE TABLE bcs AS SELECT b.id FROM big b JOIN big2 c ON c.v = b.v",
        "err: joins big b, which is sharded, with big2 c",
    );
    check_route(&c, "CREATE TABLE bcs AS SELECT id, (SELECT count(*) FROM big2) AS n FROM big", "err: CREATE TABLE bcs AS (or SELECT INTO, or a materialized view): a subquery reads big2, which is sharded, without being correlated");
    check_route(&c, "CREATE TABLE bcs AS SELECT id, (SELECT count(*) FROM big2 c WHERE c.id = b.id) AS n FROM big b", "all");
    check_route(&c, "REFRESH MATERIALIZED VIEW bcs", "all");
    let sharded = cluster("", "unlisted_tables = \"sharded\"");
    check_route(
        &sharded,
        "CREATE TABLE bc AS SELECT * FROM big",
        "err: but no [[sharded_tables]] entry shards bc",
    );
    check_route(
        &sharded,
        "CREATE TABLE bc AS SELECT * FROM countries",
        "err: reads no sharded table, but bc is not in the sharding config",
    );
}

#[test]
fn the_query_keeps_the_key_and_is_exact_per_shard() {
    let c = cluster("", "");
    for sql in [
        "CREATE TABLE bcs AS SELECT * FROM big",
        "CREATE TABLE bcs AS SELECT id, v FROM big WHERE v > 3 ORDER BY v",
        "CREATE TABLE bcs AS SELECT b.id AS id FROM big b",
        "CREATE TABLE bcs (id, w) AS SELECT id, v FROM big",
        "CREATE TABLE bcs AS SELECT DISTINCT id, v FROM big",
        "CREATE TABLE bcs AS SELECT id, count(*) FROM big GROUP BY id",
        "CREATE TABLE bcs AS SELECT id, count(*) FROM big GROUP BY v, id",
        "CREATE TABLE bcs AS SELECT * FROM (SELECT * FROM big) s",
        "CREATE TABLE bcs AS SELECT s.x AS id FROM (SELECT id AS x FROM big) s",
        "CREATE TABLE bcs AS SELECT b.id, c.v FROM big b JOIN big2 c ON c.id = b.id",
        "CREATE TABLE bcs AS SELECT b.*, c.code FROM big b JOIN countries c ON c.code = b.country",
        "SELECT * INTO bcs FROM big",
        "EXPLAIN ANALYZE CREATE TABLE bcs AS SELECT * FROM big",
        "CREATE MATERIALIZED VIEW bcs AS SELECT id, sum(v) FROM big GROUP BY id",
    ] {
        check_query(&c, sql, "keeps big.id");
    }
    check_query(&c, "CREATE TABLE bcs AS SELECT v AS id FROM big", "err: its column id, which the config shards bcs by, is not the sharding key of a sharded table the query reads passed through unchanged");
    check_query(
        &c,
        "CREATE TABLE bcs (id, w) AS SELECT v, id FROM big",
        "err: is not the sharding key",
    );
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT id + 0 AS id FROM big",
        "err: is not the sharding key",
    );
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT v FROM big",
        "err: the query does not output id by name, the column the config shards bcs by",
    );
    check_query(&c, "CREATE TABLE bcs AS SELECT id FROM big LIMIT 5", "err: CREATE TABLE bcs AS (or SELECT INTO, or a materialized view): its rows need combining across shards");
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT id, row_number() OVER () FROM big",
        "err: a window function",
    );
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT id FROM big UNION ALL SELECT id FROM big2",
        "err: a set operation",
    );
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT max(id) AS id FROM big GROUP BY v",
        "err: its rows need combining across shards",
    );
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT DISTINCT ON (v) id, v FROM big",
        "err: its rows need combining across shards",
    );
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT * FROM (SELECT * FROM big LIMIT 3) s",
        "err: CREATE TABLE bcs AS",
    );
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT tenant AS id FROM items",
        "err: its column id passes through items's sharding key tenant, which is not co-located with bcs",
    );
    check_query(
        &c,
        "CREATE TABLE bct AS SELECT * FROM big",
        "err: its column id passes through big's sharding key id, which is not co-located with bct",
    );
    // Not checked here: what routing refuses, and copies.
    check_query(&c, "CREATE TABLE bc AS SELECT * FROM countries", "none");
    check_query(
        &c,
        "CREATE TABLE bcs AS SELECT * FROM big WITH NO DATA",
        "none",
    );
    check_query(&c, "SELECT * FROM big", "none");

    let columns = cluster(COLUMN_ONLY, "");
    check_query(
        &columns,
        "CREATE TABLE t2 AS SELECT customer_id, x FROM u",
        "keeps u.customer_id",
    );
    check_query(
        &columns,
        "CREATE TABLE t2 AS SELECT x FROM u",
        "err: the query does not output customer_id by name",
    );
    check_query(
        &columns,
        "CREATE TABLE t2 AS SELECT * FROM u",
        "err: the query does not output customer_id by name",
    );
    check_query(
        &columns,
        "CREATE TABLE t2 AS SELECT 1 AS customer_id",
        "err: reads no sharded table, but its column customer_id would make t2 sharded",
    );
    check_query(
        &columns,
        "CREATE TABLE t2 AS SELECT code FROM countries",
        "none",
    );
    check_query(
        &columns,
        "CREATE TABLE bcs AS SELECT * FROM big",
        "keeps big.id",
    );
}

/// The key a query keeps, for a table the config does not name yet.
#[test]
fn kept_key_of_a_query() {
    let c = cluster("", "");
    let sql = "SELECT b.id AS k, v FROM big b";
    let tree = parser_ffi::parse_protobuf(sql).unwrap();
    let summary = router::extract::summarize_protobuf(&tree).unwrap();
    let query = tree.stmts[0].stmt.as_ref().unwrap().node.as_ref().unwrap();
    let kept =
        router::create_as::kept_key(query, &[], "k", &summary.statements[0].tables, &c).unwrap();
    assert_eq!(
        (kept.table.name.as_str(), kept.column.as_str()),
        ("big", "id")
    );
    assert_eq!(kept.keys, c.tables[0].keys);
    let err = router::create_as::kept_key(query, &[], "v", &summary.statements[0].tables, &c);
    assert!(matches!(err, Err(CreateAsError::NotAKey { .. })));
}
