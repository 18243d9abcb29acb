//! What the benches share: the query sets (so every bench measures the same
//! statements) and the reference walk over the zero-copy tree.

#![forbid(unsafe_code)]

pub mod messaging;
mod queries;
pub mod route_set;
pub mod soak;
pub mod timing;
pub mod walk;

pub use queries::{class_queries, orm_query, parser_queries};

/// The allocator pgshard's binary uses, so benches measure what ships. Every
/// variant in a bench runs under the same allocator.
pub type Allocator = parser_ffi::Allocator;

/// parser-ffi's statement corpus loader, for the walk's tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "../../parser-ffi/tests/shared/corpus.rs"]
mod shared_corpus;
