//! The Postgres wire protocol (v3) codec: pure functions over byte buffers.
//!
//! Architecture invariant: this module imports `std` and `bytes`, never tokio.
//! Decoders take a `&mut BytesMut` and return `Ok(Some(msg))`, `Ok(None)` when
//! more bytes are needed, or a typed error.

pub mod backend;
pub mod binary;
pub mod frame;
pub mod frontend;
pub mod messages;
pub mod rows;
pub mod sqlstate;
pub mod startup;
