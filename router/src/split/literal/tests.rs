//! Splitting literal INSERTs by a layout: every split equals the parsing
//! way's, and whatever the layout cannot read is left to it.

use super::*;
use crate::sharding::{DataType, Hasher, KeySpace, ShardFunction, ShardedTable};
use crate::split::split_insert;

/// 2 databases, Postgres hash over 4 logical shards: `orders` by
/// `user_id` (bigint), `accounts` by `aid` (integer), tables with a
/// `tenant` column by it (text).
fn sharding() -> Sharding {
    let entry = |name: Option<&str>, column: &str, data_type| ShardedTable {
        name: name.map(str::to_owned),
        schema: None,
        column: column.to_owned(),
        keys: KeySpace {
            data_type,
            function: ShardFunction::Hash {
                hasher: Hasher::Postgres,
                shard_count: 4,
            },
            placement: vec![0, 1, 0, 1],
            moving: None,
        },
    };
    Sharding {
        databases: 2,
        tables: vec![
            entry(Some("orders"), "user_id", DataType::BigInt),
            entry(Some("accounts"), "aid", DataType::Integer),
            entry(None, "tenant", DataType::Text),
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

/// The layout of `first`, and the split it gives `sql` (`None`: left to
/// the parsing way).
fn by_layout(first: &str, sql: &str, sharding: &Sharding) -> Option<Split> {
    let rows = InsertRows::parse(first).unwrap();
    LiteralLayout::new(&rows, first, sharding)
        .expect("a layout")
        .split(sql, sharding)
}

/// `template` with each `{}` replaced by the next of `values`.
fn fill(template: &str, values: &[&str]) -> String {
    let mut out = String::new();
    let mut values = values.iter();
    let mut pieces = template.split("{}").peekable();
    while let Some(piece) = pieces.next() {
        out.push_str(piece);
        if pieces.peek().is_some() {
            out.push_str(values.next().unwrap());
        }
    }
    out
}

#[test]
fn texts_of_a_template_split_as_the_parser_splits_them() {
    let sharding = sharding();
    // Each template with several sets of values for its `{}`s; every set
    // splits by the first set's layout exactly as it parses.
    let cases: &[(&str, &[&[&str]])] = &[
        (
            "INSERT INTO orders (user_id, note) VALUES ({}, {}), ({}, {}), ({}, {}), ({}, {})",
            &[
                &["1", "'a'", "2", "'b'", "3", "'c'", "4", "'d'"],
                &["007", "'x, (y)'", "2147483648", "''''", "0", "'e'", "12", "'f'"],
                &["99999999999", "'a''b'", "5", "''", "6", "'g'", "70000", "'h'"],
            ],
        ),
        (
            // Negative numbers (folded into the constant), casts, comments,
            // odd spacing, an edge comment, RETURNING.
            "/* pgdog */ INSERT INTO orders (user_id, qty) VALUES (-{}, {})/* c */,({}::bigint,{}) , \
             (bigint {}, -{}), (- {}, {}) RETURNING id;",
            &[
                &["1", "2", "'3'", "4", "'5'", "6", "7", "8"],
                &["2147483648", "2", "'-3'", "4", "'0005'", "6", "1", "8"],
                &["10", "2", "'9'", "4", "'11'", "6", "2147483647", "8"],
            ],
        ),
        (
            "INSERT INTO events (x, tenant) VALUES ({}, {}), ({}, {}), ({}, {}) \
             ON CONFLICT (tenant, x) DO UPDATE SET x = {}",
            &[
                &["1", "'a'", "2", "'b'", "3", "'c'", "4"],
                &["1", "'it''s'", "2", "'b'", "3", "''", "44"],
                &["1.5", "'1'", "2e3", "'2'", "3", "'3'", "4"],
            ],
        ),
        (
            // Integer keys: numbers that are Floats to the parser, leading
            // zeros; a text key given a number.
            "INSERT INTO accounts (aid, tenant) VALUES ({}, {}), ({}, {}), ({}, {})",
            &[
                &["1", "'a'", "2", "'b'", "3", "'c'"],
                &["0001", "'a'", "00", "'b'", "2147483647", "'c'"],
            ],
        ),
        (
            "INSERT INTO t_by_tenant (tenant) VALUES ({}), ({}), ({}), ({})",
            &[
                &["'a'", "'b'", "'c'", "'d'"],
                &["1", "1.50", "007", "'-'"],
            ],
        ),
        (
            // Numbers for a text key: as the parser's constants print.
            "INSERT INTO t_by_tenant (tenant) VALUES ({}), ({}), ({})",
            &[&["1", "2", "3"], &["1.50", "007", "2147483648"]],
        ),
    ];
    for (template, sets) in cases {
        let first = fill(template, sets[0]);
        for values in sets.iter() {
            let sql = fill(template, values);
            let parsed = split_insert(&sql, &sharding).unwrap();
            // A number where the first text had a string (or the reverse):
            // another template, left to the parser.
            let same_kinds = values
                .iter()
                .zip(sets[0].iter())
                .all(|(a, b)| a.starts_with('\'') == b.starts_with('\''));
            let by_layout = by_layout(&first, &sql, &sharding);
            match same_kinds {
                true => assert_eq!(by_layout, Some(parsed), "{sql}"),
                false => assert_eq!(by_layout, None, "{sql}"),
            }
        }
    }
}

#[test]
fn what_the_layout_cannot_read_is_left_to_the_parser() {
    let sharding = sharding();
    // No layout: keys that are not literals, parameters.
    for sql in [
        "INSERT INTO orders (user_id) VALUES (1), (NULL)",
        "INSERT INTO orders (user_id) VALUES (1), (1 + 1)",
        "INSERT INTO orders (user_id) VALUES (1), (E'2')",
        "INSERT INTO orders (user_id) VALUES (1), (-'2')",
        "INSERT INTO orders (user_id, x) VALUES (1, $1), (2, 3)",
    ] {
        let rows = InsertRows::parse(sql).unwrap();
        assert!(LiteralLayout::new(&rows, sql, &sharding).is_none(), "{sql}");
    }
    let first = "INSERT INTO orders (user_id, note) VALUES (1, 'a'), (2, 'b')";
    // Another template, a key that is not a bigint: the parser's way,
    // which gives the reason.
    for sql in [
        "INSERT INTO orders (user_id, note) VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "INSERT INTO orders (user_id, note) VALUES ('1', 'a'), (2, 'b')",
        "INSERT INTO orders (user_id, note) VALUES (1, 'a'), ( 2, 'b')",
        "INSERT INTO orders (user_id, note) VALUES (1, 'a'), (2.5, 'b')",
    ] {
        assert_eq!(by_layout(first, sql, &sharding), None, "{sql}");
    }
    let bad = "INSERT INTO orders (user_id, note) VALUES (1, 'a'), (2.5, 'b')";
    let why = split_insert(bad, &sharding).unwrap_err().to_string();
    assert!(why.contains("row 2"), "{why}");
    // A config whose key is another column: made again.
    let mut other = sharding.clone();
    other.tables[0].column = "note".into();
    let by_note = "INSERT INTO orders (user_id, note) VALUES (1, 'a'), (2, 'b')";
    assert_eq!(by_layout(first, by_note, &other), None);
}

#[test]
fn keys_read_as_the_parsers_constants() {
    let read = |sql: &str, negate: bool| {
        let template = template::template(sql).unwrap();
        key_text(&template.literals[0], negate, sql).map(Cow::into_owned)
    };
    let cases = [
        ("007", false, Some("7")),
        ("007", true, Some("-7")),
        ("0", true, Some("0")),
        ("42", false, Some("42")),
        ("2147483647", true, Some("-2147483647")),
        ("2147483648", false, Some("2147483648")),
        ("2147483648", true, Some("-2147483648")),
        ("1.50", false, Some("1.50")),
        ("1e3", true, Some("-1e3")),
        ("'a''b'", false, Some("a'b")),
        ("'7'", true, None),
    ];
    for (sql, negate, expected) in cases {
        assert_eq!(read(sql, negate).as_deref(), expected, "{sql} {negate}");
    }
}
