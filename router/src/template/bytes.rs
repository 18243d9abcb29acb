//! Byte classes, so the lexer's hot loops do one table load per byte, and
//! the scanners of what Postgres's `scan.l` reads byte by byte: runs of a
//! class, comments, quoted strings and escapes, digits.

/// Postgres's whitespace (`scan.l` `space`: space, tab, newline, carriage
/// return, form feed, vertical tab).
pub(super) const SPACE: u8 = 1;

/// `scan.l` `ident_start`: letters, `_`, any byte of a multi-byte character.
pub(super) const IDENT_START: u8 = 2;

/// `ident_cont`: those, digits and `$`.
pub(super) const IDENT_CONT: u8 = 4;

/// Needs a closer look: quotes, `$`, `-`, `/`, `.`, digits, NUL.
pub(super) const SPECIAL: u8 = 8;

/// `0`-`9`.
const DIGIT: u8 = 16;

const CLASSES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < table.len() {
        let c = i as u8;
        let mut class = 0;
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            class |= SPACE;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            class |= IDENT_START | IDENT_CONT;
        }
        if c.is_ascii_digit() || c == b'$' {
            class |= IDENT_CONT;
        }
        if c.is_ascii_digit() {
            class |= DIGIT;
        }
        if c.is_ascii_digit() || matches!(c, b'\'' | b'"' | b'$' | b'-' | b'/' | b'.' | 0) {
            class |= SPECIAL;
        }
        table[i] = class;
        i += 1;
    }
    table
};

pub(super) fn class(c: u8) -> u8 {
    CLASSES[usize::from(c)]
}

/// Postgres's whitespace.
pub(crate) fn is_space(c: u8) -> bool {
    class(c) & SPACE != 0
}

pub(super) fn is_ident_cont(c: u8) -> bool {
    class(c) & IDENT_CONT != 0
}

/// The end of the run of bytes of class `class_bit` from `i`.
pub(super) fn run_end(b: &[u8], i: usize, class_bit: u8) -> usize {
    let rest = b.get(i..).unwrap_or_default();
    i + rest
        .iter()
        .position(|&c| class(c) & class_bit == 0)
        .unwrap_or(rest.len())
}

pub(super) fn skip_space(b: &[u8], i: usize) -> usize {
    run_end(b, i, SPACE)
}

/// End of the `--` comment at `start`: its newline (not included) or the end.
pub(super) fn line_comment_end(b: &[u8], start: usize) -> usize {
    b.get(start..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\n' || c == b'\r'))
        .map_or(b.len(), |p| start + p)
}

/// End (after `*/`) of the block comment at `start`; comments nest, as in
/// Postgres. `None` if unterminated.
pub(super) fn block_comment_end(b: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    loop {
        match (b.get(i)?, b.get(i + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                i += 2;
            }
            (b'*', Some(b'/')) => {
                depth = depth.saturating_sub(1);
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
}

/// End (after the closing quote) of the run opened by `quote` at `open`,
/// where a doubled quote stands for one; and whether one was seen.
pub(super) fn quoted_end(b: &[u8], open: usize, quote: u8) -> Option<(usize, bool)> {
    let mut i = open + 1;
    let mut escaped = false;
    loop {
        i += b.get(i..)?.iter().position(|&c| c == quote)? + 1;
        if b.get(i) == Some(&quote) {
            escaped = true;
            i += 1;
        } else {
            return Some((i, escaped));
        }
    }
}

/// End of the `E'...'` string whose quote is at `open` (backslash escapes).
pub(super) fn escape_string_end(b: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    loop {
        i += b.get(i..)?.iter().position(|&c| c == b'\'' || c == b'\\')?;
        if b.get(i) == Some(&b'\\') {
            i += 2;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&b'\'') {
            i += 1;
        } else {
            return Some(i);
        }
    }
}

/// Whether a quote follows `i` across whitespace and `--` comments: a string
/// constant may then continue (`'a'` newline `'b'` is `'ab'`), or be a
/// syntax error. Either way the lexer gives up.
pub(super) fn quote_follows(b: &[u8], mut i: usize) -> bool {
    loop {
        match b.get(i) {
            Some(&c) if is_space(c) => i += 1,
            Some(b'-') if b.get(i + 1) == Some(&b'-') => i = line_comment_end(b, i),
            Some(b'\'') => return true,
            _ => return false,
        }
    }
}

/// Digits of `radix` from `i`, with single underscores between them (Postgres
/// 16+); `underscore_first` allows one before the first digit (after `0x`).
pub(super) fn digits(b: &[u8], mut i: usize, radix: u32, underscore_first: bool) -> usize {
    if radix == 10 && !underscore_first {
        // The common case: a run of decimal digits with no underscore.
        let end = run_end(b, i, DIGIT);
        if b.get(end) != Some(&b'_') {
            return end;
        }
    }
    let is_digit = |c: u8| char::from(c).is_digit(radix);
    if !underscore_first {
        if !b.get(i).is_some_and(|&c| is_digit(c)) {
            return i;
        }
        i += 1;
    }
    loop {
        match b.get(i) {
            Some(&c) if is_digit(c) => i += 1,
            Some(b'_') if b.get(i + 1).is_some_and(|&c| is_digit(c)) => i += 2,
            _ => return i,
        }
    }
}
