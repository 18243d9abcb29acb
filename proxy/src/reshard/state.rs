//! A move's phases and the transitions between them, pure: what the mover
//! may do next from where it is, and what a phase means for the rows of
//! the moving logical shard (which database serves them). The mover
//! (`reshard/mover.rs`) records each phase in `pgshard.moves`
//! (`store.rs`) as it reaches it.
//!
//! ```text
//! planned -> schema -> marking -> slot -> copy -> catchup -> holding -> fenced -> switched -> cleanup -> done
//!                                                    ^-- abandon ---------'--------'
//! any phase before switched -- fail --> failed
//! ```
//!
//! `switched` is the point of no return: before it the source database
//! serves the shard (a failure rolls back), from it on the target does
//! (the move can only finish).

/// Where a move is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Accepted, nothing done yet.
    Planned,
    /// The target gets the tables (schema only).
    Schema,
    /// Every live pgshard instance of the cluster marks the move (refuses
    /// the keyless statements it makes inexact) before any row of a plain
    /// table is copied (`instances.rs`).
    Marking,
    /// The publication and the slot (with its exported snapshot) on the
    /// source.
    Slot,
    /// The rows copied under the slot's snapshot.
    Copy,
    /// The target's subscription applies what changed since the snapshot.
    Catchup,
    /// Statements touching the shard are held; in-flight ones drain.
    Holding,
    /// The source refuses the shard's tables (moved out of the way) and
    /// its fence mark is on its way to the target.
    Fenced,
    /// The target serves the shard (committed there): no way back.
    Switched,
    /// The subscription, publication and slot go; the source's old
    /// tables after the cleanup delay.
    Cleanup,
    /// Finished.
    Done,
    /// Given up before the switch; the source serves the shard.
    Failed,
}

/// What happened to the step under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The step finished: on to the next.
    Advance,
    /// The cutover could not finish in time: traffic goes back to the
    /// source, and catch-up goes on.
    Abandon,
    /// The step failed for good.
    Fail,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 12] = [
        Phase::Planned,
        Phase::Schema,
        Phase::Marking,
        Phase::Slot,
        Phase::Copy,
        Phase::Catchup,
        Phase::Holding,
        Phase::Fenced,
        Phase::Switched,
        Phase::Cleanup,
        Phase::Done,
        Phase::Failed,
    ];

    /// The phase after `event` in this one; `None` when the event cannot
    /// happen here.
    pub fn next(self, event: Event) -> Option<Phase> {
        use Phase::*;
        match (self, event) {
            (Planned, Event::Advance) => Some(Schema),
            (Schema, Event::Advance) => Some(Marking),
            (Marking, Event::Advance) => Some(Slot),
            (Slot, Event::Advance) => Some(Copy),
            (Copy, Event::Advance) => Some(Catchup),
            (Catchup, Event::Advance) => Some(Holding),
            (Holding, Event::Advance) => Some(Fenced),
            (Fenced, Event::Advance) => Some(Switched),
            (Switched, Event::Advance) => Some(Cleanup),
            (Cleanup, Event::Advance) => Some(Done),
            (Holding | Fenced, Event::Abandon) => Some(Catchup),
            (phase, Event::Fail) if !phase.switched() && !phase.is_final() => Some(Failed),
            _ => None,
        }
    }

    /// Whether the target serves the shard (the switch committed).
    pub fn switched(self) -> bool {
        matches!(self, Phase::Switched | Phase::Cleanup | Phase::Done)
    }

    /// Whether the move has ended.
    pub fn is_final(self) -> bool {
        matches!(self, Phase::Done | Phase::Failed)
    }

    /// The name stored in `pgshard.moves.phase` and shown by SHOW MOVES.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Planned => "planned",
            Phase::Schema => "schema",
            Phase::Marking => "marking",
            Phase::Slot => "slot",
            Phase::Copy => "copy",
            Phase::Catchup => "catchup",
            Phase::Holding => "holding",
            Phase::Fenced => "fenced",
            Phase::Switched => "switched",
            Phase::Cleanup => "cleanup",
            Phase::Done => "done",
            Phase::Failed => "failed",
        }
    }

    /// The phase named `name` (as stored).
    pub fn parse(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Event::*;
    use super::Phase::*;
    use super::*;

    #[test]
    fn transitions() {
        let cases: &[(Phase, Event, Option<Phase>)] = &[
            (Planned, Advance, Some(Schema)),
            (Schema, Advance, Some(Marking)),
            (Marking, Advance, Some(Slot)),
            (Marking, Fail, Some(Failed)),
            (Slot, Advance, Some(Copy)),
            (Copy, Advance, Some(Catchup)),
            (Catchup, Advance, Some(Holding)),
            (Holding, Advance, Some(Fenced)),
            (Fenced, Advance, Some(Switched)),
            (Switched, Advance, Some(Cleanup)),
            (Cleanup, Advance, Some(Done)),
            (Done, Advance, None),
            (Failed, Advance, None),
            // A cutover given up goes back to catch-up, from the hold or
            // from the fence (unfenced first).
            (Holding, Abandon, Some(Catchup)),
            (Fenced, Abandon, Some(Catchup)),
            (Catchup, Abandon, None),
            (Switched, Abandon, None),
            // Failing rolls back only before the switch.
            (Planned, Fail, Some(Failed)),
            (Copy, Fail, Some(Failed)),
            (Catchup, Fail, Some(Failed)),
            (Fenced, Fail, Some(Failed)),
            (Switched, Fail, None),
            (Cleanup, Fail, None),
            (Done, Fail, None),
            (Failed, Fail, None),
        ];
        for &(from, event, to) in cases {
            assert_eq!(from.next(event), to, "{from} on {event:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for phase in Phase::ALL {
            assert_eq!(Phase::parse(phase.as_str()), Some(phase));
        }
        assert_eq!(Phase::parse("moving"), None);
    }

    #[test]
    fn the_switch_is_the_point_of_no_return() {
        let switched: Vec<Phase> = Phase::ALL.into_iter().filter(|p| p.switched()).collect();
        assert_eq!(switched, [Switched, Cleanup, Done]);
    }
}
