//! The coordinator inside the client's transaction block: the block's own
//! server on the coordinator database hosts the finish (it sees the
//! block's writes and snapshot, and cannot wait on the block's own locks),
//! the coordinator database's part of each gather is inserted there
//! (`INSERT INTO <temp> SELECT ... LIMIT <rows left + 1>`), the other
//! shards' parts come from the block's servers; a READ ONLY block (where
//! no temp table can be created) or `two_phase_commit` (a transaction that
//! touched a temp table cannot PREPARE) gets a coordinator session of its
//! own instead ([`Host::OwnInBlock`]). An error ends the block, as on one
//! Postgres.

use bytes::BytesMut;
use router::gather::{Gather, GatherPlan};

use super::run::coordinator_lost;
use super::{Finish, Host, Run, Stop};
use crate::errors::ClientError;
use crate::execute::gather::finish::limit_error;
use crate::execute::gather::sink::GatherSink;
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendMessage, TransactionStatus};
use crate::protocol::messages;
use crate::session::{End, Session};

impl Session {
    /// Inside the client's block: how the coordinator is hosted, with the
    /// block's server on the coordinator database when it hosts
    /// ([`Host::Block`]; else that server is held by the block again).
    /// `None`: the client has its error and the block is over. An INSERT
    /// whose rows go to their shards (`finish`) gets a session of its
    /// own: the block's server there takes its shard's rows.
    pub(super) async fn block_host(
        &mut self,
        coordinator: usize,
        finish: &Finish,
    ) -> Result<Option<(Host, Option<Pooled>)>, End> {
        let Some(mut servers) = self.txn_servers(&[coordinator]).await? else {
            return Ok(None);
        };
        let Some(mut server) = servers.pop() else {
            return Ok(None);
        };
        let read_only = match server.conn.query("SHOW transaction_read_only").await {
            Ok(answer) => match answer.error {
                None => {
                    answer.rows.first().and_then(|row| row.first()).cloned()
                        == Some(Some("on".to_owned()))
                }
                Some((code, message)) => {
                    self.hold(coordinator, server);
                    self.gather_error(&ClientError::from_server(&code, message));
                    self.txn.fail();
                    return Ok(None);
                }
            },
            Err(_) => {
                drop(server);
                self.gather_error(&ClientError::shard_lost());
                self.txn.fail();
                return Ok(None);
            }
        };
        let inserts = matches!(finish, Finish::Insert(..));
        if read_only || inserts || self.shared.config().general.two_phase_commit {
            self.hold(coordinator, server);
            return Ok(Some((Host::OwnInBlock, None)));
        }
        Ok(Some((Host::Block, Some(server))))
    }

    /// Run the plan on the block's own `server` and hold it for the block
    /// again (closed, the block over, if it broke).
    pub(super) async fn run_in_block(
        &mut self,
        mut server: Pooled,
        plan: &GatherPlan,
        routes: &[Vec<usize>],
        run: Run,
        finish: &Finish,
    ) -> Result<(), End> {
        let ran = self
            .run_hosted(&mut server, plan, routes, run, finish)
            .await;
        match ran {
            Ok(()) => self.hold(run.coordinator, server),
            Err(Stop::Failed) => {
                self.hold(run.coordinator, server);
                self.end_block();
            }
            Err(Stop::Broken) => {
                drop(server);
                self.gather_error(&coordinator_lost(run.coordinator));
                self.txn.fail();
            }
            Err(Stop::End(end)) => return Err(end),
        }
        Ok(())
    }

    /// The statement failed inside the block: the block is over, as on one
    /// Postgres. A server's error aborted it there already (a savepoint
    /// can still recover it, as on one Postgres); pgshard's own error, or
    /// one on a coordinator session of its own, ends it here.
    pub(super) fn end_block(&mut self) {
        if self.attached.status() != Some(TransactionStatus::Failed) {
            self.txn.fail();
        }
    }

    /// The coordinator database's own part of `gather`, inserted into its
    /// temp table on the coordinator's `server` itself (the block's, or
    /// one of its own outside a block), counted against the limit.
    pub(super) async fn gather_local(
        &mut self,
        server: &mut Pooled,
        gather: &Gather,
        sink: &mut GatherSink,
        coordinator: usize,
    ) -> Result<(), Stop> {
        let bound = sink.rows_left().saturating_add(1).min(i64::MAX as u64);
        let sql = match gather.write {
            // A data-modifying WITH query: its RETURNING rows inserted
            // (it runs whole whatever the LIMIT).
            Some(write) if write.returning => format!(
                "WITH pgshard_local AS ({}) INSERT INTO pg_temp.{} SELECT * FROM pgshard_local \
                 LIMIT {bound}",
                gather.shard_sql, gather.temp
            ),
            Some(_) => gather.shard_sql.clone(),
            None => format!(
                "INSERT INTO pg_temp.{} SELECT * FROM ({}) AS pgshard_local LIMIT {bound}",
                gather.temp, gather.shard_sql
            ),
        };
        let mut out = BytesMut::new();
        messages::query(&mut out, &sql);
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        let mut error: Option<BackendFrame> = None;
        let mut inserted = 0;
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            match message.message() {
                BackendMessage::ErrorResponse(_) if error.is_none() => error = Some(message),
                BackendMessage::CommandComplete(tag) => {
                    inserted = tag.split_count().1.unwrap_or(0);
                }
                BackendMessage::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        if let Some(error) = error {
            self.relay_gather_error(&error);
            return Err(Stop::Failed);
        }
        if gather.write.is_some() {
            self.attached.note_write(coordinator);
        }
        if gather.write.is_some_and(|w| !w.returning) {
            inserted = 0;
        }
        if let Err(exceeded) = sink.local(inserted) {
            self.gather_error(&limit_error(exceeded, coordinator));
            return Err(Stop::Failed);
        }
        Ok(())
    }
}
