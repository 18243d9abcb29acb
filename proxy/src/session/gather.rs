//! Finishing on the coordinator (issue 34) a cross-shard SELECT the
//! streaming merge refuses, when `cross_shard_finish = "coordinator"` (the
//! default; a prepared statement's views are read as their queries first):
//! [`router::gather::plan`] says which rows to gather; a server of the
//! coordinator database creates a temp table per gather; each gather's
//! rows stream from the shards into its table through a binary COPY FROM
//! STDIN (`gather/copy.rs`: bounded channels and the coordinator's socket
//! hold back fast shards, nothing is held whole); the client's statement
//! over those tables runs there, its reply relayed to the client
//! (`gather/run.rs`). A coordinator connection that broke is closed, never
//! pooled.
//!
//! Where the coordinator's server comes from ([`Host`]):
//! - outside a transaction block, a server checked out for this statement
//!   alone, in a transaction of its own (`BEGIN READ WRITE ... COMMIT`,
//!   the temp tables `ON COMMIT DROP`); the coordinator database's part of
//!   each gather is inserted there (`INSERT ... SELECT`), so no second
//!   server of that database is out at once;
//! - inside the client's block (`gather/block.rs`), the block's own server
//!   on the coordinator database: it sees the block's writes and snapshot
//!   and cannot wait on the block's own locks; the gathers read the
//!   block's servers (the coordinator's own part by `INSERT ... SELECT`
//!   there); the temp tables are dropped after the statement;
//! - inside a READ ONLY block (no temp table can be created there) or with
//!   `two_phase_commit` on (a transaction that touched a temp table cannot
//!   PREPARE), a session of its own as outside, while the gathers read the
//!   block's servers, omnisharded tables included: every row the statement
//!   reads is the block's.
//!
//! An error inside a block ends the block, as on one Postgres.
//! `EXPLAIN` of such a statement lists what each shard runs and what the
//! coordinator finishes, then the coordinator's plan over the temp tables
//! (empty without ANALYZE: nothing is gathered).
//!
//! In the extended protocol (`gather/portal.rs`) the Bind is answered
//! here and the statement runs at its Execute, parameters and result
//! formats the client's.
//!
//! A finish that outlives its statement ([`Kept`]) stays on the
//! coordinator's server, where the session follows it as a cursor on that
//! database (`cursor.rs`'s one-shard cursors): a `DECLARE` over the
//! gathered SELECT, and, in the extended protocol, a named portal or an
//! Execute with a row limit (the portal bound there under the client's
//! name, its rows read by the coordinator's own Executes, PortalSuspended
//! relayed). Its temp tables stay as long as it may read them: named apart
//! (`pgshard_<serial>_g<N>`), not dropped after the statement, gone with
//! the transaction (`ON COMMIT DROP`, after Postgres has materialized a
//! WITH HOLD cursor's rows). So it is kept inside the client's block on the
//! block's server, where its FETCH, MOVE, CLOSE and later Executes follow
//! it, and a DECLARE ... WITH HOLD outside a block in the coordinator's
//! own transaction, whose server then stays with the client (pinned, as a
//! WITH HOLD cursor's shard). Refused (0A000): a named portal or a row
//! limit outside a block (the portal would have to outlive the
//! coordinator's own transaction), either, or a DECLARE, in a READ ONLY
//! block or with `two_phase_commit` on (the coordinator is then a session
//! of its own, not the block's), and a Bind after another statement before
//! the Sync.

mod block;
mod copy;
mod finish_as;
mod kept;
mod portal;
mod run;
mod writes;

pub(super) use finish_as::Finish;
pub(super) use portal::GatherPortal;

use router::config::CrossShardFinish;
use router::gather::{GatherOptions, GatherPlan};

use kept::KEPT_OWN_IN_BLOCK;
use router::route::Overrides;
use router::summary::{StatementKind, Summary};

use super::dispatch::Dispatch;
use super::holds::Held;
use super::{End, Session};
use crate::errors::ClientError;
use crate::metrics::RouteKind;
use crate::protocol::backend::{BackendFrame, BackendMessage, TransactionStatus};
use crate::protocol::{messages, sqlstate};

/// How running a plan on the coordinator stopped early.
pub(super) enum Stop {
    /// The client's error is written; the coordinator's connection is
    /// usable (its transaction is rolled back when it goes back).
    Failed,
    /// The coordinator's connection broke: it is closed.
    Broken,
    /// The client left.
    End(End),
}

impl From<End> for Stop {
    fn from(end: End) -> Stop {
        Stop::End(end)
    }
}

/// Where the coordinator's server comes from (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Host {
    /// Checked out for the statement, outside any block.
    Own,
    /// Checked out for the statement, inside the client's block: the
    /// gathers read the block's servers, omnisharded tables included.
    OwnInBlock,
    /// The block's own server on the coordinator database.
    Block,
}

/// The name a [`Finish::Sql`] prepares its finish under.
pub(super) const SQL_FINISH: &str = "pgshard_finish";

/// What became of a statement sent to the coordinator path.
pub(super) enum Gathered {
    /// Refused: the client's error (and, in the simple protocol, its
    /// ReadyForQuery) is queued.
    Refused,
    /// Run: its rows or its error are written, nothing more.
    Ran,
    /// A simple query any shard answers as one Postgres would (a DECLARE
    /// without WITH HOLD outside a block: its error, 25P01, after its
    /// parse analysis); nothing is written.
    Postgres,
}

/// One gathered statement's run: the coordinator database, its host, and
/// whether its finish is kept there (its temp tables are not dropped).
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub coordinator: usize,
    pub host: Host,
    pub kept: bool,
}

impl Run {
    /// The gathers read the block's servers.
    fn in_block(self) -> bool {
        self.host != Host::Own
    }
}

/// What the statement is refused with when it would be finished on the
/// coordinator but cannot be yet (`where_`: in a named portal, with a row
/// limit on its Execute...), and what the client can do (`instead`).
pub(super) fn not_yet(refusal: &ClientError, (where_, instead): (&str, &str)) -> ClientError {
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "{}; finishing such a query on the coordinator (cross_shard_finish = \"coordinator\") \
             is not done {where_} yet (it comes later): {instead}",
            refusal.message
        ),
    )
}

impl Session {
    /// `summary` is a statement the coordinator may finish when the
    /// streaming path refuses it: one SELECT that writes nothing (or an
    /// EXPLAIN of one), on a config that finishes on the coordinator.
    pub(super) fn finishes_on_coordinator(&self, summary: &Summary) -> bool {
        let config = self.shared.config();
        let [statement] = summary.statements.as_slice() else {
            return false;
        };
        let declare = matches!(
            super::cursor::cursor_effect(summary),
            Some(router::summary::CursorEffect::Declare { .. })
        );
        config.general.cross_shard_finish == CrossShardFinish::Coordinator
            && (declare
                || matches!(
                    statement.kind,
                    StatementKind::Select | StatementKind::Explain
                ))
            && !statement.write
    }

    /// A simple query the streaming path refused with `refusal`: finished
    /// on the coordinator when it can be, else refused (with `refusal` and
    /// why the coordinator cannot take it either).
    pub(super) async fn gather_query(
        &mut self,
        frame_sql: &str,
        refusal: ClientError,
        in_txn: bool,
    ) -> Result<Dispatch, End> {
        self.gather_simple(frame_sql, refusal, in_txn, &Finish::Simple)
            .await
    }

    /// [`gather_query`](Self::gather_query) of a statement that comes as
    /// `finish` says, in the simple protocol (an EXECUTE).
    pub(super) async fn gather_simple(
        &mut self,
        frame_sql: &str,
        refusal: ClientError,
        in_txn: bool,
        finish: &Finish,
    ) -> Result<Dispatch, End> {
        match self
            .gather_statement(frame_sql, refusal, in_txn, finish)
            .await?
        {
            Gathered::Refused => Ok(Dispatch::Done),
            Gathered::Postgres => Ok(Dispatch::Send(super::transaction::Target::Any)),
            Gathered::Ran => {
                let status = self.status();
                messages::ready_for_query(self.client.out(), status);
                self.client.flush().await?;
                Ok(Dispatch::Done)
            }
        }
    }

    /// Finish `sql` on the coordinator, its reply (rows or an error) written
    /// for the client as `finish` says; or refuse it (with `refusal` and
    /// why the coordinator cannot take it either). No ReadyForQuery.
    pub(super) async fn gather_statement(
        &mut self,
        sql: &str,
        refusal: ClientError,
        in_txn: bool,
        finish: &Finish,
    ) -> Result<Gathered, End> {
        let simple = finish.simple();
        let in_block = in_txn || self.status() != TransactionStatus::Idle || self.txn.spans();
        if let Some(refused) = self.block_refused(in_block, simple, &refusal) {
            return Ok(refused);
        }
        let coordinator = self.shared.config().general.cross_shard_coordinator;
        // A prepared statement's text still names its views (a simple
        // query's comes expanded): gathered as the views' queries.
        let expanded = self.analysed_text(sql.as_bytes());
        let sql = expanded.as_str();
        let planned = self.plan_kept(sql, (finish, in_block), &refusal, coordinator);
        let (mut plan, mut options, kept) = match planned {
            Ok(planned) => planned,
            Err(Some(error)) => return Ok(self.gather_refused(error, simple)),
            Err(None) => return Ok(Gathered::Postgres),
        };
        let mut routes = match self.gather_routes(&plan, None).await? {
            Ok(routes) => routes,
            Err(error) => return Ok(self.gather_refused(error, simple)),
        };
        self.shared.metrics.route(RouteKind::Coordinator);
        self.pipeline.clock_mut().routed(RouteKind::Coordinator);
        // The shards' unnamed statement goes with a gather's request.
        self.pipeline.unnamed_dropped();
        if in_block {
            self.settle_main().await?;
        } else if self.attached.is_some() {
            self.detach().await?;
        }
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        let (host, block_server) = match in_block {
            false => (Host::Own, None),
            true => match self.block_host(coordinator, finish).await? {
                Some(hosted) => hosted,
                None => return Ok(Gathered::Ran),
            },
        };
        if host == Host::OwnInBlock {
            if kept.is_some() {
                let error = not_yet(&refusal, KEPT_OWN_IN_BLOCK);
                return Ok(self.failed_in_block(&error));
            }
            // Omnisharded tables are gathered too, from the block.
            options.gather_all = true;
            match self.replan(sql, &options, &refusal).await? {
                Ok(replanned) => (plan, routes) = replanned,
                Err(error) => return Ok(self.failed_in_block(&error)),
            }
        }
        let run = Run {
            coordinator,
            host,
            kept: kept.is_some(),
        };
        self.keep(kept.as_ref(), coordinator, in_block);
        let errors = self.pipeline.error_mark();
        match block_server {
            Some(server) => {
                self.run_in_block(server, &plan, &routes, run, finish)
                    .await?
            }
            None => self.run_on_coordinator(&plan, &routes, run, finish).await?,
        }
        if let Some(kept) = kept.filter(|_| self.pipeline.errors_since(errors)) {
            self.not_kept(&kept).await?;
        }
        Ok(Gathered::Ran)
    }

    /// Inside a block (`in_block`) that failed, or that does not spread
    /// over shards, the statement is refused.
    fn block_refused(
        &mut self,
        in_block: bool,
        simple: bool,
        refusal: &ClientError,
    ) -> Option<Gathered> {
        if in_block && self.status() == TransactionStatus::Failed {
            self.aborted(simple);
            return Some(Gathered::Refused);
        }
        if in_block && !self.txn.spans() {
            let error = not_yet(
                refusal,
                (
                    "in a transaction block pgshard does not spread over shards",
                    "send it outside the block",
                ),
            );
            return Some(self.gather_refused(error, simple));
        }
        None
    }

    /// The plan of `sql` and its gathers' shards again, for `options`
    /// (the block's server on the coordinator database reads any shard's
    /// copies).
    async fn replan(
        &mut self,
        sql: &str,
        options: &GatherOptions,
        refusal: &ClientError,
    ) -> Result<Result<(GatherPlan, Vec<Vec<usize>>), ClientError>, End> {
        let plan = match self.gather_plan(sql, options, refusal) {
            Ok(plan) => plan,
            Err(error) => return Ok(Err(error)),
        };
        Ok(self
            .gather_routes(&plan, Some(options.coordinator))
            .await?
            .map(|routes| (plan, routes)))
    }

    /// Refuse the statement (counted as refused).
    fn gather_refused(&mut self, error: ClientError, simple: bool) -> Gathered {
        self.shared.metrics.route(RouteKind::Refused);
        self.refuse(error, simple);
        Gathered::Refused
    }

    /// pgshard's `error` for a statement inside the block once the block's
    /// servers were reached: the block is over, as on one Postgres.
    fn failed_in_block(&mut self, error: &ClientError) -> Gathered {
        self.gather_error(error);
        self.txn.fail();
        Gathered::Ran
    }

    /// The plan of `sql`, or the client's error (`refusal`, and why the
    /// coordinator cannot take it either).
    fn gather_plan(
        &self,
        sql: &str,
        options: &GatherOptions,
        refusal: &ClientError,
    ) -> Result<GatherPlan, ClientError> {
        router::gather::plan(sql, self.cluster.sharding(), options).map_err(|why| {
            let message = format!(
                "{}; nor can it be finished on the coordinator: {why}",
                refusal.message
            );
            ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message)
        })
    }

    /// The shards each gather reads; a gather any shard can answer (an
    /// omnisharded table) reads `any` when given (the block's server on
    /// the coordinator database), else any shard.
    async fn gather_routes(
        &mut self,
        plan: &GatherPlan,
        any: Option<usize>,
    ) -> Result<Result<Vec<Vec<usize>>, ClientError>, End> {
        let mut routes = Vec::with_capacity(plan.gathers.len());
        for gather in &plan.gathers {
            match self.gather_shards(&gather.shard_sql, any).await? {
                Ok(shards) => routes.push(shards),
                Err(error) => return Ok(Err(error)),
            }
        }
        Ok(Ok(routes))
    }

    /// The shards a gather's SELECT reads (routed as a statement of its
    /// own: a pushed key picks one shard), or the client's error.
    async fn gather_shards(
        &mut self,
        sql: &str,
        any: Option<usize>,
    ) -> Result<Result<Vec<usize>, ClientError>, End> {
        let refuse = |why: String| {
            Ok(Err(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("a gather for the coordinator cannot be routed ({sql}): {why}"),
            )))
        };
        let lookup = match self.shared.cache.lookup(sql, self.cluster.engine()) {
            Ok(lookup) => lookup,
            Err(err) => return refuse(err.to_string()),
        };
        let params = lookup.params(&[]);
        let routed = match self
            .route_holding(&lookup, &params, &Overrides::default())
            .await?
        {
            Held::Routed(routed) => routed,
            Held::Unrouted(err) => return refuse(err.to_string()),
            Held::TimedOut(error) => return Ok(Err(error)),
        };
        let shards = match self.shards_of(&routed.route) {
            Some(shards) => shards.into_vec(),
            None => vec![any.unwrap_or_else(|| self.any_shard())],
        };
        Ok(Ok(shards))
    }

    /// A server's ErrorResponse, relayed to the client as the statement's
    /// error.
    pub(super) fn relay_gather_error(&mut self, error: &BackendFrame) {
        if let BackendMessage::ErrorResponse(fields) = error.message() {
            self.shared.metrics.error(fields.code().unwrap_or_default());
        }
        self.pipeline.error_relayed();
        self.client.out().extend_from_slice(error.bytes());
    }

    /// pgshard's own error for the statement.
    pub(super) fn gather_error(&mut self, error: &ClientError) {
        self.shared.metrics.error(error.code.as_bytes());
        self.pipeline.error_relayed();
        error.encode(self.client.out());
    }
}
