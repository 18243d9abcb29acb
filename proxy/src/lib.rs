//! pgshard's proxy: wire protocol, connections, pools, cross-shard
//! execution, client sessions, the admin console and the listener
//! (ARCHITECTURE.md's layer table says which may use which).
//!
//! The binary (`main.rs`) reads config files and signals; everything else lives
//! here so integration tests can run the proxy in-process on `127.0.0.1:0`.

#![forbid(unsafe_code)]

pub mod admin;
pub mod auth;
pub mod catalog_epoch;
pub mod config_files;
pub mod conn;
pub mod errors;
pub mod execute;
pub mod id_hash;
pub mod interrupt;
pub mod listener;
pub mod lock;
pub mod logging;
pub mod metrics;
pub mod node_lock;
pub mod openmetrics;
pub mod pool;
pub mod protocol;
pub mod pubsub;
pub mod reshard;
pub mod schema;
pub mod session;
pub mod state;
pub mod unique_ids;
pub mod workers;
