//! A multi-row INSERT's text cut at its VALUES rows (by libpg_query's
//! scanner, so strings, comments and dollar quotes are read as Postgres
//! reads them): the text before the first row, each row's `(...)`, the
//! text after the last. A part's INSERT is then written from the client's
//! own text, in one pass and without a deparse. When every row is the same
//! but for its parameter numbers (drivers' `($1, $2), ($3, $4), ...`) and
//! no parameter is outside the rows, the rows' [`Template`] writes the
//! INSERT of any `n` rows, whichever rows they are: the same text for the
//! same `n`, which a cache can key by `n` ([`super::PartShape`]).

use std::ops::Range;

use parser_ffi::protobuf as pb;
use parser_ffi::Token;

/// The text of an INSERT of VALUES rows, cut at its rows.
#[derive(Debug, Clone)]
pub(super) struct RowsText {
    sql: String,
    /// Each row's `(` to its `)`, in order.
    rows: Vec<Range<usize>>,
    /// The rows' template (`None`: rows differ, or parameters outside them).
    template: Option<Template>,
    /// The highest parameter number the text uses (0: none).
    highest: usize,
}

/// The rows written as one row's text with its parameters numbered per
/// row: row `j` of a part uses `$(j * width + k)`.
#[derive(Debug, Clone)]
pub(super) struct Template {
    /// Row 0's text around its parameter tokens (one more than `slots`).
    pieces: Vec<String>,
    /// Each parameter token's number in the row (0-based, `< width`).
    slots: Vec<usize>,
    /// Distinct parameters per row.
    width: usize,
    /// Per row, the client's parameter indexes (0-based) of its `width`
    /// parameters, in row order.
    params: Vec<Vec<usize>>,
}

fn is_comment(t: &Token) -> bool {
    t.token == pb::Token::SqlComment as i32 || t.token == pb::Token::CComment as i32
}

fn is(t: &Token, kind: pb::Token) -> bool {
    t.token == kind as i32
}

impl RowsText {
    /// Cut `sql`, the INSERT whose target table's name starts at byte
    /// `relation` and which has `rows` VALUES rows (`columns`: it has a
    /// column list); `None` when the text does not read as expected (the
    /// caller deparses instead).
    pub(super) fn cut(sql: &str, relation: usize, columns: bool, rows: usize) -> Option<RowsText> {
        let all = parser_ffi::scan(sql).ok()?;
        let tokens: Vec<&Token> = all.iter().filter(|t| !is_comment(t)).collect();
        let mut at = tokens.iter().position(|t| t.start >= relation)?;
        if columns {
            at += tokens[at..]
                .iter()
                .position(|t| is(t, pb::Token::Ascii40))?;
            at = closing(&tokens, at)? + 1;
        }
        // The VALUES keyword followed by a row (a table or alias may be
        // called `values` too).
        at += tokens[at..]
            .windows(2)
            .position(|pair| is(pair[0], pb::Token::Values) && is(pair[1], pb::Token::Ascii40))?
            + 1;
        let mut spans = Vec::with_capacity(rows);
        for row in 0..rows {
            if row > 0 {
                if !is(tokens.get(at)?, pb::Token::Ascii44) {
                    return None;
                }
                at += 1;
            }
            if !is(tokens.get(at)?, pb::Token::Ascii40) {
                return None;
            }
            let end = closing(&tokens, at)?;
            spans.push(tokens[at].start..tokens[end].end);
            at = end + 1;
        }
        if tokens
            .get(at)
            .is_some_and(|t| is(t, pb::Token::Ascii44) || is(t, pb::Token::Ascii40))
        {
            return None;
        }
        let mut highest = 0;
        for t in all.iter().filter(|t| is(t, pb::Token::Param)) {
            highest = highest.max(number(sql, t)?);
        }
        let template = match highest {
            0 => None,
            _ => Template::read(sql, &all, &spans),
        };
        Some(RowsText {
            sql: sql.to_owned(),
            rows: spans,
            template,
            highest,
        })
    }

    pub(super) fn template(&self) -> Option<&Template> {
        self.template.as_ref()
    }

    pub(super) fn highest_param(&self) -> usize {
        self.highest
    }

    /// Each row's `(` to its `)`, in order.
    pub(super) fn spans(&self) -> &[Range<usize>] {
        &self.rows
    }

    /// The INSERT of `rows` (the client's row numbers, in order), as the
    /// client wrote them, and its parameters still the client's numbers.
    pub(super) fn part(&self, rows: &[usize]) -> Option<String> {
        write_part(&self.sql, &self.rows, rows)
    }

    /// The INSERT of `n` rows written from the template (`$1`...), and the
    /// client's parameter indexes of `rows` in its parameters' order.
    pub(super) fn templated(&self, rows: &[usize]) -> Option<(String, Vec<usize>)> {
        let template = self.template.as_ref()?;
        let (first, last) = (self.rows.first()?, self.rows.last()?);
        let mut out = String::with_capacity(self.sql.len());
        out.push_str(self.sql.get(..first.start)?);
        let mut params = Vec::with_capacity(rows.len() * template.width);
        for (j, &row) in rows.iter().enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            template.write_row(&mut out, j);
            params.extend_from_slice(template.params.get(row)?);
        }
        out.push_str(self.sql.get(last.end..)?);
        Some((out, params))
    }
}

impl RowsText {
    /// The client's parameter indexes of [`templated`](Self::templated)'s
    /// part of `rows`, without its text.
    pub(super) fn templated_params(&self, rows: &[usize]) -> Option<Vec<usize>> {
        let template = self.template.as_ref()?;
        let mut params = Vec::with_capacity(rows.len() * template.width);
        for &row in rows {
            params.extend_from_slice(template.params.get(row)?);
        }
        Some(params)
    }
}

/// The INSERT `sql`, whose rows are at `spans`, with only `rows` (the
/// client's row numbers, in order): the text before the first row, those
/// rows joined by `, `, the text after the last.
pub(super) fn write_part(sql: &str, spans: &[Range<usize>], rows: &[usize]) -> Option<String> {
    let (first, last) = (spans.first()?, spans.last()?);
    let mut out = String::with_capacity(sql.len());
    out.push_str(sql.get(..first.start)?);
    for (i, &row) in rows.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(sql.get(spans.get(row)?.clone())?);
    }
    out.push_str(sql.get(last.end..)?);
    Some(out)
}

/// The index of the `)` that closes the `(` at `open`.
fn closing(tokens: &[&Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in tokens.iter().enumerate().skip(open) {
        if is(t, pb::Token::Ascii40) {
            depth += 1;
        } else if is(t, pb::Token::Ascii41) {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// A parameter token's number (`$n`: n).
fn number(sql: &str, t: &Token) -> Option<usize> {
    sql.get(t.start + 1..t.end)?.parse().ok().filter(|&n| n > 0)
}

/// One row's tokens as the template compares them: the text of every
/// token but parameters, and each parameter's number in the row.
type RowShape<'s> = (Vec<Option<&'s str>>, Vec<usize>, Vec<usize>);

impl Template {
    /// The rows' template, when every row reads the same but for its
    /// parameter numbers and no parameter is outside the rows.
    fn read(sql: &str, tokens: &[Token], rows: &[Range<usize>]) -> Option<Template> {
        let (first, last) = (rows.first()?, rows.last()?);
        let outside = tokens
            .iter()
            .any(|t| is(t, pb::Token::Param) && (t.end <= first.start || t.start >= last.end));
        if outside {
            return None;
        }
        let mut params = Vec::with_capacity(rows.len());
        let mut shape0: Option<RowShape<'_>> = None;
        let mut next = 0;
        for span in rows {
            let start = next + tokens[next..].iter().position(|t| t.start >= span.start)?;
            let end = start + tokens[start..].iter().position(|t| t.end >= span.end)?;
            next = end + 1;
            let shape = row_shape(sql, &tokens[start..=end])?;
            params.push(shape.2.clone());
            match &shape0 {
                None => shape0 = Some(shape),
                Some(zero) if zero.0 == shape.0 && zero.1 == shape.1 => {}
                Some(_) => return None,
            }
        }
        let (_, slots, distinct) = shape0?;
        let pieces = pieces(sql, tokens, first)?;
        Some(Template {
            pieces,
            slots,
            width: distinct.len(),
            params,
        })
    }

    /// Whether every row's parameters have the types of row 0's (`types`:
    /// the declared ones, 0 for those not declared).
    pub(super) fn uniform(&self, types: &[u32]) -> bool {
        let of = |i: &usize| types.get(*i).copied().unwrap_or(0);
        let Some(first) = self.params.first() else {
            return true;
        };
        self.params
            .iter()
            .all(|row| row.iter().map(of).eq(first.iter().map(of)))
    }

    fn write_row(&self, out: &mut String, row: usize) {
        for (i, piece) in self.pieces.iter().enumerate() {
            out.push_str(piece);
            if let Some(slot) = self.slots.get(i) {
                out.push('$');
                out.push_str(&(row * self.width + slot + 1).to_string());
            }
        }
    }
}

/// A row's tokens: non-parameter texts (`None` for a parameter), each
/// parameter's number in the row, and the row's distinct client
/// parameter indexes (0-based) in order.
fn row_shape<'s>(sql: &'s str, tokens: &[Token]) -> Option<RowShape<'s>> {
    let param = |t: &Token| is(t, pb::Token::Param);
    let mut distinct: Vec<usize> = Vec::new();
    for t in tokens.iter().filter(|t| param(t)) {
        distinct.push(number(sql, t)? - 1);
    }
    distinct.sort_unstable();
    distinct.dedup();
    let mut texts = Vec::with_capacity(tokens.len());
    let mut slots = Vec::new();
    for t in tokens.iter().filter(|t| !is_comment(t)) {
        if param(t) {
            texts.push(None);
            slots.push(distinct.binary_search(&(number(sql, t)? - 1)).ok()?);
        } else {
            texts.push(Some(sql.get(t.start..t.end)?));
        }
    }
    Some((texts, slots, distinct))
}

/// Row `span`'s text cut around its parameter tokens.
fn pieces(sql: &str, tokens: &[Token], span: &Range<usize>) -> Option<Vec<String>> {
    let mut pieces = Vec::new();
    let mut at = span.start;
    for t in tokens
        .iter()
        .filter(|t| is(t, pb::Token::Param) && t.start >= span.start && t.end <= span.end)
    {
        pieces.push(sql.get(at..t.start)?.to_owned());
        at = t.end;
    }
    pieces.push(sql.get(at..span.end)?.to_owned());
    Some(pieces)
}
