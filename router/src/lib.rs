//! router: everything pgshard decides without touching a socket or a file.
//!
//! Architecture invariant: no I/O, no async, no globals. The proxy reads files and
//! sockets and hands this crate strings and bytes.
//!
//! Code map: [`config`] (the config model), [`sharding`] (the resolved sharding
//! model of a cluster), [`hash`] (Postgres- and Citus-exact key hashing and
//! mappings), [`summary`] (what routing needs from a statement), [`catalog`] (what
//! stands behind names: views, functions, triggers, sequences), [`extract`]
//! (summaries from parser-ffi's zero-copy tree or pg_query's protobuf structs),
//! [`route`] (summary + parameters + sharding -> route), [`template`] (statement
//! text to cache key: edge comments, overrides, literals), [`cache`] (the LRU
//! AST cache the proxy owns), [`merge`] (what a cross-shard SELECT needs to be
//! answered exactly), [`split`] (multi-row INSERTs split by shard),
//! [`key_move`] (an UPDATE of a sharding key moving its row), [`insert_select`]
//! (an INSERT ... SELECT whose rows change shard: its SELECT, stage and COPY),
//! [`prepared`]
//! (SQL PREPARE / EXECUTE: their texts, arguments and declared types),
//! [`create_as`] (a table created from a query over sharded rows: the key
//! it keeps), [`rowless`] (statements that return no rows, whatever an
//! Execute's row limit), [`unique_id`] (`pgdog.unique_id()`: id layouts, the
//! generator's state machine, where a statement's calls can be replaced),
//! [`query_string`] (a string of statements for
//! different shards, run one statement at a time: which can be),
//! [`rebalance`] (which logical shards to move to even out a placement
//! group over its databases).

#![forbid(unsafe_code)]

pub mod cache;
pub mod carry;
pub mod catalog;
pub mod config;
pub mod copy;
pub mod create_as;
pub mod extract;
pub mod gather;
pub mod hash;
pub mod insert_select;
pub mod key_move;
pub mod merge;
pub mod prepared;
pub mod query_string;
pub mod rebalance;
pub mod route;
pub mod rowless;
pub mod sharding;
pub mod split;
pub mod summary;
pub mod template;
pub mod unique_id;

#[cfg(test)]
#[path = "../tests/support/fuzz.rs"]
mod fuzz;
