//! A gathered statement's finish that outlives it (see `gather.rs`'s
//! module doc): a cursor DECLARE makes, or a portal read across Executes,
//! left on the coordinator's server and known to the session as a cursor
//! of that database; its plan's temp tables named apart; where it is
//! refused.

use router::gather::{GatherOptions, GatherPlan};

use super::{not_yet, Finish};
use crate::errors::ClientError;
use crate::protocol::sqlstate;
use crate::session::cursor::Place;
use crate::session::{End, Session};

/// What a finish leaves on the coordinator's server for later messages
/// (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kept {
    /// A portal of this name (read across Executes).
    Portal(bytes::Bytes),
    /// A cursor `DECLARE` made.
    Cursor { name: bytes::Bytes, hold: bool },
}

impl Kept {
    /// What `plan`'s finish, run as `finish` says, leaves.
    pub(super) fn of(plan: &GatherPlan, finish: &Finish) -> Option<Kept> {
        if let Some(cursor) = &plan.cursor {
            return Some(Kept::Cursor {
                name: bytes::Bytes::copy_from_slice(cursor.name.as_bytes()),
                hold: cursor.hold,
            });
        }
        match finish {
            Finish::Extended { bind, max_rows, .. } if !bind.portal.is_empty() || *max_rows > 0 => {
                Some(Kept::Portal(bind.portal.clone()))
            }
            _ => None,
        }
    }

    pub(super) fn name(&self) -> &bytes::Bytes {
        match self {
            Kept::Portal(name) | Kept::Cursor { name, .. } => name,
        }
    }
}

/// Why a kept finish is refused in a READ ONLY block or with two-phase
/// commit: where, and what to do instead.
pub(super) const KEPT_OWN_IN_BLOCK: (&str, &str) = (
    "as a cursor or a portal read in parts inside a READ ONLY transaction block or with \
     two_phase_commit on (the coordinator is then a session of its own, which the cursor \
     would have to outlive)",
    "read it whole (without a row limit, in the unnamed portal, not as a cursor)",
);

/// The client's error for a kept finish outside a transaction block, if
/// it gets one: a DECLARE without WITH HOLD gets Postgres's own (25P01);
/// a named portal or a row limit is refused (its portal would have to
/// outlive the coordinator's own transaction).
fn kept_outside(kept: &Kept, in_block: bool, refusal: &ClientError) -> Option<ClientError> {
    match kept {
        _ if in_block => None,
        Kept::Cursor { hold: true, .. } => None,
        Kept::Cursor { hold: false, .. } => Some(ClientError::new(
            sqlstate::NO_ACTIVE_SQL_TRANSACTION,
            "DECLARE CURSOR can only be used in transaction blocks",
        )),
        Kept::Portal(_) => Some(not_yet(
            refusal,
            (
                "in a named portal or with a row limit on its Execute outside a transaction \
                 block",
                "open a transaction block (BEGIN) first, or execute it whole in the unnamed \
                 portal",
            ),
        )),
    }
}

impl Session {
    /// The plan of `sql` run as `finish` says (`in_block`: inside the
    /// client's block), its options, and what it keeps; `Err(Some)`: the
    /// client's error, `Err(None)`: a simple DECLARE any shard answers
    /// (Postgres's 25P01 after its parse analysis).
    pub(super) fn plan_kept(
        &mut self,
        sql: &str,
        (finish, in_block): (&Finish, bool),
        refusal: &ClientError,
        coordinator: usize,
    ) -> Result<(GatherPlan, GatherOptions, Option<Kept>), Option<ClientError>> {
        let mut options = GatherOptions {
            coordinator,
            gather_all: false,
            serial: 0,
        };
        let plan = self.gather_plan(sql, &options, refusal)?;
        let limited = matches!(finish, Finish::Extended { max_rows, .. } if *max_rows > 0);
        if plan.explain.is_some() && limited {
            // pgshard's lines come before the coordinator's plan rows: a
            // row limit would count them apart.
            let what = (
                "as an EXPLAIN with a row limit on its Execute",
                "execute it without one",
            );
            return Err(Some(not_yet(refusal, what)));
        }
        let Some(kept) = Kept::of(&plan, finish) else {
            return Ok((plan, options, None));
        };
        if let Some(error) = kept_outside(&kept, in_block, refusal) {
            let postgres = error.code == sqlstate::NO_ACTIVE_SQL_TRANSACTION
                && matches!(finish, Finish::Simple);
            return Err((!postgres).then_some(error));
        }
        // Its temp tables stay beside later statements' own.
        options.serial = self.portals.cursors.next_serial();
        let plan = self.gather_plan(sql, &options, refusal)?;
        Ok((plan, options, Some(kept)))
    }

    /// Know `kept` as a cursor of the `coordinator` database, before it
    /// runs: a WITH HOLD cursor's server is pinned as it goes back.
    pub(super) fn keep(&mut self, kept: Option<&Kept>, coordinator: usize, in_block: bool) {
        if let Some(kept) = kept {
            let hold = matches!(kept, Kept::Cursor { hold: true, .. });
            let place = Place::Shard {
                shard: coordinator,
                hold,
                in_txn: in_block,
            };
            self.portals.cursors.declare(kept.name().clone(), place);
        }
    }

    /// `kept`'s statement failed: it is not there (nor its server pinned).
    pub(super) async fn not_kept(&mut self, kept: &Kept) -> Result<(), End> {
        self.portals.cursors.forget(kept.name());
        self.release_unneeded_pins().await
    }
}
