//! Encoders for the tagged messages pgshard writes itself: to clients
//! (authentication, ParameterStatus, ReadyForQuery, result sets of the admin
//! console) and to servers (Query, Parse, Close, Sync, password exchanges).

use bytes::{BufMut, BytesMut};

use super::backend::TransactionStatus;
use super::frame::{begin, finish};
use super::frontend::Named;

/// Severity of an ErrorResponse; FATAL ends the session. A WARNING goes
/// out as a NoticeResponse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Warning,
    Error,
    Fatal,
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "WARNING",
            Severity::Error => "ERROR",
            Severity::Fatal => "FATAL",
        }
    }
}

/// `E`: an ErrorResponse, or for a warning `N`, a NoticeResponse, with
/// severity, SQLSTATE and message.
pub fn error_response(out: &mut BytesMut, severity: Severity, code: &str, message: &str) {
    let tag = if severity == Severity::Warning {
        b'N'
    } else {
        b'E'
    };
    let at = begin(out, tag);
    for (field, value) in [
        (b'S', severity.as_str()),
        (b'V', severity.as_str()),
        (b'C', code),
        (b'M', message),
    ] {
        out.put_u8(field);
        put_cstr(out, value.as_bytes());
    }
    out.put_u8(0);
    finish(out, at);
}

/// Append a NUL-terminated string. NULs inside `s` would end it early, so they
/// are dropped (every caller passes text that should not contain any).
pub fn put_cstr(out: &mut BytesMut, s: &[u8]) {
    if s.contains(&0) {
        out.extend(s.iter().copied().filter(|&b| b != 0));
    } else {
        out.put_slice(s);
    }
    out.put_u8(0);
}

/// `N`: a NoticeResponse of severity NOTICE (SQLSTATE 00000) with a
/// message and a detail, as PgBouncer's `SHOW HELP` sends its usage.
pub fn notice(out: &mut BytesMut, message: &str, detail: &str) {
    let at = begin(out, b'N');
    for (field, value) in [
        (b'S', "NOTICE"),
        (b'V', "NOTICE"),
        (b'C', "00000"),
        (b'M', message),
        (b'D', detail),
    ] {
        out.put_u8(field);
        put_cstr(out, value.as_bytes());
    }
    out.put_u8(0);
    finish(out, at);
}

/// `R`: an authentication request (`code`: 0 ok, 3 cleartext, 5 MD5, 10 SASL,
/// 11 SASL continue, 12 SASL final) with its payload.
pub fn authentication(out: &mut BytesMut, code: u32, payload: &[u8]) {
    let at = begin(out, b'R');
    out.put_u32(code);
    out.put_slice(payload);
    finish(out, at);
}

/// `S`: ParameterStatus.
pub fn parameter_status(out: &mut BytesMut, name: &str, value: &str) {
    let at = begin(out, b'S');
    put_cstr(out, name.as_bytes());
    put_cstr(out, value.as_bytes());
    finish(out, at);
}

/// `K`: BackendKeyData, the key a client cancels its queries with.
pub fn backend_key_data(out: &mut BytesMut, process_id: u32, secret: u32) {
    let at = begin(out, b'K');
    out.put_u32(process_id);
    out.put_u32(secret);
    finish(out, at);
}

/// `v`: NegotiateProtocolVersion: the newest minor version we speak and the
/// protocol options (`_pq_.*`) we did not recognise.
pub fn negotiate_protocol_version(out: &mut BytesMut, minor: u32, unrecognised: &[&str]) {
    let at = begin(out, b'v');
    out.put_u32((3 << 16) | minor);
    out.put_u32(unrecognised.len() as u32);
    for option in unrecognised {
        put_cstr(out, option.as_bytes());
    }
    finish(out, at);
}

/// `Z`: ReadyForQuery with a transaction status.
pub fn ready_for_query(out: &mut BytesMut, status: TransactionStatus) {
    out.put_slice(&[b'Z', 0, 0, 0, 5, status.byte()]);
}

/// `C`: CommandComplete with `tag` (e.g. `SELECT 3`).
pub fn command_complete(out: &mut BytesMut, tag: &str) {
    let at = begin(out, b'C');
    put_cstr(out, tag.as_bytes());
    finish(out, at);
}

/// `1` ParseComplete.
pub fn parse_complete(out: &mut BytesMut) {
    out.put_slice(&[b'1', 0, 0, 0, 4]);
}

/// `2` BindComplete.
pub fn bind_complete(out: &mut BytesMut) {
    out.put_slice(&[b'2', 0, 0, 0, 4]);
}

/// `n` NoData.
pub fn no_data(out: &mut BytesMut) {
    out.put_slice(&[b'n', 0, 0, 0, 4]);
}

/// `3` CloseComplete.
pub fn close_complete(out: &mut BytesMut) {
    out.put_slice(&[b'3', 0, 0, 0, 4]);
}

/// `I` EmptyQueryResponse.
pub fn empty_query_response(out: &mut BytesMut) {
    out.put_slice(&[b'I', 0, 0, 0, 4]);
}

/// `T`: RowDescription of text columns (type `text`, OID 25), as the admin
/// console returns them.
pub fn row_description(out: &mut BytesMut, columns: &[&str]) {
    let at = begin(out, b'T');
    out.put_u16(columns.len() as u16);
    for name in columns {
        put_cstr(out, name.as_bytes());
        out.put_u32(0); // table OID
        out.put_u16(0); // column number
        out.put_u32(25); // type OID: text
        out.put_i16(-1); // type size: variable
        out.put_i32(-1); // type modifier
        out.put_u16(0); // format: text
    }
    finish(out, at);
}

/// `D`: DataRow of text values (`None` is NULL).
pub fn data_row(out: &mut BytesMut, values: &[Option<&str>]) {
    let at = begin(out, b'D');
    out.put_u16(values.len() as u16);
    for value in values {
        match value {
            Some(v) => {
                out.put_u32(v.len() as u32);
                out.put_slice(v.as_bytes());
            }
            None => out.put_i32(-1),
        }
    }
    finish(out, at);
}

/// `Q`: a simple-protocol query (frontend).
pub fn query(out: &mut BytesMut, sql: &str) {
    let at = begin(out, b'Q');
    put_cstr(out, sql.as_bytes());
    finish(out, at);
}

/// `Q`: a simple query whose text is `parts` one after the other.
pub fn query_parts(out: &mut BytesMut, parts: &[&str]) {
    let at = begin(out, b'Q');
    for part in parts {
        out.extend_from_slice(part.as_bytes());
    }
    out.put_u8(0);
    finish(out, at);
}

/// `P`: Parse of a named statement (frontend).
pub fn parse(out: &mut BytesMut, name: &[u8], sql: &[u8], param_types: &[u32]) {
    let at = begin(out, b'P');
    put_cstr(out, name);
    put_cstr(out, sql);
    out.put_u16(param_types.len() as u16);
    for oid in param_types {
        out.put_u32(*oid);
    }
    finish(out, at);
}

/// `B`: Bind of `statement` into `portal` (frontend), from a decoded Bind.
pub fn bind(
    out: &mut BytesMut,
    bind: &super::frontend::Bind,
    statement: &[u8],
    result_formats: &[i16],
) {
    let at = begin(out, b'B');
    put_cstr(out, &bind.portal);
    put_cstr(out, statement);
    out.put_u16(bind.param_formats.len() as u16);
    for format in &bind.param_formats {
        out.put_i16(*format);
    }
    out.put_u16(bind.params.len() as u16);
    for param in &bind.params {
        match param {
            None => out.put_i32(-1),
            Some(value) => {
                out.put_i32(value.len() as i32);
                out.put_slice(value);
            }
        }
    }
    out.put_u16(result_formats.len() as u16);
    for format in result_formats {
        out.put_i16(*format);
    }
    finish(out, at);
}

/// `B`: a part of the client's Bind `bind` (whose values, in order, are
/// `values`): `statement` bound into `portal` with only the values at
/// `indexes` (the client's 0-based parameter indexes, in the part's
/// order), each with its own format code when the client sent one per
/// value, and the client's result format codes.
pub fn bind_part(
    out: &mut BytesMut,
    (bind, values): (&super::frontend::BindView<'_>, &[Option<&[u8]>]),
    portal: &[u8],
    statement: &[u8],
    indexes: &[usize],
) {
    let at = begin(out, b'B');
    put_cstr(out, portal);
    put_cstr(out, statement);
    match bind.param_format_count() {
        0 => out.put_u16(0),
        1 => {
            out.put_u16(1);
            out.put_i16(bind.param_format(0));
        }
        _ => {
            out.put_u16(indexes.len() as u16);
            for &i in indexes {
                out.put_i16(bind.param_format(i));
            }
        }
    }
    out.put_u16(indexes.len() as u16);
    for &i in indexes {
        match values.get(i).copied().flatten() {
            None => out.put_i32(-1),
            Some(value) => {
                out.put_i32(value.len() as i32);
                out.put_slice(value);
            }
        }
    }
    let results = bind.result_formats_raw();
    out.put_u16((results.len() / 2) as u16);
    out.put_slice(results);
    finish(out, at);
}

/// `B`: Bind of `statement` into `portal` (frontend) with `values` (`None`
/// is NULL), their format codes and the result format codes.
pub fn bind_values(
    out: &mut BytesMut,
    (portal, statement): (&[u8], &[u8]),
    formats: &[i16],
    values: &[Option<&[u8]>],
    results: &[i16],
) {
    let at = begin(out, b'B');
    put_cstr(out, portal);
    put_cstr(out, statement);
    out.put_u16(formats.len() as u16);
    for format in formats {
        out.put_i16(*format);
    }
    out.put_u16(values.len() as u16);
    for value in values {
        match value {
            None => out.put_i32(-1),
            Some(value) => {
                out.put_i32(value.len() as i32);
                out.put_slice(value);
            }
        }
    }
    out.put_u16(results.len() as u16);
    for format in results {
        out.put_i16(*format);
    }
    finish(out, at);
}

/// `D`: Describe of a statement or portal (frontend).
pub fn describe(out: &mut BytesMut, kind: Named, name: &[u8]) {
    let at = begin(out, b'D');
    out.put_u8(kind.byte());
    put_cstr(out, name);
    finish(out, at);
}

/// `E`: Execute of `portal`, every row (frontend).
pub fn execute(out: &mut BytesMut, portal: &[u8]) {
    let at = begin(out, b'E');
    put_cstr(out, portal);
    out.put_i32(0);
    finish(out, at);
}

/// `E`: Execute of `portal`, at most `max_rows` rows (0: every row)
/// (frontend).
pub fn execute_rows(out: &mut BytesMut, portal: &[u8], max_rows: i32) {
    let at = begin(out, b'E');
    put_cstr(out, portal);
    out.put_i32(max_rows);
    finish(out, at);
}

/// `s`: PortalSuspended, the row limit of an Execute reached.
pub fn portal_suspended(out: &mut BytesMut) {
    let at = begin(out, b's');
    finish(out, at);
}

/// `C`: Close of a statement or portal (frontend).
pub fn close(out: &mut BytesMut, kind: Named, name: &[u8]) {
    let at = begin(out, b'C');
    out.put_u8(kind.byte());
    put_cstr(out, name);
    finish(out, at);
}

/// `H`: CopyOutResponse of `columns` columns, all in text or all in
/// binary.
pub fn copy_out_response(out: &mut BytesMut, binary: bool, columns: usize) {
    let at = begin(out, b'H');
    out.put_u8(u8::from(binary));
    out.put_u16(columns as u16);
    for _ in 0..columns {
        out.put_u16(u16::from(binary));
    }
    finish(out, at);
}

/// `d`: CopyData with `data`.
pub fn copy_data(out: &mut BytesMut, data: &[u8]) {
    let at = begin(out, b'd');
    out.extend_from_slice(data);
    finish(out, at);
}

/// CopyDone.
pub fn copy_done(out: &mut BytesMut) {
    let at = begin(out, b'c');
    finish(out, at);
}

/// CopyFail with `reason`.
pub fn copy_fail(out: &mut BytesMut, reason: &str) {
    let at = begin(out, b'f');
    put_cstr(out, reason.as_bytes());
    finish(out, at);
}

/// `H` Flush (frontend): the server sends what it has, without ending the
/// implicit transaction as Sync would.
pub fn flush(out: &mut BytesMut) {
    out.put_slice(&[b'H', 0, 0, 0, 4]);
}

/// `S`: Sync (frontend).
pub fn sync(out: &mut BytesMut) {
    out.put_slice(&[b'S', 0, 0, 0, 4]);
}

/// `X`: Terminate (frontend).
pub fn terminate(out: &mut BytesMut) {
    out.put_slice(&[b'X', 0, 0, 0, 4]);
}

/// `p`: PasswordMessage, SASLInitialResponse or SASLResponse (frontend); the
/// payload is already laid out for the exchange in progress.
pub fn password(out: &mut BytesMut, payload: &[u8]) {
    let at = begin(out, b'p');
    out.put_slice(payload);
    finish(out, at);
}

/// `p` as SASLInitialResponse: mechanism name, then the length-prefixed data.
pub fn sasl_initial_response(out: &mut BytesMut, mechanism: &str, data: &[u8]) {
    let at = begin(out, b'p');
    put_cstr(out, mechanism.as_bytes());
    out.put_u32(data.len() as u32);
    out.put_slice(data);
    finish(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_round_trips_through_the_decoder() {
        use super::super::frontend::{decode_frontend_frame, Bind, FrontendMessage};
        use bytes::Bytes;
        let bind = Bind {
            portal: Bytes::from_static(b"p"),
            statement: Bytes::from_static(b"s"),
            param_formats: vec![0, 1],
            params: vec![Some(Bytes::from_static(b"42")), None],
            result_formats: vec![1, 0],
        };
        let mut out = BytesMut::new();
        super::bind(&mut out, &bind, b"__pgshard_7", &[1, 0, 0]);
        let frame = decode_frontend_frame(&mut out, 1 << 20).unwrap().unwrap();
        let Ok(FrontendMessage::Bind(decoded)) = FrontendMessage::decode(&frame) else {
            panic!("not a Bind");
        };
        assert_eq!(decoded.statement, Bytes::from_static(b"__pgshard_7"));
        assert_eq!((decoded.portal, decoded.params), (bind.portal, bind.params));
        assert_eq!(decoded.result_formats, vec![1, 0, 0]);
    }

    #[test]
    fn a_part_of_a_bind_takes_its_values_and_their_formats() {
        use super::super::frontend::{decode_frontend_frame, Bind, FrontendMessage};
        use bytes::Bytes;
        let value = |v: &'static [u8]| Some(Bytes::from_static(v));
        let decode = |mut out: BytesMut| {
            let frame = decode_frontend_frame(&mut out, 1 << 20).unwrap().unwrap();
            let Ok(FrontendMessage::Bind(decoded)) = FrontendMessage::decode(&frame) else {
                panic!("not a Bind");
            };
            decoded
        };
        for (formats, picked) in [
            (vec![], vec![]),
            (vec![1], vec![1]),
            (vec![0, 1, 1, 0], vec![0, 1]),
        ] {
            let bind = Bind {
                portal: Bytes::from_static(b"p"),
                statement: Bytes::from_static(b"s"),
                param_formats: formats,
                params: vec![value(b"a"), None, value(b"c"), value(b"d")],
                result_formats: vec![1],
            };
            let mut whole = BytesMut::new();
            super::bind(&mut whole, &bind, &bind.statement, &bind.result_formats);
            let frame = decode_frontend_frame(&mut whole, 1 << 20).unwrap().unwrap();
            let view = super::super::frontend::BindView::of(&frame).unwrap();
            let values: Vec<Option<&[u8]>> = view.values().map(|(_, v)| v).collect();
            let mut out = BytesMut::new();
            super::bind_part(
                &mut out,
                (&view, &values),
                &bind.portal,
                b"__pgshard_3",
                &[3, 1],
            );
            let decoded = decode(out);
            assert_eq!(decoded.statement, Bytes::from_static(b"__pgshard_3"));
            assert_eq!(decoded.portal, bind.portal);
            assert_eq!(decoded.params, vec![value(b"d"), None]);
            assert_eq!(decoded.param_formats, picked);
            assert_eq!(decoded.result_formats, vec![1]);
        }
    }

    #[test]
    fn error_response_layout() {
        let mut out = BytesMut::new();
        error_response(&mut out, Severity::Fatal, "3D000", "no db");
        assert_eq!(
            &out[..],
            b"E\x00\x00\x00\x21SFATAL\x00VFATAL\x00C3D000\x00Mno db\x00\x00"
        );
    }

    #[test]
    fn fixed_layouts() {
        let mut out = BytesMut::new();
        ready_for_query(&mut out, TransactionStatus::InBlock);
        command_complete(&mut out, "SET");
        parameter_status(&mut out, "TimeZone", "UTC");
        backend_key_data(&mut out, 7, 9);
        assert_eq!(
            &out[..],
            b"Z\0\0\0\x05TC\0\0\0\x08SET\0S\0\0\0\x11TimeZone\0UTC\0K\0\0\0\x0c\0\0\0\x07\0\0\0\x09"
        );
    }

    #[test]
    fn rows() {
        let mut out = BytesMut::new();
        data_row(&mut out, &[Some("ab"), None]);
        assert_eq!(&out[..], b"D\0\0\0\x10\0\x02\0\0\0\x02ab\xff\xff\xff\xff");
        let mut out = BytesMut::new();
        row_description(&mut out, &["x"]);
        assert_eq!(out.len(), 1 + 4 + 2 + 2 + 18);
    }

    #[test]
    fn nul_inside_strings_is_dropped() {
        let mut out = BytesMut::new();
        query(&mut out, "SELECT\u{0} 1");
        assert_eq!(&out[..], b"Q\0\0\0\x0dSELECT 1\0");
    }
}
