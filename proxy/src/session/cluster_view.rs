//! What a session knows of its cluster, refreshed together when the config
//! changes (`attach.rs`): the pools of its (cluster, user), the config
//! generation they came from, the pooler mode, the sharding model and
//! parser engine it routes by (overlaid by its transaction's own schema
//! changes: `behind.rs`), and how many prepared statements it may keep.

use std::sync::Arc;

use router::config::PoolerMode;
use router::sharding::{ParserEngine, Sharding};

use crate::pool::clusters::ClusterPools;

/// A session's view of its cluster.
pub(super) struct ClusterView {
    pub(super) pools: ClusterPools,
    /// The config generation `pools` came from.
    pub(super) generation: u64,
    pub(super) mode: PoolerMode,
    /// The cluster's sharding model and parser engine (refreshed on reload).
    pub(super) sharding: Arc<Sharding>,
    pub(super) engine: ParserEngine,
    pub(super) prepared_limit: usize,
}
