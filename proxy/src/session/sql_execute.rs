//! SQL EXECUTE in a session: `EXECUTE name (arguments)` of a statement the
//! client prepared (`sql_prepare.rs`) is routed as that statement with the
//! arguments as its parameters (`router::prepared`: literal arguments
//! give keys, the rest none), and sent with pgshard's name for the
//! statement in place of the client's, to servers that hold it (prepared
//! first where missing). On several shards it runs as a fan-out whose rows
//! are merged by the statement's own merge plan; where the plan rewrites
//! the statement (hidden sort or group columns), the shards run the
//! rewritten one, prepared with the parameters it keeps (renumbered, their
//! declared types kept) and executed with their arguments. EXPLAIN EXECUTE
//! runs on one shard only; CREATE TABLE AS EXECUTE is refused on a
//! sharded cluster. A statement the streaming path refuses is finished on
//! the coordinator when the config says so (`gather.rs`): the statement's
//! body is planned, and the coordinator prepares the finish with the
//! client's type list and executes it with the client's arguments.

use std::sync::Arc;

use bytes::BytesMut;
use router::cache::Lookup;
use router::prepared::{self, ArgValue};
use router::route::{Overrides, Params, RouteError, Routed};
use router::summary::{Argument, SessionEffect, StatementKind};

use super::dispatch::Shards;
use super::fan_out::{MergeRequest, Reply, Scope};
use super::holds::Pass;
use super::reply_plan::{self, Step};
use super::sql_prepare::SqlQuery;
use super::sql_prepared::{self, ExecuteMerge, ShardRun, SqlStatement, TypedRoute};
use super::transaction::{Placement, Target, CROSS_SHARD_TXN};
use super::{End, Session};
use crate::errors::ClientError;
use crate::execute::fan_out::Prepare;
use crate::pool::Pooled;
use crate::protocol::messages;
use crate::protocol::sqlstate;

/// An EXECUTE's text and where the statement's name is in it.
pub(super) type Named<'t> = (&'t str, (usize, usize));

impl Session {
    /// `EXECUTE name (...)` of `statement` (kind `Other`), or EXPLAIN
    /// EXECUTE, or CREATE TABLE AS EXECUTE (kind `Ddl`).
    pub(super) async fn sql_execute(
        &mut self,
        lookup: &Lookup,
        kind: &StatementKind,
        effect: &SessionEffect,
    ) -> Result<SqlQuery, End> {
        let SessionEffect::Execute { name, args, .. } = effect else {
            return Ok(SqlQuery::Not);
        };
        let Some(statement) = self.named.sql.get(name).cloned() else {
            return Ok(SqlQuery::Not);
        };
        let text = effect
            .statement_text(&lookup.entry.text)
            .unwrap_or_default();
        let Some(at) = prepared::execute_name(text, name) else {
            let error = ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("pgshard could not find the name \"{name}\" in this EXECUTE; send it as EXECUTE name (arguments)"),
            );
            self.refuse(error, true);
            return Ok(SqlQuery::Done);
        };
        let target = if !self.sharded() {
            Target::Any
        } else if *kind == StatementKind::Ddl {
            // CREATE TABLE AS EXECUTE.
            if let Some(error) = self.sql_prepared_elsewhere(&lookup.entry.summary) {
                self.refuse(error, true);
            }
            return Ok(SqlQuery::Done);
        } else {
            let explain = *kind == StatementKind::Explain;
            match self
                .route_execute(lookup, &statement, args, (text, at), explain)
                .await?
            {
                Some((target, carried)) => {
                    let run = prepared::replace(text, at, &carried.name);
                    return Ok(SqlQuery::Run(target, carried, run));
                }
                None => return Ok(SqlQuery::Done),
            }
        };
        let run = prepared::replace(text, at, &statement.name);
        Ok(SqlQuery::Run(target, statement, run))
    }

    /// Run an EXECUTE's text (`run`, with the server's name) on `target`,
    /// `statement` prepared there first; `sql` is the client's text.
    pub(super) async fn run_sql_execute(
        &mut self,
        target: Target,
        statement: Arc<SqlStatement>,
        run: &str,
        sql: &[u8],
    ) -> Result<(), End> {
        if !self.ensure_server_or_reply(target, true).await? {
            return Ok(());
        }
        if !self.sql_prepared_here(&statement, None).await? {
            self.ready_after_error();
            return Ok(());
        }
        if let Some(server) = self.attached.main_mut() {
            server.conn.dirty |= statement.leaves_state && self.cluster.transaction_mode();
        }
        self.count_query();
        self.pipeline.clock_mut().statement(sql);
        self.pipeline.query(run);
        self.plan.push(Step::forward(reply_plan::SYNC));
        Ok(())
    }

    /// Where an EXECUTE of `statement` goes on a sharded cluster: one
    /// target and the statement it runs there (`statement`, or the write
    /// with its carried subqueries' results: `carry/execute.rs`), or
    /// `None` when it was refused or ran on several shards.
    pub(super) async fn route_execute(
        &mut self,
        lookup: &Lookup,
        statement: &Arc<SqlStatement>,
        args: &[Argument],
        named: Named<'_>,
        explain: bool,
    ) -> Result<Option<(Target, Arc<SqlStatement>)>, End> {
        self.follow_config();
        let Some(body) = self.sql_body(statement).cloned() else {
            self.refuse(unparsed(), true);
            return Ok(None);
        };
        if (self
            .spanning_statement(&body.entry.summary, named.0)
            .await?)
            .is_some()
        {
            return Ok(None);
        }
        let values: Vec<ArgValue> = args.iter().map(ArgValue::of).collect();
        let shards = loop {
            let (shards, touches) =
                match self.route_sql(&lookup.overrides, statement, &body, &values) {
                    Ok(routed) => routed,
                    Err(error) if !explain && self.gathers_execute(&body, &error) => {
                        self.gather_execute(statement, named, error).await?;
                        return Ok(None);
                    }
                    Err(error)
                        if !explain
                            && self.carries_execute(
                                &lookup.overrides,
                                statement,
                                &body,
                                &values,
                            ) =>
                    {
                        return Box::pin(self.carry_execute(lookup, statement, args, named, error))
                            .await;
                    }
                    Err(error) => {
                        self.refused(error);
                        return Ok(None);
                    }
                };
            match self.pass_hold(touches).await? {
                Pass::Go => break shards,
                Pass::Again => continue,
                Pass::TimedOut(error) => {
                    self.refused(error);
                    return Ok(None);
                }
            }
        };
        if !explain && self.cuts_rows(&body.entry.summary, &statement.body) {
            // A FROM/USING subquery or WITH query that cuts rows across
            // shards: carried all the same (`router::carry`'s rule 8).
            let refusal = super::carry::refusal(None);
            return Box::pin(self.carry_execute(lookup, statement, args, named, refusal)).await;
        }
        self.place_execute(&body, statement, &values, named, (shards, explain))
            .await
    }

    /// An EXECUTE of `statement` (its body looked up as `body`) routed to
    /// `shards`: the target it goes to, or run on several (`None`); an
    /// EXPLAIN of one on several is refused.
    async fn place_execute(
        &mut self,
        body: &Lookup,
        statement: &Arc<SqlStatement>,
        values: &[ArgValue],
        named: Named<'_>,
        (shards, explain): (Option<Shards>, bool),
    ) -> Result<Option<(Target, Arc<SqlStatement>)>, End> {
        let in_txn = match self.place(shards.as_deref(), false) {
            Placement::Send(target) => return Ok(Some((target, Arc::clone(statement)))),
            Placement::Refuse => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN);
                self.refuse(error, true);
                return Ok(None);
            }
            Placement::FanOut => false,
            Placement::FanOutInTxn => true,
        };
        if explain {
            self.refused(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "EXPLAIN EXECUTE of a prepared statement that runs on several shards is not supported; EXPLAIN the statement itself",
            ));
            return Ok(None);
        }
        let shards = shards.map(|s| s.into_vec()).unwrap_or_default();
        self.fan_out_execute(body, statement, values, named, (shards, in_txn))
            .await?;
        Ok(None)
    }

    /// The databases an EXECUTE of `statement` (its body looked up as
    /// `body`) with arguments `values` runs on (`None`: any), and whether
    /// it touches a moving logical shard; or why it cannot run;
    /// `overrides` are those of the EXECUTE's own comments.
    pub(super) fn route_sql(
        &self,
        overrides: &Overrides,
        statement: &SqlStatement,
        body: &Lookup,
        values: &[ArgValue],
    ) -> Result<(Option<Shards>, bool), ClientError> {
        let routed = self
            .route_arguments(overrides, statement, body, values)
            .map_err(|err| {
                ClientError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("{err} (in an EXECUTE, only literal arguments give keys)"),
                )
            })?;
        let shards = self.routed_to(&body.entry, &routed.route);
        let text = body.entry.text.as_bytes();
        match self.insert_select_error(&body.entry.summary, text, shards.as_deref()) {
            Some(error) => Err(error),
            None => Ok((shards, routed.touches_moving)),
        }
    }

    /// The router's route of an EXECUTE of `statement` with `values`.
    pub(super) fn route_arguments(
        &self,
        overrides: &Overrides,
        statement: &SqlStatement,
        body: &Lookup,
        values: &[ArgValue],
    ) -> Result<Routed, RouteError> {
        let bind = sql_prepared::route_params(values);
        let params = body.params(&bind);
        let overrides = self.overrides(&Overrides {
            shard: overrides.shard.or(body.overrides.shard),
            sharding_key: (overrides.sharding_key.clone())
                .or_else(|| body.overrides.sharding_key.clone()),
        });
        self.route_typed(statement, body, &params, &overrides)
    }

    /// The AST cache's lookup of a prepared statement's text, made once.
    pub(super) fn sql_body<'s>(&self, statement: &'s SqlStatement) -> Option<&'s Lookup> {
        statement
            .route
            .get_or_init(|| {
                self.shared
                    .cache
                    .lookup(&statement.body, self.cluster.engine())
                    .ok()
            })
            .as_ref()
    }

    /// Route `statement` (its body looked up as `body`) with the declared
    /// parameter types, if it declares any that matter.
    fn route_typed(
        &self,
        statement: &SqlStatement,
        body: &Lookup,
        params: &Params<'_>,
        overrides: &Overrides,
    ) -> Result<Routed, RouteError> {
        let typed = statement.typed.get_or_init(|| {
            let entry = &body.entry;
            let own = if entry.templated {
                entry.literal_base
            } else {
                u16::MAX
            };
            prepared::with_declared_types(&entry.summary, &statement.declared, own)
                .map(TypedRoute::new)
        });
        match typed {
            Some(typed) => typed.route(params, overrides, self.cluster.sharding()),
            None => body.entry.route(params, overrides, self.cluster.sharding()),
        }
    }

    /// An EXECUTE on several shards (`in_txn`: inside the client's
    /// transaction): every shard runs it (or the statement the merge
    /// rewrote), prepared first where missing, and the replies are merged
    /// as the statement's own.
    async fn fan_out_execute(
        &mut self,
        body: &Lookup,
        statement: &Arc<SqlStatement>,
        values: &[ArgValue],
        (text, at): Named<'_>,
        (shards, in_txn): (Vec<usize>, bool),
    ) -> Result<(), End> {
        let summary = &body.entry.summary;
        let rows = if router::route::holds_copies(summary, self.cluster.sharding()) {
            Ok((None, Reply::Copies))
        } else {
            self.execute_rows(statement, body, values)
        };
        let (shard, reply) = match rows {
            Ok(rows) => rows,
            Err(error) if self.gathers_execute(body, &error) => {
                self.gather_execute(statement, (text, at), error).await?;
                return Ok(());
            }
            Err(error) => {
                self.refused(error);
                return Ok(());
            }
        };
        let shard = shard.and_then(|shard| Some((shard.execute(&text[at.1..])?, shard.statement)));
        let (sql, run) = shard.unwrap_or_else(|| {
            let sql = prepared::replace(text, at, &statement.name);
            (sql, Arc::clone(statement))
        });
        let mut query = BytesMut::new();
        messages::query(&mut query, &sql);
        let query = query.freeze();
        let request = |_: &Pooled, out: &mut BytesMut| out.extend_from_slice(&query);
        let prepare = Prepare {
            id: run.id,
            sql: run.prepare.clone(),
            limit: self.cluster.prepared_limit(),
        };
        self.pipeline.unnamed_dropped();
        if in_txn {
            self.fan_out_with(&shards, request, Some(prepare), reply, Scope::InTxn)
                .await
        } else if super::dispatch::atomic_across_shards(
            summary,
            &body.entry.text,
            self.cluster.sharding(),
        ) {
            self.fan_out_atomic(&shards, request, reply, Some(prepare))
                .await
        } else {
            self.fan_out_with(&shards, request, Some(prepare), reply, Scope::Outside)
                .await
        }
    }

    /// How the rows of `statement` on several shards are merged (and the
    /// statement the shards run instead, if any), for these arguments.
    pub(super) fn execute_rows(
        &self,
        statement: &Arc<SqlStatement>,
        body: &Lookup,
        values: &[ArgValue],
    ) -> Result<(Option<ShardRun>, Reply), ClientError> {
        let concatenated = || Ok((None, Reply::Concat(Vec::new())));
        let count = statement.parameters();
        if body.entry.concatenates.get().is_some() || (count > 0 && values.len() != count) {
            // (Postgres refuses other counts of arguments, on every shard.)
            return concatenated();
        }
        let planned = match statement.merge.get() {
            Some(planned) => planned.clone(),
            None => {
                let (planned, by_key) = self.plan_execute_merge(statement, body);
                // A plan that depends on the config's keys is not kept.
                if !by_key {
                    let _ = statement.merge.set(planned.clone());
                }
                planned
            }
        };
        match planned {
            ExecuteMerge::Concatenated => concatenated(),
            ExecuteMerge::Refused(error) => Err(error),
            ExecuteMerge::Merged { plan, shard } => {
                let request = MergeRequest {
                    window: sql_prepared::window(&plan, values)?,
                    params: sql_prepared::having_params(&plan, values)?,
                    plan,
                };
                Ok((shard, Reply::Merge(request)))
            }
        }
    }

    /// The merge `statement`'s rows need on several shards, and whether it
    /// depends on which columns are sharding keys.
    fn plan_execute_merge(&self, statement: &SqlStatement, body: &Lookup) -> (ExecuteMerge, bool) {
        let entry = &body.entry;
        let (planned, by_key) =
            super::merge::plan_rows(&entry.summary, &statement.body, self.cluster.sharding());
        let merge = match planned {
            Ok(None) => {
                if !by_key {
                    let _ = entry.concatenates.set(());
                }
                ExecuteMerge::Concatenated
            }
            Err(error) => ExecuteMerge::Refused(error),
            Ok(Some(mut plan)) => match plan.shard_sql.take() {
                None => ExecuteMerge::Merged {
                    plan: Arc::new(plan),
                    shard: None,
                },
                Some(sql) => match self.shard_run(statement, &sql) {
                    Some(shard) => ExecuteMerge::Merged {
                        plan: Arc::new(plan),
                        shard: Some(shard),
                    },
                    None => ExecuteMerge::Refused(unparsed()),
                },
            },
        };
        (merge, by_key)
    }

    /// The statement the shards run instead of `statement` (its merge
    /// rewrote it to `sql`): prepared with the parameters it uses,
    /// renumbered, and their declared types.
    fn shard_run(&self, statement: &SqlStatement, sql: &str) -> Option<ShardRun> {
        let (sql, used) = prepared::renumbered(sql)?;
        let types = match statement.types.is_empty() {
            true => Vec::new(),
            false => prepared::list_items(&statement.types)?
                .into_iter()
                .map(|(a, b)| statement.types.get(a..b))
                .collect::<Option<Vec<&str>>>()?,
        };
        let kept: Vec<&str> = used.iter().map_while(|&i| types.get(i).copied()).collect();
        let types = match kept.is_empty() {
            true => String::new(),
            false => format!("({})", kept.join(", ")),
        };
        let declared: Vec<Option<String>> = (used.iter())
            .map_while(|&i| statement.declared.get(i).cloned())
            .collect();
        Some(ShardRun {
            statement: self.shared.statements.sql(&types, &sql, &declared),
            used,
            of: statement.parameters(),
        })
    }
}

/// The refusal of a prepared statement pgshard cannot parse (a validated
/// one always parses).
pub(super) fn unparsed() -> ClientError {
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        "pgshard could not parse the prepared statement to route it",
    )
}

impl Session {
    /// The streaming path refused an EXECUTE of `body` with `error`: the
    /// coordinator may finish it instead.
    pub(super) fn gathers_execute(&self, body: &Lookup, error: &ClientError) -> bool {
        error.code == sqlstate::FEATURE_NOT_SUPPORTED
            && self.finishes_on_coordinator(&body.entry.summary)
    }

    /// Finish an EXECUTE of `statement` on the coordinator (its reply and
    /// ReadyForQuery written), or refuse it.
    async fn gather_execute(
        &mut self,
        statement: &SqlStatement,
        (text, at): Named<'_>,
        refusal: ClientError,
    ) -> Result<(), End> {
        let finish = super::gather::Finish::Sql {
            types: statement.types.clone(),
            args: text.get(at.1..).unwrap_or_default().to_owned(),
            extended: false,
        };
        let in_txn = self.status() != crate::protocol::backend::TransactionStatus::Idle;
        self.gather_simple(&statement.body, refusal, in_txn, &finish)
            .await?;
        Ok(())
    }
}
