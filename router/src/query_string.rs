//! A query string of several statements whose statements go to different
//! shards (or one of them to several): the proxy runs it one statement at
//! a time, as Postgres runs such a string, inside one implicit transaction
//! (`proxy/src/session/query_string.rs`). Here, pure: the statements'
//! texts ([`pieces`]) and whether the string can be run that way exactly
//! ([`check`]), else which statement cannot and why.
//!
//! Postgres runs the statements of a simple-protocol string in one
//! implicit transaction, unless the string opens a block itself: BEGIN
//! turns the statements after it into a transaction block, COMMIT or
//! ROLLBACK ends that block, and the statements after it start a new
//! implicit transaction. The first error skips the rest of the string
//! and rolls back the implicit transaction (or aborts the block).
//!
//! Rules (a string breaking one is refused whole, before anything runs):
//! 1. SELECT, INSERT, UPDATE, DELETE, MERGE, EXPLAIN and schema changes
//!    run one at a time.
//! 2. BEGIN / START TRANSACTION: only outside a block and first in its
//!    implicit transaction (first in the string, or right after the
//!    COMMIT or ROLLBACK that ended a block). Postgres folds statements
//!    before it into the block; pgshard cannot once they ran.
//! 3. COMMIT / ROLLBACK: only inside a block (opened by the string or
//!    before it), not `AND CHAIN`. Outside one Postgres warns and ends the
//!    implicit transaction early.
//! 4. SAVEPOINT, RELEASE, ROLLBACK TO: only inside a block (outside one
//!    Postgres refuses them). PREPARE TRANSACTION and the `... PREPARED`
//!    commands: refused.
//! 5. Refused: COPY, SET / RESET / SHOW / DISCARD and `SET pgdog.*`,
//!    cursors (DECLARE, FETCH, MOVE, CLOSE), DO blocks, and the other
//!    utility statements (VACUUM, LISTEN, NOTIFY, PREPARE, EXECUTE, CALL,
//!    ...): they change the session, cannot run in a transaction block,
//!    may end it themselves, or would not run in the string's transaction
//!    here (a DO that reaches no table runs on any shard, outside it).

use crate::summary::{StatementKind, Summary};

/// Why a query string cannot be run one statement at a time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this query string's statements go to different shards, so pgshard runs it one statement at a time in one transaction, and cannot run statement {number} ({what}) that way: {why}; send it in a query string of its own"
)]
pub struct Refusal {
    /// The statement's position in the string, from 1.
    pub number: usize,
    /// Its first keyword(s), upper case.
    pub what: String,
    pub why: &'static str,
}

/// The text of each statement of `sql`, as the parser delimits them,
/// with the comments between the previous `;` and the statement (they may
/// carry pgshard's overrides): from just after the previous statement's
/// `;` (past whitespace and empty statements) to just before its own.
/// Empty statements are not listed.
pub fn pieces(sql: &str) -> Result<Vec<&str>, parser_ffi::ParseError> {
    let tree = parser_ffi::ParseTree::parse(sql)?;
    let mut pieces = Vec::new();
    let mut previous_end = 0;
    for raw in tree.statements() {
        let start = usize::try_from(raw.stmt_location()).unwrap_or(0);
        let len = usize::try_from(raw.stmt_len()).unwrap_or(0);
        // A length of 0 means "to the end of the string".
        let end = if len == 0 { sql.len() } else { start + len };
        let from = previous_end.min(start);
        if let Some(text) = sql.get(from..end) {
            pieces.push(text.trim_start_matches(|c: char| c == ';' || c.is_whitespace()));
        }
        previous_end = end;
    }
    Ok(pieces)
}

/// Whether the string of `pieces` (summarized in `summary`) can run one
/// statement at a time; `in_block`: the client's transaction block is
/// open (or aborted) before it.
pub fn check(summary: &Summary, pieces: &[&str], in_block: bool) -> Result<(), Refusal> {
    let mut in_block = in_block;
    // Statements of the current implicit transaction so far.
    let mut implicit = 0;
    for (i, (statement, text)) in summary.statements.iter().zip(pieces).enumerate() {
        let refuse = |why| {
            Err(Refusal {
                number: i + 1,
                what: leading_keywords(text),
                why,
            })
        };
        match statement.kind {
            StatementKind::Select
            | StatementKind::Insert
            | StatementKind::Update
            | StatementKind::Delete
            | StatementKind::Merge
            | StatementKind::Explain
            | StatementKind::Ddl
                if statement.session.is_none() =>
            {
                implicit += usize::from(!in_block);
            }
            StatementKind::Begin if in_block => {
                return refuse("a transaction block is open already")
            }
            StatementKind::Begin if implicit > 0 => {
                return refuse("it follows statements of the string's implicit transaction, which Postgres would fold into the block and pgshard ran already; put BEGIN first")
            }
            StatementKind::Begin => in_block = true,
            StatementKind::Commit | StatementKind::Rollback if !in_block => {
                return refuse("no transaction block is open (Postgres would warn and end the implicit transaction early)")
            }
            StatementKind::Commit | StatementKind::Rollback if has_word(text, "CHAIN") => {
                return refuse("AND CHAIN opens the next block at once")
            }
            StatementKind::Commit | StatementKind::Rollback => {
                in_block = false;
                implicit = 0;
            }
            StatementKind::TransactionOther if has_word(text, "PREPARED") || has_word(text, "PREPARE") => {
                return refuse("two-phase commands are pgshard's own to send")
            }
            StatementKind::TransactionOther if !in_block => {
                return refuse("savepoints need a transaction block")
            }
            StatementKind::TransactionOther => {}
            StatementKind::Copy { .. } => return refuse("COPY needs a query string of its own here"),
            _ => {
                return refuse("it changes the session, cannot run inside a transaction, or would run outside the string's transaction")
            }
        }
    }
    if summary.statements.len() != pieces.len() {
        return Err(Refusal {
            number: pieces.len().min(summary.statements.len()) + 1,
            what: String::new(),
            why: "the string's statements could not be told apart",
        });
    }
    Ok(())
}

/// The words a statement starts with (up to two, upper case, the second
/// only when nothing but whitespace comes between), past leading
/// whitespace and comments: what a refusal calls it.
fn leading_keywords(text: &str) -> String {
    let mut found = words(text);
    let Some(first) = found.next() else {
        return String::new();
    };
    let after = text
        .to_uppercase()
        .split_once(first.as_str())
        .map(|(_, rest)| rest.trim_start().starts_with(|c: char| c.is_alphanumeric()))
        .unwrap_or(false);
    match found.next() {
        Some(second) if after => format!("{first} {second}"),
        _ => first,
    }
}

/// Whether `word` (upper case) is one of the statement's words outside
/// comments (quoted text may hold it too: a refusal at worst).
fn has_word(text: &str, word: &str) -> bool {
    words(text).any(|w| w == word)
}

/// The statement's words, upper case, comments skipped (not nested ones).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, next)| next);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, next)| next);
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if end == 0 {
                let mut chars = rest.chars();
                chars.next()?;
                rest = chars.as_str();
                continue;
            }
            let (word, next) = rest.split_at(end);
            rest = next;
            return Some(word.to_uppercase());
        }
    })
}

#[cfg(test)]
mod tests;
