//! Writes whose subqueries read across shards (issue 34), in the simple
//! protocol (bound in the extended protocol: `carry/bound.rs`):
//! [`router::carry::plan`] picks the subqueries that read
//! across shards; each runs first, alone, on the coordinator path
//! (`gather.rs`, inside the client's transaction block when there is
//! one), its reply read from the client's buffer and taken out
//! (`carry/reply.rs`: one value, or the rows of a FROM/USING subquery, a
//! WITH query or a row-valued subquery, bounded by
//! `cross_shard_gather_limit`); its result goes into the write as a typed
//! constant or VALUES list, and the write
//! is routed again as the client's statement (keyed: one shard; keyless:
//! every shard, atomically). The subqueries and the write are separate
//! statements: outside a block each has its own snapshot, as in Citus.

mod bound;
mod execute;
mod reply;

pub(super) use bound::Carried;

use bytes::BytesMut;
use router::carry::{Answer, CarryPlan};
use router::config::CrossShardFinish;
use router::route::RouteError;
use router::summary::{StatementKind, Summary};

use super::dispatch::Dispatch;
use super::gather::{Finish, Gathered};
use super::{End, Session};
use crate::errors::ClientError;
use crate::protocol::backend::{BackendFrame, BackendMessage, TransactionStatus};
use crate::protocol::frontend::Bind;
use crate::protocol::{messages, sqlstate};

/// How running a carried subquery ended.
enum Ran {
    /// Its value (or rows).
    Value(Answer),
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
    /// `summary`, refused with `err`, is one write whose subqueries may be
    /// run first: an UPDATE, DELETE or INSERT refused for a subquery, a
    /// FROM/USING item or a WITH query that reads across shards (a
    /// subquery or join the router cannot place), on a config that
    /// finishes on the coordinator. (A write of an omnisharded table from
    /// a sharded one stays refused: carrying it ran, but a bound carried
    /// write followed by a simple query on the same connection can hang;
    /// see the stop 50 note.)
    pub(super) fn carries(&self, err: &RouteError, summary: &Summary) -> bool {
        gathered_refusal(err) && self.may_carry(summary)
    }

    /// `summary`, `sql`, routed, is one write whose FROM/USING subquery or
    /// WITH query reads across shards and aggregates, deduplicates, limits
    /// or combines rows (rule 8 of `router::carry`): it must be carried
    /// all the same.
    pub(super) fn cuts_rows(&self, summary: &Summary, sql: &str) -> bool {
        let config = self.shared.config();
        let general = &config.general;
        self.may_carry(summary)
            && router::carry::cuts_rows(
                sql,
                self.cluster.sharding(),
                general.cross_shard_coordinator,
                general.cross_shard_gather_limit.rows,
            )
    }

    /// `summary` is one write with subqueries or joins (FROM/USING items,
    /// WITH queries), on a config that finishes on the coordinator: what
    /// [`carries`](Self::carries) needs before routing says why (a Bind of
    /// anything else is routed once).
    pub(super) fn may_carry(&self, summary: &Summary) -> bool {
        let [statement] = summary.statements.as_slice() else {
            return false;
        };
        (statement.sublinks.is_some() || statement.joins.is_some())
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
        err: Option<&RouteError>,
    ) -> Result<Dispatch, End> {
        let refusal = refusal(err);
        let coordinator = self.shared.config().general.cross_shard_coordinator;
        let max_rows = self.shared.config().general.cross_shard_gather_limit.rows;
        let sharding = self.cluster.sharding();
        let plan = match router::carry::plan(frame_sql, sharding, coordinator, max_rows) {
            Ok(plan) => plan,
            Err(why) => return Ok(self.refused(not_carried(err, &refusal, &why))),
        };
        let Some(values) = self.simple_values(&plan, &refusal, &Args::None).await? else {
            return Ok(Dispatch::Done);
        };
        let sql = match plan.write_sql(&values) {
            Ok(sql) => sql,
            Err(why) => return Ok(self.refused(not_carried(err, &refusal, &why))),
        };
        match Box::pin(self.route_query(&sql, None)).await? {
            Dispatch::Send(target) => Ok(Dispatch::Rewritten(target, sql)),
            other => Ok(other),
        }
    }

    /// Every carried subquery of `plan`'s value, in a simple query (a
    /// statement's or an SQL EXECUTE's); `None`: one failed, and the client
    /// has its error and ReadyForQuery.
    async fn simple_values(
        &mut self,
        plan: &CarryPlan,
        refusal: &ClientError,
        args: &Args<'_>,
    ) -> Result<Option<Vec<Answer>>, End> {
        let mut values = Vec::with_capacity(plan.carried.len());
        for index in 0..plan.carried.len() {
            match self.carried_value(plan, index, refusal, args).await? {
                Ran::Value(value) => values.push(value),
                Ran::Failed { ready } => {
                    if !ready {
                        let status = self.status();
                        messages::ready_for_query(self.client.out(), status);
                    }
                    self.client.flush().await?;
                    return Ok(None);
                }
            }
        }
        Ok(Some(values))
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
        let Some(answer) = reply::answer(reply, carry) else {
            let error = ClientError::new(
                sqlstate::INTERNAL_ERROR,
                format!(
                    "the subquery {} run first gave no rows pgshard can read (or text that \
                     is not UTF-8)",
                    carry.subquery
                ),
            );
            return Ok(self.carry_failed(&error));
        };
        let past = if u64::try_from(reply::row_count(&answer)).unwrap_or(u64::MAX) > limit.rows {
            Some(format!(
                "more than {} rows (cross_shard_gather_limit.rows)",
                limit.rows
            ))
        } else if reply::bytes(&answer) > limit.bytes {
            Some(format!(
                "more than {} bytes (cross_shard_gather_limit.bytes)",
                limit.bytes
            ))
        } else {
            None
        };
        match past {
            Some(past) => {
                let error = ClientError::new(
                    sqlstate::PROGRAM_LIMIT_EXCEEDED,
                    format!(
                        "the result of the subquery {} is {past} to carry into the statement: \
                         restrict it, or raise cross_shard_gather_limit",
                        carry.subquery
                    ),
                );
                Ok(self.carry_failed(&error))
            }
            None => Ok(Ran::Value(answer)),
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

/// A routing refusal of a SELECT that finishing on the coordinator
/// answers (`gather.rs`; and of a write whose subqueries or FROM items may be
/// carried): query levels or joins the shards cannot answer alone.
pub(super) fn gathered_refusal(err: &RouteError) -> bool {
    matches!(
        err,
        RouteError::SubqueryWithoutKey { .. }
            | RouteError::SubqueryOnOtherShards { .. }
            | RouteError::JoinWithoutKey { .. }
            | RouteError::OuterJoinEverywhere { .. }
            | RouteError::KeysOnDifferentShards { .. }
    )
}

/// What a write is refused with when its subqueries cannot be run first:
/// the router's refusal (`err`), or, for a write the router placed
/// ([`Session::cuts_rows`]), why it cannot run as it is.
pub(super) fn refusal(err: Option<&RouteError>) -> ClientError {
    let message = match err {
        Some(err) => err.to_string(),
        None => "a FROM/USING subquery or WITH query of this write reads across shards and \
                 aggregates, deduplicates, limits or combines rows, which each shard would \
                 compute over its own rows only"
            .to_owned(),
    };
    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message)
}

/// The client's refusal when the subqueries cannot be run first: the
/// router's alone when the write has nothing to run first.
fn not_carried(
    err: Option<&RouteError>,
    refusal: &ClientError,
    why: &router::carry::NotCarried,
) -> ClientError {
    use router::carry::NotCarried;
    let subquery = matches!(
        err,
        None | Some(
            RouteError::SubqueryWithoutKey { .. } | RouteError::SubqueryOnOtherShards { .. }
        )
    );
    if !subquery && matches!(why, NotCarried::Nothing | NotCarried::NotWrite) {
        return refusal.clone();
    }
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "{}; nor can its subqueries be run first on the coordinator: {why}",
            refusal.message
        ),
    )
}

/// The failed carried subquery's reply without its columns and rows, its
/// error for an unresolved name made a refusal that says the subquery may
/// be correlated.
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
            // The failed SELECT's columns and rows are not the write's.
            BackendMessage::RowDescription(_) | BackendMessage::DataRow(_) => {}
            _ => out.extend_from_slice(frame.bytes()),
        }
    }
    out.unsplit(reply);
    out
}
