//! Writes whose subqueries read across shards, bound in the extended
//! protocol (issue 34): at the Bind, [`router::carry::plan_bound`] picks
//! the subqueries; each runs first on the coordinator path, parsed with
//! the statement's parameter types (a shard's ParameterDescription of it
//! when the client's Parse left some unspecified) and bound with the
//! Bind's values and formats, so a `$n` inside the subquery is the client's
//! value; the write with their results, its own `$n` kept, is registered
//! as a statement of its own and bound instead of the client's, with the
//! client's Bind: routed, prepared where it goes, described and executed
//! there as any statement (its BindComplete, rows and tag are the
//! server's). The subqueries run at the Bind, not at the Execute.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::route::RouteError;

use super::{not_carried, Args, Ran};
use crate::errors::ClientError;
use crate::protocol::backend::{BackendMessage, TransactionStatus};
use crate::protocol::frontend::{Bind, BindView, Named};
use crate::protocol::{messages, rows, sqlstate};
use crate::session::reply_plan::Step;
use crate::session::statements::Statement;
use crate::session::{End, Session};

/// What a Bind of a write whose subqueries read across shards becomes.
pub(in crate::session) enum Carried {
    /// Not such a write: the Bind goes its usual way.
    Unchanged,
    /// The client has its error (the rest up to Sync is skipped).
    Answered,
    /// The write with the subqueries' results: bind this statement instead.
    Instead(Arc<Statement>),
}

impl Session {
    /// Refuse the Bind with `error` (counted as a refused route).
    fn refuse_bind(&mut self, error: ClientError) {
        self.shared
            .metrics
            .route(crate::metrics::RouteKind::Refused);
        self.refuse(error, false);
    }

    /// A Bind (`bind`) of `statement`: when the router refuses it for a
    /// subquery that reads across shards, its subqueries run now and the
    /// write with their results is what the Bind binds, or it is refused.
    pub(in crate::session) async fn carried_statement(
        &mut self,
        bind: Option<&BindView<'_>>,
        statement: &Arc<Statement>,
    ) -> Result<Carried, End> {
        let (Some(view), Some(info)) = (bind, self.route_info(statement)) else {
            return Ok(Carried::Unchanged);
        };
        if !self.may_carry(&info.entry.summary) {
            return Ok(Carried::Unchanged);
        }
        let err = match self.route_bound(info, view).0 {
            Err(err) if self.carries(&err, &info.entry.summary) => Some(err),
            Ok(_)
                if self.cuts_rows(
                    &info.entry.summary,
                    &String::from_utf8_lossy(&statement.query),
                ) =>
            {
                None
            }
            _ => return Ok(Carried::Unchanged),
        };
        let err = err.as_ref();
        if self.status() == TransactionStatus::Failed {
            self.aborted(false);
            return Ok(Carried::Answered);
        }
        let in_block = self.status() != TransactionStatus::Idle || self.txn.spans();
        let earlier =
            self.cluster.transaction_mode() && self.attached.is_some() && self.pipeline.unsynced();
        if !in_block && earlier {
            // Outside a block the statements before it up to the Sync are
            // one implicit transaction, which the subqueries' own session
            // cannot see (and running them first would commit it apart).
            let error = ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "{}; pgshard runs such a write's subqueries first, but not after another \
                     statement before the Sync outside a transaction block: send a Sync before \
                     it, or run them in a transaction block",
                    super::refusal(err).message
                ),
            );
            self.shared
                .metrics
                .route(crate::metrics::RouteKind::Refused);
            self.refuse(error, false);
            return Ok(Carried::Answered);
        }
        let bind = view.to_bind();
        match self.carry_bound(statement, bind, err).await? {
            Some(rewritten) => Ok(Carried::Instead(rewritten)),
            None => {
                self.phase.skip();
                Ok(Carried::Answered)
            }
        }
    }

    /// Run the carried subqueries of `statement` with `bind`'s values and
    /// register the write with their results; `None`: the client has its
    /// error.
    async fn carry_bound(
        &mut self,
        statement: &Statement,
        bind: Bind,
        err: Option<&RouteError>,
    ) -> Result<Option<Arc<Statement>>, End> {
        let refusal = super::refusal(err);
        let coordinator = self.shared.config().general.cross_shard_coordinator;
        let sql = String::from_utf8_lossy(&statement.query).into_owned();
        let max_rows = self.shared.config().general.cross_shard_gather_limit.rows;
        let sharding = self.cluster.sharding();
        let plan = match router::carry::plan_bound(&sql, sharding, coordinator, max_rows) {
            Ok(plan) => plan,
            Err(why) => {
                self.refuse_bind(not_carried(err, &refusal, &why));
                return Ok(None);
            }
        };
        let Some(types) = self.carry_param_types(statement, &bind).await? else {
            return Ok(None);
        };
        // The subqueries' own Bind: the client's values, text results.
        let values_bind = Bind {
            portal: Bytes::new(),
            statement: Bytes::new(),
            param_formats: bind.param_formats,
            params: bind.params,
            result_formats: Vec::new(),
        };
        let bound = (values_bind, types.clone());
        let Some(mark) = self.answer_earlier().await? else {
            return Ok(None);
        };
        let mut values = Vec::with_capacity(plan.carried.len());
        for index in 0..plan.carried.len() {
            let ran = self
                .carried_value(&plan, index, &refusal, &Args::Bound(&bound))
                .await?;
            match ran {
                Ran::Value(value) => values.push(value),
                Ran::Failed { .. } => {
                    if self.client.out().len() > mark {
                        // A subquery that ran and failed: Postgres fails
                        // it at the Execute, after the Bind's BindComplete.
                        let error = self.client.out().split_off(mark);
                        messages::bind_complete(self.client.out());
                        self.client.out().unsplit(error);
                    }
                    return Ok(None);
                }
            }
        }
        let write = match plan.write_sql(&values) {
            Ok(write) => write,
            Err(why) => {
                self.refuse_bind(not_carried(err, &refusal, &why));
                return Ok(None);
            }
        };
        Ok(Some(self.shared.statements.get_or_insert(
            &Bytes::from(write),
            &types,
            &self.shared.cache,
            self.cluster.engine(),
        )))
    }

    /// Before the subqueries run: what went before the Bind is answered
    /// (inside a block, its statements' replies read; outside, the server
    /// let go) and the replies pgshard made itself are written, so that the
    /// subqueries' replies alone follow the returned mark in the client's
    /// buffer; `None`: an earlier statement failed (the rest is skipped).
    async fn answer_earlier(&mut self) -> Result<Option<usize>, End> {
        let in_block = self.status() != TransactionStatus::Idle || self.txn.spans();
        if in_block {
            self.settle_main().await?;
        } else if self.attached.is_some() {
            self.detach().await?;
        }
        if self.phase.skipping() {
            return Ok(None);
        }
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        Ok(Some(self.client.out().len()))
    }

    /// The types of `statement`'s parameters: the client's when it gave
    /// them all, else a shard's ParameterDescription of the statement (as
    /// Postgres infers them from the whole write); `None`: the client has
    /// the error (the statement's own, from that shard).
    async fn carry_param_types(
        &mut self,
        statement: &Statement,
        bind: &Bind,
    ) -> Result<Option<Vec<u32>>, End> {
        let given = &statement.param_types;
        if given.len() == bind.params.len() && given.iter().all(|&oid| oid != 0) {
            return Ok(Some(given.clone()));
        }
        let shard = self.any_shard();
        let mut server = match self.checkout_server(shard, true).await? {
            Ok(server) => server,
            Err(err) => {
                let error = err.client_error(&self.info.database, shard);
                self.refuse(error, false);
                return Ok(None);
            }
        };
        let mut out = BytesMut::new();
        messages::parse(&mut out, b"", &statement.query, given);
        messages::describe(&mut out, Named::Statement, b"");
        messages::sync(&mut out);
        let mut types = None;
        let mut error = None;
        let read = async {
            server.conn.send(&out).await.ok()?;
            loop {
                let message = server.conn.read_message().await.ok()?;
                match message.message() {
                    BackendMessage::ReadyForQuery(_) => return Some(()),
                    BackendMessage::ParameterDescription(body) => {
                        types = rows::parameter_types(body);
                    }
                    BackendMessage::ErrorResponse(_) if error.is_none() => error = Some(message),
                    _ => {}
                }
            }
        };
        let answered = read.await.is_some();
        match answered {
            true => self.release(server, false).await,
            false => drop(server),
        }
        // That server's unnamed statement is now this one.
        self.pipeline.unnamed_dropped();
        match (answered, error, types) {
            (true, None, Some(types)) => Ok(Some(types)),
            (true, Some(error), _) => {
                self.plan.push(Step::Local {
                    bytes: Bytes::copy_from_slice(error.bytes()),
                    ready: false,
                });
                self.pipeline.error_relayed();
                self.txn.on_error();
                Ok(None)
            }
            _ => {
                self.refuse(ClientError::shard_lost(), false);
                Ok(None)
            }
        }
    }
}
