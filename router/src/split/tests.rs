//! Splitting multi-row INSERTs: one line per statement.

use super::*;
use crate::sharding::{DataType, Key, KeySpace, ShardFunction};

/// 2 databases: `orders` by `user_id` (1, 3 -> 0; 2, -4 -> 1), tables with a
/// `tenant` column by it ('a' -> 0, 'b' -> 1); `r` omnisharded.
fn sharding() -> Sharding {
    let ints = |pairs: &[(i64, usize)]| pairs.iter().map(|&(k, s)| (Key::Int(k), s)).collect();
    let entry = |name: Option<&str>, column: &str, data_type, entries| ShardedTable {
        name: name.map(str::to_owned),
        schema: None,
        column: column.to_owned(),
        keys: KeySpace {
            data_type,
            function: ShardFunction::List(entries),
            placement: vec![0, 1],
            moving: None,
        },
    };
    Sharding {
        databases: 2,
        tables: vec![
            entry(
                Some("orders"),
                "user_id",
                DataType::BigInt,
                ints(&[(1, 0), (2, 1), (3, 0), (-4, 1)]),
            ),
            entry(
                None,
                "tenant",
                DataType::Text,
                vec![(Key::Text("a".into()), 0), (Key::Text("b".into()), 1)],
            ),
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

fn split(sql: &str) -> Result<Split, SplitError> {
    split_insert(sql, &sharding())
}

#[test]
fn rows_go_to_their_shards_in_order() {
    let s =
        split("INSERT INTO orders (note, user_id) VALUES ('a', 1), ('b', 2), ('c', 3)").unwrap();
    assert!(!s.returning);
    assert_eq!(
        s.parts,
        vec![
            Part {
                database: 0,
                sql: "INSERT INTO orders (note, user_id) VALUES ('a', 1), ('c', 3)".into(),
                rows: vec![0, 2],
                params: vec![],
            },
            Part {
                database: 1,
                sql: "INSERT INTO orders (note, user_id) VALUES ('b', 2)".into(),
                rows: vec![1],
                params: vec![],
            },
        ]
    );
    let s = split(
        "INSERT INTO orders (user_id, qty) VALUES ('2'::bigint, 1), (-4, 2), (3, 3) RETURNING id",
    )
    .unwrap();
    assert!(s.returning);
    assert_eq!(
        s.parts
            .iter()
            .map(|p| (p.database, p.rows.clone()))
            .collect::<Vec<_>>(),
        vec![(1, vec![0, 1]), (0, vec![2])]
    );
    let s = split("INSERT INTO events (tenant, x) VALUES ('b', 1), ('a', 2)").unwrap();
    assert_eq!(s.parts.len(), 2);
    let s = split(
        "INSERT INTO orders (user_id, id, qty) VALUES (1, 1, 1), (2, 1, 1) \
         ON CONFLICT (user_id, id) DO UPDATE SET qty = excluded.qty",
    )
    .unwrap();
    assert!(
        s.parts[0]
            .sql
            .contains("ON CONFLICT (user_id, id) DO UPDATE"),
        "{:?}",
        s.parts
    );
}

#[test]
fn what_cannot_split_says_why() {
    for (sql, says) in [
        ("INSERT INTO orders (note) VALUES ('a'), ('b')", "names the sharding key"),
        ("INSERT INTO orders VALUES (1), (2)", "names the sharding key"),
        ("INSERT INTO orders (user_id) VALUES (1), ($1)", "row 2 of the INSERT into orders"),
        ("INSERT INTO orders (user_id) VALUES (1), (NULL)", "is NULL"),
        ("INSERT INTO orders (user_id) VALUES (1), (1 + 1)", "not a literal"),
        ("INSERT INTO orders (user_id) VALUES (1), (7)", "no shard is configured"),
        ("INSERT INTO orders (user_id) VALUES (1), ('x')", "row 2"),
        (
            "INSERT INTO orders (user_id) VALUES (1), (2) ON CONFLICT DO NOTHING",
            "ON CONFLICT target",
        ),
        (
            "INSERT INTO orders (user_id) VALUES (1), (2) ON CONFLICT (user_id) DO NOTHING RETURNING *",
            "RETURNING",
        ),
        ("INSERT INTO orders (user_id) SELECT user_id FROM orders", "VALUES list"),
        ("INSERT INTO r (a) VALUES (1), (2)", "sharded by a key column"),
        ("INSERT INTO orders (user_id) VALUES (1); SELECT 1", "one statement per query"),
    ] {
        let why = split(sql).unwrap_err().to_string();
        assert!(why.contains(says), "{sql}: {why}");
    }
}

#[test]
fn insert_select_keeps_rows_on_their_shards_or_is_refused() {
    let check = |sql: &str, databases: &[usize]| check_insert_select(sql, &sharding(), databases);
    for (sql, databases) in [
        // The key comes from a co-located key: each row stays put.
        ("INSERT INTO orders (user_id, qty) SELECT user_id, qty FROM orders", &[0, 1][..]),
        ("INSERT INTO orders (qty, user_id) SELECT o.qty, o.user_id FROM orders o WHERE qty > 1", &[0, 1]),
        (
            "INSERT INTO orders (user_id) SELECT user_id FROM orders UNION ALL SELECT user_id FROM orders",
            &[0, 1],
        ),
        ("INSERT INTO orders (user_id) SELECT user_id FROM orders GROUP BY user_id", &[0, 1]),
        // A literal key on the only shard the statement runs on.
        ("INSERT INTO orders (user_id, qty) SELECT 2, qty FROM orders WHERE user_id = 2", &[1]),
        // LIMIT on one shard is that shard's.
        ("INSERT INTO orders (user_id) SELECT user_id FROM orders LIMIT 3", &[0]),
        // Not an INSERT ... SELECT into a sharded table.
        ("INSERT INTO orders (user_id) VALUES (1)", &[0]),
        ("INSERT INTO r (a) SELECT 1", &[0, 1]),
        ("SELECT 1", &[0, 1]),
    ] {
        assert_eq!(check(sql, databases), Ok(()), "{sql}");
    }
    for (sql, databases, says) in [
        ("INSERT INTO orders (user_id, qty) SELECT qty, user_id FROM orders", &[0, 1][..], "from the sharding key of a co-located"),
        ("INSERT INTO orders (user_id) SELECT user_id + 1 FROM orders", &[0, 1], "co-located"),
        ("INSERT INTO orders (user_id) SELECT tenant FROM events", &[0, 1], "not co-located"),
        ("INSERT INTO orders (user_id) SELECT 2 FROM orders", &[0, 1], "key of shard 1 but reads shard(s) 0, 1"),
        ("INSERT INTO orders (user_id) SELECT user_id FROM orders LIMIT 3", &[0, 1], "per shard"),
        ("INSERT INTO orders (user_id) SELECT user_id FROM orders UNION SELECT user_id FROM orders", &[0, 1], "UNION"),
        ("INSERT INTO orders (user_id) SELECT * FROM orders", &[0, 1], "co-located"),
    ] {
        let why = check(sql, databases).unwrap_err().to_string();
        assert!(why.contains(says), "{sql}: {why}");
        assert!(why.starts_with("INSERT INTO orders ... SELECT"), "{why}");
    }
}

/// Without a column list the SELECT's columns fill the table's in order:
/// the key's place is the catalog's, and without one it is refused (it
/// was sent to every shard unchecked, its rows kept where they were read).
#[test]
fn insert_select_without_a_column_list_finds_the_key_in_the_catalog() {
    use crate::catalog::{Catalog, CatalogRow, Table};
    let unknown = sharding();
    let mut known = sharding();
    known.catalog = Some(std::sync::Arc::new(Catalog::from_rows([
        CatalogRow::Table(Table {
            schema: "public".into(),
            name: "orders".into(),
            columns: ["id", "user_id", "qty"].map(String::from).to_vec(),
            primary_key: Vec::new(),
        }),
    ])));
    let all = [0, 1];
    let check = |sql: &str, sharding: &Sharding| check_insert_select(sql, sharding, &all);
    let sql = "INSERT INTO orders SELECT id + 1, user_id, qty FROM orders";
    assert_eq!(check(sql, &known), Ok(()), "{sql}");
    let why = check(sql, &unknown).unwrap_err().to_string();
    assert!(why.contains("without a column list"), "{why}");
    for sql in [
        "INSERT INTO orders SELECT user_id, id, qty FROM orders",
        "INSERT INTO orders SELECT id, 2400 + row_number() OVER (ORDER BY id), qty FROM orders",
        "INSERT INTO orders SELECT id FROM orders",
    ] {
        let why = check(sql, &known).unwrap_err().to_string();
        assert!(
            why.starts_with("INSERT INTO orders ... SELECT"),
            "{sql}: {why}"
        );
    }
    // Not sharded: not this check's.
    assert_eq!(
        check("INSERT INTO r SELECT * FROM orders", &unknown),
        Ok(())
    );
}

#[test]
fn inserts_without_columns_get_the_tables_columns() {
    let columns: Vec<String> = ["user_id", "id", "note"].map(String::from).to_vec();
    assert_eq!(
        with_columns("INSERT INTO orders VALUES (1, 2), (3, 4, 'x')", &columns).as_deref(),
        Some("INSERT INTO orders (user_id, id, note) VALUES (1, 2), (3, 4, 'x')")
    );
    assert_eq!(
        with_columns("INSERT INTO orders VALUES (1) RETURNING *", &columns).as_deref(),
        Some("INSERT INTO orders (user_id) VALUES (1) RETURNING *")
    );
    for sql in [
        "INSERT INTO orders VALUES (1, 2, 3, 4)",
        "INSERT INTO orders (id) VALUES (1)",
        "INSERT INTO orders SELECT * FROM orders",
        "INSERT INTO orders DEFAULT VALUES",
    ] {
        assert_eq!(with_columns(sql, &columns), None, "{sql}");
    }
}

#[test]
fn bind_parameters_place_rows_and_are_renumbered_per_part() {
    use crate::route::ParamValue::{Binary, Null, Text};
    let rows = InsertRows::parse(
        "INSERT INTO orders (user_id, note) VALUES ($1, $2), ($3::bigint, $2), (3, $4) RETURNING note",
    )
    .unwrap();
    // $1 = 2 (text) -> 1, $3 = 1 (binary int8) -> 0, literal 3 -> 0.
    let params = [
        Text(b"2"),
        Text(b"x"),
        Binary(&[0, 0, 0, 0, 0, 0, 0, 1]),
        Null,
    ];
    let s = rows.split(&sharding(), &params).unwrap();
    assert!(s.returning);
    assert_eq!(
        s.parts,
        vec![
            Part {
                database: 1,
                sql: "INSERT INTO orders (user_id, note) VALUES ($1, $2) RETURNING note".into(),
                rows: vec![0],
                params: vec![0, 1],
            },
            Part {
                database: 0,
                sql: "INSERT INTO orders (user_id, note) VALUES ($2::bigint, $1), (3, $3) RETURNING note"
                    .into(),
                rows: vec![1, 2],
                params: vec![1, 2, 3],
            },
        ]
    );
    // A binary int4 key reads as the integer it is.
    let rows = InsertRows::parse("INSERT INTO orders (user_id) VALUES ($1), ($2)").unwrap();
    let s = rows
        .split(&sharding(), &[Binary(&[0, 0, 0, 2]), Binary(&[0, 0, 0, 3])])
        .unwrap();
    let placed: Vec<(usize, Vec<usize>)> = s
        .parts
        .iter()
        .map(|p| (p.database, p.params.clone()))
        .collect();
    assert_eq!(placed, vec![(1, vec![0]), (0, vec![1])]);
    // Parameters outside the rows (ON CONFLICT's SET) go with every part.
    let rows = InsertRows::parse(
        "INSERT INTO orders (user_id, id) VALUES ($1, 1), ($2, 2) \
         ON CONFLICT (user_id, id) DO UPDATE SET note = $3",
    )
    .unwrap();
    let s = rows
        .split(&sharding(), &[Text(b"1"), Text(b"2"), Text(b"n")])
        .unwrap();
    assert_eq!(s.parts[0].params, vec![0, 2]);
    assert_eq!(s.parts[1].params, vec![1, 2]);
    assert!(
        s.parts[1].sql.contains("VALUES ($1, 2)"),
        "{}",
        s.parts[1].sql
    );
    assert!(s.parts[1].sql.contains("note = $2"), "{}", s.parts[1].sql);
    // A '$1' inside a string is not a parameter.
    let rows =
        InsertRows::parse("INSERT INTO orders (user_id, note) VALUES ($2, '$1'), (2, $1)").unwrap();
    let s = rows.split(&sharding(), &[Text(b"a"), Text(b"1")]).unwrap();
    assert_eq!(
        s.parts[0].sql,
        "INSERT INTO orders (user_id, note) VALUES ($1, '$1')"
    );
    assert_eq!(s.parts[0].params, vec![1]);
    assert_eq!(
        s.parts[1].sql,
        "INSERT INTO orders (user_id, note) VALUES (2, $1)"
    );
    assert_eq!(s.parts[1].params, vec![0]);
}

#[test]
fn bad_parameter_keys_name_the_row() {
    use crate::route::ParamValue::{Binary, Null, Text};
    let rows = InsertRows::parse("INSERT INTO orders (user_id) VALUES ($1), ($2)").unwrap();
    for (params, says) in [
        (
            vec![Text(b"1"), Null],
            "row 2 of the INSERT into orders: its sharding key user_id ($2) is NULL",
        ),
        (
            vec![Text(b"1")],
            "row 2 of the INSERT into orders: its sharding key user_id is $2, which has no value",
        ),
        (vec![Text(b"x"), Text(b"1")], "row 1"),
        (vec![Binary(&[1, 2, 3]), Text(b"1")], "2, 4 or 8 bytes"),
        (vec![Text(b"1"), Text(b"7")], "no shard is configured"),
    ] {
        let why = rows.split(&sharding(), &params).unwrap_err().to_string();
        assert!(why.contains(says), "{params:?}: {why}");
    }
}

#[test]
fn rows_in_a_moving_logical_shard_are_reported() {
    // `orders`' list mapping: 1, 3 -> logical shard 0; 2, -4 -> 1.
    let group = sharding().tables[0].keys.group();
    let moving = sharding().with_moving(group, &[1], false);
    let touches =
        |sql: &str, sharding: &Sharding| split_insert(sql, sharding).unwrap().touches_moving;
    let sql = "INSERT INTO orders (user_id) VALUES (1), (2)";
    assert!(touches(sql, &moving));
    assert!(!touches(sql, &sharding()));
    assert!(!touches(
        "INSERT INTO orders (user_id) VALUES (1), (3)",
        &moving
    ));
    assert!(touches(
        "INSERT INTO orders (user_id) VALUES (3), (-4)",
        &moving
    ));
}

#[test]
fn parts_are_written_from_the_clients_text() {
    // Comments, odd spacing and a trailing semicolon are kept; a row's
    // parenthesized expression is one row.
    let s = split(
        "INSERT INTO orders (user_id, note) VALUES (1, 'a, (b)') /* c */ , ((2), $$x)$$),(3,'c');",
    )
    .unwrap();
    let texts: Vec<&str> = s.parts.iter().map(|p| p.sql.as_str()).collect();
    assert_eq!(
        texts,
        vec![
            "INSERT INTO orders (user_id, note) VALUES (1, 'a, (b)'), (3,'c');",
            "INSERT INTO orders (user_id, note) VALUES ((2), $$x)$$);",
        ]
    );
    // A table or an alias called `values`.
    let cut = |sql: &str, columns: bool, rows: usize| {
        let at = sql.find("INTO ").unwrap() + 5;
        text::RowsText::cut(sql, at, columns, rows).and_then(|t| t.part(&[rows - 1]))
    };
    assert_eq!(
        cut("INSERT INTO values (a) VALUES (1), (2)", true, 2).as_deref(),
        Some("INSERT INTO values (a) VALUES (2)")
    );
    assert_eq!(
        cut(
            "INSERT INTO t AS values VALUES (1), (2) RETURNING 1",
            false,
            2
        )
        .as_deref(),
        Some("INSERT INTO t AS values VALUES (2) RETURNING 1")
    );
    // Not the rows the tree has: no text (the parts are deparsed).
    assert_eq!(cut("INSERT INTO t (a) VALUES (1), (2)", true, 3), None);
}

#[test]
fn rows_of_one_template_are_written_by_their_count() {
    use crate::route::ParamValue::Text;
    let rows = InsertRows::parse(
        "INSERT INTO orders (user_id, note) VALUES ($1, $2), ($3,$4) , ($5, $6) RETURNING note",
    )
    .unwrap();
    assert_eq!(rows.parameters(), 6);
    let params = [
        Text(b"1"),
        Text(b"a"),
        Text(b"2"),
        Text(b"b"),
        Text(b"3"),
        Text(b"c"),
    ];
    let s = rows.split(&sharding(), &params).unwrap();
    let parts: Vec<(usize, &str, Vec<usize>)> = s
        .parts
        .iter()
        .map(|p| (p.database, p.sql.as_str(), p.params.clone()))
        .collect();
    assert_eq!(
        parts,
        vec![
            (
                0,
                "INSERT INTO orders (user_id, note) VALUES ($1, $2), ($3, $4) RETURNING note",
                vec![0, 1, 4, 5]
            ),
            (
                1,
                "INSERT INTO orders (user_id, note) VALUES ($1, $2) RETURNING note",
                vec![2, 3]
            ),
        ]
    );
    // The shape is the row count, whichever rows, while the rows' types
    // agree; else the rows themselves.
    assert_eq!(rows.shape(&[0, 2], &[]), PartShape::Rows(2));
    assert_eq!(
        rows.shape(&[1, 2], &[20, 25, 20, 25, 20, 25]),
        PartShape::Rows(2)
    );
    assert_eq!(
        rows.shape(&[1], &[20, 25, 20, 0, 20, 25]),
        PartShape::Exact(vec![1])
    );
    // Rows that differ, or parameters outside the rows: by the rows.
    for sql in [
        "INSERT INTO orders (user_id, note) VALUES ($1, $2), ($3, 'x')",
        "INSERT INTO orders (user_id, note) VALUES ($1, $2), ($4, $3)",
        "INSERT INTO orders (user_id, note) VALUES ($1, $2), ($3, $4) RETURNING $5",
    ] {
        let rows = InsertRows::parse(sql).unwrap();
        assert_eq!(rows.shape(&[0], &[]), PartShape::Exact(vec![0]), "{sql}");
    }
    // A parameter in two rows is sent for each.
    let rows =
        InsertRows::parse("INSERT INTO orders (user_id, note) VALUES ($1, $3), ($2, $3)").unwrap();
    assert_eq!(rows.shape(&[0], &[]), PartShape::Rows(1));
    assert_eq!(
        rows.part_sql(&[1, 0]).unwrap(),
        (
            "INSERT INTO orders (user_id, note) VALUES ($1, $2), ($3, $4)".to_owned(),
            vec![1, 2, 0, 2]
        )
    );
    // A literal INSERT has no template.
    let rows = InsertRows::parse("INSERT INTO orders (user_id) VALUES (1), (1)").unwrap();
    assert_eq!(rows.shape(&[0, 1], &[]), PartShape::Exact(vec![0, 1]));
}

#[test]
fn parts_are_sent_in_chunks_of_powers_of_two_at_most_chunk_rows() {
    assert_eq!(chunk_sizes(0), Vec::<usize>::new());
    assert_eq!(chunk_sizes(1), vec![1]);
    assert_eq!(chunk_sizes(7), vec![4, 2, 1]);
    assert_eq!(chunk_sizes(128), vec![128]);
    assert_eq!(chunk_sizes(500), vec![128, 128, 128, 64, 32, 16, 4]);
    // Every count from 1 to 2,000: the sizes add up, each a power of two of
    // at most CHUNK_ROWS, largest first; at most 8 sizes ever.
    let mut seen = std::collections::BTreeSet::new();
    for rows in 1..=2_000 {
        let sizes = chunk_sizes(rows);
        assert_eq!(sizes.iter().sum::<usize>(), rows, "{rows}");
        assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{rows}: {sizes:?}");
        for size in sizes {
            assert!(size.is_power_of_two() && size <= CHUNK_ROWS, "{rows}");
            seen.insert(size);
        }
    }
    assert_eq!(seen.len(), CHUNK_ROWS.ilog2() as usize + 1);
}
