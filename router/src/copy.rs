//! `COPY sharded_table FROM STDIN` split by shard: the statement's plan
//! (format and options, where the key is among the columns) and the
//! splitting of the client's data into rows, each with the database its
//! key hashes to (a COPY into an omnisharded table sends every row to
//! every database). Pure: the proxy feeds it CopyData and sends each row
//! to its shard's COPY.
//!
//! Formats: text (rows end at an unescaped newline, fields at the
//! delimiter, backslash escapes) and CSV (quoted fields may hold
//! delimiters and newlines, HEADER lines go to every shard, which skips
//! them), and binary (`copy/binary.rs`: the file header goes to every
//! shard, each tuple to its key's, the trailer to every shard). A row
//! without a key (NULL, or a value the key's type cannot read) fails the
//! COPY, naming the row.

pub mod binary;
mod merged;
mod out;
mod rows;

pub use merged::{CopyMerge, CopyText, CopyTextError, ForceQuote};
pub use out::{plan_copy_out, CopyOut};
pub use rows::{Placed, RowError, RowSplitter};

use parser_ffi::protobuf::{self as pb, node::Node as N};
use parser_ffi::ParseError;

use crate::merge::Unmergeable;
use crate::route::tables::{classify, entry_names, TableClass};
use crate::sharding::{ShardedTable, Sharding};
use crate::summary::TableRef;

/// Data format of the COPY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Csv,
    Binary,
}

/// What splitting a COPY needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyPlan {
    /// The table as written (schema-qualified when it was).
    pub table: String,
    /// The column list as written (empty: the table's columns in order).
    pub columns: Vec<String>,
    /// The sharding key column and how its values map to databases;
    /// `None`: an omnisharded table, every row goes to every database.
    pub entry: Option<ShardedTable>,
    pub format: Format,
    pub delimiter: u8,
    pub quote: u8,
    pub escape: u8,
    /// The text that stands for NULL.
    pub null: String,
    /// The first line is a header (CSV).
    pub header: bool,
}

/// Why a COPY cannot be split, or a row cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    #[error("COPY into the sharded table {table}: {why}")]
    Unsupported { table: String, why: Unsupported },
    #[error("COPY into {table}, line {line}: {why}")]
    Row {
        table: String,
        line: u64,
        why: RowError,
    },
    #[error("COPY (SELECT ...) TO STDOUT across shards: {0}")]
    Query(#[from] Unmergeable),
    #[error("COPY (SELECT ...) TO STDOUT across shards: {0}")]
    Options(#[from] CopyTextError),
    #[error("the COPY could not be analysed: {0}")]
    Unreadable(#[from] ParseError),
    #[error("the COPY could not be analysed: not one COPY statement")]
    NotOneCopy,
    #[error("the COPY could not be analysed: no table")]
    NoTable,
    #[error("the COPY could not be analysed: no query")]
    NoQuery,
    #[error("the COPY could not be analysed: the query's merge changed between two plans")]
    MergeChanged,
    /// A table that a column-only `[[sharded_tables]]` entry may shard,
    /// copied without a column list: its columns decide (see
    /// [`plan_copy_into`]).
    #[error("COPY into {table}: its columns are needed to find its sharding key")]
    NeedsColumns { table: String },
}

/// What of a COPY pgshard does not split by shard (or join across shards).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("only COPY ... FROM STDIN is split by shard")]
    NotFromStdin,
    #[error("COPY ... WHERE is not supported across shards")]
    Where,
    #[error("its table is not sharded by a key column")]
    NotKeyed,
    #[error("its column list does not include the sharding key")]
    NoKeyColumn,
    #[error("DELIMITER, QUOTE and ESCAPE must be one ASCII character")]
    NotOneCharacter,
    #[error("an unknown FORMAT")]
    Format,
    #[error("it has an option pgshard does not split by (DEFAULT, ...)")]
    Option,
    #[error("HEADER is not allowed in the binary format")]
    BinaryHeader,
    #[error("HEADER is only for CSV in this Postgres version's text format")]
    TextHeader,
}

/// Plan `COPY table [(cols)] FROM STDIN [WITH (...)]` into a sharded table.
pub fn plan_copy(sql: &str, sharding: &Sharding) -> Result<CopyPlan, CopyError> {
    plan_copy_into(sql, sharding, None)
}

/// [`plan_copy`], knowing the table's columns (`table_columns`, as its
/// catalog lists them) for a COPY without a column list into a table that
/// only a column-only `[[sharded_tables]]` entry can shard: the entry whose
/// column the table has keys it.
pub fn plan_copy_into(
    sql: &str,
    sharding: &Sharding,
    table_columns: Option<&[String]>,
) -> Result<CopyPlan, CopyError> {
    let tree = parser_ffi::parse_protobuf(sql)?;
    let copy = match tree.stmts.as_slice() {
        [raw] => match raw.stmt.as_ref().and_then(|s| s.node.as_ref()) {
            Some(N::CopyStmt(copy)) => copy.as_ref().clone(),
            _ => return Err(CopyError::NotOneCopy),
        },
        _ => return Err(CopyError::NotOneCopy),
    };
    let relation = copy.relation.as_ref().ok_or(CopyError::NoTable)?;
    let table = match relation.schemaname.is_empty() {
        true => relation.relname.clone(),
        false => format!("{}.{}", relation.schemaname, relation.relname),
    };
    let unsupported = |why| CopyError::Unsupported {
        table: table.clone(),
        why,
    };
    if !copy.is_from || copy.is_program || !copy.filename.is_empty() || copy.query.is_some() {
        return Err(unsupported(Unsupported::NotFromStdin));
    }
    if copy.where_clause.is_some() {
        return Err(unsupported(Unsupported::Where));
    }
    let columns: Vec<String> = copy
        .attlist
        .iter()
        .filter_map(|c| match &c.node {
            Some(N::String(s)) => Some(s.sval.clone()),
            _ => None,
        })
        .collect();
    let reference = TableRef {
        schema: (!relation.schemaname.is_empty()).then(|| relation.schemaname.clone()),
        name: relation.relname.clone(),
        alias: None,
    };
    let entry = match classify(&reference, sharding) {
        TableClass::Sharded => sharding
            .tables
            .iter()
            .find(|e| entry_names(e, &reference))
            .map(|e| Some(e.clone())),
        TableClass::Unknown => {
            let listed = match (columns.is_empty(), table_columns) {
                (false, _) => columns.as_slice(),
                (true, Some(known)) => known,
                (true, None) => return Err(CopyError::NeedsColumns { table }),
            };
            sharding
                .tables
                .iter()
                .find(|e| e.name.is_none() && listed.contains(&e.column))
                .map(|e| Some(e.clone()))
        }
        TableClass::Omnisharded => Some(None),
        TableClass::Family { .. } | TableClass::Catalog => None,
    }
    .ok_or_else(|| unsupported(Unsupported::NotKeyed))?;
    let mut plan = CopyPlan {
        table: table.clone(),
        columns,
        entry,
        format: Format::Text,
        delimiter: b'\t',
        quote: b'"',
        escape: b'"',
        null: "\\N".into(),
        header: false,
    };
    options(&copy.options, &mut plan).map_err(unsupported)?;
    Ok(plan)
}

/// Read COPY's options into `plan`.
fn options(options: &[pb::Node], plan: &mut CopyPlan) -> Result<(), Unsupported> {
    let mut delimiter = None;
    let mut null = None;
    let mut escape = None;
    for option in options {
        let Some(N::DefElem(d)) = &option.node else {
            continue;
        };
        let value = d.arg.as_deref().and_then(|a| match &a.node {
            Some(N::String(s)) => Some(s.sval.clone()),
            Some(N::Boolean(b)) => Some(b.boolval.to_string()),
            Some(N::Integer(i)) => Some(i.ival.to_string()),
            _ => None,
        });
        let byte = |v: &Option<String>| match v.as_deref().map(str::as_bytes) {
            Some([b]) if b.is_ascii() => Ok(*b),
            _ => Err(Unsupported::NotOneCharacter),
        };
        match d.defname.as_str() {
            "format" => {
                plan.format = match value.as_deref() {
                    Some("text") => Format::Text,
                    Some("csv") => Format::Csv,
                    Some("binary") => Format::Binary,
                    _ => return Err(Unsupported::Format),
                }
            }
            "delimiter" => delimiter = Some(byte(&value)?),
            "quote" => plan.quote = byte(&value)?,
            "escape" => escape = Some(byte(&value)?),
            "null" => null = value,
            "header" => plan.header = !matches!(value.as_deref(), Some("false" | "off" | "0")),
            "encoding" | "force_not_null" | "force_null" | "freeze" => {}
            _ => return Err(Unsupported::Option),
        }
    }
    let csv = plan.format == Format::Csv;
    plan.delimiter = delimiter.unwrap_or(if csv { b',' } else { b'\t' });
    plan.escape = escape.unwrap_or(plan.quote);
    plan.null = null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    if plan.header && plan.format == Format::Binary {
        return Err(Unsupported::BinaryHeader);
    }
    if plan.header && !csv {
        return Err(Unsupported::TextHeader);
    }
    Ok(())
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
