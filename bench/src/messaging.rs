//! The end-to-end messaging bench (DESIGN.md §5): Postgres as a Kafka-like
//! log and as a job queue, measured directly, through pgshard, and through
//! pgshard over 2 and 4 shard servers, in one run.
//!
//! - `options`: the flags and their defaults; `cluster`: the servers and
//!   pgshard a target needs (or an external endpoint); `schema`: the tables.
//! - `message`: the payload format (a header carrying its creation time);
//!   `pubsub` and `queue`: the client tasks of each workload.
//! - `stats`: live counters, latency histograms, the progress line; `cpu`:
//!   CPU time read from `/proc`; `check`: gapless/ordered and queue
//!   accounting checks; `report`: results, tables and JSON; `plot`: the
//!   chart (SVG); `run`: one run
//!   over every target.

pub mod check;
pub mod cluster;
pub mod cpu;
pub mod message;
pub mod options;
pub mod plot;
pub mod pubsub;
pub mod queue;
pub mod report;
pub mod run;
pub mod schema;
pub mod stats;

pub use options::{Options, Target, Workload, WorkloadChoice};
pub use report::Report;
pub use run::run_all;
