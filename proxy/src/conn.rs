//! Connections: the only code that touches sockets. A client's
//! ([`client::ClientConn`]: TLS, the login exchange, its messages) and a
//! server's ([`server::ServerConn`]: connecting, logging in, its messages),
//! what a server connection has applied of a client's settings
//! (`settings.rs`), cancel requests (`cancel.rs`), idle clients' spare
//! buffers (`spare.rs`), and which worker
//! thread's reactor runs a socket (`worker.rs`).

pub mod cancel;
pub mod client;
pub mod server;
pub mod settings;
pub mod spare;
pub mod tls;
pub mod worker;
