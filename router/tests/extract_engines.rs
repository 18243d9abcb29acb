//! The two extractors against each other and against the rules: on every
//! entry of parser-ffi's corpus, the zero-copy engine's summary must equal the
//! protobuf engine's (over `parse_raw` and over pg_query's own protobuf
//! parse); and for chosen statements, both must give the summary the rules in
//! `router::extract` spell out.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use parser_ffi::{parse_protobuf, parse_raw, ParseTree};
use router::extract::{summarize, summarize_protobuf, ExtractError};
use router::summary::{
    Call, ColumnRef, Condition, CteWrite, InlineCode, SessionEffect, StatementKind,
    StatementSummary, Sublink, Sublinks, Summary, TableRef, Value, ValueSource,
};

/// The effect of `SET name ...` parsed alone: the whole text.
fn set(name: &str) -> SessionEffect {
    SessionEffect::Set {
        name: name.into(),
        start: 0,
        len: 0,
    }
}

fn reset(name: &str) -> SessionEffect {
    SessionEffect::Reset { name: name.into() }
}

#[path = "../../parser-ffi/tests/shared/corpus.rs"]
mod shared_corpus;
use shared_corpus::corpus;

#[test]
fn engines_agree_on_the_corpus() {
    let mut compared = 0;
    let mut with_conditions = 0;
    let mut with_tables = 0;
    let mut mismatches = Vec::new();
    for (name, sql) in corpus() {
        let Ok(tree) = ParseTree::parse(&sql) else {
            continue;
        };
        let Ok(raw) = parse_raw(&sql) else {
            continue;
        };
        let view = summarize(&tree);
        let protobuf = summarize_protobuf(&raw);
        if view != protobuf {
            mismatches.push(format!(
                "{name}: {sql}\n  view:     {view:?}\n  protobuf: {protobuf:?}"
            ));
        }
        // pg_query's own protobuf parse (prost stops at 100 nested messages).
        if let Ok(pg_query_tree) = parse_protobuf(&sql) {
            let from_pg_query = summarize_protobuf(&pg_query_tree);
            if from_pg_query != protobuf {
                mismatches.push(format!(
                    "{name}: {sql}\n  protobuf (parse_protobuf): {from_pg_query:?}\n  protobuf (parse_raw):      {protobuf:?}"
                ));
            }
        }
        compared += 1;
        if let Ok(summary) = &protobuf {
            let statements = &summary.statements;
            with_conditions += usize::from(statements.iter().any(|s| !s.conditions.is_empty()));
            with_tables += usize::from(statements.iter().any(|s| !s.tables.is_empty()));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {compared} entries differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(compared >= 1000, "only {compared} entries compared");
    assert!(
        with_conditions >= 200,
        "only {with_conditions} entries with conditions"
    );
    assert!(with_tables >= 500, "only {with_tables} entries with tables");
}

// ---------------------------------------------------------------------------
// The rules, statement by statement.

/// Both engines give `expected` for `sql` (one statement).
#[track_caller]
fn check(sql: &str, expected: StatementSummary) {
    let expected = Summary {
        statements: vec![expected],
    };
    check_all(sql, expected);
}

/// Both engines give `expected` for `sql`. A statement expected without
/// sublink, join, schema-change or data-modifying-CTE facts, or calls, is
/// compared without them (the cases that are not about them leave them
/// out; the engines must still agree on them).
#[track_caller]
fn check_all(sql: &str, mut expected: Summary) {
    expected.canonicalize();
    let protobuf = summarize_protobuf(&parse_raw(sql).unwrap()).unwrap();
    let pg_query = summarize_protobuf(&parse_protobuf(sql).unwrap()).unwrap();
    let view = summarize(&ParseTree::parse(sql).unwrap()).unwrap();
    assert_eq!(protobuf, view, "the engines disagree: {sql}");
    assert_eq!(pg_query, view, "protobuf engine over parse_protobuf: {sql}");
    let mut protobuf = protobuf;
    for (got, wanted) in protobuf.statements.iter_mut().zip(&expected.statements) {
        if wanted.sublinks.is_none() {
            got.sublinks = None;
        }
        if wanted.joins.is_none() {
            got.joins = None;
        }
        if wanted.calls.is_empty() {
            got.calls.clear();
        }
        if wanted.schema_change.is_none() {
            got.schema_change = None;
        }
        if wanted.cte_writes.is_empty() {
            got.cte_writes.clear();
        }
    }
    assert_eq!(protobuf, expected, "both engines: {sql}");
}

fn stmt(kind: StatementKind) -> StatementSummary {
    let write = matches!(
        kind,
        StatementKind::Insert
            | StatementKind::Update
            | StatementKind::Delete
            | StatementKind::Merge
            | StatementKind::Ddl
    );
    StatementSummary {
        kind,
        write,
        locking: false,
        tables: Vec::new(),
        conditions: Vec::new(),
        insert_without_columns: false,
        target: None,
        set_columns: Vec::new(),
        session: None,
        sublinks: None,
        joins: None,
        calls: Vec::new(),
        schema_change: None,
        cte_writes: Vec::new(),
    }
}

fn select() -> StatementSummary {
    stmt(StatementKind::Select)
}

trait Build {
    fn tables(self, tables: &[&str]) -> Self;
    fn conditions(self, conditions: Vec<Condition>) -> Self;
    fn write(self, write: bool) -> Self;
    fn locking(self) -> Self;
    /// The written table, as `schema.name alias`.
    fn target(self, table: &str) -> Self;
    fn set_columns(self, columns: &[&str]) -> Self;
    fn session(self, effect: SessionEffect) -> Self;
}

impl Build for StatementSummary {
    /// Tables as `schema.name alias` (schema and alias optional).
    fn tables(mut self, tables: &[&str]) -> Self {
        self.tables = tables.iter().map(|t| table(t)).collect();
        self
    }
    fn conditions(mut self, conditions: Vec<Condition>) -> Self {
        self.conditions = conditions;
        self
    }
    fn write(mut self, write: bool) -> Self {
        self.write = write;
        self
    }
    fn locking(mut self) -> Self {
        self.locking = true;
        self
    }
    fn target(mut self, spec: &str) -> Self {
        self.target = Some(table(spec));
        self
    }
    fn session(mut self, effect: SessionEffect) -> Self {
        self.session = Some(effect);
        self
    }

    fn set_columns(mut self, columns: &[&str]) -> Self {
        self.set_columns = columns.iter().map(|c| c.to_string()).collect();
        self
    }
}

fn table(spec: &str) -> TableRef {
    let (path, alias) = match spec.split_once(' ') {
        Some((path, alias)) => (path, Some(alias.to_owned())),
        None => (spec, None),
    };
    let (schema, name) = match path.split_once('.') {
        Some((schema, name)) => (Some(schema.to_owned()), name),
        None => (None, path),
    };
    TableRef {
        schema,
        name: name.to_owned(),
        alias,
    }
}

fn col(spec: &str) -> ColumnRef {
    match spec.rsplit_once('.') {
        Some((table, column)) => ColumnRef {
            table: Some(table.to_owned()),
            column: column.to_owned(),
        },
        None => ColumnRef {
            table: None,
            column: spec.to_owned(),
        },
    }
}

fn int(value: i64, location: i32) -> Value {
    Value {
        source: ValueSource::Integer { value, location },
        cast: None,
    }
}

fn text(text: &str, location: i32) -> Value {
    Value {
        source: ValueSource::Text {
            text: text.to_owned(),
            location,
        },
        cast: None,
    }
}

fn param(number: u16) -> Value {
    Value {
        source: ValueSource::Param(number),
        cast: None,
    }
}

fn cast(mut value: Value, to: &str) -> Value {
    value.cast = Some(to.to_owned());
    value
}

fn eq(column: &str, value: Value) -> Condition {
    Condition::Eq {
        column: col(column),
        value,
    }
}

fn any(column: &str, value: Value) -> Condition {
    Condition::Any {
        column: col(column),
        value,
    }
}

fn and(children: Vec<Condition>) -> Condition {
    Condition::And(children)
}

fn or(children: Vec<Condition>) -> Condition {
    Condition::Or(children)
}

#[test]
fn select_where_equalities() {
    check(
        "SELECT * FROM users WHERE tenant_id = 1",
        select()
            .tables(&["users"])
            .conditions(vec![eq("tenant_id", int(1, 38))]),
    );
    check(
        "SELECT * FROM public.users u WHERE $1 = u.tenant_id AND u.name = 'x' AND u.age > 3",
        select()
            .tables(&["public.users u"])
            .conditions(vec![and(vec![
                eq("u.tenant_id", param(1)),
                eq("u.name", text("x", 65)),
            ])]),
    );
    check(
        "SELECT 1 FROM t WHERE public.t.id = 9223372036854775807",
        select()
            .tables(&["t"])
            .conditions(vec![eq("t.id", text("9223372036854775807", 36))]),
    );
    check(
        "SELECT 1 FROM t WHERE id = -7 OR id = 2.5",
        select().tables(&["t"]).conditions(vec![or(vec![
            eq("id", int(-7, 27)),
            eq("id", text("2.5", 38)),
        ])]),
    );
}

#[test]
fn what_is_not_a_condition() {
    for sql in [
        "SELECT 1 FROM t WHERE id = 1 OR name LIKE 'a%'",
        "SELECT 1 FROM t WHERE NOT id = 1",
        "SELECT 1 FROM t WHERE id::text = '1'",
        "SELECT 1 FROM t WHERE id = other_id",
        "SELECT 1 FROM t WHERE id NOT IN (1, 2)",
        "SELECT 1 FROM t WHERE id IN (1, other_id)",
        "SELECT 1 FROM t WHERE id = true",
        "SELECT 1 FROM t WHERE id = B'101'",
        "SELECT 1 FROM t WHERE id = ALL($1)",
        "SELECT 1 FROM t WHERE t.* = 1",
        "SELECT 1 FROM t WHERE id = lower('A')",
        "SELECT 1 FROM t WHERE id IS NOT DISTINCT FROM 1",
        "SELECT 1 FROM t WHERE id = ANY(ARRAY[1, 2]::int8[])",
    ] {
        check(sql, select().tables(&["t"]));
    }
}

#[test]
fn in_lists_and_any() {
    check(
        "SELECT 1 FROM t WHERE id IN (1, $2)",
        select()
            .tables(&["t"])
            .conditions(vec![or(vec![eq("id", int(1, 29)), eq("id", param(2))])]),
    );
    check(
        "SELECT 1 FROM t WHERE id IN ('a')",
        select()
            .tables(&["t"])
            .conditions(vec![eq("id", text("a", 29))]),
    );
    check(
        "SELECT 1 FROM t WHERE id = ANY($1::bigint[])",
        select()
            .tables(&["t"])
            .conditions(vec![any("id", cast(param(1), "int8"))]),
    );
    check(
        "SELECT 1 FROM t WHERE id = ANY('{1,2}')",
        select()
            .tables(&["t"])
            .conditions(vec![any("id", text("{1,2}", 31))]),
    );
    check(
        "SELECT 1 FROM t WHERE id = ANY(ARRAY[1, $1::int])",
        select().tables(&["t"]).conditions(vec![or(vec![
            eq("id", int(1, 37)),
            eq("id", cast(param(1), "int4")),
        ])]),
    );
}

#[test]
fn casts_and_nulls() {
    check(
        "SELECT 1 FROM t WHERE id = '7'::text::bigint AND k = NULL AND u = CAST($3 AS uuid)",
        select().tables(&["t"]).conditions(vec![and(vec![
            eq("id", cast(text("7", 27), "int8")),
            eq(
                "k",
                Value {
                    source: ValueSource::Null,
                    cast: None,
                },
            ),
            eq("u", cast(param(3), "uuid")),
        ])]),
    );
}

#[test]
fn joins_and_from_subqueries_are_levels() {
    check(
        "SELECT * FROM a JOIN b ON b.k = 1 LEFT JOIN c ON c.k = 2 WHERE a.k = 3",
        select().tables(&["a", "b", "c"]).conditions(vec![and(vec![
            eq("a.k", int(3, 69)),
            eq("b.k", int(1, 32)),
        ])]),
    );
    // The FROM subquery restricts the rows; the sublink does not.
    check(
        "SELECT * FROM (SELECT * FROM a WHERE k = 1) s WHERE s.k IN (SELECT k FROM b WHERE k = 2)",
        select()
            .tables(&["a", "b"])
            .conditions(vec![eq("a.k", int(1, 41))]),
    );
    check(
        "SELECT k FROM a WHERE k = 1 UNION ALL SELECT k FROM b WHERE k = $1",
        select()
            .tables(&["a", "b"])
            .conditions(vec![or(vec![eq("a.k", int(1, 26)), eq("b.k", param(1))])]),
    );
}

#[test]
fn ctes_are_not_tables_and_modifying_ctes_write() {
    check(
        "WITH recent AS (SELECT * FROM orders WHERE tenant_id = 5) SELECT * FROM recent, s.recent",
        select()
            .tables(&["orders", "s.recent"])
            .conditions(vec![eq("orders.tenant_id", int(5, 55))]),
    );
    check(
        "WITH gone AS (DELETE FROM jobs WHERE id = $1 RETURNING *) SELECT * FROM gone",
        select()
            .tables(&["jobs"])
            .conditions(vec![eq("id", param(1))])
            .write(true),
    );
    check(
        "SELECT * INTO archive FROM jobs",
        select().tables(&["archive", "jobs"]).write(true),
    );
    check(
        "SELECT * FROM jobs FOR UPDATE SKIP LOCKED LIMIT 1",
        select().tables(&["jobs"]).locking(),
    );
}

#[test]
fn inserts() {
    check(
        "INSERT INTO t (id, name, at) VALUES (1, 'a', now())",
        stmt(StatementKind::Insert)
            .tables(&["t"])
            .target("t")
            .conditions(vec![and(vec![
                eq("t.id", int(1, 37)),
                eq("t.name", text("a", 40)),
            ])]),
    );
    check(
        "INSERT INTO s.t AS x (id) VALUES ($1), ($2)",
        stmt(StatementKind::Insert)
            .tables(&["s.t x"])
            .target("s.t x")
            .conditions(vec![or(vec![eq("x.id", param(1)), eq("x.id", param(2))])]),
    );
    check(
        "INSERT INTO t (id, at) VALUES (1, now()), (now(), now())",
        stmt(StatementKind::Insert).tables(&["t"]).target("t"),
    );
    let mut without_columns = stmt(StatementKind::Insert).tables(&["t"]).target("t");
    without_columns.insert_without_columns = true;
    check("INSERT INTO t VALUES (1, 2)", without_columns);
    check(
        "INSERT INTO t (id) SELECT id FROM u WHERE id = 4",
        stmt(StatementKind::Insert)
            .tables(&["t", "u"])
            .target("t")
            .conditions(vec![eq("u.id", int(4, 47))]),
    );
}

#[test]
fn updates_deletes_merges() {
    check(
        "UPDATE t SET a = 1 WHERE id = 2",
        stmt(StatementKind::Update)
            .tables(&["t"])
            .target("t")
            .set_columns(&["a"])
            .conditions(vec![eq("id", int(2, 30))]),
    );
    check(
        "DELETE FROM t USING u WHERE t.id = u.id AND u.k = 'z'",
        stmt(StatementKind::Delete)
            .tables(&["t", "u"])
            .target("t")
            .conditions(vec![eq("u.k", text("z", 50))]),
    );
    check(
        "MERGE INTO t USING s ON t.id = s.id AND t.k = 3 WHEN MATCHED THEN DELETE",
        stmt(StatementKind::Merge)
            .tables(&["s", "t"])
            .target("t")
            .conditions(vec![eq("t.k", int(3, 46))]),
    );
}

#[test]
fn statement_kinds() {
    use StatementKind as K;
    check("BEGIN", stmt(K::Begin));
    check("START TRANSACTION READ ONLY", stmt(K::Begin));
    check("COMMIT AND CHAIN", stmt(K::Commit));
    check("ROLLBACK", stmt(K::Rollback));
    check("SAVEPOINT a", stmt(K::TransactionOther));
    check(
        "SET pgdog.shard = 3",
        stmt(K::SetShard(Some("3".into()))).session(set("pgdog.shard")),
    );
    check(
        "SET pgdog.shard TO -3",
        stmt(K::SetShard(Some("-3".into()))).session(set("pgdog.shard")),
    );
    check(
        "RESET pgdog.shard",
        stmt(K::SetShard(None)).session(reset("pgdog.shard")),
    );
    check(
        "SET pgdog.sharding_key TO 'abc'",
        stmt(K::SetShardingKey(Some("abc".into()))).session(set("pgdog.sharding_key")),
    );
    check(
        "SET search_path = public",
        stmt(K::Session).session(set("search_path")),
    );
    check("SHOW pgdog.shard", stmt(K::Session));
    check(
        "DISCARD ALL",
        stmt(K::Session).session(SessionEffect::DiscardAll),
    );
    check(
        "COPY t (a) FROM STDIN",
        stmt(K::Copy { to: false })
            .tables(&["t"])
            .target("t")
            .write(true),
    );
    check(
        "COPY (SELECT * FROM t WHERE id = 1) TO STDOUT",
        stmt(K::Copy { to: true })
            .tables(&["t"])
            .conditions(vec![eq("id", int(1, 33))]),
    );
    check(
        "EXPLAIN ANALYZE UPDATE t SET a = 1 WHERE id = 2",
        stmt(K::Explain)
            .tables(&["t"])
            .target("t")
            .set_columns(&["a"])
            .conditions(vec![eq("id", int(2, 46))])
            .write(true),
    );
    check(
        "EXPLAIN SELECT * FROM t FOR SHARE",
        stmt(K::Explain).tables(&["t"]).locking(),
    );
    check(
        "CREATE TABLE t (id bigint REFERENCES u)",
        stmt(K::Ddl).tables(&["t", "u"]),
    );
    check("TRUNCATE t", stmt(K::Ddl).tables(&["t"]));
    check("DROP TABLE t", stmt(K::Ddl));
    check("CALL p(1)", stmt(K::Other).write(true));
    check(
        "DO $$ BEGIN PERFORM 1; END $$",
        stmt(K::Do(Box::new(InlineCode {
            language: "plpgsql".into(),
            body: " BEGIN PERFORM 1; END ".into(),
        })))
        .write(true),
    );
    check("VACUUM t", stmt(K::Other).tables(&["t"]));
    check("LISTEN ch", stmt(K::Other));
    check(
        "PREPARE p AS SELECT * FROM t WHERE id = $1",
        stmt(K::Other)
            .tables(&["t"])
            .conditions(vec![eq("id", param(1))])
            .session(SessionEffect::Prepare {
                name: "p".into(),
                types: Vec::new(),
                start: 0,
                len: 0,
            }),
    );
}

#[test]
fn prepare_and_execute() {
    use router::summary::Argument;
    use StatementKind as K;
    let sql = "PREPARE q (int8, public.mytype[]) AS INSERT INTO t (id) VALUES ($1); EXECUTE q(-7, 'a', 1e3, NULL, 2.5, $1, now(), '1'::int8)";
    let text = |text: &str, location| ValueSource::Text {
        text: text.into(),
        location,
    };
    let mut expected = Summary {
        statements: vec![
            stmt(K::Other)
                .tables(&["t"])
                .conditions(vec![Condition::Eq {
                    column: ColumnRef {
                        table: Some("t".into()),
                        column: "id".into(),
                    },
                    value: param(1),
                }])
                .session(SessionEffect::Prepare {
                    name: "q".into(),
                    types: vec![Some("int8".into()), Some("mytype".into())],
                    start: 0,
                    len: 67,
                }),
            stmt(K::Other).session(SessionEffect::Execute {
                name: "q".into(),
                args: vec![
                    Argument::Value(ValueSource::Integer {
                        value: -7,
                        location: 79,
                    }),
                    Argument::Value(text("a", 83)),
                    Argument::Number("1e3".into()),
                    Argument::Value(ValueSource::Null),
                    Argument::Number("2.5".into()),
                    Argument::Value(ValueSource::Param(1)),
                    Argument::Expression,
                    Argument::Expression,
                ],
                start: 69,
                len: 0,
            }),
        ],
    };
    expected.canonicalize();
    check_all(sql, expected);
    for (sql, kind) in [
        ("EXPLAIN ANALYZE EXECUTE q", K::Explain),
        ("CREATE TABLE c AS EXECUTE q", K::Ddl),
    ] {
        let execute = SessionEffect::Execute {
            name: "q".into(),
            args: Vec::new(),
            start: 0,
            len: 0,
        };
        let write = kind == K::Ddl;
        let tables: &[&str] = if write { &["c"] } else { &[] };
        check(sql, stmt(kind).tables(tables).write(write).session(execute));
    }
}

#[test]
fn statements_in_order() {
    check_all(
        "BEGIN; SELECT * FROM t WHERE id = 1; COMMIT",
        Summary {
            statements: vec![
                stmt(StatementKind::Begin),
                select()
                    .tables(&["t"])
                    .conditions(vec![eq("id", int(1, 34))]),
                stmt(StatementKind::Commit),
            ],
        },
    );
}

/// Readings of the rules where their letter leaves room (the closest to
/// Postgres's own semantics), shared by both engines.
#[test]
fn readings_where_the_rules_leave_room() {
    use StatementKind as K;
    // `FOR UPDATE OF a` names a FROM item, not a table.
    check(
        "SELECT * FROM accounts a FOR UPDATE OF a",
        select().tables(&["accounts a"]).locking(),
    );
    // Inner joins count through preserved sides only: `c.k = 2` restricts
    // only the nullable side of the LEFT JOIN; `a.k = 1` holds for every row.
    check(
        "SELECT * FROM (a JOIN b ON a.k = 1) LEFT JOIN (c JOIN d ON c.k = 2) ON true",
        select()
            .tables(&["a", "b", "c", "d"])
            .conditions(vec![eq("a.k", int(1, 33))]),
    );
    check(
        "SELECT * FROM a FULL JOIN (b JOIN c ON b.k = 1) ON true",
        select().tables(&["a", "b", "c"]),
    );
    // A level's WHERE and join quals form one AND; nested ANDs stay nested.
    check(
        "SELECT * FROM a JOIN b ON b.k = 1 WHERE a.k = 2 AND a.j = 3",
        select().tables(&["a", "b"]).conditions(vec![and(vec![
            and(vec![eq("a.k", int(2, 46)), eq("a.j", int(3, 58))]),
            eq("b.k", int(1, 32)),
        ])]),
    );
    // `$0` names no parameter.
    check("SELECT 1 FROM t WHERE id = $0", select().tables(&["t"]));
    // Assigning into a part of a column gives no key.
    check(
        "INSERT INTO t (id, arr[1]) VALUES (1, 2)",
        stmt(K::Insert)
            .tables(&["t"])
            .target("t")
            .conditions(vec![eq("t.id", int(1, 35))]),
    );
    // DEFAULT VALUES has no VALUES rows, and no column list to miss.
    check(
        "INSERT INTO t DEFAULT VALUES",
        stmt(K::Insert).tables(&["t"]).target("t"),
    );
    // SET ... TO DEFAULT is RESET; the other forms are the server's business.
    check(
        "SET pgdog.shard TO DEFAULT",
        stmt(K::SetShard(None)).session(reset("pgdog.shard")),
    );
    check(
        "SET pgdog.shard = 1.5",
        stmt(K::SetShard(Some("1.5".into()))).session(set("pgdog.shard")),
    );
    check(
        "SET pgdog.sharding_key = on",
        stmt(K::SetShardingKey(Some("on".into()))).session(set("pgdog.sharding_key")),
    );
    check(
        "SET pgdog.shard = 1, 2",
        stmt(K::Session).session(set("pgdog.shard")),
    );
    check(
        "SET pgdog.shard FROM CURRENT",
        stmt(K::Session).session(set("pgdog.shard")),
    );
    check(
        "SET \"PgDog\".shard = 1",
        stmt(K::Session).session(set("pgdog.shard")),
    );
    // REFRESH MATERIALIZED VIEW rewrites the view's data on every shard.
    check("REFRESH MATERIALIZED VIEW mv", stmt(K::Ddl).tables(&["mv"]));
    // EXPLAIN takes the explained statement's `write`.
    check(
        "EXPLAIN SELECT * INTO archive FROM jobs",
        stmt(K::Explain).tables(&["archive", "jobs"]).write(true),
    );
    check(
        "CREATE TABLE archive AS SELECT * FROM jobs WHERE id = 1",
        stmt(K::Ddl)
            .tables(&["archive", "jobs"])
            .conditions(vec![eq("jobs.id", int(1, 54))]),
    );
    // INTO in a set operation's leftmost arm is Postgres's SELECT INTO.
    check(
        "SELECT 1 INTO archive UNION SELECT 2",
        select().tables(&["archive"]).write(true),
    );
}

/// Subqueries inside expressions restrict which rows qualify, not where the
/// statement's rows live: they add no condition, wherever they sit, and
/// neither do their own FROM subqueries and CTEs.
#[test]
fn sublinks_add_no_condition() {
    check(
        "SELECT * FROM t WHERE k = 3 OR id IN (SELECT id FROM t WHERE k = 4)",
        select().tables(&["t"]),
    );
    check(
        "SELECT (SELECT count(*) FROM u WHERE k = 3) FROM t",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT * FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE k = 3)",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE k = 3)",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT * FROM t WHERE k = ANY (SELECT k FROM u WHERE k = 3)",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT * FROM t WHERE k > ALL (SELECT k FROM u WHERE k = 3)",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT ARRAY(SELECT k FROM u WHERE k = 3) FROM t",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT k FROM t GROUP BY k HAVING k IN (SELECT k FROM u WHERE k = 3)",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT * FROM t JOIN u ON u.id IN (SELECT id FROM v WHERE k = 3)",
        select().tables(&["t", "u", "v"]),
    );
    check(
        "SELECT * FROM t WHERE id IN (WITH c AS (SELECT id FROM u WHERE k = 3) SELECT c.id FROM c, (SELECT 1 FROM v WHERE k = 4) s)",
        select().tables(&["t", "u", "v"]),
    );
    check(
        "DELETE FROM t WHERE id IN (SELECT id FROM u WHERE k = 3) RETURNING (SELECT 1 FROM v WHERE k = 4)",
        stmt(StatementKind::Delete).tables(&["t", "u", "v"]).target("t"),
    );
    check(
        "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE k = 3) AND t.k = 1",
        select()
            .tables(&["t", "u"])
            .conditions(vec![eq("t.k", int(1, 69))]),
    );
    check(
        "INSERT INTO t (k, v) VALUES (1, (SELECT v FROM u WHERE k = 3))",
        stmt(StatementKind::Insert)
            .tables(&["t", "u"])
            .target("t")
            .conditions(vec![eq("t.k", int(1, 29))]),
    );
    check(
        "UPDATE t SET v = (SELECT v FROM u WHERE k = 3) WHERE k = 1 RETURNING (SELECT 1 FROM w WHERE k = 4)",
        stmt(StatementKind::Update)
            .tables(&["t", "u", "w"])
            .target("t")
            .set_columns(&["v"])
            .conditions(vec![eq("t.k", int(1, 57))]),
    );
}

/// FROM subqueries (LATERAL too) and their joins count through preserved
/// join sides only, at any nesting; UPDATE's FROM and DELETE's USING alike.
#[test]
fn from_subqueries_count_through_preserved_sides() {
    check(
        "SELECT * FROM t LEFT JOIN (SELECT * FROM u WHERE k = 3) s ON true WHERE t.k = 1",
        select()
            .tables(&["t", "u"])
            .conditions(vec![eq("t.k", int(1, 78))]),
    );
    check(
        "SELECT * FROM (SELECT * FROM u WHERE k = 3) s RIGHT JOIN t ON true",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT * FROM t FULL JOIN (SELECT * FROM u WHERE k = 3) s ON true",
        select().tables(&["t", "u"]),
    );
    check(
        "SELECT * FROM (SELECT * FROM u WHERE k = 3) s LEFT JOIN t ON true",
        select()
            .tables(&["t", "u"])
            .conditions(vec![eq("u.k", int(3, 41))]),
    );
    check(
        "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.k = t.k AND u.j = 2) s",
        select()
            .tables(&["t", "u"])
            .conditions(vec![eq("u.j", int(2, 68))]),
    );
    check(
        "SELECT * FROM t JOIN (SELECT * FROM (SELECT * FROM u WHERE k = 3) a WHERE a.j = 4) b ON b.i = 5",
        select().tables(&["t", "u"]).conditions(vec![
            eq("u.i", int(5, 94)),
            eq("u.j", int(4, 80)),
            eq("u.k", int(3, 63)),
        ]),
    );
    check(
        "UPDATE t SET v = 1 FROM (SELECT * FROM u WHERE k = 3) s JOIN w ON w.k = 2 WHERE t.id = s.id",
        stmt(StatementKind::Update)
            .tables(&["t", "u", "w"])
            .target("t")
            .set_columns(&["v"])
            .conditions(vec![eq("w.k", int(2, 72)), eq("u.k", int(3, 51))]),
    );
    check(
        "DELETE FROM t USING u LEFT JOIN (SELECT * FROM v WHERE k = 2) s ON true WHERE t.k = 1",
        stmt(StatementKind::Delete)
            .tables(&["t", "u", "v"])
            .target("t")
            .conditions(vec![eq("t.k", int(1, 84))]),
    );
    check(
        "MERGE INTO t USING (SELECT * FROM u WHERE k = 2) s ON t.id = s.id WHEN MATCHED THEN DELETE",
        stmt(StatementKind::Merge)
            .tables(&["t", "u"])
            .target("t")
            .conditions(vec![eq("u.k", int(2, 46))]),
    );
}

/// UNION: one condition, the OR of the arms' (none if an arm has none);
/// INTERSECT: every arm's; EXCEPT: the left arm's; nested alike.
#[test]
fn set_operations_combine_their_arms() {
    check(
        "SELECT * FROM t WHERE k = 3 UNION ALL SELECT * FROM t",
        select().tables(&["t"]),
    );
    check(
        "SELECT 1 FROM a WHERE k = 1 UNION SELECT 1 FROM b WHERE k = 2 UNION SELECT 1 FROM c WHERE k = 3",
        select().tables(&["a", "b", "c"]).conditions(vec![or(vec![
            or(vec![eq("a.k", int(1, 26)), eq("b.k", int(2, 60))]),
            eq("c.k", int(3, 94)),
        ])]),
    );
    check(
        "SELECT 1 FROM (SELECT * FROM a WHERE k = 1) s WHERE s.j = 2 UNION SELECT 1 FROM b WHERE k = 3",
        select().tables(&["a", "b"]).conditions(vec![or(vec![
            and(vec![eq("a.j", int(2, 58)), eq("a.k", int(1, 41))]),
            eq("b.k", int(3, 92)),
        ])]),
    );
    check(
        "SELECT k FROM a WHERE k = 1 INTERSECT SELECT k FROM b WHERE k = 2",
        select()
            .tables(&["a", "b"])
            .conditions(vec![eq("a.k", int(1, 26)), eq("b.k", int(2, 64))]),
    );
    check(
        "SELECT k FROM a WHERE k = 1 EXCEPT SELECT k FROM b WHERE k = 2",
        select()
            .tables(&["a", "b"])
            .conditions(vec![eq("a.k", int(1, 26))]),
    );
    check(
        "(SELECT k FROM a WHERE k = 1 EXCEPT SELECT k FROM b WHERE k = 2) UNION SELECT k FROM c WHERE k = 3",
        select().tables(&["a", "b", "c"]).conditions(vec![or(vec![
            eq("a.k", int(1, 27)),
            eq("c.k", int(3, 97)),
        ])]),
    );
    check(
        "INSERT INTO t (k) SELECT k FROM a WHERE k = 1 UNION SELECT k FROM b WHERE k = 2",
        stmt(StatementKind::Insert)
            .tables(&["a", "b", "t"])
            .target("t")
            .conditions(vec![or(vec![eq("a.k", int(1, 44)), eq("b.k", int(2, 78))])]),
    );
    check(
        "SELECT * FROM (SELECT * FROM a WHERE k = 1 UNION ALL SELECT * FROM b WHERE k = 2) s WHERE s.j = 3",
        // A set operation passes no column through: `s.j` restricts nothing.
        select().tables(&["a", "b"]).conditions(vec![or(vec![
            eq("a.k", int(1, 41)),
            eq("b.k", int(2, 79)),
        ])]),
    );
}

/// A CTE's body counts where a contributing FROM references it; a
/// data-modifying CTE of the statement's own WITH counts always.
#[test]
fn ctes_count_where_referenced() {
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM c",
        select()
            .tables(&["t"])
            .conditions(vec![eq("k", int(1, 37))]),
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM u",
        select().tables(&["t", "u"]),
    );
    check(
        "WITH c AS (SELECT id FROM t WHERE k = 1) SELECT * FROM u WHERE id IN (SELECT id FROM c)",
        select().tables(&["t", "u"]),
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM u LEFT JOIN c ON true",
        select().tables(&["t", "u"]),
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM c UNION ALL SELECT * FROM u",
        select().tables(&["t", "u"]),
    );
    check(
        "WITH a AS (SELECT * FROM b), b AS (SELECT * FROM t WHERE k = 1) SELECT * FROM a",
        select().tables(&["t"]),
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM c UNION ALL SELECT * FROM u WHERE k = 2",
        select().tables(&["t", "u"]).conditions(vec![or(vec![
            eq("t.k", int(1, 37)),
            eq("u.k", int(2, 92)),
        ])]),
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM c JOIN c AS d ON true",
        select()
            .tables(&["t"])
            .conditions(vec![eq("k", int(1, 37))]),
    );
    check(
        "WITH a AS (SELECT * FROM t WHERE k = 1), b AS (SELECT * FROM a WHERE j = 2) SELECT * FROM b",
        select()
            .tables(&["t"])
            .conditions(vec![eq("k", int(1, 37)), eq("j", int(2, 73))]),
    );
    check("WITH RECURSIVE r AS (SELECT * FROM t WHERE k = 1 UNION ALL SELECT t.* FROM t JOIN r ON t.parent = r.id) SELECT * FROM r", select().tables(&["t"]));
    check(
        "WITH RECURSIVE r AS (SELECT * FROM t WHERE k = 1 UNION ALL SELECT t.* FROM t JOIN r ON t.parent = r.id WHERE t.k = 1) SELECT * FROM r",
        select().tables(&["t"]).conditions(vec![or(vec![
            eq("k", int(1, 47)),
            eq("t.k", int(1, 115)),
        ])]),
    );
    check(
        "WITH c AS (SELECT * FROM t WHERE k = 1) SELECT * FROM (WITH c AS (SELECT * FROM u WHERE k = 2) SELECT * FROM c) s",
        select()
            .tables(&["t", "u"])
            .conditions(vec![eq("u.k", int(2, 92))]),
    );
    check(
        "WITH a AS (SELECT * FROM t WHERE k = 1) SELECT * FROM (WITH b AS (SELECT * FROM a) SELECT * FROM b) s",
        select()
            .tables(&["t"])
            .conditions(vec![eq("k", int(1, 37))]),
    );
    // A data-modifying CTE of the statement's own WITH runs, referenced or
    // not: its conditions are its write's (the statement's own levels' only
    // where they reference it).
    let write = |inserts, conditions| CteWrite {
        inserts,
        table: table("t"),
        set_columns: Vec::new(),
        conditions,
    };
    let mut expected = select().tables(&["t", "u"]).write(true);
    expected.cte_writes = vec![write(false, vec![eq("t.k", int(1, 35))])];
    check(
        "WITH d AS (DELETE FROM t WHERE k = 1 RETURNING *) SELECT * FROM u",
        expected,
    );
    let mut expected = select().tables(&["t"]).write(true);
    expected.conditions = vec![eq("k", int(1, 35))];
    expected.cte_writes = vec![write(false, vec![eq("k", int(1, 35))])];
    check(
        "WITH d AS (DELETE FROM t WHERE k = 1 RETURNING *) SELECT * FROM d",
        expected,
    );
    let mut expected = stmt(StatementKind::Update)
        .tables(&["t", "u"])
        .target("u")
        .set_columns(&["v"])
        .conditions(vec![eq("u.k", int(2, 82))]);
    expected.cte_writes = vec![write(true, vec![eq("t.k", int(1, 37))])];
    check(
        "WITH i AS (INSERT INTO t (k) VALUES (1) RETURNING *) UPDATE u SET v = 1 WHERE k = 2",
        expected,
    );
}

/// `target`: the table the statement itself (or the explained one) writes;
/// `set_columns`: what an UPDATE or a MERGE's UPDATE assigns, not an upsert.
#[test]
fn targets_and_set_columns() {
    use StatementKind as K;
    check(
        "UPDATE s.t AS u SET b = 1, a = 2, (c, a) = (3, 4), arr[1] = 5, comp.f = 6 WHERE u.id = 1",
        stmt(K::Update)
            .tables(&["s.t u"])
            .target("s.t u")
            .set_columns(&["a", "arr", "b", "c", "comp"])
            .conditions(vec![eq("u.id", int(1, 87))]),
    );
    check("DELETE FROM t", stmt(K::Delete).tables(&["t"]).target("t"));
    check(
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.x THEN UPDATE SET v = 1 WHEN MATCHED THEN UPDATE SET w = 2, v = 3 WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
        stmt(K::Merge)
            .tables(&["s", "t"])
            .target("t")
            .set_columns(&["v", "w"]),
    );
    check(
        "INSERT INTO t (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET k = excluded.k",
        stmt(K::Insert)
            .tables(&["t"])
            .target("t")
            .conditions(vec![eq("t.id", int(1, 27))]),
    );
    // NOT MATCHED BY SOURCE updates target rows too.
    check(
        "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE SET gone = true",
        stmt(K::Merge)
            .tables(&["s", "t"])
            .target("t")
            .set_columns(&["gone"]),
    );
    check(
        "COPY t TO STDOUT",
        stmt(K::Copy { to: true }).tables(&["t"]),
    );
    check(
        "EXPLAIN DELETE FROM s.t x",
        stmt(K::Explain)
            .tables(&["s.t x"])
            .target("s.t x")
            .write(true),
    );
    check(
        "WITH u AS (UPDATE t SET k = 1 RETURNING *) SELECT * FROM u",
        select().tables(&["t"]).write(true),
    );
    check(
        "SELECT * INTO archive FROM jobs",
        select().tables(&["archive", "jobs"]).write(true),
    );
    // Postgres folds identifiers in ASCII only: so does a cast's type name.
    check(
        "SELECT 1 FROM t WHERE id = $1::\"ÄInt8\"",
        select()
            .tables(&["t"])
            .conditions(vec![eq("id", cast(param(1), "Äint8"))]),
    );
}

// ---------------------------------------------------------------------------
// Sublinks.

/// A sublink reading `tables`, restricted by `conditions`; its own FROM's
/// tables and column equalities are set with the methods below.
fn sublink(tables: &[&str], conditions: Vec<Condition>) -> Sublink {
    Sublink {
        tables: tables.iter().map(|t| table(t)).collect(),
        reads_every_table: false,
        conditions,
        from_tables: Vec::new(),
        equalities: Vec::new(),
        in_key: None,
    }
}

trait OwnLevel {
    fn from(self, tables: &[&str]) -> Self;
    fn equal(self, a: &str, b: &str) -> Self;
    fn in_key(self, inner: &str, outer: &str) -> Self;
}

impl OwnLevel for Sublink {
    fn from(mut self, tables: &[&str]) -> Self {
        self.from_tables = tables.iter().map(|t| table(t)).collect();
        self
    }
    fn equal(mut self, a: &str, b: &str) -> Self {
        let (a, b) = (col(a), col(b));
        self.equalities.push(if a <= b { (a, b) } else { (b, a) });
        self
    }
    fn in_key(mut self, inner: &str, outer: &str) -> Self {
        self.in_key = Some((col(inner), col(outer)));
        self
    }
}

/// The sublink facts of a statement reading `outside` outside its sublinks.
fn sublinks(outside: &[&str], subqueries: Vec<Sublink>) -> Option<Box<Sublinks>> {
    Some(Box::new(Sublinks {
        subqueries,
        tables_outside: outside.iter().map(|t| table(t)).collect(),
        other_names: Vec::new(),
        unnamed_item: false,
    }))
}

fn named(mut facts: Option<Box<Sublinks>>, names: &[&str], unnamed: bool) -> Option<Box<Sublinks>> {
    if let Some(facts) = facts.as_deref_mut() {
        facts.other_names = names.iter().map(|n| n.to_string()).collect();
        facts.unnamed_item = unnamed;
    }
    facts
}

fn with(mut stmt: StatementSummary, facts: Option<Box<Sublinks>>) -> StatementSummary {
    stmt.sublinks = facts;
    stmt
}

/// Each sublink, nested ones too, with its own tables, conditions, own FROM
/// and equalities; the statement's tables outside them.
#[test]
fn sublink_facts() {
    // No sublink: no facts (the summary stays one pointer larger only).
    let plain = same_in_both("SELECT * FROM t JOIN u ON u.k = t.k WHERE t.k = 1");
    assert_eq!(plain.statements[0].sublinks, None);
    check(
        "SELECT * FROM t WHERE a = (SELECT a FROM t WHERE k = 1) AND b > 2",
        with(
            select().tables(&["t"]),
            sublinks(
                &["t"],
                vec![sublink(&["t"], vec![eq("k", int(1, 53))]).from(&["t"])],
            ),
        ),
    );
    check(
        "SELECT * FROM u x WHERE EXISTS (SELECT 1 FROM o JOIN i ON i.k = o.k AND i.k = x.k LEFT JOIN p ON p.k = x.k WHERE o.k = x.k AND (o.a = x.a OR o.b = 1) AND NOT o.c = x.c)",
        with(
            select().tables(&["u x", "o", "i", "p"]),
            sublinks(
                &["u x"],
                vec![sublink(&["o", "i", "p"], vec![])
                    .from(&["o", "i", "p"])
                    .equal("i.k", "o.k")
                    .equal("i.k", "x.k")
                    .equal("o.k", "x.k")],
            ),
        ),
    );
    // Nested sublinks are sublinks of their own; a sublink's FROM subquery
    // and own CTE are its own.
    check(
        "SELECT (SELECT count(*) FROM a WHERE a.k = b.k AND EXISTS (SELECT 1 FROM c WHERE c.k = 2)) FROM b",
        with(
            select().tables(&["a", "b", "c"]),
            sublinks(
                &["b"],
                vec![
                    sublink(&["a"], vec![]).from(&["a"]).equal("a.k", "b.k"),
                    sublink(&["c"], vec![eq("c.k", int(2, 87))]).from(&["c"]),
                ],
            ),
        ),
    );
    check(
        "SELECT * FROM t WHERE k IN (WITH c AS (SELECT k FROM u WHERE k = 3) SELECT s.k FROM c, (SELECT k FROM v) s)",
        with(
            select().tables(&["t", "u", "v"]),
            named(
                sublinks(
                    &["t"],
                    vec![sublink(&["u", "v"], vec![eq("u.k", int(3, 65))]).in_key("s.k", "k")],
                ),
                &["c", "s"],
                false,
            ),
        ),
    );
    // CTEs of enclosing queries: their tables and conditions where the
    // sublink references them (through other CTEs too); the statement's
    // own CTE bodies count outside sublinks.
    check(
        "WITH a AS (SELECT * FROM t WHERE k = 1), b AS (SELECT * FROM a JOIN w ON true) SELECT * FROM u WHERE id IN (SELECT id FROM b)",
        with(
            select().tables(&["t", "w", "u"]),
            named(
                sublinks(
                    &["t", "w", "u"],
                    vec![sublink(&["t", "w"], vec![eq("t.k", int(1, 37))]).in_key("id", "id")],
                ),
                &["a", "b"],
                false,
            ),
        ),
    );
    check(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r, t WHERE n < 5) SELECT * FROM u WHERE x IN (SELECT n FROM r)",
        with(
            select().tables(&["t", "u"]),
            named(
                sublinks(&["t", "u"], vec![sublink(&["t"], vec![]).in_key("n", "x")]),
                &["r"],
                false,
            ),
        ),
    );
    // Names of FROM items that are not tables; a function without an alias
    // goes by its name, or by one that cannot be told.
    check(
        "SELECT * FROM t, unnest($1) WITH ORDINALITY, generate_series(1, 2) g, (SELECT 1) s, t AS x JOIN u USING (k) AS j WHERE EXISTS (SELECT 1 FROM coalesce(1))",
        with(
            select().tables(&["t", "t x", "u"]),
            named(
                sublinks(&["t", "t x", "u"], vec![sublink(&[], vec![])]),
                &["g", "j", "s", "unnest"],
                true,
            ),
        ),
    );
    // Anywhere: target list, HAVING, ON, VALUES, SET, RETURNING, ORDER BY.
    check(
        "UPDATE t SET v = (SELECT v FROM u WHERE k = 3) WHERE k = 1 RETURNING (SELECT 1 FROM w)",
        with(
            stmt(StatementKind::Update)
                .tables(&["t", "u", "w"])
                .target("t")
                .set_columns(&["v"])
                .conditions(vec![eq("t.k", int(1, 57))]),
            sublinks(
                &["t"],
                vec![
                    sublink(&["u"], vec![eq("u.k", int(3, 44))]).from(&["u"]),
                    sublink(&["w"], vec![]).from(&["w"]),
                ],
            ),
        ),
    );
    // `column IN (SELECT column ...)` AND-ed into a SELECT's WHERE: its
    // in_key (inner, outer), when its query selects one plain
    // column, grouped by it if grouped, without LIMIT, OFFSET, DISTINCT ON
    // or windows.
    for sql in [
        "SELECT * FROM t WHERE a = 1 AND t.k IN (SELECT u.k FROM u GROUP BY u.k, v HAVING count(*) > 1)",
        "SELECT * FROM t WHERE t.k = ANY (SELECT DISTINCT u.k FROM u WHERE u.v = 2)",
        "SELECT * FROM t WHERE (t.k IN (SELECT u.k FROM u) AND b) AND c",
    ] {
        let facts = same_in_both(sql).statements[0].sublinks.clone();
        let in_key = facts.and_then(|f| f.subqueries[0].in_key.clone());
        assert_eq!(in_key, Some((col("u.k"), col("t.k"))), "{sql}");
    }
    for sql in [
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u LIMIT 3)",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u OFFSET 3)",
        "SELECT * FROM t WHERE t.k IN (SELECT DISTINCT ON (v) u.k FROM u)",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u WINDOW w AS ())",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u HAVING true)",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u GROUP BY v)",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u GROUP BY CUBE (u.k))",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k, 1 FROM u)",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k + 1 FROM u)",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u UNION SELECT 1)",
        "SELECT * FROM t WHERE t.k + 1 IN (SELECT u.k FROM u)",
        "SELECT * FROM t WHERE t.k NOT IN (SELECT u.k FROM u)",
        "SELECT * FROM t WHERE t.k IN (SELECT u.k FROM u) OR a",
        "SELECT * FROM t WHERE t.k > ANY (SELECT u.k FROM u)",
        "SELECT t.k IN (SELECT u.k FROM u) FROM t",
        "SELECT * FROM t JOIN w ON t.k IN (SELECT u.k FROM u)",
        "DELETE FROM t WHERE t.k IN (SELECT u.k FROM u)",
    ] {
        let facts = same_in_both(sql).statements[0].sublinks.clone();
        let in_key = facts.map(|f| f.subqueries[0].in_key.clone());
        assert_eq!(in_key, Some(None), "{sql}");
    }
    // A FROM subquery without a name (Postgres 16+) goes by none.
    let facts = same_in_both("SELECT * FROM t, (SELECT 1) WHERE EXISTS (SELECT 1 FROM u)");
    assert!(facts.statements[0]
        .sublinks
        .as_ref()
        .is_some_and(|f| f.unnamed_item));
    // A set operation has no own level to correlate.
    check(
        "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k UNION SELECT 1 FROM v WHERE v.k = 2)",
        with(
            select().tables(&["t", "u", "v"]),
            sublinks(&["t"], vec![sublink(&["u", "v"], vec![])]),
        ),
    );
}

/// Sublinks that reference CTE chains list at most `MAX_SUBLINK_TABLES`
/// tables; past that, they are read as reading every table.
#[test]
fn sublinks_past_the_table_limit() {
    let n = router::extract::MAX_SUBLINK_TABLES;
    let mut sql = String::from("WITH c0 AS (SELECT 1 FROM t0)");
    for i in 1..=n {
        sql.push_str(&format!(", c{i} AS (SELECT 1 FROM c{}, t{i})", i - 1));
    }
    sql.push_str(&format!(
        " SELECT (SELECT 1 FROM c{n}), (SELECT 1 FROM c{})",
        n / 4
    ));
    let summary = same_in_both(&sql);
    let facts = summary.statements[0].sublinks.as_deref().unwrap();
    let every: Vec<bool> = facts
        .subqueries
        .iter()
        .map(|sublink| sublink.reads_every_table)
        .collect();
    assert_eq!(every.len(), 2);
    assert!(every.contains(&true) && every.contains(&false), "{every:?}");
    for sublink in &facts.subqueries {
        if sublink.reads_every_table {
            assert!(sublink.tables.is_empty());
        } else {
            assert_eq!(sublink.tables.len(), n / 4 + 1);
        }
    }
}

/// The summary both engines give for `sql` (they must agree).
#[track_caller]
fn same_in_both(sql: &str) -> Summary {
    let protobuf = summarize_protobuf(&parse_raw(sql).unwrap()).unwrap();
    let pg_query = summarize_protobuf(&parse_protobuf(sql).unwrap()).unwrap();
    assert_eq!(pg_query, protobuf, "protobuf engine over parse_protobuf");
    let view = summarize(&ParseTree::parse(sql).unwrap()).unwrap();
    assert_eq!(view, protobuf, "view engine");
    protobuf
}

fn nodes(conditions: &[Condition]) -> usize {
    conditions
        .iter()
        .map(|condition| match condition {
            Condition::And(children) | Condition::Or(children) => 1 + nodes(children),
            _ => 1,
        })
        .sum()
}

/// A CTE whose conditions count more than `MAX_CTE_CONDITION_NODES` nodes
/// adds nothing where it is referenced, so CTEs that double each other's
/// conditions stay cheap.
#[test]
fn large_cte_conditions_are_not_copied() {
    use router::extract::MAX_CTE_CONDITION_NODES;
    let cte_of = |n: usize| {
        let values: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        format!(
            "WITH c AS (SELECT * FROM t WHERE k IN ({})) SELECT * FROM c",
            values.join(", ")
        )
    };
    // An OR of n - 1 Eqs: n nodes.
    let fits = same_in_both(&cte_of(MAX_CTE_CONDITION_NODES - 1));
    assert_eq!(
        nodes(&fits.statements[0].conditions),
        MAX_CTE_CONDITION_NODES
    );
    let too_big = same_in_both(&cte_of(MAX_CTE_CONDITION_NODES));
    assert!(too_big.statements[0].conditions.is_empty());

    // Each CTE reads the previous one in both arms of a UNION.
    let mut sql = "WITH c0 AS (SELECT * FROM t WHERE k = 1)".to_owned();
    for i in 1..=60 {
        let previous = i - 1;
        sql.push_str(&format!(
            ", c{i} AS (SELECT * FROM c{previous} WHERE j = 1 \
             UNION ALL SELECT * FROM c{previous} WHERE j = 2)"
        ));
    }
    sql.push_str(" SELECT * FROM c60");
    let start = std::time::Instant::now();
    let summary = same_in_both(&sql);
    assert!(nodes(&summary.statements[0].conditions) <= 2 * MAX_CTE_CONDITION_NODES + 5);
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}

/// Query levels count through CTE references too: a chain of CTEs, each
/// reading the previous one, is as deep as it is long, and both engines say
/// where it becomes too deep.
#[test]
fn cte_chains_count_as_query_levels() {
    use router::extract::MAX_DEPTH;
    let chain = |n: usize| {
        let mut sql = "WITH c0 AS (SELECT * FROM t WHERE k = 1)".to_owned();
        for i in 1..n {
            sql.push_str(&format!(", c{i} AS (SELECT * FROM c{})", i - 1));
        }
        sql.push_str(&format!(" SELECT * FROM c{}", n - 1));
        sql
    };
    // The statement is level 1; CTE `c{n-1}`'s body level 2, ..., `c0`'s n + 1.
    let sql = chain(MAX_DEPTH - 1);
    let summary = same_in_both(&sql);
    assert_eq!(summary.statements[0].conditions.len(), 1);
    let sql = chain(MAX_DEPTH);
    let protobuf = summarize_protobuf(&parse_raw(&sql).unwrap());
    assert_eq!(protobuf, Err(ExtractError::TooDeep));
    let view = summarize(&ParseTree::parse(&sql).unwrap());
    assert_eq!(view, Err(ExtractError::TooDeep));
}

/// A stack overflow aborts the whole test binary: run `test` in a child
/// process of this binary (on the harness's usual 2 MiB test-thread stack)
/// and report a crash as a failure.
fn in_child_process(name: &str, test: impl FnOnce()) {
    const CHILD: &str = "EXTRACT_ENGINES_CHILD";
    if std::env::var_os(CHILD).is_some() {
        test();
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .env_remove("RUST_MIN_STACK")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{name} failed in its child process ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_tree_deeper_than_max_depth_is_too_deep_for_the_view_engine() {
    in_child_process(
        "a_tree_deeper_than_max_depth_is_too_deep_for_the_view_engine",
        || {
            // Deeper than parse_raw converts: only the view engine sees it.
            let tree = ParseTree::parse(&nested_ands(2000)).unwrap();
            assert_eq!(summarize(&tree), Err(ExtractError::TooDeep));
        },
    );
}

#[test]
fn a_tree_deeper_than_max_depth_is_too_deep_for_the_protobuf_engine() {
    in_child_process(
        "a_tree_deeper_than_max_depth_is_too_deep_for_the_protobuf_engine",
        || {
            use parser_ffi::protobuf::{self as pb, node::Node as N};
            let sql = "SELECT 1 FROM t WHERE id = 1 AND id = 1";
            let mut tree = parse_raw(sql).unwrap();
            let Some(N::SelectStmt(select)) = tree.stmts[0].stmt.as_mut().unwrap().node.as_mut()
            else {
                panic!("not a SELECT")
            };
            // Nest the WHERE's AND 5000 levels deep, by hand.
            let mut where_clause = select.where_clause.take().unwrap();
            let Some(N::BoolExpr(and)) = where_clause.node.as_ref() else {
                panic!("not an AND")
            };
            let (leaf, template) = (and.args[0].clone(), and.clone());
            for _ in 0..5000 {
                let mut level = template.clone();
                level.args = vec![leaf.clone(), *where_clause];
                where_clause = Box::new(pb::Node {
                    node: Some(N::BoolExpr(level)),
                });
            }
            select.where_clause = Some(where_clause);
            assert_eq!(summarize_protobuf(&tree), Err(ExtractError::TooDeep));
            drop_on_a_big_stack(tree);
        },
    );
}

#[test]
fn the_deepest_tree_parse_raw_converts_is_summarized_alike_without_overflow() {
    in_child_process(
        "the_deepest_tree_parse_raw_converts_is_summarized_alike_without_overflow",
        || {
            // The deepest nesting parse_raw converts (it refuses MAX_DEPTH
            // nodes); the extractors run on the test thread's stack all the same.
            let (depth, sql, raw) = (900..=1000)
                .rev()
                .find_map(|depth| {
                    let sql = nested_ands(depth);
                    parse_raw(&sql).ok().map(|raw| (depth, sql, raw))
                })
                .unwrap();
            assert!(depth >= 990, "parse_raw stopped at {depth}");
            let summary = summarize_protobuf(&raw).unwrap();
            drop_on_a_big_stack(raw);
            assert_eq!(summary.statements[0].conditions.len(), 1);
            let view = summarize(&ParseTree::parse(&sql).unwrap());
            assert_eq!(view, Ok(summary), "view engine at {depth} levels");
        },
    );
}

/// Dropping prost structs recurses once per level: give deep ones room.
fn drop_on_a_big_stack<T: Send + 'static>(value: T) {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || drop(value))
        .unwrap()
        .join()
        .unwrap();
}

/// `SELECT 1 FROM t WHERE (id = 1 AND (id = 1 AND ... id = 1))`, `depth` ANDs deep.
fn nested_ands(depth: usize) -> String {
    format!(
        "SELECT 1 FROM t WHERE {}id = 1{}",
        "(id = 1 AND ".repeat(depth),
        ")".repeat(depth)
    )
}

#[test]
fn session_effects() {
    use StatementKind as K;
    let sql = "SET search_path TO a, b;RESET work_mem; DEALLOCATE s1";
    let mut expected = Summary {
        statements: vec![
            stmt(K::Session).session(SessionEffect::Set {
                name: "search_path".into(),
                start: 0,
                len: 23,
            }),
            stmt(K::Session).session(reset("work_mem")),
            stmt(K::Other).session(SessionEffect::Deallocate(Some("s1".into()))),
        ],
    };
    expected.canonicalize();
    check_all(sql, expected);
    #[rustfmt::skip]
    let cases = [
        ("RESET ALL", SessionEffect::ResetAll),
        ("SET LOCAL a.b = 1", SessionEffect::TransactionScoped("SET")),
        ("SET TRANSACTION READ ONLY", SessionEffect::TransactionScoped("SET")),
        ("SET CONSTRAINTS ALL IMMEDIATE", SessionEffect::TransactionScoped("SET CONSTRAINTS")),
        ("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", SessionEffect::Untracked),
        ("SET TIME ZONE DEFAULT", reset("timezone")),
    ];
    for (sql, effect) in cases {
        let kind = if sql.starts_with("SET CONSTRAINTS") {
            K::Other
        } else {
            K::Session
        };
        check(sql, stmt(kind).session(effect));
    }
    check(
        "DEALLOCATE ALL",
        stmt(K::Other).session(SessionEffect::Deallocate(None)),
    );
}

/// A call as `schema.name(args)`, each argument a value or `None`.
fn call(name: &str, args: Vec<Option<Value>>) -> Call {
    let (schema, name) = match name.split_once('.') {
        Some((schema, name)) => (Some(schema.to_owned()), name.to_owned()),
        None => (None, name.to_owned()),
    };
    Call { schema, name, args }
}

fn text_at(text: &str, location: i32, cast: Option<&str>) -> Option<Value> {
    Some(Value {
        source: ValueSource::Text {
            text: text.into(),
            location,
        },
        cast: cast.map(str::to_owned),
    })
}

#[test]
fn calls_anywhere_with_their_constant_arguments() {
    let with_calls = |sql: &str, calls: Vec<Call>| {
        let mut expected = select().tables(&["t"]);
        expected.calls = calls;
        check(sql, expected);
    };
    with_calls(
        "SELECT count(*), nextval('s') FROM t",
        vec![
            call("count", vec![]),
            call("nextval", vec![text_at("s", 25, None)]),
        ],
    );
    with_calls(
        "SELECT * FROM t WHERE x = app.f($1::int, y, 'a'::regclass, g(2))",
        vec![
            call(
                "app.f",
                vec![
                    Some(Value {
                        source: ValueSource::Param(1),
                        cast: Some("int4".into()),
                    }),
                    None,
                    text_at("a", 44, Some("regclass")),
                    None,
                ],
            ),
            call(
                "g",
                vec![Some(Value {
                    source: ValueSource::Integer {
                        value: 2,
                        location: 61,
                    },
                    cast: None,
                })],
            ),
        ],
    );
    // In a sublink, a FROM function, ORDER BY.
    with_calls(
        "SELECT 1 FROM t, f() WHERE EXISTS (SELECT h()) ORDER BY k()",
        vec![call("f", vec![]), call("h", vec![]), call("k", vec![])],
    );
    let mut procedure = stmt(StatementKind::Other).write(true);
    procedure.calls = vec![
        call("p", vec![text_at("x", 7, None), None]),
        call("q", vec![]),
    ];
    check("CALL p('x', q())", procedure);
}

#[test]
fn cursor_effects() {
    use router::summary::{CursorEffect as C, CursorOptions, FetchDirection as D, FETCH_ALL};
    use StatementKind as K;
    let declare = |name: &str, binary, scroll, hold| {
        SessionEffect::Cursor(C::Declare {
            name: name.into(),
            options: CursorOptions {
                binary,
                scroll,
                hold,
            },
        })
    };
    let fetch = |direction, count, moves| {
        SessionEffect::Cursor(C::Fetch {
            name: "c".into(),
            direction,
            count,
            moves,
        })
    };
    #[rustfmt::skip]
    let cases = [
        ("DECLARE c CURSOR FOR SELECT 1", declare("c", false, false, false)),
        ("DECLARE \"C x\" BINARY NO SCROLL CURSOR WITH HOLD FOR SELECT 1", declare("C x", true, false, true)),
        ("DECLARE c SCROLL CURSOR WITHOUT HOLD FOR SELECT 1", declare("c", false, true, false)),
        ("FETCH c", fetch(D::Forward, 1, false)),
        ("FETCH NEXT FROM c", fetch(D::Forward, 1, false)),
        ("FETCH 7 FROM c", fetch(D::Forward, 7, false)),
        ("FETCH -7 FROM c", fetch(D::Forward, -7, false)),
        ("FETCH FORWARD ALL IN c", fetch(D::Forward, FETCH_ALL, false)),
        ("FETCH ALL FROM c", fetch(D::Forward, FETCH_ALL, false)),
        ("FETCH PRIOR FROM c", fetch(D::Backward, 1, false)),
        ("FETCH BACKWARD 3 FROM c", fetch(D::Backward, 3, false)),
        ("FETCH LAST FROM c", fetch(D::Absolute, -1, false)),
        ("FETCH RELATIVE 0 FROM c", fetch(D::Relative, 0, false)),
        ("MOVE FORWARD 5 IN c", fetch(D::Forward, 5, true)),
        ("CLOSE c", SessionEffect::Cursor(C::Close(Some("c".into())))),
        ("CLOSE ALL", SessionEffect::Cursor(C::Close(None))),
    ];
    for (sql, effect) in cases {
        check(sql, stmt(K::Other).session(effect));
    }
    check(
        "DECLARE c CURSOR FOR SELECT * FROM t WHERE id = 1",
        stmt(K::Other)
            .tables(&["t"])
            .conditions(vec![eq("id", int(1, 48))])
            .session(declare("c", false, false, false)),
    );
    check(
        "DELETE FROM t WHERE CURRENT OF c",
        stmt(K::Delete)
            .tables(&["t"])
            .write(true)
            .target("t")
            .session(SessionEffect::Cursor(C::CurrentOf("c".into()))),
    );
}
