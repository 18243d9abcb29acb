//! What statements do to the session's settings, one case per line.

use super::*;
use crate::conn::settings::ParamSet;

fn set(pairs: &[(&str, &str)]) -> ParamSet {
    let params: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ParamSet::from_startup(&params).unwrap()
}

/// The changes of `sql` as the session reads them: from its summary.
fn changes(sql: &str) -> SessionChanges {
    let tree = parser_ffi::ParseTree::parse(sql).unwrap();
    let summary = router::extract::summarize(&tree).unwrap();
    session_changes(&summary, sql)
}

fn setting_changes(sql: &str) -> Option<Vec<ParamChange>> {
    let changes = changes(sql);
    (!changes.untracked).then_some(changes.settings)
}

#[test]
fn reset_returns_to_startup_values() {
    let defaults = set(&[("application_name", "app")]);
    let mut s = defaults.clone();
    let found = setting_changes("SET application_name = 'x'; SET LOCAL work_mem = '1MB'").unwrap();
    assert_eq!(found.len(), 1);
    s.apply(&found[0], &defaults);
    assert_ne!(s, defaults);
    for change in setting_changes("RESET application_name").unwrap() {
        s.apply(&change, &defaults);
    }
    assert_eq!(s, defaults);
    s.apply(&ParamChange::ResetAll, &defaults);
    assert_eq!(s, defaults);
}

#[test]
fn setting_texts_are_sliced_per_statement() {
    let found =
        setting_changes("SET search_path TO a, b;SET TIME ZONE 'UTC'; set role none").unwrap();
    assert_eq!(
        found,
        vec![
            ParamChange::Set {
                name: "search_path".into(),
                sql: "SET search_path TO a, b".into()
            },
            ParamChange::Set {
                name: "timezone".into(),
                sql: "SET TIME ZONE 'UTC'".into()
            },
            ParamChange::Set {
                name: "role".into(),
                sql: "set role none".into()
            },
        ]
    );
    assert_eq!(
        setting_changes("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"),
        None
    );
    // Transaction-scoped: nothing outlives the transaction.
    for sql in [
        "SET LOCAL app.tenant = '7'",
        "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "SET CONSTRAINTS ALL DEFERRED",
    ] {
        assert_eq!(changes(sql), SessionChanges::default(), "{sql}");
    }
}

#[test]
fn classify_statements() {
    let tracked = |sql: &str| classify(sql.as_bytes()).tracked;
    let leaves = |sql: &str| classify(sql.as_bytes()).leaves_state;
    for sql in [
        " /* c */ -- x\n set x=1",
        "reset all",
        "DEALLOCATE s1",
        "discard all",
        "EXECUTE p(1)",
        "explain execute p",
        "CREATE TABLE t AS EXECUTE p",
    ] {
        assert!(tracked(sql) && !leaves(sql), "{sql}");
    }
    // Tracked (`session/sql_prepare.rs`), and leaving state where pgshard
    // passes it on.
    assert!(tracked("PREPARE p AS SELECT 1") && leaves("PREPARE p AS SELECT 1"));
    for sql in [
        "CREATE TEMP TABLE t (a int)",
        "select 1; create temporary table t()",
        "select 1; PREPARE p AS SELECT 1",
        "LISTEN jobs",
        "select pg_advisory_lock(1)",
        "SELECT PG_ADVISORY_LOCK(1)",
        "SELECT aaaaaaa, ééé, pg_try_advisory_lock_shared(2) FROM a",
        "select 1;LOAD 'auto_explain'",
        "select 'a;b' ; ; \n\tlisten x",
        "select 1; declare c cursor with hold for select 2",
        "SELECT set_config('role', 'admin', false)",
        "select SET_CONFIG('search_path', 'a', $1)",
        "select set_config ( 'x.y', f(1, 2), false )",
        "select set_config('x', 'it''s, true)', false)",
        "select 1; select set_config('x', '1', true), set_config('y', '2', false)",
        "select set_config('x', 'unterminated",
    ] {
        assert!(leaves(sql) && !tracked(sql), "{sql}");
    }
    // Transaction-scoped: the server stays clean (PostgREST's pattern).
    for sql in [
        "select set_config('request.jwt.claims', $1, true)",
        "SELECT SET_CONFIG('x', f(a, b), TRUE ), tenant_id FROM t",
        "select set_config('x', '1,2)', true)",
        "select reset_config_value, set_configs FROM t",
    ] {
        assert!(!leaves(sql), "{sql}");
    }
    // A WITH HOLD cursor keeps its server until CLOSE.
    assert!(leaves("DECLARE c CURSOR WITH HOLD FOR SELECT 1"));
    for sql in [
        "DECLARE c CURSOR WITH HOLD FOR SELECT 1",
        "close c",
        "CLOSE ALL",
    ] {
        assert!(tracked(sql), "{sql}");
    }
    assert!(!tracked("DECLARE c CURSOR FOR SELECT 1"));
    // A match at every offset from an eight-byte boundary, and none.
    for pad in 0..17 {
        let sql = format!("SELECT {}pg_advisory_lock(1)", "x".repeat(pad));
        assert!(leaves(&sql), "{sql}");
        let sql = format!("SELECT {}; CREATE TEMP TABLE t ()", "x".repeat(pad));
        assert!(leaves(&sql), "{sql}");
        let sql = format!(
            "SELECT abalance{} FROM a; SELECT 'advisory'",
            "a".repeat(pad)
        );
        assert!(!leaves(&sql), "{sql}");
    }
    // Both at once: tracked, and the server needs a reset too.
    assert_eq!(
        classify(b"DISCARD PLANS; CREATE TEMP TABLE t ()"),
        Keywords {
            tracked: true,
            leaves_state: true
        }
    );
    for sql in [
        "PREPARE TRANSACTION 'x'",
        "select pg_advisory_xact_lock(1)",
        "SELECT 1",
        "",
        "/* unterminated",
    ] {
        assert_eq!(classify(sql.as_bytes()), Keywords::default(), "{sql}");
    }
}

#[test]
fn deallocate_and_discard() {
    assert_eq!(changes("DEALLOCATE s1").deallocate, Some(Some("s1".into())));
    assert_eq!(changes("deallocate prepare all").deallocate, Some(None));
    assert_eq!(changes("DEALLOCATE a; DEALLOCATE b").deallocate, None);
    assert!(changes("DISCARD ALL").discard_all);
    assert_eq!(changes("DISCARD PLANS"), SessionChanges::default());
}

#[test]
fn replayed_texts_survive_trailing_comments() {
    let defaults = ParamSet::default();
    let mut client = ParamSet::default();
    for change in setting_changes("SET a.x = 1 -- first\n; SET a.y = 2").unwrap() {
        client.apply(&change, &defaults);
    }
    let sql = client.sync_sql(&defaults).unwrap();
    assert_eq!(sql, "SET a.x = 1 -- first\n;SET a.y = 2\n;");
    // Both statements survive: the comment ends at its newline.
    let tree = parser_ffi::ParseTree::parse(&sql).unwrap();
    assert_eq!(tree.statements().count(), 2);
}
