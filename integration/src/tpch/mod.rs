//! TPC-H for tests and benches (issue 34): our own seeded data generator
//! following the spec's domains ([`generate`]), the schema and the two
//! sharded layouts ([`schema`]), and the 22 queries with their validation
//! parameters in Postgres syntax ([`queries`]).
//!
//! No third-party TPC-H code: the generator is written from the spec's
//! column domains (TPC-H 3.0, clause 4.2.3), not from dbgen, so its rows
//! are not dbgen's and the answers are not the spec's published ones; they
//! are compared with one reference Postgres holding every row.

pub mod generate;
pub mod queries;
pub mod schema;
pub mod text;

pub use generate::{generate, Data};
pub use queries::{queries, Query};
pub use schema::{Layout, TABLES};
