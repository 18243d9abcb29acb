//! pgshard's proxy: wire protocol, client sessions, pools, admin console and
//! the accept loop.
//!
//! The binary (`main.rs`) reads config files and signals; everything else lives
//! here so integration tests can run the proxy in-process on `127.0.0.1:0`.

#![forbid(unsafe_code)]

pub mod admin;
pub mod auth;
pub mod balancer;
pub mod catalog_epoch;
pub mod client;
pub mod config_files;
pub mod conn;
pub mod errors;
pub mod execute;
pub mod id_hash;
pub mod interrupt;
pub mod lock;
pub mod logging;
pub mod metrics;
pub mod pool;
pub mod protocol;
pub mod schema;
pub mod server;
pub mod session;
pub mod state;
pub mod two_phase;
pub mod workers;
