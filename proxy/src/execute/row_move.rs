//! What a row move sends its servers, session-free (the session's
//! `session/key_move.rs` decides and drives the move): the DELETE and the
//! INSERT as Parse, Bind, Execute and Sync with the client's values and the
//! old row's, the foreign-key check, and reading a reply to its
//! ReadyForQuery.

use bytes::{Bytes, BytesMut};
use router::key_move::Renumbered;
use router::route::ParamValue;

use crate::errors::ClientError;
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendKind};
use crate::protocol::frontend::{Bind, Named};
use crate::protocol::sqlstate;
use crate::protocol::{messages, rows};

/// A statement's parameter values: text or binary (one format code each),
/// with the types its Parse declared.
#[derive(Debug, Default)]
pub struct Values {
    values: Vec<Option<Bytes>>,
    formats: Vec<i16>,
    types: Vec<u32>,
}

impl Values {
    pub fn of(bind: &Bind, types: &[u32]) -> Values {
        Values {
            values: bind.params.clone(),
            formats: (0..bind.params.len())
                .map(|i| bind.param_format(i))
                .collect(),
            types: types.to_vec(),
        }
    }

    pub fn router(&self) -> Vec<ParamValue<'_>> {
        self.values
            .iter()
            .zip(&self.formats)
            .map(|(value, format)| match (value, format) {
                (None, _) => ParamValue::Null,
                (Some(v), 1) => ParamValue::Binary(v),
                (Some(v), _) => ParamValue::Text(v),
            })
            .collect()
    }
}

/// pgshard cannot move the row exactly: 0A000 with `why`.
pub fn refused(why: impl ToString) -> ClientError {
    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string())
}

/// `error` as the ErrorResponse a client is sent.
pub fn encode(error: &ClientError) -> Bytes {
    let mut out = BytesMut::new();
    error.encode(&mut out);
    out.freeze()
}

/// Refuse the move when deleting the row would change other tables'
/// rows: foreign keys that reference `table` with ON DELETE CASCADE, SET
/// NULL or SET DEFAULT (an UPDATE would keep them; a move deletes the row).
pub async fn cascades(server: &mut Pooled, table: &str) -> Result<(), Bytes> {
    let literal = table.replace('\'', "''");
    let sql = format!(
        "SELECT conname::text FROM pg_catalog.pg_constraint WHERE contype = 'f' \
         AND confrelid = '{literal}'::regclass AND confdeltype IN ('c', 'n', 'd')"
    );
    let answer = server
        .conn
        .query(&sql)
        .await
        .map_err(|_| encode(&ClientError::shard_lost()))?;
    if let Some((code, message)) = answer.error {
        return Err(encode(&ClientError::from_server(&code, message)));
    }
    match answer.rows.first().and_then(|row| row.first().cloned().flatten()) {
        None => Ok(()),
        Some(name) => Err(encode(&refused(format!(
            "moving a row of {table} to another shard deletes it where it is, and foreign key {name} deletes or changes the rows that reference it on delete (CASCADE, SET NULL, SET DEFAULT): the UPDATE of the sharding key is refused"
        )))),
    }
}

/// Parse, Bind, Describe (when `describe`), Execute and Sync of `statement`
/// with the client's `values` it takes, then the `extra` values (binary,
/// each with its type), and the result formats `results` (`None`: text).
pub fn statement(
    statement: &Renumbered,
    values: &Values,
    extra: &[(Option<&[u8]>, u32)],
    results: Option<&[i16]>,
    describe: bool,
) -> BytesMut {
    let client = statement.params.len() - extra.len();
    let mut types = Vec::with_capacity(statement.params.len());
    let mut formats = Vec::with_capacity(statement.params.len());
    let mut bound: Vec<Option<&[u8]>> = Vec::with_capacity(statement.params.len());
    for &i in &statement.params[..client] {
        types.push(values.types.get(i).copied().unwrap_or(0));
        formats.push(values.formats.get(i).copied().unwrap_or(0));
        bound.push(values.values.get(i).and_then(|v| v.as_deref()));
    }
    for (value, oid) in extra {
        types.push(*oid);
        formats.push(1);
        bound.push(*value);
    }
    let mut out = BytesMut::new();
    messages::parse(&mut out, b"", statement.sql.as_bytes(), &types);
    messages::bind_values(
        &mut out,
        (b"", b""),
        &formats,
        &bound,
        results.unwrap_or(&[]),
    );
    if describe {
        messages::describe(&mut out, Named::Portal, b"");
    }
    messages::execute(&mut out, b"");
    messages::sync(&mut out);
    out
}

/// The INSERT of the moved row: the client's values it takes, then the old
/// row's (binary, typed as the DELETE returned them).
pub fn inserted(
    insert: &Renumbered,
    values: &Values,
    (old, old_types): (&rows::Row, &[u32]),
    parameters: usize,
    describe: bool,
) -> BytesMut {
    let extra: Vec<(Option<&[u8]>, u32)> = insert
        .params
        .iter()
        .filter_map(|&i| i.checked_sub(parameters))
        .map(|column| {
            (
                old.value(column),
                old_types.get(column).copied().unwrap_or(0),
            )
        })
        .collect();
    statement(insert, values, &extra, None, describe)
}

/// Parse and Describe of the INSERT only (RETURNING's row description
/// when no row moved).
pub fn described(
    insert: &Renumbered,
    values: &Values,
    old_types: &[u32],
    parameters: usize,
) -> BytesMut {
    let types: Vec<u32> = insert
        .params
        .iter()
        .map(|&i| match i.checked_sub(parameters) {
            Some(column) => old_types.get(column).copied().unwrap_or(0),
            None => values.types.get(i).copied().unwrap_or(0),
        })
        .collect();
    let mut out = BytesMut::new();
    messages::parse(&mut out, b"", insert.sql.as_bytes(), &types);
    messages::describe(&mut out, Named::Statement, b"");
    messages::sync(&mut out);
    out
}

/// Send `request` to `server` and read its replies to the ReadyForQuery
/// (its status noted); the first error (encoded) when there was one.
pub async fn exchange(server: &mut Pooled, request: &[u8]) -> Result<Vec<BackendFrame>, Bytes> {
    let lost = || encode(&ClientError::shard_lost());
    server.conn.send(request).await.map_err(|_| lost())?;
    let mut replies = Vec::new();
    let mut error = None;
    loop {
        let message = loop {
            match server.conn.next_message() {
                Ok(Some(message)) => break message,
                Ok(None) => {}
                Err(_) => return Err(lost()),
            }
            match server.conn.fill().await {
                Ok(0) | Err(_) => return Err(lost()),
                Ok(_) => {}
            }
        };
        match message.kind() {
            BackendKind::ReadyForQuery => {
                return match error {
                    Some(error) => Err(error),
                    None => Ok(replies),
                };
            }
            BackendKind::ErrorResponse => {
                error.get_or_insert(message.into_bytes());
            }
            _ => replies.push(message),
        }
    }
}
