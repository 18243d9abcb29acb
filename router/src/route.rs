//! Routing as a pure function: (statement summary, bind parameters,
//! overrides, sharding model) -> which databases run the statement.
//! (in progress: API fixed, body being written)

use crate::sharding::Sharding;
use crate::summary::{StatementSummary, Summary};

/// Where a statement goes. Shard numbers are database numbers (`[[databases]]`
/// `shard`), already through logical-shard placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Exactly one database.
    Shard(usize),
    /// Several (sorted, deduplicated, at least two, not all).
    Shards(Vec<usize>),
    /// Every database (keyless reads of sharded tables, writes of
    /// omnisharded tables, DDL).
    All,
    /// No data dependency (`SELECT 1`, reads of omnisharded tables, catalog
    /// reads): any one database will do; the proxy picks (the transaction's
    /// shard if one is open).
    Any,
}

/// A route and whether the statement writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub route: Route,
    pub write: bool,
}

/// One bind parameter as it arrived in Bind (or a literal read from the
/// statement text, passed as text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamValue<'a> {
    Null,
    /// Text format: the value's text, UTF-8.
    Text(&'a [u8]),
    /// Binary format: the type's send representation (big-endian ints, 16
    /// uuid bytes, text bytes, array wire format).
    Binary(&'a [u8]),
}

/// Manual routing a client asked for: `/* pgdog_shard: N */` and
/// `/* pgdog_sharding_key: v */` comments, `SET pgdog.shard` and
/// `SET pgdog.sharding_key`. A shard number wins over a key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub shard: Option<usize>,
    pub sharding_key: Option<String>,
}

/// Why a statement cannot be routed; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("{0}")]
    Unroutable(String),
}

/// Route one statement.
pub fn route(
    _stmt: &StatementSummary,
    _params: &[ParamValue<'_>],
    _overrides: &Overrides,
    _sharding: &Sharding,
) -> Result<Routed, RouteError> {
    Err(RouteError::Unroutable(
        "routing is not built yet".to_owned(),
    ))
}

/// Route a whole statement string: every statement must agree on one
/// destination (or all be keyless reads); transaction control follows the rest.
pub fn route_all(
    summary: &Summary,
    params: &[ParamValue<'_>],
    overrides: &Overrides,
    sharding: &Sharding,
) -> Result<Routed, RouteError> {
    let mut out: Option<Routed> = None;
    for stmt in &summary.statements {
        let routed = route(stmt, params, overrides, sharding)?;
        out = Some(match out {
            None => routed,
            Some(prev) => Routed {
                route: if prev.route == routed.route {
                    prev.route
                } else {
                    routed.route
                },
                write: prev.write || routed.write,
            },
        });
    }
    out.ok_or_else(|| RouteError::Unroutable("empty statement".to_owned()))
}
