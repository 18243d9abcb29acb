//! Points where a test parks a move (as two-phase commit's faults do), to
//! crash pgshard there and check that the next instance finishes or rolls
//! the move back. A parked move still answers CANCEL MOVE, and goes on
//! when the fault is cleared.

use std::time::Duration;

use super::plan::MoveError;
use super::Moves;

/// Where a move parks when the fault is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The publication and the slot made, before the copy.
    AfterSlot,
    /// The first table of the shard copied (committed on the target), the
    /// others not yet: the copy is half done.
    MidCopy,
    /// The subscription made, before waiting for the lag.
    MidCatchup,
    /// In the cutover, statements on the shard held: the source fenced and
    /// its mark applied on the target, the switch not committed.
    WhileHolding,
    /// The switch committed, before the subscription, publication and
    /// slot are dropped.
    AfterSwitch,
}

impl Fault {
    /// Every fault, in the order a move reaches them.
    pub const ALL: [Fault; 5] = [
        Fault::AfterSlot,
        Fault::MidCopy,
        Fault::MidCatchup,
        Fault::WhileHolding,
        Fault::AfterSwitch,
    ];

    /// Its name in `PGSHARD_TEST_FAULT` (`pgshard-child`).
    pub fn name(self) -> &'static str {
        match self {
            Fault::AfterSlot => "after_slot",
            Fault::MidCopy => "mid_copy",
            Fault::MidCatchup => "mid_catchup",
            Fault::WhileHolding => "while_holding",
            Fault::AfterSwitch => "after_switch",
        }
    }

    /// The fault named `name`.
    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Park move `id` while `fault` is injected (until it is cleared, or the
/// move cancelled before its switch).
pub async fn park(moves: &Moves, id: &str, fault: Fault) -> Result<(), MoveError> {
    if !moves.faulty(fault) {
        return Ok(());
    }
    tracing::warn!(id, "move parked at injected fault {fault:?}");
    while moves.faulty(fault) {
        if fault != Fault::AfterSwitch {
            moves.check(id)?;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tracing::info!(id, "move goes on from fault {fault:?}");
    Ok(())
}
