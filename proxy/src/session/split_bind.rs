//! A multi-row INSERT bound with parameters whose rows go to several shards
//! (extended protocol: a prepared `INSERT ... VALUES ($1, $2), ($3, $4)`,
//! pgx batches, pgjdbc's `reWriteBatchedInserts`): split per Bind by
//! `router::split` into one INSERT per shard. Each part is a statement of
//! its own in the registry (its parameters renumbered from `$1`, their
//! declared types with them), so a server prepares each shape once, and is
//! bound with only its rows' values and their format codes; the parts'
//! statements are kept on the client's statement by shape
//! (`statements/split_parts.rs`), so a Bind whose parts have shapes seen before
//! writes and registers nothing. Rows of one template (drivers' rows) go in
//! chunks of a few fixed sizes (`router::split::chunk_sizes`), each a
//! statement prepared once per server; the chunks but the last are bound
//! into portals of pgshard's own, run just before the client's portal
//! (`segment/split.rs`). The parts run
//! in the segment that holds the Bind (`segment.rs`: each shard gets its
//! own Bind, the portal's Describe and Execute follow it), so they share
//! its all-or-nothing end; the Execute's tags are summed (`INSERT 0 n`) and
//! RETURNING rows come back in the order of the VALUES rows
//! (`execute/merge/split_rows.rs`).
//!
//! The Describe of the client's statement (its parameter and row types)
//! still goes to a server as the client wrote it: drivers that prepare
//! first and bind later see the statement they prepared.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::split::{chunk_sizes, InsertRows, PartShape, SplitError};

use super::routing::bind_params;
use super::segment::{ChunkBind, PartBind, Segment, SplitBind};
use super::statements::Statement;
use super::transaction::{Placement, Target, CROSS_SHARD_TXN};
use super::Session;
use crate::errors::ClientError;
use crate::metrics::RouteKind;
use crate::protocol::frontend::BindView;
use crate::protocol::messages;
use crate::protocol::sqlstate;

fn refused(why: SplitError) -> ClientError {
    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string())
}

impl Session {
    /// A Bind of `statement` whose rows go to several shards (the router
    /// said so): held as a segment of its parts, or refused. `None`: the
    /// Bind is answered or held.
    pub(super) fn route_split_bind(
        &mut self,
        statement: &Arc<Statement>,
        unnamed: bool,
        bind: &BindView<'_>,
    ) -> Option<Target> {
        let split = match self.split_bind(statement, bind) {
            Ok(split) => split,
            Err(error) => {
                self.shared.metrics.route(RouteKind::Refused);
                self.refuse(error, false);
                return None;
            }
        };
        match self.place(Some(&split.shards()), false) {
            // Run at Sync, inside the client's transaction when there is
            // one (`segment/in_txn.rs`).
            Placement::FanOut | Placement::FanOutInTxn => {
                let current_unnamed = self.named.protocol.get(b"");
                self.phase.hold_batch(Segment::start_split(
                    split,
                    Bytes::copy_from_slice(bind.portal),
                    statement,
                    unnamed,
                    current_unnamed,
                ));
                None
            }
            Placement::Refuse | Placement::Send(_) => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN);
                self.refuse(error, false);
                None
            }
        }
    }

    /// Split a Bind of the multi-row INSERT `statement` by the shards of
    /// its rows' keys: each part's Bind written from the client's, read in
    /// place (its values borrowed, not counted or copied twice).
    pub(super) fn split_bind(
        &self,
        statement: &Statement,
        bind: &BindView<'_>,
    ) -> Result<SplitBind, ClientError> {
        let rows = statement
            .insert_rows
            .get_or_init(|| {
                InsertRows::parse(&String::from_utf8_lossy(&statement.query)).map(Arc::new)
            })
            .clone()
            .map_err(refused)?;
        check_counts(bind, rows.parameters().max(statement.param_types.len()))?;
        let values: Vec<Option<&[u8]>> = bind.values().map(|(_, value)| value).collect();
        let split = rows
            .assign(self.cluster.sharding(), &bind_params(bind.values()))
            .map_err(refused)?;
        let portal = bind.portal;
        let bind = (bind, values.as_slice());
        // Rows of one template are sent in chunks of a few fixed sizes
        // (not with RETURNING, whose rows come with the portal's Execute).
        let uniform = rows.shape(&[], &statement.param_types) == PartShape::Rows(0);
        let chunked = uniform && !split.returning;
        let mut parts = Vec::with_capacity(split.parts.len());
        for part in split.parts {
            let sizes = match chunked {
                true => chunk_sizes(part.rows.len()),
                false => vec![part.rows.len()],
            };
            let (mut chunks, mut at) = (Vec::with_capacity(sizes.len()), 0);
            for size in sizes {
                let held = part.rows.get(at..at + size).unwrap_or_default();
                at += size;
                let (own, params) = self.part_statement(statement, &rows, held, uniform)?;
                chunks.push((own, params));
            }
            let Some((own, params)) = chunks.pop() else {
                continue;
            };
            let mut bytes = BytesMut::new();
            messages::bind_part(&mut bytes, bind, portal, &own.name, &params);
            let chunks = chunks
                .into_iter()
                .map(|(statement, params)| {
                    let portal = chunk_portal();
                    let mut bytes = BytesMut::new();
                    messages::bind_part(&mut bytes, bind, &portal, &statement.name, &params);
                    ChunkBind {
                        statement,
                        portal,
                        bytes: bytes.freeze(),
                    }
                })
                .collect();
            parts.push(PartBind {
                shard: part.database,
                statement: own,
                bytes: bytes.freeze(),
                rows: part.rows,
                chunks,
            });
        }
        parts.sort_by_key(|p| p.shard);
        Ok(SplitBind {
            parts,
            returning: split.returning,
        })
    }
}

impl Session {
    /// The statement of the part of `statement` holding `rows`, and the
    /// client's parameter indexes it binds: kept for the part's shape
    /// (`statements/split_parts.rs`), else written and registered, and kept.
    fn part_statement(
        &self,
        statement: &Statement,
        insert: &InsertRows,
        rows: &[usize],
        uniform: bool,
    ) -> Result<(Arc<Statement>, Arc<[usize]>), ClientError> {
        let shape = match uniform {
            true => PartShape::Rows(rows.len()),
            false => PartShape::Exact(rows.to_vec()),
        };
        let kept = crate::lock::lock(&statement.split_parts).get(&shape);
        if let Some((own, params)) = kept {
            self.shared.metrics.split_part(true);
            let params = match shape {
                PartShape::Rows(_) => insert.part_params(rows).map(Arc::from),
                PartShape::Exact(_) => Some(params),
            };
            if let Some(params) = params {
                return Ok((own, params));
            }
        }
        let (sql, params) = insert.part_sql(rows).map_err(refused)?;
        let types: Vec<u32> = params
            .iter()
            .map(|&i| statement.param_types.get(i).copied().unwrap_or(0))
            .collect();
        let own = self.shared.statements.get_or_insert(
            &Bytes::from(sql),
            &types,
            &self.shared.cache,
            self.cluster.engine(),
        );
        self.shared.metrics.split_part(false);
        let params: Arc<[usize]> = Arc::from(params);
        crate::lock::lock(&statement.split_parts).insert(
            shape,
            Arc::clone(&own),
            Arc::clone(&params),
        );
        Ok((own, params))
    }
}

/// A portal name for a chunk of a split part: pgshard's, unique in the
/// process (a segment may bind several split portals before it executes
/// them; a chunk never executed ends with its transaction).
fn chunk_portal() -> Bytes {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Bytes::from(format!("pgshard_chunk_{n}"))
}

/// The Bind's counts, checked as Postgres checks them before anything
/// runs: as many values as the statement has parameters (`expected`), and
/// none, one or one format code per value.
fn check_counts(bind: &BindView<'_>, expected: usize) -> Result<(), ClientError> {
    let violation = |message: String| ClientError::new(sqlstate::PROTOCOL_VIOLATION, message);
    let (formats, values) = (bind.param_format_count(), bind.param_count());
    if formats > 1 && formats != values {
        return Err(violation(format!(
            "bind message has {formats} parameter formats but {values} parameters"
        )));
    }
    if values != expected {
        return Err(violation(format!(
            "bind message supplies {values} parameters, but prepared statement \"{}\" requires {expected}",
            String::from_utf8_lossy(bind.statement)
        )));
    }
    Ok(())
}
