//! Which calls are replaced, with what, and which are refused.

use super::*;

/// `sql` with its calls replaced by 11, 12, ... in text order, or the
/// refusal's message.
fn check(sql: &str, expected: &str) {
    let got = match find(sql) {
        Ok(None) => "unchanged".to_owned(),
        Ok(Some(calls)) => {
            let ids: Vec<i64> = (11..11 + calls.len() as i64).collect();
            calls.apply(sql, &ids)
        }
        Err(RewriteError::Placement(why)) => format!("refused: {why}"),
        Err(other) => format!("error: {other}"),
    };
    assert_eq!(got, expected, "{sql}");
}

#[test]
fn replaced() {
    check(
        "SELECT pgdog.unique_id()",
        "SELECT (SELECT 11::bigint AS unique_id)",
    );
    check(
        "select PGDOG.Unique_Id() as id",
        "select (SELECT 11::bigint AS unique_id) as id",
    );
    check(
        "SELECT pgdog.unique_id(), pgdog.unique_id()::text",
        "SELECT (SELECT 11::bigint AS unique_id), (SELECT 12::bigint AS unique_id)::text",
    );
    check(
        "SELECT pgdog . unique_id ( /* c */ ) + 1",
        "SELECT (SELECT 11::bigint AS unique_id) + 1",
    );
    check(
        "SELECT 1 WHERE pgdog.unique_id() > 0",
        "SELECT 1 WHERE (SELECT 11::bigint AS unique_id) > 0",
    );
    check(
        "INSERT INTO t (id, v) VALUES (pgdog.unique_id(), 'a'), (pgdog.unique_id(), 'b')",
        "INSERT INTO t (id, v) VALUES (11::bigint, 'a'), (12::bigint, 'b')",
    );
    check(
        "INSERT INTO t VALUES (pgdog.unique_id() * 2, lower('X'))",
        "INSERT INTO t VALUES (11::bigint * 2, lower('X'))",
    );
    check(
        "INSERT INTO t (id) SELECT pgdog.unique_id()",
        "INSERT INTO t (id) SELECT 11::bigint",
    );
    check("VALUES (pgdog.unique_id())", "VALUES (11::bigint)");
    check(
        "BEGIN; SELECT pgdog.unique_id(); COMMIT",
        "BEGIN; SELECT (SELECT 11::bigint AS unique_id); COMMIT",
    );
    check(
        "SELECT 'pgdog.unique_id()', \"pgdog.unique_id\"",
        "unchanged",
    );
    check("SELECT unique_id() FROM t", "unchanged");
    check("SELECT other.unique_id()", "unchanged");
}

#[test]
fn refused() {
    check(
        "SELECT pgdog.unique_id() FROM generate_series(1, 3)",
        "refused: in a SELECT with FROM, GROUP BY, HAVING, a window, INTO or a set operation",
    );
    check(
        "SELECT pgdog.unique_id(), generate_series(1, 3)",
        "refused: beside another function call in the SELECT list (it could return a set)",
    );
    check(
        "INSERT INTO t VALUES ((SELECT pgdog.unique_id()))",
        "refused: in a subquery",
    );
    check(
        "INSERT INTO t (id) SELECT pgdog.unique_id() FROM s",
        "refused: in a SELECT with FROM, GROUP BY, HAVING, a window, INTO or a set operation",
    );
    check(
        "INSERT INTO t VALUES (1) RETURNING pgdog.unique_id()",
        "refused: in ON CONFLICT, RETURNING or WITH",
    );
    check(
        "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET v = pgdog.unique_id()",
        "refused: in ON CONFLICT, RETURNING or WITH",
    );
    check(
        "UPDATE t SET id = pgdog.unique_id()",
        "refused: in a statement other than SELECT or INSERT",
    );
    check(
        "CREATE TABLE t (id bigint DEFAULT pgdog.unique_id())",
        "refused: in a statement other than SELECT or INSERT",
    );
    check(
        "PREPARE p AS SELECT pgdog.unique_id()",
        "refused: in a statement other than SELECT or INSERT",
    );
    check(
        "WITH x AS (SELECT pgdog.unique_id()) SELECT * FROM x",
        "refused: in a WITH query",
    );
    check(
        "SELECT pgdog.unique_id() UNION ALL SELECT 1",
        "refused: in a SELECT with FROM, GROUP BY, HAVING, a window, INTO or a set operation",
    );
    check(
        "SELECT pgdog.unique_id(1)",
        "error: pgdog.unique_id() takes no arguments",
    );
    check(
        "SELECT pgdog.unique_id() ORDER BY pgdog.unique_id()",
        "refused: in a part of the statement other than those",
    );
}

#[test]
fn mentions_is_case_blind_and_cheap() {
    assert!(mentions(b"select PGDOG.UNIQUE_ID()"));
    assert!(mentions(b"pgdog unique_id"));
    assert!(!mentions(b"SELECT unique_id FROM t"));
    assert!(!mentions(b"(SELECT 1::bigint AS unique_id)"));
    assert!(!mentions(b"select unique_x, _id"));
    assert!(!mentions(b"_id"));
}

#[test]
fn parameters_follow_the_texts_own() {
    let sql = "INSERT INTO t (id, v) VALUES (pgdog.unique_id(), $1), (pgdog.unique_id(), $2)";
    let calls = find(sql).unwrap().unwrap();
    assert_eq!(calls.params, 2);
    assert_eq!(
        calls.apply_params(sql, calls.params),
        "INSERT INTO t (id, v) VALUES ($3::bigint, $1), ($4::bigint, $2)"
    );
    let sql = "SELECT pgdog.unique_id()";
    let calls = find(sql).unwrap().unwrap();
    assert_eq!(calls.params, 0);
    assert_eq!(
        calls.apply_params(sql, 1),
        "SELECT (SELECT $2::bigint AS unique_id)"
    );
}
