//! Running a plan on servers, below the session: several servers read at
//! once (`fan_out.rs`: a task and a bounded channel per server), what
//! their replies become for the client (`merge/`: merges and the value
//! arithmetic they need), a row move's messages (`row_move.rs`), two-phase
//! commit's coordinator, decision log and recovery, the catalog read
//! through a connection, and a table's rows relayed from one server to
//! another (`copy_relay.rs`, for shard moves).

pub mod catalog;
pub mod copy_relay;
pub mod fan_out;
pub mod gather;
pub mod merge;
pub mod row_move;
pub mod two_phase;
