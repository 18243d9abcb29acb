//! A text matched against a template key seen before: the bytes between
//! the placeholders are compared, and only the literals are lexed. What
//! [`rematch`] returns is what [`template`](super::template) would, for a
//! text whose template is that key, at a fraction of the cost (no hashing,
//! no key to build, a comparison instead of lexing the rest): a session
//! that repeats a statement with new values (most ORM and pgbench traffic)
//! finds it without the shared map (`cache.rs`, `AstCache::lookup_like`).
//!
//! Why a match is exact: the bytes before a literal are the key's, so the
//! lexer reaches the literal's start in the state it reached in the text
//! the key came from; its tokens end where they ended there (the lexer
//! looks at most one byte ahead, and that byte starts a literal of the same
//! kind in both texts), except an identifier, which would swallow a digit:
//! a number right after an identifier character is refused. Each literal is
//! lexed by the lexer's own rules, and the rest of the text is the key's
//! byte for byte, so its tokens are the key's too.

use super::bytes::{is_ident_cont, quoted_end};
use super::lexer::Lexer;
use super::{Literal, LiteralKind};

/// The literals of `core` if its template key is `key` (a key made by
/// [`template`](super::template)); `None` if it is not, or if that cannot
/// be told this way (then [`template`](super::template) decides).
pub fn rematch(key: &str, core: &str) -> Option<Vec<Literal>> {
    let mut literals = Vec::new();
    rematch_each(key, core, |literal| literals.push(literal)).then_some(literals)
}

/// [`rematch`], each literal handed to `on_literal` in order as it is
/// found (also before a mismatch further on): `true` if `core` matched.
pub fn rematch_each(key: &str, core: &str, mut on_literal: impl FnMut(Literal)) -> bool {
    matches(key.as_bytes(), core.as_bytes(), &mut on_literal).is_some()
}

fn matches(key: &[u8], text: &[u8], on_literal: &mut impl FnMut(Literal)) -> Option<()> {
    let (mut k, mut t) = (0, 0);
    loop {
        let rest = key.get(k..)?;
        let Some(gap) = memchr::memchr(0, rest) else {
            return (text.get(t..)? == rest).then_some(());
        };
        if text.get(t..t + gap)? != rest.get(..gap)? {
            return None;
        }
        t += gap;
        let literal = literal_at(text, t, *rest.get(gap + 1)?)?;
        k += gap + 2;
        t = literal.end;
        on_literal(literal);
    }
}

/// The literal of the kind `placeholder` names (`#` number, `'` string)
/// that starts at `at`.
fn literal_at(text: &[u8], at: usize, placeholder: u8) -> Option<Literal> {
    let mut lexer = Lexer::new_at(text, at);
    let first = *text.get(at)?;
    match placeholder {
        b'#' => {
            let starts_number = first.is_ascii_digit()
                || (first == b'.' && text.get(at + 1).is_some_and(u8::is_ascii_digit));
            let glued = at > 0 && text.get(at - 1).is_some_and(|&c| is_ident_cont(c));
            if !starts_number || glued {
                return None;
            }
            let mut found = None;
            lexer.number(&mut |literal| found = Some(literal)).ok()?;
            found
        }
        b'\'' if first == b'\'' => {
            let (end, escaped) = quoted_end(text, at, b'\'')?;
            lexer.string_ends(end).ok()?;
            Some(Literal {
                start: at,
                end,
                kind: LiteralKind::String { escaped },
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::template;
    use super::*;

    /// `rematch` against the key of `first` agrees with `template` on
    /// `second`: the same literals when the keys are equal, `None` (or the
    /// same) otherwise.
    fn agrees(first: &str, second: &str) -> bool {
        let Some(first) = template(first) else {
            return false;
        };
        let matched = rematch(&first.key, second);
        let lexed = template(second).filter(|t| t.key == first.key);
        let consistent = match (&matched, &lexed) {
            (Some(m), Some(l)) => *m == l.literals,
            (None, _) => true,
            (Some(_), None) => false,
        };
        assert!(consistent, "{second:?} against {:?}", first.key);
        matched.is_some()
    }

    #[test]
    fn new_values_match_the_key_they_share() {
        let first = "SELECT abalance FROM pgbench_accounts WHERE aid = 12345;";
        assert!(agrees(
            first,
            "SELECT abalance FROM pgbench_accounts WHERE aid = 7;"
        ));
        assert!(agrees(
            first,
            "SELECT abalance FROM pgbench_accounts WHERE aid = 1.5e3;"
        ));
        assert!(agrees(
            first,
            "SELECT abalance FROM pgbench_accounts WHERE aid = .5;"
        ));
        assert!(agrees("x = 'a' AND y = 1", "x = 'it''s' AND y = 22"));
        assert!(agrees("x = 'a' AND y = 1", "x = '' AND y = 0"));
        assert!(agrees("SELECT 1", "SELECT 99"));
    }

    #[test]
    fn other_texts_do_not_match() {
        let first = "SELECT abalance FROM pgbench_accounts WHERE aid = 12345;";
        for second in [
            "SELECT abalance FROM pgbench_accounts WHERE aid = 'x';",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 1 ;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 0x1F;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 1_000;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 1abc;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 1..;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 1e;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = \0;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = ",
            "SELECT abalance FROM pgbench_accounts WHERE aid = 5; SELECT 1",
            "",
        ] {
            assert!(!agrees(first, second), "{second}");
        }
        // An identifier would swallow the digit: `abc5` is one token.
        assert!(!agrees("SELECT abc.5", "SELECT abc5"));
        // Strings: an unterminated one, one continued on the next line.
        assert!(!agrees("x = 'a' AND y", "x = 'a AND y"));
        assert!(!agrees("x = 'a'\n", "x = 'a'\n'b'\n"));
        assert!(!agrees("x = 'a'", "x = E'a'"));
    }

    #[test]
    fn tricky_values_agree_with_the_lexer() {
        let values = [
            "1", "1.", ".5", "1e5", "1E+5", "1e-5", "00", "1.5.", "1..2", "1a", "1_0", "0x", "0b1",
            "-1", "1--c\n", "1/*c*/", "1.e3", "'a'", "'a''b'", "'a'\n'b'", "'a' 'b'", "'", "''''",
            "E'x'", "$1", "$$a$$", "a", "1.5e", "\u{e9}", "'\u{e9}'",
        ];
        let shapes = [
            "SELECT {} FROM t",
            "x={}",
            "x = {}",
            "f({},{})",
            "a.b{}",
            "{}",
        ];
        for shape in shapes {
            for first in ["7", "'s'"] {
                for value in values {
                    let first = shape.replace("{}", first);
                    // Panics if they disagree.
                    agrees(&first, &shape.replace("{}", value));
                }
            }
        }
    }
}
