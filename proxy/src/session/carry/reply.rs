//! The result of a carried subquery read from its reply (the coordinator's
//! rows, kept in the client's buffer and taken out): one value, or, for
//! [`Kind::Rows`], every row with its columns' names and types.

use bytes::BytesMut;
use router::carry::{Answer, Carry, Kind, Rows, Value};

use crate::protocol::backend::{BackendFrame, BackendMessage};
use crate::protocol::rows;

/// The answer `carry`'s SELECT gave in `reply`; `None` when it is not
/// what that SELECT returns (or its text is not UTF-8).
pub(super) fn answer(reply: BytesMut, carry: &Carry) -> Option<Answer> {
    match carry.kind {
        Kind::Rows => all_rows(reply, carry.columns).map(Answer::Rows),
        _ => first_row(reply).map(Answer::Value),
    }
}

/// The bytes an answer adds to the statement.
pub(super) fn bytes(answer: &Answer) -> u64 {
    match answer {
        Answer::Value(value) => {
            let len = value.text.as_ref().map_or(0, String::len) + value.type_name.len();
            u64::try_from(len).unwrap_or(u64::MAX)
        }
        Answer::Rows(rows) => router::carry::rows_bytes(rows),
    }
}

/// The number of rows of an answer.
pub(super) fn row_count(answer: &Answer) -> usize {
    match answer {
        Answer::Value(_) => 1,
        Answer::Rows(rows) => rows.rows.len(),
    }
}

/// The type name, value and dimensions of the first DataRow in `reply`.
fn first_row(mut reply: BytesMut) -> Option<Value> {
    while let Ok(Some(frame)) = BackendFrame::split(&mut reply) {
        if let BackendMessage::DataRow(_) = frame.message() {
            let row = rows::parse_row(frame.bytes())?;
            let text = |column| match row.value(column) {
                Some(value) => String::from_utf8(value.to_vec()).map(Some).ok(),
                None => Some(None),
            };
            return Some(Value {
                type_name: text(0)??,
                text: text(1)?,
                dimensions: text(2)?,
            });
        }
    }
    None
}

/// The rows of a [`Kind::Rows`] SELECT of `columns` columns: its
/// RowDescription has the present flag, the `columns` type names, then
/// the subquery's `columns` columns by name; a row whose flag is NULL is
/// the one row of NULLs of an empty result.
fn all_rows(mut reply: BytesMut, columns: usize) -> Option<Rows> {
    let mut names = None;
    let mut types = None;
    let mut out = Vec::new();
    while let Ok(Some(frame)) = BackendFrame::split(&mut reply) {
        match frame.message() {
            BackendMessage::RowDescription(body) => {
                let all = rows::column_names(body)?;
                if all.len() != 1 + 2 * columns {
                    return None;
                }
                names = Some(all[1 + columns..].to_vec());
            }
            BackendMessage::DataRow(_) => {
                let row = rows::parse_row(frame.bytes())?;
                let text = |column| match row.value(column) {
                    Some(value) => String::from_utf8(value.to_vec()).map(Some).ok(),
                    None => Some(None),
                };
                if types.is_none() {
                    let named: Option<Vec<String>> = (1..=columns).map(|c| text(c)?).collect();
                    types = Some(named?);
                }
                if text(0)?.is_none() {
                    continue;
                }
                let values: Option<Vec<Option<String>>> =
                    (1 + columns..1 + 2 * columns).map(text).collect();
                out.push(values?);
            }
            _ => {}
        }
    }
    Some(Rows {
        names: names?,
        types: types?,
        rows: out,
    })
}
