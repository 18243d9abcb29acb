//! Unit tests of the extractors: one-line `check(sql, expected)` cases over a
//! compact rendering of the zero-copy engine's summary (each also requiring
//! the protobuf engine's summary to be identical), a few exact-struct cases
//! (locations, value details) and pathological nesting on a small stack.
//!
//! The rendering: `kind[ write][ locking][ no_cols][ >target][ set(a,b)]
//! [tables] conditions`, with tables as `schema.name alias`, the conditions
//! joined by ` & `, values as `42`, `'text'`, `$1`, `NULL`, a cast as a
//! `::type` suffix; statements of a string joined by `; `.

use std::fmt::Write as _;

use super::*;
use crate::summary::{ColumnRef, SchemaChange, StatementKind, TableRef, Value, ValueSource};

fn summary_of(sql: &str) -> Summary {
    let tree = parser_ffi::ParseTree::parse(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let summary = summarize(&tree).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let mut canonical = summary.clone();
    canonical.canonicalize();
    assert_eq!(summary, canonical, "{sql}: not in canonical order");
    summary
}

/// The zero-copy engine's summary of `sql`, rendered, is `expected`, and the
/// protobuf engine's summary is the very same (each engine is the other's
/// oracle). Set `SHOW_DIFF` to list every rendering mismatch instead of
/// stopping at the first.
#[track_caller]
fn check(sql: &str, expected: &str) {
    let summary = summary_of(sql);
    let actual = render(&summary);
    if std::env::var_os("SHOW_DIFF").is_some() && actual != expected {
        eprintln!("DIFF\t{expected}\t{actual}");
        return;
    }
    assert_eq!(actual, expected, "{sql}");
    let protobuf = parser_ffi::parse_raw(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let protobuf = summarize_protobuf(&protobuf).unwrap_or_else(|err| panic!("{sql}: {err}"));
    assert_eq!(protobuf, summary, "{sql}: the protobuf engine disagrees");
}

fn render(summary: &Summary) -> String {
    let statements: Vec<String> = summary.statements.iter().map(render_statement).collect();
    statements.join("; ")
}

fn render_statement(stmt: &StatementSummary) -> String {
    let mut out = match &stmt.kind {
        StatementKind::Select => "select".to_owned(),
        StatementKind::Insert => "insert".to_owned(),
        StatementKind::Update => "update".to_owned(),
        StatementKind::Delete => "delete".to_owned(),
        StatementKind::Merge => "merge".to_owned(),
        StatementKind::Copy { to: true } => "copy_to".to_owned(),
        StatementKind::Copy { to: false } => "copy_from".to_owned(),
        StatementKind::Begin => "begin".to_owned(),
        StatementKind::Commit => "commit".to_owned(),
        StatementKind::Rollback => "rollback".to_owned(),
        StatementKind::TransactionOther => "txn".to_owned(),
        StatementKind::SetShard(value) => format!("set_shard({})", value.as_deref().unwrap_or("")),
        StatementKind::SetShardingKey(value) => {
            format!("set_key({})", value.as_deref().unwrap_or(""))
        }
        StatementKind::Session => "session".to_owned(),
        StatementKind::Ddl => "ddl".to_owned(),
        StatementKind::Explain => "explain".to_owned(),
        StatementKind::Do(code) => format!("do({})", code.language),
        StatementKind::Other => "other".to_owned(),
    };
    for (flag, name) in [
        (stmt.write, " write"),
        (stmt.locking, " locking"),
        (stmt.insert_without_columns, " no_cols"),
    ] {
        if flag {
            out.push_str(name);
        }
    }
    if let Some(target) = &stmt.target {
        write!(out, " >{}", render_table(target)).unwrap();
    }
    if !stmt.set_columns.is_empty() {
        write!(out, " set({})", stmt.set_columns.join(",")).unwrap();
    }
    let tables: Vec<String> = stmt.tables.iter().map(render_table).collect();
    write!(out, " [{}]", tables.join(", ")).unwrap();
    let conditions: Vec<String> = stmt.conditions.iter().map(render_condition).collect();
    if !conditions.is_empty() {
        write!(out, " {}", conditions.join(" & ")).unwrap();
    }
    if let Some(change) = &stmt.schema_change {
        write!(out, " {{{}}}", render_change(change)).unwrap();
    }
    for write in &stmt.cte_writes {
        let kind = if write.inserts { "inserts" } else { "writes" };
        write!(out, " {{cte {kind} {}", render_table(&write.table)).unwrap();
        if !write.set_columns.is_empty() {
            write!(out, " set({})", write.set_columns.join(",")).unwrap();
        }
        let conditions: Vec<String> = write.conditions.iter().map(render_condition).collect();
        if !conditions.is_empty() {
            write!(out, " {}", conditions.join(" & ")).unwrap();
        }
        out.push('}');
    }
    out
}

fn render_change(change: &SchemaChange) -> String {
    match change {
        SchemaChange::CreateAs {
            table,
            matview,
            with_data,
        } => {
            let what = if *matview { "matview" } else { "table" };
            let data = if *with_data { "" } else { " no data" };
            format!("create {what} {}{data}", render_table(table))
        }
        SchemaChange::Refresh { table } => format!("refresh {}", render_table(table)),
        SchemaChange::RenameTable { table, to } => {
            format!("rename {} to {}", render_table(table), render_table(to))
        }
        SchemaChange::Columns {
            table,
            renamed,
            dropped,
            added,
        } => {
            let mut out = format!("columns of {}", render_table(table));
            for (from, to) in renamed {
                write!(out, " rename {from} to {to}").unwrap();
            }
            for column in dropped {
                write!(out, " drop {column}").unwrap();
            }
            for column in added {
                write!(out, " add {column}").unwrap();
            }
            out
        }
    }
}

fn render_table(table: &TableRef) -> String {
    let mut out = String::new();
    if let Some(schema) = &table.schema {
        write!(out, "{schema}.").unwrap();
    }
    out.push_str(&table.name);
    if let Some(alias) = &table.alias {
        write!(out, " {alias}").unwrap();
    }
    out
}

fn render_condition(condition: &Condition) -> String {
    match condition {
        Condition::Eq { column, value } => {
            format!("{} = {}", render_column(column), render_value(value))
        }
        Condition::Any { column, value } => {
            format!("{} = ANY({})", render_column(column), render_value(value))
        }
        Condition::And(all) => render_list(all, " AND "),
        Condition::Or(any) => render_list(any, " OR "),
    }
}

fn render_list(conditions: &[Condition], separator: &str) -> String {
    let parts: Vec<String> = conditions.iter().map(render_condition).collect();
    format!("({})", parts.join(separator))
}

fn render_column(column: &ColumnRef) -> String {
    match &column.table {
        Some(table) => format!("{table}.{}", column.column),
        None => column.column.clone(),
    }
}

fn render_value(value: &Value) -> String {
    let mut out = match &value.source {
        ValueSource::Integer { value, .. } => value.to_string(),
        ValueSource::Text { text, .. } => format!("'{text}'"),
        ValueSource::Param(number) => format!("${number}"),
        ValueSource::Null => "NULL".to_owned(),
    };
    if let Some(cast) = &value.cast {
        write!(out, "::{cast}").unwrap();
    }
    out
}

fn column(table: Option<&str>, name: &str) -> ColumnRef {
    ColumnRef {
        table: table.map(str::to_owned),
        column: name.to_owned(),
    }
}

fn eq(column: ColumnRef, source: ValueSource, cast: Option<&str>) -> Condition {
    Condition::Eq {
        column,
        value: Value {
            source,
            cast: cast.map(str::to_owned),
        },
    }
}

fn integer(value: i64, location: i32) -> ValueSource {
    ValueSource::Integer { value, location }
}

fn text(text: &str, location: i32) -> ValueSource {
    ValueSource::Text {
        text: text.to_owned(),
        location,
    }
}

// ---- kind and write -------------------------------------------------------

#[test]
fn kinds_of_queries() {
    check("SELECT 1", "select []");
    check("SELECT * FROM t", "select [t]");
    check(
        "SELECT * INTO new_t FROM t",
        "select write [new_t, t] {create table new_t}",
    );
    check(
        "WITH d AS (DELETE FROM t WHERE id = 1 RETURNING *) SELECT * FROM d",
        "select write [t] id = 1 {cte writes t id = 1}",
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE id = 1) SELECT * FROM c",
        "select [t] id = 1",
    );
    check("VALUES (1), (2)", "select []");
    check("TABLE t", "select [t]");
    check(
        "INSERT INTO t (id) VALUES (1)",
        "insert write >t [t] t.id = 1",
    );
    check(
        "UPDATE t SET a = 1 WHERE id = 2",
        "update write >t set(a) [t] id = 2",
    );
    check("DELETE FROM t WHERE id = 3", "delete write >t [t] id = 3");
    check(
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
        "merge write >t set(v) [s, t]",
    );
    check(
        "MERGE INTO t USING (SELECT $1::int AS id) s ON t.id = s.id AND t.tenant = 5 \
         WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
        "merge write >t [t] t.tenant = 5",
    );
    check(
        "MERGE INTO t x USING u ON x.k = $1 WHEN MATCHED THEN DELETE",
        "merge write >t x [t x, u] x.k = $1",
    );
}

#[test]
fn kinds_of_copy() {
    check("COPY t FROM STDIN", "copy_from write >t [t]");
    check(
        "COPY t (a, b) FROM STDIN WITH (FORMAT csv)",
        "copy_from write >t [t]",
    );
    check("COPY public.t TO STDOUT", "copy_to [public.t]");
    check(
        "COPY (SELECT * FROM t WHERE id = 1) TO STDOUT",
        "copy_to [t] id = 1",
    );
    // `write` follows `is_from` alone, as the rules say.
    check(
        "COPY (DELETE FROM t WHERE id = 1 RETURNING *) TO STDOUT",
        "copy_to [t] id = 1",
    );
}

#[test]
fn kinds_of_explain() {
    check("EXPLAIN SELECT * FROM t WHERE id = 1", "explain [t] id = 1");
    check(
        "EXPLAIN ANALYZE UPDATE t SET a = 1 WHERE id = $1",
        "explain write >t set(a) [t] id = $1",
    );
    check(
        "EXPLAIN (COSTS OFF) INSERT INTO t (id) VALUES (1)",
        "explain write >t [t] t.id = 1",
    );
    check("EXPLAIN SELECT * FROM t FOR UPDATE", "explain locking [t]");
    check("EXPLAIN SELECT * INTO x FROM t", "explain write [t, x]");
    check(
        "EXPLAIN WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
        "explain write [t] {cte writes t}",
    );
}

#[test]
fn kinds_of_transaction_control() {
    check("BEGIN", "begin []");
    check("BEGIN ISOLATION LEVEL SERIALIZABLE", "begin []");
    check("BEGIN READ ONLY", "begin []");
    check(
        "START TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "begin []",
    );
    check("COMMIT", "commit []");
    check("END", "commit []");
    check("COMMIT AND CHAIN", "commit []");
    check("ROLLBACK", "rollback []");
    check("ABORT", "rollback []");
    check("SAVEPOINT s1", "txn []");
    check("RELEASE SAVEPOINT s1", "txn []");
    check("ROLLBACK TO SAVEPOINT s1", "txn []");
    check("PREPARE TRANSACTION 'x'", "txn []");
    check("COMMIT PREPARED 'x'", "txn []");
    check("ROLLBACK PREPARED 'x'", "txn []");
}

#[test]
fn kinds_of_set() {
    check("SET pgdog.shard = 1", "set_shard(1) []");
    check("SET pgdog.shard TO 12", "set_shard(12) []");
    check("SET pgdog.shard = '3'", "set_shard(3) []");
    check("SET LOCAL pgdog.shard = 2", "set_shard(2) []");
    check("SET SESSION pgdog.shard = 2", "set_shard(2) []");
    check("SET PGDOG.SHARD = 4", "set_shard(4) []");
    check("SET \"pgdog.shard\" = 5", "set_shard(5) []");
    check("SET pgdog.shard = on", "set_shard(on) []");
    check("RESET pgdog.shard", "set_shard() []");
    check("SET pgdog.shard TO DEFAULT", "set_shard() []");
    check("SET pgdog.sharding_key = 'abc'", "set_key(abc) []");
    check("SET pgdog.sharding_key TO 42", "set_key(42) []");
    check("SET pgdog.sharding_key = -5", "set_key(-5) []");
    check("SET pgdog.sharding_key = 1.5", "set_key(1.5) []");
    check(
        "SET pgdog.sharding_key = 9223372036854775807",
        "set_key(9223372036854775807) []",
    );
    check("RESET pgdog.sharding_key", "set_key() []");
    check("SET pgdog.sharding_key = 'a', 'b'", "session []");
    check("SET pgdog.shard FROM CURRENT", "session []");
    check("SET pgdog.other = 1", "session []");
    check("SET search_path = public", "session []");
    check("SET TIME ZONE 'UTC'", "session []");
    check("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "session []");
    check("RESET ALL", "session []");
    check("SHOW search_path", "session []");
    check("SHOW pgdog.shard", "session []");
    check("DISCARD ALL", "session []");
}

#[test]
fn kinds_of_schema_changes() {
    check("CREATE TABLE t (id int)", "ddl write [t]");
    check(
        "CREATE TABLE s.t (id int REFERENCES u (id))",
        "ddl write [u, s.t]",
    );
    check("CREATE TABLE t (LIKE u)", "ddl write [t, u]");
    check(
        "CREATE TABLE t_1 PARTITION OF t FOR VALUES IN (1)",
        "ddl write [t, t_1]",
    );
    check(
        "ALTER TABLE t ADD COLUMN x int",
        "ddl write [t] {columns of t add x}",
    );
    check("ALTER TABLE t RENAME TO u", "ddl write [t] {rename t to u}");
    check("DROP TABLE t", "ddl write []");
    check("CREATE INDEX i ON t (a)", "ddl write [t]");
    check("TRUNCATE t, u", "ddl write [t, u]");
    check("COMMENT ON TABLE t IS 'x'", "ddl write []");
    check("GRANT SELECT ON t TO bob", "ddl write [t]");
    check("REVOKE SELECT ON t FROM bob", "ddl write [t]");
    check(
        "CREATE VIEW v AS SELECT * FROM t WHERE id = 1",
        "ddl write [t, v]",
    );
    check(
        "CREATE TABLE x AS SELECT * FROM t",
        "ddl write [t, x] {create table x}",
    );
    check(
        "CREATE MATERIALIZED VIEW m AS SELECT 1",
        "ddl write [m] {create matview m}",
    );
    check("REFRESH MATERIALIZED VIEW m", "ddl write [m] {refresh m}");
    check("CREATE SCHEMA s", "ddl write []");
    check("CREATE SEQUENCE s", "ddl write [s]");
    check("CREATE EXTENSION pgcrypto", "ddl write []");
    check("CREATE TYPE mood AS ENUM ('sad', 'ok')", "ddl write []");
    check(
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "ddl write []",
    );
    check("ALTER SYSTEM SET work_mem = '1MB'", "ddl write []");
    check("CREATE ROLE bob", "ddl write []");
}

#[test]
fn kinds_of_everything_else() {
    check("CALL p(1)", "other write []");
    check("DO $$ BEGIN END $$", "do(plpgsql) write []");
    check("DO LANGUAGE sql 'SELECT 1'", "do(sql) write []");
    check("LISTEN c", "other []");
    check("NOTIFY c, 'x'", "other []");
    check("UNLISTEN *", "other []");
    check("VACUUM t", "other [t]");
    check("ANALYZE t", "other [t]");
    check("REINDEX TABLE t", "other [t]");
    check("CLUSTER t USING i", "other [t]");
    check("LOCK TABLE t IN ACCESS EXCLUSIVE MODE", "other [t]");
    check("CHECKPOINT", "other []");
    check(
        "PREPARE p AS SELECT * FROM t WHERE id = $1",
        "other [t] id = $1",
    );
    check("EXECUTE p(1)", "other []");
    check("DEALLOCATE p", "other []");
    check("DECLARE c CURSOR FOR SELECT * FROM t", "other [t]");
    check("FETCH 10 FROM c", "other []");
    check("CLOSE c", "other []");
    check("SET CONSTRAINTS ALL DEFERRED", "other []");
}

#[test]
fn several_statements_in_one_string() {
    check(
        "BEGIN; SELECT * FROM t WHERE id = 1; COMMIT",
        "begin []; select [t] id = 1; commit []",
    );
    check(
        "SET pgdog.shard = 1; INSERT INTO t VALUES (1);",
        "set_shard(1) []; insert write no_cols >t [t]",
    );
}

// ---- locking ----------------------------------------------------------------

#[test]
fn locking_clauses() {
    check(
        "SELECT * FROM t WHERE id = 1 FOR UPDATE",
        "select locking [t] id = 1",
    );
    check("SELECT * FROM t FOR NO KEY UPDATE", "select locking [t]");
    check("SELECT * FROM t FOR SHARE", "select locking [t]");
    check("SELECT * FROM t FOR KEY SHARE NOWAIT", "select locking [t]");
    check(
        "SELECT * FROM jobs ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1",
        "select locking [jobs]",
    );
    check(
        "SELECT * FROM t WHERE a IN (SELECT a FROM u FOR UPDATE)",
        "select locking [t, u]",
    );
    check(
        "INSERT INTO t (a) SELECT a FROM u FOR UPDATE",
        "insert write locking >t [t, u]",
    );
    // `OF o` names the FROM item, not a table.
    check(
        "SELECT * FROM orders o FOR UPDATE OF o",
        "select locking [orders o]",
    );
}

// ---- tables -------------------------------------------------------------------

#[test]
fn tables_with_schema_and_alias() {
    check("SELECT * FROM public.orders o", "select [public.orders o]");
    check("SELECT * FROM orders AS o", "select [orders o]");
    check("SELECT * FROM \"Orders\" \"O\"", "select [Orders O]");
    check("SELECT * FROM Orders", "select [orders]");
    check("SELECT * FROM db.s.t", "select [s.t]");
    check("SELECT * FROM t, t", "select [t]");
    check("SELECT * FROM t a, t b, t", "select [t, t a, t b]");
    check("SELECT * FROM ONLY t", "select [t]");
    check("SELECT * FROM t x (a, b)", "select [t x]");
}

#[test]
fn tables_in_joins_and_subqueries() {
    check(
        "SELECT * FROM orders o JOIN items i ON i.order_id = o.id",
        "select [items i, orders o]",
    );
    check(
        "SELECT * FROM a LEFT JOIN b USING (id) RIGHT JOIN c ON true FULL JOIN d ON true CROSS JOIN e",
        "select [a, b, c, d, e]",
    );
    check(
        "SELECT * FROM (SELECT * FROM t WHERE id = 1) s",
        "select [t] id = 1",
    );
    check(
        "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.t = t.id) s",
        "select [t, u]",
    );
    check("SELECT (SELECT max(x) FROM u) FROM t", "select [t, u]");
    check(
        "SELECT * FROM t WHERE a IN (SELECT a FROM u WHERE b = 2)",
        "select [t, u]",
    );
    check(
        "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.id = t.id AND u.k = 5) AND t.k = 5",
        "select [t, u] t.k = 5",
    );
    check(
        "SELECT * FROM t WHERE id = 1 UNION ALL SELECT * FROM u WHERE id = 2",
        "select [t, u] (t.id = 1 OR u.id = 2)",
    );
    check(
        "SELECT * FROM generate_series(1, 10) g, unnest($1::int[]) u",
        "select []",
    );
    check(
        "SELECT * FROM t WHERE x = ANY(SELECT y FROM u)",
        "select [t, u]",
    );
}

#[test]
fn tables_of_writes() {
    check(
        "INSERT INTO t (a) SELECT a FROM u WHERE k = 1",
        "insert write >t [t, u] u.k = 1",
    );
    check(
        "UPDATE t SET a = u.a FROM u WHERE t.id = u.id AND t.k = $1",
        "update write >t set(a) [t, u] t.k = $1",
    );
    check(
        "DELETE FROM t USING u WHERE t.id = u.id AND u.k = 1",
        "delete write >t [t, u] u.k = 1",
    );
    check(
        "UPDATE ONLY s.t AS x SET a = 1",
        "update write >s.t x set(a) [s.t x]",
    );
}

#[test]
fn cte_names_are_not_tables() {
    check("WITH x AS (SELECT * FROM t) SELECT * FROM x", "select [t]");
    check("WITH x AS (SELECT 1) SELECT * FROM x, x y", "select []");
    // A qualified name is a table even when a CTE has its name.
    check(
        "WITH x AS (SELECT 1) SELECT * FROM public.x",
        "select [public.x]",
    );
    // Defined anywhere in the statement.
    check(
        "SELECT * FROM (WITH c AS (SELECT 1) SELECT * FROM c) s, c",
        "select []",
    );
    check(
        "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
        "select []",
    );
    check(
        "WITH src AS (SELECT * FROM u) INSERT INTO t (id) SELECT id FROM src",
        "insert write >t [t, u]",
    );
    check(
        "WITH x AS (SELECT 1) UPDATE t SET a = 1 FROM x WHERE t.id = 1",
        "update write >t set(a) [t] t.id = 1",
    );
}

// ---- conditions ---------------------------------------------------------------

#[test]
fn equality() {
    check("SELECT * FROM t WHERE id = 1", "select [t] id = 1");
    check("SELECT * FROM t WHERE 1 = id", "select [t] id = 1");
    check("SELECT * FROM t WHERE t.id = $1", "select [t] t.id = $1");
    check("SELECT * FROM t WHERE $1 = t.id", "select [t] t.id = $1");
    check(
        "SELECT * FROM s.t WHERE s.t.id = 1",
        "select [s.t] t.id = 1",
    );
    check("SELECT * FROM t WHERE \"Id\" = 1", "select [t] Id = 1");
    check(
        "SELECT * FROM t WHERE id OPERATOR(pg_catalog.=) 1",
        "select [t] id = 1",
    );
    // Not key-like.
    check("SELECT * FROM t WHERE id = id2", "select [t]");
    check("SELECT * FROM t WHERE 1 = 1", "select [t]");
    check("SELECT * FROM t WHERE id > 1", "select [t]");
    check("SELECT * FROM t WHERE id <> 1", "select [t]");
    check("SELECT * FROM t WHERE id = abs($1)", "select [t]");
    check("SELECT * FROM t WHERE id = $1 + 1", "select [t]");
    check("SELECT * FROM t WHERE id IS NULL", "select [t]");
    check(
        "SELECT * FROM t WHERE id IS NOT DISTINCT FROM 1",
        "select [t]",
    );
    check("SELECT * FROM t WHERE id BETWEEN 1 AND 2", "select [t]");
    check("SELECT * FROM t WHERE id LIKE 'a%'", "select [t]");
    check("SELECT * FROM t WHERE t.* = 1", "select [t]");
    check("SELECT * FROM t WHERE (a, b) = (1, 2)", "select [t]");
    check("SELECT * FROM t WHERE flag", "select [t]");
    check("SELECT * FROM t WHERE id = (SELECT 1)", "select [t]");
}

#[test]
fn values() {
    check("SELECT * FROM t WHERE id = -7", "select [t] id = -7");
    check(
        "SELECT * FROM t WHERE id = 2147483647",
        "select [t] id = 2147483647",
    );
    check(
        "SELECT * FROM t WHERE id = -2147483648",
        "select [t] id = '-2147483648'",
    );
    check(
        "SELECT * FROM t WHERE id = 2147483648",
        "select [t] id = '2147483648'",
    );
    check(
        "SELECT * FROM t WHERE id = 9223372036854775807",
        "select [t] id = '9223372036854775807'",
    );
    check("SELECT * FROM t WHERE x = 1.5", "select [t] x = '1.5'");
    check(
        "SELECT * FROM t WHERE x = -1.5e3",
        "select [t] x = '-1.5e3'",
    );
    check(
        "SELECT * FROM t WHERE name = 'abc'",
        "select [t] name = 'abc'",
    );
    check(
        "SELECT * FROM t WHERE name = E'a\\nb'",
        "select [t] name = 'a\nb'",
    );
    check(
        "SELECT * FROM t WHERE name = 'it''s'",
        "select [t] name = 'it's'",
    );
    check("SELECT * FROM t WHERE id = NULL", "select [t] id = NULL");
    check(
        "SELECT * FROM t WHERE id = $65535",
        "select [t] id = $65535",
    );
    // Not values.
    check("SELECT * FROM t WHERE flag = true", "select [t]");
    check("SELECT * FROM t WHERE bits = B'101'", "select [t]");
    check("SELECT * FROM t WHERE bits = X'1F'", "select [t]");
    check("SELECT * FROM t WHERE id = - $1", "select [t]");
    check("SELECT * FROM t WHERE id = $65536", "select [t]");
    check("SELECT * FROM t WHERE id = $0", "select [t]");
    check("SELECT * FROM t WHERE id = DEFAULT", "select [t]");
}

#[test]
fn casts() {
    check(
        "SELECT * FROM t WHERE id = $3::int",
        "select [t] id = $3::int4",
    );
    check(
        "SELECT * FROM t WHERE id = '7'::bigint",
        "select [t] id = '7'::int8",
    );
    check(
        "SELECT * FROM t WHERE id = CAST($1 AS uuid)",
        "select [t] id = $1::uuid",
    );
    check(
        "SELECT * FROM t WHERE id = CAST($1 AS varchar(10))",
        "select [t] id = $1::varchar",
    );
    check(
        "SELECT * FROM t WHERE id = $1::text::bigint",
        "select [t] id = $1::int8",
    );
    check(
        "SELECT * FROM t WHERE id = $1::pg_catalog.int8",
        "select [t] id = $1::int8",
    );
    check(
        "SELECT * FROM t WHERE id = $1::\"UUID\"",
        "select [t] id = $1::uuid",
    );
    check(
        "SELECT * FROM t WHERE id = 7::smallint",
        "select [t] id = 7::int2",
    );
    check(
        "SELECT * FROM t WHERE id = int8 '7'",
        "select [t] id = '7'::int8",
    );
    check(
        "SELECT * FROM t WHERE id = NULL::int",
        "select [t] id = NULL::int4",
    );
    check(
        "SELECT * FROM t WHERE d = DATE '2024-01-01'",
        "select [t] d = '2024-01-01'::date",
    );
    // A cast column is not a column.
    check("SELECT * FROM t WHERE id::text = '1'", "select [t]");
    // A cast of something that is not a value is not a value.
    check("SELECT * FROM t WHERE id = now()::date", "select [t]");
}

#[test]
fn in_lists() {
    check(
        "SELECT * FROM t WHERE id IN (1, 2, 3)",
        "select [t] (id = 1 OR id = 2 OR id = 3)",
    );
    check("SELECT * FROM t WHERE id IN ($1)", "select [t] id = $1");
    check(
        "SELECT * FROM t WHERE t.id IN ($1, 'x'::text, NULL)",
        "select [t] (t.id = 'x'::text OR t.id = $1 OR t.id = NULL)",
    );
    check("SELECT * FROM t WHERE id IN (1, a)", "select [t]");
    check("SELECT * FROM t WHERE id IN (1, $1 + 1)", "select [t]");
    check("SELECT * FROM t WHERE id NOT IN (1, 2)", "select [t]");
    check("SELECT * FROM t WHERE (id) IN (1)", "select [t] id = 1");
}

#[test]
fn any_and_arrays() {
    check(
        "SELECT * FROM t WHERE id = ANY($1)",
        "select [t] id = ANY($1)",
    );
    check(
        "SELECT * FROM t WHERE id = ANY('{1,2}')",
        "select [t] id = ANY('{1,2}')",
    );
    check(
        "SELECT * FROM t WHERE id = ANY($1::bigint[])",
        "select [t] id = ANY($1::int8)",
    );
    check(
        "SELECT * FROM t WHERE id = ANY('{1,2}'::int[])",
        "select [t] id = ANY('{1,2}'::int4)",
    );
    check(
        "SELECT * FROM t WHERE id = ANY(ARRAY[1, 2])",
        "select [t] (id = 1 OR id = 2)",
    );
    check(
        "SELECT * FROM t WHERE id = ANY(ARRAY[$1])",
        "select [t] id = $1",
    );
    check(
        "SELECT * FROM t WHERE id = SOME(ARRAY[$1::int8, $2::int8])",
        "select [t] (id = $1::int8 OR id = $2::int8)",
    );
    check("SELECT * FROM t WHERE id = ANY(ARRAY[1, a])", "select [t]");
    check(
        "SELECT * FROM t WHERE id = ANY(ARRAY[1, 2]::int8[])",
        "select [t]",
    );
    check("SELECT * FROM t WHERE id = ANY(ids)", "select [t]");
    check("SELECT * FROM t WHERE $1 = ANY(ids)", "select [t]");
    check("SELECT * FROM t WHERE id <> ANY($1)", "select [t]");
    check("SELECT * FROM t WHERE id = ALL($1)", "select [t]");
    check("SELECT * FROM t WHERE id::int8 = ANY($1)", "select [t]");
}

#[test]
fn and_or_not() {
    check(
        "SELECT * FROM t WHERE a = 1 AND b = 2 AND c > 3",
        "select [t] (a = 1 AND b = 2)",
    );
    check("SELECT * FROM t WHERE a = 1 AND b > 2", "select [t] a = 1");
    check("SELECT * FROM t WHERE a > 1 AND b > 2", "select [t]");
    check(
        "SELECT * FROM t WHERE a = 1 OR a = 2",
        "select [t] (a = 1 OR a = 2)",
    );
    check("SELECT * FROM t WHERE a = 1 OR b > 2", "select [t]");
    check(
        "SELECT * FROM t WHERE a > 1 OR a = 2 OR a = 3",
        "select [t]",
    );
    check(
        "SELECT * FROM t WHERE (a = 1 OR b > 2) AND c = 3",
        "select [t] c = 3",
    );
    check(
        "SELECT * FROM t WHERE (a = 1 AND b > 2) OR c = 3",
        "select [t] (a = 1 OR c = 3)",
    );
    check(
        "SELECT * FROM t WHERE (a = 1 AND b = 2) OR (a = 3 AND b = 4)",
        "select [t] ((a = 1 AND b = 2) OR (a = 3 AND b = 4))",
    );
    check(
        "SELECT * FROM t WHERE (a > 1 AND b > 2) OR c = 3",
        "select [t]",
    );
    // Nested ANDs keep their shape.
    check(
        "SELECT * FROM t WHERE a = 1 AND (b = 2 AND c = 3)",
        "select [t] (a = 1 AND (b = 2 AND c = 3))",
    );
    check("SELECT * FROM t WHERE NOT a = 1", "select [t]");
    check("SELECT * FROM t WHERE NOT (a = 1 OR a = 2)", "select [t]");
    check(
        "SELECT * FROM t WHERE NOT (a = 1) AND b = 2",
        "select [t] b = 2",
    );
    check("SELECT * FROM t WHERE ((((a = 1))))", "select [t] a = 1");
}

#[test]
fn join_quals() {
    check(
        "SELECT * FROM t JOIN u ON u.tid = t.id AND u.k = 1 WHERE t.k = 2",
        "select [t, u] (t.k = 2 AND u.k = 1)",
    );
    check(
        "SELECT * FROM t INNER JOIN u ON u.k = $1",
        "select [t, u] u.k = $1",
    );
    check(
        "SELECT * FROM t LEFT JOIN u ON u.tid = t.id AND u.k = 1 WHERE t.k = 2",
        "select [t, u] t.k = 2",
    );
    check(
        "SELECT * FROM t JOIN u ON u.k = 1 JOIN v ON v.k = 2",
        "select [t, u, v] (u.k = 1 AND v.k = 2)",
    );
    check(
        "SELECT * FROM t JOIN u ON u.k = 1 LEFT JOIN v ON v.k = 2",
        "select [t, u, v] u.k = 1",
    );
    check(
        "SELECT * FROM t LEFT JOIN (u JOIN v ON v.k = 2) ON true",
        "select [t, u, v]",
    );
    check(
        "SELECT * FROM (t JOIN u ON t.k = 1) RIGHT JOIN v ON v.k = 2",
        "select [t, u, v]",
    );
    check(
        "SELECT * FROM v RIGHT JOIN (t JOIN u ON t.k = 1) ON true",
        "select [t, u, v] t.k = 1",
    );
    check("SELECT * FROM t FULL JOIN u ON u.k = 1", "select [t, u]");
    check("SELECT * FROM t JOIN u USING (k)", "select [t, u]");
    check("SELECT * FROM t NATURAL JOIN u", "select [t, u]");
    check(
        "SELECT * FROM t CROSS JOIN u WHERE u.k = 1",
        "select [t, u] u.k = 1",
    );
    check("SELECT * FROM t, u WHERE t.k = 1", "select [t, u] t.k = 1");
    check(
        "SELECT * FROM t, u JOIN v ON v.k = 3 WHERE t.k = 1",
        "select [t, u, v] (t.k = 1 AND v.k = 3)",
    );
    // The WHERE's AND and the ON's AND are AND-ed as they are.
    check(
        "SELECT * FROM t JOIN u ON u.a = 1 AND u.b = 2 WHERE t.k = 3",
        "select [t, u] (t.k = 3 AND (u.a = 1 AND u.b = 2))",
    );
    check(
        "SELECT * FROM t JOIN u ON u.a = 1 OR u.a > 2 WHERE t.k = 3",
        "select [t, u] t.k = 3",
    );
    // A subquery's join quals belong to the subquery's level.
    check(
        "SELECT * FROM t JOIN (SELECT * FROM u JOIN v ON v.k = 1) s ON s.k = 2",
        "select [t, u, v] v.k = 1 & (u.k = 2 AND v.k = 2)",
    );
}

#[test]
fn update_delete_merge_levels() {
    check(
        "UPDATE t SET v = v + 1 WHERE id = $1 RETURNING v",
        "update write >t set(v) [t] id = $1",
    );
    check(
        "DELETE FROM t WHERE id = $1 RETURNING *",
        "delete write >t [t] id = $1",
    );
    check(
        "UPDATE t SET v = 1 WHERE CURRENT OF c",
        "update write >t set(v) [t]",
    );
    check("DELETE FROM t", "delete write >t [t]");
    check(
        "UPDATE t SET v = (SELECT v FROM u WHERE u.k = 1) WHERE k = 2",
        "update write >t set(v) [t, u] t.k = 2",
    );
    check(
        "DELETE FROM t WHERE id IN (SELECT id FROM u WHERE k = $1) AND k = $1",
        "delete write >t [t, u] t.k = $1",
    );
}

#[test]
fn insert_values() {
    check(
        "INSERT INTO t (id, name) VALUES (1, 'a')",
        "insert write >t [t] (t.id = 1 AND t.name = 'a')",
    );
    check(
        "INSERT INTO t (id) VALUES ($1)",
        "insert write >t [t] t.id = $1",
    );
    check(
        "INSERT INTO t (id, name) VALUES ($1, $2), ($3, $4)",
        "insert write >t [t] ((t.id = $1 AND t.name = $2) OR (t.id = $3 AND t.name = $4))",
    );
    check(
        "INSERT INTO t (id) VALUES (1), (2)",
        "insert write >t [t] (t.id = 1 OR t.id = 2)",
    );
    check(
        "INSERT INTO t (id, x) VALUES (1, now())",
        "insert write >t [t] t.id = 1",
    );
    check(
        "INSERT INTO t (id, x) VALUES (1, now()), (now(), now())",
        "insert write >t [t]",
    );
    check("INSERT INTO t (id) VALUES (DEFAULT)", "insert write >t [t]");
    check(
        "INSERT INTO t AS x (id) VALUES (1)",
        "insert write >t x [t x] x.id = 1",
    );
    check(
        "INSERT INTO public.t (id) VALUES (1)",
        "insert write >public.t [public.t] t.id = 1",
    );
    check(
        "INSERT INTO t (id) VALUES ($1::bigint)",
        "insert write >t [t] t.id = $1::int8",
    );
    check(
        "INSERT INTO t (id) VALUES (-3), ('x'), (NULL)",
        "insert write >t [t] (t.id = -3 OR t.id = 'x' OR t.id = NULL)",
    );
    check("INSERT INTO t (arr[1]) VALUES (1)", "insert write >t [t]");
    check(
        "INSERT INTO t (arr[1], id) VALUES (1, 2)",
        "insert write >t [t] t.id = 2",
    );
    check(
        "INSERT INTO t (id) VALUES ((SELECT max(id) FROM u WHERE k = 1))",
        "insert write >t [t, u]",
    );
    check(
        "WITH v AS (SELECT 1) INSERT INTO t (id) VALUES (1)",
        "insert write >t [t] t.id = 1",
    );
    check(
        "INSERT INTO t (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v",
        "insert write >t [t] (t.id = $1 AND t.v = $2)",
    );
    check(
        "INSERT INTO t (id) VALUES ($1) ON CONFLICT DO NOTHING",
        "insert write >t [t] t.id = $1",
    );
    check(
        "INSERT INTO t (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET v = 1 WHERE t.k = 3",
        "insert write >t [t] t.id = $1",
    );
    check(
        "INSERT INTO t (id) VALUES ($1) RETURNING id",
        "insert write >t [t] t.id = $1",
    );
}

#[test]
fn insert_without_columns_or_values() {
    check("INSERT INTO t VALUES (1, 2)", "insert write no_cols >t [t]");
    check(
        "INSERT INTO t VALUES ($1), ($2)",
        "insert write no_cols >t [t]",
    );
    check("INSERT INTO t DEFAULT VALUES", "insert write >t [t]");
    check("INSERT INTO t SELECT * FROM u", "insert write >t [t, u]");
    check(
        "INSERT INTO t SELECT * FROM u WHERE k = 1",
        "insert write >t [t, u] u.k = 1",
    );
    check(
        "WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM x",
        "select write no_cols [t] {cte inserts t}",
    );
    check(
        "WITH x AS (INSERT INTO t (id) VALUES (1) RETURNING *) SELECT * FROM x",
        "select write [t] t.id = 1 {cte inserts t t.id = 1}",
    );
}

// ---- target and set_columns -------------------------------------------------------

#[test]
fn targets() {
    check(
        "INSERT INTO public.t AS x (k) VALUES (1)",
        "insert write >public.t x [public.t x] x.k = 1",
    );
    check(
        "DELETE FROM s.t WHERE k = 1",
        "delete write >s.t [s.t] k = 1",
    );
    check("COPY t FROM STDIN", "copy_from write >t [t]");
    check("COPY t TO STDOUT", "copy_to [t]");
    check(
        "MERGE INTO t x USING u ON x.k = u.k WHEN MATCHED THEN DELETE",
        "merge write >t x [t x, u]",
    );
    check("EXPLAIN DELETE FROM t", "explain write >t [t]");
    // Never a CTE's, nor a wrapped statement's other than EXPLAIN's.
    check(
        "WITH d AS (DELETE FROM t WHERE k = 1 RETURNING *) SELECT * FROM d",
        "select write [t] k = 1 {cte writes t k = 1}",
    );
    check(
        "WITH d AS (DELETE FROM t RETURNING *) INSERT INTO x SELECT * FROM d",
        "insert write >x [t, x] {cte writes t}",
    );
    check("PREPARE p AS DELETE FROM t", "other [t]");
    check(
        "SELECT * INTO x FROM t",
        "select write [t, x] {create table x}",
    );
    check(
        "CREATE TABLE x AS SELECT 1",
        "ddl write [x] {create table x}",
    );
    // The written table, even where a CTE has its name (a CTE cannot be
    // written; tables leaves the name out by its own rule).
    check(
        "WITH t AS (SELECT 1) INSERT INTO t (k) VALUES (1)",
        "insert write >t []",
    );
}

#[test]
fn set_columns() {
    check(
        "UPDATE t SET b = 1, a = 2 WHERE k = 1",
        "update write >t set(a,b) [t] k = 1",
    );
    check(
        "UPDATE t x SET (b, a) = (1, 2), a = 3",
        "update write >t x set(a,b) [t x]",
    );
    check(
        "UPDATE t SET (a, b) = (SELECT 1, 2)",
        "update write >t set(a,b) [t]",
    );
    check(
        "UPDATE t SET arr[1] = 1, comp.f = 2",
        "update write >t set(arr,comp) [t]",
    );
    check("EXPLAIN UPDATE t SET a = 1", "explain write >t set(a) [t]");
    check(
        "MERGE INTO t USING u ON t.k = u.k \
         WHEN MATCHED AND u.x = 1 THEN UPDATE SET a = 1 \
         WHEN MATCHED THEN UPDATE SET b = 2 \
         WHEN MATCHED THEN DELETE \
         WHEN NOT MATCHED THEN INSERT (k, c) VALUES (u.k, 1) \
         WHEN NOT MATCHED BY SOURCE THEN UPDATE SET d = 1",
        "merge write >t set(a,b,d) [t, u]",
    );
    // Not an upsert's, a CTE's or a prepared statement's.
    check(
        "INSERT INTO t (k, v) VALUES (1, 2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
        "insert write >t [t] (t.k = 1 AND t.v = 2)",
    );
    check(
        "WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM u",
        "select write [t] {cte writes t set(a)}",
    );
    check("PREPARE p AS UPDATE t SET a = 1", "other [t]");
}

// ---- which levels contribute ---------------------------------------------------

#[test]
fn sublinks_add_nothing() {
    for sql in [
        "SELECT * FROM t WHERE a IN (SELECT a FROM u WHERE k = 4)",
        "SELECT * FROM t WHERE a NOT IN (SELECT a FROM u WHERE k = 4)",
        "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE k = 4)",
        "SELECT * FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE k = 4)",
        "SELECT * FROM t WHERE a = ANY(SELECT a FROM u WHERE k = 4)",
        "SELECT * FROM t WHERE a > ALL(SELECT a FROM u WHERE k = 4)",
        "SELECT * FROM t WHERE a = (SELECT a FROM u WHERE k = 4)",
        "SELECT (SELECT a FROM u WHERE k = 4) FROM t",
        "SELECT ARRAY(SELECT a FROM u WHERE k = 4) FROM t",
        "SELECT a FROM t GROUP BY a HAVING count(*) > (SELECT count(*) FROM u WHERE k = 4)",
        "SELECT * FROM t WHERE a IN (SELECT a FROM (SELECT * FROM u WHERE k = 4) s)",
        "SELECT * FROM t WHERE a IN (WITH c AS (SELECT * FROM u WHERE k = 4) SELECT a FROM c)",
    ] {
        check(sql, "select [t, u]");
    }
    check(
        "SELECT * FROM t JOIN v ON v.a = (SELECT a FROM u WHERE k = 4)",
        "select [t, u, v]",
    );
    check(
        "SELECT * FROM t WHERE k = 3 OR id IN (SELECT id FROM u WHERE k = 4)",
        "select [t, u]",
    );
    check(
        "SELECT * FROM t WHERE k = 3 AND id IN (SELECT id FROM u WHERE k = 4)",
        "select [t, u] t.k = 3",
    );
    check(
        "UPDATE t SET a = (SELECT a FROM u WHERE k = 4) WHERE k = 3 RETURNING (SELECT 1 FROM v WHERE k = 5)",
        "update write >t set(a) [t, u, v] t.k = 3",
    );
    check(
        "INSERT INTO t (k, a) VALUES (3, (SELECT a FROM u WHERE k = 4))",
        "insert write >t [t, u] t.k = 3",
    );
    // A CTE referenced only from a sublink adds nothing.
    check(
        "WITH c AS (SELECT * FROM u WHERE k = 4) SELECT * FROM t WHERE a IN (SELECT a FROM c)",
        "select [t, u]",
    );
}

#[test]
fn from_subqueries_through_preserved_sides() {
    check(
        "SELECT * FROM (SELECT * FROM t WHERE k = 1) s, (SELECT * FROM u WHERE k = 2) r",
        "select [t, u] t.k = 1 & u.k = 2",
    );
    check(
        "SELECT * FROM v, LATERAL (SELECT * FROM t WHERE t.k = 1 AND t.a = v.a) s",
        "select [t, v] t.k = 1",
    );
    check(
        "SELECT * FROM v LEFT JOIN (SELECT * FROM t WHERE k = 1) s ON true",
        "select [t, v]",
    );
    check(
        "SELECT * FROM (SELECT * FROM t WHERE k = 1) s LEFT JOIN v ON true",
        "select [t, v] t.k = 1",
    );
    check(
        "SELECT * FROM (SELECT * FROM t WHERE k = 1) s RIGHT JOIN v ON true",
        "select [t, v]",
    );
    check(
        "SELECT * FROM (SELECT * FROM t WHERE k = 1) s FULL JOIN v ON true",
        "select [t, v]",
    );
    check(
        "SELECT * FROM (SELECT * FROM (SELECT * FROM t WHERE k = 1) a WHERE a.b = 2) s WHERE s.c = 3",
        "select [t] b = 2 & c = 3 & k = 1",
    );
    check(
        "UPDATE t SET a = 1 FROM u JOIN v ON v.k = 2 WHERE t.id = u.id AND t.k = 1",
        "update write >t set(a) [t, u, v] (t.k = 1 AND v.k = 2)",
    );
    check(
        "UPDATE t SET a = 1 FROM (SELECT * FROM u WHERE k = 2) s WHERE t.id = s.id",
        "update write >t set(a) [t, u] u.k = 2",
    );
    check(
        "DELETE FROM t USING u JOIN v ON v.k = 2 LEFT JOIN w ON w.k = 3 WHERE t.k = 1",
        "delete write >t [t, u, v, w] (t.k = 1 AND v.k = 2)",
    );
    check(
        "MERGE INTO t USING (SELECT * FROM u WHERE u.k = 3) s ON t.id = s.id WHEN MATCHED THEN DELETE",
        "merge write >t [t, u] u.k = 3",
    );
    check(
        "MERGE INTO t USING u JOIN v ON v.k = 2 ON t.k = 1 WHEN MATCHED THEN DELETE",
        "merge write >t [t, u, v] (t.k = 1 AND v.k = 2)",
    );
}

#[test]
fn set_operations() {
    check(
        "SELECT * FROM t WHERE k = 1 UNION SELECT * FROM u WHERE k = 2",
        "select [t, u] (t.k = 1 OR u.k = 2)",
    );
    check(
        "SELECT * FROM t WHERE k = 1 UNION ALL SELECT * FROM u",
        "select [t, u]",
    );
    check(
        "SELECT * FROM t WHERE k = 1 AND a = 2 UNION SELECT * FROM u WHERE k = 3",
        "select [t, u] (u.k = 3 OR (t.a = 2 AND t.k = 1))",
    );
    check(
        "SELECT * FROM (SELECT * FROM t WHERE k = 1) s WHERE s.a = 2 UNION SELECT * FROM u WHERE k = 3",
        "select [t, u] (u.k = 3 OR (t.a = 2 AND t.k = 1))",
    );
    // Nested set operations combine the same way.
    check(
        "SELECT 1 FROM t WHERE k = 1 UNION SELECT 1 FROM t WHERE k = 2 UNION SELECT 1 FROM t WHERE k = 3",
        "select [t] (k = 3 OR (k = 1 OR k = 2))",
    );
    check(
        "SELECT 1 FROM t WHERE k = 1 UNION (SELECT 1 FROM t WHERE k = 2 INTERSECT SELECT 1 FROM t WHERE a = 3)",
        "select [t] (k = 1 OR (a = 3 AND k = 2))",
    );
    check(
        "SELECT * FROM t WHERE k = 1 INTERSECT SELECT * FROM u WHERE k = 2",
        "select [t, u] t.k = 1 & u.k = 2",
    );
    check(
        "SELECT * FROM t WHERE k = 1 EXCEPT SELECT * FROM u WHERE k = 2",
        "select [t, u] t.k = 1",
    );
    check(
        "SELECT * FROM t EXCEPT SELECT * FROM u WHERE k = 2",
        "select [t, u]",
    );
    check(
        "SELECT * FROM (SELECT * FROM t WHERE k = 1 UNION SELECT * FROM t WHERE k = 2) s WHERE s.a = 3",
        "select [t] (k = 1 OR k = 2)",
    );
    check(
        "INSERT INTO t (k) SELECT k FROM u WHERE k = 1 UNION SELECT k FROM v WHERE k = 2",
        "insert write >t [t, u, v] (u.k = 1 OR v.k = 2)",
    );
    check("VALUES (1) UNION SELECT 1 FROM t WHERE k = 1", "select [t]");
}

#[test]
fn wrapped_queries() {
    check("EXPLAIN SELECT * FROM t WHERE k = 1", "explain [t] k = 1");
    check(
        "EXPLAIN CREATE TABLE x AS SELECT * FROM t WHERE k = 1",
        "explain write [t, x] t.k = 1",
    );
    check(
        "COPY (SELECT * FROM t WHERE k = 1) TO STDOUT",
        "copy_to [t] k = 1",
    );
    check(
        "CREATE TABLE x AS SELECT * FROM t WHERE k = 1",
        "ddl write [t, x] t.k = 1 {create table x}",
    );
    check(
        "CREATE MATERIALIZED VIEW m AS SELECT * FROM t WHERE k = 1",
        "ddl write [m, t] t.k = 1 {create matview m}",
    );
    check(
        "DECLARE c CURSOR FOR SELECT * FROM t WHERE k = 1",
        "other [t] k = 1",
    );
    check(
        "PREPARE p (int) AS UPDATE t SET a = 1 WHERE k = $1",
        "other [t] k = $1",
    );
    // Not wrapped queries: the view's body, a function's.
    check(
        "CREATE VIEW v AS SELECT * FROM t WHERE k = 1",
        "ddl write [t, v]",
    );
    check(
        "CREATE RULE r AS ON INSERT TO t DO INSTEAD SELECT * FROM u WHERE k = 1",
        "ddl write [t, u]",
    );
}

#[test]
fn ctes_in_scope() {
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM c",
        "select [t] k = 1",
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM c WHERE c.a = 2",
        "select [t] a = 2 & k = 1",
    );
    // Unreferenced, or only from the nullable side: nothing.
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM u",
        "select [t, u]",
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM u LEFT JOIN c ON true",
        "select [t, u]",
    );
    // Referenced twice: added once.
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM c a, c b",
        "select [t] k = 1",
    );
    // Visible in the levels below.
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM (SELECT * FROM c) s",
        "select [t] k = 1",
    );
    // An inner WITH shadows an outer one.
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) \
         SELECT * FROM (WITH c AS (SELECT * FROM t WHERE k = 2) SELECT * FROM c) s",
        "select [t] k = 2",
    );
    // A qualified name is a table.
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM public.c",
        "select [t, public.c]",
    );
    // CTEs see the earlier ones...
    check(
        "WITH a AS (SELECT * FROM t WHERE k = 1), b AS (SELECT * FROM a WHERE x = 2) SELECT * FROM b",
        "select [t] k = 1 & x = 2",
    );
    // ... not the later ones, unless RECURSIVE.
    check(
        "WITH a AS (SELECT * FROM b), b AS (SELECT * FROM t WHERE k = 1) SELECT * FROM a",
        "select [t]",
    );
    check(
        "WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT * FROM t WHERE k = 1) SELECT * FROM a",
        "select [t] k = 1",
    );
    // A reference during its own evaluation adds nothing.
    check(
        "WITH RECURSIVE r AS (SELECT * FROM t WHERE k = 1 UNION ALL SELECT * FROM r WHERE k = 1) \
         SELECT * FROM r",
        "select [t]",
    );
    check(
        "WITH RECURSIVE r AS (SELECT * FROM t WHERE k = 1 UNION ALL SELECT * FROM r) SELECT * FROM r",
        "select [t]",
    );
    // Same name twice in one WITH (Postgres refuses): the first counts.
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1), c AS (SELECT * FROM t WHERE k = 2) SELECT * FROM c",
        "select [t] k = 1",
    );
    // A CTE's FROM subqueries and CTE references count for it.
    check(
        "WITH a AS (SELECT * FROM t WHERE k = 1), b AS (SELECT * FROM a, (SELECT * FROM u WHERE j = 2) s) \
         SELECT * FROM b",
        "select [t, u] t.k = 1 & u.j = 2",
    );
    // In a MERGE's source, an UPDATE's FROM, a DELETE's USING, an INSERT's SELECT.
    check(
        "WITH s AS (SELECT * FROM u WHERE k = 4) MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
        "merge write >t [t, u] u.k = 4",
    );
    check(
        "WITH s AS (SELECT * FROM u WHERE k = 4) UPDATE t SET a = 1 FROM s WHERE t.id = s.id",
        "update write >t set(a) [t, u] u.k = 4",
    );
    check(
        "WITH s AS (SELECT * FROM u WHERE k = 4) DELETE FROM t USING s WHERE t.id = s.id",
        "delete write >t [t, u] u.k = 4",
    );
    check(
        "WITH s AS (SELECT * FROM u WHERE k = 4) INSERT INTO t SELECT * FROM s",
        "insert write >t [t, u] u.k = 4",
    );
    check(
        "INSERT INTO t WITH s AS (SELECT * FROM u WHERE k = 4) SELECT * FROM s",
        "insert write >t [t, u] u.k = 4",
    );
}

#[test]
fn data_modifying_ctes() {
    check(
        "WITH d AS (DELETE FROM t WHERE k = 1 RETURNING *) SELECT * FROM u",
        "select write [t, u] {cte writes t t.k = 1}",
    );
    check(
        "WITH d AS (DELETE FROM t WHERE k = 1 RETURNING *) SELECT * FROM d",
        "select write [t] k = 1 {cte writes t k = 1}",
    );
    check(
        "WITH u AS (UPDATE t SET a = 1 WHERE k = $1 RETURNING *) SELECT * FROM u WHERE a = 2",
        "select write [t] k = $1 {cte writes t set(a) k = $1}",
    );
    check(
        "WITH i AS (INSERT INTO t (k) VALUES (1), (2) RETURNING *) SELECT 1",
        "select write [t] {cte inserts t (t.k = 1 OR t.k = 2)}",
    );
    check(
        "WITH i AS (INSERT INTO t VALUES (1) RETURNING *) SELECT 1",
        "select write no_cols [t] {cte inserts t}",
    );
    check(
        "WITH m AS (DELETE FROM t WHERE k = $1 RETURNING *) INSERT INTO archive (k) SELECT k FROM m",
        "insert write >archive [archive, t] t.k = $1 {cte writes t t.k = $1}",
    );
    check(
        "WITH a AS (DELETE FROM t WHERE k = 1), b AS (UPDATE u SET x = 1 WHERE k = 2) SELECT 1",
        "select write [t, u] {cte writes t t.k = 1} {cte writes u set(x) u.k = 2}",
    );
    // Only the top-level WITH's (and sublinks never contribute).
    check(
        "SELECT * FROM t WHERE a IN (WITH i AS (INSERT INTO u VALUES (1) RETURNING a) SELECT a FROM i)",
        "select write [t, u]",
    );
    check(
        "EXPLAIN WITH d AS (DELETE FROM t WHERE k = 1 RETURNING *) SELECT 1",
        "explain write [t] {cte writes t k = 1}",
    );
}

#[test]
fn cte_conditions_are_capped_where_referenced() {
    let list = |n: usize| {
        let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        values.join(", ")
    };
    // An IN list of n values is n + 1 nodes.
    let within = MAX_CTE_CONDITION_NODES - 1;
    let sql = format!(
        "WITH c AS (SELECT * FROM t WHERE k IN ({})) SELECT * FROM c",
        list(within)
    );
    let summary = summary_of(&sql);
    assert!(
        matches!(&summary.statements[0].conditions[..], [Condition::Or(any)] if any.len() == within)
    );
    let sql = format!(
        "WITH c AS (SELECT * FROM t WHERE k IN ({})) SELECT * FROM c",
        list(within + 1)
    );
    check(&sql, "select [t]");
    // The data-modifying ones of the top-level WITH keep theirs whole, as
    // their writes' (capped where referenced, like any).
    for sql in [
        "WITH d AS (DELETE FROM t WHERE k IN ({}) RETURNING *) SELECT * FROM u",
        "WITH d AS (DELETE FROM t WHERE k IN ({}) RETURNING *) SELECT * FROM d, d e",
    ] {
        let summary = summary_of(&sql.replace("{}", &list(within + 1)));
        let stmt = &summary.statements[0];
        assert!(stmt.conditions.is_empty());
        assert!(
            matches!(&stmt.cte_writes[0].conditions[..], [Condition::Or(any)] if any.len() == within + 1)
        );
    }
    // CTEs doubling each other's conditions stop growing at the cap.
    let mut sql = "WITH RECURSIVE c0 AS (SELECT * FROM t WHERE k = 1)".to_owned();
    for i in 1..40 {
        write!(
            sql,
            ", c{i} AS (SELECT * FROM c{} a, c{} b WHERE a.x = {i})",
            i - 1,
            i - 1
        )
        .unwrap();
    }
    sql.push_str(" SELECT * FROM c39");
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert!(summary.statements[0].conditions.len() < MAX_CTE_CONDITION_NODES);
}

/// What schema changes do to a table's placement.
#[test]
fn schema_changes() {
    check(
        "CREATE TEMP TABLE IF NOT EXISTS s.x (a, b) AS SELECT * FROM t WITH NO DATA",
        "ddl write [t, s.x] {create table s.x no data}",
    );
    check(
        "CREATE UNLOGGED TABLE x AS SELECT * FROM t WHERE k = 1",
        "ddl write [t, x] t.k = 1 {create table x}",
    );
    check(
        "CREATE MATERIALIZED VIEW m AS SELECT * FROM t WITH NO DATA",
        "ddl write [m, t] {create matview m no data}",
    );
    check(
        "SELECT k INTO TEMP x FROM t UNION SELECT k FROM u",
        "select write [t, u, x] {create table x}",
    );
    check(
        "EXPLAIN ANALYZE CREATE TABLE x AS SELECT * FROM t",
        "explain write [t, x] {create table x}",
    );
    check(
        "EXPLAIN (ANALYZE, COSTS false) SELECT * INTO x FROM t",
        "explain write [t, x] {create table x}",
    );
    check(
        "EXPLAIN (ANALYZE false) CREATE TABLE x AS SELECT * FROM t",
        "explain write [t, x]",
    );
    check(
        "EXPLAIN CREATE TABLE x AS SELECT * FROM t",
        "explain write [t, x]",
    );
    check(
        "REFRESH MATERIALIZED VIEW CONCURRENTLY s.m",
        "ddl write [s.m] {refresh s.m}",
    );
    check("REFRESH MATERIALIZED VIEW m WITH NO DATA", "ddl write [m]");
    check(
        "ALTER TABLE IF EXISTS s.t RENAME TO u",
        "ddl write [s.t] {rename s.t to s.u}",
    );
    check(
        "ALTER MATERIALIZED VIEW m RENAME TO n",
        "ddl write [m] {rename m to n}",
    );
    check(
        "ALTER FOREIGN TABLE f SET SCHEMA s",
        "ddl write [f] {rename f to s.f}",
    );
    check(
        "ALTER TABLE t SET SCHEMA s",
        "ddl write [t] {rename t to s.t}",
    );
    check("ALTER VIEW v RENAME TO w", "ddl write [v]");
    check("ALTER SEQUENCE q RENAME TO r", "ddl write [q]");
    check(
        "ALTER TABLE t RENAME COLUMN k TO j",
        "ddl write [t] {columns of t rename k to j}",
    );
    check(
        "ALTER TABLE t RENAME k TO j",
        "ddl write [t] {columns of t rename k to j}",
    );
    check(
        "ALTER TABLE t DROP COLUMN k, DROP COLUMN IF EXISTS a, ADD COLUMN z int, ADD b int",
        "ddl write [t] {columns of t drop a drop k add b add z}",
    );
    check("ALTER TABLE t ALTER COLUMN k SET NOT NULL", "ddl write [t]");
    check("ALTER TABLE t RENAME CONSTRAINT c TO d", "ddl write [t]");
}

/// Condition columns resolved to the level's own tables: written as is
/// when the level's tables are the statement's, qualified so that the
/// router finds the same table otherwise, followed through the plain
/// outputs of FROM subqueries and CTEs, dropped when they are no table's.
#[test]
fn resolution() {
    // The level's tables are the statement's: as written.
    check("SELECT * FROM t WHERE k = 1", "select [t] k = 1");
    // One table, the statement's only one (told without building the
    // level's items): qualified by its alias or name, or not at all; a
    // column alias, a CTE of its name or another qualifier take the
    // general path.
    check("SELECT * FROM t WHERE t.k = 1", "select [t] t.k = 1");
    check("SELECT * FROM s.t WHERE t.k = 1", "select [s.t] t.k = 1");
    check(
        "SELECT * FROM t AS x WHERE x.k = 1 OR k = 2",
        "select [t x] (k = 2 OR x.k = 1)",
    );
    check("SELECT * FROM t AS x WHERE t.k = 1", "select [t x]");
    check("SELECT * FROM t AS x (k) WHERE k = 1", "select [t x]");
    check(
        "WITH t AS (SELECT 1 AS k) SELECT * FROM t WHERE k = 1",
        "select []",
    );
    check(
        "UPDATE t SET v = 1 WHERE t.k = 1",
        "update write >t set(v) [t] t.k = 1",
    );
    check(
        "DELETE FROM t AS x WHERE x.k = 1",
        "delete write >t x [t x] x.k = 1",
    );
    check(
        "INSERT INTO t AS x (k) VALUES (1), (2)",
        "insert write >t x [t x] (x.k = 1 OR x.k = 2)",
    );
    check("SELECT * FROM t, u WHERE k = 1", "select [t, u] k = 1");
    // Not: qualified, once per table of the level.
    check(
        "SELECT * FROM t, u WHERE k = 1 AND EXISTS (SELECT 1 FROM v)",
        "select [t, u, v] (t.k = 1 AND u.k = 1)",
    );
    check(
        "SELECT * FROM t WHERE k IN (1, 2) AND a IN (SELECT a FROM v)",
        "select [t, v] (t.k = 1 OR t.k = 2)",
    );
    // Through a subquery: its output's column, at its level.
    check(
        "SELECT * FROM (SELECT k AS x, v AS k FROM t) s WHERE k = 1",
        "select [t] v = 1",
    );
    check(
        "SELECT * FROM (SELECT k AS x, v AS k FROM t) s WHERE s.x = 1",
        "select [t] k = 1",
    );
    check(
        "SELECT * FROM (SELECT t.k AS x FROM t, u) s WHERE x = 1",
        "select [t, u] t.k = 1",
    );
    check(
        "SELECT * FROM (SELECT * FROM t) s WHERE k = 1",
        "select [t] k = 1",
    );
    check(
        "SELECT * FROM (SELECT a.* FROM t a, u b) s WHERE k = 1",
        "select [t a, u b] a.k = 1",
    );
    check(
        "SELECT * FROM (SELECT * FROM t, u) s WHERE k = 1 AND EXISTS (SELECT 1 FROM v)",
        "select [t, u, v] (t.k = 1 AND u.k = 1)",
    );
    // Several levels down, and the columns of CTEs.
    check(
        "SELECT * FROM (SELECT x AS y FROM (SELECT k AS x FROM t) a) b WHERE y = 1",
        "select [t] k = 1",
    );
    check(
        "WITH c (x, y) AS (SELECT k, v FROM t) SELECT * FROM c WHERE y = 1",
        "select [t] v = 1",
    );
    check(
        "WITH c (x, y) AS (SELECT k, v FROM t) SELECT * FROM c AS d (k) WHERE d.k = 1",
        "select [t] k = 1",
    );
    check(
        "WITH c AS (SELECT * FROM t) SELECT * FROM c AS d (k) WHERE k = 1",
        "select [t]",
    );
    // Computed outputs, LIMIT, OFFSET, windows, DISTINCT ON, set operations
    // and data-modifying CTEs pass no column through.
    for query in [
        "SELECT k + 0 AS k FROM t",
        "SELECT * FROM t LIMIT 5",
        "SELECT * FROM t OFFSET 5",
        "SELECT k, rank() OVER (ORDER BY v) FROM t",
        "SELECT k FROM t WINDOW w AS (ORDER BY v)",
        "SELECT DISTINCT ON (v) k FROM t",
        "SELECT k FROM t UNION ALL SELECT k FROM t",
    ] {
        let sql = format!("SELECT * FROM ({query}) s WHERE k = 1");
        check(&sql, "select [t]");
    }
    check("SELECT * FROM (VALUES (1)) s (k) WHERE k = 1", "select []");
    check(
        "SELECT * FROM (SELECT DISTINCT k FROM t GROUP BY k) s WHERE k = 1",
        "select [t] k = 1",
    );
    check(
        "WITH d AS (DELETE FROM t RETURNING k) SELECT * FROM d WHERE k = 1",
        "select write [t] {cte writes t}",
    );
    // A derived item that certainly outputs the column has it (else
    // Postgres finds it ambiguous); otherwise the tables' and the stars'.
    check(
        "SELECT * FROM u, (SELECT v AS k FROM t) s WHERE k = 1",
        "select [t, u] t.v = 1",
    );
    check(
        "SELECT * FROM u, (SELECT count(*) AS k FROM t) s WHERE k = 1",
        "select [t, u]",
    );
    check(
        "SELECT * FROM u, (SELECT * FROM t) s WHERE k = 1",
        "select [t, u] (t.k = 1 AND u.k = 1)",
    );
    check(
        "SELECT * FROM (SELECT k FROM t) a, (SELECT k FROM u) b WHERE k = 1",
        "select [t, u]",
    );
    // Tables with column aliases, functions, joins' aliases: no key.
    check("SELECT * FROM t a (x, k) WHERE k = 1", "select [t a]");
    check("SELECT * FROM t a (x, k) WHERE a.k = 1", "select [t a]");
    check(
        "SELECT * FROM generate_series(1, 2) AS s (k), t WHERE s.k = 1",
        "select [t]",
    );
    check(
        "SELECT * FROM (t JOIN u USING (id)) AS j WHERE j.k = 1",
        "select [t, u]",
    );
    // An enclosing level's column restricts nothing here.
    check(
        "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE t.k = 1) s",
        "select [t, u]",
    );
    // A qualifier the router would find on another table: dropped.
    check(
        "SELECT * FROM (SELECT k AS x FROM t s) a, u s WHERE a.x = 1",
        "select [t s, u s]",
    );
    check(
        "SELECT * FROM t WHERE t.k = 1 UNION ALL SELECT * FROM u t WHERE t.k = 2",
        "select [t, u t]",
    );
    // Many tables (looked up through an index).
    check(
        "SELECT * FROM t0, t1, t2, t3, t4, t5, t6, t7, t8 a WHERE t3.k = 1 AND a.k = 2 \
         UNION ALL SELECT * FROM (SELECT k AS j FROM u b) s WHERE j = 3",
        "select [t0, t1, t2, t3, t4, t5, t6, t7, t8 a, u b] (b.k = 3 OR (a.k = 2 AND t3.k = 1))",
    );
    check(
        "SELECT * FROM t0, t1, t2, t3, t4, t5, t6, t7, t8 a WHERE a.k = 2 \
         UNION ALL SELECT * FROM (SELECT k AS j FROM u a) s WHERE j = 3",
        "select [t0, t1, t2, t3, t4, t5, t6, t7, t8 a, u a]",
    );
    // An UPDATE's, DELETE's and MERGE's target is an item of its level.
    check(
        "UPDATE t SET a = 1 FROM (SELECT v AS k FROM u) s WHERE t.k = 1 AND s.k = 2",
        "update write >t set(a) [t, u] (t.k = 1 AND u.v = 2)",
    );
    check(
        "DELETE FROM t x USING (SELECT * FROM u) s WHERE x.k = s.k AND s.k = 2",
        "delete write >t x [t x, u] u.k = 2",
    );
    check(
        "MERGE INTO t USING (SELECT k AS j FROM u) s ON t.k = 1 AND s.j = 2 WHEN MATCHED THEN DELETE",
        "merge write >t [t, u] (t.k = 1 AND u.k = 2)",
    );
    // INSERT VALUES: the target, unless its name is another table's alias.
    check(
        "INSERT INTO t (k) SELECT 1 FROM u t",
        "insert write >t [t, u t]",
    );
    check(
        "INSERT INTO t (k) VALUES (1) RETURNING (SELECT 1 FROM u t)",
        "insert write >t [t, u t]",
    );
    check(
        "INSERT INTO t (k) VALUES (1) RETURNING (SELECT 1 FROM u)",
        "insert write >t [t, u] t.k = 1",
    );
}

/// The statements of the messaging workload (DESIGN.md §5).
#[test]
fn messaging_workload() {
    check(
        "UPDATE counters SET next = next + $2 WHERE partition_id = $1 RETURNING next",
        "update write >counters set(next) [counters] partition_id = $1",
    );
    check(
        "INSERT INTO events_p3 (off, payload) SELECT $1 + o - 1, p FROM unnest($2::bytea[]) WITH ORDINALITY AS u(p, o)",
        "insert write >events_p3 [events_p3]",
    );
    check(
        "SELECT next_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR UPDATE",
        "select locking [consumer_offsets] (group_id = $1 AND partition_id = $2)",
    );
    check(
        "UPDATE consumer_offsets SET next_offset = LEAST(next_offset + $3, \
         (SELECT next FROM counters WHERE partition_id = $2)) \
         WHERE group_id = $1 AND partition_id = $2 RETURNING next_offset",
        "update write >consumer_offsets set(next_offset) [consumer_offsets, counters] (consumer_offsets.group_id = $1 AND consumer_offsets.partition_id = $2)",
    );
    check(
        "SELECT off, payload FROM events_p7 WHERE off BETWEEN $1 AND $2 ORDER BY off",
        "select [events_p7]",
    );
    check(
        "INSERT INTO queue (payload) VALUES ($1)",
        "insert write >queue [queue] queue.payload = $1",
    );
    check(
        "SELECT id, payload FROM queue ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1",
        "select locking [queue]",
    );
    check(
        "DELETE FROM queue WHERE id = $1",
        "delete write >queue [queue] id = $1",
    );
    check(
        "INSERT INTO queue_archive (id, payload) VALUES ($1, $2)",
        "insert write >queue_archive [queue_archive] (queue_archive.id = $1 AND queue_archive.payload = $2)",
    );
    check(
        "WITH m AS (DELETE FROM queue WHERE id = (SELECT id FROM queue ORDER BY id \
         FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING *) \
         INSERT INTO queue_archive (id, payload) SELECT id, payload FROM m",
        "insert write locking >queue_archive [queue, queue_archive] {cte writes queue}",
    );
}

// ---- exact values -----------------------------------------------------------

#[test]
fn locations_are_the_constants() {
    let sql = "SELECT * FROM t WHERE id = -7 AND x = '9223372036854775807'::int8";
    let stmt = &summary_of(sql).statements[0];
    assert_eq!(
        stmt.conditions,
        vec![Condition::And(vec![
            eq(column(None, "id"), integer(-7, 27), None),
            eq(
                column(None, "x"),
                text("9223372036854775807", 38),
                Some("int8")
            ),
        ])]
    );
    let stmt = &summary_of("INSERT INTO o (k) VALUES (12), ($7)").statements[0];
    assert_eq!(
        stmt.conditions,
        vec![Condition::Or(vec![
            eq(column(Some("o"), "k"), integer(12, 26), None),
            eq(column(Some("o"), "k"), ValueSource::Param(7), None),
        ])]
    );
    let stmt = &summary_of("SELECT 1 FROM t WHERE k = ANY('{a}'::text[])").statements[0];
    assert_eq!(
        stmt.conditions,
        vec![Condition::Any {
            column: column(None, "k"),
            value: Value {
                source: text("{a}", 30),
                cast: Some("text".to_owned()),
            },
        }]
    );
}

#[test]
fn summary_fields_in_full() {
    let summary = summary_of("SELECT * FROM public.orders o WHERE o.id = $1 FOR UPDATE; COMMIT");
    assert_eq!(
        summary.statements,
        vec![
            StatementSummary {
                kind: StatementKind::Select,
                write: false,
                locking: true,
                tables: vec![TableRef {
                    schema: Some("public".to_owned()),
                    name: "orders".to_owned(),
                    alias: Some("o".to_owned()),
                }],
                conditions: vec![eq(column(Some("o"), "id"), ValueSource::Param(1), None)],
                insert_without_columns: false,
                target: None,
                set_columns: vec![],
                session: None,
                sublinks: None,
                joins: None,
                calls: Vec::new(),
                schema_change: None,
                cte_writes: Vec::new(),
            },
            StatementSummary {
                kind: StatementKind::Commit,
                write: false,
                locking: false,
                tables: vec![],
                conditions: vec![],
                insert_without_columns: false,
                target: None,
                set_columns: vec![],
                session: None,
                sublinks: None,
                joins: None,
                calls: Vec::new(),
                schema_change: None,
                cte_writes: Vec::new(),
            },
        ]
    );
}

// ---- pathological nesting -------------------------------------------------------

/// Parse and summarize on a thread with a tokio worker's stack (2 MiB).
fn summarize_on_small_stack(sql: String) -> Option<Result<Summary, ExtractError>> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let tree = parser_ffi::ParseTree::parse(&sql).ok()?;
            Some(summarize(&tree))
        })
        .unwrap()
        .join()
        .unwrap()
}

fn nested(open: &str, middle: &str, close: &str, depth: usize) -> String {
    let mut sql = String::with_capacity((open.len() + close.len()) * depth + middle.len());
    for _ in 0..depth {
        sql.push_str(open);
    }
    sql.push_str(middle);
    for _ in 0..depth {
        sql.push_str(close);
    }
    sql
}

#[test]
fn or_nesting_up_to_max_depth_is_followed() {
    // `n` nested ORs put the innermost comparison at depth n + 1.
    let condition = nested("a = 1 OR (", "a = 2", ")", MAX_DEPTH - 1);
    let sql = format!("SELECT * FROM t WHERE {condition}");
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    let mut depth = 0;
    let mut condition = &summary.statements[0].conditions[0];
    while let Condition::Or(branches) = condition {
        depth += 1;
        condition = &branches[1];
    }
    assert_eq!(depth, MAX_DEPTH - 1);

    let condition = nested("a = 1 OR (", "a = 2", ")", MAX_DEPTH);
    let sql = format!("SELECT * FROM t WHERE {condition}");
    assert_eq!(
        summarize_on_small_stack(sql).unwrap(),
        Err(ExtractError::TooDeep)
    );
}

#[test]
fn deep_or_nesting_is_too_deep_not_a_crash() {
    for depth in [1_500, 100_000] {
        let condition = nested("a = 1 OR (", "a = 2", ")", depth);
        let sql = format!("SELECT * FROM t WHERE {condition}");
        match summarize_on_small_stack(sql) {
            // The parser may refuse first.
            None => assert!(depth > 1_500),
            Some(result) => assert_eq!(result, Err(ExtractError::TooDeep), "{depth}"),
        }
    }
}

#[test]
fn deep_trees_elsewhere_are_walked_without_recursion() {
    fn outcome(sql: String) -> &'static str {
        match summarize_on_small_stack(sql) {
            None => "refused by the parser",
            Some(Ok(_)) => "summarized",
            Some(Err(ExtractError::TooDeep)) => "too deep",
        }
    }
    let where_ = |condition: String| format!("SELECT * FROM t WHERE {condition}");
    let from = |depth| {
        nested(
            "SELECT * FROM (",
            "SELECT * FROM t WHERE k = 1",
            ") s",
            depth,
        )
    };
    let scalar = |depth| nested("SELECT (", "SELECT k FROM t WHERE k = 1", ")", depth);
    let in_list = |depth| {
        let open = "SELECT * FROM t WHERE k IN (";
        nested(open, "SELECT k FROM t WHERE k = 1", ")", depth)
    };
    // Nesting the parser accepts only so far (its own stack is bounded):
    // beyond, it refuses; within, the summary comes back, or TooDeep where
    // the rules follow the nesting (boolean operators, FROM subqueries).
    let cases = [
        (
            where_(nested("(", "a = 1", ")", 100_000)),
            "refused by the parser",
        ),
        (where_(nested("(", "a = 1", ")", 5_000)), "summarized"),
        (
            where_(nested("NOT (", "a = 1", ")", 100_000)),
            "refused by the parser",
        ),
        (where_(nested("NOT (", "a = 1", ")", 2_000)), "too deep"),
        (
            where_(nested("a = 1 AND (", "a = 1", ")", 2_000)),
            "too deep",
        ),
        (from(100_000), "refused by the parser"),
        (from(1_500), "too deep"),
        (from(999), "summarized"),
        // Sublinks are not levels that contribute: never followed.
        (scalar(100_000), "refused by the parser"),
        (scalar(2_000), "summarized"),
        (in_list(1_000), "summarized"),
    ];
    for (sql, expected) in cases {
        let head = sql[..40].to_owned();
        assert_eq!(outcome(sql), expected, "{head}");
    }
}

#[test]
fn query_levels_up_to_max_depth_are_followed() {
    // The statement's own query is level 1.
    let sql = nested(
        "SELECT * FROM (",
        "SELECT * FROM t WHERE k = 1",
        ") s",
        MAX_DEPTH - 1,
    );
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert_eq!(render(&summary), "select [t] k = 1");
    let sql = nested(
        "SELECT * FROM (",
        "SELECT * FROM t WHERE k = 1",
        ") s",
        MAX_DEPTH,
    );
    assert_eq!(
        summarize_on_small_stack(sql).unwrap(),
        Err(ExtractError::TooDeep)
    );
    // UNION chains nest to the left: every arm is a level deeper.
    let arms = vec!["SELECT * FROM t WHERE k = 1"; MAX_DEPTH + 1];
    let sql = arms.join(" UNION ALL ");
    assert_eq!(
        summarize_on_small_stack(sql).unwrap(),
        Err(ExtractError::TooDeep)
    );
    let sql = arms[..MAX_DEPTH - 1].join(" UNION ALL ");
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    let mut depth = 0;
    let mut condition = &summary.statements[0].conditions[0];
    while let Condition::Or(arms) = condition {
        depth += 1;
        condition = &arms[1];
    }
    assert_eq!(depth, MAX_DEPTH - 2);
    // The deepest conditions both ways at once: a UNION chain whose arms
    // hold ORs nested to the limit.
    let arm = format!(
        "SELECT * FROM t WHERE {}",
        nested("a = 1 OR (", "a = 2", ")", MAX_DEPTH - 1)
    );
    let sql = vec![arm.as_str(); 300].join(" UNION ALL ");
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert_eq!(summary.statements[0].conditions.len(), 1);
}

#[test]
fn long_left_deep_chains_are_summarized() {
    let n = 100_000;
    // Casts: the outermost one counts.
    let sql = format!("SELECT * FROM t WHERE id = $1{}::int8", "::text".repeat(n));
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert_eq!(render(&summary), "select [t] id = $1::int8");
    // Arithmetic.
    let sql = format!("SELECT {} FROM t WHERE id = 1", vec!["a"; n].join(" + "));
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert_eq!(render(&summary), "select [t] id = 1");
    // Joins, each with its qual.
    let mut sql = "SELECT * FROM t0".to_owned();
    for i in 1..10_000 {
        write!(sql, " JOIN t{i} ON t{i}.k = {i}").unwrap();
    }
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    let stmt = &summary.statements[0];
    assert_eq!(stmt.tables.len(), 10_000);
    assert!(matches!(&stmt.conditions[..], [Condition::And(all)] if all.len() == 9_999));
    // Many CTEs, each referenced.
    let ctes: Vec<String> = (0..20_000).map(|i| format!("c{i} AS (SELECT 1)")).collect();
    let names: Vec<String> = (0..20_000).map(|i| format!("c{i}")).collect();
    let sql = format!(
        "WITH {} SELECT * FROM t, {}",
        ctes.join(", "),
        names.join(", ")
    );
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert_eq!(render(&summary), "select [t]");
    // A flat OR and a long IN list.
    let n = 20_000;
    let sql = format!("SELECT * FROM t WHERE {}", vec!["a = 1"; n].join(" OR "));
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert!(
        matches!(&summary.statements[0].conditions[..], [Condition::Or(any)] if any.len() == n)
    );
    let list: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let sql = format!("SELECT * FROM t WHERE a IN ({})", list.join(", "));
    let summary = summarize_on_small_stack(sql).unwrap().unwrap();
    assert!(
        matches!(&summary.statements[0].conditions[..], [Condition::Or(any)] if any.len() == n)
    );
}

/// Rough cost of `summarize` next to the parse it follows. Run with
/// `cargo test --release -p router --lib extract::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_against_the_parse() {
    use std::hint::black_box;
    use std::time::Instant;
    let queries = [
        ("point select", "SELECT * FROM users WHERE id = $1"),
        (
            "pgbench update",
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
        ),
        (
            "5-row insert",
            "INSERT INTO t (id, a, b) VALUES ($1, $2, $3), ($4, $5, $6), ($7, $8, $9), \
             ($10, $11, $12), ($13, $14, $15)",
        ),
        (
            "join",
            "SELECT o.id, sum(i.qty) FROM orders o JOIN items i ON i.order_id = o.id \
             WHERE o.tenant_id = $1 AND o.created_at > now() - interval '1 day' \
             GROUP BY o.id ORDER BY 2 DESC LIMIT 10",
        ),
    ];
    let rounds = 200_000;
    for (name, sql) in queries {
        for _ in 0..1_000 {
            black_box(summarize(&parser_ffi::ParseTree::parse(sql).unwrap()).unwrap());
        }
        let start = Instant::now();
        for _ in 0..rounds {
            black_box(parser_ffi::ParseTree::parse(black_box(sql)).unwrap());
        }
        let parse = start.elapsed().as_nanos() as f64 / f64::from(rounds);
        let tree = parser_ffi::ParseTree::parse(sql).unwrap();
        let start = Instant::now();
        for _ in 0..rounds {
            black_box(summarize(black_box(&tree)).unwrap());
        }
        let extract = start.elapsed().as_nanos() as f64 / f64::from(rounds);
        // Floors: a bare walk over every node, and building the output alone.
        let mut stack = Vec::new();
        let start = Instant::now();
        for _ in 0..rounds {
            let mut nodes = 0_usize;
            for stmt in tree.statements() {
                if let Some(node) = stmt.stmt() {
                    parser_ffi::view::walk_with(&mut stack, node, |_| {
                        nodes += 1;
                        parser_ffi::view::Walk::Continue
                    });
                }
            }
            black_box(nodes);
        }
        let walk = start.elapsed().as_nanos() as f64 / f64::from(rounds);
        let summary = summarize(&tree).unwrap();
        let start = Instant::now();
        for _ in 0..rounds {
            black_box(black_box(&summary).clone());
        }
        let output = start.elapsed().as_nanos() as f64 / f64::from(rounds);
        let start = Instant::now();
        for _ in 0..rounds {
            black_box(black_box(&summary).clone()).canonicalize();
        }
        let canonicalize = start.elapsed().as_nanos() as f64 / f64::from(rounds) - output;
        eprintln!(
            "{name:>15}: parse {parse:>5.0} ns, summarize {extract:>5.0} ns ({:>2.0}% of the parse; \
             of which canonicalize {canonicalize:>4.0} ns; floors: bare walk {walk:>3.0} ns, \
             cloning the output {output:>4.0} ns)",
            100.0 * extract / parse
        );
    }
}

#[test]
fn session_effects() {
    use crate::summary::SessionEffect as E;
    let effects = |sql: &str| -> Vec<Option<E>> {
        summary_of(sql)
            .statements
            .into_iter()
            .map(|s| s.session)
            .collect()
    };
    let set = |name: &str, start: usize, len: usize| {
        Some(E::Set {
            name: name.into(),
            start,
            len,
        })
    };
    let sql = "SET search_path TO a, b;SET TIME ZONE 'UTC'; set Role none";
    let found = effects(sql);
    assert_eq!(
        found,
        vec![
            set("search_path", 0, 23),
            set("timezone", 24, 19),
            set("role", 45, 0)
        ]
    );
    let texts: Vec<&str> = found
        .iter()
        .map(|e| e.as_ref().unwrap().set_text(sql).unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "SET search_path TO a, b",
            "SET TIME ZONE 'UTC'",
            "set Role none"
        ]
    );
    #[rustfmt::skip]
    let cases: &[(&str, Option<E>)] = &[
        ("SET application_name FROM CURRENT", set("application_name", 0, 0)),
        ("RESET work_mem", Some(E::Reset { name: "work_mem".into() })),
        ("SET work_mem TO DEFAULT", Some(E::Reset { name: "work_mem".into() })),
        ("RESET ALL", Some(E::ResetAll)),
        ("SET LOCAL app.tenant = '7'", Some(E::TransactionScoped("SET"))),
        ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", Some(E::TransactionScoped("SET"))),
        ("SET CONSTRAINTS ALL DEFERRED", Some(E::TransactionScoped("SET CONSTRAINTS"))),
        ("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", Some(E::Untracked)),
        ("DEALLOCATE s1", Some(E::Deallocate(Some("s1".into())))),
        ("DEALLOCATE PREPARE ALL", Some(E::Deallocate(None))),
        ("DISCARD ALL", Some(E::DiscardAll)),
        ("DISCARD PLANS", None),
        ("SHOW work_mem", None),
        ("SELECT set_config('a.b', '1', false)", None),
    ];
    for (sql, expected) in cases {
        assert_eq!(effects(sql), vec![expected.clone()], "{sql}");
    }
}
