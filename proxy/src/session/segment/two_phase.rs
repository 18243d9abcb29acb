//! A segment that writes on several shards under `two_phase_commit` (with
//! `two_phase_commit_auto`): each shard's part opens with BEGIN, so its
//! Sync ends the messages but not the transaction, and once every shard
//! answered without error the parts are committed the way a statement
//! outside a transaction that writes on several shards is
//! (`session/commit.rs`: the decider's record, PREPARE TRANSACTION on the
//! others, COMMIT PREPARED), so a crash between the shards' commits cannot
//! split the segment. Without two-phase commit the segment keeps its
//! cheaper end (`run.rs`: Flush, then the Syncs once every shard answered).

use super::run::sync_part;
use super::{Part, Segment};
use crate::errors::ClientError;
use crate::session::{End, Session};

impl Session {
    /// Whether `segment` commits in two phases.
    pub(super) fn segment_two_phase(&self, segment: &Segment) -> bool {
        let config = self.shared.config();
        let general = &config.general;
        segment.writes.len() > 1 && general.two_phase_commit && general.two_phase_commit_auto
    }

    /// Commit the parts of a segment that ran without error (each opened
    /// its transaction with BEGIN; `writes`: the shards written on).
    /// Returns whether it committed; if not, the client has the error and
    /// nothing is left anywhere.
    pub(super) async fn commit_segment(
        &mut self,
        parts: Vec<Part>,
        writes: &[usize],
    ) -> Result<bool, End> {
        let mut synced = Vec::with_capacity(parts.len());
        let mut lost = false;
        for mut part in parts {
            match sync_part(&mut part).await {
                Some(()) => synced.push(part),
                None => lost = true,
            }
        }
        if lost {
            // A broken part is gone with its transaction: `release` rolls
            // the others back.
            for part in synced {
                self.release(part.server, false).await;
            }
            ClientError::shard_lost().encode(self.client.out());
            return Ok(false);
        }
        for part in synced {
            self.attached.attach(part.shard, part.server);
            if writes.contains(&part.shard) {
                self.attached.note_write(part.shard);
            }
        }
        self.txn.begin_implicit();
        self.txn.open_spanning();
        match self.end_spanning(true, true).await? {
            Ok(_) => Ok(true),
            Err(error) => {
                error.encode(self.client.out());
                Ok(false)
            }
        }
    }
}
