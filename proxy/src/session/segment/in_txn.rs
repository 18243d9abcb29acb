//! A segment inside a transaction pgshard opened (one that may span
//! shards): its shards are the transaction's (held ones taken, new ones
//! joining it with its join script), each part ends at a Sync that commits
//! nothing inside the transaction block, and every server is held again
//! afterwards. An error on any shard leaves the transaction aborted
//! everywhere it matters: the failing server is in `E`, so the client sees
//! `E` and everything but ROLLBACK (TO) gets 25P02; the other shards' parts
//! stay open until the client ends the transaction or rolls back to a
//! savepoint.

use super::run::sync_part;
use super::{Part, Segment};
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::session::{End, Session};

impl Session {
    /// Run a held segment inside the client's transaction, ReadyForQuery
    /// included.
    pub(super) async fn run_segment_in_txn(&mut self, segment: Segment) -> Result<(), End> {
        let settings = std::mem::take(&mut self.settings.extended);
        // What the client sent before the segment went to the main server:
        // its replies come first.
        let errors = self.pipeline.error_mark();
        self.settle_main().await?;
        // Replies pgshard made itself before the segment (a ParseComplete
        // answered with no server attached) come first; with no server
        // held yet (pgjdbc's BEGIN, answered here, sent with the first
        // statement), the replies are all local.
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        let before = self.pipeline.errors_since(errors);
        if !before && self.attached.status() == Some(TransactionStatus::Failed) {
            // An earlier statement failed: the transaction is aborted.
            ClientError::new(
                sqlstate::IN_FAILED_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            )
            .encode(self.client.out());
        }
        let servers = match before || self.attached.status() == Some(TransactionStatus::Failed) {
            // Postgres skips the rest up to the Sync after an error.
            true => None,
            false => self.txn_servers(&segment.shards()).await?,
        };
        let Some(servers) = servers else {
            self.forget_parses(&segment.items, 0);
            return self.segment_answered(settings, false).await;
        };
        let mut parts: Vec<Part> = segment
            .shards()
            .into_iter()
            .zip(servers)
            .map(|(shard, server)| Part {
                shard,
                server,
                units: Default::default(),
                failed: false,
                unnamed_parsed: None,
                chunk_rows: 0,
            })
            .collect();
        let failed_at = self
            .execute_parts(&mut parts, &segment.items, false)
            .await?;
        if let Some(index) = failed_at {
            self.pipeline.error_relayed();
            self.forget_parses(&segment.items, index + 1);
        }
        // Each part ends at a Sync (what a shard still had to say after an
        // error elsewhere is dropped) and is held again.
        let mut lost = false;
        for mut part in parts {
            self.routing.placing(segment.writes.contains(&part.shard));
            match sync_part(&mut part).await {
                Some(()) => self.hold(part.shard, part.server),
                None => lost = true,
            }
        }
        self.routing.placed();
        if lost {
            // That shard's part of the transaction is gone with its
            // connection: the transaction cannot commit.
            self.txn.fail();
            if failed_at.is_none() {
                ClientError::shard_lost().encode(self.client.out());
                self.pipeline.error_relayed();
            }
        }
        let ok = failed_at.is_none() && !lost;
        self.segment_portals(&segment, ok);
        self.segment_answered(settings, ok).await
    }

    /// The segment's end: settings it made belong to the transaction (kept
    /// at its COMMIT) if it succeeded, and the ReadyForQuery.
    async fn segment_answered(
        &mut self,
        settings: Vec<crate::conn::settings::ParamChange>,
        ok: bool,
    ) -> Result<(), End> {
        if ok {
            self.settings.pending.extend(settings);
        }
        let status = self.status();
        messages::ready_for_query(self.client.out(), status);
        Ok(self.client.flush().await?)
    }
}
