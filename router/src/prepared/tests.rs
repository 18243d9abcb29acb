//! Tests of the PREPARE / EXECUTE text and argument rules.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::summary::{SessionEffect, Value};

fn summary(sql: &str) -> Summary {
    let tree = parser_ffi::ParseTree::parse(sql).unwrap();
    crate::extract::summarize(&tree).unwrap()
}

#[test]
fn prepare_texts() {
    #[rustfmt::skip]
    let cases: &[(&str, Option<(&str, &str)>)] = &[
        ("PREPARE q AS SELECT 1", Some(("", "SELECT 1"))),
        ("prepare q(int8, text) as select $1, $2", Some(("(int8, text)", "select $1, $2"))),
        ("PREPARE \"Q\" (numeric(10, 2)[]) AS\n  SELECT $1", Some(("(numeric(10, 2)[])", "SELECT $1"))),
        ("PREPARE q /* as */ AS /* c */ SELECT 'as'", Some(("", "/* c */ SELECT 'as'"))),
        ("PREPARE as AS SELECT 1", Some(("", "SELECT 1"))),
        ("PREPARE q (int AS SELECT 1", None),
        ("PREPARE q AS", None),
        ("PREPARE TRANSACTION 'x'", None),
        ("SELECT 1", None),
    ];
    for (sql, expected) in cases {
        let found = prepare_text(sql).map(|p| (p.types, p.body));
        assert_eq!(found, *expected, "{sql}");
        if let Some(parts) = prepare_text(sql) {
            assert!(["q", "\"Q\"", "as"].contains(&parts.name), "{sql}");
        }
    }
}

#[test]
fn execute_names() {
    #[rustfmt::skip]
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("EXECUTE q(1)", "q", Some("EXECUTE __n(1)")),
        ("execute Q", "q", Some("execute __n")),
        ("EXECUTE \"Q\"(1)", "Q", Some("EXECUTE __n(1)")),
        ("EXECUTE \"a\"\"b\"", "a\"b", Some("EXECUTE __n")),
        ("EXPLAIN (COSTS OFF) EXECUTE q('x')", "q", Some("EXPLAIN (COSTS OFF) EXECUTE __n('x')")),
        ("CREATE TABLE execute AS EXECUTE execute", "execute", Some("CREATE TABLE execute AS EXECUTE __n")),
        ("EXECUTE /* q */ q", "q", Some("EXECUTE /* q */ __n")),
        ("EXECUTE r", "q", None),
    ];
    for (sql, name, expected) in cases {
        let found = execute_name(sql, name).map(|at| replace(sql, at, "__n"));
        assert_eq!(found.as_deref(), *expected, "{sql}");
    }
}

/// The arguments of `EXECUTE q(...)` as the extractor gives them.
fn args(sql: &str) -> Vec<Argument> {
    match summary(sql).statements.remove(0).session {
        Some(SessionEffect::Execute { args, .. }) => args,
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn argument_values() {
    let text = |s: &str| ArgValue::Text(s.into());
    #[rustfmt::skip]
    let cases: &[(&str, ArgValue)] = &[
        ("5", text("5")),
        ("-5", text("-5")),
        ("'abc'", text("abc")),
        ("'5.0'", text("5.0")),
        ("E'a\\nb'", text("a\nb")),
        ("NULL", ArgValue::Null),
        ("10000000000", text("10000000000")),
        ("-0010000000000", text("-10000000000")),
        ("000000000000000000000", text("0")),
        ("1.5", ArgValue::Unknown),
        ("1e3", ArgValue::Unknown),
        (".5", ArgValue::Unknown),
        ("'5'::int8", ArgValue::Unknown),
        ("1 + 1", ArgValue::Unknown),
        ("now()", ArgValue::Unknown),
        ("true", ArgValue::Unknown),
        ("$1", ArgValue::Unknown),
    ];
    for (arg, expected) in cases {
        let found = args(&format!("EXECUTE q({arg})"));
        assert_eq!(found.len(), 1, "{arg}");
        assert_eq!(ArgValue::of(&found[0]), *expected, "{arg}");
    }
    assert!(args("EXECUTE q").is_empty());
    assert_eq!(args("EXECUTE q(1, 'a', 2.5)").len(), 3);
    assert_eq!(ArgValue::Text("x".into()).text(), Some("x"));
    assert_eq!(ArgValue::Null.text(), None);
}

/// The casts of the parameters in `sql`'s conditions, in canonical order.
fn casts(summary: &Summary) -> Vec<(u16, Option<String>)> {
    let mut found = Vec::new();
    let mut stack: Vec<&Condition> = summary
        .statements
        .iter()
        .flat_map(|s| s.all_conditions())
        .collect();
    while let Some(condition) = stack.pop() {
        match condition {
            Condition::Eq { value, .. } | Condition::Any { value, .. } => {
                if let Value {
                    source: ValueSource::Param(n),
                    cast,
                } = value
                {
                    found.push((*n, cast.clone()));
                }
            }
            Condition::And(children) | Condition::Or(children) => stack.extend(children),
        }
    }
    found.sort();
    found
}

#[test]
fn declared_types_read_as_casts() {
    let body = summary("SELECT * FROM t WHERE id = $1 AND k = $2::int4 AND u = ANY($3) AND w = $4");
    let types = [Some("int4".to_owned()), Some("int8".to_owned()), None];
    let typed = with_declared_types(&body, &types, 4).unwrap();
    assert_eq!(
        casts(&typed),
        vec![
            (1, Some("int4".into())),
            // Its own cast decides.
            (2, Some("int4".into())),
            (3, Some("unknown".into())),
            // Not declared: the column's type.
            (4, None),
        ]
    );
    // Parameters past the statement's own are a templated entry's literals.
    let typed = with_declared_types(&body, &types, 1).unwrap();
    assert_eq!(casts(&typed)[2], (3, None));
    assert!(with_declared_types(&body, &[], 4).is_none());
    let keyless = summary("SELECT * FROM t WHERE id = 1");
    assert!(with_declared_types(&keyless, &types, 4).is_none());
}

#[test]
fn prepare_and_execute_effects() {
    let sql = "PREPARE q (int8, text, numeric(4,1)[]) AS SELECT 1; EXECUTE q(1, 'a', 2.5, x)";
    let found = summary(sql);
    let effects: Vec<_> = found.statements.iter().map(|s| s.session.clone()).collect();
    let Some(prepare @ SessionEffect::Prepare { name, types, .. }) = &effects[0] else {
        panic!("{effects:?}");
    };
    assert_eq!(name, "q");
    assert_eq!(
        types,
        &[
            Some("int8".into()),
            Some("text".into()),
            Some("numeric".into())
        ]
    );
    assert_eq!(
        prepare.statement_text(sql),
        Some("PREPARE q (int8, text, numeric(4,1)[]) AS SELECT 1")
    );
    let Some(execute @ SessionEffect::Execute { name, args, .. }) = &effects[1] else {
        panic!("{effects:?}");
    };
    assert_eq!(name, "q");
    assert_eq!(args.len(), 4);
    assert_eq!(args[3], Argument::Expression);
    assert_eq!(
        execute.statement_text(sql),
        Some("EXECUTE q(1, 'a', 2.5, x)")
    );
    for wrapped in ["EXPLAIN EXECUTE q(1)", "CREATE TABLE t AS EXECUTE q(1)"] {
        let found = summary(wrapped).statements.remove(0).session;
        assert!(
            matches!(found, Some(SessionEffect::Execute { ref name, .. }) if name == "q"),
            "{wrapped}: {found:?}"
        );
    }
    assert_eq!(summary("EXPLAIN SELECT 1").statements[0].session, None);
}

#[test]
fn executes_are_never_templated() {
    use crate::cache::AstCache;
    use crate::sharding::ParserEngine;
    let cache = AstCache::new(100, 1 << 20);
    let argument = |sql: &str| {
        let lookup = cache.lookup(sql, ParserEngine::default()).unwrap();
        assert!(!lookup.entry.templated, "{sql}");
        match &lookup.entry.summary.statements[0].session {
            Some(SessionEffect::Execute { args, .. }) => ArgValue::of(&args[0]),
            Some(SessionEffect::Prepare { .. }) => ArgValue::Null,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(argument("EXECUTE q(5)"), ArgValue::Text("5".into()));
    assert_eq!(argument("EXECUTE q(6)"), ArgValue::Text("6".into()));
    assert_eq!(
        argument("PREPARE q AS SELECT 1 WHERE 1 = $1"),
        ArgValue::Null
    );
}

#[test]
fn lists_and_parameters() {
    let items = |text: &str| {
        list_items(text).map(|items| {
            items
                .iter()
                .map(|&(a, b)| text[a..b].to_owned())
                .collect::<Vec<_>>()
        })
    };
    #[rustfmt::skip]
    let cases: &[(&str, Option<&[&str]>)] = &[
        ("(1, 'a,b', f(2, 3), ARRAY[1,2])", Some(&["1", "'a,b'", "f(2, 3)", "ARRAY[1,2]"])),
        ("( int8 , numeric(10, 2)[] )", Some(&["int8", "numeric(10, 2)[]"])),
        ("(-1 /* , */)", Some(&["-1"])),
        ("()", Some(&[])),
        ("(1, 2", None),
        ("1, 2", None),
    ];
    for (text, expected) in cases {
        let expected = expected.map(|e| e.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(items(text), expected, "{text}");
    }
    let (sql, used) = renumbered("SELECT $3, $1 FROM t WHERE a = $3 LIMIT 5").unwrap();
    assert_eq!(sql, "SELECT $2, $1 FROM t WHERE a = $2 LIMIT 5");
    assert_eq!(used, vec![0, 2]);
    assert_eq!(parameter_count("SELECT $2 + $10, '$11'", 1), 10);
    assert_eq!(parameter_count("SELECT 1", 2), 2);
    assert_eq!(parameter_count("SELECT $1", 0), 1);
}
