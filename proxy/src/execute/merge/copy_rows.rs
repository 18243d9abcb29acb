//! A `COPY (SELECT ...) TO STDOUT` whose rows pgshard merges across shards
//! (`router::copy::CopyMerge`): the shards run the SELECT, the row merge
//! gives the rows one Postgres would, and this writes its reply as COPY
//! writes rows (`copyto.c`): one CopyOutResponse, a header line (text and
//! CSV HEADER) or the binary file header, one CopyData per row (text with
//! COPY's backslash escapes, CSV quoted where COPY quotes, binary fields as
//! the shards sent them), the binary trailer, CopyDone and `COPY n`.

use bytes::BytesMut;
use router::copy::{CopyMerge, CopyText, ForceQuote, Format};

use crate::errors::ClientError;
use crate::protocol::backend::{BackendFrame, BackendMessage, CommandTag};
use crate::protocol::{messages, rows};

/// A message of the merged reply that cannot be written as COPY's.
fn unreadable(what: &str) -> ClientError {
    ClientError::new("XX000", format!("COPY across shards: {what}"))
}

/// The binary COPY file header: signature, flags, no extension.
const BINARY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// Writes a merged SELECT reply as a COPY's.
#[derive(Debug)]
pub struct CopyRows {
    format: Format,
    header: bool,
    text: CopyText,
    /// Per column: FORCE_QUOTE applies (CSV).
    force: Vec<bool>,
    /// The rows come in a client_encoding whose characters may hold ASCII
    /// bytes (SJIS, BIG5, ...), which COPY skips over when it escapes and
    /// this does not: text and CSV are refused.
    encoding: Option<String>,
}

impl CopyRows {
    pub fn new(format: Format, header: bool, merge: &CopyMerge) -> CopyRows {
        CopyRows {
            format,
            header,
            text: merge.text.clone(),
            force: Vec::new(),
            encoding: None,
        }
    }

    /// The client's `client_encoding` (as the shards report it).
    pub fn client_encoding(&mut self, encoding: &str) {
        let embeds_ascii = [
            "SJIS",
            "SHIFT_JIS_2004",
            "BIG5",
            "GBK",
            "GB18030",
            "UHC",
            "JOHAB",
        ];
        if self.format != Format::Binary
            && embeds_ascii
                .iter()
                .any(|e| e.eq_ignore_ascii_case(encoding))
        {
            self.encoding = Some(encoding.to_owned());
        }
    }

    /// One message of the merged reply, as COPY would send it instead.
    pub fn message(
        &mut self,
        message: &BackendFrame,
        out: &mut BytesMut,
    ) -> Result<(), ClientError> {
        match message.message() {
            BackendMessage::RowDescription(body) => self.start(body, out),
            BackendMessage::DataRow(_) => self.row(message.bytes(), out),
            BackendMessage::CommandComplete(tag) => self.end(tag, out),
            BackendMessage::ErrorResponse(_)
            | BackendMessage::NoticeResponse(_)
            | BackendMessage::ParameterStatus { .. }
            | BackendMessage::NotificationResponse(_) => {
                out.extend_from_slice(message.bytes());
                Ok(())
            }
            // ParseComplete, BindComplete, NoData of the shards' statement.
            _ => Ok(()),
        }
    }

    /// The rows' description: the CopyOutResponse and the header.
    fn start(&mut self, body: &[u8], out: &mut BytesMut) -> Result<(), ClientError> {
        if let Some(encoding) = &self.encoding {
            return Err(ClientError::new(
                "0A000",
                format!("COPY across shards in text or CSV with client_encoding {encoding} is not supported (its characters may hold ASCII bytes): use UTF8, or FORMAT binary"),
            ));
        }
        let names =
            rows::column_names(body).ok_or_else(|| unreadable("an unreadable row description"))?;
        let binary = self.format == Format::Binary;
        messages::copy_out_response(out, binary, names.len());
        self.force = names
            .iter()
            .map(|name| match &self.text.force_quote {
                ForceQuote::None => false,
                ForceQuote::All => true,
                ForceQuote::Columns(columns) => columns.iter().any(|c| c == name),
            })
            .collect();
        if let ForceQuote::Columns(columns) = &self.text.force_quote {
            if let Some(missing) = columns.iter().find(|c| !names.contains(c)) {
                return Err(ClientError::new(
                    "42P10",
                    format!("FORCE_QUOTE column \"{missing}\" not referenced by COPY"),
                ));
            }
        }
        if binary {
            messages::copy_data(out, BINARY_HEADER);
        } else if self.header {
            let mut line = Vec::new();
            for (i, name) in names.iter().enumerate() {
                if i > 0 {
                    line.push(self.text.delimiter);
                }
                match self.format {
                    Format::Csv => self.csv(name.as_bytes(), false, names.len() == 1, &mut line),
                    _ => self.escaped(name.as_bytes(), &mut line),
                }
            }
            line.push(b'\n');
            messages::copy_data(out, &line);
        }
        Ok(())
    }

    /// One merged row as one CopyData.
    fn row(&mut self, message: &[u8], out: &mut BytesMut) -> Result<(), ClientError> {
        let row = rows::parse_row(message).ok_or_else(|| unreadable("an unreadable row"))?;
        let count = row.values.len();
        let mut line = Vec::new();
        if self.format == Format::Binary {
            line.extend_from_slice(&(count as u16).to_be_bytes());
            for i in 0..count {
                match row.value(i) {
                    None => line.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(value) => {
                        line.extend_from_slice(&(value.len() as u32).to_be_bytes());
                        line.extend_from_slice(value);
                    }
                }
            }
        } else {
            for i in 0..count {
                if i > 0 {
                    line.push(self.text.delimiter);
                }
                match (row.value(i), self.format) {
                    (None, _) => line.extend_from_slice(self.text.null.as_bytes()),
                    (Some(value), Format::Csv) => {
                        let force = self.force.get(i).copied().unwrap_or(false);
                        self.csv(value, force, count == 1, &mut line)
                    }
                    (Some(value), _) => self.escaped(value, &mut line),
                }
            }
            line.push(b'\n');
        }
        messages::copy_data(out, &line);
        Ok(())
    }

    /// The end: the binary trailer, CopyDone and `COPY n`.
    fn end(&mut self, tag: CommandTag<'_>, out: &mut BytesMut) -> Result<(), ClientError> {
        let text = String::from_utf8_lossy(tag.as_bytes());
        let count = text
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| unreadable(&format!("an unexpected command tag {text:?}")))?;
        if self.format == Format::Binary {
            messages::copy_data(out, &(-1i16).to_be_bytes());
        }
        messages::copy_done(out);
        messages::command_complete(out, &format!("COPY {count}"));
        Ok(())
    }

    /// A value in COPY's text format (`CopyAttributeOutText`): backslash,
    /// the delimiter and the control characters COPY names escaped.
    fn escaped(&self, value: &[u8], line: &mut Vec<u8>) {
        let delimiter = self.text.delimiter;
        for &c in value {
            let named = match c {
                0x08 => Some(b'b'),
                0x0c => Some(b'f'),
                b'\n' => Some(b'n'),
                b'\r' => Some(b'r'),
                b'\t' => Some(b't'),
                0x0b => Some(b'v'),
                _ => None,
            };
            match named {
                Some(letter) => line.extend_from_slice(&[b'\\', letter]),
                None if c == b'\\' || c == delimiter => line.extend_from_slice(&[b'\\', c]),
                None => line.push(c),
            }
        }
    }

    /// A value in CSV (`CopyAttributeOutCSV`): quoted when forced, when it
    /// reads as the NULL string, holds the delimiter, the quote, a newline
    /// or a carriage return, or is `\.` alone on its line; the quote and
    /// escape characters inside escaped.
    fn csv(&self, value: &[u8], force: bool, single: bool, line: &mut Vec<u8>) {
        let (quote, escape, delimiter) = (self.text.quote, self.text.escape, self.text.delimiter);
        let quoted = force
            || value == self.text.null.as_bytes()
            || (single && value == b"\\.")
            || value
                .iter()
                .any(|&c| c == delimiter || c == quote || c == b'\n' || c == b'\r');
        if !quoted {
            line.extend_from_slice(value);
            return;
        }
        line.push(quote);
        for &c in value {
            if c == quote || c == escape {
                line.push(escape);
            }
            line.push(c);
        }
        line.push(quote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(format: Format, text: CopyText) -> CopyRows {
        CopyRows {
            format,
            header: false,
            text,
            force: Vec::new(),
            encoding: None,
        }
    }

    fn text() -> CopyText {
        CopyText {
            delimiter: b'\t',
            null: "\\N".into(),
            quote: b'"',
            escape: b'"',
            force_quote: ForceQuote::None,
        }
    }

    #[test]
    fn text_escapes_as_copy_does() {
        let w = writer(Format::Text, text());
        let mut line = Vec::new();
        w.escaped(b"a\tb\\c\nd\re\x08\x0c\x0b\x01|", &mut line);
        assert_eq!(line, b"a\\tb\\\\c\\nd\\re\\b\\f\\v\x01|".to_vec());
        let w = writer(
            Format::Text,
            CopyText {
                delimiter: b'|',
                ..text()
            },
        );
        let mut line = Vec::new();
        w.escaped(b"x|y\tz", &mut line);
        assert_eq!(line, b"x\\|y\\tz".to_vec());
    }

    #[test]
    fn csv_quotes_where_copy_quotes() {
        let csv = CopyText {
            delimiter: b',',
            null: String::new(),
            ..text()
        };
        let w = writer(Format::Csv, csv.clone());
        for (value, force, single, written) in [
            (&b"plain"[..], false, false, &b"plain"[..]),
            (b"a,b", false, false, b"\"a,b\""),
            (b"say \"hi\"", false, false, b"\"say \"\"hi\"\"\""),
            (b"two\nlines", false, false, b"\"two\nlines\""),
            (b"", false, false, b"\"\""),
            (b"x", true, false, b"\"x\""),
            (b"\\.", false, true, b"\"\\.\""),
            (b"\\.", false, false, b"\\."),
        ] {
            let mut line = Vec::new();
            w.csv(value, force, single, &mut line);
            assert_eq!(line, written.to_vec(), "{value:?}");
        }
        let w = writer(
            Format::Csv,
            CopyText {
                quote: b'\'',
                escape: b'\\',
                ..csv
            },
        );
        let mut line = Vec::new();
        w.csv(b"it's \\ ok", false, false, &mut line);
        assert_eq!(line, b"'it\\'s \\\\ ok'".to_vec());
    }
}
