//! SQL-level prepared statements (`PREPARE name AS ...`, `EXECUTE name
//! (...)`), as far as they are text and routing: the parts of a PREPARE's
//! text, an EXECUTE's name in its text (to put the name pgshard prepares
//! the statement under on servers in its place), what routing reads of an
//! EXECUTE's arguments, and the prepared statement's summary with its
//! declared parameter types. The proxy tracks which statements a client
//! prepared (`proxy/src/session/sql_prepared.rs`); nothing here does I/O.
//!
//! # Rules
//! - An EXECUTE runs its statement with the arguments as the parameters, so
//!   it is routed as the statement with these values for `$1`, `$2`, ...:
//!   exactly where the same statement with those values would go.
//! - An argument gives a key only when its value is known without running
//!   anything, as a Bind's text parameter would carry it ([`ArgValue`]): an
//!   integer literal (its decimal text), a string literal (its text, read by
//!   the parameter's type as Postgres reads a text parameter), a numeric
//!   literal of integer form (`10000000000`: its digits; Postgres reads it
//!   as int8 or numeric, whose text has no leading zeros), NULL. Anything
//!   else (an expression, a cast, a non-integer number, which Postgres
//!   would round into an integer parameter or print anew into a text one)
//!   is unknown: it restricts nothing, as a non-key expression in the
//!   statement would (a read goes to every shard, a keyless INSERT is
//!   refused).
//! - A declared parameter type (`PREPARE q(int8) AS ...`) reads as a cast
//!   of the parameter wherever the statement compares it with a key column
//!   without a cast of its own ([`with_declared_types`]): an integer type
//!   types the key as that type, another type (`numeric`, `text` against a
//!   bigint key) restricts nothing.

use parser_ffi::protobuf::Token;

use crate::summary::{Argument, Condition, Summary, ValueSource};

/// The parts of `PREPARE name [(types)] AS statement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareText<'a> {
    /// The name as written (`q`, `"Q"`).
    pub name: &'a str,
    /// The parenthesized type list as written (`(int8, text)`), or empty.
    pub types: &'a str,
    /// The prepared statement's text (trimmed).
    pub body: &'a str,
}

/// The parts of a PREPARE statement's text (one statement, as
/// [`crate::summary::SessionEffect::statement_text`] gives it); `None` if
/// the scanner does not find them.
pub fn prepare_text(text: &str) -> Option<PrepareText<'_>> {
    let tokens = tokens(text)?;
    let mut tokens = tokens.iter();
    if tokens.next()?.token != Token::Prepare as i32 {
        return None;
    }
    let name = tokens.next()?;
    let name = text.get(name.start..name.end)?;
    let mut next = tokens.next()?;
    let mut types = "";
    if next.token == Token::Ascii40 as i32 {
        let open = next.start;
        let mut depth = 1usize;
        loop {
            next = tokens.next()?;
            if next.token == Token::Ascii40 as i32 {
                depth += 1;
            } else if next.token == Token::Ascii41 as i32 {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
        }
        types = text.get(open..next.end)?;
        next = tokens.next()?;
    }
    if next.token != Token::As as i32 {
        return None;
    }
    let body = text.get(next.end..)?.trim();
    (!body.is_empty()).then_some(PrepareText { name, types, body })
}

/// Where the name of the prepared statement `name` is in the text of an
/// EXECUTE (alone, or wrapped by EXPLAIN or CREATE TABLE AS): the byte
/// range of the name that follows the keyword EXECUTE; `None` if the
/// scanner does not find it.
pub fn execute_name(text: &str, name: &str) -> Option<(usize, usize)> {
    let tokens = tokens(text)?;
    tokens.windows(2).find_map(|pair| {
        let (keyword, found) = (&pair[0], &pair[1]);
        let named = keyword.token == Token::Execute as i32
            && identifier(text.get(found.start..found.end)?).as_deref() == Some(name);
        named.then_some((found.start, found.end))
    })
}

/// The items of the parenthesized, comma-separated list `text` starts
/// with (a PREPARE's type list, an EXECUTE's arguments after its name):
/// each item's byte range in `text`, trimmed; `None` when `text` does not
/// start with `(` or the scanner finds no end to the list.
pub fn list_items(text: &str) -> Option<Vec<(usize, usize)>> {
    let tokens = tokens(text)?;
    let mut tokens = tokens.iter();
    if tokens.next()?.token != Token::Ascii40 as i32 {
        return None;
    }
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, None);
    let mut end = 0;
    let opens = [Token::Ascii40 as i32, Token::Ascii91 as i32];
    let closes = [Token::Ascii41 as i32, Token::Ascii93 as i32];
    for token in tokens {
        let (open, close) = (opens.contains(&token.token), closes.contains(&token.token));
        if depth == 0 && (close || token.token == Token::Ascii44 as i32) {
            if let Some(start) = start.take() {
                items.push((start, end));
            }
            if close {
                return Some(items);
            }
            continue;
        }
        depth = if open {
            depth + 1
        } else if close {
            depth - 1
        } else {
            depth
        };
        start.get_or_insert(token.start);
        end = token.end;
    }
    None
}

/// The parameters `sql` uses, renumbered from `$1` in the order of their
/// numbers: the new text, and for each new number the old one's index
/// (0-based). For a statement the shards run instead of a prepared one
/// (rewritten for a merge, which may drop a LIMIT's or HAVING's
/// parameters): prepared without the parameters it no longer uses, it is
/// executed with the arguments of those it does.
pub fn renumbered(sql: &str) -> Option<(String, Vec<usize>)> {
    crate::split::renumber(sql).ok()
}

/// How many parameters a statement prepared with `declared` types has:
/// the highest `$n` of `body`, or more declared types.
pub fn parameter_count(body: &str, declared: usize) -> usize {
    let highest = match body.contains('$') {
        false => 0,
        true => tokens(body).map_or(0, |tokens| {
            tokens
                .iter()
                .filter(|t| t.token == Token::Param as i32)
                .filter_map(|t| body.get(t.start + 1..t.end)?.parse::<usize>().ok())
                .max()
                .unwrap_or(0)
        }),
    };
    highest.max(declared)
}

/// `text` with the range `at` replaced by `with`.
pub fn replace(text: &str, at: (usize, usize), with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..at.0]);
    out.push_str(with);
    out.push_str(&text[at.1..]);
    out
}

/// The scanner's tokens of `text` without comments.
fn tokens(text: &str) -> Option<Vec<parser_ffi::Token>> {
    let comment = |t: &parser_ffi::Token| {
        t.token == Token::SqlComment as i32 || t.token == Token::CComment as i32
    };
    let mut tokens = parser_ffi::scan(text).ok()?;
    tokens.retain(|t| !comment(t));
    Some(tokens)
}

/// An identifier as Postgres names it: a quoted one unquoted, any other
/// lower-cased (ASCII, as for names in a summary).
fn identifier(token: &str) -> Option<String> {
    match token.strip_prefix('"') {
        Some(quoted) => Some(quoted.strip_suffix('"')?.replace("\"\"", "\"")),
        None => Some(token.to_ascii_lowercase()),
    }
}

/// An EXECUTE argument's value as routing, LIMIT and HAVING read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgValue {
    /// Known: the text a Bind's text parameter would carry.
    Text(String),
    /// The literal NULL.
    Null,
    /// Not known without running it.
    Unknown,
}

impl ArgValue {
    /// The value of `argument` (see the module's rules).
    pub fn of(argument: &Argument) -> ArgValue {
        match argument {
            Argument::Value(ValueSource::Integer { value, .. }) => {
                ArgValue::Text(value.to_string())
            }
            Argument::Value(ValueSource::Text { text, .. }) => ArgValue::Text(text.clone()),
            Argument::Value(ValueSource::Null) => ArgValue::Null,
            // Postgres takes no parameters in EXECUTE (a utility statement).
            Argument::Value(ValueSource::Param(_)) | Argument::Expression => ArgValue::Unknown,
            Argument::Number(text) => match integer_digits(text) {
                Some(digits) => ArgValue::Text(digits),
                None => ArgValue::Unknown,
            },
        }
    }

    /// The text, when known and not NULL.
    pub fn text(&self) -> Option<&str> {
        match self {
            ArgValue::Text(text) => Some(text),
            ArgValue::Null | ArgValue::Unknown => None,
        }
    }
}

/// A numeric literal of integer form (`-` then digits) without its leading
/// zeros, as int8 and numeric print it; `None` for any other number.
fn integer_digits(text: &str) -> Option<String> {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(digits) => ("-", digits),
        None => ("", text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = digits.trim_start_matches('0');
    Some(match digits {
        "" => "0".to_owned(),
        digits => format!("{sign}{digits}"),
    })
}

/// The summary of a statement prepared with declared parameter `types`
/// (from [`crate::summary::SessionEffect::Prepare`]): parameter `$n`, for
/// `n` up to `own` (the statement's own parameters: a templated cache
/// entry numbers its literals after them), compared without a cast reads
/// as cast to `types[n - 1]`. `None` when no value changes.
pub fn with_declared_types(
    summary: &Summary,
    types: &[Option<String>],
    own: u16,
) -> Option<Summary> {
    if types.is_empty() {
        return None;
    }
    let mut typed = summary.clone();
    let mut changed = false;
    let mut stack: Vec<&mut Condition> = typed
        .statements
        .iter_mut()
        .flat_map(|stmt| stmt.all_conditions_mut())
        .collect();
    while let Some(condition) = stack.pop() {
        match condition {
            Condition::Eq { value, .. } | Condition::Any { value, .. } => {
                let ValueSource::Param(n) = value.source else {
                    continue;
                };
                if value.cast.is_some() || n > own {
                    continue;
                }
                if let Some(declared) = usize::from(n).checked_sub(1).and_then(|i| types.get(i)) {
                    // A type without a plain name restricts nothing.
                    value.cast = Some(declared.clone().unwrap_or_else(|| "unknown".into()));
                    changed = true;
                }
            }
            Condition::And(children) | Condition::Or(children) => stack.extend(children.iter_mut()),
        }
    }
    changed.then(|| {
        typed.canonicalize();
        typed
    })
}

#[cfg(test)]
mod tests;
