//! Where a session is in the extended protocol between two Syncs, as one
//! state: messages go their usual way, or are skipped to Sync after an
//! error, or join a segment held for several shards, or go to a portal
//! pgshard answers itself (transaction control, a COPY into a sharded
//! table, an UPDATE that moves rows, a merged cursor's FETCH/MOVE/CLOSE, a
//! SELECT finished on the coordinator).
//! At most one of these at a time: a portal ends at the next message that
//! is not its own (so before any Bind starts another or a segment), and an
//! error drops whatever was bound.

use super::cursor::CursorPortal;
use super::gather::GatherPortal;
use super::key_move::MovePortal;
use super::local::LocalPortal;
use super::segment::Segment;

/// The extended-protocol phase.
#[derive(Debug, Default)]
pub enum Phase {
    /// Messages go their usual way.
    #[default]
    Idle,
    /// A message was refused (by pgshard or a server): the extended
    /// messages up to Sync are skipped, as Postgres does after an error.
    Skipping,
    /// A Bind that goes to several shards, held with what follows until
    /// Sync (`segment.rs`).
    Batch(Box<Segment>),
    /// Transaction control pgshard answers itself: its Describe and
    /// Execute get local replies (`local.rs`).
    LocalPortal(LocalPortal),
    /// A bound COPY into a sharded table (its text), run at its Execute.
    CopyPortal(String),
    /// A bound UPDATE that moves a row to another shard, run at its
    /// Execute.
    MovePortal(Box<MovePortal>),
    /// A bound FETCH, MOVE or CLOSE of a cursor pgshard answers.
    CursorPortal(CursorPortal),
    /// A bound SELECT finished on the coordinator, run at its Execute
    /// (`gather/portal.rs`).
    GatherPortal(Box<GatherPortal>),
}

impl Phase {
    /// Extended messages are skipped until Sync.
    pub fn skipping(&self) -> bool {
        matches!(self, Phase::Skipping)
    }

    /// An error: skip to Sync (whatever was bound is dropped).
    pub fn skip(&mut self) {
        *self = Phase::Skipping;
    }

    /// A Sync (or a segment's Sync): skipping ends.
    pub fn synced(&mut self) {
        if self.skipping() {
            *self = Phase::Idle;
        }
    }

    /// A portal answered here ended (another message came).
    pub fn end_portal(&mut self) {
        *self = Phase::Idle;
    }

    /// A segment is held.
    pub fn holds_batch(&self) -> bool {
        matches!(self, Phase::Batch(_))
    }

    /// Hold `segment` until Sync.
    pub fn hold_batch(&mut self, segment: Segment) {
        *self = Phase::Batch(Box::new(segment));
    }

    /// The held segment, taken out (the phase is idle after).
    pub fn take_batch(&mut self) -> Option<Segment> {
        match std::mem::take(self) {
            Phase::Batch(segment) => Some(*segment),
            other => {
                *self = other;
                None
            }
        }
    }

    pub fn bind_local(&mut self, portal: LocalPortal) {
        *self = Phase::LocalPortal(portal);
    }

    pub fn local_portal(&self) -> Option<LocalPortal> {
        match self {
            Phase::LocalPortal(portal) => Some(*portal),
            _ => None,
        }
    }

    pub fn bind_copy(&mut self, sql: String) {
        *self = Phase::CopyPortal(sql);
    }

    pub fn copy_bound(&self) -> bool {
        matches!(self, Phase::CopyPortal(_))
    }

    /// The bound COPY's text, taken out (the phase is idle after).
    pub fn take_copy(&mut self) -> Option<String> {
        match std::mem::take(self) {
            Phase::CopyPortal(sql) => Some(sql),
            other => {
                *self = other;
                None
            }
        }
    }

    pub fn bind_gather(&mut self, portal: GatherPortal) {
        *self = Phase::GatherPortal(Box::new(portal));
    }

    pub fn gather_portal(&self) -> Option<&GatherPortal> {
        match self {
            Phase::GatherPortal(portal) => Some(portal),
            _ => None,
        }
    }

    /// The bound gathered SELECT, taken out (the phase is idle after).
    pub fn take_gather(&mut self) -> Option<GatherPortal> {
        match std::mem::take(self) {
            Phase::GatherPortal(portal) => Some(*portal),
            other => {
                *self = other;
                None
            }
        }
    }

    pub fn bind_move(&mut self, portal: MovePortal) {
        *self = Phase::MovePortal(Box::new(portal));
    }

    pub fn move_bound(&self) -> bool {
        matches!(self, Phase::MovePortal(_))
    }

    /// The bound moving UPDATE, taken out (the phase is idle after).
    pub fn take_move(&mut self) -> Option<MovePortal> {
        match std::mem::take(self) {
            Phase::MovePortal(portal) => Some(*portal),
            other => {
                *self = other;
                None
            }
        }
    }

    pub fn bind_cursor(&mut self, portal: CursorPortal) {
        *self = Phase::CursorPortal(portal);
    }

    pub fn cursor_portal(&self) -> Option<&CursorPortal> {
        match self {
            Phase::CursorPortal(portal) => Some(portal),
            _ => None,
        }
    }

    pub fn cursor_portal_mut(&mut self) -> Option<&mut CursorPortal> {
        match self {
            Phase::CursorPortal(portal) => Some(portal),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> LocalPortal {
        LocalPortal {
            tag: "BEGIN",
            nested: false,
        }
    }

    /// What each phase answers to the questions the session asks.
    fn answers(phase: &Phase) -> (bool, bool, bool, bool, bool, bool) {
        (
            phase.skipping(),
            phase.holds_batch(),
            phase.local_portal().is_some(),
            phase.copy_bound(),
            phase.move_bound(),
            phase.cursor_portal().is_some(),
        )
    }

    #[test]
    fn one_phase_at_a_time() {
        let none = (false, false, false, false, false, false);
        let mut phase = Phase::default();
        assert_eq!(answers(&phase), none);
        phase.bind_local(local());
        assert_eq!(answers(&phase), (false, false, true, false, false, false));
        phase.bind_copy("COPY t FROM STDIN".to_owned());
        assert_eq!(answers(&phase), (false, false, false, true, false, false));
        // An error drops the bound portal: only skipping is left.
        phase.skip();
        assert_eq!(answers(&phase), (true, false, false, false, false, false));
        phase.synced();
        assert_eq!(answers(&phase), none);
    }

    #[test]
    fn taking_leaves_other_phases_alone() {
        let mut phase = Phase::default();
        phase.bind_local(local());
        assert!(phase.take_copy().is_none());
        assert!(phase.take_move().is_none());
        assert!(phase.take_batch().is_none());
        assert_eq!(phase.local_portal().map(|p| p.tag), Some("BEGIN"));
        phase.bind_copy("COPY t FROM STDIN".to_owned());
        assert_eq!(phase.take_copy().as_deref(), Some("COPY t FROM STDIN"));
        assert!(!phase.copy_bound() && !phase.skipping());
    }

    #[test]
    fn sync_ends_only_skipping() {
        let mut phase = Phase::default();
        phase.bind_copy("COPY t FROM STDIN".to_owned());
        phase.synced();
        assert!(phase.copy_bound(), "a portal ends by its own handler");
        phase.end_portal();
        assert_eq!(answers(&phase), (false, false, false, false, false, false));
    }
}
