//! The corpus (tests/corpus/*.sql, entries separated by `----` lines) through
//! every path: `parse_raw` must equal pg_query's protobuf parse, the direct
//! deparse must equal pg_query's deparse, and the zero-copy walk must see
//! every node the protobuf tree has.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use parser_ffi::{deparse, parse_protobuf, parse_raw, view, ParseTree};

#[path = "shared/corpus.rs"]
mod shared_corpus;
use shared_corpus::corpus;

#[test]
fn corpus_is_large_and_distinct() {
    let entries = corpus();
    let distinct: BTreeSet<&str> = entries.iter().map(|(_, sql)| sql.as_str()).collect();
    assert_eq!(
        distinct.len(),
        entries.len(),
        "duplicate entries in the corpus"
    );
    assert!(entries.len() >= 1000, "only {} entries", entries.len());
}

#[test]
fn parse_raw_equals_protobuf_on_the_corpus() {
    let mut compared = 0;
    let mut failures = Vec::new();
    for (name, sql) in corpus() {
        let expected = match parse_protobuf(&sql) {
            Ok(tree) => tree,
            // pg_query's prost decoder stops at 100 nested messages; such
            // entries cannot be compared (parse_raw must still succeed).
            Err(err) => {
                assert!(
                    parse_raw(&sql).is_ok(),
                    "{name}: protobuf failed ({err}) and so did parse_raw"
                );
                continue;
            }
        };
        match parse_raw(&sql) {
            Ok(actual) if actual == expected => compared += 1,
            Ok(actual) => failures.push(format!(
                "{name}: trees differ\n{sql}\nraw: {actual:?}\npb:  {expected:?}"
            )),
            Err(err) => failures.push(format!("{name}: parse_raw failed: {err}\n{sql}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences, first:\n{}",
        failures.len(),
        failures[0]
    );
    assert!(compared >= 1000, "only {compared} entries compared");
}

#[test]
fn direct_deparse_equals_pg_query_deparse_on_the_corpus() {
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut equivalent = Vec::new();
    for (name, sql) in corpus() {
        let Ok(protobuf) = parse_protobuf(&sql) else {
            continue;
        };
        let tree = ParseTree::parse(&sql).unwrap();
        let actual = deparse(&tree);
        if actual
            .as_ref()
            .is_err_and(|e| e.to_string().contains("not supported by the deparser"))
        {
            // pg_query's own deparse would abort on it (debug) or write wrong SQL.
            continue;
        }
        let expected = parser_ffi::deparse_pg_query(&protobuf);
        match (actual, expected) {
            (Ok(a), Ok(e)) if a == e => compared += 1,
            // The protobuf round trip cannot tell an empty string from an
            // absent one (`NOTIFY ch, ''` comes back as `NOTIFY ch`); the C tree
            // can. Accept our SQL when it means the same through protobuf.
            (Ok(a), Ok(e))
                if pg_query::deparse(&parse_protobuf(&a).unwrap(), Default::default()).as_ref()
                    == Ok(&e) =>
            {
                equivalent.push(format!("{name}: {a:?} vs {e:?}"));
                compared += 1;
            }
            (Err(_), Err(_)) => compared += 1,
            (a, e) => failures.push(format!("{name}: {a:?} != {e:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences, first: {}",
        failures.len(),
        failures[0]
    );
    assert!(
        equivalent.len() <= 3,
        "too many protobuf-equivalent differences: {equivalent:#?}"
    );
    assert!(compared >= 1000, "only {compared} compared");
}

#[test]
fn protobuf_deparse_without_encoding_equals_pg_query_on_the_corpus() {
    let mut compared = 0;
    for (name, sql) in corpus() {
        let Ok(protobuf) = parse_protobuf(&sql) else {
            continue;
        };
        let ours = parser_ffi::deparse_protobuf(&protobuf);
        if ours
            .as_ref()
            .is_err_and(|e| e.to_string().contains("not supported by the deparser"))
        {
            continue;
        }
        let expected = parser_ffi::deparse_pg_query(&protobuf);
        match (&ours, &expected) {
            (Ok(a), Ok(e)) => assert_eq!(a, e, "{name}: {sql}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{name}: {ours:?} vs {expected:?}\n{sql}"),
        }
        compared += 1;
    }
    assert!(compared >= 1000, "only {compared} compared");
}

/// What the walk must find, read independently from the protobuf tree's JSON:
/// table names (RangeVar), parameter numbers (ParamRef), and how many column
/// references and constants there are.
#[derive(Debug, Default, PartialEq)]
struct Found {
    tables: Vec<String>,
    params: Vec<i64>,
    column_refs: usize,
    constants: usize,
}

fn found_in_json(value: &serde_json::Value, found: &mut Found) {
    match value {
        serde_json::Value::Object(map) => {
            if map.contains_key("relname") && map.contains_key("relpersistence") {
                found
                    .tables
                    .push(map["relname"].as_str().unwrap().to_owned());
            }
            if map.len() == 2 && map.contains_key("number") && map.contains_key("location") {
                found.params.push(map["number"].as_i64().unwrap());
            }
            if map.len() == 2 && map.contains_key("fields") && map.contains_key("location") {
                found.column_refs += 1;
            }
            if map.contains_key("isnull") && map.contains_key("val") {
                found.constants += 1;
            }
            map.values().for_each(|v| found_in_json(v, found));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| found_in_json(v, found)),
        _ => {}
    }
}

#[test]
fn zero_copy_walk_finds_what_the_protobuf_tree_holds() {
    let mut checked = 0;
    for (name, sql) in corpus() {
        let Ok(protobuf) = parse_protobuf(&sql) else {
            continue;
        };
        let mut expected = Found::default();
        found_in_json(&serde_json::to_value(&protobuf).unwrap(), &mut expected);

        let tree = ParseTree::parse(&sql).unwrap();
        let mut actual = Found::default();
        for stmt in tree.statements() {
            let Some(root) = stmt.stmt() else { continue };
            view::walk(root, |kind| {
                match kind {
                    view::NodeRef::RangeVar(range_var) => actual
                        .tables
                        .push(range_var.relname().unwrap_or_default().to_owned()),
                    view::NodeRef::ParamRef(param) => actual.params.push(param.number().into()),
                    view::NodeRef::ColumnRef(_) => actual.column_refs += 1,
                    view::NodeRef::AConst(_) => actual.constants += 1,
                    _ => {}
                }
                view::Walk::Continue
            });
        }
        for found in [&mut expected, &mut actual] {
            found.tables.sort();
            found.params.sort();
        }
        assert_eq!(actual, expected, "{name}: {sql}");
        checked += 1;
    }
    assert!(checked >= 1000);
}
