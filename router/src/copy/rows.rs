//! A COPY's data split into rows ([`RowSplitter`]): text and CSV rows cut
//! at their unescaped (unquoted) line ends, binary tuples read piece by
//! piece (`binary.rs`), each placed on the database its key hashes to, and
//! why a row cannot be ([`RowError`]).

use super::binary::{self, BinaryError};
use super::{CopyError, CopyPlan, Format, Unsupported};
use crate::hash::{self, KeyError};
use crate::sharding::{Key, ShardedTable};

/// Why a row of a COPY cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    #[error("the table has no sharding key")]
    NoKey,
    #[error("it has fewer fields than the sharding key's position")]
    FewerFields,
    #[error("its sharding key {column} is NULL")]
    NullKey { column: String },
    #[error("its sharding key is not UTF-8")]
    NotUtf8,
    #[error("its sharding key {column}: {error}")]
    BadKey { column: String, error: KeyError },
    #[error("no shard is configured for its sharding key {key}")]
    NoShard { key: String },
    #[error("unexpected EOF in COPY data")]
    UnexpectedEof,
    #[error("received copy data after EOF marker")]
    AfterEof,
    #[error("a row longer than {0} bytes, more than Postgres can read (MaxAllocSize)")]
    TooLong(usize),
    #[error(transparent)]
    Binary(#[from] BinaryError),
}

/// The most bytes of one row (binary: one tuple) kept while its end has
/// not come: Postgres reads a row into one buffer that cannot grow past
/// `MaxAllocSize` (1 GB - 1, `src/include/utils/memutils.h`), so a longer
/// row could never be copied, and without this cap a client sending one
/// would grow pgshard's memory without bound.
const MAX_ROW: usize = 0x3fff_ffff;

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
    /// Text and CSV: how much of the pending row was read for its end
    /// (each byte is read once, however many pieces the row comes in), and
    /// whether a CSV quote was open there.
    scanned: usize,
    quoted: bool,
    /// [`MAX_ROW`] (lower in tests).
    max_row: usize,
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
                    why: Unsupported::NoKeyColumn,
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
            scanned: 0,
            quoted: false,
            max_row: MAX_ROW,
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
        let (mut from, mut quoted) = (self.scanned, self.quoted);
        loop {
            match self.row_end(from, quoted) {
                Ok(end) => {
                    let row = self.pending[start..end].to_vec();
                    (start, from, quoted) = (end, end, false);
                    if let Some(row) = self.place(row)? {
                        placed.push(row);
                    }
                }
                Err((resume, open)) => {
                    (self.scanned, self.quoted) = (resume - start, open);
                    break;
                }
            }
        }
        self.pending.drain(..start);
        self.check_pending()?;
        Ok(placed)
    }

    /// A row still incomplete past [`MAX_ROW`] bytes fails the COPY.
    fn check_pending(&self) -> Result<(), CopyError> {
        match self.pending.len() > self.max_row {
            true => Err(CopyError::Row {
                table: self.plan.table.clone(),
                line: self.line + 1,
                why: RowError::TooLong(self.max_row),
            }),
            false => Ok(()),
        }
    }

    /// A splitter that refuses rows longer than `max_row` bytes.
    #[cfg(test)]
    pub(super) fn with_max_row(mut self, max_row: usize) -> RowSplitter {
        self.max_row = max_row;
        self
    }

    /// How much of the pending row was read for its end.
    #[cfg(test)]
    pub(super) fn scanned(&self) -> usize {
        self.scanned
    }

    /// The end of the data (CopyDone): a last row without its newline.
    pub fn finish(&mut self) -> Result<Vec<Placed>, CopyError> {
        if self.plan.format == Format::Binary {
            return match (self.header_due, self.pending.is_empty()) {
                (true, _) => Err(self.error(binary::header_cut_short(&self.pending).into())),
                (false, true) => Ok(Vec::new()),
                (false, false) => {
                    self.line += 1;
                    Err(self.error(RowError::UnexpectedEof))
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
                    return Err(self.error(RowError::AfterEof));
                }
                break;
            }
            let (len, database) = if self.header_due {
                match binary::header(bytes).map_err(|why| self.error(why.into()))? {
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
                        return Err(self.error(why.into()));
                    }
                }
            };
            placed.push((database, bytes[..len].to_vec()));
            start += len;
        }
        self.pending.drain(..start);
        self.check_pending()?;
        Ok(placed)
    }

    /// A failure at the current row.
    fn error(&self, why: RowError) -> CopyError {
        CopyError::Row {
            table: self.plan.table.clone(),
            line: self.line,
            why,
        }
    }

    /// Where the pending row ends (after its newline), read from `from`
    /// with a CSV quote `quoted` there; else where to read on from when
    /// more bytes come (past the end after a trailing backslash, whose
    /// byte is escaped; at a trailing CSV escape, which the next byte
    /// decides), and whether a quote is open.
    fn row_end(&self, from: usize, mut quoted: bool) -> Result<usize, (usize, bool)> {
        let bytes = &self.pending;
        let (quote, escape) = (self.plan.quote, self.plan.escape);
        let mut i = from;
        while i < bytes.len() {
            let b = bytes[i];
            let csv_escape = quoted && b == escape && escape != quote;
            match self.plan.format {
                Format::Text if b == b'\\' => i += 1,
                Format::Csv if csv_escape && i + 1 == bytes.len() => return Err((i, quoted)),
                Format::Csv if csv_escape && bytes[i + 1] == quote => i += 1,
                Format::Csv if b == quote => quoted = !quoted,
                _ if b == b'\n' && !quoted => return Ok(i + 1),
                _ => {}
            }
            i += 1;
        }
        Err((i, quoted))
    }

    /// The database of a row (its content without the line end) whose key
    /// is field `key`.
    fn database(&self, row: &[u8], key: usize) -> Result<usize, RowError> {
        let Some(entry) = &self.plan.entry else {
            return Err(RowError::NoKey);
        };
        let field = self.field(row, key).ok_or(RowError::FewerFields)?;
        let Some(text) = field else {
            return Err(RowError::NullKey {
                column: entry.column.clone(),
            });
        };
        let text = String::from_utf8(text).map_err(|_| RowError::NotUtf8)?;
        let value: Key =
            hash::parse_text(entry.keys.data_type, &text).map_err(|error| RowError::BadKey {
                column: entry.column.clone(),
                error,
            })?;
        hash::database(&entry.keys, &value).ok_or(RowError::NoShard { key: text })
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
fn binary_database(entry: &ShardedTable, key: Option<&[u8]>) -> Result<usize, RowError> {
    let column = &entry.column;
    let bytes = key.ok_or_else(|| RowError::NullKey {
        column: column.clone(),
    })?;
    let key: Key =
        hash::decode_binary(entry.keys.data_type, bytes).map_err(|error| RowError::BadKey {
            column: column.clone(),
            error,
        })?;
    hash::database(&entry.keys, &key).ok_or_else(|| RowError::NoShard {
        key: format!("{key:?}"),
    })
}
