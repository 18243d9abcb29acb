//! Reading a merged cursor: batches asked of its shards' servers as
//! [`crate::execute::merge::InParts::wanted`] says, their rows merged, and the
//! client's reply (a FETCH's, a MOVE's, an Execute's, a Describe's)
//! written as Postgres writes it. The servers are the ones the session
//! holds (the transaction's, the pinned ones), or a segment's.

use bytes::Bytes;

use super::{Merged, Source};
use crate::errors::ClientError;
use crate::execute::merge::{merge_error, ValueError};
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendKind, BackendMessage};
use crate::protocol::frontend::Named;
use crate::protocol::messages;
use crate::session::{End, Session, CLIENT_FLUSH_AT};

/// What the client asked of a merged cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::session) enum Ask {
    /// FETCH: up to `rows` rows, then `FETCH n`; the RowDescription first
    /// when `describe` (the simple protocol's reply).
    Fetch { rows: u64, describe: bool },
    /// MOVE: up to `rows` rows skipped, then `MOVE n`.
    Move { rows: u64 },
    /// An Execute of the portal, at most `rows` rows (0: all): then
    /// PortalSuspended if that many went out, else `SELECT n`.
    Execute { rows: u64 },
    /// A Describe of the portal: its RowDescription.
    Describe,
}

/// How reading a merged cursor went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::session) enum Read {
    Done,
    /// A shard's error went to the client (or a shard was lost).
    ShardFailed,
    /// pgshard's own error went to the client (the merge failed, or the
    /// cursor cannot be read).
    MergeFailed,
}

/// How one shard's batch ended.
enum Batch {
    Ok,
    Error(Bytes),
    Merge(ValueError),
    Lost,
}

impl Session {
    /// Answer `ask` from `merged`, whose shards' servers are `servers` (in
    /// the order of its positions); a batch ends with a Sync when `sync`
    /// (else a Flush: inside a segment). On failure the cursor is broken
    /// and the client has the error.
    pub(in crate::session) async fn read_merged(
        &mut self,
        merged: &mut Merged,
        servers: &mut [&mut Pooled],
        ask: Ask,
        sync: bool,
    ) -> Result<Read, End> {
        let limit = match ask {
            Ask::Fetch { rows, .. } | Ask::Move { rows } => rows,
            Ask::Execute { rows: 0 } => u64::MAX,
            Ask::Execute { rows } => rows,
            Ask::Describe => 0,
        };
        let described = matches!(ask, Ask::Describe | Ask::Fetch { describe: true, .. });
        if described && merged.rows.description().is_none() {
            let read = match ask {
                Ask::Describe => self.describe_merged(merged, servers, sync).await?,
                _ => self.merged_round(merged, servers, limit, sync).await?,
            };
            if read != Read::Done {
                return Ok(read);
            }
        }
        if described {
            match merged.rows.description() {
                Some(description) => self.client.out().extend_from_slice(description),
                None => messages::no_data(self.client.out()),
            }
        }
        if ask == Ask::Describe {
            return Ok(Read::Done);
        }
        let mut sent = 0u64;
        loop {
            while sent < limit {
                let Some(row) = merged.rows.next_row() else {
                    break;
                };
                if !matches!(ask, Ask::Move { .. }) {
                    self.client.out().extend_from_slice(&row);
                }
                sent += 1;
                if self.client.out().len() >= CLIENT_FLUSH_AT {
                    self.client.flush().await?;
                }
            }
            if sent == limit || merged.rows.at_end() {
                break;
            }
            let read = self
                .merged_round(merged, servers, limit - sent, sync)
                .await?;
            if read != Read::Done {
                return Ok(read);
            }
        }
        match ask {
            Ask::Move { .. } => {
                messages::command_complete(self.client.out(), &format!("MOVE {sent}"))
            }
            Ask::Execute { rows } if rows > 0 && sent == rows => {
                messages::portal_suspended(self.client.out())
            }
            Ask::Execute { .. } => {
                messages::command_complete(self.client.out(), &format!("SELECT {sent}"))
            }
            _ => messages::command_complete(self.client.out(), &format!("FETCH {sent}")),
        }
        Ok(Read::Done)
    }

    /// Ask the shards for what the client needs to have `wanted` rows, and
    /// feed their batches to the merge.
    async fn merged_round(
        &mut self,
        merged: &mut Merged,
        servers: &mut [&mut Pooled],
        wanted: u64,
        sync: bool,
    ) -> Result<Read, End> {
        let asks = merged.rows.wanted(wanted);
        let describe = merged.rows.description().is_none();
        let mut bytewise = merged.bytewise.unwrap_or(false);
        if let (true, None, Some(&(first, _))) = (describe, merged.bytewise, asks.first()) {
            bytewise = self
                .bytewise_text(servers.get_mut(first).map(|s| &mut **s))
                .await;
        }
        let mut lost = false;
        for &(position, rows) in &asks {
            let Some(server) = servers.get_mut(position) else {
                continue;
            };
            let request = merged.source.request(rows, describe, sync);
            let sent = self.client.watch(server.conn.send(&request));
            lost |= sent.await?.is_err();
        }
        let mut outcome = Batch::Ok;
        for &(position, rows) in &asks {
            let Some(server) = servers.get_mut(position) else {
                continue;
            };
            let batch = self
                .read_batch(merged, server, (position, rows), sync, bytewise)
                .await?;
            if matches!(outcome, Batch::Ok) {
                outcome = batch;
            } else if matches!(batch, Batch::Lost) {
                lost = true;
            }
        }
        if lost && matches!(outcome, Batch::Ok) {
            outcome = Batch::Lost;
        }
        Ok(self.batch_outcome(merged, outcome))
    }

    /// The client's error for a failed batch; the cursor is broken.
    fn batch_outcome(&mut self, merged: &mut Merged, outcome: Batch) -> Read {
        let read = match outcome {
            Batch::Ok => return Read::Done,
            Batch::Error(message) => {
                self.client.out().extend_from_slice(&message);
                Read::ShardFailed
            }
            Batch::Lost => {
                ClientError::shard_lost().encode(self.client.out());
                for &shard in &merged.shards {
                    self.portals.cursors.lost(shard);
                }
                Read::ShardFailed
            }
            Batch::Merge(error) => {
                merge_error(&error).encode(self.client.out());
                Read::MergeFailed
            }
        };
        merged.broken = true;
        read
    }

    /// Read one shard's batch (`position`, rows asked) into the merge.
    async fn read_batch(
        &mut self,
        merged: &mut Merged,
        server: &mut Pooled,
        (position, asked): (usize, u64),
        sync: bool,
        bytewise: bool,
    ) -> Result<Batch, End> {
        let (mut got, mut complete) = (0u64, false);
        let mut failure: Option<Batch> = None;
        loop {
            let Some(message) = self.server_message(server).await? else {
                return Ok(Batch::Lost);
            };
            let fed = match message.message() {
                BackendMessage::RowDescription(body) => merged.rows.describe(body, bytewise),
                BackendMessage::DataRow(_) => {
                    got += 1;
                    match failure {
                        None => merged.rows.row(position, message.bytes()),
                        Some(_) => Ok(()),
                    }
                }
                BackendMessage::CommandComplete(_) => {
                    // A portal's CommandComplete says it has no more rows; a
                    // FETCH's comes after every batch.
                    complete = matches!(merged.source, Source::Portal(_));
                    Ok(())
                }
                BackendMessage::ErrorResponse(_) => {
                    failure.get_or_insert(Batch::Error(message.bytes().clone()));
                    Ok(())
                }
                BackendMessage::NoticeResponse(_) => {
                    self.client.out().extend_from_slice(message.bytes());
                    Ok(())
                }
                BackendMessage::ReadyForQuery(_) => break,
                _ => Ok(()),
            };
            if let Err(error) = fed {
                failure.get_or_insert(Batch::Merge(error));
            }
            let ends = matches!(
                message.kind(),
                BackendKind::CommandComplete
                    | BackendKind::PortalSuspended
                    | BackendKind::ErrorResponse
            );
            if !sync && ends {
                break;
            }
        }
        if let Some(failure) = failure {
            return Ok(failure);
        }
        Ok(
            match merged.rows.batch_end(position, got, asked, complete) {
                Ok(()) => Batch::Ok,
                Err(error) => Batch::Merge(error),
            },
        )
    }

    /// The cursor's description, asked of its first shard (a Describe of
    /// the portal: a SQL cursor is one too).
    async fn describe_merged(
        &mut self,
        merged: &mut Merged,
        servers: &mut [&mut Pooled],
        sync: bool,
    ) -> Result<Read, End> {
        let Some(server) = servers.first_mut() else {
            return Ok(Read::Done);
        };
        let bytewise = match merged.bytewise {
            Some(known) => known,
            None => self.bytewise_text(Some(&mut **server)).await,
        };
        let name = match &merged.source {
            Source::Cursor(name) => Bytes::copy_from_slice(name.as_bytes()),
            Source::Portal(name) => name.clone(),
        };
        let mut request = bytes::BytesMut::new();
        messages::describe(&mut request, Named::Portal, &name);
        match sync {
            true => messages::sync(&mut request),
            false => messages::flush(&mut request),
        }
        let sent = self.client.watch(server.conn.send(&request));
        if sent.await?.is_err() {
            return Ok(self.batch_outcome(merged, Batch::Lost));
        }
        let mut outcome = Batch::Ok;
        loop {
            let Some(message) = self.server_message(server).await? else {
                return Ok(self.batch_outcome(merged, Batch::Lost));
            };
            match message.message() {
                BackendMessage::RowDescription(body) => {
                    if let Err(error) = merged.rows.describe(body, bytewise) {
                        outcome = Batch::Merge(error);
                    }
                }
                BackendMessage::ErrorResponse(_) => outcome = Batch::Error(message.bytes().clone()),
                BackendMessage::ReadyForQuery(_) => break,
                _ => {}
            }
            let ends = matches!(
                message.kind(),
                BackendKind::RowDescription | BackendKind::NoData | BackendKind::ErrorResponse
            );
            if !sync && ends {
                break;
            }
        }
        Ok(self.batch_outcome(merged, outcome))
    }

    /// The next whole message of `server`, watching the client meanwhile;
    /// `None` when the connection broke.
    pub(in crate::session) async fn server_message(
        &mut self,
        server: &mut Pooled,
    ) -> Result<Option<BackendFrame>, End> {
        loop {
            match server.conn.next_message() {
                Ok(Some(message)) => return Ok(Some(message)),
                Ok(None) => {}
                Err(_) => return Ok(None),
            }
            let read = server.conn.fill();
            match self.client.watch(read).await? {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
        }
    }
}
