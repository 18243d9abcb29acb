//! Writes whose subqueries read across shards (issue 34), in the simple
//! protocol (bound in the extended protocol: `carry/bound.rs`):
//! [`router::carry::plan`] picks the subqueries that read
//! across shards; each runs first, alone, on the coordinator path
//! (`gather.rs`, inside the client's transaction block when there is
//! one), its one-row reply read here from the client's buffer and taken
//! out; its result goes into the write as a typed constant, and the write
//! is routed again as the client's statement (keyed: one shard; keyless:
//! every shard, atomically). The subqueries and the write are separate
//! statements: outside a block each has its own snapshot, as in Citus.

mod bound;
mod execute;

pub(super) use bound::Carried;

use bytes::BytesMut;
use router::carry::{CarryPlan, Value};
use router::config::CrossShardFinish;
use router::route::RouteError;
use router::summary::{StatementKind, Summary};

use super::dispatch::Dispatch;
use super::gather::{Finish, Gathered};
use super::{End, Session};
use crate::errors::ClientError;
use crate::protocol::backend::{BackendFrame, BackendMessage, TransactionStatus};
use crate::protocol::frontend::Bind;
use crate::protocol::{messages, rows, sqlstate};

/// How running a carried subquery ended.
enum Ran {
    /// Its value.
    Value(Value),
    /// Its error (and, when refused, its ReadyForQuery) is queued.
    Failed { ready: bool },
}

/// What a carried subquery's `$n` are, if it has any.
enum Args<'a> {
    /// None: a simple query.
    None,
    /// A bound write's Bind (its values) and parameter types.
    Bound(&'a (Bind, Vec<u32>)),
    /// An SQL EXECUTE's: the statement's type list and the arguments as
    /// written (the EXECUTE's text after the name).
    Sql { types: &'a str, args: &'a str },
}

/// Postgres's errors for a name it cannot resolve: a correlated subquery
/// run alone names the write's columns.
const UNRESOLVED: [&[u8]; 2] = [b"42703", b"42P01"];

impl Session {
    /// `summary`, refused with `err`, is one write whose refused
    /// subqueries may be run first: an UPDATE, DELETE or INSERT refused
    /// for a subquery that reads across shards (or, on an omnisharded
    /// table, reads a sharded one: carried, every copy gets the same
    /// values), on a config that finishes on the coordinator.
    pub(super) fn carries(&self, err: &RouteError, summary: &Summary) -> bool {
        let subquery = matches!(
            err,
            RouteError::SubqueryWithoutKey { .. }
                | RouteError::SubqueryOnOtherShards { .. }
                | RouteError::OmnishardedFromSharded { .. }
        );
        subquery && self.may_carry(summary)
    }

    /// `summary` is one write with subqueries, on a config that finishes
    /// on the coordinator: what [`carries`](Self::carries) needs before
    /// routing says why (a Bind of anything else is routed once).
    pub(super) fn may_carry(&self, summary: &Summary) -> bool {
        let [statement] = summary.statements.as_slice() else {
            return false;
        };
        statement.sublinks.is_some()
            && matches!(
                statement.kind,
                StatementKind::Update | StatementKind::Delete | StatementKind::Insert
            )
            && self.shared.config().general.cross_shard_finish == CrossShardFinish::Coordinator
    }

    /// A simple query the router refused with `err` for a subquery
    /// that reads across shards: its subqueries run first and the write
    /// with their results is routed, or it is refused (with `refusal` and
    /// why the subqueries cannot be run first).
    pub(super) async fn carry_query(
        &mut self,
        frame_sql: &str,
        err: &RouteError,
    ) -> Result<Dispatch, End> {
        let refusal = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string());
        let coordinator = self.shared.config().general.cross_shard_coordinator;
        let plan = match router::carry::plan(frame_sql, self.cluster.sharding(), coordinator) {
            Ok(plan) => plan,
            Err(why) => return Ok(self.refused(not_carried(&refusal, &why))),
        };
        let mut values = Vec::with_capacity(plan.carried.len());
        for index in 0..plan.carried.len() {
            match self
                .carried_value(&plan, index, &refusal, &Args::None)
                .await?
            {
                Ran::Value(value) => values.push(value),
                Ran::Failed { ready } => {
                    if !ready {
                        let status = self.status();
                        messages::ready_for_query(self.client.out(), status);
                    }
                    self.client.flush().await?;
                    return Ok(Dispatch::Done);
                }
            }
        }
        let sql = match plan.write_sql(&values) {
            Ok(sql) => sql,
            Err(why) => return Ok(self.refused(not_carried(&refusal, &why))),
        };
        match Box::pin(self.route_query(&sql, None)).await? {
            Dispatch::Send(target) => Ok(Dispatch::Rewritten(target, sql)),
            other => Ok(other),
        }
    }

    /// Run the `index`th carried subquery of `plan` on the coordinator path
    /// and read its value from its reply; `args`: what its `$n` are.
    async fn carried_value(
        &mut self,
        plan: &CarryPlan,
        index: usize,
        refusal: &ClientError,
        args: &Args<'_>,
    ) -> Result<Ran, End> {
        let carry = &plan.carried[index];
        let mark = self.client.out().len();
        let errors = self.pipeline.error_mark();
        let finish = match args {
            Args::None => Finish::Carried(None),
            Args::Bound(bound) => Finish::Carried(Some(Box::new((*bound).clone()))),
            Args::Sql { types, args } => Finish::CarriedSql {
                types: (*types).to_owned(),
                args: (*args).to_owned(),
            },
        };
        let gathered = self
            .gather_statement(&carry.sql, refusal.clone(), false, &finish)
            .await?;
        match gathered {
            Gathered::Refused => return Ok(Ran::Failed { ready: true }),
            Gathered::Postgres => {
                let error = ClientError::new(
                    sqlstate::INTERNAL_ERROR,
                    "a subquery run first got no answer from the coordinator".to_owned(),
                );
                self.gather_error(&error);
                return Ok(Ran::Failed { ready: false });
            }
            Gathered::Ran => {}
        }
        let reply = self.client.out().split_off(mark);
        if self.pipeline.errors_since(errors) {
            let reply = correlated(reply, &carry.subquery);
            self.client.out().unsplit(reply);
            return Ok(Ran::Failed { ready: false });
        }
        let limit = self.shared.config().general.cross_shard_gather_limit;
        match first_row(reply) {
            Some(value) if value_bytes(&value) > limit.bytes => {
                let error = ClientError::new(
                    sqlstate::PROGRAM_LIMIT_EXCEEDED,
                    format!(
                        "the result of the subquery {} is more than {} bytes \
                         (cross_shard_gather_limit.bytes) to carry into the statement: \
                         restrict it, or raise cross_shard_gather_limit.bytes",
                        carry.subquery, limit.bytes
                    ),
                );
                Ok(self.carry_failed(&error))
            }
            Some(value) => Ok(Ran::Value(value)),
            None => {
                let error = ClientError::new(
                    sqlstate::INTERNAL_ERROR,
                    format!(
                        "the subquery {} run first gave no row pgshard can read (or text that \
                         is not UTF-8)",
                        carry.subquery
                    ),
                );
                Ok(self.carry_failed(&error))
            }
        }
    }

    /// pgshard's `error` after a carried subquery ran: inside a block, the
    /// block is over, as after any error there.
    fn carry_failed(&mut self, error: &ClientError) -> Ran {
        self.gather_error(error);
        if self.status() != TransactionStatus::Idle || self.txn.spans() {
            self.txn.fail();
        }
        Ran::Failed { ready: false }
    }
}

/// The client's refusal when the subqueries cannot be run first.
fn not_carried(refusal: &ClientError, why: &router::carry::NotCarried) -> ClientError {
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "{}; nor can its subqueries be run first on the coordinator: {why}",
            refusal.message
        ),
    )
}

/// The carried subquery's reply, its error for an unresolved name made a
/// refusal that says the subquery may be correlated.
fn correlated(mut reply: BytesMut, subquery: &str) -> BytesMut {
    let mut out = BytesMut::new();
    while let Ok(Some(frame)) = BackendFrame::split(&mut reply) {
        match frame.message() {
            BackendMessage::ErrorResponse(fields)
                if fields.code().is_some_and(|c| UNRESOLVED.contains(&c)) =>
            {
                let error = ClientError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!(
                        "the subquery {subquery} reads across shards, so pgshard runs it first, \
                         alone, and there it fails: {}; a subquery that refers to the \
                         statement's own rows (correlated) cannot be run first: correlate it \
                         on a co-located sharding key (inner.key = outer.key) or restrict both \
                         to one shard with the sharding key",
                        fields.message()
                    ),
                );
                error.encode(&mut out);
            }
            _ => out.extend_from_slice(frame.bytes()),
        }
    }
    out.unsplit(reply);
    out
}

/// The type name, value and dimensions of the first DataRow in `reply`.
fn first_row(mut reply: BytesMut) -> Option<Value> {
    while let Ok(Some(frame)) = BackendFrame::split(&mut reply) {
        if let BackendMessage::DataRow(_) = frame.message() {
            let row = rows::parse_row(frame.bytes())?;
            let text = |column| match row.value(column) {
                Some(value) => String::from_utf8(value.to_vec()).map(Some).ok(),
                None => Some(None),
            };
            return Some(Value {
                type_name: text(0)??,
                text: text(1)?,
                dimensions: text(2)?,
            });
        }
    }
    None
}

/// The bytes a carried value adds to the statement.
fn value_bytes(value: &Value) -> u64 {
    let len = value.text.as_ref().map_or(0, String::len) + value.type_name.len();
    u64::try_from(len).unwrap_or(u64::MAX)
}
