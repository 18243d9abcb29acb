//! The join facts (`StatementSummary::joins`) both extractors give for chosen statements, as
//! the rules in `router::extract` spell them out. (The engines are compared with each other on
//! the whole corpus in `extract_engines.rs`, `parser-ffi/tests/corpus/joins.sql` included.)

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use parser_ffi::{parse_protobuf, parse_raw, ParseTree};
use router::extract::{summarize, summarize_protobuf};
use router::summary::{
    ColumnRef, Condition, Derived, FromItem, JoinEquality, JoinLevel, JoinUsing, Joins, OuterJoin,
    OuterKind, TableRef, Value, ValueSource,
};

/// The join facts of `sql`'s one statement; both engines must agree.
#[track_caller]
fn joins(sql: &str) -> Option<Box<Joins>> {
    let protobuf = summarize_protobuf(&parse_raw(sql).unwrap()).unwrap();
    let pg_query = summarize_protobuf(&parse_protobuf(sql).unwrap()).unwrap();
    assert_eq!(
        pg_query, protobuf,
        "protobuf engine over parse_protobuf: {sql}"
    );
    let view = summarize(&ParseTree::parse(sql).unwrap()).unwrap();
    assert_eq!(view, protobuf, "the engines disagree: {sql}");
    let mut statements = protobuf.statements;
    assert_eq!(statements.len(), 1);
    statements.pop().unwrap().joins
}

/// The levels both engines give for `sql`, checked against `expected` (canonicalized).
#[track_caller]
fn check(sql: &str, expected: Vec<JoinLevel>) {
    let mut expected = Joins { levels: expected };
    expected.canonicalize();
    assert_eq!(joins(sql).map(|j| *j), Some(expected), "{sql}");
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

fn t(spec: &str) -> FromItem {
    FromItem::Table {
        table: table(spec),
        renamed: false,
    }
}

/// `k = <integer literal>` at `location`.
fn eq_int(column: &str, value: i64, location: usize) -> Condition {
    Condition::Eq {
        column: col(column),
        value: Value {
            source: ValueSource::Integer {
                value,
                location: location as i32,
            },
            cast: None,
        },
    }
}

fn eq_param(column: &str, number: u16) -> Condition {
    Condition::Eq {
        column: col(column),
        value: Value {
            source: ValueSource::Param(number),
            cast: None,
        },
    }
}

fn level(items: Vec<FromItem>) -> JoinLevel {
    JoinLevel {
        items,
        outer_joins: Vec::new(),
        equalities: Vec::new(),
        usings: Vec::new(),
        conditions: Vec::new(),
    }
}

trait Build {
    fn equal(self, a: &str, b: &str, outer: Option<usize>) -> Self;
    fn outer(self, kind: OuterKind, left: (usize, usize), right: (usize, usize)) -> Self;
    fn using(
        self,
        left: (usize, usize),
        right: (usize, usize),
        columns: &[&str],
        outer: Option<usize>,
    ) -> Self;
    fn natural(self, left: (usize, usize), right: (usize, usize), outer: Option<usize>) -> Self;
    fn condition(self, condition: Condition) -> Self;
}

impl Build for JoinLevel {
    fn equal(mut self, a: &str, b: &str, outer: Option<usize>) -> Self {
        let (a, b) = (col(a), col(b));
        let (left, right) = if a <= b { (a, b) } else { (b, a) };
        self.equalities.push(JoinEquality { left, right, outer });
        self
    }
    fn outer(mut self, kind: OuterKind, left: (usize, usize), right: (usize, usize)) -> Self {
        self.outer_joins.push(OuterJoin { kind, left, right });
        self
    }
    fn using(
        mut self,
        left: (usize, usize),
        right: (usize, usize),
        columns: &[&str],
        outer: Option<usize>,
    ) -> Self {
        self.usings.push(JoinUsing {
            left,
            right,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            natural: false,
            outer,
        });
        self
    }
    fn natural(
        mut self,
        left: (usize, usize),
        right: (usize, usize),
        outer: Option<usize>,
    ) -> Self {
        self.usings.push(JoinUsing {
            left,
            right,
            columns: Vec::new(),
            natural: true,
            outer,
        });
        self
    }
    fn condition(mut self, condition: Condition) -> Self {
        self.conditions.push(condition);
        self
    }
}

fn derived(name: Option<&str>, tables: &[&str]) -> Derived {
    Derived {
        name: name.map(str::to_owned),
        lateral: false,
        tables: tables.iter().map(|t| table(t)).collect(),
        reads_every_table: false,
        from_tables: Vec::new(),
        columns: Vec::new(),
        stars: Vec::new(),
        equalities: Vec::new(),
        conditions: Vec::new(),
    }
}

trait BuildDerived {
    fn from(self, tables: &[&str]) -> Self;
    fn column(self, name: &str, source: &str) -> Self;
    fn star(self, qualifier: Option<&str>) -> Self;
    fn lateral(self, equalities: &[(&str, &str)]) -> Self;
    fn condition(self, condition: Condition) -> Self;
    fn item(self) -> FromItem;
}

impl BuildDerived for Derived {
    fn from(mut self, tables: &[&str]) -> Self {
        self.from_tables = tables.iter().map(|t| table(t)).collect();
        self
    }
    fn column(mut self, name: &str, source: &str) -> Self {
        self.columns.push((name.to_owned(), col(source)));
        self
    }
    fn star(mut self, qualifier: Option<&str>) -> Self {
        self.stars.push(qualifier.map(str::to_owned));
        self
    }
    fn lateral(mut self, equalities: &[(&str, &str)]) -> Self {
        self.lateral = true;
        for (a, b) in equalities {
            let (a, b) = (col(a), col(b));
            self.equalities.push(if a <= b { (a, b) } else { (b, a) });
        }
        self
    }
    fn condition(mut self, condition: Condition) -> Self {
        self.conditions.push(condition);
        self
    }
    fn item(self) -> FromItem {
        FromItem::Derived(Box::new(self))
    }
}

/// Where `needle` starts in `sql` (a literal's location).
fn at(sql: &str, needle: &str) -> usize {
    sql.find(needle).unwrap()
}

#[test]
fn statements_that_join_nothing_have_no_facts() {
    for sql in [
        "SELECT * FROM orders WHERE tenant_id = 1",
        "SELECT * FROM orders o, generate_series(1, 2) g",
        "SELECT * FROM (SELECT * FROM orders) s",
        "UPDATE orders SET amount = 1 WHERE tenant_id = 1",
        "DELETE FROM orders WHERE tenant_id = 1",
        "INSERT INTO orders (tenant_id) SELECT tenant_id FROM order_items",
        "SELECT 1",
    ] {
        assert_eq!(joins(sql), None, "{sql}");
    }
}

#[test]
fn inner_joins_where_and_own_condition() {
    let sql = "SELECT * FROM users u JOIN orders o ON o.tenant_id = u.id AND o.amount > 3 AND o.qty = 2 WHERE u.id = 5 AND u.grp = o.grp";
    check(
        sql,
        vec![level(vec![t("users u"), t("orders o")])
            .equal("o.tenant_id", "u.id", None)
            .equal("u.grp", "o.grp", None)
            .condition(Condition::And(vec![
                eq_int("u.id", 5, at(sql, "5 AND")),
                eq_int("o.qty", 2, at(sql, "2 WHERE")),
            ]))],
    );
    // A FROM list, a CROSS JOIN; equalities under OR or NOT are not taken.
    check(
        "SELECT * FROM a, b CROSS JOIN c WHERE a.k = b.k AND (b.k = c.k OR c.x = 1) AND NOT a.k = c.k",
        vec![level(vec![t("a"), t("b"), t("c")]).equal("a.k", "b.k", None)],
    );
}

#[test]
fn outer_joins_are_ranges_of_the_items() {
    // ((a LEFT JOIN (b JOIN c)) FULL JOIN d): the FULL join first, then the LEFT one.
    check(
        "SELECT * FROM a LEFT JOIN (b JOIN c ON c.k = b.k) ON b.k = a.k FULL JOIN d USING (k)",
        vec![level(vec![t("a"), t("b"), t("c"), t("d")])
            .outer(OuterKind::Full, (0, 3), (3, 4))
            .outer(OuterKind::Left, (0, 1), (1, 3))
            .equal("c.k", "b.k", None)
            .equal("b.k", "a.k", Some(1))
            .using((0, 3), (3, 4), &["k"], Some(0))],
    );
    // RIGHT joins keep their sides; only INNER joins reached through kept sides give the own
    // condition.
    let sql = "SELECT * FROM a RIGHT JOIN (b JOIN c ON c.k = 1) ON a.k = b.k JOIN d ON d.k = 2 NATURAL JOIN e";
    check(
        sql,
        vec![level(vec![t("a"), t("b"), t("c"), t("d"), t("e")])
            .outer(OuterKind::Right, (0, 1), (1, 3))
            .equal("a.k", "b.k", Some(0))
            .natural((0, 4), (4, 5), None)
            .condition(Condition::And(vec![
                eq_int("d.k", 2, at(sql, "2 NATURAL")),
                eq_int("c.k", 1, at(sql, "1)")),
            ]))],
    );
    // An outer join with one item (its other side a function) is a level.
    check(
        "SELECT * FROM generate_series(1, 3) g LEFT JOIN orders o ON o.tenant_id = g",
        vec![level(vec![t("orders o")])
            .outer(OuterKind::Left, (0, 0), (0, 1))
            .equal("o.tenant_id", "g", Some(0))],
    );
}

#[test]
fn updates_deletes_and_merges() {
    let sql = "UPDATE orders o SET amount = 0 FROM users u JOIN order_items i USING (tenant_id) WHERE u.id = o.tenant_id AND o.tenant_id = $1";
    check(
        sql,
        vec![level(vec![t("orders o"), t("users u"), t("order_items i")])
            .equal("u.id", "o.tenant_id", None)
            .using((1, 2), (2, 3), &["tenant_id"], None)
            .condition(eq_param("o.tenant_id", 1))],
    );
    check(
        "DELETE FROM orders USING users u WHERE u.id = orders.tenant_id",
        vec![level(vec![t("orders"), t("users u")]).equal("u.id", "orders.tenant_id", None)],
    );
    // A MERGE: its target and source, FULL-joined on its join condition.
    let sql = "MERGE INTO orders t USING order_items s ON t.tenant_id = s.tenant_id AND t.tenant_id = 3 WHEN MATCHED THEN DELETE";
    check(
        sql,
        vec![level(vec![t("orders t"), t("order_items s")])
            .outer(OuterKind::Full, (0, 1), (1, 2))
            .equal("t.tenant_id", "s.tenant_id", Some(0))
            .condition(eq_int("t.tenant_id", 3, at(sql, "3 WHEN")))],
    );
}

#[test]
fn subqueries_and_ctes_are_derived_items() {
    let sql = "SELECT * FROM users u JOIN (SELECT o.tenant_id AS uid, amount, o.* FROM orders o JOIN order_items i ON i.k = o.k WHERE o.tenant_id = $1) s(x) ON s.x = u.id";
    check(
        sql,
        vec![
            level(vec![
                t("users u"),
                derived(Some("s"), &["orders o", "order_items i"])
                    .from(&["orders o", "order_items i"])
                    .column("x", "o.tenant_id")
                    .column("amount", "amount")
                    .star(Some("o"))
                    .condition(eq_param("o.tenant_id", 1))
                    .item(),
            ])
            .equal("s.x", "u.id", None),
            // The subquery's own level.
            level(vec![t("orders o"), t("order_items i")])
                .equal("i.k", "o.k", None)
                .condition(eq_param("o.tenant_id", 1)),
        ],
    );
    // Column aliases reaching a `*` drop it and what follows (their names are not known).
    check(
        "SELECT * FROM a, (SELECT k, *, j FROM b) s(x, y)",
        vec![level(vec![
            t("a"),
            derived(Some("s"), &["b"])
                .from(&["b"])
                .column("x", "k")
                .item(),
        ])],
    );
    // A CTE reference: the CTE's column names, then the reference's (here reaching a `*`);
    // the tables of the CTEs it reads, transitively.
    check(
        "WITH c(a, b) AS (SELECT tenant_id, amount FROM orders), d AS (SELECT * FROM c JOIN items USING (a)) SELECT * FROM d x(p) JOIN users u ON u.id = x.p, c",
        vec![
            level(vec![
                derived(Some("x"), &["items", "orders"]).from(&["items"]).item(),
                t("users u"),
                derived(Some("c"), &["orders"])
                    .from(&["orders"])
                    .column("a", "tenant_id")
                    .column("b", "amount")
                    .item(),
            ])
            .equal("u.id", "x.p", None),
            level(vec![
                derived(Some("c"), &["orders"])
                    .from(&["orders"])
                    .column("a", "tenant_id")
                    .column("b", "amount")
                    .item(),
                t("items"),
            ])
            .using((0, 1), (1, 2), &["a"], None),
        ],
    );
    // LATERAL: with its own level's equalities (where it may be correlated).
    check(
        "SELECT * FROM users u LEFT JOIN LATERAL (SELECT * FROM orders o WHERE o.tenant_id = u.id AND o.amount > 1) x ON true",
        vec![level(vec![
            t("users u"),
            derived(Some("x"), &["orders o"])
                .from(&["orders o"])
                .star(None)
                .lateral(&[("o.tenant_id", "u.id")])
                .item(),
        ])
        .outer(OuterKind::Left, (0, 1), (1, 2))],
    );
    // A table with column aliases is renamed.
    let facts = joins("SELECT * FROM users u(a), orders o").unwrap();
    assert_eq!(
        facts.levels[0].items[0],
        FromItem::Table {
            table: table("users u"),
            renamed: true
        }
    );
}

#[test]
fn every_level_of_the_statement() {
    // Sublinks, set operations' arms, CTE bodies, an INSERT's SELECT: each level on its own.
    let facts = joins(
        "WITH w AS (SELECT * FROM e, f WHERE e.k = f.k) \
         INSERT INTO t SELECT * FROM a, b WHERE EXISTS (SELECT 1 FROM c, d WHERE c.k = d.k) \
         UNION ALL SELECT * FROM g JOIN h ON h.k = g.k",
    )
    .unwrap();
    let mut firsts: Vec<String> = facts
        .levels
        .iter()
        .map(|level| match &level.items[0] {
            FromItem::Table { table, .. } => table.name.clone(),
            FromItem::Derived(_) => "derived".to_owned(),
        })
        .collect();
    firsts.sort();
    assert_eq!(firsts, ["a", "c", "e", "g"]);
}
