//! What routing keeps between statements: the shard of the main attached
//! server, what the statement being placed does (may it run on a replica,
//! may it write), `SET pgdog.shard`/`pgdog.sharding_key`, the templated
//! cache entries of the last simple queries, the layout of the last split
//! literal INSERT, and what the session's own schema changes mean for
//! routing; and what the session is counted in for shard moves while it
//! routes (`holds.rs`'s `Counted`: taken when a statement is routed,
//! given back when the session is idle, so it is routing's to keep).
//!
//! "May run on a replica" and "may write" are independent facts of the
//! statement being placed (a SELECT that reads tables is both: it may call
//! a function that writes), asked at different times (the first when a
//! server is checked out for it, the second when it is placed on a held
//! server), so they are two private flags, each set when the statement is
//! judged and consumed when it is placed.

mod own_schema;

use std::sync::Arc;

use router::cache::{AstCache, Entry, Lookup, LookupError};
use router::route::Overrides;
use router::sharding::ParserEngine;
use router::split::LiteralLayout;

use super::holds::Counted;
use own_schema::OwnSchema;

/// How many templated statements a session remembers for
/// [`RouteState::lookup`]: a transaction's few statements, each tried in
/// turn (a mismatch costs a comparison of the first bytes that differ).
const RECENT_TEMPLATES: usize = 4;

/// A session's routing state.
#[derive(Default)]
pub(super) struct RouteState {
    /// The shard of the main attached server, or of the last one.
    shard: usize,
    /// The statement being placed may run on a replica (`read_split.rs`).
    replica_ok: bool,
    /// The statement being placed may write: inside a transaction pgshard
    /// opened, its shard must commit with the others.
    writes: bool,
    /// `SET pgdog.shard` / `SET pgdog.sharding_key`.
    overrides: Overrides,
    /// The templated cache entries of the last simple queries, most recent
    /// first ([`RouteState::lookup`]).
    recent: Vec<Arc<Entry>>,
    /// The AST cache's clear count when `recent` was filled.
    recent_clears: u64,
    /// What the session's own schema changes mean for routing (`behind.rs`).
    own_schema: OwnSchema,
    /// The layout of the last multi-row INSERT of literals split here: the
    /// next text of its template splits without a parse (`split_insert.rs`).
    split_layout: Option<LiteralLayout>,
    /// What the session is counted in for moves (`holds.rs`).
    pub(super) counted: Counted,
}

impl RouteState {
    /// The shard of the main attached server, or of the last one.
    pub(super) fn shard(&self) -> usize {
        self.shard
    }

    /// A server of `shard` became the main attached one.
    pub(super) fn attached_to(&mut self, shard: usize) {
        self.shard = shard;
    }

    /// The next statement was judged for the read/write split: whether it
    /// is a plain read a replica may serve.
    pub(super) fn judged_read(&mut self, plain_read: bool) {
        self.replica_ok = plain_read;
    }

    /// A replica may serve the statement being placed.
    pub(super) fn replica_ok(&self) -> bool {
        self.replica_ok
    }

    /// The statement being placed got its server(s): a replica may serve
    /// no later statement unless it is judged a read too.
    pub(super) fn read_placed(&mut self) {
        self.replica_ok = false;
    }

    /// A server is checked out for the statement being placed: whether a
    /// replica may serve it (asked once: [`RouteState::read_placed`]).
    pub(super) fn take_replica_ok(&mut self) -> bool {
        std::mem::take(&mut self.replica_ok)
    }

    /// A statement is being placed; `writes`: it may write (its summary,
    /// or its part of a segment, says so).
    pub(super) fn placing(&mut self, writes: bool) {
        self.writes = writes;
    }

    /// A statement that writes nothing is being placed (transaction
    /// control sent to every shard held, a cursor's DECLARE).
    pub(super) fn placing_no_write(&mut self) {
        self.writes = false;
    }

    /// A statement that writes is being placed (a COPY, a split INSERT, a
    /// row move).
    pub(super) fn placing_write(&mut self) {
        self.writes = true;
    }

    /// Its servers were held again: what is placed next says whether it
    /// writes.
    pub(super) fn placed(&mut self) {
        self.writes = false;
    }

    /// The statement being placed may write.
    pub(super) fn writes(&self) -> bool {
        self.writes
    }

    /// The statement was placed on the main server: whether it may write
    /// (asked once: what is placed next says it again).
    pub(super) fn take_writes(&mut self) -> bool {
        std::mem::take(&mut self.writes)
    }

    /// The layout of the last split literal INSERT.
    pub(super) fn split_layout(&self) -> Option<&LiteralLayout> {
        self.split_layout.as_ref()
    }

    /// Keep `layout` for the next split literal INSERT (in place of the
    /// last one).
    pub(super) fn keep_split_layout(&mut self, layout: LiteralLayout) {
        self.split_layout = Some(layout);
    }

    /// `SET pgdog.shard` / `SET pgdog.sharding_key` in force.
    pub(super) fn overrides(&self) -> &Overrides {
        &self.overrides
    }

    /// `SET pgdog.shard` (`None`: RESET).
    pub(super) fn shard_set(&mut self, shard: Option<usize>) {
        self.overrides.shard = shard;
    }

    /// `SET pgdog.sharding_key` (`None`: RESET).
    pub(super) fn sharding_key_set(&mut self, key: Option<String>) {
        self.overrides.sharding_key = key;
    }

    /// The transaction the overrides were set in ended: they end with it.
    pub(super) fn overrides_ended(&mut self) {
        self.overrides = Overrides::default();
    }

    /// The cache's entry for a simple query's text: first as a new text of
    /// one of the templated statements this session ran last (matched
    /// against their keys, without the shared map: `AstCache::lookup_like`),
    /// else from the shared map.
    pub(super) fn lookup(
        &mut self,
        cache: &AstCache,
        sql: &str,
        engine: ParserEngine,
    ) -> Result<Lookup, LookupError> {
        let clears = cache.clears();
        if clears != self.recent_clears {
            // RESET QUERY_CACHE: statements are parsed again.
            self.recent.clear();
            self.recent_clears = clears;
        }
        if let Some((at, found)) = cache.lookup_like(sql, engine, &self.recent) {
            self.recent[..=at].rotate_right(1);
            return Ok(found);
        }
        let found = cache.lookup(sql, engine)?;
        if found.entry.templated {
            self.recent.insert(0, Arc::clone(&found.entry));
            self.recent.truncate(RECENT_TEMPLATES);
        }
        Ok(found)
    }

    /// The config changed: the templated entries found by the old one are
    /// looked up again.
    pub(super) fn config_changed(&mut self) {
        self.recent.clear();
    }

    /// What the session's own schema changes mean for routing.
    pub(super) fn own_schema(&self) -> &OwnSchema {
        &self.own_schema
    }

    /// The same, to note a change or a catalog read (`behind.rs`).
    pub(super) fn own_schema_mut(&mut self) -> &mut OwnSchema {
        &mut self.own_schema
    }
}

#[cfg(test)]
mod tests;
