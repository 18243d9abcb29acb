//! Why no server connection could be had, and what that tells a client:
//! which limit or failure, never which host or port (the details go to
//! the log).

use std::time::Duration;

use tracing::warn;

use crate::conn::server::ServerError;
use crate::errors::ClientError;
use crate::protocol::sqlstate;

/// Why no server connection could be had.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("timed out after {0:?} waiting for a server connection (checkout_timeout)")]
    Timeout(Duration),
    #[error("the pool was shut down")]
    Closed,
    /// An `auto` shard had no primary that could be reached for `waited`
    /// (`checkout_timeout`); `unreachable`: one was named but its server
    /// could not be reached.
    #[error("no primary within {waited:?} (checkout_timeout)")]
    NoPrimary { waited: Duration, unreachable: bool },
    #[error(transparent)]
    Server(#[from] ServerError),
}

impl PoolError {
    /// No server of `shard` could be had for this client. The message says
    /// which limit or failure without naming hosts or ports; the full error
    /// goes to the log.
    pub fn client_error(&self, cluster: &str, shard: usize) -> ClientError {
        let (code, message) = match self {
            PoolError::Timeout(_) => (sqlstate::TOO_MANY_CONNECTIONS, self.to_string()),
            PoolError::Closed => (
                sqlstate::ADMIN_SHUTDOWN,
                "pgshard is shutting down or reloading this pool".to_owned(),
            ),
            PoolError::NoPrimary {
                waited,
                unreachable,
            } => {
                let why = if *unreachable {
                    "its primary cannot be reached"
                } else {
                    "none of its servers is a primary that answers (pg_is_in_recovery() false)"
                };
                (
                    sqlstate::CANNOT_CONNECT_NOW,
                    format!("no primary for database \"{cluster}\" shard {shard}: {why}; waited {} ms (checkout_timeout) for one, and sent nothing: try again once a primary is up (the admin console's SHOW REPLICATION shows what each server is)", waited.as_millis()),
                )
            }
            PoolError::Server(server) => {
                warn!(%server, %cluster, shard, "no server connection for a client");
                let why = match server {
                    ServerError::Connect(..) | ServerError::ConnectTimeout(_) => {
                        "cannot connect to it".to_owned()
                    }
                    // Postgres's own words (which user, which setting): no
                    // address, no password.
                    ServerError::Refused { message, .. } => format!("it refused: {message}"),
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
        ClientError::new(code, message).retry_safe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_errors_name_no_address() {
        let connect = PoolError::Server(ServerError::Connect(
            "10.1.2.3:5432".into(),
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        ));
        let error = connect.client_error("prod", 1);
        assert_eq!(error.code, sqlstate::CONNECTION_FAILURE);
        assert_eq!(error.retry, crate::errors::Retry::Safe);
        assert!(!error.message.contains("10.1.2.3"), "{}", error.message);
        assert!(error.message.contains("shard 1"), "{}", error.message);
        let timeout = PoolError::Timeout(Duration::from_secs(5)).client_error("prod", 0);
        assert_eq!(timeout.code, sqlstate::TOO_MANY_CONNECTIONS);
        assert!(timeout.message.contains("checkout_timeout"));
        let none = PoolError::NoPrimary {
            waited: Duration::from_millis(200),
            unreachable: false,
        }
        .client_error("prod", 0);
        assert_eq!(none.code, sqlstate::CANNOT_CONNECT_NOW);
        assert_eq!(none.retry, crate::errors::Retry::Safe);
        assert!(
            none.message.starts_with(
                "no primary for database \"prod\" shard 0: none of its servers is a primary"
            ),
            "{}",
            none.message
        );
    }
}
