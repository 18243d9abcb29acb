//! Unit tests of routing on hand-built summaries (the SQL-driven cases live in
//! `router/tests/routes.rs`). Keys map through list mappings here, so every
//! expected database is written down, independent of hashing.

use super::*;
use crate::sharding::{DataType, Key, KeySpace, ShardFunction, ShardedTable, TableFamily};
use crate::summary::StatementKind;
use crate::summary::{ColumnRef, Condition, Sublink, Sublinks, TableRef, Value, ValueSource};

fn list(data_type: DataType, entries: &[(Key, usize)], databases: usize) -> KeySpace {
    KeySpace {
        data_type,
        function: ShardFunction::List(entries.to_vec()),
        placement: (0..databases).collect(),
        moving: None,
    }
}

fn ints(entries: &[(i64, usize)]) -> Vec<(Key, usize)> {
    entries.iter().map(|&(k, s)| (Key::Int(k), s)).collect()
}

/// 3 databases. `t` and `u` by `k` (1 -> 0, 2 -> 1, 3 -> 2, 4 -> 0); `v` by
/// text `name` ('a' -> 0, 'b' -> 1); column-only `cid` (10 -> 0, 11 -> 1,
/// 12 -> 2); family `f_` (N -> N % 3 for 0..9); omnisharded `r`.
fn sharding() -> Sharding {
    let k = list(
        DataType::BigInt,
        &ints(&[(1, 0), (2, 1), (3, 2), (4, 0)]),
        3,
    );
    let entry = |name: Option<&str>, column: &str, keys: &KeySpace| ShardedTable {
        name: name.map(str::to_owned),
        schema: None,
        column: column.to_owned(),
        keys: keys.clone(),
    };
    let text = list(
        DataType::Text,
        &[(Key::Text("a".into()), 0), (Key::Text("b".into()), 1)],
        3,
    );
    let cid = list(DataType::BigInt, &ints(&[(10, 0), (11, 1), (12, 2)]), 3);
    let family: Vec<(i64, usize)> = (0..9).map(|n| (n, (n % 3) as usize)).collect();
    Sharding {
        databases: 3,
        tables: vec![
            entry(Some("t"), "k", &k),
            entry(Some("u"), "k", &k),
            entry(Some("v"), "name", &text),
            entry(None, "cid", &cid),
        ],
        families: vec![TableFamily {
            prefix: "f_".into(),
            schema: None,
            keys: list(DataType::BigInt, &ints(&family), 3),
        }],
        omnisharded: vec![(None, "r".into())],
        cross_shard_disabled: false,
        unlisted_omnisharded: false,
        unlisted_by_columns: false,
        keyless: None,
        catalog: None,
        functions: Vec::new(),
    }
}

fn table(spec: &str) -> TableRef {
    let (name, alias) = match spec.split_once(' ') {
        Some((name, alias)) => (name, Some(alias.to_owned())),
        None => (spec, None),
    };
    let (schema, name) = match name.split_once('.') {
        Some((schema, name)) => (Some(schema.to_owned()), name),
        None => (None, name),
    };
    TableRef {
        schema,
        name: name.to_owned(),
        alias,
    }
}

fn col(spec: &str) -> ColumnRef {
    match spec.split_once('.') {
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

fn int(value: i64) -> Value {
    Value {
        source: ValueSource::Integer { value, location: 0 },
        cast: None,
    }
}

fn text(text: &str) -> Value {
    Value {
        source: ValueSource::Text {
            text: text.to_owned(),
            location: 0,
        },
        cast: None,
    }
}

fn param(n: u16) -> Value {
    Value {
        source: ValueSource::Param(n),
        cast: None,
    }
}

fn null() -> Value {
    Value {
        source: ValueSource::Null,
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

fn stmt(kind: StatementKind, tables: &[&str], conditions: Vec<Condition>) -> StatementSummary {
    let write = matches!(
        kind,
        StatementKind::Insert
            | StatementKind::Update
            | StatementKind::Delete
            | StatementKind::Merge
            | StatementKind::Copy { to: false }
            | StatementKind::Ddl
    );
    let tables: Vec<TableRef> = tables.iter().map(|t| table(t)).collect();
    // Writes write their first table.
    let target = if write && kind != StatementKind::Ddl {
        tables.first().cloned()
    } else {
        None
    };
    StatementSummary {
        kind,
        write,
        locking: false,
        tables,
        conditions,
        insert_without_columns: false,
        target,
        set_columns: Vec::new(),
        session: None,
        sublinks: None,
        joins: None,
        calls: Vec::new(),
        schema_change: None,
        cte_writes: Vec::new(),
    }
}

fn select(tables: &[&str], conditions: Vec<Condition>) -> StatementSummary {
    stmt(StatementKind::Select, tables, conditions)
}

fn run(stmt: &StatementSummary) -> Result<Route, RouteError> {
    route(stmt, &[], &Overrides::default(), &sharding()).map(|r| r.route)
}

fn shard(n: usize) -> Result<Route, RouteError> {
    Ok(Route::Shard(n))
}

#[test]
fn equality_and_aliases() {
    assert_eq!(run(&select(&["t"], vec![eq("k", int(1))])), shard(0));
    assert_eq!(run(&select(&["t"], vec![eq("k", int(2))])), shard(1));
    assert_eq!(run(&select(&["t x"], vec![eq("x.k", int(3))])), shard(2));
    assert_eq!(run(&select(&["t"], vec![eq("t.k", text("3"))])), shard(2));
    // A qualifier that names no table of the statement (a subquery alias).
    assert_eq!(
        run(&select(&["t"], vec![eq("s.k", int(3))])),
        Ok(Route::All)
    );
    // A column that is not the key of the qualified table.
    assert_eq!(
        run(&select(&["t", "v"], vec![eq("t.name", text("a"))])),
        Ok(Route::All)
    );
    assert_eq!(
        run(&select(&["t", "v"], vec![eq("name", text("b"))])),
        shard(1)
    );
    assert_eq!(
        run(&select(&["t"], vec![eq("other", int(1))])),
        Ok(Route::All)
    );
}

#[test]
fn and_or_any() {
    let and = |a, b| Condition::And(vec![a, b]);
    let or = |a, b| Condition::Or(vec![a, b]);
    assert_eq!(
        run(&select(&["t"], vec![and(eq("k", int(1)), eq("x", int(9)))])),
        shard(0)
    );
    assert_eq!(
        run(&select(&["t"], vec![and(eq("k", int(1)), eq("k", int(4)))])),
        shard(0)
    );
    // Contradiction: no row matches; the lowest operand's database.
    assert_eq!(
        run(&select(&["t"], vec![and(eq("k", int(3)), eq("k", int(2)))])),
        shard(1)
    );
    assert_eq!(
        run(&select(&["t"], vec![or(eq("k", int(1)), eq("k", int(2)))])),
        Ok(Route::Shards(vec![0, 1]))
    );
    assert_eq!(
        run(&select(&["t"], vec![or(eq("k", int(1)), eq("k", int(4)))])),
        shard(0)
    );
    assert_eq!(
        run(&select(&["t"], vec![or(eq("k", int(1)), eq("x", int(4)))])),
        Ok(Route::All)
    );
    assert_eq!(
        run(&select(
            &["t"],
            vec![or(or(eq("k", int(1)), eq("k", int(2))), eq("k", int(3)))]
        )),
        Ok(Route::All)
    );
    assert_eq!(
        run(&select(&["t"], vec![any("k", text("{2,2}"))])),
        shard(1)
    );
    assert_eq!(
        run(&select(&["t"], vec![any("k", text("{1,3}"))])),
        Ok(Route::Shards(vec![0, 2]))
    );
    assert_eq!(run(&select(&["t"], vec![any("k", text("{}"))])), shard(0));
    assert_eq!(run(&select(&["t"], vec![any("k", null())])), Ok(Route::All));
}

#[test]
fn levels_intersect() {
    let two = select(&["t", "u"], vec![eq("t.k", int(1)), eq("u.k", int(4))]);
    assert_eq!(run(&two), shard(0));
    let clash = select(&["t", "u"], vec![eq("t.k", int(1)), eq("u.k", int(2))]);
    assert_eq!(
        run(&clash),
        Err(RouteError::KeysOnDifferentShards {
            first: 0,
            second: 1
        })
    );
    let narrowed = select(
        &["t", "u"],
        vec![
            Condition::Or(vec![eq("t.k", int(1)), eq("t.k", int(2))]),
            eq("u.k", int(2)),
        ],
    );
    assert_eq!(run(&narrowed), shard(1));
    // One level: keys of two tables on different databases is a cross-shard
    // join, not a contradiction.
    let join = select(
        &["t", "u"],
        vec![Condition::And(vec![eq("t.k", int(1)), eq("u.k", int(2))])],
    );
    assert_eq!(
        run(&join),
        Err(RouteError::KeysOnDifferentShards {
            first: 0,
            second: 1
        })
    );
    let same = select(
        &["t", "u"],
        vec![Condition::And(vec![eq("t.k", int(1)), eq("t.k", int(2))])],
    );
    assert_eq!(run(&same), shard(0));
}

#[test]
fn values_and_params() {
    let sharding = sharding();
    let with = |value: Value, params: &[ParamValue<'_>]| {
        route(
            &select(&["t"], vec![eq("k", value)]),
            params,
            &Overrides::default(),
            &sharding,
        )
        .map(|r| r.route)
    };
    assert_eq!(with(param(1), &[ParamValue::Text(b"2")]), shard(1));
    assert_eq!(
        with(param(2), &[ParamValue::Null, ParamValue::Text(b"3")]),
        shard(2)
    );
    assert_eq!(
        with(param(1), &[ParamValue::Binary(&3i64.to_be_bytes())]),
        shard(2)
    );
    assert_eq!(
        with(
            cast(param(1), "int4"),
            &[ParamValue::Binary(&2i32.to_be_bytes())]
        ),
        shard(1)
    );
    assert_eq!(with(param(1), &[ParamValue::Null]), Ok(Route::All));
    assert_eq!(with(param(3), &[ParamValue::Text(b"2")]), Ok(Route::All));
    assert_eq!(with(param(1), &[]), Ok(Route::All));
    assert_eq!(with(null(), &[]), Ok(Route::All));
    assert_eq!(with(cast(int(1), "numeric"), &[]), Ok(Route::All));
    assert_eq!(with(cast(text("1"), "text"), &[]), Ok(Route::All));
    assert_eq!(with(cast(text("1"), "int8"), &[]), shard(0));
    assert!(matches!(
        with(text("abc"), &[]),
        Err(RouteError::BadKey { ref column, data_type: "bigint", .. }) if column == "t.k"
    ));
    assert!(matches!(
        with(param(1), &[ParamValue::Text(&[0xff])]),
        Err(RouteError::BadKey { .. })
    ));
    assert_eq!(
        with(int(7), &[]),
        Err(RouteError::NoShardForKey {
            key: "7".into(),
            of: "t.k".into()
        })
    );
}

#[test]
fn column_only_entries() {
    assert_eq!(
        run(&select(&["invoices"], vec![eq("cid", int(11))])),
        shard(1)
    );
    assert_eq!(
        run(&select(&["invoices i"], vec![eq("i.cid", int(12))])),
        shard(2)
    );
    // A configured table is keyed by its own entry only.
    assert_eq!(
        run(&select(&["t"], vec![eq("t.cid", int(12))])),
        Ok(Route::All)
    );
    assert_eq!(run(&select(&["invoices"], vec![])), Ok(Route::All));
}

#[test]
fn families() {
    assert_eq!(run(&select(&["f_4"], vec![])), shard(1));
    assert_eq!(run(&select(&["f_4", "t"], vec![eq("k", int(2))])), shard(1));
    assert_eq!(
        run(&select(&["f_4", "t"], vec![eq("k", int(1))])),
        Err(RouteError::KeysOnDifferentShards {
            first: 0,
            second: 1
        })
    );
    assert_eq!(run(&select(&["f_4", "f_7"], vec![])), shard(1));
    assert!(run(&select(&["f_4", "f_5"], vec![])).is_err());
    assert_eq!(
        run(&select(&["f_9"], vec![])),
        Err(RouteError::NoShardForKey {
            key: "9".into(),
            of: "table f_9".into()
        })
    );
    // Not members: no digits, other characters.
    assert_eq!(run(&select(&["f_"], vec![])), Ok(Route::All));
    assert_eq!(run(&select(&["f_1a"], vec![])), Ok(Route::All));
    assert_eq!(run(&stmt(StatementKind::Ddl, &["f_5"], vec![])), shard(2));
    assert_eq!(
        run(&stmt(StatementKind::Copy { to: false }, &["f_5"], vec![])),
        shard(2)
    );
}

#[test]
fn writes() {
    let insert = |tables: &[&str], conditions| stmt(StatementKind::Insert, tables, conditions);
    let row = |k| Condition::And(vec![eq("t.k", int(k)), eq("t.x", int(0))]);
    assert_eq!(run(&insert(&["t"], vec![row(2)])), shard(1));
    assert_eq!(
        run(&insert(&["t"], vec![Condition::Or(vec![row(1), row(4)])])),
        shard(0)
    );
    assert!(matches!(
        run(&insert(&["t"], vec![Condition::Or(vec![row(1), row(2)])])),
        Err(RouteError::MultiRowInsert { .. })
    ));
    assert!(matches!(
        run(&insert(&["t"], vec![eq("t.x", int(0))])),
        Err(RouteError::InsertWithoutKey { ref column, .. }) if column == "k"
    ));
    assert!(matches!(
        run(&insert(&["t", "r"], vec![])),
        Err(RouteError::InsertWithoutKey { .. })
    ));
    assert!(matches!(
        run(&insert(&["queue"], vec![])),
        Err(RouteError::UnknownTableWrite {
            statement: "INSERT",
            ..
        })
    ));
    assert_eq!(run(&insert(&["t", "u"], vec![])), Ok(Route::All));
    assert_eq!(
        run(&insert(&["t", "u"], vec![any("u.k", text("{1,2}"))])),
        Ok(Route::Shards(vec![0, 1]))
    );
    let mut no_columns = insert(&["t"], vec![]);
    no_columns.insert_without_columns = true;
    assert!(matches!(
        run(&no_columns),
        Err(RouteError::InsertWithoutKey { .. })
    ));
    assert_eq!(run(&insert(&["r"], vec![])), Ok(Route::All));
    assert_eq!(
        run(&stmt(StatementKind::Update, &["t"], vec![])),
        Ok(Route::All)
    );
    assert_eq!(
        run(&stmt(StatementKind::Delete, &["t"], vec![eq("k", int(3))])),
        shard(2)
    );
    assert!(matches!(
        run(&stmt(StatementKind::Copy { to: false }, &["t"], vec![])),
        Err(RouteError::CopyIntoSharded { .. })
    ));
    assert_eq!(
        run(&stmt(StatementKind::Copy { to: true }, &["t"], vec![])),
        Ok(Route::All)
    );
    assert_eq!(
        run(&stmt(StatementKind::Copy { to: false }, &["r"], vec![])),
        Ok(Route::All)
    );
    assert!(matches!(
        run(&stmt(StatementKind::Merge, &["t"], vec![])),
        Err(RouteError::MergeWithoutKey { .. })
    ));
}

#[test]
fn keyless_kinds() {
    assert_eq!(run(&select(&[], vec![])), Ok(Route::Any));
    assert_eq!(run(&select(&["r"], vec![eq("k", int(2))])), Ok(Route::Any));
    assert_eq!(
        run(&select(&["pg_catalog.pg_class", "pg_type"], vec![])),
        Ok(Route::Any)
    );
    assert_eq!(
        run(&select(&["information_schema.tables"], vec![])),
        Ok(Route::Any)
    );
    assert_eq!(
        run(&stmt(
            StatementKind::Update,
            &["r"],
            vec![eq("cid", int(10))]
        )),
        Ok(Route::All)
    );
    assert_eq!(run(&stmt(StatementKind::Ddl, &[], vec![])), Ok(Route::All));
    assert_eq!(
        run(&stmt(StatementKind::Ddl, &["t"], vec![eq("k", int(1))])),
        Ok(Route::All)
    );
    assert_eq!(
        run(&stmt(StatementKind::Other, &[], vec![])),
        Ok(Route::Any)
    );
    let begin = stmt(StatementKind::Begin, &[], vec![]);
    let overrides = Overrides {
        shard: Some(99),
        sharding_key: None,
    };
    let routed = route(&begin, &[], &overrides, &sharding());
    assert_eq!(
        routed,
        Ok(Routed {
            route: Route::Any,
            write: false,
            touches_moving: false
        })
    );
}

#[test]
fn overrides() {
    let sharding = sharding();
    let by = |shard: Option<usize>, key: Option<&str>, stmt: &StatementSummary| {
        let overrides = Overrides {
            shard,
            sharding_key: key.map(str::to_owned),
        };
        route(stmt, &[], &overrides, &sharding).map(|r| r.route)
    };
    let keyed = select(&["t"], vec![eq("k", int(1))]);
    assert_eq!(by(Some(2), None, &keyed), shard(2));
    assert_eq!(by(Some(2), Some("2"), &keyed), shard(2));
    assert_eq!(
        by(Some(3), None, &keyed),
        Err(RouteError::NoSuchShard {
            shard: 3,
            databases: 3
        })
    );
    assert_eq!(by(None, Some("2"), &keyed), shard(1));
    assert_eq!(by(None, Some("b"), &select(&["v"], vec![])), shard(1));
    assert_eq!(by(None, Some("3"), &select(&[], vec![])), shard(2));
    assert!(matches!(
        by(None, Some("b"), &keyed),
        Err(RouteError::BadKey { .. })
    ));
    assert_eq!(
        route(
            &keyed,
            &[],
            &Overrides {
                shard: None,
                sharding_key: Some("1".into())
            },
            &Sharding::default()
        ),
        Err(RouteError::NoKeySpace)
    );
}

#[test]
fn cross_shard_disabled() {
    let mut sharding = sharding();
    sharding.cross_shard_disabled = true;
    let run = |stmt: &StatementSummary| {
        route(stmt, &[], &Overrides::default(), &sharding).map(|r| r.route)
    };
    assert_eq!(run(&select(&["t"], vec![eq("k", int(1))])), shard(0));
    assert_eq!(
        run(&select(&["t"], vec![])),
        Err(RouteError::CrossShardDisabled { count: 3 })
    );
    assert_eq!(
        run(&select(&["t"], vec![any("k", text("{1,2}"))])),
        Err(RouteError::CrossShardDisabled { count: 2 })
    );
    assert_eq!(
        run(&stmt(StatementKind::Update, &["r"], vec![])),
        Ok(Route::All)
    );
    assert_eq!(
        run(&stmt(StatementKind::Ddl, &["t"], vec![])),
        Ok(Route::All)
    );
    assert_eq!(run(&select(&["r"], vec![])), Ok(Route::Any));
}

#[test]
fn trivial_cluster() {
    let sharding = Sharding {
        databases: 1,
        ..sharding()
    };
    let run = |stmt: &StatementSummary| {
        route(stmt, &[], &Overrides::default(), &sharding).map(|r| r.route)
    };
    assert_eq!(run(&stmt(StatementKind::Insert, &["t"], vec![])), shard(0));
    assert_eq!(run(&select(&["t"], vec![eq("k", text("abc"))])), shard(0));
    assert_eq!(run(&select(&[], vec![])), Ok(Route::Any));
}

#[test]
fn statement_strings() {
    let sharding = sharding();
    let all = |stmts: Vec<StatementSummary>| {
        route_all(
            &Summary { statements: stmts },
            &[],
            &Overrides::default(),
            &sharding,
        )
    };
    let begin = stmt(StatementKind::Begin, &[], vec![]);
    let commit = stmt(StatementKind::Commit, &[], vec![]);
    let update = |k| stmt(StatementKind::Update, &["t"], vec![eq("k", int(k))]);
    let insert = |k| stmt(StatementKind::Insert, &["t"], vec![eq("t.k", int(k))]);
    assert_eq!(
        all(vec![begin.clone(), update(1), commit.clone()]),
        Ok(Routed {
            route: Route::Shard(0),
            write: true,
            touches_moving: false
        })
    );
    assert_eq!(all(vec![update(1), update(4)]).map(|r| r.route), shard(0));
    assert!(matches!(
        all(vec![update(1), update(2)]),
        Err(RouteError::StatementsOnDifferentShards { .. })
    ));
    assert_eq!(
        all(vec![update(1), select(&["t"], vec![])]).map(|r| r.route),
        Ok(Route::All)
    );
    assert_eq!(
        all(vec![
            select(&["t"], vec![any("k", text("{1,2}"))]),
            select(&["t"], vec![eq("k", int(3))])
        ])
        .map(|r| r.route),
        Ok(Route::All)
    );
    assert_eq!(
        all(vec![
            select(&["t"], vec![eq("k", int(1))]),
            select(&["t"], vec![eq("k", int(3))])
        ])
        .map(|r| r.route),
        Err(RouteError::StatementsOnDifferentShards {
            first: "shard 0".into(),
            second: "shard 2".into()
        })
    );
    // An INSERT must not run on the other statement's databases too.
    assert!(all(vec![insert(1), select(&["t"], vec![])]).is_err());
    assert_eq!(
        all(vec![insert(1), select(&["r"], vec![])]).map(|r| r.route),
        shard(0)
    );
    assert_eq!(
        all(vec![]),
        Ok(Routed {
            route: Route::Any,
            write: false,
            touches_moving: false
        })
    );
}

#[test]
fn writes_that_would_misplace_rows() {
    let update = |tables: &[&str], set: &[&str]| {
        let mut update = stmt(StatementKind::Update, tables, vec![eq("k", int(1))]);
        update.set_columns = set.iter().map(|c| c.to_string()).collect();
        update
    };
    assert!(matches!(
        run(&update(&["t"], &["k", "x"])),
        Err(RouteError::ShardingKeyChange { ref table, ref column }) if table == "t" && column == "k"
    ));
    assert_eq!(run(&update(&["t"], &["x"])), shard(0));
    // A column-only entry keys unknown tables, not configured ones.
    assert!(matches!(
        run(&update(&["queue"], &["cid"])),
        Err(RouteError::ShardingKeyChange { ref column, .. }) if column == "cid"
    ));
    assert_eq!(run(&update(&["t"], &["cid"])), shard(0));
    assert_eq!(run(&update(&["f_3"], &["k"])), shard(0));
    assert_eq!(run(&update(&["r"], &["k"])), Ok(Route::All));
    // Overrides decide first.
    let overrides = Overrides {
        shard: Some(2),
        ..Overrides::default()
    };
    let routed = route(&update(&["t"], &["k"]), &[], &overrides, &sharding());
    assert_eq!(routed.map(|r| r.route), shard(2));

    // An omnisharded target written from sharded, unknown or family tables.
    for (tables, source) in [
        (&["r", "t"], "t"),
        (&["r", "queue"], "queue"),
        (&["r", "f_3"], "f_3"),
    ] {
        let insert = stmt(StatementKind::Insert, tables, vec![eq("k", int(1))]);
        assert!(
            matches!(
                run(&insert),
                Err(RouteError::OmnishardedFromSharded { ref table, ref read, .. })
                    if table == "r" && read == source
            ),
            "{tables:?}"
        );
    }
    assert_eq!(
        run(&stmt(StatementKind::Insert, &["r", "pg_class"], vec![])),
        Ok(Route::All)
    );
    // A sharded target read from an omnisharded table is keyed as usual.
    assert!(matches!(
        run(&stmt(StatementKind::Insert, &["t", "r"], vec![])),
        Err(RouteError::InsertWithoutKey { .. })
    ));
}

// ---- rule 12: sublinks ------------------------------------------------------

/// 2 databases; `users` by bigint `id` (1664081458 -> 1, 736124275 -> 0,
/// 5 -> 1, 6 -> 0) and `orders` by `user_id` in the same key space
/// (co-located); `plans` by `id` in another; omnisharded `r`.
fn users_by_id() -> Sharding {
    let ids = list(
        DataType::BigInt,
        &ints(&[(1664081458, 1), (736124275, 0), (5, 1), (6, 0)]),
        2,
    );
    let entry = |name: &str, column: &str, keys: &KeySpace| ShardedTable {
        name: Some(name.to_owned()),
        schema: None,
        column: column.to_owned(),
        keys: keys.clone(),
    };
    let other = list(DataType::BigInt, &ints(&[(5, 0), (6, 1)]), 2);
    Sharding {
        databases: 2,
        tables: vec![
            entry("users", "id", &ids),
            entry("orders", "user_id", &ids),
            entry("plans", "id", &other),
        ],
        families: Vec::new(),
        omnisharded: vec![(None, "r".into())],
        cross_shard_disabled: false,
        unlisted_omnisharded: false,
        unlisted_by_columns: false,
        keyless: None,
        catalog: None,
        functions: Vec::new(),
    }
}

/// `outer` with one sublink per `(tables, conditions)`, the tables being
/// both the sublink's and its own FROM's; `outside` the outer tables.
fn with_sublinks(
    mut outer: StatementSummary,
    sublinks: Vec<(&[&str], Vec<Condition>)>,
) -> StatementSummary {
    let outside = outer.tables.clone();
    let mut subqueries = Vec::new();
    for (tables, conditions) in sublinks {
        let tables: Vec<TableRef> = tables.iter().map(|t| table(t)).collect();
        outer.tables.extend(tables.iter().cloned());
        subqueries.push(Sublink {
            tables: tables.clone(),
            reads_every_table: false,
            conditions,
            from_tables: tables,
            equalities: Vec::new(),
            in_key: None,
        });
    }
    outer.sublinks = Some(Box::new(Sublinks {
        subqueries,
        tables_outside: outside,
        other_names: Vec::new(),
        unnamed_item: false,
    }));
    outer
}

fn correlate(mut stmt: StatementSummary, inner: &str, outer: &str) -> StatementSummary {
    if let Some(sublinks) = stmt.sublinks.as_deref_mut() {
        for sublink in &mut sublinks.subqueries {
            sublink.equalities.push((col(inner), col(outer)));
        }
    }
    stmt
}

fn on_users(stmt: &StatementSummary, params: &[ParamValue<'_>]) -> Result<Route, RouteError> {
    route(stmt, params, &Overrides::default(), &users_by_id()).map(|r| r.route)
}

/// Issue 18: each level was routed alone, and the other level ran on the
/// wrong rows.
#[test]
fn sublinks_on_other_shards_are_refused() {
    // `SELECT id FROM users WHERE grp = (SELECT grp FROM users WHERE id =
    // 1664081458) AND score > 921`: the subquery's rows are on database 1.
    let keyless_outer = with_sublinks(
        select(&["users"], vec![]),
        vec![(&["users"], vec![eq("id", int(1664081458))])],
    );
    assert_eq!(
        on_users(&keyless_outer, &[]),
        Err(RouteError::SubqueryOnOtherShards {
            table: "users".into(),
            what: "is sharded",
            subquery: "shard 1".into(),
            rest: "all shards".into(),
        })
    );
    // `SELECT id, score FROM users WHERE id = 736124275 AND score >= (SELECT
    // avg(score) FROM users WHERE grp = 8)`: the average needs every shard.
    let keyless_inner = with_sublinks(
        select(&["users"], vec![eq("id", int(736124275))]),
        vec![(&["users"], vec![eq("grp", int(8))])],
    );
    assert_eq!(
        on_users(&keyless_inner, &[]),
        Err(RouteError::SubqueryWithoutKey {
            table: "users".into(),
            what: "is sharded",
        })
    );
    // Overrides and one-database clusters decide first.
    let overrides = Overrides {
        shard: Some(0),
        ..Overrides::default()
    };
    let routed = route(&keyless_outer, &[], &overrides, &users_by_id());
    assert_eq!(routed.map(|r| r.route), shard(0));
    let solo = Sharding {
        databases: 1,
        ..users_by_id()
    };
    let routed = route(&keyless_inner, &[], &Overrides::default(), &solo);
    assert_eq!(routed.map(|r| r.route), shard(0));
}

#[test]
fn sublinks_on_the_statements_shard() {
    let keyed = |outer: Value, inner: Value| {
        with_sublinks(
            select(&["users"], vec![eq("id", outer)]),
            vec![(&["orders"], vec![eq("user_id", inner)])],
        )
    };
    // Same database (co-located keys), by literals or parameters.
    assert_eq!(on_users(&keyed(int(5), int(1664081458)), &[]), shard(1));
    let both = keyed(param(1), param(2));
    let text = |t: &'static str| ParamValue::Text(t.as_bytes());
    assert_eq!(on_users(&both, &[text("6"), text("736124275")]), shard(0));
    assert_eq!(
        on_users(&both, &[text("6"), text("5")]),
        Err(RouteError::SubqueryOnOtherShards {
            table: "orders".into(),
            what: "is sharded",
            subquery: "shard 1".into(),
            rest: "shard 0".into(),
        })
    );
    // A NULL (or missing) key restricts nothing.
    assert!(matches!(
        on_users(&both, &[text("6"), ParamValue::Null]),
        Err(RouteError::SubqueryWithoutKey { .. })
    ));
    // Another key space: the same value lives elsewhere.
    let plans = with_sublinks(
        select(&["users"], vec![eq("id", int(5))]),
        vec![(&["plans"], vec![eq("id", int(5))])],
    );
    assert!(matches!(
        on_users(&plans, &[]),
        Err(RouteError::SubqueryOnOtherShards { .. })
    ));
    // No sharded table outside the sublinks: where the sublinks' rows are.
    let unsharded = with_sublinks(
        select(&["r"], vec![]),
        vec![(&["users"], vec![eq("id", int(5))]), (&["r"], vec![])],
    );
    assert_eq!(on_users(&unsharded, &[]), shard(1));
    let none = with_sublinks(select(&[], vec![]), vec![(&["r"], vec![])]);
    assert_eq!(on_users(&none, &[]), Ok(Route::Any));
    // Two sublinks on different databases.
    let two = with_sublinks(
        select(&[], vec![]),
        vec![
            (&["users"], vec![eq("id", int(5))]),
            (&["orders"], vec![eq("user_id", int(6))]),
        ],
    );
    assert!(matches!(
        on_users(&two, &[]),
        Err(RouteError::SubqueryOnOtherShards { ref rest, .. }) if rest.contains("another subquery")
    ));
    // Rows that match no key at all: the sublink reads nothing anywhere.
    let nothing = with_sublinks(
        select(&["users"], vec![]),
        vec![(
            &["orders"],
            vec![Condition::And(vec![
                eq("user_id", int(5)),
                eq("user_id", int(6)),
            ])],
        )],
    );
    assert_eq!(on_users(&nothing, &[]), Ok(Route::All));
    // A placed statement must run there alone, in a string too.
    let string = Summary {
        statements: vec![keyed(int(5), int(5)), select(&["users"], vec![])],
    };
    assert!(matches!(
        route_all(&string, &[], &Overrides::default(), &users_by_id()),
        Err(RouteError::StatementsOnDifferentShards { .. })
    ));
}

#[test]
fn correlated_sublinks_run_anywhere() {
    let exists = |outer_table: &str, inner_table: &str| {
        with_sublinks(
            select(&[outer_table], vec![]),
            vec![(&[inner_table], vec![])],
        )
    };
    // orders.user_id = users.id, co-located: exact on every database.
    let correlated = correlate(exists("users u", "orders o"), "o.user_id", "u.id");
    assert_eq!(on_users(&correlated, &[]), Ok(Route::All));
    let reversed = correlate(exists("users u", "orders o"), "u.id", "o.user_id");
    assert_eq!(on_users(&reversed, &[]), Ok(Route::All));
    let unqualified = correlate(exists("users u", "orders"), "user_id", "u.id");
    assert_eq!(on_users(&unqualified, &[]), Ok(Route::All));
    let unaliased = correlate(exists("users", "orders o"), "o.user_id", "users.id");
    assert_eq!(on_users(&unaliased, &[]), Ok(Route::All));
    // Not the key, not co-located, not an outer table, or not a table.
    for (outer, inner, a, b) in [
        ("users u", "orders o", "o.id", "u.id"),
        ("users u", "orders o", "o.user_id", "u.grp"),
        ("plans p", "orders o", "o.user_id", "p.id"),
        ("r", "orders o", "o.user_id", "r.id"),
        ("users u", "orders o", "o.user_id", "x.id"),
        ("users u", "orders o", "o.user_id", "id"),
        ("users o", "orders o", "o.user_id", "o.id"),
    ] {
        let stmt = correlate(exists(outer, inner), a, b);
        assert!(
            matches!(
                on_users(&stmt, &[]),
                Err(RouteError::SubqueryWithoutKey { .. })
            ),
            "{outer} / {inner}: {a} = {b}"
        );
    }
    // A qualifier that names a subquery, function or CTE somewhere.
    let mut shadowed = correlate(exists("users u", "orders o"), "o.user_id", "u.id");
    if let Some(sublinks) = shadowed.sublinks.as_deref_mut() {
        sublinks.other_names.push("u".into());
    }
    assert!(on_users(&shadowed, &[]).is_err());
    let mut unnamed = correlate(exists("users u", "orders o"), "o.user_id", "u.id");
    if let Some(sublinks) = unnamed.sublinks.as_deref_mut() {
        sublinks.unnamed_item = true;
    }
    assert!(on_users(&unnamed, &[]).is_err());
    // Too many tables to tell: refused when anything is sharded.
    let mut every = exists("users u", "r");
    if let Some(sublinks) = every.sublinks.as_deref_mut() {
        sublinks.subqueries[0].reads_every_table = true;
    }
    assert!(matches!(
        on_users(&every, &[]),
        Err(RouteError::SubqueryWithoutKey { ref table, .. }) if table == "users"
    ));
}

#[test]
fn holds_copies_when_every_table_is_omnisharded_or_a_catalog() {
    let summary = |stmts: Vec<StatementSummary>| Summary { statements: stmts };
    let s = sharding();
    let cases = [
        (vec![stmt(StatementKind::Insert, &["r"], vec![])], true),
        (
            vec![stmt(StatementKind::Update, &["r", "pg_class"], vec![])],
            true,
        ),
        (vec![stmt(StatementKind::Insert, &["t"], vec![])], false),
        (
            vec![stmt(StatementKind::Update, &["r", "t"], vec![])],
            false,
        ),
        // A table the config does not name is sharded by an unknown key.
        (
            vec![stmt(StatementKind::Delete, &["unknown"], vec![])],
            false,
        ),
        (vec![stmt(StatementKind::Insert, &["f_1"], vec![])], false),
        // No table at all: nothing is known to be copied.
        (vec![select(&[], vec![])], false),
        (
            vec![
                stmt(StatementKind::Insert, &["r"], vec![]),
                stmt(StatementKind::Insert, &["t"], vec![]),
            ],
            false,
        ),
    ];
    for (statements, expected) in cases {
        let tables: Vec<_> = statements.iter().map(|s| s.tables.clone()).collect();
        assert_eq!(
            holds_copies(&summary(statements), &s),
            expected,
            "{tables:?}"
        );
    }
}

#[test]
fn unlisted_tables_without_a_key_column_are_omnisharded_once_the_catalog_says_so() {
    let mut s = sharding();
    s.unlisted_by_columns = true;
    let settings = stmt(StatementKind::Insert, &["settings"], vec![]);
    let summary = |stmt: &StatementSummary| Summary {
        statements: vec![stmt.clone()],
    };
    // Before the catalog is read: sharded by a key pgshard does not know.
    assert!(route(&settings, &[], &Overrides::default(), &s).is_err());
    let mut keyless = crate::sharding::KeylessTables::default();
    keyless
        .tables
        .insert(("public".to_owned(), "settings".to_owned()));
    keyless
        .tables
        .insert(("public".to_owned(), "twice".to_owned()));
    keyless.keyed_names.insert("twice".to_owned());
    s.keyless = Some(std::sync::Arc::new(keyless));
    let routed = route(&settings, &[], &Overrides::default(), &s).unwrap();
    assert_eq!(routed.route, Route::All, "written on every database");
    assert!(holds_copies(&summary(&settings), &s));
    let read = select(&["settings"], vec![]);
    assert_eq!(
        route(&read, &[], &Overrides::default(), &s).unwrap().route,
        Route::Any
    );
    // Qualified with its schema, or not; another schema's table of that
    // name, or a name some keyed table also has, is not known to be keyless.
    for (table, keyless) in [
        ("public.settings", true),
        ("other.settings", false),
        ("twice", false),
        ("public.twice", true),
    ] {
        let insert = stmt(StatementKind::Insert, &[table], vec![]);
        assert_eq!(holds_copies(&summary(&insert), &s), keyless, "{table}");
    }
}
