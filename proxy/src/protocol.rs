//! The Postgres wire protocol (v3) codec: pure functions over byte buffers.
//!
//! Architecture invariant: this module uses `std`, `bytes` and `thiserror`
//! (its error types) only: no tokio, no I/O, nothing above it in the crate.
//! Decoders take a `&mut BytesMut` and return `Ok(Some(msg))`, `Ok(None)` when
//! more bytes are needed, or a typed error.

pub mod backend;
pub mod binary;
pub mod copy_shape;
pub mod frame;
pub mod frontend;
pub mod messages;
pub mod ready;
pub mod rows;
pub mod sqlstate;
pub mod startup;

#[cfg(test)]
#[path = "../../router/tests/support/fuzz.rs"]
pub(crate) mod fuzz;
#[cfg(test)]
mod fuzz_tests;
