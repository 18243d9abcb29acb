//! What a client's statements do to its session (router's
//! `SessionEffect`): the cheap keyword checks that decide when a statement
//! needs a closer look, and that closer look, the statement's summary from
//! the AST cache (`router::extract` says what each statement does to the
//! session), read into setting changes (`conn/settings.rs` keeps the
//! settings themselves). Nothing here parses SQL.

use router::summary::{SessionEffect, Summary};

use crate::conn::settings::ParamChange;

/// The first `N` words of a statement, after whitespace, comments and
/// opening parentheses. Cheap enough for every query: it looks at a few
/// bytes, and decides whether the statement needs parsing at all.
pub fn leading_words<const N: usize>(sql: &str) -> [&str; N] {
    // Words are ASCII letters, digits and `_`: always UTF-8.
    leading_byte_words::<N>(sql.as_bytes())
        .map(|word| std::str::from_utf8(word).unwrap_or_default())
}

/// [`leading_words`] of a text not checked as UTF-8.
fn leading_byte_words<const N: usize>(bytes: &[u8]) -> [&[u8]; N] {
    let mut words: [&[u8]; N] = [b""; N];
    let mut i = 0;
    for slot in words.iter_mut() {
        loop {
            match bytes.get(i..) {
                Some([b, ..]) if b.is_ascii_whitespace() || *b == b'(' => i += 1,
                Some([b'-', b'-', ..]) => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                }
                Some([b'/', b'*', ..]) => {
                    let mut depth = 0usize;
                    while i < bytes.len() {
                        if bytes[i..].starts_with(b"/*") {
                            depth += 1;
                            i += 2;
                        } else if bytes[i..].starts_with(b"*/") {
                            depth -= 1;
                            i += 2;
                            if depth == 0 {
                                break;
                            }
                        } else {
                            i += 1;
                        }
                    }
                }
                _ => break,
            }
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if start == i {
            break;
        }
        *slot = &bytes[start..i];
    }
    words
}

fn is_word(word: &[u8], keyword: &str) -> bool {
    word.eq_ignore_ascii_case(keyword.as_bytes())
}

/// What a client statement string means for the pooler, from its
/// keywords alone (no parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Keywords {
    /// It starts with SET, RESET, DEALLOCATE, DISCARD, CLOSE, or DECLARE
    /// (a WITH HOLD cursor): its summary says what it changes
    /// ([`session_changes`], the cursors).
    pub tracked: bool,
    /// Some statement of it leaves session state on the server connection
    /// (temp tables, LISTEN, SQL PREPARE, WITH HOLD cursors, session
    /// advisory locks, LOAD).
    pub leaves_state: bool,
}

/// Classify a statement string (all its statements, conservatively). Runs
/// on every simple query, so it reads the first word of each statement and
/// scans the text once, eight bytes at a time.
pub fn classify(sql: &[u8]) -> Keywords {
    let [first] = leading_byte_words::<1>(sql);
    let tracked = match first.first().map(u8::to_ascii_uppercase) {
        Some(b'S' | b'R') => is_word(first, "SET") || is_word(first, "RESET"),
        Some(b'D') => {
            is_word(first, "DEALLOCATE")
                || is_word(first, "DISCARD")
                || (is_word(first, "DECLARE") && contains_ignore_case(sql, b"hold"))
        }
        // SQL-prepared statements (`session/sql_prepare.rs`).
        Some(b'P') => {
            is_word(first, "PREPARE") && !is_word(leading_byte_words::<2>(sql)[1], "TRANSACTION")
        }
        Some(b'E') => is_word(first, "EXECUTE") || is_word(first, "EXPLAIN"),
        // CREATE TABLE ... AS EXECUTE; a WITH HOLD cursor keeps its server
        // until it is closed.
        Some(b'C') => {
            (is_word(first, "CREATE") && contains_ignore_case(sql, b"execute"))
                || is_word(first, "CLOSE")
        }
        _ => false,
    };
    Keywords {
        tracked,
        leaves_state: leaves_session_state(sql, first),
    }
}

/// Whether a statement's first word may make it PREPARE, EXECUTE (alone,
/// under EXPLAIN or CREATE TABLE AS) or DEALLOCATE a SQL-prepared statement
/// (`session/sql_extended.rs` looks such a Bind's statement up).
pub fn names_prepared(sql: &[u8]) -> bool {
    let [first] = leading_byte_words::<1>(sql);
    ["PREPARE", "EXECUTE", "EXPLAIN", "DEALLOCATE", "CREATE"]
        .iter()
        .any(|word| is_word(first, word))
}

/// Conservative check for statements with session-lifetime effects
/// (`first` is the string's first word). False positives only cost a
/// DISCARD ALL when the server is released.
fn leaves_session_state(sql: &[u8], first: &[u8]) -> bool {
    if statement_leaves_state(sql, first) || sets_config_for_session(sql) {
        return true;
    }
    // The other statements start after a `;`; an advisory lock is taken
    // by a function whose name has a `v` (rare in SQL, unlike `a`).
    let mut from = 0;
    while let Some(at) = semicolon_or_v(sql, from) {
        if sql[at] == b';' {
            let rest = &sql[at + 1..];
            let [first] = leading_byte_words::<1>(rest);
            if statement_leaves_state(rest, first) {
                return true;
            }
        } else if at >= 2
            && sql[at - 2..]
                .get(..ADVISORY_LOCK.len())
                .is_some_and(|word| word.eq_ignore_ascii_case(ADVISORY_LOCK))
        {
            return true;
        }
        from = at + 1;
    }
    false
}

const ADVISORY_LOCK: &[u8] = b"advisory_lock";

/// Whether some `set_config(name, value, is_local)` call may change a
/// setting for the session: one pgshard cannot track (a function call,
/// not a SET), so the server is reset before another client gets it
/// (a `role` set this way must never reach the next client). Only a
/// literal `true` as the last argument (transaction-scoped, PostgREST's
/// per-request pattern) keeps the server clean. Lexical: `_` is found by
/// memchr, then the words around it, so most statements cost one scan.
fn sets_config_for_session(sql: &[u8]) -> bool {
    let word_byte = |i: usize| {
        sql.get(i)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    memchr::memchr_iter(b'_', sql).any(|at| {
        at >= 3
            && sql[at - 3..at].eq_ignore_ascii_case(b"set")
            && !(at > 3 && word_byte(at - 4))
            && sql
                .get(at + 1..at + 7)
                .is_some_and(|word| word.eq_ignore_ascii_case(b"config"))
            && !word_byte(at + 7)
            && !last_argument_is_true(&sql[at + 7..])
    })
}

/// Whether the call whose `(` starts `rest` (after blanks) has a literal
/// `true` as its last argument. Quoted text is skipped; an unbalanced or
/// missing list counts as not `true`.
fn last_argument_is_true(rest: &[u8]) -> bool {
    let start = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
    if rest.get(start) != Some(&b'(') {
        return false;
    }
    let (mut depth, mut last, mut i) = (0usize, start + 1, start + 1);
    while let Some(&b) = rest.get(i) {
        match b {
            b'\'' | b'"' => {
                // To the closing quote; a doubled quote is an escaped one.
                i += 1;
                while rest.get(i).is_some_and(|&c| c != b) {
                    i += 1;
                }
            }
            b'(' => depth += 1,
            b',' if depth == 0 => last = i + 1,
            b')' if depth == 0 => return rest[last..i].trim_ascii().eq_ignore_ascii_case(b"true"),
            b')' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    false
}

/// One statement (`text` from its start on, `first` its first word)
/// leaves session state behind.
fn statement_leaves_state(text: &[u8], first: &[u8]) -> bool {
    let second = || leading_byte_words::<2>(text)[1];
    match first.first().map(u8::to_ascii_uppercase) {
        Some(b'C') => {
            is_word(first, "CREATE") && {
                let second = second();
                ["TEMP", "TEMPORARY", "LOCAL", "GLOBAL"]
                    .iter()
                    .any(|k| is_word(second, k))
            }
        }
        Some(b'P') => is_word(first, "PREPARE") && !is_word(second(), "TRANSACTION"),
        Some(b'L') => is_word(first, "LISTEN") || is_word(first, "LOAD"),
        Some(b'D') => is_word(first, "DECLARE") && contains_ignore_case(text, b"hold"),
        _ => false,
    }
}

/// Where the next `;`, `v` or `V` is in `bytes`, from `from` on (memchr:
/// SIMD, a statement's text in a few steps).
fn semicolon_or_v(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    memchr::memchr3(b';', b'v', b'V', rest).map(|at| from + at)
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// What a statement string does to the session state pgshard tracks, read
/// from its summary; `text` is the string the summary was parsed from (the
/// cache entry's), which SET texts are sliced from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionChanges {
    /// Setting changes, in order (SET LOCAL and the like end with the
    /// transaction and are not among them).
    pub settings: Vec<ParamChange>,
    /// A change pgshard cannot replay (`SET SESSION CHARACTERISTICS`): the
    /// server connection needs a reset before another client gets it.
    pub untracked: bool,
    /// The string is one `DEALLOCATE`: the name, `None` for ALL.
    pub deallocate: Option<Option<String>>,
    /// A `DISCARD ALL` is among its statements.
    pub discard_all: bool,
}

pub fn session_changes(summary: &Summary, text: &str) -> SessionChanges {
    let mut changes = SessionChanges::default();
    let single = summary.statements.len() == 1;
    for statement in &summary.statements {
        let Some(effect) = &statement.session else {
            continue;
        };
        match effect {
            SessionEffect::Set { name, .. } => match effect.set_text(text) {
                Some(sql) => changes.settings.push(ParamChange::Set {
                    name: name.clone(),
                    sql: sql.to_owned(),
                }),
                None => changes.untracked = true,
            },
            SessionEffect::Reset { name } => {
                changes
                    .settings
                    .push(ParamChange::Reset { name: name.clone() });
            }
            SessionEffect::ResetAll => changes.settings.push(ParamChange::ResetAll),
            SessionEffect::TransactionScoped(_) => {}
            SessionEffect::Untracked => changes.untracked = true,
            SessionEffect::Deallocate(name) if single => changes.deallocate = Some(name.clone()),
            SessionEffect::Deallocate(_) => {}
            SessionEffect::DiscardAll => changes.discard_all = true,
            // Prepared statements are `session/sql_prepared.rs`'s.
            SessionEffect::Prepare { .. } | SessionEffect::Execute { .. } => {}
            SessionEffect::Cursor(_) => {}
        }
    }
    changes
}

#[cfg(test)]
mod tests;
