//! The test harness: real Postgres servers and an in-process pgshard, for the
//! integration tests, the benches and the demo.
//!
//! Servers run as the `postgres` user when the process is root (Postgres refuses
//! root), each in its own temp dir on a free port on 127.0.0.1, and are stopped
//! and removed when dropped, also when a test panics.

#![forbid(unsafe_code)]

pub mod binaries;
pub mod child_proxy;
pub mod driver_cluster;
pub mod fault_relay;
pub mod postgres_server;
pub mod test_proxy;
pub mod tpch;
pub mod workload;

pub use binaries::PgBinaries;
pub use child_proxy::ChildProxy;
pub use fault_relay::{Direction, Fault, FaultRelay};
pub use postgres_server::{HostAuth, PasswordEncryption, PgServer, ServerOptions};
pub use test_proxy::TestProxy;

/// Why the harness could not do what a test asked.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The PostgreSQL server programs are not installed.
    #[error("PostgreSQL server binaries (initdb, pg_ctl, postgres, psql) not found in {searched}; {hint}", hint = binaries::INSTALL_HINT)]
    NoBinaries { searched: String },
    /// Root must run the server as `postgres`, which does not exist.
    #[error("running as root, but there is no `postgres` user to run the server as; {hint}", hint = binaries::INSTALL_HINT)]
    RootWithoutPostgres,
    #[error("no `postgres` user")]
    NoPostgresUser,
    #[error("{error}\n--- server.log ---\n{log}")]
    ServerStart {
        error: Box<HarnessError>,
        log: String,
    },
    #[error("server start panicked")]
    StartPanicked,
    #[error("replica on port {port} did not replay up to {lsn} in 30 s")]
    ReplayTimeout { port: u16, lsn: String },
    #[error("no pid in {}", .0.display())]
    NoPid(std::path::PathBuf),
    #[error("kill -9 {pid}: {error}")]
    Kill {
        pid: nix::unistd::Pid,
        error: nix::Error,
    },
    #[error("postmaster {0} survived SIGKILL")]
    SurvivedKill(nix::unistd::Pid),
    #[error("config: {0}")]
    Config(#[from] router::config::ConfigError),
    #[error("this proxy has no config files")]
    NoConfigFiles,
    #[error("pgshard refused to start: {0}")]
    ProxyRefused(String),
    #[error("the test proxy's thread ended")]
    ProxyThreadEnded,
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
