//! A simple query's multi-row INSERT split without parsing it: texts of one
//! template (`crate::template`: the same text but for the values of their
//! number and string literals, which the AST cache already serves from one
//! tree) have their rows at the same places relative to their literals,
//! and each row's key in the same literal. Once one such text is parsed, a
//! [`LiteralLayout`] records that; the next text of the template is lexed
//! (the cache's own one-pass lexer, no parse and no libpg_query scan), each
//! row's key read from its literal as the parser would make the constant
//! (an integer that fits `int4` printed back, any other number as written,
//! a string's content, a folded `-`), hashed, and each part written from
//! the client's text. Whatever the layout cannot read (a key that is not a
//! literal, parameters, a key that does not hash, another template) goes
//! the parsing way, which gives the same split or says why there is none.

use std::borrow::Cow;
use std::ops::Range;

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::text::write_part;
use super::{group, key_column, the_insert, InsertRows, RowKeyError, Split};
use crate::hash;
use crate::sharding::Sharding;
use crate::template::{self, Literal, LiteralKind};

/// The rows of the texts of one template, placed by their literals.
#[derive(Debug, Clone)]
pub struct LiteralLayout {
    /// The template key of the texts it reads.
    key: String,
    /// The statement without its rows (target, ON CONFLICT, RETURNING).
    skeleton: pb::ParseResult,
    /// The index of the key in the column list, for the config it was made
    /// with (another config may name another column).
    column: usize,
    rows: Vec<RowAt>,
}

/// Where a byte of a text is: `offset` bytes past the end of its first
/// `literals` literals (past the start of the text when 0).
#[derive(Debug, Clone, Copy)]
struct Anchor {
    literals: usize,
    offset: usize,
}

/// One VALUES row: its `(`, past its `)`, and its key's literal (whose
/// value the parser negated when `negate`).
#[derive(Debug, Clone)]
struct RowAt {
    start: Anchor,
    end: Anchor,
    key: usize,
    negate: bool,
}

impl LiteralLayout {
    /// The layout of `rows`, read from `sql`, for `sharding`'s key column;
    /// `None` when the text has parameters, the lexer is unsure of it or a
    /// row's key is not one of its literals (optionally cast).
    pub fn new(rows: &InsertRows, sql: &str, sharding: &Sharding) -> Option<LiteralLayout> {
        let (core, offset) = core_of(sql)?;
        let template = template::template(core)?;
        let spans = rows.text.as_ref()?.spans();
        if rows.parameters != 0 || template.max_param != 0 || spans.len() != rows.values.len() {
            return None;
        }
        let (_, _, column) = key_column(the_insert(&rows.skeleton).ok()?, sharding).ok()?;
        let literals = &template.literals;
        let mut placed = Vec::with_capacity(spans.len());
        for (span, list) in spans.iter().zip(&rows.values) {
            let (key, negate) = key_literal(list, column, literals, core, offset)?;
            placed.push(RowAt {
                start: anchor(literals, span.start.checked_sub(offset)?)?,
                end: anchor(literals, span.end.checked_sub(offset)?)?,
                key,
                negate,
            });
        }
        Some(LiteralLayout {
            key: template.key.into_owned(),
            skeleton: rows.skeleton.clone(),
            column,
            rows: placed,
        })
    }

    /// `sql` split by `sharding`, each part's INSERT written from it;
    /// `None` when `sql` is not a text of the layout's template, the
    /// config names another key column, or a row's key does not hash (the
    /// parsing way then says why).
    pub fn split(&self, sql: &str, sharding: &Sharding) -> Option<Split> {
        let (core, offset) = core_of(sql)?;
        let template = template::template(core)?;
        if template.key != self.key.as_str() {
            return None;
        }
        let insert = the_insert(&self.skeleton).ok()?;
        let (entry, table, column) = key_column(insert, sharding).ok()?;
        if column != self.column {
            return None;
        }
        let literals = &template.literals;
        let keys = self.rows.iter().map(|row| {
            let text = literals
                .get(row.key)
                .and_then(|literal| key_text(literal, row.negate, core))
                .ok_or(RowKeyError::NotARow)?;
            hash::parse_text(entry.keys.data_type, &text).map_err(|_| RowKeyError::NotARow)
        });
        let mut split = group(insert, entry, &table, keys).ok()?;
        let spans: Vec<Range<usize>> = (self.rows.iter())
            .map(|row| {
                let start = position(literals, row.start)?;
                Some(offset + start..offset + position(literals, row.end)?)
            })
            .collect::<Option<_>>()?;
        for part in &mut split.parts {
            part.sql = write_part(sql, &spans, &part.rows)?;
        }
        Some(split)
    }
}

/// `sql`'s core (without its edge comments) and where it starts.
fn core_of(sql: &str) -> Option<(&str, usize)> {
    let (core, _) = template::split_edge_comments(sql);
    let offset = (core.as_ptr() as usize).checked_sub(sql.as_ptr() as usize)?;
    (sql.get(offset..offset + core.len()) == Some(core)).then_some((core, offset))
}

/// Where byte `at` of a text is, relative to its `literals`; `None` inside
/// one.
fn anchor(literals: &[Literal], at: usize) -> Option<Anchor> {
    let before = literals.partition_point(|l| l.end <= at);
    if literals.get(before).is_some_and(|l| l.start < at) {
        return None;
    }
    let base = match before {
        0 => 0,
        n => literals.get(n - 1)?.end,
    };
    Some(Anchor {
        literals: before,
        offset: at - base,
    })
}

/// The byte `anchor` stands for in a text whose literals are `literals`.
fn position(literals: &[Literal], anchor: Anchor) -> Option<usize> {
    match anchor.literals {
        0 => Some(anchor.offset),
        n => Some(literals.get(n - 1)?.end + anchor.offset),
    }
}

/// The literal holding row `list`'s key (the value at `column`,
/// optionally cast, a constant of the tree parsed from `core` at
/// `offset`), and whether the parser folded a `-` into it; `None` when it
/// is anything else, or the literal does not read back as the constant.
fn key_literal(
    list: &pb::Node,
    column: usize,
    literals: &[Literal],
    core: &str,
    offset: usize,
) -> Option<(usize, bool)> {
    let Some(N::List(list)) = &list.node else {
        return None;
    };
    let mut value = list.items.get(column)?;
    while let Some(N::TypeCast(cast)) = &value.node {
        value = cast.arg.as_deref()?;
    }
    let Some(N::AConst(constant)) = &value.node else {
        return None;
    };
    let expected: Cow<'_, str> = match &constant.val {
        _ if constant.isnull => return None,
        Some(pb::a_const::Val::Ival(i)) => Cow::Owned(i.ival.to_string()),
        Some(pb::a_const::Val::Fval(f)) => Cow::Borrowed(&f.fval),
        Some(pb::a_const::Val::Sval(s)) => Cow::Borrowed(&s.sval),
        _ => return None,
    };
    let at = usize::try_from(constant.location)
        .ok()?
        .checked_sub(offset)?;
    let index = literals.partition_point(|l| l.start < at);
    let negate = match literals.get(index) {
        Some(literal) if literal.start == at => false,
        // `-5`: the constant starts at the `-`; the literal is the next one.
        _ if core.as_bytes().get(at) == Some(&b'-') => true,
        _ => return None,
    };
    let read = key_text(literals.get(index)?, negate, core)?;
    (read == expected).then_some((index, negate))
}

/// The text `literal_key` hashes for `literal` of `core` (`negate`: with
/// the `-` the parser folds in): scan.l makes digits that fit an `int4` an
/// Integer (printed back: `007` is `7`) and any other number a Float kept
/// as written; a string is its content.
fn key_text<'a>(literal: &Literal, negate: bool, core: &'a str) -> Option<Cow<'a, str>> {
    let value = literal.value(core);
    match literal.kind {
        LiteralKind::String { .. } => (!negate).then_some(value),
        LiteralKind::Number => {
            let digits = value.bytes().all(|b| b.is_ascii_digit());
            let int = digits.then(|| value.parse::<i32>().ok()).flatten();
            Some(match (int, negate) {
                (Some(_), false) if !value.starts_with('0') || value.len() == 1 => value,
                (Some(n), false) => Cow::Owned(n.to_string()),
                (Some(n), true) => Cow::Owned((-i64::from(n)).to_string()),
                (None, false) => value,
                (None, true) => Cow::Owned(format!("-{value}")),
            })
        }
    }
}

#[cfg(test)]
mod tests;
