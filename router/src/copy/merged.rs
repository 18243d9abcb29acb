//! `COPY (SELECT ...) TO STDOUT` whose rows need a merge across shards
//! (ORDER BY, LIMIT, aggregates, DISTINCT): the shards run the SELECT
//! (rewritten by [`crate::merge`] where the merge needs hidden columns),
//! and the proxy writes the merged rows in the COPY's format, as
//! `copyto.c` writes them: [`CopyText`] holds the options that shape the
//! text and CSV output, checked as Postgres checks them for COPY TO.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::{CopyError, Format};
use crate::merge::{self, MergePlan, Shape};
use crate::sharding::Sharding;

/// A merged COPY TO: the merge, the SELECT the shards run, the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyMerge {
    pub plan: MergePlan,
    /// What the shards run (the SELECT, rewritten when the plan needs).
    pub sql: String,
    pub text: CopyText,
}

/// How rows are written in text and CSV (ignored in binary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyText {
    pub delimiter: u8,
    /// What a NULL is written as.
    pub null: String,
    /// CSV's quote and escape characters.
    pub quote: u8,
    pub escape: u8,
    pub force_quote: ForceQuote,
}

/// CSV's FORCE_QUOTE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForceQuote {
    None,
    All,
    Columns(Vec<String>),
}

/// Plan the merged COPY of `query` (which needs a merge) with `options`.
pub(super) fn copy_merge(
    query: Option<pb::Node>,
    options: &[pb::Node],
    (format, header): (Format, bool),
    sharding: &Sharding,
) -> Result<CopyMerge, CopyError> {
    let query = query.ok_or(CopyError::Unreadable("no query".into()))?;
    let tree = pb::ParseResult {
        version: 0,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(query)),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    let select =
        parser_ffi::deparse_protobuf(&tree).map_err(|e| CopyError::Unreadable(e.to_string()))?;
    let text = copy_text(options, format, header).map_err(CopyError::Query)?;
    let plan = match merge::plan(&select, sharding).shape {
        Shape::Merge(plan) => plan,
        Shape::Refuse(why) => return Err(CopyError::Query(why.to_string())),
        Shape::Concat => {
            return Err(CopyError::Unreadable(
                "the query's merge changed between two plans".into(),
            ))
        }
    };
    Ok(CopyMerge {
        sql: plan.shard_sql.clone().unwrap_or(select),
        plan,
        text,
    })
}

/// The text and CSV options of a COPY TO, with Postgres's defaults and its
/// checks (`ProcessCopyOptions`); an option pgshard does not write rows
/// for is refused.
fn copy_text(options: &[pb::Node], format: Format, header: bool) -> Result<CopyText, String> {
    let csv = format == Format::Csv;
    let mut text = CopyText {
        delimiter: if csv { b',' } else { b'\t' },
        null: if csv { String::new() } else { "\\N".into() },
        quote: b'"',
        escape: b'"',
        force_quote: ForceQuote::None,
    };
    let mut escape = None;
    for option in options {
        let Some(N::DefElem(d)) = &option.node else {
            continue;
        };
        let value = d.arg.as_deref().and_then(|a| match &a.node {
            Some(N::String(s)) => Some(s.sval.clone()),
            _ => None,
        });
        let byte = |what: &str| -> Result<u8, String> {
            match value.as_deref().map(str::as_bytes) {
                Some([b]) if b.is_ascii() => Ok(*b),
                _ => Err(format!("COPY {what} must be a single one-byte character")),
            }
        };
        match d.defname.as_str() {
            "format" | "header" => {}
            "delimiter" => text.delimiter = byte("delimiter")?,
            "null" => text.null = value.ok_or("COPY NULL needs a string")?,
            "quote" if csv => text.quote = byte("quote")?,
            "escape" if csv => escape = Some(byte("escape")?),
            "force_quote" if csv => text.force_quote = force_quote(d.arg.as_deref())?,
            "quote" | "escape" | "force_quote" => {
                return Err(format!(
                    "COPY {} requires CSV mode",
                    d.defname.to_uppercase()
                ))
            }
            other => {
                return Err(format!(
                "the COPY option {other} is not supported when the rows are merged across shards"
            ))
            }
        }
    }
    text.escape = escape.unwrap_or(text.quote);
    if format == Format::Binary {
        let named = |name: &str| {
            options
                .iter()
                .any(|o| matches!(&o.node, Some(N::DefElem(d)) if d.defname == name))
        };
        if header || ["delimiter", "null"].into_iter().any(named) {
            return Err("cannot specify HEADER, DELIMITER or NULL in BINARY mode".into());
        }
    }
    check(&text, csv)?;
    Ok(text)
}

/// Postgres's checks of the text options that COPY TO applies.
fn check(text: &CopyText, csv: bool) -> Result<(), String> {
    let d = text.delimiter;
    if matches!(d, b'\n' | b'\r') {
        return Err("COPY delimiter cannot be newline or carriage return".into());
    }
    if text.null.contains(['\n', '\r']) {
        return Err("COPY null representation cannot use newline or carriage return".into());
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&d) {
        return Err(format!("COPY delimiter cannot be \"{}\"", char::from(d)));
    }
    if csv && d == text.quote {
        return Err("COPY delimiter and quote must be different".into());
    }
    if text.null.as_bytes().contains(&d) {
        return Err("COPY delimiter character must not appear in the NULL specification".into());
    }
    if csv && text.null.as_bytes().contains(&text.quote) {
        return Err("CSV quote character must not appear in the NULL specification".into());
    }
    Ok(())
}

/// FORCE_QUOTE's columns, or `*`.
fn force_quote(arg: Option<&pb::Node>) -> Result<ForceQuote, String> {
    match arg.and_then(|a| a.node.as_ref()) {
        Some(N::AStar(_)) => Ok(ForceQuote::All),
        Some(N::List(list)) => list
            .items
            .iter()
            .map(|item| match &item.node {
                Some(N::String(s)) => Ok(s.sval.clone()),
                _ => Err("COPY FORCE_QUOTE takes column names".to_owned()),
            })
            .collect::<Result<_, _>>()
            .map(ForceQuote::Columns),
        _ => Err("COPY FORCE_QUOTE takes column names or *".into()),
    }
}
