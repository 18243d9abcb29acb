//! `INSERT INTO <sharded or omnisharded> [(cols)] SELECT ...` whose rows
//! may belong on other shards than the ones that read them (issue 34), in
//! the simple protocol: [`router::insert_select::plan`] takes the SELECT
//! out; it runs on the coordinator path (`gather.rs`: the tables it reads
//! gathered, inside the client's block when there is one, bounded by
//! `cross_shard_gather_limit`) into a stage table there with the target's
//! column types (`INSERT INTO pg_temp.pgshard_ins <SELECT>`: Postgres's own
//! assignment casts and errors); the stage is read back as COPY text and
//! each row goes to its key's shard by `COPY <target> (cols) FROM STDIN`
//! (`copy_in.rs`'s shards' COPYs and [`router::copy::RowSplitter`]; an
//! omnisharded target's to every shard), in one transaction spanning the
//! shards (the client's, else one of pgshard's, committed together,
//! two-phase when on), in batches of 64 KiB, so pgshard holds no more of
//! the rows than that. The tag is `INSERT 0 n`. The coordinator is a
//! session of its own (inside a block too: the block's server on that
//! database takes its shard's rows), and its stage goes with its
//! transaction. Outside a block the SELECT's snapshot is not the
//! INSERT's (two statements, as for carried subqueries).

use bytes::{Bytes, BytesMut};
use router::config::CrossShardFinish;
use router::copy::{plan_copy, CopyError, RowError, RowSplitter};
use router::insert_select::{InsertSelect, NotMoved};
use router::route::RouteError;
use router::summary::{StatementKind, Summary};

use super::dispatch::Dispatch;
use super::gather::{Finish, Stop};
use super::{End, Session};
use crate::errors::ClientError;
use crate::pool::Pooled;
use crate::protocol::backend::BackendMessage;
use crate::protocol::frontend::Named;
use crate::protocol::{messages, rows, sqlstate};

/// The stage table on the coordinator.
const STAGE: &str = "pgshard_ins";

/// CopyData sent to a shard at once.
const BATCH: usize = 64 * 1024;

/// The stage's rows on their way to the shards: the error that stopped
/// them (for the client), and whether the coordinator's connection broke.
struct Relayed {
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

    /// `error` refuses an INSERT ... SELECT in the extended protocol (the
    /// router's `err`, or none: routed where its rows would not belong):
    /// when a simple query would have sent its rows to their shards, it
    /// says so.
    pub(super) fn note_moved_rows(
        &self,
        error: &mut ClientError,
        err: Option<&RouteError>,
        summary: &Summary,
        sql: &[u8],
    ) {
        let sql = String::from_utf8_lossy(sql);
        let moved = match err {
            Some(err) => self.moves_rows(err, summary, &sql),
            None => {
                self.moves_from_select(summary) && router::insert_select::is_insert_select(&sql)
            }
        };
        let finish = self.shared.config().general.cross_shard_finish;
        if moved && finish == CrossShardFinish::Coordinator {
            error.message.push_str(
                "; pgshard sends the rows of such an INSERT ... SELECT to their shards (its \
                 SELECT run on the coordinator) only for a simple query, not yet in the \
                 extended protocol: send it as a simple query",
            );
        }
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
        let finish = Finish::Insert(Box::new(plan));
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
    ) -> Result<(), Stop> {
        let columns = match &into.columns {
            Some(columns) => columns.clone(),
            None => self.leading_columns(server, finish, into).await?,
        };
        let fill = format!(
            "{}; {}",
            into.stage_sql(STAGE, &columns),
            InsertSelect::fill_sql(STAGE, finish)
        );
        let staged = self.coordinator_count(server, &fill).await?;
        let limit = self.shared.config().general.cross_shard_gather_limit;
        if staged > limit.rows {
            let error = moved_limit(&format!("{} rows", limit.rows), "rows");
            self.gather_error(&error);
            return Err(Stop::Failed);
        }
        let (outcome, broken) = self.copy_to_shards(server, into, &columns).await?;
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
    ) -> Result<Vec<String>, Stop> {
        let mut out = BytesMut::new();
        messages::parse(&mut out, b"", finish.as_bytes(), &[]);
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
    ) -> Result<(Result<u64, Option<Bytes>>, bool), Stop> {
        let copy_sql = into.copy_sql(columns);
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
                let mut sent = 0;
                let started = self
                    .start_copies(&mut servers, &plan, &copy_sql, &mut sent)
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
                self.end_copies(&shards, servers, sent, streamed, copies)
                    .await
            }
            // Its error is written for the client.
            None => Err(None),
        };
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

    /// `COPY pg_temp.pgshard_ins TO STDOUT` on the coordinator, each row
    /// sent to its shard's COPY (`servers`, by shard) as `splitter`
    /// places it, counted against `cross_shard_gather_limit`; after a
    /// failure the coordinator's rows are read to its end and dropped.
    async fn relay_stage(
        &mut self,
        server: &mut Pooled,
        servers: &mut [Pooled],
        mut splitter: RowSplitter,
    ) -> Result<Relayed, End> {
        let mut out = BytesMut::new();
        messages::query(&mut out, &format!("COPY pg_temp.{STAGE} TO STDOUT"));
        if server.conn.send(&out).await.is_err() {
            return Ok(Relayed {
                result: Err(encode(&coordinator_gone())),
                broken: true,
            });
        }
        let limit = self.shared.config().general.cross_shard_gather_limit;
        let mut batches: Vec<BytesMut> = servers.iter().map(|_| BytesMut::new()).collect();
        let (mut bytes, mut line) = (0u64, 0u64);
        let mut failure: Option<Bytes> = None;
        loop {
            let Ok(message) = server.conn.read_message().await else {
                let result = Err(failure.unwrap_or_else(|| encode(&coordinator_gone())));
                return Ok(Relayed {
                    result,
                    broken: true,
                });
            };
            let done = match message.message() {
                BackendMessage::CopyData(row) if failure.is_none() => {
                    line += 1;
                    bytes += row.len() as u64;
                    if bytes > limit.bytes {
                        let bound = format!("{} bytes", limit.bytes);
                        failure = Some(encode(&moved_limit(&bound, "bytes")));
                        continue;
                    }
                    match splitter.push(row) {
                        Ok(rows) => place(rows, &mut batches),
                        Err(why) => failure = Some(encode(&row_error(&why, line))),
                    }
                    false
                }
                BackendMessage::CopyDone if failure.is_none() => {
                    match splitter.finish() {
                        Ok(rows) => place(rows, &mut batches),
                        Err(why) => failure = Some(encode(&row_error(&why, line))),
                    }
                    true
                }
                BackendMessage::ErrorResponse(_) if failure.is_none() => {
                    failure = Some(Bytes::copy_from_slice(message.bytes()));
                    continue;
                }
                BackendMessage::ReadyForQuery(_) => break,
                _ => continue,
            };
            if failure.is_some() {
                continue;
            }
            if let Err(lost) = send_batches(servers, &mut batches, done).await {
                failure = Some(lost);
            }
        }
        Ok(Relayed {
            result: failure.map_or(Ok(()), Err),
            broken: false,
        })
    }
}

/// Rows the splitter placed, appended to their shards' batches (`None`:
/// every shard's).
fn place(rows: Vec<router::copy::Placed>, batches: &mut [BytesMut]) {
    for (database, row) in rows {
        for (i, batch) in batches.iter_mut().enumerate() {
            if database.is_none_or(|d| d == i) {
                batch.extend_from_slice(&row);
            }
        }
    }
}

/// Send each batch that is full (every one that is not empty when
/// `done`) to its shard's COPY; `Err`: a shard's connection broke.
async fn send_batches(
    servers: &mut [Pooled],
    batches: &mut [BytesMut],
    done: bool,
) -> Result<(), Bytes> {
    for (server, batch) in servers.iter_mut().zip(batches.iter_mut()) {
        if (done && !batch.is_empty()) || batch.len() >= BATCH {
            let mut out = BytesMut::with_capacity(batch.len() + 5);
            messages::copy_data(&mut out, batch);
            batch.clear();
            if server.conn.send(&out).await.is_err() {
                return Err(encode(&ClientError::shard_lost()));
            }
        }
    }
    Ok(())
}

/// A row of the SELECT that cannot be placed (`line`: its number among
/// the SELECT's rows): a NULL key (which no shard holds) or a key the
/// sharding config has no shard for.
fn row_error(why: &CopyError, line: u64) -> ClientError {
    let (code, reason) = match why {
        CopyError::Row {
            why: RowError::NullKey { column },
            ..
        } => (
            "23502",
            format!(
                "its sharding key {column} is NULL, and a row without a key belongs on no shard"
            ),
        ),
        CopyError::Row { why, .. } => ("22P04", why.to_string()),
        other => ("22P04", other.to_string()),
    };
    ClientError::new(
        code,
        format!("INSERT ... SELECT: row {line} of the SELECT cannot be sent to a shard: {reason}"),
    )
}

/// The bound a statement's rows passed on their way to the shards.
fn moved_limit(bound: &str, key: &str) -> ClientError {
    ClientError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!(
            "this INSERT ... SELECT would send more than {bound} \
             (cross_shard_gather_limit.{key}) through pgshard to the shards: restrict its \
             SELECT, insert in parts, or raise cross_shard_gather_limit.{key}"
        ),
    )
}

/// The coordinator's connection broke while its stage was read.
fn coordinator_gone() -> ClientError {
    ClientError::new(
        sqlstate::CONNECTION_FAILURE,
        "the coordinator's server closed the connection while its rows went to the shards",
    )
}

fn encode(error: &ClientError) -> Bytes {
    let mut out = BytesMut::new();
    error.encode(&mut out);
    out.freeze()
}
