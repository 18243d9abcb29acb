//! Data-modifying WITH across shards (issue 34; rule 13 of
//! `router::gather`), in the simple protocol: a SELECT, or an INSERT ...
//! SELECT, whose top-level WITH writes, refused by the router or the
//! streaming merge. Each WITH query runs on the shards its own routing
//! picks (an INSERT's rows on exactly one), its RETURNING rows gathered
//! into a temp table on the coordinator (streamed by COPY, bounded by
//! `cross_shard_gather_limit`), then the rest runs over them: a SELECT
//! finished on the coordinator, an INSERT ... SELECT's rows sent to their
//! shards (`insert_select.rs`). All of it inside one transaction spanning
//! the shards: the client's block, else one pgshard opens for the
//! statement and commits (two-phase when on) or rolls back as a whole.
//! What cannot be done exactly is refused (0A000) before anything runs.

use router::config::CrossShardFinish;
use router::gather::{GatherOptions, GatherPlan};
use router::route::RouteError;
use router::summary::{StatementKind, Summary};

use super::{Finish, Gathered};
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::{messages, sqlstate};
use crate::session::dispatch::Dispatch;
use crate::session::{End, Session};

impl Session {
    /// `summary` is one SELECT or INSERT whose WITH writes, on a config
    /// that finishes on the coordinator.
    pub(in crate::session) fn dml_with(&self, summary: &Summary) -> bool {
        let [statement] = summary.statements.as_slice() else {
            return false;
        };
        self.shared.config().general.cross_shard_finish == CrossShardFinish::Coordinator
            && !statement.cte_writes.is_empty()
            && matches!(
                statement.kind,
                StatementKind::Select | StatementKind::Insert
            )
    }

    /// A simple query with data-modifying WITH queries that the router or
    /// the streaming merge refused (`refusal`): run across shards as the
    /// module doc says, or refused saying why.
    pub(in crate::session) async fn with_writes_query(
        &mut self,
        frame_sql: &str,
        summary: &Summary,
        refusal: ClientError,
    ) -> Result<Dispatch, End> {
        // Boxed: a session's future stays small (`listener/arrival.rs`).
        Box::pin(self.with_writes(frame_sql, summary, refusal)).await
    }

    /// [`with_writes_query`](Self::with_writes_query) of a statement the
    /// router refused with `err`.
    pub(in crate::session) async fn dml_with_routed(
        &mut self,
        frame_sql: &str,
        summary: &Summary,
        err: &RouteError,
    ) -> Result<Dispatch, End> {
        let refusal = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string());
        self.with_writes_query(frame_sql, summary, refusal).await
    }

    async fn with_writes(
        &mut self,
        frame_sql: &str,
        summary: &Summary,
        refusal: ClientError,
    ) -> Result<Dispatch, End> {
        let refuse = |message: String| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message);
        let Some(statement) = summary.statements.first() else {
            return Ok(self.refused(refusal));
        };
        let (sql, finish) = match statement.kind {
            StatementKind::Insert => {
                if let Err(why) = router::gather::target_written(statement) {
                    let message =
                        format!("{}; nor can it run across shards: {why}", refusal.message);
                    return Ok(self.refused(refuse(message)));
                }
                match router::insert_select::plan(frame_sql, self.cluster.sharding()) {
                    Ok(plan) => (
                        plan.select_sql.clone(),
                        Finish::Insert(Box::new(plan), None),
                    ),
                    Err(why) => {
                        let message = format!(
                            "{}; nor can its WITH queries run across shards before it: {why}",
                            refusal.message
                        );
                        return Ok(self.refused(refuse(message)));
                    }
                }
            }
            _ => (frame_sql.to_owned(), Finish::Simple),
        };
        // Whatever is refused is refused before anything runs.
        let options = GatherOptions {
            coordinator: self.shared.config().general.cross_shard_coordinator,
            ..GatherOptions::default()
        };
        let plan = match self.gather_plan(&sql, &options, &refusal) {
            Ok(plan) => plan,
            Err(error) => return Ok(self.refused(error)),
        };
        let routes = match self.gather_routes(&plan, None).await? {
            Ok(routes) => routes,
            Err(error) => return Ok(self.refused(error)),
        };
        if let Some(error) = spread_insert(&plan, &routes) {
            return Ok(self.refused(error));
        }
        let in_block = self.status() != TransactionStatus::Idle || self.txn.spans();
        if in_block {
            return self.gather_simple(&sql, refusal, true, &finish).await;
        }
        let shards: Vec<usize> = (0..self.cluster.shards()).collect();
        match self.open_copy_scope(&shards).await? {
            Ok(true) => {}
            Ok(false) => return self.gather_simple(&sql, refusal, true, &finish).await,
            Err(error) => return Ok(self.refused(error)),
        }
        let errors = self.pipeline.error_mark();
        let gathered = self.gather_statement(&sql, refusal, true, &finish).await?;
        let ran = matches!(gathered, Gathered::Ran);
        let failed = !ran || self.pipeline.errors_since(errors) || self.txn.failed();
        let auto = self.shared.config().general.two_phase_commit_auto;
        if let Err(error) = self.end_spanning(!failed, auto).await? {
            if !failed {
                self.gather_error(&error);
            }
        }
        if ran {
            let status = self.status();
            messages::ready_for_query(self.client.out(), status);
            self.client.flush().await?;
        }
        Ok(Dispatch::Done)
    }
}

/// An INSERT in WITH routed to several shards: its rows would land on
/// each (pgshard does not split them here).
fn spread_insert(plan: &GatherPlan, routes: &[Vec<usize>]) -> Option<ClientError> {
    let (gather, _) = plan
        .gathers
        .iter()
        .zip(routes)
        .find(|(g, shards)| g.write.is_some_and(|w| w.inserts) && shards.len() > 1)?;
    Some(ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "the INSERT into {} in WITH has rows for several shards: across shards an INSERT \
             in WITH must write one shard's rows (send its rows in a statement of their own)",
            gather.table.name
        ),
    ))
}

impl Session {
    /// A simple query the router routed where an INSERT ... SELECT's rows
    /// would not belong (`error`): with data-modifying WITH queries, run
    /// as the module doc says; else `insert_select.rs`'s.
    pub(in crate::session) async fn refused_moving(
        &mut self,
        frame_sql: &str,
        summary: &Summary,
        error: ClientError,
    ) -> Result<Dispatch, End> {
        match self.dml_with(summary) {
            true => self.with_writes_query(frame_sql, summary, error).await,
            false => Box::pin(self.refused_insert_select(frame_sql, summary, error)).await,
        }
    }

    /// A simple query the streaming merge refused (`error`) that the
    /// coordinator may finish: with data-modifying WITH queries as the
    /// module doc says, else as `gather.rs` does.
    pub(in crate::session) async fn finish_query(
        &mut self,
        frame_sql: &str,
        summary: &Summary,
        error: ClientError,
        in_txn: bool,
    ) -> Result<Dispatch, End> {
        match self.dml_with(summary) {
            true => self.with_writes_query(frame_sql, summary, error).await,
            false => self.gather_query(frame_sql, error, in_txn).await,
        }
    }
}
