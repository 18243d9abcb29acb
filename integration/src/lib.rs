//! The test harness: real Postgres servers and an in-process pgshard, for the
//! integration tests, the benches and the demo.
//!
//! Servers run as the `postgres` user when the process is root (Postgres refuses
//! root), each in its own temp dir on a free port on 127.0.0.1, and are stopped
//! and removed when dropped, also when a test panics.

#![forbid(unsafe_code)]

pub mod binaries;
pub mod driver_cluster;
pub mod postgres_server;
pub mod test_proxy;

pub use binaries::PgBinaries;
pub use postgres_server::{HostAuth, PasswordEncryption, PgServer, ServerOptions};
pub use test_proxy::TestProxy;

/// Why the harness could not do what a test asked.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// Something is missing or misconfigured on this machine; says how to fix it.
    #[error("{0}")]
    Setup(String),
    /// A program exited with an error.
    #[error("{what} failed ({status}):\n{output}")]
    Command {
        what: String,
        status: String,
        output: String,
    },
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}
