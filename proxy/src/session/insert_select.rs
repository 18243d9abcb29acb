//! `INSERT INTO <sharded or omnisharded> [(cols)] SELECT ...` whose rows
//! may belong on other shards than the ones that read them (issue 34):
//! [`router::insert_select::plan`] takes the SELECT
//! out; it runs on the coordinator path (`gather.rs`: the tables it reads
//! gathered, inside the client's block when there is one, bounded by
//! `cross_shard_gather_limit`) into a stage table there with the target's
//! column types (`INSERT INTO pg_temp.pgshard_ins <SELECT>`: Postgres's own
//! assignment casts and errors); the stage is read back as COPY text and
//! each row goes to its key's shard by `COPY <target> (cols) FROM STDIN`
//! (`copy_in.rs`'s shards' COPYs and [`router::copy::RowSplitter`]; an
//! omnisharded target's to every shard; `relay.rs`), or, with ON CONFLICT,
//! RETURNING or OVERRIDING, into a stage on each shard from which each
//! shard runs the client's INSERT (`staged.rs`), in one transaction spanning the
//! shards (the client's, else one of pgshard's, committed together,
//! two-phase when on), in batches of 64 KiB, so pgshard holds no more of
//! the rows than that. The tag is `INSERT 0 n`. The coordinator is a
//! session of its own (inside a block too: the block's server on that
//! database takes its shard's rows), and its stage goes with its
//! transaction. Outside a block the SELECT's snapshot is not the
//! INSERT's (two statements, as for carried subqueries). A client's cancel
//! reaches the shards' servers while they run the statement's part.
//!
//! In the extended protocol the Bind is answered as a gathered portal's
//! (`gather/portal.rs`) and the statement runs at its Execute, the SELECT
//! bound on the coordinator with the Bind's values, RETURNING rows in its
//! result formats.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::config::CrossShardFinish;
use router::copy::plan_copy;
use router::insert_select::{InsertSelect, NotMoved};
use router::route::RouteError;
use router::summary::{StatementKind, Summary};

mod relay;
mod staged;

use staged::Answer;

use super::attach::cancel_target;
use super::dispatch::Dispatch;
use super::gather::{not_yet, Finish, Gathered, Stop};
use super::statements::Statement;
use super::transaction::Target;
use super::{End, Session};
use crate::errors::ClientError;
use crate::pool::Pooled;
use crate::protocol::backend::{BackendMessage, TransactionStatus};
use crate::protocol::frontend::{Bind, Named};
use crate::protocol::{messages, rows, sqlstate};

/// The stage table on the coordinator.
pub(super) const STAGE: &str = "pgshard_ins";

/// The stage's rows on their way to the shards: the error that stopped
/// them (for the client), and whether the coordinator's connection broke.
pub(super) struct Relayed {
    result: Result<(), Bytes>,
    broken: bool,
}

impl Session {
    /// `summary` (`sql`), refused with `err`, is an INSERT ... SELECT
    /// whose rows this path may send to their shards.
    pub(super) fn moves_rows(&self, err: &RouteError, summary: &Summary, sql: &str) -> bool {
        let moved = matches!(
            err,
            RouteError::InsertWithoutKey { .. }
                | RouteError::UnknownTableWrite {
                    statement: "INSERT",
                    ..
                }
                | RouteError::JoinWithoutKey { .. }
                | RouteError::SubqueryWithoutKey { .. }
                | RouteError::SubqueryOnOtherShards { .. }
                | RouteError::OmnishardedFromSharded { .. }
                | RouteError::OuterJoinEverywhere { .. }
                | RouteError::KeysOnDifferentShards { .. }
        );
        moved && self.moves_from_select(summary) && router::insert_select::is_insert_select(sql)
    }

    /// `summary` is one INSERT: when it is an INSERT ... SELECT whose rows
    /// would not stay on their shards, this path may send them there.
    pub(super) fn moves_from_select(&self, summary: &Summary) -> bool {
        matches!(summary.statements.as_slice(), [s] if s.kind == StatementKind::Insert)
    }

    /// A Bind of an INSERT ... SELECT the router refused (`err`; `None`:
    /// routed where its rows would not belong) with `error`: when a simple
    /// query would send its rows to their shards, it is bound to run so at
    /// its Execute (`true`: answered), or refused when other statements
    /// went before it up to the Sync outside a block.
    pub(super) fn bind_moved_rows(
        &mut self,
        (statement, bind): (&Arc<Statement>, &Bind),
        err: Option<&RouteError>,
        summary: &Summary,
        error: ClientError,
    ) -> Result<Option<Target>, ClientError> {
        let sql = String::from_utf8_lossy(&statement.query);
        let moved = match err {
            Some(err) => self.moves_rows(err, summary, &sql),
            None => {
                self.moves_from_select(summary) && router::insert_select::is_insert_select(&sql)
            }
        };
        let finish = self.shared.config().general.cross_shard_finish;
        if !moved || finish != CrossShardFinish::Coordinator {
            return Err(error);
        }
        let in_block = self.status() != TransactionStatus::Idle || self.txn.spans();
        let earlier =
            self.cluster.transaction_mode() && self.attached.is_some() && self.pipeline.unsynced();
        if !in_block && earlier {
            // Outside a block the statements before it up to the Sync are
            // one implicit transaction, which the SELECT's own session
            // cannot see (and running it first would commit it apart).
            return Err(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "{}; pgshard runs such an INSERT's SELECT first, but not after another \
                     statement before the Sync outside a transaction block: send a Sync before \
                     it, or run them in a transaction block",
                    error.message
                ),
            ));
        }
        Ok(self.bind_gathered(statement, bind, error))
    }

    /// The Execute of a bound INSERT ... SELECT `sql` (`bind`, `types`: its
    /// Bind and parameter types; `max_rows`: the Execute's row limit), as
    /// [`insert_select_query`](Self::insert_select_query) runs a simple one.
    pub(super) async fn execute_insert_select(
        &mut self,
        sql: &str,
        (bind, types, max_rows): (Bind, Vec<u32>, i32),
        refusal: ClientError,
    ) -> Result<Gathered, End> {
        let refuse = |message: String| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message);
        let plan = match router::insert_select::plan(sql, self.cluster.sharding()) {
            Ok(plan) if max_rows > 0 && plan.returning => Err(not_yet(
                &refusal,
                (
                    "with a row limit on its Execute for an INSERT ... SELECT ... RETURNING",
                    "execute it without one",
                ),
            )),
            Ok(plan) => Ok(plan),
            Err(NotMoved::NotInsertSelect | NotMoved::Parse(_)) => Err(refusal.clone()),
            Err(why) => Err(refuse(format!(
                "this INSERT ... SELECT takes each row's sharding key from its SELECT, so its \
                 rows may belong on any shard, and pgshard cannot send them there: {why}"
            ))),
        };
        let plan = match plan {
            Ok(plan) => plan,
            Err(error) => {
                self.shared
                    .metrics
                    .route(crate::metrics::RouteKind::Refused);
                self.refuse(error, false);
                return Ok(Gathered::Refused);
            }
        };
        let select = plan.select_sql.clone();
        let finish = Finish::Insert(Box::new(plan), Some(Box::new((bind, types))));
        Box::pin(self.gather_statement(&select, refusal, false, &finish)).await
    }

    /// [`insert_select_query`](Self::insert_select_query) of a simple query
    /// the router refused with `err`.
    pub(super) async fn move_rows(
        &mut self,
        frame_sql: &str,
        err: &RouteError,
    ) -> Result<Dispatch, End> {
        // Boxed: a session's future stays small (`listener/arrival.rs`).
        Box::pin(self.insert_select_query(frame_sql, err.to_string())).await
    }

    /// A simple query routed to shards where it would write rows their
    /// keys do not hash to (`error`): an INSERT ... SELECT's rows go to
    /// their shards; anything else is refused with `error`.
    pub(super) async fn refused_insert_select(
        &mut self,
        frame_sql: &str,
        summary: &Summary,
        error: ClientError,
    ) -> Result<Dispatch, End> {
        match self.moves_from_select(summary) {
            true => self.insert_select_query(frame_sql, error.message).await,
            false => Ok(self.refused(error)),
        }
    }

    /// A simple query refused (`refusal`: why) that may be an INSERT ...
    /// SELECT: its SELECT runs on the coordinator and its rows go to their
    /// shards, or it is refused saying why.
    pub(super) async fn insert_select_query(
        &mut self,
        frame_sql: &str,
        refusal: String,
    ) -> Result<Dispatch, End> {
        let refuse = |message: String| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, message);
        let plan = match router::insert_select::plan(frame_sql, self.cluster.sharding()) {
            Ok(plan) => plan,
            Err(NotMoved::NotInsertSelect | NotMoved::Parse(_)) => {
                return Ok(self.refused(refuse(refusal)))
            }
            Err(why) => {
                let message = format!(
                    "this INSERT ... SELECT takes each row's sharding key from its SELECT, so its \
                     rows may belong on any shard, and pgshard cannot send them there: {why}"
                );
                return Ok(self.refused(refuse(message)));
            }
        };
        let what = format!(
            "INSERT INTO {} ... SELECT takes each row's sharding key from its SELECT, so its \
             rows may belong on any shard",
            plan.table_name
        );
        if self.shared.config().general.cross_shard_finish != CrossShardFinish::Coordinator {
            let message = format!(
                "{what}: pgshard sends them there after running the SELECT on the coordinator, \
                 which cross_shard_finish = \"refuse\" turns off"
            );
            return Ok(self.refused(refuse(message)));
        }
        let select = plan.select_sql.clone();
        let finish = Finish::Insert(Box::new(plan), None);
        self.gather_simple(&select, refuse(what), false, &finish)
            .await
    }

    /// The finish of an INSERT ... SELECT on the coordinator's `server`
    /// (`finish`: its SELECT over the gathered tables): the stage filled,
    /// then its rows copied to their shards; the client gets `INSERT 0 n`
    /// or the error.
    pub(super) async fn insert_rows(
        &mut self,
        server: &mut Pooled,
        finish: &str,
        into: &InsertSelect,
        bound: Option<&(Bind, Vec<u32>)>,
    ) -> Result<(), Stop> {
        let columns = match &into.columns {
            Some(columns) => columns.clone(),
            None => self.leading_columns(server, finish, into, bound).await?,
        };
        if let Some(error) = self.conflict_refusal(server, into).await? {
            self.gather_error(&error);
            return Err(Stop::Failed);
        }
        let stage = into.stage_sql(STAGE, &columns);
        let fill = InsertSelect::fill_sql(STAGE, finish);
        let staged = match bound {
            None => {
                let fill = format!("{stage}; {fill}");
                self.coordinator_count(server, &fill).await?
            }
            Some((bind, types)) => {
                // The SELECT's `$n` are the client's values.
                self.coordinator_count(server, &stage).await?;
                let mut out = BytesMut::new();
                messages::parse(&mut out, b"", fill.as_bytes(), types);
                messages::bind(&mut out, bind, b"", &[]);
                messages::execute_rows(&mut out, b"", 0);
                messages::sync(&mut out);
                server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
                self.coordinator_tally(server).await?
            }
        };
        let limit = self.shared.config().general.cross_shard_gather_limit;
        if staged > limit.rows {
            let error = moved_limit(&format!("{} rows", limit.rows), "rows");
            self.gather_error(&error);
            return Err(Stop::Failed);
        }
        let answer = Answer {
            formats: bound.map_or(&[][..], |(bind, _)| &bind.result_formats),
            describe: bound.is_none(),
        };
        let (outcome, broken) = self.copy_to_shards(server, into, &columns, answer).await?;
        match outcome {
            _ if broken => Err(Stop::Broken),
            Ok(total) => {
                messages::command_complete(self.client.out(), &format!("INSERT 0 {total}"));
                Ok(())
            }
            Err(error) => {
                if let Some(error) = error {
                    self.pipeline.error_relayed();
                    self.client.out().extend_from_slice(&error);
                }
                Err(Stop::Failed)
            }
        }
    }

    /// The first N of the target's columns (quoted), N the number the
    /// SELECT `finish` returns, as Postgres reads an INSERT without a
    /// column list.
    async fn leading_columns(
        &mut self,
        server: &mut Pooled,
        finish: &str,
        into: &InsertSelect,
        bound: Option<&(Bind, Vec<u32>)>,
    ) -> Result<Vec<String>, Stop> {
        let mut out = BytesMut::new();
        let types = bound.map_or(&[][..], |(_, types)| types);
        messages::parse(&mut out, b"", finish.as_bytes(), types);
        messages::describe(&mut out, Named::Statement, b"");
        messages::sync(&mut out);
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        let mut selected = 0;
        let mut error = None;
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            match message.message() {
                BackendMessage::RowDescription(body) => {
                    selected = rows::column_names(body).map_or(0, |names| names.len());
                }
                BackendMessage::ErrorResponse(_) if error.is_none() => error = Some(message),
                BackendMessage::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        if let Some(error) = error {
            self.relay_gather_error(&error);
            return Err(Stop::Failed);
        }
        let table = super::copy_in::table_columns(server, &into.table_name, false)
            .await
            .unwrap_or_default();
        // More than the table has: the stage's INSERT says so, as Postgres.
        let columns = table.iter().take(selected.max(1));
        Ok(columns.map(|c| router::insert_select::quote(c)).collect())
    }

    /// The stage's rows copied to their shards' COPYs, inside the
    /// client's transaction or one of pgshard's spanning the shards: the
    /// rows written, or the error for the client (`None`: written); and
    /// whether the coordinator's connection broke.
    async fn copy_to_shards(
        &mut self,
        server: &mut Pooled,
        into: &InsertSelect,
        columns: &[String],
        answer: Answer<'_>,
    ) -> Result<(Result<u64, Option<Bytes>>, bool), Stop> {
        let copy_sql = into.copy_sql(columns);
        let (stage, shard_sql) = shards_copy(into, columns, &copy_sql);
        let plan = match plan_copy(&copy_sql, self.cluster.sharding()) {
            Ok(plan) => plan,
            Err(why) => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string());
                return Ok((Err(Some(encode(&error))), false));
            }
        };
        let shards: Vec<usize> = (0..self.cluster.shards()).collect();
        let implicit = match self.open_copy_scope(&shards).await? {
            Ok(implicit) => implicit,
            Err(error) => return Ok((Err(Some(encode(&error))), false)),
        };
        let mut broken = false;
        let outcome = match self.txn_servers(&shards).await? {
            Some(mut servers) => {
                // A client's cancel reaches the shards' COPYs and INSERTs
                // too while they are this statement's.
                let mut targets: Vec<_> = servers.iter().map(cancel_target).collect();
                targets.push(cancel_target(server));
                self.info.cancel.set(targets).await;
                let mut sent = 0;
                let started = self
                    .start_copies(&mut servers, &plan, &shard_sql, &mut sent)
                    .await;
                let streamed = match started {
                    Ok((splitter, _)) => {
                        let relayed = self.relay_stage(server, &mut servers, splitter).await?;
                        broken = relayed.broken;
                        relayed.result
                    }
                    Err(error) => Err(error),
                };
                let copies = plan.entry.is_none();
                let copied = self
                    .end_copies(&shards, servers, sent, streamed, copies)
                    .await;
                match (copied, &stage) {
                    (Ok(_), Some(stage)) if !broken => {
                        let stage = (stage.as_str(), columns);
                        self.insert_from_stages(&shards, into, stage, answer)
                            .await?
                    }
                    (copied, _) => copied,
                }
            }
            // Its error is written for the client.
            None => Err(None),
        };
        // The shards' servers go back to their pools with the transaction:
        // a cancel must not reach them then (another client's query may
        // run there).
        self.info.cancel.set([cancel_target(server)]).await;
        if !implicit {
            return Ok((outcome, broken));
        }
        let auto = self.shared.config().general.two_phase_commit_auto;
        let ended = match self.end_spanning(outcome.is_ok(), auto).await? {
            Err(error) if outcome.is_ok() => Err(Some(encode(&error))),
            _ => outcome,
        };
        Ok((ended, broken))
    }
}

/// The shards' stage of a staged INSERT (named apart from other
/// sessions': its rows go into a stage of their own on each shard), and
/// what each shard's COPY runs (`copy_sql`, or into that stage).
fn shards_copy(
    into: &InsertSelect,
    columns: &[String],
    copy_sql: &str,
) -> (Option<String>, String) {
    let stage = into
        .staged()
        .then(|| format!("pgshard_ins_{:016x}", rand::random::<u64>()));
    let shard_sql = match &stage {
        Some(stage) => format!(
            "{}; {}",
            into.shard_stage_sql(stage, columns),
            into.shard_copy_sql(stage, columns)
        ),
        None => copy_sql.to_owned(),
    };
    (stage, shard_sql)
}

/// The bound a statement's rows passed on their way to the shards.
pub(super) fn moved_limit(bound: &str, key: &str) -> ClientError {
    ClientError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!(
            "this INSERT ... SELECT would send more than {bound} \
             (cross_shard_gather_limit.{key}) through pgshard to the shards: restrict its \
             SELECT, insert in parts, or raise cross_shard_gather_limit.{key}"
        ),
    )
}

pub(super) fn encode(error: &ClientError) -> Bytes {
    let mut out = BytesMut::new();
    error.encode(&mut out);
    out.freeze()
}
