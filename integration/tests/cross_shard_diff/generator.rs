//! The seeded generator of SELECTs over the sharded tables: row reads with
//! filters, ORDER BY and LIMIT/OFFSET, aggregates, GROUP BY/HAVING,
//! DISTINCT, co-located joins and joins to the omnisharded table, keyed
//! reads, and shapes pgshard may have to refuse. Every statement has one right
//! answer: an ORDER BY under LIMIT/OFFSET is made total (the unique key
//! last), and a statement whose order is not total is compared as a
//! multiset.

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};

use super::data::{literal, NAMES, NOTES};
use super::sources::{Source, SOURCES};

/// What a statement exercises, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Keyed,
    KeyList,
    Filter,
    Order,
    Limit,
    Aggregate,
    GroupByKey,
    GroupBy,
    Distinct,
    Join,
    JoinAggregate,
    /// FROM subqueries and CTEs whose output columns rename, shadow or pass
    /// through the sharding key, read with an outer condition on them.
    Derived,
    /// A table `made` (sharded like `users`) created from a query (CREATE
    /// TABLE AS, SELECT INTO, a materialized view), then read.
    CreateAs,
    /// Subqueries correlated on the sharding key that rule 12 answers: the
    /// outer column unqualified (resolved through the catalog's columns,
    /// TPC-H Q4's shape) and `key IN (SELECT key ... GROUP BY key ...)`
    /// (Q18's). Rule 12 must route these: its refusal counts as wrong (the
    /// merge may still refuse, as for any fan-out).
    Correlated,
    /// Window functions, set operations, subqueries and joins off the key:
    /// a fan-out can answer only some (co-located subqueries); pgshard may
    /// refuse the rest.
    Beyond,
    /// A statement read through a view (`behind.rs`).
    View,
    /// A statement's row count read through a SQL function (`behind.rs`).
    Function,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Keyed => "keyed",
            Category::KeyList => "key list",
            Category::Filter => "filter",
            Category::Order => "order by",
            Category::Limit => "limit/offset",
            Category::Aggregate => "aggregate",
            Category::GroupByKey => "group by key",
            Category::GroupBy => "group by",
            Category::Distinct => "distinct",
            Category::Join => "join",
            Category::JoinAggregate => "join + aggregate",
            Category::Derived => "subquery columns",
            Category::CreateAs => "create table as",
            Category::Correlated => "correlated on the key",
            Category::Beyond => "beyond merging",
            Category::View => "through a view",
            Category::Function => "in a function",
        }
    }
}

/// One generated statement.
#[derive(Debug, Clone)]
pub struct Case {
    pub category: Category,
    pub sql: String,
    /// The ORDER BY fixes the order of every returned row: compare in order.
    pub ordered: bool,
    /// `sql` with its literals that may become parameters marked (see
    /// [`mark`]).
    marked: String,
    /// Run first, in the same protocol (both servers must agree on it or
    /// pgshard refuse it); `teardown` after `sql`.
    pub setup: Option<String>,
    pub teardown: Option<String>,
}

/// Marks a literal that may be made a parameter of a prepared statement:
/// a value compared with a column, a HAVING bound, a LIMIT or OFFSET.
const OPEN: char = '\u{1}';
const CLOSE: char = '\u{2}';

pub fn mark(literal: impl std::fmt::Display) -> String {
    format!("{OPEN}{literal}{CLOSE}")
}

impl Case {
    pub fn new(category: Category, marked: String, ordered: bool) -> Case {
        Case {
            category,
            sql: marked.replace([OPEN, CLOSE], ""),
            ordered,
            marked,
            setup: None,
            teardown: None,
        }
    }

    /// The statement with its markers: the literals that may become
    /// parameters (a write carrying it as a subquery keeps them).
    pub fn marked(&self) -> &str {
        &self.marked
    }

    /// The statement as `PREPARE name AS ...` with the marked literals
    /// `pick` chooses turned into parameters, and the `EXECUTE` that runs
    /// it with those literals as its arguments.
    pub fn prepared(&self, name: &str, pick: impl FnMut() -> bool) -> (String, String) {
        self.prepared_as(name, pick, false)
    }

    /// [`prepared`](Self::prepared) with every parameter's type declared
    /// (`PREPARE name (int8, text, ...) AS ...`), by its literal's form.
    pub fn prepared_typed(&self, name: &str, pick: impl FnMut() -> bool) -> (String, String) {
        self.prepared_as(name, pick, true)
    }

    fn prepared_as(
        &self,
        name: &str,
        mut pick: impl FnMut() -> bool,
        typed: bool,
    ) -> (String, String) {
        let mut body = String::with_capacity(self.marked.len());
        let mut args = Vec::new();
        let mut rest = self.marked.as_str();
        while let Some(open) = rest.find(OPEN) {
            body.push_str(&rest[..open]);
            let literal = &rest[open + OPEN.len_utf8()..];
            let close = literal.find(CLOSE).unwrap_or(literal.len());
            if pick() {
                args.push(&literal[..close]);
                body.push_str(&format!("${}", args.len()));
            } else {
                body.push_str(&literal[..close]);
            }
            rest = literal.get(close + CLOSE.len_utf8()..).unwrap_or_default();
        }
        body.push_str(rest);
        let execute = match args.is_empty() {
            true => format!("EXECUTE {name}"),
            false => format!("EXECUTE {name}({})", args.join(", ")),
        };
        let types: Vec<&str> = args.iter().map(|arg| literal_type(arg)).collect();
        match typed && !types.is_empty() {
            true => (
                format!("PREPARE {name} ({}) AS {body}", types.join(", ")),
                execute,
            ),
            false => (format!("PREPARE {name} AS {body}"), execute),
        }
    }
}

/// The type a marked literal declares its parameter as: a string `text`,
/// a whole number `int8`, any other number `numeric`.
fn literal_type(literal: &str) -> &'static str {
    match literal {
        l if l.starts_with('\'') => "text",
        l if l.parse::<i64>().is_ok() => "int8",
        l if l.eq_ignore_ascii_case("true") || l.eq_ignore_ascii_case("false") => "boolean",
        _ => "numeric",
    }
}

/// A select-list item and its alias, if any.
#[derive(Clone)]
struct Item {
    expr: String,
    alias: Option<String>,
}

impl Item {
    fn sql(&self) -> String {
        match &self.alias {
            Some(alias) => format!("{} AS {alias}", self.expr),
            None => self.expr.clone(),
        }
    }
}

pub struct Generator {
    rng: Xoshiro256PlusPlus,
    ids: Vec<i64>,
}

impl Generator {
    pub fn new(seed: u64, ids: Vec<i64>) -> Generator {
        Generator {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            ids,
        }
    }

    pub fn next_case(&mut self) -> Case {
        let source = self.source();
        match self.rng.random_range(0..100) {
            0..=29 => self.rows(source),
            30..=44 => self.aggregate(source),
            45..=71 => self.grouped(source),
            72..=85 => self.distinct(source),
            86..=88 => self.derived(),
            89..=91 => self.correlated(),
            92..=95 => self.create_as(),
            _ => self.beyond(),
        }
    }

    fn source(&mut self) -> &'static Source {
        match self.rng.random_range(0..100) {
            0..=44 => &SOURCES[0],
            45..=64 => &SOURCES[1],
            _ => SOURCES[2..].choose(&mut self.rng).unwrap_or(&SOURCES[0]),
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick(&mut self, from: &[String]) -> String {
        from.choose(&mut self.rng).cloned().unwrap_or_default()
    }

    fn number(&mut self, range: std::ops::Range<i64>) -> i64 {
        self.rng.random_range(range)
    }

    /// A user id, usually one that exists.
    fn key_value(&mut self) -> i64 {
        let existing = self.ids.choose(&mut self.rng).copied();
        match existing {
            Some(id) if self.chance(0.85) => id,
            _ => self.number(-400..3100),
        }
    }

    /// The category of a statement of `source`: `keyed` (from
    /// [`Generator::where_clause`]) first, then joins, then `single`, the
    /// shape's own.
    fn category(
        source: &Source,
        keyed: Option<Category>,
        single: Category,
        aggregate: bool,
    ) -> Category {
        match (keyed, source.join(), aggregate) {
            (Some(keyed), ..) => keyed,
            (None, true, false) => Category::Join,
            (None, true, true) => Category::JoinAggregate,
            (None, false, _) => single,
        }
    }

    /// `WHERE ...` (or nothing) and, if it restricts the sharding key,
    /// [`Category::Keyed`] (one value) or [`Category::KeyList`] (several).
    fn where_clause(&mut self, source: &Source) -> (String, Option<Category>) {
        let mut predicates = Vec::new();
        for _ in 0..self.rng.random_range(0..=2) {
            let predicate = self.predicate(source);
            predicates.push(predicate);
        }
        let mut keyed = None;
        if self.chance(0.12) {
            let (key, k) = (source.key, self.key_value());
            let k = mark(k);
            let (predicate, category) = match self.rng.random_range(0..4) {
                0 | 1 => (format!("{key} = {k}"), Category::Keyed),
                2 => {
                    let (k2, k3) = (mark(self.key_value()), mark(self.key_value()));
                    (format!("{key} IN ({k}, {k2}, {k3})"), Category::KeyList)
                }
                _ => {
                    let k2 = mark(self.key_value());
                    (format!("({key} = {k} OR {key} = {k2})"), Category::KeyList)
                }
            };
            predicates.push(predicate);
            keyed = Some(category);
        }
        if predicates.is_empty() {
            return (String::new(), None);
        }
        if predicates.len() > 1 && self.chance(0.2) {
            // OR with an unkeyed predicate restricts nothing: a fan-out.
            return (format!(" WHERE {}", predicates.join(" OR ")), None);
        }
        (format!(" WHERE {}", predicates.join(" AND ")), keyed)
    }
}

/// Predicates and HAVING conditions, with random constants.
impl Generator {
    fn predicate(&mut self, source: &Source) -> String {
        let (g, s, n) = (self.number(0..8), self.number(0..101), self.number(0..30));
        let name = mark(literal(NAMES.choose(&mut self.rng).copied().unwrap_or("")));
        let note = mark(literal(NOTES.choose(&mut self.rng).copied().unwrap_or("")));
        let k = mark(self.key_value());
        let (mg, ms) = (mark(g), mark(s));
        let mut options = Vec::new();
        if let Some(p) = source.users {
            options.extend([
                format!("{p}grp = {mg}"),
                format!("{p}score > {ms}"),
                format!("{p}score <= {ms}"),
                format!("{p}name = {name}"),
                format!("{p}name IS NULL"),
                format!("{p}score IS NOT NULL"),
                format!("{p}grp IN ({mg}, {}, {})", (g + 3) % 8, mark((g + 5) % 8)),
                format!("{p}score BETWEEN {ms} AND {}", mark(s + 30)),
                format!("{p}active"),
                format!("NOT {p}active"),
                format!("{p}active IS NULL"),
                format!("{p}created >= DATE '2023-06-01' + {}", n * 10),
                format!("{p}amount > {}", mark(format!("{}.50", s * 50))),
                format!("{p}amount < 0"),
                format!("{p}name LIKE 'a%'"),
                format!("{p}name > 'M'"),
                format!("({p}grp <> {mg} OR {p}score < {ms})"),
                format!("{p}id > {k}"),
            ]);
        }
        if let Some(p) = source.orders {
            options.extend([
                format!("{p}qty > {}", mark(n % 10)),
                format!("{p}qty IS NULL"),
                format!("{p}price < {}", mark(s * 2)),
                format!("{p}note IS NULL"),
                format!("{p}note = {note}"),
                format!("{p}id = {}", mark(n % 4 + 1)),
                format!("{p}id IN (1, {})", mark(n % 4 + 2)),
            ]);
        }
        if let Some(p) = source.teams {
            options.extend([
                format!("{p}weight > {}", mark(n % 5)),
                format!("{p}team <> 'red'"),
                format!("{p}weight IS NULL"),
            ]);
        }
        self.pick(&options)
    }

    fn having(&mut self, source: &Source) -> String {
        let (c, s) = (self.number(1..5), self.number(0..400));
        let mut options = vec![format!("count(*) > {}", mark(c))];
        if let Some(p) = source.users {
            options.extend([
                format!("sum({p}score) > {}", mark(s)),
                format!("max({p}score) < {}", mark(s / 4)),
                format!("min({p}name) IS NOT NULL"),
                format!("bool_or({p}active)"),
                format!("avg({p}score) > {}", mark(s / 8)),
            ]);
        }
        if let Some(p) = source.orders {
            options.extend([
                format!("sum({p}qty) > {}", mark(s / 20)),
                format!("count({p}note) >= 1"),
            ]);
        }
        if let Some(p) = source.teams {
            options.push(format!("max({p}weight) > 2"));
        }
        self.pick(&options)
    }
}

/// Select lists, ORDER BY and LIMIT.
impl Generator {
    /// `count` items of `candidates`, some aliased (`c1`, `c2`... never a
    /// column's name, so ORDER BY by alias is unambiguous).
    fn select_items(
        &mut self,
        candidates: &[String],
        count: std::ops::RangeInclusive<usize>,
    ) -> Vec<Item> {
        let count = self.rng.random_range(count);
        (0..count)
            .map(|i| Item {
                expr: self.pick(candidates),
                alias: self.chance(0.3).then(|| format!("c{}", i + 1)),
            })
            .collect()
    }

    fn direction(&mut self) -> &'static str {
        let directions = [
            "",
            " ASC",
            " DESC",
            " NULLS FIRST",
            " DESC NULLS LAST",
            " ASC NULLS LAST",
            " DESC NULLS FIRST",
        ];
        directions.choose(&mut self.rng).copied().unwrap_or("")
    }

    /// One ORDER BY key: a select-list position, an alias, a selected
    /// expression or one of `candidates` (which may not be selected).
    fn order_key(&mut self, items: &[Item], candidates: &[String]) -> String {
        let star = items.iter().any(|item| item.expr == "*");
        let i = self.rng.random_range(0..items.len().max(1));
        match (self.rng.random_range(0..4), items.get(i)) {
            (0, Some(_)) if !star => (i + 1).to_string(),
            (
                1,
                Some(Item {
                    alias: Some(alias), ..
                }),
            ) => alias.clone(),
            (2, Some(item)) if !star => item.expr.clone(),
            _ => self.pick(candidates),
        }
    }

    /// ` ORDER BY ...` (or nothing) and whether it is total: then `unique`
    /// (keys unique over the rows) closes it.
    fn order_by(
        &mut self,
        items: &[Item],
        candidates: &[String],
        unique: &[String],
    ) -> (String, bool) {
        let mode = self.rng.random_range(0..10);
        if mode < 3 {
            return (String::new(), false);
        }
        let mut keys = Vec::new();
        for _ in 0..self.rng.random_range(1..=3) {
            let key = self.order_key(items, candidates);
            keys.push(format!("{key}{}", self.direction()));
        }
        let total = mode >= 5;
        if total {
            for key in unique {
                keys.push(format!("{key}{}", self.direction()));
            }
        }
        (format!(" ORDER BY {}", keys.join(", ")), total)
    }

    fn limit(&mut self) -> String {
        let (n, m) = (mark(self.number(0..25)), mark(self.number(0..60)));
        match self.rng.random_range(0..7) {
            0 => " LIMIT 1".to_owned(),
            1 => format!(" LIMIT {n}"),
            2 => format!(" OFFSET {m}"),
            3 => format!(" LIMIT {n} OFFSET {m}"),
            4 => format!(" OFFSET {m} LIMIT {n}"),
            5 => format!(" FETCH FIRST {n} ROWS ONLY"),
            _ => format!(" OFFSET {m} ROWS FETCH NEXT {n} ROWS ONLY"),
        }
    }
}

fn list(items: &[Item]) -> String {
    items.iter().map(Item::sql).collect::<Vec<_>>().join(", ")
}

fn owned(keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

/// The statement shapes.
impl Generator {
    fn rows(&mut self, source: &Source) -> Case {
        let candidates = source.items();
        let items = if !source.join() && self.chance(0.1) {
            vec![Item {
                expr: "*".to_owned(),
                alias: None,
            }]
        } else {
            self.select_items(&candidates, 1..=4)
        };
        let (filter, keyed) = self.where_clause(source);
        let (order, total) = self.order_by(&items, &candidates, &owned(source.unique));
        let limit = if total && self.chance(0.6) {
            self.limit()
        } else {
            String::new()
        };
        let single = match (limit.is_empty(), order.is_empty()) {
            (false, _) => Category::Limit,
            (true, false) => Category::Order,
            (true, true) => Category::Filter,
        };
        Case::new(
            Self::category(source, keyed, single, false),
            format!(
                "SELECT {} FROM {}{filter}{order}{limit}",
                list(&items),
                source.from
            ),
            total,
        )
    }

    fn aggregate(&mut self, source: &Source) -> Case {
        let items = self.select_items(&source.aggregates(), 1..=4);
        let (filter, keyed) = self.where_clause(source);
        let mut tail = String::new();
        if self.chance(0.15) {
            tail = format!(" HAVING {}", self.having(source));
        }
        if self.chance(0.1) {
            tail.push_str(&self.limit());
        }
        Case::new(
            Self::category(source, keyed, Category::Aggregate, true),
            format!("SELECT {} FROM {}{filter}{tail}", list(&items), source.from),
            true,
        )
    }

    fn grouped(&mut self, source: &Source) -> Case {
        let candidates = source.groups();
        let mut groups = vec![self.pick(&candidates)];
        if self.chance(0.25) {
            groups.push(self.pick(&candidates));
            groups.dedup();
        }
        let mut items = Vec::new();
        for (i, group) in groups.iter().enumerate() {
            if self.chance(0.85) {
                let alias = self.chance(0.2).then(|| format!("g{}", i + 1));
                items.push(Item {
                    expr: group.clone(),
                    alias,
                });
            }
        }
        let shown = items.len();
        items.extend(self.select_items(&source.aggregates(), 1..=3));
        let by: Vec<String> = groups
            .iter()
            .map(
                |g| match items[..shown].iter().position(|item| &item.expr == g) {
                    Some(i) if self.chance(0.3) => (i + 1).to_string(),
                    _ => g.clone(),
                },
            )
            .collect();
        let (filter, keyed) = self.where_clause(source);
        let having = if self.chance(0.3) {
            format!(" HAVING {}", self.having(source))
        } else {
            String::new()
        };
        let mut order_candidates = groups.clone();
        order_candidates.extend(source.aggregates());
        let (order, total) = self.order_by(&items, &order_candidates, &groups);
        let limit = if total && self.chance(0.5) {
            self.limit()
        } else {
            String::new()
        };
        let single = if groups.iter().any(|g| source.is_key(g)) {
            Category::GroupByKey
        } else {
            Category::GroupBy
        };
        // DISTINCT over the groups' rows (equal aggregates of different
        // groups are one row); without ORDER BY, whose items it would
        // have to select.
        let distinct = if order.is_empty() && self.chance(0.15) {
            "DISTINCT "
        } else {
            ""
        };
        Case::new(
            Self::category(source, keyed, single, true),
            format!(
                "SELECT {distinct}{} FROM {}{filter} GROUP BY {}{having}{order}{limit}",
                list(&items),
                source.from,
                by.join(", ")
            ),
            total,
        )
    }

    fn distinct(&mut self, source: &Source) -> Case {
        if self.chance(0.25) {
            return self.distinct_on(source);
        }
        let items = self.select_items(&source.groups(), 1..=3);
        let exprs: Vec<String> = items.iter().map(|item| item.expr.clone()).collect();
        let (filter, keyed) = self.where_clause(source);
        let (order, total) = self.order_by(&items, &exprs, &exprs);
        let limit = if total && self.chance(0.5) {
            self.limit()
        } else {
            String::new()
        };
        Case::new(
            Self::category(source, keyed, Category::Distinct, false),
            format!(
                "SELECT DISTINCT {} FROM {}{filter}{order}{limit}",
                list(&items),
                source.from
            ),
            total,
        )
    }

    /// `DISTINCT ON (g)` with an ORDER BY that picks each group's row.
    fn distinct_on(&mut self, source: &Source) -> Case {
        let on = self.pick(&source.groups());
        let other = self.pick(&source.items());
        let (filter, keyed) = self.where_clause(source);
        let mut keys = vec![
            format!("{on}{}", self.direction()),
            format!("{other}{}", self.direction()),
        ];
        for key in source.unique {
            keys.push(format!("{key}{}", self.direction()));
        }
        let limit = if self.chance(0.3) {
            self.limit()
        } else {
            String::new()
        };
        Case::new(
            Self::category(source, keyed, Category::Distinct, false),
            format!(
                "SELECT DISTINCT ON ({on}) {on}, {other}, {} FROM {}{filter} ORDER BY {}{limit}",
                source.unique.join(", "),
                source.from,
                keys.join(", ")
            ),
            true,
        )
    }

    /// A statement beyond merging rows (see [`Category::Beyond`]).
    fn beyond(&mut self) -> Case {
        let (sql, ordered) = BEYOND.choose(&mut self.rng).copied().unwrap_or_default();
        let sql = sql
            .replace("$g", &mark(self.number(0..8)))
            .replace("$s", &mark(self.number(0..101)))
            .replace("$q", &mark(self.number(1..10)));
        Case::new(Category::Beyond, sql, ordered)
    }
}

impl Generator {
    /// A statement of [`Category::Correlated`].
    fn correlated(&mut self) -> Case {
        let (sql, ordered) = CORRELATED
            .choose(&mut self.rng)
            .copied()
            .unwrap_or_default();
        let sql = sql
            .replace("$g", &mark(self.number(0..8)))
            .replace("$s", &mark(self.number(0..101)))
            .replace("$q", &mark(self.number(1..10)));
        Case::new(Category::Correlated, sql, ordered)
    }

    /// A statement of [`Category::Derived`]: `$k` becomes a user id.
    fn derived(&mut self) -> Case {
        let (sql, ordered) = DERIVED.choose(&mut self.rng).copied().unwrap_or_default();
        let sql = sql
            .replace("$k", &mark(self.key_value()))
            .replace("$g", &mark(self.number(0..8)))
            .replace("$s", &mark(self.number(0..101)))
            .replace("$q", &mark(self.number(1..10)));
        Case::new(Category::Derived, sql, ordered)
    }
}

impl Generator {
    /// A statement of [`Category::CreateAs`]: `made` created from a query,
    /// read whole, by key or aggregated, dropped after.
    fn create_as(&mut self) -> Case {
        let (create, matview) = CREATE_AS.choose(&mut self.rng).copied().unwrap_or_default();
        let setup = create
            .replace("$g", &self.number(0..8).to_string())
            .replace("$s", &self.number(0..101).to_string());
        let (sql, ordered) = match self.rng.random_range(0..3) {
            0 => ("SELECT * FROM made".to_owned(), false),
            1 => (
                format!("SELECT * FROM made WHERE id = {}", self.key_value()),
                false,
            ),
            _ => ("SELECT count(*), sum(id) FROM made".to_owned(), true),
        };
        let what = if matview {
            "MATERIALIZED VIEW"
        } else {
            "TABLE"
        };
        Case {
            setup: Some(setup),
            teardown: Some(format!("DROP {what} IF EXISTS made")),
            ..Case::new(Category::CreateAs, sql, ordered)
        }
    }
}

/// Statements of [`Category::CreateAs`] creating `made` (a materialized
/// view when `true`): those that keep `users`' key per shard, and those
/// pgshard must refuse.
const CREATE_AS: &[(&str, bool)] = &[
    ("CREATE TABLE made AS SELECT * FROM users WHERE score > $s", false),
    ("CREATE TABLE made AS SELECT id, grp, name FROM users", false),
    ("CREATE UNLOGGED TABLE made AS SELECT id, score FROM users WHERE grp = $g", false),
    ("SELECT * INTO made FROM users WHERE grp = $g", false),
    ("CREATE TABLE made AS SELECT user_id AS id, id AS oid, qty, price FROM orders", false),
    ("CREATE TABLE made AS SELECT u.id, o.qty, o.note FROM users u JOIN orders o ON o.user_id = u.id WHERE u.score > $s", false),
    ("CREATE TABLE made AS SELECT user_id AS id, count(*) AS n, sum(qty) AS q FROM orders GROUP BY user_id", false),
    ("CREATE TABLE made AS SELECT DISTINCT id, grp FROM users", false),
    ("CREATE TABLE made AS SELECT s.id, s.grp FROM (SELECT * FROM users WHERE active) s", false),
    ("CREATE TABLE made AS SELECT u.id, t.team FROM users u JOIN teams t ON t.grp = u.grp", false),
    ("CREATE TABLE made (id, g) AS SELECT id, grp FROM users ORDER BY score", false),
    ("CREATE MATERIALIZED VIEW made AS SELECT id, name, amount FROM users WHERE grp <> $g", true),
    ("CREATE TABLE made AS SELECT grp AS id, score FROM users", false),
    ("CREATE TABLE made AS SELECT id FROM users ORDER BY id LIMIT 5", false),
    ("CREATE TABLE made AS SELECT grp AS id, count(*) AS n FROM users GROUP BY grp", false),
    ("CREATE TABLE made AS SELECT id, rank() OVER (ORDER BY score) AS r FROM users", false),
    ("CREATE TABLE made AS SELECT id FROM users UNION ALL SELECT user_id FROM orders", false),
    ("CREATE TABLE made AS SELECT id, (SELECT count(*) FROM orders) AS n FROM users", false),
    ("CREATE TABLE made AS SELECT u.id FROM users u JOIN orders o ON o.qty = u.grp", false),
    ("CREATE MATERIALIZED VIEW made AS SELECT grp AS id, count(*) AS n FROM users GROUP BY grp", true),
];

/// Statements of [`Category::Derived`] and whether their order is total:
/// an outer condition on a subquery's or CTE's column restricts the rows to
/// one shard only when that column passes the sharding key through.
const DERIVED: &[(&str, bool)] = &[
    ("SELECT count(*) FROM (SELECT id AS x, grp AS id FROM users) s WHERE id = $g", true),
    ("SELECT count(*) FROM (SELECT id AS x, score AS id FROM users) s WHERE s.id = $s", true),
    ("SELECT x, id FROM (SELECT id AS x, grp AS id FROM users) s WHERE x = $k", false),
    ("SELECT * FROM (SELECT * FROM users) s WHERE id = $k", false),
    ("SELECT * FROM (SELECT u.* FROM users u) s WHERE s.id = $k", false),
    ("SELECT count(*) FROM (SELECT user_id AS id, id AS user_id FROM orders) s WHERE user_id = $q", true),
    ("SELECT id, user_id, qty FROM (SELECT user_id AS id, id AS user_id, qty FROM orders) s WHERE id = $k", false),
    ("WITH s AS (SELECT id AS x, grp AS id FROM users) SELECT count(*) FROM s WHERE id = $g", true),
    ("WITH s AS (SELECT * FROM orders) SELECT count(*), sum(qty) FROM s WHERE user_id = $k", true),
    ("WITH s (a, id) AS (SELECT id, grp FROM users) SELECT count(*) FROM s WHERE id = $g", true),
    ("WITH s (id, b) AS (SELECT id, grp FROM users) SELECT id, b FROM s WHERE id = $k", false),
    ("WITH s AS (SELECT id, grp FROM users) SELECT count(*) FROM s AS r (grp, id) WHERE id = $g", true),
    ("SELECT count(*) FROM (SELECT id, grp FROM users) s (x, id) WHERE id = $g", true),
    ("SELECT count(*) FROM (SELECT * FROM users) s (a, b) WHERE a = $k", true),
    ("SELECT count(*) FROM users u (grp, id) WHERE id = $g", true),
    ("SELECT s.id, t.team FROM (SELECT grp AS id, id AS uid FROM users) s JOIN teams t ON t.grp = s.id WHERE s.id = $g", false),
    ("SELECT u.id, s.n FROM users u JOIN (SELECT user_id, count(*) AS n FROM orders GROUP BY user_id) s ON s.user_id = u.id WHERE s.user_id = $k", false),
    ("SELECT id, s.n FROM users u JOIN (SELECT user_id AS id, count(*) AS n FROM orders GROUP BY user_id) s USING (id) WHERE id = $k", false),
    ("SELECT o.id FROM orders o JOIN (SELECT id AS user_id, grp AS id FROM users) s ON s.user_id = o.user_id WHERE s.id = $g", false),
    ("SELECT s.id FROM (SELECT grp AS id FROM users) s WHERE s.id = $g INTERSECT SELECT s.grp FROM users s", false),
    ("SELECT count(*) FROM (SELECT x AS id FROM (SELECT grp AS x FROM users) a) b WHERE id = $g", true),
    ("SELECT count(*) FROM (SELECT x AS y FROM (SELECT id AS x FROM users) a) b WHERE y = $k", true),
    ("SELECT * FROM (SELECT * FROM users ORDER BY id LIMIT 5) s WHERE id = $k", false),
    ("SELECT * FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM users) s WHERE id = $k", false),
    ("SELECT count(*) FROM (SELECT id FROM users UNION ALL SELECT user_id FROM orders) s WHERE id = $k", true),
    ("SELECT count(*) FROM teams t, (SELECT * FROM users) s WHERE s.grp = t.grp AND id = $k", true),
    ("SELECT count(*) FROM teams t JOIN (SELECT grp AS id FROM users) s ON true WHERE id = $g", true),
    ("SELECT count(*) FROM generate_series(1, 3) AS s (id), users u WHERE s.id = $g", true),
    ("SELECT count(*) FROM (SELECT id AS grp, grp AS id FROM users) s JOIN teams t USING (grp) WHERE id = $g", true),
    ("SELECT count(*) FROM (SELECT grp AS id FROM users) s, LATERAL (SELECT * FROM teams WHERE teams.grp = s.id) t WHERE s.id = $g", true),
];

/// Statements of [`Category::Correlated`] and whether their order is total;
/// `$g`, `$s` and `$q` become a group, a score and a quantity. `orders`
/// has `id` too, `users` no `user_id`.
const CORRELATED: &[(&str, bool)] = &[
    ("SELECT qty, count(*) FROM orders WHERE EXISTS (SELECT 1 FROM users WHERE id = user_id AND score > $s) GROUP BY qty ORDER BY qty", true),
    ("SELECT count(*) FROM orders WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = user_id AND u.grp = $g)", true),
    ("SELECT id, qty FROM orders WHERE NOT EXISTS (SELECT 1 FROM users WHERE users.id = user_id AND active)", false),
    ("SELECT o.id, (SELECT name FROM users WHERE id = user_id) AS name FROM orders o WHERE qty > $q", false),
    ("SELECT id, name FROM users WHERE id IN (SELECT user_id FROM orders GROUP BY user_id HAVING sum(qty) > $q)", false),
    ("SELECT count(*) FROM users u WHERE u.id IN (SELECT o.user_id FROM orders o WHERE o.qty > $q)", true),
    ("SELECT user_id, id FROM orders WHERE user_id = ANY (SELECT id FROM users WHERE score > $s)", false),
    ("SELECT grp, count(*) FROM users WHERE score > $s AND id IN (SELECT DISTINCT user_id FROM orders WHERE note = 'gift') GROUP BY grp", false),
    ("SELECT u.name, o.id, sum(o.qty) FROM users u JOIN orders o ON o.user_id = u.id WHERE u.id IN (SELECT user_id FROM orders GROUP BY user_id HAVING count(*) > $q) GROUP BY u.name, o.id", false),
    ("SELECT id FROM users WHERE users.id IN (SELECT user_id FROM orders GROUP BY user_id, qty HAVING count(*) > 1) AND EXISTS (SELECT 1 FROM orders o WHERE o.user_id = users.id)", false),
];

/// Statements of [`Category::Beyond`] and whether their order is total;
/// `$g`, `$s` and `$q` become a group, a score and a quantity.
const BEYOND: &[(&str, bool)] = &[
    (
        "SELECT id, score, rank() OVER (ORDER BY score DESC NULLS LAST, id) AS r \
         FROM users ORDER BY id",
        true,
    ),
    (
        "SELECT grp, sum(score) OVER (PARTITION BY grp) AS s FROM users",
        false,
    ),
    (
        "SELECT id, row_number() OVER (PARTITION BY grp ORDER BY id) FROM users WHERE score > $s",
        false,
    ),
    (
        "SELECT id FROM users WHERE score > (SELECT avg(score) FROM users)",
        false,
    ),
    (
        "SELECT id, name FROM users WHERE grp IN (SELECT grp FROM users WHERE score > $s)",
        false,
    ),
    ("SELECT grp FROM users UNION SELECT qty FROM orders", false),
    (
        "SELECT name FROM users WHERE grp = $g UNION ALL SELECT note FROM orders WHERE qty = $q",
        false,
    ),
    (
        "SELECT name FROM users INTERSECT SELECT note FROM orders",
        false,
    ),
    ("SELECT grp FROM users EXCEPT SELECT qty FROM orders", false),
    (
        "SELECT count(*) FROM (SELECT DISTINCT grp FROM users) s",
        true,
    ),
    (
        "WITH s AS (SELECT grp, count(*) AS c FROM users GROUP BY grp) SELECT max(c) FROM s",
        true,
    ),
    (
        "SELECT u.id, v.id FROM users u JOIN users v \
         ON u.grp = v.grp AND u.score = v.score AND u.id < v.id",
        false,
    ),
    (
        "SELECT u.id, o.id FROM users u JOIN orders o ON u.grp = o.qty WHERE u.score > $s",
        false,
    ),
    (
        "SELECT id FROM users u \
         WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id AND o.qty > $q)",
        false,
    ),
    (
        "SELECT id FROM users WHERE id IN (SELECT user_id FROM orders WHERE qty > $q)",
        false,
    ),
    (
        "SELECT id FROM users WHERE id NOT IN (SELECT user_id FROM orders)",
        false,
    ),
    ("SELECT (SELECT count(*) FROM orders) AS n", true),
    (
        "SELECT u.id, (SELECT count(*) FROM orders o WHERE o.user_id = u.id) AS n FROM users u",
        false,
    ),
    (
        "SELECT max(s) FROM (SELECT grp, sum(score) AS s FROM users GROUP BY grp) g",
        true,
    ),
    (
        "SELECT grp, count(*) FROM users GROUP BY ROLLUP (grp)",
        false,
    ),
    (
        "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY score) FROM users",
        true,
    ),
    (
        "SELECT array_agg(id ORDER BY id) FROM users WHERE grp = $g",
        true,
    ),
];
