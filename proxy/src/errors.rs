//! Errors pgshard itself reports to a client: a SQLSTATE, a message safe to
//! show (no internal addresses, no secrets: the details go to pgshard's log),
//! and whether the client may safely retry the statement.

use std::borrow::Cow;

use bytes::BytesMut;
use tracing::warn;

use crate::pool::PoolError;
use crate::protocol::messages::{error_response, Severity};
use crate::protocol::sqlstate;
use crate::server_conn::ServerError;

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

    /// No server of `shard` could be had for this client. The message says
    /// which limit or failure without naming hosts or ports; the full error
    /// goes to the log.
    pub fn from_pool(err: &PoolError, cluster: &str, shard: usize) -> ClientError {
        let (code, message) = match err {
            PoolError::Timeout(_) => (sqlstate::TOO_MANY_CONNECTIONS, err.to_string()),
            PoolError::Closed => (
                sqlstate::ADMIN_SHUTDOWN,
                "pgshard is shutting down or reloading this pool".to_owned(),
            ),
            PoolError::Server(server) => {
                warn!(%server, %cluster, shard, "no server connection for a client");
                let why = match server {
                    ServerError::Connect(..) | ServerError::ConnectTimeout(_) => {
                        "cannot connect to it".to_owned()
                    }
                    // Postgres's own words (which user, which setting): no
                    // address, no password.
                    ServerError::Refused(refusal) => format!("it refused: {refusal}"),
                    ServerError::NoPassword(_)
                    | ServerError::UnsupportedAuth(_)
                    | ServerError::Auth(_) => "pgshard cannot log in to it".to_owned(),
                    ServerError::Io(_) | ServerError::Closed | ServerError::Protocol(_) => {
                        "the connection to it failed".to_owned()
                    }
                };
                (
                    sqlstate::CONNECTION_FAILURE,
                    format!("no server connection for database \"{cluster}\" shard {shard}: {why} (details in pgshard's log)"),
                )
            }
        };
        ClientError {
            code: Cow::Borrowed(code),
            message,
            retry: Retry::Safe,
        }
    }

    /// A shard's server went away while a statement ran on several shards:
    /// what ran elsewhere may have happened.
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
    use std::time::Duration;

    #[test]
    fn pool_errors_name_no_address() {
        let connect = PoolError::Server(ServerError::Connect(
            "10.1.2.3:5432".into(),
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        ));
        let error = ClientError::from_pool(&connect, "prod", 1);
        assert_eq!(error.code, sqlstate::CONNECTION_FAILURE);
        assert_eq!(error.retry, Retry::Safe);
        assert!(!error.message.contains("10.1.2.3"), "{}", error.message);
        assert!(error.message.contains("shard 1"), "{}", error.message);
        let timeout =
            ClientError::from_pool(&PoolError::Timeout(Duration::from_secs(5)), "prod", 0);
        assert_eq!(timeout.code, sqlstate::TOO_MANY_CONNECTIONS);
        assert!(timeout.message.contains("checkout_timeout"));
    }

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
