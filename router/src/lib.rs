//! router: everything pgshard decides without touching a socket or a file.
//!
//! Architecture invariant: no I/O, no async, no globals. The proxy reads files and
//! sockets and hands this crate strings and bytes.

#![forbid(unsafe_code)]

pub mod config;
