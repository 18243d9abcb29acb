//! Online moves of logical shards between databases (issue 33): the phase
//! machine (`state.rs`) and the move's record on the databases
//! (`store.rs`).

mod sql;
pub mod state;
pub mod store;
