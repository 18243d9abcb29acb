//! Errors pgshard itself reports to a client: a SQLSTATE, a message safe to
//! show (no internal addresses, no secrets: the details go to pgshard's log),
//! and whether the client may safely retry the statement.

use std::borrow::Cow;

use bytes::BytesMut;

use crate::protocol::messages::{error_response, Severity};
use crate::protocol::sqlstate;

/// Whether retrying the statement that got the error is safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Nothing of the statement ran (no server could be had, pgshard refused
    /// it before sending it): the same statement may be sent again.
    Safe,
    /// It may have run, in part or in whole, or will fail the same way.
    Unsafe,
}

/// An error for the client, built by pgshard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientError {
    pub code: Cow<'static, str>,
    pub message: String,
    pub retry: Retry,
}

impl ClientError {
    /// An error that retrying would not fix (a refused statement, a bad
    /// value).
    pub fn new(code: &'static str, message: impl Into<String>) -> ClientError {
        ClientError {
            code: Cow::Borrowed(code),
            message: message.into(),
            retry: Retry::Unsafe,
        }
    }

    /// A server's error passed on with its own SQLSTATE (`code`), the
    /// message saying where it came from.
    pub fn from_server(code: &str, message: impl Into<String>) -> ClientError {
        let code = match code.len() {
            5 => code.to_owned(),
            _ => sqlstate::INTERNAL_ERROR.to_owned(),
        };
        ClientError {
            code: Cow::Owned(code),
            message: message.into(),
            retry: Retry::Unsafe,
        }
    }
    /// A shard's server went away while a statement ran on several shards:
    /// what ran elsewhere may have happened.
    /// The same error, safe to retry: nothing ran.
    pub fn retry_safe(mut self) -> ClientError {
        self.retry = Retry::Safe;
        self
    }

    pub fn shard_lost() -> ClientError {
        ClientError::new(
            sqlstate::CONNECTION_FAILURE,
            "a shard's server closed the connection during a cross-shard statement",
        )
    }

    /// Append it as an ErrorResponse.
    pub fn encode(&self, out: &mut BytesMut) {
        error_response(out, Severity::Error, &self.code, &self.message);
    }

    /// Append it as a FATAL ErrorResponse: the connection ends after it.
    pub fn encode_fatal(&self, out: &mut BytesMut) {
        error_response(out, Severity::Fatal, &self.code, &self.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_an_error_response() {
        let mut out = BytesMut::new();
        ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, "no").encode(&mut out);
        assert_eq!(out[0], b'E');
        assert_eq!(
            crate::protocol::backend::ErrorFields(&out[5..]).code(),
            Some(&b"0A000"[..])
        );
    }
}
