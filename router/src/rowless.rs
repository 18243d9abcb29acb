//! Statements that return no rows: Postgres ignores an Execute's row limit
//! on them ("if portal contains a query that returns rows (ignored
//! otherwise)"), so a statement that runs on several shards may be executed
//! with one (pgjdbc's `executeUpdate` sends a limit of 1) without being
//! fetched in parts.

use parser_ffi::view::NodeRef;
use parser_ffi::ParseTree;

use crate::summary::{StatementKind, Summary};

/// Whether `sql` (summarized as `summary`) is one statement that returns no
/// rows: a schema change, or an INSERT, UPDATE, DELETE or MERGE without
/// RETURNING. `false` when it may return rows or cannot be read.
pub fn returns_no_rows(summary: &Summary, sql: &str) -> bool {
    let [statement] = summary.statements.as_slice() else {
        return false;
    };
    match statement.kind {
        StatementKind::Ddl => true,
        StatementKind::Insert
        | StatementKind::Update
        | StatementKind::Delete
        | StatementKind::Merge => !returning(sql),
        _ => false,
    }
}

/// Whether the one statement of `sql` has a RETURNING list (`true` when it
/// cannot be read).
fn returning(sql: &str) -> bool {
    let Ok(tree) = ParseTree::parse(sql) else {
        return true;
    };
    let mut statements = tree.statements();
    let (Some(raw), None) = (statements.next(), statements.next()) else {
        return true;
    };
    let Some(stmt) = raw.stmt() else {
        return true;
    };
    let clause = match stmt.kind() {
        NodeRef::InsertStmt(insert) => insert.returning_clause(),
        NodeRef::UpdateStmt(update) => update.returning_clause(),
        NodeRef::DeleteStmt(delete) => delete.returning_clause(),
        NodeRef::MergeStmt(merge) => merge.returning_clause(),
        _ => return true,
    };
    clause.is_some_and(|clause| !clause.exprs().is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::returns_no_rows;

    #[track_caller]
    fn check(sql: &str, expected: bool) {
        let tree = parser_ffi::ParseTree::parse(sql).unwrap();
        let summary = crate::extract::summarize(&tree).unwrap();
        assert_eq!(returns_no_rows(&summary, sql), expected, "{sql}");
    }

    #[test]
    fn writes_without_returning_and_schema_changes_return_no_rows() {
        check("INSERT INTO t (id, v) VALUES ($1, $2)", true);
        check("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", true);
        check("UPDATE t SET v = 1 WHERE k = $1", true);
        check("DELETE FROM t", true);
        check(
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
            true,
        );
        check("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", true);
        check("CREATE TABLE t (id bigint)", true);
        check("ALTER TABLE t ADD COLUMN note text", true);
        check("DROP TABLE t", true);
        check("INSERT INTO t VALUES (1) RETURNING id", false);
        check("UPDATE t SET v = 1 RETURNING *", false);
        check("DELETE FROM t RETURNING 1", false);
        check(
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            false,
        );
        check("SELECT * FROM t", false);
        check("EXPLAIN INSERT INTO t VALUES (1)", false);
        check("SHOW search_path", false);
        check("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)", false);
    }
}
