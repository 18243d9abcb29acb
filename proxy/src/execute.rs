//! Running a plan on servers: what several servers' replies become for
//! the client (merges and the value arithmetic they need), and two-phase
//! commit's coordinator, decision log and recovery.

pub mod catalog;
pub mod merge;
pub mod two_phase;
