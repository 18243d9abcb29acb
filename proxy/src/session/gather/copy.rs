//! One gather: its rows read from its shards (a task and a bounded
//! channel per shard, `execute/fan_out.rs`; inside a transaction block the
//! block's servers, held for it again after) and written, as they come,
//! into its temp table on the coordinator through a binary COPY FROM
//! STDIN (`execute/gather/sink.rs`). Past `cross_shard_gather_limit`, on a
//! shard's error or a shard lost, the COPY is failed (CopyFail), the
//! shards still running are cancelled and the client gets the error.

use bytes::BytesMut;
use tokio::sync::mpsc;

use super::{Run, Stop};
use crate::errors::ClientError;
use crate::execute::fan_out::{next_report, send_cancel, spawn_readers, Report};
use crate::execute::gather::finish::limit_error;
use crate::execute::gather::sink::{Exceeded, GatherSink};
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendMessage};
use crate::protocol::messages;
use crate::session::{cancel_target, Session};
use router::gather::Gather;

/// Why a gather's COPY is failed.
enum Failure {
    /// A shard's error (relayed to the client).
    Shard(BackendFrame),
    /// A shard's connection broke.
    Lost,
    Limit(Exceeded),
}

impl Session {
    /// Gather `gather`'s rows from `shards` into its temp table on the
    /// coordinator's `server`.
    pub(super) async fn gather_into(
        &mut self,
        server: &mut Pooled,
        gather: &Gather,
        shards: &[usize],
        sink: &mut GatherSink,
        run: Run,
    ) -> Result<(), Stop> {
        let coordinator = run.coordinator;
        let copy = format!("COPY pg_temp.{} FROM STDIN (FORMAT binary)", gather.temp);
        let mut out = BytesMut::new();
        messages::query(&mut out, &copy);
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        self.await_copy_in(server).await?;
        let servers = match run.in_block() {
            true => self.txn_servers(shards).await?,
            false => self.fan_out_servers(shards).await?,
        };
        let Some(servers) = servers else {
            // The shard's error is written for the client.
            self.pipeline.error_relayed();
            return self.fail_copy(server, "a shard could not be reached").await;
        };
        let mut targets: Vec<_> = servers.iter().map(cancel_target).collect();
        targets.push(cancel_target(server));
        self.info.cancel.set(targets.iter().cloned()).await;
        let mut request = BytesMut::new();
        messages::parse(&mut request, b"", gather.shard_sql.as_bytes(), &[]);
        messages::bind_values(&mut request, (b"", b""), &[], &[], &[1]);
        messages::execute(&mut request, b"");
        messages::sync(&mut request);
        let request = request.freeze();
        let started = std::time::Instant::now();
        let (tasks, mut incoming) =
            spawn_readers(servers, |_, out| out.extend_from_slice(&request), None);
        sink.start();
        let pumped = self.pump(server, &mut incoming, sink, &targets).await;
        if pumped.is_err() {
            for task in &tasks {
                task.abort();
            }
        }
        let held = run.in_block().then_some(shards);
        let broken = self.release_readers(tasks, started.elapsed(), held).await;
        self.note_written(gather, held);
        // The shards' servers are back in their pools: a cancel must not
        // reach them now (another client's query may run there).
        let coordinator_target = targets.last().cloned();
        self.info.cancel.set(coordinator_target).await;
        let failure = match pumped? {
            Some(failure) => Some(failure),
            None if broken => Some(Failure::Lost),
            None => None,
        };
        match failure {
            None => {
                sink.finish();
                server
                    .conn
                    .send(&sink.take())
                    .await
                    .map_err(|_| Stop::Broken)?;
                self.coordinator_reply(server).await
            }
            Some(failure) => {
                match failure {
                    Failure::Shard(error) => self.relay_gather_error(&error),
                    Failure::Lost => self.gather_error(&ClientError::shard_lost()),
                    Failure::Limit(exceeded) => {
                        self.gather_error(&limit_error(exceeded, coordinator))
                    }
                }
                let _ = sink.take();
                self.fail_copy(server, "pgshard stopped the gather").await
            }
        }
    }

    /// A data-modifying WITH query (`gather`) wrote on the block's shards
    /// `held` (two-phase commit prepares them).
    fn note_written(&mut self, gather: &Gather, held: Option<&[usize]>) {
        if let (Some(_), Some(shards)) = (gather.write, held) {
            shards.iter().for_each(|&s| self.attached.note_write(s));
        }
    }

    /// Read the coordinator's answer to a COPY FROM STDIN: its
    /// CopyInResponse, or its error ([`Stop::Failed`]).
    async fn await_copy_in(&mut self, server: &mut Pooled) -> Result<(), Stop> {
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            match message.message() {
                BackendMessage::CopyInResponse(_) => return Ok(()),
                BackendMessage::ErrorResponse(_) => {
                    self.relay_gather_error(&message);
                    // Read on to its ReadyForQuery.
                    return match self.coordinator_reply(server).await {
                        Err(Stop::Failed) | Ok(()) => Err(Stop::Failed),
                        Err(stop) => Err(stop),
                    };
                }
                _ => {}
            }
        }
    }

    /// End the coordinator's COPY with CopyFail (its own error, which
    /// follows, is not the client's: the client has its error already).
    async fn fail_copy(&mut self, server: &mut Pooled, why: &str) -> Result<(), Stop> {
        let mut out = BytesMut::new();
        messages::copy_fail(&mut out, why);
        server.conn.send(&out).await.map_err(|_| Stop::Broken)?;
        loop {
            let message = server.conn.read_message().await.map_err(|_| Stop::Broken)?;
            if let BackendMessage::ReadyForQuery(_) = message.message() {
                return Err(Stop::Failed);
            }
        }
    }

    /// Move the shards' rows into the sink and the sink to the coordinator
    /// until every shard is done; the first failure stops the gather (the
    /// shards still running are cancelled, their rest read and dropped).
    async fn pump(
        &mut self,
        server: &mut Pooled,
        incoming: &mut [Option<mpsc::Receiver<Report>>],
        sink: &mut GatherSink,
        targets: &[crate::conn::cancel::CancelTarget],
    ) -> Result<Option<Failure>, Stop> {
        let mut failure: Option<Failure> = None;
        let mut cancels = Vec::new();
        loop {
            let open: Vec<usize> = (0..incoming.len())
                .filter(|&i| incoming[i].is_some())
                .collect();
            if open.is_empty() {
                break;
            }
            let report = tokio::select! {
                (index, report) = next_report(incoming, &open) => (index, report),
                read = self.client.fill(), if self.client.may_buffer() => {
                    read.map_err(|gone| Stop::End(gone.into()))?;
                    continue;
                }
            };
            let message = match report {
                (index, None) => {
                    incoming[index] = None;
                    continue;
                }
                (_, Some(None)) => {
                    failure.get_or_insert(Failure::Lost);
                    continue;
                }
                (_, Some(Some(message))) => message,
            };
            if failure.is_some() {
                continue;
            }
            let stopped = match message.message() {
                BackendMessage::DataRow(body) => sink.row(body).err().map(Failure::Limit),
                BackendMessage::ErrorResponse(_) => Some(Failure::Shard(message.clone())),
                _ => None,
            };
            if let Some(stopped) = stopped {
                failure = Some(stopped);
                // Every shard's part of the gather stops (a shard done
                // already ignores its cancel); not the coordinator's COPY.
                let shards = &targets[..targets.len().saturating_sub(1)];
                cancels.extend(shards.iter().cloned().map(send_cancel));
                continue;
            }
            if sink.full() {
                server
                    .conn
                    .send(&sink.take())
                    .await
                    .map_err(|_| Stop::Broken)?;
            }
        }
        // A server goes back to its pool only once its cancel was
        // delivered: it cannot hit the next client's query.
        for cancel in cancels {
            let _ = cancel.await;
        }
        Ok(failure)
    }
}
