//! Hostile input and concurrency: nothing crashes, everything errors cleanly,
//! trees move and are shared across threads.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use parser_ffi::{deparse, parse_protobuf, parse_raw, view, ParseError, ParseTree, MAX_DEPTH};

#[test]
fn hundred_thousand_nested_parentheses_is_an_error() {
    let sql = format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let err = ParseTree::parse(&sql).unwrap_err();
    assert!(matches!(err, ParseError::Syntax { .. }), "{err:?}");
    assert!(parse_raw(&sql).is_err());
}

#[test]
fn a_million_term_sum_parses_and_walks_but_refuses_conversion() {
    // Left-associative: a tree one million levels deep.
    let sql = format!("SELECT {}", vec!["a"; 1_000_000].join("+"));
    let tree = ParseTree::parse(&sql).unwrap();
    let mut column_refs = 0;
    let root = tree.statements().next().unwrap().stmt().unwrap();
    view::walk(root, |kind| {
        if matches!(kind, view::NodeRef::ColumnRef(_)) {
            column_refs += 1;
        }
        view::Walk::Continue
    });
    assert_eq!(column_refs, 1_000_000);
    assert_eq!(
        parser_ffi::to_protobuf(&tree).unwrap_err(),
        parser_ffi::ConvertError::TooDeep
    );
    // The C deparser recurses too; Postgres's stack check stops it.
    let err = deparse(&tree).unwrap_err();
    assert!(
        err.to_string().contains("stack depth limit exceeded"),
        "{err}"
    );
}

#[test]
fn nesting_up_to_the_limit_converts_where_protobuf_decoding_gives_up() {
    // pg_query's prost decoder refuses more than 100 nested messages.
    // `a+a+...+a` with n terms nests n-1 A_Expr levels under the ResTarget.
    let sql = |terms: usize| format!("SELECT {}", vec!["a"; terms].join("+"));
    let deepest = sql(MAX_DEPTH as usize - 4);
    assert!(parse_protobuf(&deepest).is_err());
    // Converted and dropped on this (2 MiB) test thread without overflow.
    let tree = parse_raw(&deepest).unwrap();
    assert_eq!(tree.stmts.len(), 1);
    drop(tree);
    assert_eq!(
        parse_raw(&sql(MAX_DEPTH as usize + 1)).unwrap_err(),
        ParseError::Convert(parser_ffi::ConvertError::TooDeep)
    );
}

#[test]
fn nul_bytes_and_empty_input_are_errors() {
    assert_eq!(
        ParseTree::parse("SELECT '\0'").unwrap_err(),
        ParseError::NulByte
    );
    assert_eq!(ParseTree::parse("").unwrap_err(), ParseError::Empty);
    assert_eq!(parse_raw("  ;  ").unwrap_err(), ParseError::Empty);
    assert_eq!(
        parser_ffi::fingerprint("\0").unwrap_err(),
        ParseError::NulByte
    );
}

#[test]
fn invalid_utf8_escapes_are_syntax_errors() {
    let err = ParseTree::parse(r"SELECT E'\xff'").unwrap_err();
    assert!(err.to_string().contains("invalid byte sequence"), "{err}");
}

#[test]
fn parsing_from_many_threads_at_once_agrees_with_one_thread() {
    let statements: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "SELECT a{i}, b FROM t{i} JOIN u ON u.id = t{i}.id WHERE x = {i} AND y IN ($1, $2)"
            )
        })
        .collect();
    let expected: Vec<_> = statements
        .iter()
        .map(|s| parse_protobuf(s).unwrap())
        .collect();
    let statements = Arc::new(statements);
    let expected = Arc::new(expected);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let statements = Arc::clone(&statements);
            let expected = Arc::clone(&expected);
            std::thread::spawn(move || {
                for round in 0..20 {
                    for (i, sql) in statements.iter().enumerate() {
                        if (i + t + round) % 3 == 0 {
                            assert_eq!(parse_raw(sql).unwrap(), expected[i]);
                        } else {
                            let tree = ParseTree::parse(sql).unwrap();
                            assert_eq!(tree.statements().count(), 1);
                            assert!(deparse(&tree).unwrap().starts_with("SELECT"));
                        }
                        assert!(ParseTree::parse("SELECT FROM WHERE").is_err());
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn trees_move_between_threads_and_are_shared() {
    // Parsed on one thread, read on several, dropped on yet another.
    let tree =
        std::thread::spawn(|| ParseTree::parse("SELECT * FROM events_p7 WHERE id = 1").unwrap())
            .join()
            .unwrap();
    let tree = Arc::new(tree);
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let tree = Arc::clone(&tree);
            std::thread::spawn(move || {
                let mut tables = Vec::new();
                let root = tree.statements().next().unwrap().stmt().unwrap();
                view::walk(root, |kind| {
                    if let view::NodeRef::RangeVar(rv) = kind {
                        tables.push(rv.relname().unwrap().to_owned());
                    }
                    view::Walk::Continue
                });
                tables
            })
        })
        .collect();
    for reader in readers {
        assert_eq!(reader.join().unwrap(), ["events_p7"]);
    }
    let tree = Arc::try_unwrap(tree).unwrap();
    std::thread::spawn(move || drop(tree)).join().unwrap();
}

#[test]
fn parsing_on_a_small_stack_fails_cleanly() {
    // A 256 KiB thread: the stack check leaves Postgres less than its minimum
    // budget, so deep input must still error, never overflow.
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let sql = format!("SELECT {}", vec!["a"; 100_000].join("+"));
            let tree = ParseTree::parse(&sql).unwrap();
            assert!(deparse(&tree).is_err());
        })
        .unwrap();
    handle.join().unwrap();
}

#[test]
fn empty_literals_the_deparser_requires_survive_the_protobuf_round_trip() {
    // libpg_query reads an empty protobuf string back as NULL, and its deparser
    // dereferences these without a check (pg_query::deparse crashes on them).
    for sql in [
        "LOAD ''",
        "PREPARE TRANSACTION ''",
        "COMMIT PREPARED ''",
        "CREATE CONVERSION c FOR '' TO '' FROM f",
        "ALTER SUBSCRIPTION s CONNECTION ''",
        "ALTER TYPE mood ADD VALUE ''",
    ] {
        let tree = ParseTree::parse(sql).unwrap();
        let direct = deparse(&tree).unwrap();
        let via_protobuf =
            parser_ffi::deparse_protobuf(&parser_ffi::to_protobuf(&tree).unwrap()).unwrap();
        assert_eq!(via_protobuf, direct, "{sql}");
        assert!(direct.contains("''"), "{direct}");
    }
}

#[test]
fn node_set_is_the_one_we_built_against() {
    let actual: Vec<String> = view::NODE_TYPES
        .iter()
        .map(|(name, tag)| format!("{tag} {name}"))
        .collect();
    let expected = include_str!("node_types.txt");
    let expected: Vec<&str> = expected.lines().collect();
    assert_eq!(
        actual, expected,
        "libpg_query's node set changed: review the view and the conversion, then update tests/node_types.txt"
    );
}
