//! pgshard's proxy: wire protocol, client sessions and the accept loop.
//!
//! The binary (`main.rs`) reads config files and signals; everything else lives
//! here so integration tests can run the proxy in-process on `127.0.0.1:0`.

#![forbid(unsafe_code)]

pub mod config_files;
pub mod passthrough;
pub mod protocol;
pub mod server;
