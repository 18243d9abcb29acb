//! Running a gather plan on the coordinator's server: the temp tables, the
//! gathers (streamed from the shards by `copy.rs`; the coordinator
//! database's own part inserted there when its server is the block's,
//! `block.rs`), the temp tables' keys, the finish relayed to the client
//! (after pgshard's EXPLAIN lines), then COMMIT (a session of its own: the
//! tables go `ON COMMIT`) or DROP of the tables (the block's server; not
//! when a cursor or portal kept there reads them later).

use bytes::BytesMut;
use router::gather::GatherPlan;

use super::{Finish, Host, Run, Stop, SQL_FINISH};
use crate::errors::ClientError;
use crate::execute::gather::finish;
use crate::execute::gather::sink::GatherSink;
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendMessage};
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::session::{cancel_target, End, Session};

impl Session {
    /// Run `sql` on the coordinator to its ReadyForQuery; its first error
    /// is the client's ([`Stop::Failed`]).
    pub(super) async fn coordinator_run(
        &mut self,
        server: &mut Pooled,
        sql: &str,
    ) -> Result<(), Stop> {
        self.coordinator_count(server, sql).await.map(drop)
    }

    /// [`coordinator_run`](Self::coordinator_run), giving the row count of
    /// its last command's tag (0 without one).
    pub(in crate::session) async fn coordinator_count(
        &mut self,
        server: &mut Pooled,
        sql: &str,
    ) -> Result<u64, Stop> {
        let mut out = bytes::BytesMut::new();
        messages::query(&mut out, sql);
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        self.coordinator_tally(server).await
    }

    /// Read the coordinator's reply to its ReadyForQuery; its first error
    /// is the client's ([`Stop::Failed`]).
    pub(super) async fn coordinator_reply(&mut self, server: &mut Pooled) -> Result<(), Stop> {
        self.coordinator_tally(server).await.map(drop)
    }

    /// [`coordinator_reply`](Self::coordinator_reply), giving the row
    /// count of the last CommandComplete's tag (0 without one).
    pub(in crate::session) async fn coordinator_tally(
        &mut self,
        server: &mut Pooled,
    ) -> Result<u64, Stop> {
        let (mut count, mut error): (u64, Option<BackendFrame>) = (0, None);
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            match message.message() {
                BackendMessage::CommandComplete(tag) => count = tag.split_count().1.unwrap_or(0),
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
            None => Ok(count),
        }
    }

    /// Check a server of the coordinator database out, run the plan there
    /// and give it back (closed if it broke). The client's reply (rows or
    /// an error) is written; its ReadyForQuery is the caller's.
    pub(super) async fn run_on_coordinator(
        &mut self,
        plan: &GatherPlan,
        routes: &[Vec<usize>],
        run: Run,
        finish: &Finish,
    ) -> Result<(), End> {
        let coordinator = run.coordinator;
        let mut server = match self.checkout_server(coordinator, false).await? {
            Ok(server) => server,
            Err(err) => {
                let error = err.client_error(&self.info.database, coordinator);
                self.gather_error(&error);
                if run.in_block() {
                    self.txn.fail();
                }
                return Ok(());
            }
        };
        let ran = self
            .run_hosted(&mut server, plan, routes, run, finish)
            .await;
        match ran {
            Ok(()) => self.release(server, false).await,
            Err(Stop::Failed) => {
                self.release(server, false).await;
                if run.in_block() {
                    self.end_block();
                }
            }
            Err(Stop::Broken) => {
                drop(server);
                self.gather_error(&coordinator_lost(coordinator));
                if run.in_block() {
                    self.txn.fail();
                }
            }
            Err(Stop::End(end)) => return Err(end),
        }
        Ok(())
    }

    /// Run the plan on the coordinator's `server`, the client's cancel
    /// reaching it (and, while a gather reads them, its shards), counted
    /// for the metrics and the slow-query log.
    pub(super) async fn run_hosted(
        &mut self,
        server: &mut Pooled,
        plan: &GatherPlan,
        routes: &[Vec<usize>],
        run: Run,
        finish: &Finish,
    ) -> Result<(), Stop> {
        self.info.cancel.set([cancel_target(server)]).await;
        let started = std::time::Instant::now();
        let limit = self.shared.config().general.cross_shard_gather_limit;
        let mut sink = GatherSink::new(limit);
        let ran = self
            .run_plan(server, (plan, routes), &mut sink, run, finish)
            .await;
        self.info.cancel.set(std::iter::empty()).await;
        let (rows, bytes) = sink.counted();
        self.shared.metrics.gathered(rows, bytes);
        let shards: Vec<usize> = routes.iter().flatten().copied().collect();
        self.pipeline
            .clock()
            .log_if_slow(&self.span, started.elapsed(), &shards);
        ran
    }

    /// The plan on the coordinator's `server`: the temp tables, the
    /// gathers (none for an EXPLAIN without ANALYZE), their keys, the
    /// finish (relayed), then COMMIT or DROP.
    async fn run_plan(
        &mut self,
        server: &mut Pooled,
        (plan, routes): (&GatherPlan, &[Vec<usize>]),
        sink: &mut GatherSink,
        run: Run,
        finish: &Finish,
    ) -> Result<(), Stop> {
        self.writes_need_a_block(plan, run)?;
        let own = run.host != Host::Block;
        let mut setup = Vec::new();
        if own {
            setup.push("BEGIN READ WRITE".to_owned());
        }
        setup.extend(plan.gathers.iter().map(|g| g.create_sql.clone()));
        self.coordinator_run(server, &setup.join("; ")).await?;
        let gathers_run = plan.explain.as_ref().is_none_or(|e| e.analyze);
        for (gather, shards) in plan.gathers.iter().zip(routes) {
            if gathers_run {
                // The coordinator database's part is read by the
                // coordinator's own server (no second server of it: one
                // pinned for a WITH HOLD cursor stays the only one out),
                // but from the block's servers when that server is not
                // the block's.
                let (local, remote): (Vec<usize>, Vec<usize>) = match run.host {
                    Host::Block | Host::Own => shards.iter().partition(|&&s| s == run.coordinator),
                    Host::OwnInBlock => (Vec::new(), shards.clone()),
                };
                if !local.is_empty() {
                    self.gather_local(server, gather, sink, run.coordinator)
                        .await?;
                }
                if !remote.is_empty() {
                    self.gather_into(server, gather, &remote, sink, run).await?;
                }
            }
            if let Some(key) = &gather.key_sql {
                self.coordinator_run(server, key).await?;
            }
        }
        let lines = match &plan.explain {
            Some(explain) if explain.text => {
                finish::explain_lines(plan, routes, run.coordinator, host_words(run.host), sink)
            }
            _ => Vec::new(),
        };
        match finish {
            Finish::Insert(into, bound) => {
                self.insert_rows(server, &plan.finish_sql, into, bound.as_deref())
                    .await?
            }
            _ => {
                self.finish_on(server, &plan.finish_sql, lines, finish)
                    .await?
            }
        }
        match own {
            true => self.coordinator_run(server, "COMMIT").await,
            // A kept cursor or portal reads them later; they go with the
            // transaction.
            false if run.kept => Ok(()),
            false => {
                let temps: Vec<String> = plan
                    .gathers
                    .iter()
                    .map(|g| format!("pg_temp.{}", g.temp))
                    .collect();
                let drop = format!("DROP TABLE {}", temps.join(", "));
                self.coordinator_run(server, &drop).await
            }
        }
    }

    /// A data-modifying WITH query (`writes.rs`) runs only inside
    /// a transaction spanning the shards: never on servers of their own,
    /// each committing alone.
    fn writes_need_a_block(&mut self, plan: &GatherPlan, run: Run) -> Result<(), Stop> {
        if run.host == Host::Own && plan.gathers.iter().any(|g| g.write.is_some()) {
            let error = ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "a data-modifying WITH query across shards runs only inside a transaction \
                 spanning the shards, which this statement's path does not open",
            );
            self.gather_error(&error);
            return Err(Stop::Failed);
        }
        Ok(())
    }

    /// The finish: the client's statement over the temp tables, its reply
    /// relayed to the client (columns' origins zeroed; an EXPLAIN's
    /// `lines` as rows right after its RowDescription, or first in the
    /// extended protocol, where the Execute's reply has none).
    async fn finish_on(
        &mut self,
        server: &mut Pooled,
        sql: &str,
        mut lines: Vec<String>,
        finish: &Finish,
    ) -> Result<(), Stop> {
        let out = finish_request(sql, finish);
        if matches!(finish, Finish::Extended { .. }) {
            // The Execute's reply has no RowDescription: EXPLAIN's lines
            // go first.
            for line in lines.drain(..) {
                messages::data_row(self.client.out(), &[Some(&line)]);
            }
        }
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        let mut failed = false;
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            let described = match message.message() {
                BackendMessage::ReadyForQuery(_) => break,
                // The extended finish's own Parse and Bind, the SQL one's
                // PREPARE and DEALLOCATE.
                BackendMessage::ParseComplete | BackendMessage::BindComplete => continue,
                BackendMessage::RowDescription(_)
                    if matches!(finish, Finish::Sql { extended: true, .. }) =>
                {
                    continue
                }
                BackendMessage::CommandComplete(tag)
                    if matches!(finish, Finish::Sql { .. } | Finish::CarriedSql { .. })
                        && matches!(tag.as_bytes(), b"PREPARE" | b"DEALLOCATE") =>
                {
                    continue
                }
                BackendMessage::ErrorResponse(error) => {
                    self.shared.metrics.error(error.code().unwrap_or_default());
                    self.pipeline.error_relayed();
                    failed = true;
                    false
                }
                BackendMessage::RowDescription(_) => true,
                _ => false,
            };
            let message = finish::for_client(message);
            self.client.out().extend_from_slice(message.bytes());
            if described {
                for line in lines.drain(..) {
                    messages::data_row(self.client.out(), &[Some(&line)]);
                }
            }
            let carried = matches!(finish, Finish::Carried(_) | Finish::CarriedSql { .. });
            if !carried && self.client.out().len() >= crate::session::CLIENT_FLUSH_AT {
                self.client
                    .flush()
                    .await
                    .map_err(|gone| Stop::End(gone.into()))?;
            }
        }
        if failed && matches!(finish, Finish::Sql { .. } | Finish::CarriedSql { .. }) {
            // Its DEALLOCATE did not run: the server is reset before it
            // serves anyone else.
            server.conn.dirty = true;
        }
        match failed {
            true => Err(Stop::Failed),
            false => Ok(()),
        }
    }
}

/// What the coordinator is sent to run the finish `sql` as `finish` says:
/// an extended one bound under the client's portal name (a named or
/// suspended portal's later Executes come there again).
fn finish_request(sql: &str, finish: &Finish) -> BytesMut {
    let mut out = BytesMut::new();
    match finish {
        Finish::Simple | Finish::Carried(None) | Finish::Insert(..) => {
            messages::query(&mut out, sql)
        }
        Finish::Carried(Some(bound)) => {
            let (bind, param_types) = bound.as_ref();
            messages::parse(&mut out, b"", sql.as_bytes(), param_types);
            messages::bind(&mut out, bind, b"", &[]);
            // Its RowDescription names a carried subquery's columns.
            messages::describe(&mut out, crate::protocol::frontend::Named::Portal, b"");
            messages::execute_rows(&mut out, b"", 0);
            messages::sync(&mut out);
        }
        Finish::Sql { types, args, .. } | Finish::CarriedSql { types, args } => {
            let script = format!(
                "PREPARE {SQL_FINISH} {types} AS {sql}; EXECUTE {SQL_FINISH}{args}; \
                 DEALLOCATE {SQL_FINISH}"
            );
            messages::query(&mut out, &script);
        }
        Finish::Extended {
            bind,
            param_types,
            max_rows,
        } => {
            messages::parse(&mut out, b"", sql.as_bytes(), param_types);
            messages::bind(&mut out, bind, b"", &bind.result_formats);
            messages::execute_rows(&mut out, &bind.portal, *max_rows);
            messages::sync(&mut out);
        }
    }
    out
}

/// Where the coordinator runs, in an EXPLAIN's words.
fn host_words(host: Host) -> &'static str {
    match host {
        Host::Own => "a session of its own",
        Host::OwnInBlock => {
            "a session of its own; the gathers read the transaction's servers, omnisharded \
             tables included"
        }
        Host::Block => "the transaction's server",
    }
}

/// The client's error when the coordinator's connection broke.
pub(super) fn coordinator_lost(coordinator: usize) -> ClientError {
    ClientError::new(
        sqlstate::CONNECTION_FAILURE,
        format!(
            "the coordinator's server (database {coordinator}) closed the connection while \
             finishing a cross-shard statement"
        ),
    )
}
