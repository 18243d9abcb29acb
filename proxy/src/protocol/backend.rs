//! ErrorResponse, and the SQLSTATE codes pgshard sends on its own behalf.

use bytes::{BufMut, BytesMut};

use super::messages;

/// SQLSTATE codes pgshard sends on its own behalf (Postgres `errcodes.txt`).
pub mod sqlstate {
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const CONNECTION_FAILURE: &str = "08006";
    pub const INVALID_AUTHORIZATION: &str = "28000";
    pub const INVALID_CATALOG_NAME: &str = "3D000";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const INVALID_PASSWORD: &str = "28P01";
    pub const TOO_MANY_CONNECTIONS: &str = "53300";
    pub const ADMIN_SHUTDOWN: &str = "57P01";
    pub const CANNOT_CONNECT_NOW: &str = "57P03";
    pub const DUPLICATE_PREPARED_STATEMENT: &str = "42P05";
    pub const CONFIG_FILE_ERROR: &str = "F0000";
    pub const SYNTAX_ERROR: &str = "42601";
    pub const INTERNAL_ERROR: &str = "XX000";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const IN_FAILED_TRANSACTION: &str = "25P02";
    pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
    pub const INVALID_CURSOR_NAME: &str = "34000";
}

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

/// Append an ErrorResponse (`E`), or for a warning a NoticeResponse (`N`),
/// with severity, SQLSTATE and message to `out`.
pub fn error_response(out: &mut BytesMut, severity: Severity, code: &str, message: &str) {
    let tag = if severity == Severity::Warning {
        b'N'
    } else {
        b'E'
    };
    let at = messages::begin(out, tag);
    for (field, value) in [
        (b'S', severity.as_str()),
        (b'V', severity.as_str()),
        (b'C', code),
        (b'M', message),
    ] {
        out.put_u8(field);
        messages::put_cstr(out, value.as_bytes());
    }
    out.put_u8(0);
    messages::finish(out, at);
}

/// The SQLSTATE (field `C`) of an ErrorResponse or NoticeResponse body;
/// `None` when the body has none or is malformed.
pub fn error_code(body: &[u8]) -> Option<&[u8]> {
    let mut rest = body;
    while let Some((&field, tail)) = rest.split_first() {
        if field == 0 {
            return None;
        }
        let end = tail.iter().position(|&b| b == 0)?;
        if field == b'C' {
            return Some(&tail[..end]);
        }
        rest = &tail[end + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn error_code_is_read_from_its_field() {
        let mut out = BytesMut::new();
        error_response(&mut out, Severity::Error, "0A000", "cached plan");
        assert_eq!(error_code(&out[5..]), Some(&b"0A000"[..]));
        assert_eq!(error_code(b"SERROR\0Mno code\0\0"), None);
        assert_eq!(error_code(b"SERROR\0Cunterminated"), None);
        assert_eq!(error_code(b""), None);
    }
}
