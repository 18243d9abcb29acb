//! Tests of the SQL-prepared statements' registry and argument values.

use super::*;
use crate::protocol::backend::BackendFrame;
use crate::session::statements::Registry;
use router::merge::Shape;

fn text(s: &str) -> ArgValue {
    ArgValue::Text(s.into())
}

#[test]
fn statements_are_shared_by_type_list_and_text() {
    let registry = Registry::default();
    let a = registry.sql("(int8)", "SELECT $1", &[Some("int8".into())]);
    let b = registry.sql("(int8)", "SELECT $1", &[Some("int8".into())]);
    let c = registry.sql("", "SELECT $1", &[]);
    assert_eq!(a.id, b.id);
    assert_ne!(a.id, c.id);
    assert_eq!(
        a.prepare,
        format!("PREPARE __pgshard_{} (int8) AS SELECT $1", a.id)
    );
    assert_eq!(
        c.prepare,
        format!("PREPARE __pgshard_{} AS SELECT $1", c.id)
    );
    assert_eq!(a.name, format!("__pgshard_{}", a.id));
    // Ids are drawn with the protocol-level statements': names never clash.
    let cache = router::cache::AstCache::new(10, 1 << 20);
    let parsed = registry.get_or_insert(
        &bytes::Bytes::from_static(b"SELECT 1"),
        &[],
        &cache,
        Default::default(),
    );
    assert!(parsed.id > c.id);
    registry.retire_all();
    assert_ne!(registry.sql("", "SELECT $1", &[]).id, c.id);
    assert!(!a.leaves_state);
    assert!(
        registry
            .sql("", "SELECT pg_advisory_lock($1)", &[])
            .leaves_state
    );
}

#[test]
fn client_names() {
    let registry = Registry::default();
    let statement = registry.sql("", "SELECT 1", &[]);
    let mut names = SqlNames::default();
    assert!(names.is_empty());
    names.insert("q", Arc::clone(&statement)).unwrap();
    let duplicate = names.insert("q", Arc::clone(&statement)).unwrap_err();
    assert_eq!(duplicate.code, sqlstate::DUPLICATE_PREPARED_STATEMENT);
    assert_eq!(duplicate.message, "prepared statement \"q\" already exists");
    names.insert("Q", Arc::clone(&statement)).unwrap();
    assert_eq!(names.len(), 2);
    assert!(names.contains(b"q"));
    assert!(!names.contains(b"r"));
    assert_eq!(names.get("q").map(|s| s.id), Some(statement.id));
    assert!(names.remove(b"q").is_some());
    assert!(names.remove(b"q").is_none());
    assert!(names.remove(&[0xff]).is_none());
    names.clear();
    assert!(names.is_empty());
}

#[test]
fn arguments_as_route_parameters() {
    let values = [text("5"), ArgValue::Null, ArgValue::Unknown, text("abc")];
    let params = route_params(&values);
    assert_eq!(
        params.as_slice(),
        &[
            ParamValue::Text(b"5"),
            ParamValue::Null,
            ParamValue::Null,
            ParamValue::Text(b"abc"),
        ]
    );
}

/// The merge plan of `sql` on a cluster that shards nothing it names.
fn plan(sql: &str) -> MergePlan {
    match router::merge::plan(sql, &Sharding::default()).shape {
        Shape::Merge(plan) => plan,
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn limit_and_offset_from_arguments() {
    let sql = "SELECT a FROM t ORDER BY a LIMIT $1 OFFSET $2";
    let window_of = |values: &[ArgValue]| window(&plan(sql), values);
    let found = window_of(&[text("3"), text("2")]).unwrap();
    assert_eq!((found.count, found.offset), (Some(3), 2));
    let found = window_of(&[ArgValue::Null, text("-1")]).unwrap();
    assert_eq!((found.count, found.offset), (None, 0));
    for values in [
        vec![ArgValue::Unknown, text("0")],
        vec![text("x"), text("0")],
    ] {
        let error = window_of(&values).unwrap_err();
        assert_eq!(error.code, sqlstate::FEATURE_NOT_SUPPORTED, "{values:?}");
    }
    let error = window_of(&[text("1")]).unwrap_err();
    assert_eq!(error.code, sqlstate::SYNTAX_ERROR);
    let fixed = window(&plan("SELECT a FROM t ORDER BY a LIMIT 4"), &[]).unwrap();
    assert_eq!((fixed.count, fixed.offset), (Some(4), 0));
}

#[test]
fn having_reads_its_arguments() {
    let sql = "SELECT g, count(*) FROM t GROUP BY g HAVING count(*) > $2 AND NOT (max(a) IS NULL OR min(a) < $1)";
    let params = having_params(&plan(sql), &[ArgValue::Null, text("7"), text("x")]).unwrap();
    assert_eq!(params, vec![None, Some("7".to_owned()), None]);
    let error = having_params(&plan(sql), &[ArgValue::Unknown, text("7")]).unwrap_err();
    assert_eq!(error.code, sqlstate::FEATURE_NOT_SUPPORTED);
    let none = having_params(&plan("SELECT g, count(*) FROM t GROUP BY g"), &[]).unwrap();
    assert!(none.is_empty());
}

#[test]
fn errors_name_statements_as_the_client_does() {
    let registry = Registry::default();
    let statement = registry.sql("", "SELECT 1", &[]);
    let mut names = SqlNames::default();
    names.insert("Mine", Arc::clone(&statement)).unwrap();
    let error = |text: &str| {
        let mut message = vec![b'E', 0, 0, 0, 0];
        message.extend_from_slice(b"SERROR\0C42601\0M");
        message.extend_from_slice(text.as_bytes());
        message.extend_from_slice(b"\0\0");
        let len = (message.len() - 1) as u32;
        message[1..5].copy_from_slice(&len.to_be_bytes());
        BackendFrame::copy_of(&message).unwrap()
    };
    let id = statement.id;
    let named = error(&format!(
        "wrong number of parameters for prepared statement \"__pgshard_{id}\""
    ));
    let renamed = names.client_error(&named).unwrap();
    assert_eq!(
        renamed,
        error("wrong number of parameters for prepared statement \"Mine\"")
    );
    // Another client's statement, a name not quoted as Postgres quotes,
    // and no name at all are left as they are.
    let other = error(&format!(
        "\"__pgshard_{}\" and __pgshard_{id} and \"__pgshard_{id}x\"",
        id + 1
    ));
    assert_eq!(names.client_error(&other).unwrap(), other);
    assert!(names.client_error(&error("no name")).is_none());
    let notice = BackendFrame::copy_of(b"N\0\0\0\x04").unwrap();
    assert!(names.client_error(&notice).is_none());
}

#[test]
fn shards_run_the_rewritten_statement_with_the_arguments_it_uses() {
    let registry = Registry::default();
    let run = |used: Vec<usize>, of: usize| ShardRun {
        statement: registry.sql("", "SELECT $1", &[]),
        used,
        of,
    };
    let name = run(vec![], 0).statement.name.clone();
    let two = run(vec![0, 2], 3);
    assert_eq!(
        two.execute(" (1, f(2, 3), 'x') ").as_deref(),
        Some(format!("EXECUTE {name}(1, 'x')").as_str())
    );
    // Not the statement's count: Postgres says so for the statement itself.
    assert_eq!(two.execute("(1, 2)"), None);
    assert_eq!(two.execute("(1, 2, 3, 4)"), None);
    assert_eq!(two.execute("(1, 2"), None);
    assert_eq!(
        run(vec![], 0).execute("(7, 8)").as_deref(),
        Some(format!("EXECUTE {name}").as_str())
    );
    let none = run(vec![], 1);
    assert_eq!(
        none.execute("(5)").as_deref(),
        Some(format!("EXECUTE {name}").as_str())
    );
    assert_eq!(
        run(vec![], 0).execute("").as_deref(),
        Some(format!("EXECUTE {name}").as_str())
    );
}
