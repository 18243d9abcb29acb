//! Running a plan on servers: what several servers' replies become for
//! the client (merges and the value arithmetic they need).

pub mod merge;
