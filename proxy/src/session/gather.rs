//! Finishing on the coordinator (issue 34) a cross-shard SELECT the
//! streaming merge refuses, when `cross_shard_finish = "coordinator"`:
//! [`router::gather::plan`] says which rows to gather; a server of the
//! coordinator database, checked out for this statement alone, opens a
//! transaction and creates a temp table per gather (`ON COMMIT DROP`);
//! each gather's rows stream from the shards into its table through a
//! binary COPY FROM STDIN (`gather/copy.rs`: bounded channels and the
//! coordinator's socket hold back fast shards, nothing is held whole);
//! the client's statement over those tables runs there, its reply relayed
//! to the client; COMMIT drops the tables. A coordinator connection that
//! broke is closed, never pooled.
//!
//! Simple protocol outside transaction blocks only, for now: inside a
//! block and in the extended protocol the statement stays refused (0A000)
//! with a message saying so.

mod copy;

use router::config::CrossShardFinish;
use router::gather::{GatherOptions, GatherPlan};
use router::route::Overrides;
use router::summary::{StatementKind, Summary};

use super::dispatch::Dispatch;
use super::holds::Held;
use super::{cancel_target, End, Session};
use crate::errors::ClientError;
use crate::execute::gather::finish;
use crate::execute::gather::sink::GatherSink;
use crate::metrics::RouteKind;
use crate::pool::Pooled;
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

/// What the statement is refused with when it would be finished on the
/// coordinator but cannot be yet (`where_`: inside a transaction block, in
/// the extended protocol).
pub(super) fn not_yet(refusal: &ClientError, where_: &str) -> ClientError {
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "{}; finishing such a query on the coordinator (cross_shard_finish = \"coordinator\") \
             runs only in the simple protocol outside transaction blocks for now, not {where_} \
             (it comes later): send it as a simple query outside a transaction block",
            refusal.message
        ),
    )
}

impl Session {
    /// `summary` is a statement the coordinator may finish when the
    /// streaming path refuses it: one SELECT that writes nothing, on a
    /// config that finishes on the coordinator.
    pub(super) fn finishes_on_coordinator(&self, summary: &Summary) -> bool {
        let config = self.shared.config();
        let [statement] = summary.statements.as_slice() else {
            return false;
        };
        config.general.cross_shard_finish == CrossShardFinish::Coordinator
            && statement.kind == StatementKind::Select
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
        if in_txn || self.status() != TransactionStatus::Idle || self.txn.spans() {
            return Ok(self.refused(not_yet(&refusal, "inside a transaction block")));
        }
        let coordinator = self.shared.config().general.cross_shard_coordinator;
        let options = GatherOptions { coordinator };
        let plan = match router::gather::plan(frame_sql, self.cluster.sharding(), &options) {
            Ok(plan) => plan,
            Err(why) => {
                let message = format!(
                    "{}; nor can it be finished on the coordinator: {why}",
                    refusal.message
                );
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message);
                return Ok(self.refused(error));
            }
        };
        let mut routes = Vec::with_capacity(plan.gathers.len());
        for gather in &plan.gathers {
            match self.gather_shards(&gather.shard_sql).await? {
                Ok(shards) => routes.push(shards),
                Err(error) => return Ok(self.refused(error)),
            }
        }
        self.shared.metrics.route(RouteKind::Coordinator);
        self.pipeline.clock_mut().routed(RouteKind::Coordinator);
        // The shards' unnamed statement goes with a gather's request.
        self.pipeline.unnamed_dropped();
        if self.attached.is_some() {
            self.detach().await?;
        }
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        self.run_on_coordinator(coordinator, &plan, &routes).await?;
        let status = self.status();
        messages::ready_for_query(self.client.out(), status);
        self.client.flush().await?;
        Ok(Dispatch::Done)
    }

    /// The shards a gather's SELECT reads (routed as a statement of its
    /// own: a pushed key picks one shard), or the client's error.
    async fn gather_shards(&mut self, sql: &str) -> Result<Result<Vec<usize>, ClientError>, End> {
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
            None => vec![self.any_shard()],
        };
        Ok(Ok(shards))
    }

    /// Check the coordinator's server out, run the plan there and give it
    /// back (closed if it broke). The client's reply (rows or an error) is
    /// written; its ReadyForQuery is the caller's.
    async fn run_on_coordinator(
        &mut self,
        coordinator: usize,
        plan: &GatherPlan,
        routes: &[Vec<usize>],
    ) -> Result<(), End> {
        let mut server = match self.checkout_server(coordinator, false).await? {
            Ok(server) => server,
            Err(err) => {
                let error = err.client_error(&self.info.database, coordinator);
                self.gather_error(&error);
                return Ok(());
            }
        };
        // The client's cancel reaches the coordinator (and, while a gather
        // reads them, its shards: `gather/copy.rs`).
        self.info.cancel.set([cancel_target(&server)]).await;
        let started = std::time::Instant::now();
        let limit = self.shared.config().general.cross_shard_gather_limit;
        let mut sink = GatherSink::new(limit);
        let ran = self
            .run_plan(&mut server, plan, routes, &mut sink, coordinator)
            .await;
        self.info.cancel.set(std::iter::empty()).await;
        let (rows, bytes) = sink.counted();
        self.shared.metrics.gathered(rows, bytes);
        let shards: Vec<usize> = routes.iter().flatten().copied().collect();
        self.pipeline
            .clock()
            .log_if_slow(&self.span, started.elapsed(), &shards);
        match ran {
            Ok(()) | Err(Stop::Failed) => {
                self.release(server, false).await;
                Ok(())
            }
            Err(Stop::Broken) => {
                drop(server);
                self.gather_error(&coordinator_lost(coordinator));
                Ok(())
            }
            Err(Stop::End(end)) => Err(end),
        }
    }

    /// The plan on the coordinator's `server`: the temp tables, the
    /// gathers, their keys, the finish (relayed) and COMMIT.
    async fn run_plan(
        &mut self,
        server: &mut Pooled,
        plan: &GatherPlan,
        routes: &[Vec<usize>],
        sink: &mut GatherSink,
        coordinator: usize,
    ) -> Result<(), Stop> {
        let mut setup = vec!["BEGIN READ WRITE".to_owned()];
        setup.extend(plan.gathers.iter().map(|g| g.create_sql.clone()));
        self.coordinator_run(server, &setup.join("; ")).await?;
        for (gather, shards) in plan.gathers.iter().zip(routes) {
            self.gather_into(server, gather, shards, sink, coordinator)
                .await?;
            if let Some(key) = &gather.key_sql {
                self.coordinator_run(server, key).await?;
            }
        }
        self.finish_on(server, &plan.finish_sql).await?;
        self.coordinator_run(server, "COMMIT").await
    }

    /// Run `sql` on the coordinator to its ReadyForQuery; its first error
    /// is the client's ([`Stop::Failed`]).
    pub(super) async fn coordinator_run(
        &mut self,
        server: &mut Pooled,
        sql: &str,
    ) -> Result<(), Stop> {
        let mut out = bytes::BytesMut::new();
        messages::query(&mut out, sql);
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        self.coordinator_reply(server).await
    }

    /// Read the coordinator's reply to its ReadyForQuery; its first error
    /// is the client's ([`Stop::Failed`]).
    pub(super) async fn coordinator_reply(&mut self, server: &mut Pooled) -> Result<(), Stop> {
        let mut error: Option<BackendFrame> = None;
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            match message.message() {
                BackendMessage::ErrorResponse(_) if error.is_none() => error = Some(message),
                BackendMessage::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match error {
            Some(error) => {
                self.relay_gather_error(&error);
                Err(Stop::Failed)
            }
            None => Ok(()),
        }
    }

    /// The finish: the client's statement over the temp tables, its reply
    /// relayed to the client (columns' origins zeroed).
    async fn finish_on(&mut self, server: &mut Pooled, sql: &str) -> Result<(), Stop> {
        let mut out = bytes::BytesMut::new();
        messages::query(&mut out, sql);
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        let mut failed = false;
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            match message.message() {
                BackendMessage::ReadyForQuery(_) => break,
                BackendMessage::ErrorResponse(error) => {
                    self.shared.metrics.error(error.code().unwrap_or_default());
                    self.pipeline.error_relayed();
                    failed = true;
                }
                _ => {}
            }
            let message = finish::for_client(message);
            self.client.out().extend_from_slice(message.bytes());
            if self.client.out().len() >= super::CLIENT_FLUSH_AT {
                self.client
                    .flush()
                    .await
                    .map_err(|gone| Stop::End(gone.into()))?;
            }
        }
        match failed {
            true => Err(Stop::Failed),
            false => Ok(()),
        }
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

/// The client's error when the coordinator's connection broke.
fn coordinator_lost(coordinator: usize) -> ClientError {
    ClientError::new(
        sqlstate::CONNECTION_FAILURE,
        format!(
            "the coordinator's server (database {coordinator}) closed the connection while \
             finishing a cross-shard statement"
        ),
    )
}
