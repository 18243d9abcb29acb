//! One-line cases of which query strings run one statement at a time.

use super::*;

/// `sql`'s statements, and `check`'s verdict for it: `Ok(())` or the
/// refused statement's number, name and reason (its start).
#[track_caller]
fn check_string(sql: &str, in_block: bool, expected: Result<(), (usize, &str, &str)>) {
    let tree = parser_ffi::ParseTree::parse(sql).unwrap();
    let summary = crate::extract::summarize(&tree).unwrap();
    let pieces = pieces(sql).unwrap();
    let verdict = check(&summary, &pieces, in_block);
    match (verdict, expected) {
        (Ok(()), Ok(())) => {}
        (Err(refusal), Err((number, what, why))) => {
            assert_eq!(
                (refusal.number, refusal.what.as_str()),
                (number, what),
                "{sql}"
            );
            assert!(refusal.why.starts_with(why), "{sql}: {}", refusal.why);
        }
        (verdict, expected) => panic!("{sql}: got {verdict:?}, expected {expected:?}"),
    }
}

#[test]
fn pieces_keep_comments_and_skip_empty_statements() {
    let sql = "SELECT 1; /* pgdog_shard: 1 */ UPDATE t SET a = ';' ;; -- end\nSELECT 'x;y'";
    assert_eq!(
        pieces(sql).unwrap(),
        [
            "SELECT 1",
            "/* pgdog_shard: 1 */ UPDATE t SET a = ';' ",
            "-- end\nSELECT 'x;y'"
        ]
    );
    assert_eq!(pieces("SELECT 1;").unwrap(), ["SELECT 1"]);
    assert!(pieces("").is_err(), "nothing to run");
    assert!(pieces("SELECT (").is_err());
}

#[test]
fn which_strings_run_one_statement_at_a_time() {
    let ok = Ok(());
    check_string(
        "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
        false,
        ok,
    );
    check_string(
        "CREATE TABLE a (id int); CREATE TABLE b (id int)",
        false,
        ok,
    );
    check_string(
        "UPDATE t SET a = 1; SELECT * FROM t; DELETE FROM t",
        false,
        ok,
    );
    check_string("BEGIN; INSERT INTO t VALUES (1); COMMIT", false, ok);
    check_string(
        "START TRANSACTION ISOLATION LEVEL SERIALIZABLE; SELECT 1; ROLLBACK",
        false,
        ok,
    );
    check_string(
        "BEGIN; SELECT 1; COMMIT; BEGIN; SELECT 2; END; SELECT 3",
        false,
        ok,
    );
    check_string(
        "BEGIN; INSERT INTO t VALUES (1); SAVEPOINT s; ROLLBACK TO s; RELEASE s",
        false,
        ok,
    );
    check_string("SELECT 1; COMMIT", true, ok);
    check_string("SAVEPOINT s; INSERT INTO t VALUES (1)", true, ok);
    check_string("SELECT 1; EXPLAIN SELECT * FROM t", false, ok);
    check_string(
        "SELECT 1; DO $$ BEGIN PERFORM 1; END $$",
        false,
        Err((2, "DO", "it changes")),
    );
    check_string(
        "SELECT 1; BEGIN",
        false,
        Err((2, "BEGIN", "it follows statements")),
    );
    check_string(
        "BEGIN; BEGIN",
        false,
        Err((2, "BEGIN", "a transaction block is open")),
    );
    check_string(
        "SELECT 1; BEGIN",
        true,
        Err((2, "BEGIN", "a transaction block is open")),
    );
    check_string(
        "INSERT INTO t VALUES (1); COMMIT",
        false,
        Err((2, "COMMIT", "no transaction block")),
    );
    check_string(
        "SELECT 1; ROLLBACK",
        false,
        Err((2, "ROLLBACK", "no transaction block")),
    );
    check_string(
        "BEGIN; COMMIT AND CHAIN",
        false,
        Err((2, "COMMIT AND", "AND CHAIN")),
    );
    check_string(
        "SELECT 1; SAVEPOINT s",
        false,
        Err((2, "SAVEPOINT S", "savepoints need")),
    );
    check_string(
        "SELECT 1; PREPARE TRANSACTION 'x'",
        true,
        Err((2, "PREPARE TRANSACTION", "two-phase")),
    );
    check_string(
        "SELECT 1; COMMIT PREPARED 'x'",
        false,
        Err((2, "COMMIT PREPARED", "two-phase")),
    );
    check_string(
        "SELECT 1; SET a.b = 1",
        false,
        Err((2, "SET A", "it changes the session")),
    );
    check_string(
        "SELECT 1; SET LOCAL a.b = 1",
        true,
        Err((2, "SET LOCAL", "it changes the session")),
    );
    check_string(
        "SELECT 1; SHOW x",
        false,
        Err((2, "SHOW X", "it changes the session")),
    );
    check_string(
        "SELECT 1; SET pgdog.shard = 1",
        false,
        Err((2, "SET PGDOG", "it changes")),
    );
    check_string(
        "SELECT 1; VACUUM t",
        false,
        Err((2, "VACUUM T", "it changes")),
    );
    check_string(
        "SELECT 1; /* c */ NOTIFY x",
        false,
        Err((2, "NOTIFY X", "it changes")),
    );
    check_string(
        "SELECT 1; DECLARE c CURSOR FOR SELECT 1",
        true,
        Err((2, "DECLARE C", "it changes")),
    );
    check_string("SELECT 1; FETCH c", true, Err((2, "FETCH C", "it changes")));
    check_string(
        "SELECT 1; PREPARE p AS SELECT 1",
        false,
        Err((2, "PREPARE P", "it changes")),
    );
    check_string(
        "SELECT 1; EXPLAIN EXECUTE p",
        false,
        Err((2, "EXPLAIN EXECUTE", "it changes")),
    );
    check_string(
        "SELECT 1; COPY t FROM STDIN",
        false,
        Err((2, "COPY T", "COPY needs")),
    );
    check_string(
        "SELECT 1; DISCARD ALL",
        false,
        Err((2, "DISCARD ALL", "it changes")),
    );
}

#[test]
fn refusal_names_the_statement() {
    let refusal = Refusal {
        number: 2,
        what: "VACUUM T".into(),
        why: "it changes the session",
    };
    assert_eq!(
        refusal.to_string(),
        "this query string's statements go to different shards, so pgshard runs it one statement at a time in one transaction, and cannot run statement 2 (VACUUM T) that way: it changes the session; send it in a query string of its own"
    );
}
