//! Points where a test parks a move (as two-phase commit's faults do), to
//! crash pgshard there and check that the next instance finishes or rolls
//! the move back. A parked move still answers CANCEL MOVE.

use std::time::Duration;

use super::plan::MoveError;
use super::Moves;

/// Where a move parks when the fault is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The publication and the slot made, before the copy.
    AfterSlot,
    /// The subscription made, before waiting for the lag.
    MidCatchup,
    /// The switch committed, before the subscription, publication and
    /// slot are dropped.
    AfterSwitch,
}

/// Park move `id` for ever when `fault` is injected (until it is
/// cancelled, before its switch).
pub async fn park(moves: &Moves, id: &str, fault: Fault) -> Result<(), MoveError> {
    if !moves.faulty(fault) {
        return Ok(());
    }
    tracing::warn!(id, "move parked at injected fault {fault:?}");
    loop {
        if fault != Fault::AfterSwitch {
            moves.check(id)?;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
