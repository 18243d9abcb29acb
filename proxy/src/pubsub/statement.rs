//! LISTEN, UNLISTEN and UNLISTEN * read from a client's text (pure): the
//! channel as Postgres names it (an unquoted name folded to lower case, a
//! quoted one kept, both cut to 63 bytes), and the channel written back as
//! a quoted identifier for the listening connection.

/// Postgres's `NAMEDATALEN - 1` (`src/include/pg_config_manual.h`): an
/// identifier longer than this is truncated.
const MAX_IDENTIFIER: usize = 63;

/// One statement of a LISTEN string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    Listen(String),
    Unlisten(String),
    UnlistenAll,
}

impl Order {
    /// Its command tag.
    pub fn tag(&self) -> &'static str {
        match self {
            Order::Listen(_) => "LISTEN",
            Order::Unlisten(_) | Order::UnlistenAll => "UNLISTEN",
        }
    }
}

/// Why a text is not a string of LISTEN / UNLISTEN statements pgshard
/// answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotListen {
    /// Some statement is something else (or the text is empty).
    Mixed,
    /// Postgres would refuse it: its message (SQLSTATE 42601).
    Syntax(&'static str),
}

/// Whether `sql`'s first word is LISTEN or UNLISTEN (the cheap check
/// before [`parse`]).
pub fn starts_listen(sql: &[u8]) -> bool {
    let (word, _) = word(sql, skip_blank(sql, 0));
    word.eq_ignore_ascii_case(b"LISTEN") || word.eq_ignore_ascii_case(b"UNLISTEN")
}

/// Whether a statement after the first of `sql` is a LISTEN (`SELECT 1;
/// LISTEN jobs`): such a string is refused in transaction mode rather than
/// run on a pooled server, whose LISTEN would be lost when it is reset. A
/// later UNLISTEN passes (asyncpg resets a connection with `SELECT
/// pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`): it runs on
/// the server, where it has nothing to undo. Quoted text is skipped; memchr
/// jumps from one `;` or quote to the next (pgbench's statements, say, end
/// with a `;`: one jump past the text, not a look at every byte).
pub fn listens_after_first(sql: &[u8]) -> bool {
    if memchr::memchr(b';', sql).is_none() {
        return false;
    }
    let mut at = 0;
    while let Some(found) = memchr::memchr3(b';', b'\'', b'"', &sql[at..]) {
        at += found;
        let quote = sql[at];
        if quote == b';' {
            let rest = &sql[at + 1..];
            let (word, _) = word(rest, skip_blank(rest, 0));
            if word.eq_ignore_ascii_case(b"LISTEN") {
                return true;
            }
            at += 1;
        } else {
            // Past the closing quote; an unclosed one runs to the end.
            match memchr::memchr(quote, &sql[at + 1..]) {
                Some(close) => at += close + 2,
                None => return false,
            }
        }
    }
    false
}

/// Read `sql` as LISTEN / UNLISTEN statements separated by `;` (empty ones
/// skipped), each as Postgres reads it.
pub fn parse(sql: &[u8]) -> Result<Vec<Order>, NotListen> {
    let mut orders = Vec::new();
    let mut at = 0;
    loop {
        at = skip_blank(sql, at);
        match sql.get(at) {
            None => break,
            Some(b';') => {
                at += 1;
                continue;
            }
            Some(_) => {}
        }
        let (word, after) = word(sql, at);
        let listen = word.eq_ignore_ascii_case(b"LISTEN");
        if !listen && !word.eq_ignore_ascii_case(b"UNLISTEN") {
            return Err(NotListen::Mixed);
        }
        at = skip_blank(sql, after);
        let order = match sql.get(at) {
            Some(b'*') if !listen => {
                at += 1;
                Order::UnlistenAll
            }
            _ => {
                let (name, after) = identifier(sql, at)?;
                at = after;
                if listen {
                    Order::Listen(name)
                } else {
                    Order::Unlisten(name)
                }
            }
        };
        orders.push(order);
        at = skip_blank(sql, at);
        match sql.get(at) {
            None => break,
            Some(b';') => at += 1,
            Some(_) => return Err(NotListen::Syntax("syntax error in LISTEN or UNLISTEN")),
        }
    }
    if orders.is_empty() {
        return Err(NotListen::Mixed);
    }
    Ok(orders)
}

/// `channel` as a quoted identifier, for the statement pgshard sends.
pub fn quoted(channel: &str) -> String {
    format!("\"{}\"", channel.replace('"', "\"\""))
}

/// Past whitespace and comments from `at`.
fn skip_blank(sql: &[u8], mut at: usize) -> usize {
    loop {
        match sql.get(at..) {
            Some([b, ..]) if b.is_ascii_whitespace() => at += 1,
            Some([b'-', b'-', ..]) => {
                while at < sql.len() && sql[at] != b'\n' {
                    at += 1;
                }
            }
            Some([b'/', b'*', ..]) => {
                let mut depth = 0usize;
                while at < sql.len() {
                    if sql[at..].starts_with(b"/*") {
                        depth += 1;
                        at += 2;
                    } else if sql[at..].starts_with(b"*/") {
                        depth -= 1;
                        at += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        at += 1;
                    }
                }
            }
            _ => return at,
        }
    }
}

/// The keyword at `at` (ASCII letters, digits, `_`) and where it ends.
fn word(sql: &[u8], at: usize) -> (&[u8], usize) {
    let mut end = at;
    while end < sql.len() && (sql[end].is_ascii_alphanumeric() || sql[end] == b'_') {
        end += 1;
    }
    (&sql[at..end], end)
}

/// The identifier at `at`, as Postgres's scanner makes it, and where it
/// ends.
fn identifier(sql: &[u8], at: usize) -> Result<(String, usize), NotListen> {
    const SYNTAX: NotListen = NotListen::Syntax("syntax error in LISTEN or UNLISTEN");
    let is_start = |b: u8| b.is_ascii_alphabetic() || b == b'_' || b >= 0x80;
    let is_part = |b: u8| is_start(b) || b.is_ascii_digit() || b == b'$';
    match sql.get(at) {
        Some(b'"') => {
            let mut name = Vec::new();
            let mut i = at + 1;
            loop {
                match sql.get(i..) {
                    Some([b'"', b'"', ..]) => {
                        name.push(b'"');
                        i += 2;
                    }
                    Some([b'"', ..]) => break,
                    Some([b, ..]) => {
                        name.push(*b);
                        i += 1;
                    }
                    _ => return Err(NotListen::Syntax("unterminated quoted identifier")),
                }
            }
            if name.is_empty() {
                return Err(NotListen::Syntax("zero-length delimited identifier"));
            }
            Ok((truncated(name)?, i + 1))
        }
        Some(&b) if is_start(b) => {
            let mut end = at;
            while end < sql.len() && is_part(sql[end]) {
                end += 1;
            }
            // `U&"..."` (Unicode escapes) is not read here: Postgres reports
            // the error it would report for anything else unexpected.
            if sql.get(end) == Some(&b'&') || sql.get(end) == Some(&b'\'') {
                return Err(SYNTAX);
            }
            // Postgres folds ASCII letters only in UTF-8 (`downcase_identifier`).
            Ok((truncated(sql[at..end].to_ascii_lowercase())?, end))
        }
        _ => Err(SYNTAX),
    }
}

/// `name` cut to Postgres's identifier length on a character boundary
/// (`truncate_identifier`).
fn truncated(name: Vec<u8>) -> Result<String, NotListen> {
    let mut name = String::from_utf8(name)
        .map_err(|_| NotListen::Syntax("invalid byte sequence for encoding \"UTF8\""))?;
    if name.len() > MAX_IDENTIFIER {
        let mut end = MAX_IDENTIFIER;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listens_after_the_first_statement() {
        for (sql, expected) in [
            ("SELECT 1; LISTEN jobs", true),
            ("select 1;unlisten *", false),
            (
                "SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL",
                false,
            ),
            ("SELECT 1; /* c */ listen x", true),
            ("LISTEN jobs", false),
            ("SELECT 'a; listen x'", false),
            ("SELECT 1; SELECT 'listen'", false),
            ("SELECT listen FROM t; SELECT 2", false),
            (
                "SELECT abalance FROM pgbench_accounts WHERE aid = 1;",
                false,
            ),
            ("SELECT \"a;b\"; LISTEN x", true),
            ("SELECT 'it''s; x'; LISTEN x", true),
            ("SELECT 'a; LISTEN x", false),
            ("SELECT \"a\"\"; listen x\"", false),
        ] {
            assert_eq!(listens_after_first(sql.as_bytes()), expected, "{sql}");
        }
    }

    fn check(sql: &str, expected: Result<&[Order], NotListen>) {
        assert_eq!(
            parse(sql.as_bytes()),
            expected.map(<[Order]>::to_vec),
            "{sql}"
        );
    }

    fn listen(name: &str) -> Order {
        Order::Listen(name.to_owned())
    }

    fn unlisten(name: &str) -> Order {
        Order::Unlisten(name.to_owned())
    }

    #[test]
    fn statements() {
        check("LISTEN jobs", Ok(&[listen("jobs")]));
        check("listen Jobs;", Ok(&[listen("jobs")]));
        check("  /* c */ LISTEN -- x\n jobs ;; ", Ok(&[listen("jobs")]));
        check("LISTEN \"Jobs\"", Ok(&[listen("Jobs")]));
        check("LISTEN \"a\"\"b c\"", Ok(&[listen("a\"b c")]));
        check("LISTEN job_$1", Ok(&[listen("job_$1")]));
        check("LISTEN Café", Ok(&[listen("café")]));
        check("UNLISTEN jobs", Ok(&[unlisten("jobs")]));
        check("UNLISTEN *", Ok(&[Order::UnlistenAll]));
        check("unlisten*", Ok(&[Order::UnlistenAll]));
        check(
            "LISTEN a; UNLISTEN b; UNLISTEN *",
            Ok(&[listen("a"), unlisten("b"), Order::UnlistenAll]),
        );
    }

    #[test]
    fn long_names_are_cut_as_postgres_cuts_them() {
        let long = "x".repeat(70);
        check(&format!("LISTEN {long}"), Ok(&[listen(&long[..63])]));
        let wide = "é".repeat(40);
        let cut: String = "é".repeat(31);
        check(&format!("LISTEN \"{wide}\""), Ok(&[listen(&cut)]));
    }

    #[test]
    fn other_statements_and_errors() {
        check("", Err(NotListen::Mixed));
        check(" ; ", Err(NotListen::Mixed));
        check("LISTEN a; SELECT 1", Err(NotListen::Mixed));
        check("NOTIFY a", Err(NotListen::Mixed));
        check("LISTENING a", Err(NotListen::Mixed));
        let syntax = NotListen::Syntax("syntax error in LISTEN or UNLISTEN");
        check("LISTEN", Err(syntax.clone()));
        check("LISTEN *", Err(syntax.clone()));
        check("LISTEN a b", Err(syntax.clone()));
        check("LISTEN 'a'", Err(syntax.clone()));
        check("LISTEN 1a", Err(syntax.clone()));
        check("LISTEN U&\"a\"", Err(syntax));
        check(
            "LISTEN \"\"",
            Err(NotListen::Syntax("zero-length delimited identifier")),
        );
        check(
            "LISTEN \"a",
            Err(NotListen::Syntax("unterminated quoted identifier")),
        );
    }

    #[test]
    fn first_word() {
        assert!(starts_listen(b" listen x"));
        assert!(starts_listen(b"/* */UNLISTEN *"));
        assert!(!starts_listen(b"LISTENX y"));
        assert!(!starts_listen(b"LISTEN_x y"));
        assert!(!starts_listen(b"NOTIFY x"));
    }

    #[test]
    fn quoting() {
        assert_eq!(quoted("jobs"), "\"jobs\"");
        assert_eq!(quoted("a\"b"), "\"a\"\"b\"");
    }
}
