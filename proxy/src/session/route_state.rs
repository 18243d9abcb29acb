//! What routing keeps between statements: the shard of the main attached
//! server, what the statement being placed does (may it run on a replica,
//! may it write), `SET pgdog.shard`/`pgdog.sharding_key`, the templated
//! cache entries of the last simple queries, and what the session's own
//! schema changes mean for routing.

use std::sync::Arc;

use router::cache::Entry;
use router::route::Overrides;

use super::behind::OwnSchema;

/// A session's routing state.
#[derive(Default)]
pub(super) struct RouteState {
    /// The shard of the main attached server, or of the last one.
    pub(super) shard: usize,
    /// The statement being placed may run on a replica (`read_split.rs`).
    pub(super) read: bool,
    /// The statement being routed may write: inside a transaction pgshard
    /// opened, its shard must commit with the others.
    pub(super) writes: bool,
    /// `SET pgdog.shard` / `SET pgdog.sharding_key`.
    pub(super) overrides: Overrides,
    /// The templated cache entries of the last simple queries, most recent
    /// first (`routing.rs`, `Session::lookup`).
    pub(super) recent: Vec<Arc<Entry>>,
    /// The AST cache's clear count when `recent` was filled.
    pub(super) recent_clears: u64,
    /// What the session's own schema changes mean for routing (`behind.rs`).
    pub(super) own_schema: OwnSchema,
}
