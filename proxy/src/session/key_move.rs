//! An UPDATE that changes a row's sharding key, with PgDog's `[rewrite]
//! shard_key = "rewrite"`: the row moves to its new key's shard
//! (`router::key_move` writes the statements). When the row is already on
//! that shard (its WHERE routes there alone) the UPDATE runs there as it
//! is; otherwise, in one transaction per shard (the client's, when
//! pgshard opened one; else one of its own, committed on every shard
//! together, two-phase when `two_phase_commit` and `two_phase_commit_auto`
//! are on), the row is deleted where its WHERE routes (returning every
//! stored column, in binary), inserted on the new key's shard with the SET
//! expressions evaluated over it, and the client gets `UPDATE 1` (with
//! RETURNING's row, in the simple protocol). No row: `UPDATE 0`. More
//! than one: an error, and nothing changed.
//!
//! In the extended protocol the Bind is answered here and the move runs at
//! the portal's Execute (RETURNING there is refused for now, as is a move
//! inside a transaction, like every statement for several shards).

use bytes::{Bytes, BytesMut};
use router::key_move::KeyMove;
use router::route::ParamValue;
use router::summary::StatementSummary;

use super::dispatch::Dispatch;
use super::statements::Statement;
use super::transaction::{Placement, Target, CROSS_SHARD_TXN};
use super::{End, Session};
use crate::errors::ClientError;
use crate::execute::row_move::{
    cascades, described, encode, exchange, inserted, refused, statement, Values,
};
use crate::metrics::RouteKind;
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendKind, BackendMessage};
use crate::protocol::frontend::{Bind, FrontendKind};
use crate::protocol::{messages, rows};

/// A bound UPDATE that moves a row, run at its Execute.
#[derive(Debug)]
pub struct MovePortal {
    plan: KeyMove,
    values: Values,
    sources: Vec<usize>,
    target: usize,
    /// Bound inside the client's transaction: the move joins it.
    in_txn: bool,
}

impl Session {
    /// A simple-query UPDATE of a sharding key: run where it belongs, or
    /// the row moved.
    pub(super) async fn move_row_query(
        &mut self,
        sql: &str,
        statement: &StatementSummary,
    ) -> Result<Dispatch, End> {
        let values = Values::default();
        let (plan, sources, target) = match self.plan_move(sql, statement, &values) {
            Ok(planned) => planned,
            Err(error) => return Ok(self.refused(error)),
        };
        if sources == [target] {
            return Ok(match self.place(Some(&[target]), false) {
                Placement::Send(target) => Dispatch::Send(target),
                _ => self.refused(refused(CROSS_SHARD_TXN)),
            });
        }
        let in_txn = match self.place(Some(&union(&sources, target)), false) {
            Placement::FanOut => false,
            Placement::FanOutInTxn => true,
            Placement::Refuse | Placement::Send(_) => {
                self.refuse(refused(CROSS_SHARD_TXN), true);
                return Ok(Dispatch::Done);
            }
        };
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        let moving = MovePortal {
            plan,
            values,
            sources,
            target,
            in_txn,
        };
        self.run_move(moving, in_txn, true).await?;
        let status = self.status();
        messages::ready_for_query(self.client.out(), status);
        self.client.flush().await?;
        Ok(Dispatch::Done)
    }

    /// A Bind of an UPDATE of a sharding key: where it goes, or `None`
    /// when it is answered here (the move runs at its Execute) or refused.
    pub(super) fn route_move_bind(&mut self, statement: &Statement, bind: &Bind) -> Option<Target> {
        let values = Values::of(bind, &statement.param_types);
        let sql = String::from_utf8_lossy(&statement.query).into_owned();
        let summary = self.route_info(statement)?.entry.summary.clone();
        let planned = match summary.statements.as_slice() {
            [only] => self.plan_move(&sql, only, &values),
            _ => Err(refused("an UPDATE of a sharding key is sent alone")),
        };
        let (plan, sources, target) = match planned {
            Ok(planned) => planned,
            Err(error) => return self.move_refused(error),
        };
        if sources == [target] {
            return match self.place(Some(&[target]), false) {
                Placement::Send(target) => Some(target),
                _ => self.move_refused(refused(CROSS_SHARD_TXN)),
            };
        }
        if plan.returning() {
            let why = "an UPDATE ... RETURNING that moves a row to another shard needs the simple protocol for now";
            return self.move_refused(refused(why));
        }
        let in_txn = match self.place(Some(&union(&sources, target)), false) {
            Placement::FanOut => false,
            Placement::FanOutInTxn => true,
            Placement::Refuse | Placement::Send(_) => {
                return self.move_refused(refused(CROSS_SHARD_TXN))
            }
        };
        self.local_reply(messages::bind_complete);
        self.phase.bind_move(MovePortal {
            plan,
            values,
            sources,
            target,
            in_txn,
        });
        None
    }
    fn move_refused(&mut self, error: ClientError) -> Option<Target> {
        self.shared.metrics.route(RouteKind::Refused);
        self.refuse(error, false);
        None
    }

    /// A message while a moving UPDATE's portal is bound: whether it was
    /// answered (any other message drops the portal).
    pub(super) async fn on_move_portal(&mut self, kind: FrontendKind) -> Result<bool, End> {
        match kind {
            FrontendKind::Describe => self.local_reply(messages::no_data),
            FrontendKind::Flush => {}
            FrontendKind::Execute => {
                let Some(moving) = self.phase.take_move() else {
                    return Ok(false);
                };
                let status = self.status();
                self.plan.drain_local(self.client.out(), status);
                let in_txn = moving.in_txn;
                if !self.run_move(moving, in_txn, false).await? {
                    self.phase.skip();
                }
            }
            _ => {
                self.phase.end_portal();
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The move's statements, the shards its WHERE routes to, and the new
    /// key's shard.
    fn plan_move(
        &self,
        sql: &str,
        statement: &StatementSummary,
        values: &Values,
    ) -> Result<(KeyMove, Vec<usize>, usize), ClientError> {
        let plan = KeyMove::plan(sql, statement, self.cluster.sharding()).map_err(refused)?;
        let params = values.router();
        let target = plan
            .target(self.cluster.sharding(), &params)
            .map_err(refused)?;
        let finder = plan.delete(&[]).map_err(refused)?;
        let lookup = self
            .shared
            .cache
            .lookup(&finder.sql, self.cluster.engine())
            .map_err(|e| refused(format!("the UPDATE's WHERE: {e}")))?;
        let finder_params: Vec<ParamValue<'_>> = finder
            .params
            .iter()
            .map(|&i| params.get(i).copied().unwrap_or(ParamValue::Null))
            .collect();
        let overrides = self.overrides(&lookup.overrides);
        let routed = lookup
            .entry
            .route(
                &lookup.params(&finder_params),
                &overrides,
                self.cluster.sharding(),
            )
            .map_err(refused)?;
        let sources = self
            .shards_of(&routed.route)
            .map_or_else(|| (0..self.cluster.shards()).collect(), |s| s.into_vec());
        Ok((plan, sources, target))
    }

    /// Run a move in the client's transaction (`in_txn`) or in one of its
    /// own; its reply (`simple`: a Query's, without ReadyForQuery) goes to
    /// the client. Returns whether it succeeded.
    async fn run_move(
        &mut self,
        moving: MovePortal,
        in_txn: bool,
        simple: bool,
    ) -> Result<bool, End> {
        let errors = self.pipeline.error_mark();
        let shards = union(&moving.sources, moving.target);
        if !in_txn {
            self.txn.begin_implicit();
        }
        self.routing.placing_write();
        self.pipeline.unnamed_dropped();
        let mut failed = false;
        if let Some(mut servers) = self.txn_servers(&shards).await? {
            let done = self.move_on(&moving, &shards, &mut servers, simple).await;
            for (&shard, server) in shards.iter().zip(servers) {
                self.hold(shard, server);
            }
            match done {
                Ok(reply) => self.client.out().extend_from_slice(&reply),
                Err(error) => {
                    self.client.out().extend_from_slice(&error);
                    self.pipeline.error_relayed();
                    self.txn.fail();
                }
            }
        }
        failed |= self.pipeline.errors_since(errors) || self.txn.failed();
        if !in_txn {
            let auto = self.shared.config().general.two_phase_commit_auto;
            if let Err(error) = self.end_spanning(!failed, auto).await? {
                error.encode(self.client.out());
                self.pipeline.error_relayed();
                failed = true;
            }
        }
        Ok(!failed)
    }

    /// The move on the servers of `shards` (each in the transaction): the
    /// client's reply, or its error (encoded).
    async fn move_on(
        &mut self,
        moving: &MovePortal,
        shards: &[usize],
        servers: &mut [Pooled],
        simple: bool,
    ) -> Result<BytesMut, Bytes> {
        let at = |shard: usize| shards.iter().position(|&s| s == shard).unwrap_or(0);
        let plan = &moving.plan;
        let table = plan.table();
        cascades(&mut servers[at(moving.target)], &table).await?;
        let columns = super::copy_in::table_columns(&mut servers[at(moving.target)], &table, true)
            .await
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                encode(&refused(format!(
                    "the columns of {table} could not be read"
                )))
            })?;
        let delete = plan.delete(&columns).map_err(|e| encode(&refused(e)))?;
        let mut found: Vec<BackendFrame> = Vec::new();
        let mut fields = Vec::new();
        for &source in &moving.sources {
            let request = statement(&delete, &moving.values, &[], Some(&[1]), true);
            let replies = exchange(&mut servers[at(source)], &request).await?;
            deleted(replies, &mut found, &mut fields);
        }
        let insert = plan.insert(&columns).map_err(|e| encode(&refused(e)))?;
        let old_types: Vec<u32> = fields.iter().map(|(oid, _)| *oid).collect();
        let mut reply = BytesMut::new();
        match found.as_slice() {
            [] => {
                if simple && plan.returning() {
                    let request = described(&insert, &moving.values, &old_types, plan.parameters());
                    let replies = exchange(&mut servers[at(moving.target)], &request).await?;
                    replies
                        .iter()
                        .filter(|m| m.kind() == BackendKind::RowDescription)
                        .for_each(|m| reply.extend_from_slice(m.bytes()));
                }
                messages::command_complete(&mut reply, "UPDATE 0");
            }
            [row] => {
                let old = rows::parse_row(row.bytes())
                    .ok_or_else(|| encode(&ClientError::shard_lost()))?;
                let request = inserted(
                    &insert,
                    &moving.values,
                    (&old, &old_types),
                    plan.parameters(),
                    simple && plan.returning(),
                );
                for message in exchange(&mut servers[at(moving.target)], &request).await? {
                    match message.kind() {
                        BackendKind::RowDescription | BackendKind::DataRow => {
                            reply.extend_from_slice(message.bytes())
                        }
                        BackendKind::CommandComplete => {
                            messages::command_complete(&mut reply, "UPDATE 1")
                        }
                        _ => {}
                    }
                }
            }
            more => {
                let why = format!(
                    "this UPDATE changes the sharding key of {} rows: pgshard moves a row to another shard one row at a time (with a WHERE that matches one row), and changed nothing",
                    more.len()
                );
                return Err(encode(&refused(why)));
            }
        }
        Ok(reply)
    }
}

/// The rows a DELETE ... RETURNING's `replies` hold, and their fields.
fn deleted(
    replies: Vec<BackendFrame>,
    found: &mut Vec<BackendFrame>,
    fields: &mut Vec<rows::WireField>,
) {
    for message in replies {
        match message.message() {
            BackendMessage::RowDescription(body) => {
                *fields = rows::read_fields(body).map(|(f, _)| f).unwrap_or_default()
            }
            BackendMessage::DataRow(_) => found.push(message),
            _ => {}
        }
    }
}

/// `sources` with `target`, in shard order.
fn union(sources: &[usize], target: usize) -> Vec<usize> {
    let mut shards = sources.to_vec();
    shards.push(target);
    shards.sort_unstable();
    shards.dedup();
    shards
}
