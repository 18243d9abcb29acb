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

/// Why a merged COPY TO's text options cannot be written: Postgres's
/// words where it checks the same (`ProcessCopyOptions`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyTextError {
    #[error("COPY {0} must be a single one-byte character")]
    NotOneByte(&'static str),
    #[error("COPY NULL needs a string")]
    NullNotString,
    #[error("COPY {0} requires CSV mode")]
    CsvOnly(String),
    #[error("the COPY option {0} is not supported when the rows are merged across shards")]
    NotMerged(String),
    #[error("cannot specify HEADER, DELIMITER or NULL in BINARY mode")]
    BinaryText,
    #[error("COPY delimiter cannot be newline or carriage return")]
    DelimiterNewline,
    #[error("COPY null representation cannot use newline or carriage return")]
    NullNewline,
    #[error("COPY delimiter cannot be \"{0}\"")]
    Delimiter(char),
    #[error("COPY delimiter and quote must be different")]
    DelimiterIsQuote,
    #[error("COPY delimiter character must not appear in the NULL specification")]
    DelimiterInNull,
    #[error("CSV quote character must not appear in the NULL specification")]
    QuoteInNull,
    #[error("COPY FORCE_QUOTE takes column names")]
    ForceQuoteNames,
    #[error("COPY FORCE_QUOTE takes column names or *")]
    ForceQuoteArgument,
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
    let query = query.ok_or(CopyError::NoQuery)?;
    let tree = pb::ParseResult {
        version: 0,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(query)),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    let select = parser_ffi::deparse_protobuf(&tree)?;
    let text = copy_text(options, format, header)?;
    let plan = match merge::plan(&select, sharding).shape {
        Shape::Merge(plan) => plan,
        Shape::Refuse(why) => return Err(CopyError::Query(why)),
        Shape::Concat => return Err(CopyError::MergeChanged),
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
fn copy_text(
    options: &[pb::Node],
    format: Format,
    header: bool,
) -> Result<CopyText, CopyTextError> {
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
        let byte = |what: &'static str| -> Result<u8, CopyTextError> {
            match value.as_deref().map(str::as_bytes) {
                Some([b]) if b.is_ascii() => Ok(*b),
                _ => Err(CopyTextError::NotOneByte(what)),
            }
        };
        match d.defname.as_str() {
            "format" | "header" => {}
            "delimiter" => text.delimiter = byte("delimiter")?,
            "null" => text.null = value.ok_or(CopyTextError::NullNotString)?,
            "quote" if csv => text.quote = byte("quote")?,
            "escape" if csv => escape = Some(byte("escape")?),
            "force_quote" if csv => text.force_quote = force_quote(d.arg.as_deref())?,
            "quote" | "escape" | "force_quote" => {
                return Err(CopyTextError::CsvOnly(d.defname.to_uppercase()))
            }
            other => return Err(CopyTextError::NotMerged(other.to_owned())),
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
            return Err(CopyTextError::BinaryText);
        }
    }
    check(&text, csv)?;
    Ok(text)
}

/// Postgres's checks of the text options that COPY TO applies.
fn check(text: &CopyText, csv: bool) -> Result<(), CopyTextError> {
    let d = text.delimiter;
    if matches!(d, b'\n' | b'\r') {
        return Err(CopyTextError::DelimiterNewline);
    }
    if text.null.contains(['\n', '\r']) {
        return Err(CopyTextError::NullNewline);
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&d) {
        return Err(CopyTextError::Delimiter(char::from(d)));
    }
    if csv && d == text.quote {
        return Err(CopyTextError::DelimiterIsQuote);
    }
    if text.null.as_bytes().contains(&d) {
        return Err(CopyTextError::DelimiterInNull);
    }
    if csv && text.null.as_bytes().contains(&text.quote) {
        return Err(CopyTextError::QuoteInNull);
    }
    Ok(())
}

/// FORCE_QUOTE's columns, or `*`.
fn force_quote(arg: Option<&pb::Node>) -> Result<ForceQuote, CopyTextError> {
    match arg.and_then(|a| a.node.as_ref()) {
        Some(N::AStar(_)) => Ok(ForceQuote::All),
        Some(N::List(list)) => list
            .items
            .iter()
            .map(|item| match &item.node {
                Some(N::String(s)) => Ok(s.sval.clone()),
                _ => Err(CopyTextError::ForceQuoteNames),
            })
            .collect::<Result<_, _>>()
            .map(ForceQuote::Columns),
        _ => Err(CopyTextError::ForceQuoteArgument),
    }
}
