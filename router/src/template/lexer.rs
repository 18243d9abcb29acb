//! The literal lexer: one pass over a statement's bytes that reports its
//! number and string literals and its comments, counts its `$n`
//! parameters, and gives up ([`Unsure`]) where `scan.l` would need more
//! than it knows (see the module docs of [`crate::template`]).

use super::bytes::{
    block_comment_end, class, digits, escape_string_end, is_ident_cont, line_comment_end,
    quote_follows, quoted_end, run_end, skip_space, IDENT_CONT, IDENT_START, SPACE, SPECIAL,
};
use super::{Literal, LiteralKind};
/// The lexer gave up: the text is not what it expects.
pub(super) struct Unsure;

pub(super) struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    /// Highest `$n` seen.
    pub(super) max_param: u32,
    /// End of the last token that is not whitespace or a comment.
    pub(super) significant_end: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Lexer::new_at(text.as_bytes(), 0)
    }

    /// A lexer at byte `i` of `b` (a token's start).
    pub(super) fn new_at(b: &'a [u8], i: usize) -> Self {
        Lexer {
            b,
            i,
            max_param: 0,
            significant_end: 0,
        }
    }

    /// Lex the whole text, reporting literals and comments (by offsets);
    /// everything else is stepped over.
    pub(super) fn run(
        &mut self,
        on_literal: &mut impl FnMut(Literal),
        on_comment: &mut impl FnMut(usize, usize),
    ) -> Result<(), Unsure> {
        let b = self.b;
        while let Some(&c) = b.get(self.i) {
            let class = class(c);
            if class & SPACE != 0 {
                self.i = skip_space(b, self.i + 1);
                continue;
            }
            let start = self.i;
            if class & IDENT_START != 0 {
                self.word()?;
            } else if class & SPECIAL == 0 {
                // Operators and punctuation.
                self.i += 1;
            } else {
                let next = b.get(start + 1).copied();
                match c {
                    b'-' if next == Some(b'-') => {
                        self.i = line_comment_end(b, start);
                        on_comment(start, self.i);
                        continue;
                    }
                    b'/' if next == Some(b'*') => {
                        self.i = block_comment_end(b, start).ok_or(Unsure)?;
                        on_comment(start, self.i);
                        continue;
                    }
                    b'\'' => {
                        let (end, escaped) = quoted_end(b, start, b'\'').ok_or(Unsure)?;
                        self.string_ends(end)?;
                        let kind = LiteralKind::String { escaped };
                        on_literal(Literal { start, end, kind });
                    }
                    b'"' => self.i = quoted_end(b, start, b'"').ok_or(Unsure)?.0,
                    b'$' => self.dollar()?,
                    b'0'..=b'9' => self.number(on_literal)?,
                    b'.' if next.is_some_and(|c| c.is_ascii_digit()) => self.number(on_literal)?,
                    // `..` is a token of its own: `..5` is not `.` and `.5`.
                    b'.' if next == Some(b'.') => self.i += 2,
                    0 => return Err(Unsure),
                    _ => self.i += 1,
                }
            }
            self.significant_end = self.i;
        }
        Ok(())
    }

    /// A quoted constant ends at `end`; give up if a quote follows.
    pub(super) fn string_ends(&mut self, end: usize) -> Result<(), Unsure> {
        if quote_follows(self.b, end) {
            return Err(Unsure);
        }
        self.i = end;
        self.significant_end = end;
        Ok(())
    }

    /// `$n`, or a dollar-quoted string `$tag$...$tag$` (kept as written).
    fn dollar(&mut self) -> Result<(), Unsure> {
        let b = self.b;
        let start = self.i;
        if b.get(start + 1).is_some_and(u8::is_ascii_digit) {
            // Parameters take no underscores; `$1_000` is trailing junk.
            let mut end = start + 1;
            while b.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            if b.get(end).is_some_and(|&c| is_ident_cont(c)) {
                return Err(Unsure);
            }
            let n = b.get(start + 1..end).unwrap_or_default();
            let value = n.iter().fold(0u32, |acc, &d| {
                acc.saturating_mul(10).saturating_add(u32::from(d - b'0'))
            });
            self.max_param = self.max_param.max(value);
            self.i = end;
            return Ok(());
        }
        let mut tag_end = start + 1;
        while b
            .get(tag_end)
            .is_some_and(|&c| is_ident_cont(c) && c != b'$')
        {
            tag_end += 1;
        }
        if b.get(tag_end) != Some(&b'$') {
            return Err(Unsure);
        }
        let delimiter = b.get(start..=tag_end).ok_or(Unsure)?;
        let body = tag_end + 1;
        let close = b
            .get(body..)
            .and_then(|rest| rest.windows(delimiter.len()).position(|w| w == delimiter))
            .ok_or(Unsure)?;
        self.i = body + close + delimiter.len();
        Ok(())
    }

    /// A number at `self.i` (a digit, or `.` and a digit); a literal if it is
    /// a plain decimal.
    pub(super) fn number(&mut self, on_literal: &mut impl FnMut(Literal)) -> Result<(), Unsure> {
        let b = self.b;
        let start = self.i;
        let radix = match (b.get(start), b.get(start + 1).map(|c| c | 0x20)) {
            (Some(b'0'), Some(b'x')) => 16,
            (Some(b'0'), Some(b'o')) => 8,
            (Some(b'0'), Some(b'b')) => 2,
            _ => 10,
        };
        let mut i;
        if radix != 10 {
            i = digits(b, start + 2, radix, true);
            if i == start + 2 {
                return Err(Unsure);
            }
        } else {
            i = digits(b, start, 10, false);
            if b.get(i) == Some(&b'.') {
                if b.get(i + 1) == Some(&b'.') {
                    // `1..`: Postgres reads `1` and `..`; not worth following.
                    return Err(Unsure);
                }
                i = digits(b, i + 1, 10, false);
            }
            if matches!(b.get(i), Some(b'e' | b'E')) {
                let mut j = i + 1;
                if matches!(b.get(j), Some(b'+' | b'-')) {
                    j += 1;
                }
                if !b.get(j).is_some_and(u8::is_ascii_digit) {
                    return Err(Unsure);
                }
                i = digits(b, j, 10, false);
            }
        }
        // `1abc`, `1.5.`: Postgres 15+ reports trailing junk.
        if b.get(i).is_some_and(|&c| is_ident_cont(c) || c == b'.') {
            return Err(Unsure);
        }
        self.i = i;
        self.significant_end = i;
        let plain = radix == 10 && !b.get(start..i).unwrap_or_default().contains(&b'_');
        if plain {
            on_literal(Literal {
                start,
                end: i,
                kind: LiteralKind::Number,
            });
        }
        Ok(())
    }

    /// An identifier or keyword, or a prefixed quoted constant (`E'...'`,
    /// `B'...'`, `X'...'`, `U&'...'`, `U&"..."`), all kept as written.
    fn word(&mut self) -> Result<(), Unsure> {
        let b = self.b;
        let start = self.i;
        if matches!(b.get(start + 1), Some(b'\'' | b'&')) {
            let first = b.get(start).map_or(0, |c| c | 0x20);
            let after = b.get(start + 2).copied();
            let end = match (first, b.get(start + 1), after) {
                (b'e', Some(b'\''), _) => Some(escape_string_end(b, start + 1).ok_or(Unsure)?),
                (b'b' | b'x', Some(b'\''), _) => {
                    let close = b
                        .get(start + 2..)
                        .and_then(|rest| rest.iter().position(|&c| c == b'\''))
                        .ok_or(Unsure)?;
                    Some(start + 2 + close + 1)
                }
                (b'u', Some(b'&'), Some(b'\'')) => {
                    Some(quoted_end(b, start + 2, b'\'').ok_or(Unsure)?.0)
                }
                (b'u', Some(b'&'), Some(b'"')) => {
                    self.i = quoted_end(b, start + 2, b'"').ok_or(Unsure)?.0;
                    return Ok(());
                }
                _ => None,
            };
            if let Some(end) = end {
                return self.string_ends(end);
            }
        }
        self.i = run_end(b, start + 1, IDENT_CONT);
        Ok(())
    }
}
