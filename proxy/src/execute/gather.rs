//! Finishing a cross-shard SELECT on the coordinator (issue 34), below the
//! session: the gathered rows re-framed for the coordinator's
//! `COPY ... FROM STDIN (FORMAT binary)` and counted against
//! `cross_shard_gather_limit` (`gather/sink.rs`), and the finish's replies
//! made the client's (`gather/finish.rs`). The session (`session/gather.rs`)
//! drives them.

pub mod finish;
pub mod sink;
