//! `COPY table/query TO STDOUT` on several shards: what joining the shards'
//! outputs needs (the format, and whether a header line is to be sent
//! once), or, for a query whose rows need a merge (ORDER BY, LIMIT,
//! aggregates, DISTINCT), the merge of its SELECT and the COPY format the
//! merged rows are written in (`copy/merged.rs`), or why it cannot be
//! answered exactly.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::merged::{copy_merge, CopyMerge};
use super::{CopyError, Format, Unsupported};
use crate::merge;
use crate::sharding::Sharding;

/// How the shards' COPY TO outputs join into one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOut {
    pub format: Format,
    /// Each shard starts with a header line (text or CSV HEADER).
    pub header: bool,
    /// The query's rows need a merge: the shards run its SELECT instead,
    /// and pgshard writes the merged rows as COPY would.
    pub merge: Option<Box<CopyMerge>>,
}

/// Plan a `COPY ... TO STDOUT` that runs on several shards; `Ok(None)`
/// when it does not write to the client (TO a file or program: each shard
/// writes its own).
pub fn plan_copy_out(sql: &str, sharding: &Sharding) -> Result<Option<CopyOut>, CopyError> {
    let mut tree = parser_ffi::parse_protobuf(sql)?;
    let copy = match tree.stmts.as_mut_slice() {
        [raw] => match raw.stmt.as_mut().and_then(|s| s.node.as_mut()) {
            Some(N::CopyStmt(copy)) => copy,
            _ => return Err(CopyError::NotOneCopy),
        },
        _ => return Err(CopyError::NotOneCopy),
    };
    if copy.is_from || copy.is_program || !copy.filename.is_empty() {
        return Ok(None);
    }
    let table = match &copy.relation {
        Some(relation) => relation.relname.clone(),
        None => "(query)".to_owned(),
    };
    let (format, header) =
        format_and_header(&copy.options).map_err(|why| CopyError::Unsupported {
            table: table.clone(),
            why,
        })?;
    let mut merge = None;
    // Planning rewrites the query: the merge plans it again from the text.
    let query = copy.query.as_deref().cloned();
    if let Some(N::SelectStmt(select)) = copy.query.as_mut().and_then(|q| q.node.as_mut()) {
        match merge::select_needs_merge(select, sharding) {
            Ok(false) => {}
            Ok(true) => {
                let planned = copy_merge(query, &copy.options, (format, header), sharding)?;
                merge = Some(Box::new(planned));
            }
            Err(why) => return Err(CopyError::Query(why)),
        }
    }
    Ok(Some(CopyOut {
        format,
        header,
        merge,
    }))
}

/// FORMAT and HEADER among COPY's options (the others do not change how
/// the shards' outputs join: one CopyData per line, a header line first).
fn format_and_header(options: &[pb::Node]) -> Result<(Format, bool), Unsupported> {
    let mut format = Format::Text;
    let mut header = false;
    for option in options {
        let Some(N::DefElem(d)) = &option.node else {
            continue;
        };
        let value = d.arg.as_deref().and_then(|a| match &a.node {
            Some(N::String(s)) => Some(s.sval.to_ascii_lowercase()),
            Some(N::Boolean(b)) => Some(b.boolval.to_string()),
            Some(N::Integer(i)) => Some(i.ival.to_string()),
            _ => None,
        });
        match d.defname.as_str() {
            "format" => {
                format = match value.as_deref() {
                    Some("text") => Format::Text,
                    Some("csv") => Format::Csv,
                    Some("binary") => Format::Binary,
                    _ => return Err(Unsupported::Format),
                }
            }
            "header" => header = !matches!(value.as_deref(), Some("false" | "off" | "0")),
            _ => {}
        }
    }
    Ok((format, header))
}
