//! What a session knows of its cluster, refreshed together when the config
//! changes (`attach.rs`): the pools of its (cluster, user), the config
//! generation they came from, the cluster's freshness deadline (kept, so
//! routing reads it without a lookup), the pooler mode, the sharding model and
//! parser engine it routes by (overlaid by its transaction's own schema
//! changes: `behind.rs`), and how many prepared statements it may keep.
//! It changes only at a reload or when the session's own catalog reads
//! start or stop; the session reads it through the methods here.

use std::sync::Arc;

use router::config::PoolerMode;
use router::sharding::{ParserEngine, Sharding};

use crate::pool::balancer::ShardPools;
use crate::pool::clusters::freshness::Deadline;
use crate::pool::clusters::ClusterPools;

/// A session's view of its cluster.
pub(super) struct ClusterView {
    pools: ClusterPools,
    /// The config generation `pools` came from.
    generation: u64,
    /// How long keyless statements may be served (`freshness.rs`).
    deadline: Arc<Deadline>,
    mode: PoolerMode,
    /// The cluster's sharding model and parser engine (refreshed on reload).
    sharding: Arc<Sharding>,
    engine: ParserEngine,
    prepared_limit: usize,
}

impl ClusterView {
    /// The view of a session that logged in with `pools` of config
    /// `generation`.
    pub(super) fn new(
        (pools, generation, deadline): (ClusterPools, u64, Arc<Deadline>),
        mode: PoolerMode,
        (sharding, engine): (Arc<Sharding>, ParserEngine),
        prepared_limit: usize,
    ) -> ClusterView {
        ClusterView {
            pools,
            generation,
            deadline,
            mode,
            sharding,
            engine,
            prepared_limit,
        }
    }

    /// The pools of the session's (cluster, user), one per shard.
    pub(super) fn pools(&self) -> &ClusterPools {
        &self.pools
    }

    /// The cluster's freshness deadline (`Shared::check_fresh`).
    pub(super) fn deadline(&self) -> &Deadline {
        &self.deadline
    }

    /// How many shards (databases) the cluster has.
    pub(super) fn shards(&self) -> usize {
        self.pools.len()
    }

    /// Some shard of the cluster has replicas.
    pub(super) fn has_replicas(&self) -> bool {
        self.pools.iter().any(ShardPools::has_replicas)
    }

    /// The sharding model the session routes by.
    pub(super) fn sharding(&self) -> &Arc<Sharding> {
        &self.sharding
    }

    /// The parser engine the session parses with.
    pub(super) fn engine(&self) -> ParserEngine {
        self.engine
    }

    /// A server is held for one transaction, then goes back to its pool.
    pub(super) fn transaction_mode(&self) -> bool {
        self.mode == PoolerMode::Transaction
    }

    /// A server is held for the whole session.
    pub(super) fn session_mode(&self) -> bool {
        self.mode == PoolerMode::Session
    }

    /// How many prepared statements a server connection keeps for it.
    pub(super) fn prepared_limit(&self) -> usize {
        self.prepared_limit
    }

    /// The config is of `generation`: whether the view came from an older
    /// one.
    pub(super) fn stale(&self, generation: u64) -> bool {
        generation != self.generation
    }

    /// The config was reloaded (generation `generation`): its pools (unless
    /// the session's (cluster, user) is gone from it), sharding model and
    /// engine.
    pub(super) fn reloaded(
        &mut self,
        generation: u64,
        pools: Option<ClusterPools>,
        (sharding, engine): (Arc<Sharding>, ParserEngine),
    ) {
        if let Some(pools) = pools {
            self.pools = pools;
        }
        self.sharding = sharding;
        self.engine = engine;
        self.generation = generation;
    }

    /// The session read the catalog inside its transaction: it routes by
    /// `own` until the transaction ends.
    pub(super) fn own_catalog_read(&mut self, own: Sharding) {
        self.sharding = Arc::new(own);
    }

    /// The transaction whose catalog the session routed by ended: back to
    /// the config's sharding model and engine.
    pub(super) fn own_catalog_dropped(
        &mut self,
        (sharding, engine): (Arc<Sharding>, ParserEngine),
    ) {
        self.sharding = sharding;
        self.engine = engine;
    }
}

#[cfg(test)]
mod tests;
