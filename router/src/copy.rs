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

pub use merged::{CopyMerge, CopyText, ForceQuote};
pub use out::{plan_copy_out, CopyOut};

use parser_ffi::protobuf::{self as pb, node::Node as N};

use crate::hash;
use crate::route::tables::{classify, entry_names, TableClass};
use crate::sharding::{Key, ShardedTable, Sharding};
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
    Unsupported { table: String, why: &'static str },
    #[error("COPY into {table}, line {line}: {why}")]
    Row {
        table: String,
        line: u64,
        why: String,
    },
    #[error("COPY (SELECT ...) TO STDOUT across shards: {0}")]
    Query(String),
    #[error("the COPY could not be analysed: {0}")]
    Unreadable(String),
    /// A table that a column-only `[[sharded_tables]]` entry may shard,
    /// copied without a column list: its columns decide (see
    /// [`plan_copy_into`]).
    #[error("COPY into {table}: its columns are needed to find its sharding key")]
    NeedsColumns { table: String },
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
    let tree = parser_ffi::parse_protobuf(sql).map_err(|e| CopyError::Unreadable(e.to_string()))?;
    let copy = match tree.stmts.as_slice() {
        [raw] => match raw.stmt.as_ref().and_then(|s| s.node.as_ref()) {
            Some(N::CopyStmt(copy)) => copy.as_ref().clone(),
            _ => return Err(CopyError::Unreadable("not one COPY statement".into())),
        },
        _ => return Err(CopyError::Unreadable("not one COPY statement".into())),
    };
    let relation = copy
        .relation
        .as_ref()
        .ok_or(CopyError::Unreadable("no table".into()))?;
    let table = match relation.schemaname.is_empty() {
        true => relation.relname.clone(),
        false => format!("{}.{}", relation.schemaname, relation.relname),
    };
    let unsupported = |why| CopyError::Unsupported {
        table: table.clone(),
        why,
    };
    if !copy.is_from || copy.is_program || !copy.filename.is_empty() || copy.query.is_some() {
        return Err(unsupported("only COPY ... FROM STDIN is split by shard"));
    }
    if copy.where_clause.is_some() {
        return Err(unsupported("COPY ... WHERE is not supported across shards"));
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
    .ok_or_else(|| unsupported("its table is not sharded by a key column"))?;
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
fn options(options: &[pb::Node], plan: &mut CopyPlan) -> Result<(), &'static str> {
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
            _ => Err("DELIMITER, QUOTE and ESCAPE must be one ASCII character"),
        };
        match d.defname.as_str() {
            "format" => {
                plan.format = match value.as_deref() {
                    Some("text") => Format::Text,
                    Some("csv") => Format::Csv,
                    Some("binary") => Format::Binary,
                    _ => return Err("an unknown FORMAT"),
                }
            }
            "delimiter" => delimiter = Some(byte(&value)?),
            "quote" => plan.quote = byte(&value)?,
            "escape" => escape = Some(byte(&value)?),
            "null" => null = value,
            "header" => plan.header = !matches!(value.as_deref(), Some("false" | "off" | "0")),
            "encoding" | "force_not_null" | "force_null" | "freeze" => {}
            _ => return Err("it has an option pgshard does not split by (DEFAULT, ...)"),
        }
    }
    let csv = plan.format == Format::Csv;
    plan.delimiter = delimiter.unwrap_or(if csv { b',' } else { b'\t' });
    plan.escape = escape.unwrap_or(plan.quote);
    plan.null = null.unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    if plan.header && plan.format == Format::Binary {
        return Err("HEADER is not allowed in the binary format");
    }
    if plan.header && !csv {
        return Err("HEADER is only for CSV in this Postgres version's text format");
    }
    Ok(())
}

/// Splits a COPY's data stream into rows and places each.
#[derive(Debug)]
pub struct RowSplitter {
    plan: CopyPlan,
    /// Where the key is among a row's fields.
    /// The key's field (`None`: an omnisharded table's COPY).
    key: Option<usize>,
    pending: Vec<u8>,
    /// Lines (binary: tuples) seen, for errors, and whether the header
    /// (binary: the file header) is still to come.
    line: u64,
    header_due: bool,
    /// `\.` (text format) or the trailer (binary) ended the data.
    ended: bool,
}

/// A complete row (with its line end) and where it goes; `None`: every
/// database (a header line, the binary file header or trailer).
pub type Placed = (Option<usize>, Vec<u8>);

impl RowSplitter {
    /// A splitter for `plan`; `table_columns`: the table's columns in
    /// order, needed when the COPY names none.
    pub fn new(plan: CopyPlan, table_columns: &[String]) -> Result<RowSplitter, CopyError> {
        let columns = match plan.columns.is_empty() {
            true => table_columns,
            false => &plan.columns,
        };
        let key = match &plan.entry {
            None => None,
            Some(entry) => Some(columns.iter().position(|c| *c == entry.column).ok_or_else(
                || CopyError::Unsupported {
                    table: plan.table.clone(),
                    why: "its column list does not include the sharding key",
                },
            )?),
        };
        Ok(RowSplitter {
            header_due: plan.header || plan.format == Format::Binary,
            plan,
            key,
            pending: Vec::new(),
            line: 0,
            ended: false,
        })
    }

    /// Feed CopyData bytes; the complete rows in them, placed.
    pub fn push(&mut self, data: &[u8]) -> Result<Vec<Placed>, CopyError> {
        self.pending.extend_from_slice(data);
        if self.plan.format == Format::Binary {
            return self.push_binary();
        }
        let mut placed = Vec::new();
        let mut start = 0;
        while let Some(end) = self.row_end(start) {
            let row = self.pending[start..end].to_vec();
            start = end;
            if let Some(row) = self.place(row)? {
                placed.push(row);
            }
        }
        self.pending.drain(..start);
        Ok(placed)
    }

    /// The end of the data (CopyDone): a last row without its newline.
    pub fn finish(&mut self) -> Result<Vec<Placed>, CopyError> {
        if self.plan.format == Format::Binary {
            return match (self.header_due, self.pending.is_empty()) {
                (true, _) => Err(self.error(binary::header_cut_short(&self.pending))),
                (false, true) => Ok(Vec::new()),
                (false, false) => {
                    self.line += 1;
                    Err(self.error("unexpected EOF in COPY data".into()))
                }
            };
        }
        if self.pending.is_empty() || self.ended {
            return Ok(Vec::new());
        }
        let mut row = std::mem::take(&mut self.pending);
        row.push(b'\n');
        Ok(self.place(row)?.into_iter().collect())
    }

    fn place(&mut self, row: Vec<u8>) -> Result<Option<Placed>, CopyError> {
        self.line += 1;
        if self.ended {
            return Ok(None);
        }
        if self.header_due {
            self.header_due = false;
            return Ok(Some((None, row)));
        }
        let content = row.strip_suffix(b"\n").unwrap_or(&row);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        if self.plan.format == Format::Text && content == b"\\." {
            self.ended = true;
            return Ok(None);
        }
        let Some(key) = self.key else {
            return Ok(Some((None, row)));
        };
        let database = self.database(content, key).map_err(|why| CopyError::Row {
            table: self.plan.table.clone(),
            line: self.line,
            why,
        })?;
        Ok(Some((Some(database), row)))
    }

    /// The whole binary pieces pending, placed: the file header and the
    /// trailer to every database, each tuple to its key's.
    fn push_binary(&mut self) -> Result<Vec<Placed>, CopyError> {
        let mut placed = Vec::new();
        let mut start = 0;
        loop {
            let bytes = &self.pending[start..];
            if self.ended {
                if !bytes.is_empty() {
                    return Err(self.error("received copy data after EOF marker".into()));
                }
                break;
            }
            let (len, database) = if self.header_due {
                match binary::header(bytes).map_err(|why| self.error(why))? {
                    Some(len) => {
                        self.header_due = false;
                        (len, None)
                    }
                    None => break,
                }
            } else {
                match binary::piece(bytes, self.key) {
                    Ok(Some(binary::Piece::Trailer)) => {
                        self.ended = true;
                        (binary::TRAILER.len(), None)
                    }
                    Ok(Some(binary::Piece::Row { len, key })) => {
                        self.line += 1;
                        let database = match &self.plan.entry {
                            None => None,
                            Some(entry) => {
                                let key = key.map(|range| &bytes[range]);
                                let database =
                                    binary_database(entry, key).map_err(|why| self.error(why))?;
                                Some(database)
                            }
                        };
                        (len, database)
                    }
                    Ok(None) => break,
                    Err(why) => {
                        self.line += 1;
                        return Err(self.error(why));
                    }
                }
            };
            placed.push((database, bytes[..len].to_vec()));
            start += len;
        }
        self.pending.drain(..start);
        Ok(placed)
    }

    /// A failure at the current row.
    fn error(&self, why: String) -> CopyError {
        CopyError::Row {
            table: self.plan.table.clone(),
            line: self.line,
            why,
        }
    }

    /// Where the row starting at `start` of the pending bytes ends (after
    /// its newline), if it is complete.
    fn row_end(&self, start: usize) -> Option<usize> {
        let bytes = &self.pending[start..];
        let mut quoted = false;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.plan.format {
                Format::Text if b == b'\\' => i += 1,
                Format::Csv
                    if quoted
                        && b == self.plan.escape
                        && bytes.get(i + 1) == Some(&self.plan.quote)
                        && self.plan.escape != self.plan.quote =>
                {
                    i += 1
                }
                Format::Csv if b == self.plan.quote => quoted = !quoted,
                _ if b == b'\n' && !quoted => return Some(start + i + 1),
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// The database of a row (its content without the line end) whose key
    /// is field `key`.
    fn database(&self, row: &[u8], key: usize) -> Result<usize, String> {
        let Some(entry) = &self.plan.entry else {
            return Err("the table has no sharding key".into());
        };
        let field = self
            .field(row, key)
            .ok_or("it has fewer fields than the sharding key's position")?;
        let Some(text) = field else {
            return Err(format!("its sharding key {} is NULL", entry.column));
        };
        let text =
            String::from_utf8(text).map_err(|_| "its sharding key is not UTF-8".to_owned())?;
        let value: Key = hash::parse_text(entry.keys.data_type, &text)
            .map_err(|e| format!("its sharding key {}: {e}", entry.column))?;
        hash::database(&entry.keys, &value)
            .ok_or_else(|| format!("no shard is configured for its sharding key {text}"))
    }

    /// Field `key` of `row`, unescaped; `Some(None)` for NULL.
    fn field(&self, row: &[u8], key: usize) -> Option<Option<Vec<u8>>> {
        let plan = &self.plan;
        let mut index = 0;
        let mut value = Vec::new();
        let mut raw = Vec::new();
        let mut quoted = false;
        let mut was_quoted = false;
        let mut i = 0;
        loop {
            let b = row.get(i).copied();
            let end_of_field = match b {
                None => true,
                Some(b) if b == plan.delimiter && !quoted => true,
                _ => false,
            };
            if end_of_field {
                if index == key {
                    let null = !was_quoted && raw == plan.null.as_bytes();
                    return Some((!null).then_some(value));
                }
                b?;
                index += 1;
                value.clear();
                raw.clear();
                was_quoted = false;
                i += 1;
                continue;
            }
            let b = b?;
            raw.push(b);
            match plan.format {
                Format::Text if b == b'\\' => {
                    let next = *row.get(i + 1)?;
                    raw.push(next);
                    value.push(match next {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'f' => 12,
                        b'v' => 11,
                        other => other,
                    });
                    i += 1;
                }
                Format::Csv
                    if quoted && b == plan.escape && row.get(i + 1) == Some(&plan.quote) =>
                {
                    value.push(plan.quote);
                    i += 1;
                }
                Format::Csv if b == plan.quote => {
                    quoted = !quoted;
                    was_quoted = true;
                }
                _ => value.push(b),
            }
            i += 1;
        }
    }
}

/// The database of a binary tuple's key field (`None`: NULL).
fn binary_database(entry: &ShardedTable, key: Option<&[u8]>) -> Result<usize, String> {
    let column = &entry.column;
    let bytes = key.ok_or_else(|| format!("its sharding key {column} is NULL"))?;
    let key: Key = hash::decode_binary(entry.keys.data_type, bytes)
        .map_err(|e| format!("its sharding key {column}: {e}"))?;
    hash::database(&entry.keys, &key)
        .ok_or_else(|| format!("no shard is configured for its sharding key {key:?}"))
}

#[cfg(test)]
mod tests;
