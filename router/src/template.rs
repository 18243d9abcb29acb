//! Statement text to cache key, without parsing: edge comments come off (and
//! the PgDog overrides they carry are read), literals become placeholders.
//!
//! Two texts that differ only in the values of their number and string
//! literals get the same [`Template::key`], so the AST cache parses
//! `SELECT * FROM t WHERE id = 1` once and serves `... id = 2` from the same
//! entry, with the new values read by the lexer (`template/lexer.rs`, over
//! the byte classes and scanners of `template/bytes.rs`).
//!
//! # Why our own lexer
//! libpg_query's scanner (`parser_ffi::scan`) knows the grammar exactly, but
//! it is a foreign call that allocates a token array (and a protobuf message)
//! per statement. This lexer runs on every simple-protocol query, cache hits
//! included, so it is one pass over the bytes that allocates nothing but the
//! key and the literal list. It only needs to find literals, parameters and
//! comments, and where it is unsure (unterminated quotes, `1abc`, a string
//! that may continue on the next line...) it gives up ([`template`] returns
//! `None`) and the cache keys the statement by its exact text.
//!
//! It follows Postgres 18's `scan.l` with `standard_conforming_strings` on
//! (the default, and what libpg_query assumes): in `'...'` a backslash is an
//! ordinary character. A session that turns it off is not supported.

use std::borrow::Cow;

use crate::route::Overrides;

mod bytes;
mod lexer;
mod rematch;

pub(crate) use bytes::is_space;
use bytes::{block_comment_end, line_comment_end, skip_space};
use lexer::Lexer;
pub use rematch::{rematch, rematch_each};

/// What replaces a number literal in a template key: a NUL byte, then `#`.
///
/// Statement text cannot contain NUL (the protocol's strings are
/// NUL-terminated and the parser refuses it; the cache rejects such text
/// before keying it), so a key with a placeholder equals no statement as
/// written, keys by exact text never collide with template keys, and the
/// byte after each NUL always says what kind of literal stood there.
/// Numbers and strings get different placeholders because the grammar does
/// not treat them alike everywhere (`-7` is a negative constant, `-'7'` an
/// expression), so `x = 1` and `x = '1'` must not share an entry.
pub const NUMBER_PLACEHOLDER: &str = "\0#";
/// What replaces a standard string literal: a NUL byte, then `'`.
pub const STRING_PLACEHOLDER: &str = "\0'";

/// A statement's cache key and the literals it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template<'a> {
    /// The text with every [`Literal`] replaced by [`NUMBER_PLACEHOLDER`] or
    /// [`STRING_PLACEHOLDER`]; borrowed (the text itself) when there is no
    /// literal.
    pub key: Cow<'a, str>,
    /// The literals, in order of position.
    pub literals: Vec<Literal>,
    /// The highest `$n` the text uses (0 if none), saturating.
    pub max_param: u32,
}

/// One literal of the text: `start..end` are byte offsets into it (the quotes
/// included for strings), as the parser's `A_Const.location` counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Literal {
    pub start: usize,
    pub end: usize,
    pub kind: LiteralKind,
}

/// What a [`Literal`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiteralKind {
    /// A decimal number as written: `42`, `007`, `1.5`, `.5`, `1e-3`. Numbers
    /// with a base prefix (`0x1F`) or underscores (`1_000`) are not literals:
    /// they stay in the key as written (their value is not their text).
    Number,
    /// A standard string `'...'`; `escaped` when it contains `''`.
    String { escaped: bool },
}

impl Literal {
    /// The literal's value in `text` (the text it was found in): a number's
    /// text, a string's content with `''` read as `'`.
    pub fn value<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let written = text.get(self.start..self.end).unwrap_or_default();
        match self.kind {
            LiteralKind::Number => Cow::Borrowed(written),
            LiteralKind::String { escaped } => {
                let inner = written
                    .get(1..written.len().saturating_sub(1))
                    .unwrap_or_default();
                if escaped {
                    Cow::Owned(inner.replace("''", "'"))
                } else {
                    Cow::Borrowed(inner)
                }
            }
        }
    }
}

/// Split `sql` into its core (leading and trailing whitespace and comments
/// removed; comments in the middle and a final `;` stay) and the overrides
/// those edge comments carry: `pgdog_shard: N` and `pgdog_sharding_key: v`
/// (`v` bare, or quoted with `'` or `"`). When a setting appears twice, the
/// first comment wins. If the text cannot be lexed, trailing comments stay
/// in the core (and their overrides are not read).
pub fn split_edge_comments(sql: &str) -> (&str, Overrides) {
    let b = sql.as_bytes();
    let mut overrides = Overrides::default();
    let mut start = 0;
    loop {
        start = skip_space(b, start);
        let end = match (b.get(start), b.get(start + 1)) {
            (Some(b'-'), Some(b'-')) => line_comment_end(b, start),
            (Some(b'/'), Some(b'*')) => match block_comment_end(b, start) {
                Some(end) => end,
                None => break,
            },
            _ => break,
        };
        read_overrides(sql.get(start..end).unwrap_or_default(), &mut overrides);
        start = end;
    }
    let mut end = b.len();
    while end > start && b.get(end - 1).is_some_and(|&c| is_space(c)) {
        end -= 1;
    }
    let body = sql.get(start..end).unwrap_or_default();
    let core = if may_end_in_comment(body) {
        trailing_comments(body, &mut overrides)
            .and_then(|significant| body.get(..significant))
            .unwrap_or(body)
    } else {
        body
    };
    (core, overrides)
}

/// The overrides named in any comment of `core` (for comments in the middle
/// of a statement, which are part of its key). Comments after a point where
/// the lexer gives up are not read.
pub fn inner_overrides(core: &str) -> Overrides {
    let mut overrides = Overrides::default();
    // Unsure text: keep what was read before the lexer gave up.
    let _ = Lexer::new(core).run(&mut |_| {}, &mut |start, end| {
        read_overrides(core.get(start..end).unwrap_or_default(), &mut overrides);
    });
    overrides
}

/// A template key as people read it: each literal's placeholder shown as
/// `?` (as PgDog and pg_stat_statements-like tools show them).
pub fn display(key: &str) -> String {
    key.replace(NUMBER_PLACEHOLDER, "?")
        .replace(STRING_PLACEHOLDER, "?")
}

/// The cache key of `core` (the text after [`split_edge_comments`]) and its
/// literals; `None` when the lexer is unsure of the text (the caller then
/// keys it by its exact text).
pub fn template(core: &str) -> Option<Template<'_>> {
    let mut lexer = Lexer::new(core);
    let mut key = String::new();
    let mut copied = 0;
    let mut literals = Vec::new();
    lexer
        .run(
            &mut |literal| {
                if literals.is_empty() {
                    key.reserve(core.len() + 8);
                }
                // Literal offsets sit on ASCII bytes: always char boundaries.
                key.push_str(core.get(copied..literal.start).unwrap_or_default());
                key.push_str(match literal.kind {
                    LiteralKind::Number => NUMBER_PLACEHOLDER,
                    LiteralKind::String { .. } => STRING_PLACEHOLDER,
                });
                copied = literal.end;
                literals.push(literal);
            },
            &mut |_, _| {},
        )
        .ok()?;
    let key = if literals.is_empty() {
        Cow::Borrowed(core)
    } else {
        key.push_str(core.get(copied..)?);
        Cow::Owned(key)
    };
    Some(Template {
        key,
        literals,
        max_param: lexer.max_param,
    })
}

fn may_end_in_comment(body: &str) -> bool {
    let b = body.as_bytes();
    if b.ends_with(b"*/") {
        return true;
    }
    // A `--` on the last line. Most texts hold no `-` at all; memchr's SIMD
    // search settles that in a few nanoseconds, where a byte loop (or std's
    // `rfind`) costs more than the rest of a cache hit.
    if memchr::memchr(b'-', b).is_none() {
        return false;
    }
    let line = memchr::memrchr2(b'\n', b'\r', b).map_or(b, |p| b.get(p + 1..).unwrap_or_default());
    memchr::memchr_iter(b'-', line).any(|p| line.get(p + 1) == Some(&b'-'))
}

/// Where the significant part of `body` ends, reading the overrides of the
/// comments after it; `None` if the lexer gives up.
fn trailing_comments(body: &str, overrides: &mut Overrides) -> Option<usize> {
    let mut lexer = Lexer::new(body);
    let mut comments = Vec::new();
    lexer
        .run(&mut |_| {}, &mut |start, end| comments.push((start, end)))
        .ok()?;
    let significant = lexer.significant_end;
    for &(start, end) in comments.iter().filter(|(start, _)| *start >= significant) {
        read_overrides(body.get(start..end).unwrap_or_default(), overrides);
    }
    Some(significant)
}

fn read_overrides(comment: &str, out: &mut Overrides) {
    if !comment.contains("pgdog_") {
        return;
    }
    if out.shard.is_none() {
        if let Some(rest) = value_after(comment, "pgdog_shard:") {
            let len = rest.bytes().take_while(u8::is_ascii_digit).count();
            out.shard = rest.get(..len).and_then(|n| n.parse().ok());
        }
    }
    if out.sharding_key.is_none() {
        if let Some(rest) = value_after(comment, "pgdog_sharding_key:") {
            out.sharding_key = key_value(rest);
        }
    }
}

fn value_after<'a>(comment: &'a str, name: &str) -> Option<&'a str> {
    let at = comment.find(name)? + name.len();
    Some(comment.get(at..)?.trim_start_matches([' ', '\t']))
}

fn key_value(rest: &str) -> Option<String> {
    match rest.as_bytes().first()? {
        &quote @ (b'\'' | b'"') => {
            let inner = rest.get(1..)?;
            let end = inner.find(char::from(quote))?;
            Some(inner.get(..end)?.to_owned())
        }
        _ => {
            let len = rest
                .bytes()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
                .count();
            if len == 0 {
                return None;
            }
            Some(rest.get(..len)?.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key (placeholders shown as `?`) and the literal values, or `None`.
    fn lex(core: &str) -> Option<(String, Vec<String>)> {
        let template = template(core)?;
        let key = display(&template.key);
        let values = template
            .literals
            .iter()
            .map(|l| l.value(core).into_owned())
            .collect();
        Some((key, values))
    }

    fn check(core: &str, key: &str, values: &[&str]) {
        let (got_key, got_values) = lex(core).unwrap_or_else(|| panic!("unsure of {core:?}"));
        assert_eq!(got_key, key, "key of {core:?}");
        assert_eq!(got_values, values, "literals of {core:?}");
    }

    fn unsure(core: &str) {
        assert_eq!(lex(core), None, "{core:?} should be unsure");
    }

    #[test]
    fn numbers_and_strings() {
        check(
            "SELECT * FROM t WHERE id = 1",
            "SELECT * FROM t WHERE id = ?",
            &["1"],
        );
        check(
            "SELECT 1.5, .5, 1e3, 1.e-3, 2E+10, 007",
            "SELECT ?, ?, ?, ?, ?, ?",
            &["1.5", ".5", "1e3", "1.e-3", "2E+10", "007"],
        );
        check("x='a'", "x=?", &["a"]);
        check("x = 'it''s' || ''", "x = ? || ?", &["it's", ""]);
        check("x = 'back\\slash'", "x = ?", &["back\\slash"]);
        check("x = 'é'", "x = ?", &["é"]);
        check("x IN (1, 2, 3)", "x IN (?, ?, ?)", &["1", "2", "3"]);
        check("x IN (1, 2)", "x IN (?, ?)", &["1", "2"]);
        check("x=-7", "x=-?", &["7"]);
        check("a[1:2]", "a[?:?]", &["1", "2"]);
        check("x::varchar(10)", "x::varchar(?)", &["10"]);
        check("'a'::text", "?::text", &["a"]);
        check("date '2024-01-01'", "date ?", &["2024-01-01"]);
        check("N'abc'", "N?", &["abc"]);
    }

    #[test]
    fn kept_as_written() {
        check(
            "SELECT t1.x_2, a$1, café9 FROM t1",
            "SELECT t1.x_2, a$1, café9 FROM t1",
            &[],
        );
        check(
            "SELECT $1, $12 WHERE x = 3",
            "SELECT $1, $12 WHERE x = ?",
            &["3"],
        );
        check(
            r#"SELECT "col 1", "a""b" FROM "T2""#,
            r#"SELECT "col 1", "a""b" FROM "T2""#,
            &[],
        );
        check(
            "SELECT E'a\\'b', e'\\\\', 1",
            "SELECT E'a\\'b', e'\\\\', ?",
            &["1"],
        );
        check(
            "SELECT B'1010', x'1F', X'', 2",
            "SELECT B'1010', x'1F', X'', ?",
            &["2"],
        );
        check(
            r#"SELECT U&'d\0061t', U&"d!0061t" UESCAPE '!'"#,
            r#"SELECT U&'d\0061t', U&"d!0061t" UESCAPE ?"#,
            &["!"],
        );
        check(
            "SELECT $$it's 1$$, $f$ $$ 2 $f$, 3",
            "SELECT $$it's 1$$, $f$ $$ 2 $f$, ?",
            &["3"],
        );
        check(
            "SELECT 0x1F, 0o17, 0b101, 1_000, 1_000.5",
            "SELECT 0x1F, 0o17, 0b101, 1_000, 1_000.5",
            &[],
        );
        check(
            "SELECT 1 -- one 2\n, 2",
            "SELECT ? -- one 2\n, ?",
            &["1", "2"],
        );
        check(
            "SELECT /* a /* b 1 */ 'c' */ 2",
            "SELECT /* a /* b 1 */ 'c' */ ?",
            &["2"],
        );
        check("SELECT 2*/**/3", "SELECT ?*/**/?", &["2", "3"]);
        check("SELECT '--', '/*'", "SELECT ?, ?", &["--", "/*"]);
        check("SELECT x FROM t", "SELECT x FROM t", &[]);
    }

    #[test]
    fn numbers_and_strings_have_different_placeholders() {
        let number = template("x = -1").unwrap();
        let string = template("x = -'1'").unwrap();
        assert_eq!(number.key, "x = -\0#");
        assert_eq!(string.key, "x = -\0'");
        assert_eq!(template("x = -22").unwrap().key, number.key);
        assert_eq!(template("x = 'it''s'").unwrap().key, "x = \0'");
    }

    #[test]
    fn borrowed_key_without_literals() {
        let core = "SELECT x FROM t WHERE id = $1";
        let template = template(core).unwrap();
        assert!(matches!(template.key, Cow::Borrowed(_)));
        assert_eq!(template.max_param, 1);
    }

    #[test]
    fn max_param() {
        assert_eq!(template("SELECT $3, $10, $2").unwrap().max_param, 10);
        assert_eq!(
            template("SELECT '$5', \"$6\", $$ $7 $$ -- $8")
                .unwrap()
                .max_param,
            0
        );
        assert_eq!(template("SELECT $99999999999").unwrap().max_param, u32::MAX);
    }

    #[test]
    fn gives_up() {
        unsure("SELECT 'abc");
        unsure("SELECT \"abc");
        unsure("SELECT E'abc\\'");
        unsure("SELECT /* abc");
        unsure("SELECT $$abc");
        unsure("SELECT $a$ abc $b$");
        unsure("SELECT $");
        unsure("SELECT 1abc");
        unsure("SELECT 1.5.3");
        unsure("SELECT 1..2");
        unsure("SELECT 1e");
        unsure("SELECT 1e+x");
        unsure("SELECT 0x");
        unsure("SELECT 0xZ");
        unsure("SELECT 1_");
        unsure("SELECT $1abc");
        unsure("SELECT 'a'\n'b'");
        unsure("SELECT 'a'  --c\n  'b'");
        unsure("SELECT E'a'\n'b'");
        unsure("SELECT 'a' 'b'");
        unsure("SELECT B'10''01'");
        unsure("SELECT 1\0");
    }

    #[test]
    fn edge_comments() {
        let (core, overrides) = split_edge_comments("  SELECT 1;  ");
        assert_eq!(core, "SELECT 1;");
        assert_eq!(overrides, Overrides::default());

        let (core, overrides) = split_edge_comments(
            "/* pgdog_shard: 3 */ -- hello\n /* outer /* nested */ */\tSELECT /* kept */ 1 -- bye\n",
        );
        assert_eq!(core, "SELECT /* kept */ 1");
        assert_eq!(overrides.shard, Some(3));
        assert_eq!(overrides.sharding_key, None);

        let (core, overrides) =
            split_edge_comments("SELECT '--', '*/' /* pgdog_sharding_key: 'a b' */");
        assert_eq!(core, "SELECT '--', '*/'");
        assert_eq!(overrides.sharding_key.as_deref(), Some("a b"));

        let (core, overrides) = split_edge_comments(
            "SELECT 1 /*pgdog_sharding_key:abc-9_x*/ /* pgdog_sharding_key: other */",
        );
        assert_eq!(core, "SELECT 1");
        assert_eq!(overrides.sharding_key.as_deref(), Some("abc-9_x"));

        let (core, overrides) = split_edge_comments(
            "/* pgdog_shard: 1, pgdog_sharding_key: \"q\" */ SELECT 1 -- pgdog_shard: 2",
        );
        assert_eq!(core, "SELECT 1");
        assert_eq!(overrides.shard, Some(1));
        assert_eq!(overrides.sharding_key.as_deref(), Some("q"));

        // Strings that look like comments are not comments.
        let (core, _) = split_edge_comments("SELECT '-- x'");
        assert_eq!(core, "SELECT '-- x'");
        let (core, _) = split_edge_comments("SELECT 1 - -1 -- x\r\n");
        assert_eq!(core, "SELECT 1 - -1");
        // Unsure text keeps its trailing comment.
        let (core, overrides) = split_edge_comments("SELECT 'a /* pgdog_shard: 1 */");
        assert_eq!(core, "SELECT 'a /* pgdog_shard: 1 */");
        assert_eq!(overrides.shard, None);
        // Only comments: nothing left.
        assert_eq!(split_edge_comments(" -- x\n/* y */ ").0, "");
        assert_eq!(split_edge_comments("/* unterminated").0, "/* unterminated");
    }

    /// Compare with libpg_query's scanner: every literal we find is one of its
    /// constants at the same offsets, every plain constant it finds is one
    /// of ours, and the highest `$n` agrees.
    fn agrees_with_scanner(text: &str) -> bool {
        use parser_ffi::protobuf::Token as T;
        let Some(ours) = template(text) else {
            return false;
        };
        let Ok(tokens) = parser_ffi::scan(text) else {
            return false;
        };
        let constant = |t: &parser_ffi::Token| {
            [T::Iconst as i32, T::Fconst as i32, T::Sconst as i32].contains(&t.token)
        };
        for literal in &ours.literals {
            let found = tokens
                .iter()
                .find(|t| t.start == literal.start && t.end == literal.end);
            let expected = match literal.kind {
                LiteralKind::Number => [T::Iconst as i32, T::Fconst as i32],
                LiteralKind::String { .. } => [T::Sconst as i32, T::Sconst as i32],
            };
            assert!(
                found.is_some_and(|t| expected.contains(&t.token)),
                "{text:?}: {literal:?} is not a scanner constant: {tokens:?}"
            );
        }
        for token in tokens.iter().filter(|t| constant(t)) {
            if ours.literals.iter().any(|l| l.start == token.start) {
                continue;
            }
            let written = &text[token.start..token.end];
            let special = written.starts_with(['e', 'E', '$'])
                || written.contains('_')
                || (written.len() > 1 && written[1..].starts_with(['x', 'X', 'o', 'O', 'b', 'B']));
            assert!(special, "{text:?}: scanner constant {written:?} missed");
        }
        let max_param = tokens
            .iter()
            .filter(|t| t.token == T::Param as i32)
            .map(|t| text[t.start + 1..t.end].parse::<u32>().unwrap())
            .max()
            .unwrap_or(0);
        assert_eq!(ours.max_param, max_param, "{text:?}");
        true
    }

    #[test]
    fn scanner_agrees_on_examples() {
        for text in [
            "SELECT * FROM t WHERE id = 1 AND name = 'a''b' AND x = -1.5e-3",
            "SELECT E'\\'', $$a'b$$, $q$ 1 $q$, \"x\"\"1\", t1.c2, .5, 1., 2.e3 FROM t",
            "SELECT B'01', X'AF', U&'d', N'n', 0x1F, 0o7, 0b1, 1_000, 1_0.5_1",
            "SELECT $1, $2::int, $10 -- $11\n /* $12 /* '*/ 'x' */ FROM t",
            "INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y') RETURNING *",
            "SELECT a[1:2], x::varchar(10), date '2024-01-01', 'é' || 'ü'",
        ] {
            assert!(agrees_with_scanner(text), "{text:?} was not compared");
        }
    }

    /// Random texts from fragments: wherever both we and the scanner read a
    /// text, we agree.
    #[test]
    fn scanner_agrees_on_random_texts() {
        const FRAGMENTS: &[&str] = &[
            "SELECT",
            " ",
            "\n",
            "\t",
            "1",
            "42",
            "1.5",
            ".5",
            "1.",
            "1e3",
            "2E-1",
            "'a'",
            "'it''s'",
            "''",
            "E'x\\'y'",
            "e'\\\\'",
            "$$d$$",
            "$t$ q' $t$",
            "\"id\"",
            "\"a\"\"b\"",
            "t1",
            "x_2",
            "$1",
            "$7",
            "-- c\n",
            "/* c */",
            "/* a /* b */ */",
            "0x1F",
            "0b101",
            "1_000",
            "(",
            ")",
            ",",
            "=",
            "-",
            "+",
            "*",
            "/",
            "::",
            "int",
            "B'01'",
            "X'1F'",
            "U&'a'",
            "N'n'",
            ";",
            "a$b",
            "é",
            ".",
            "[",
            "]",
            "'",
            "\"",
            "$",
            "e",
            "u&",
            "--",
            "/*",
            "*/",
            "0",
            "_",
            "..",
            "1..2",
            "\r",
            "\u{b}",
            "\u{c}",
            "U&\"x\"",
            "'a'\n'b'",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut compared = 0;
        for _ in 0..50_000 {
            let len = 1 + next(16);
            let text: String = (0..len).map(|_| FRAGMENTS[next(FRAGMENTS.len())]).collect();
            if agrees_with_scanner(&text) {
                compared += 1;
            }
        }
        assert!(compared > 2_000, "only {compared} texts compared");
    }

    #[test]
    fn overrides_in_the_middle() {
        let overrides =
            inner_overrides("SELECT /* pgdog_shard: 4 */ '/* pgdog_shard: 5 */' FROM t");
        assert_eq!(overrides.shard, Some(4));
        assert_eq!(
            inner_overrides("SELECT 'pgdog_shard: 5'"),
            Overrides::default()
        );
    }
}
