//! `pgdog.unique_id()`: the id layout and the generator's state machine
//! (pure: the clock is an argument), and in [`rewrite`] where a statement
//! calls it and the text with each call replaced by an id.
//!
//! An id is `min + (ms << (node_bits + seq_bits) | node << seq_bits | seq)`:
//! `ms` the milliseconds since [`EPOCH_MS`], `node` the instance's node id,
//! `seq` a counter within one millisecond. Two instances with different node
//! ids never make the same id; one instance makes strictly increasing ids.
//! When the clock goes backwards (or a millisecond's counter runs out) the
//! generator keeps counting from the last millisecond it used, borrowing
//! from the next ones, at most [`MAX_LEAD_MS`] ahead of the clock; further
//! ahead it asks its caller to wait ([`Next::Wait`]), so an id is never
//! made twice.

pub mod rewrite;

use serde::{Deserialize, Serialize};

/// The id epoch: 2025-11-26 19:13:15 UTC in Unix milliseconds, PgDog's, so
/// that pgshard and PgDog nodes with distinct node ids share one id space
/// (`standard` ids of both increase together).
pub const EPOCH_MS: u64 = 1_764_184_395_000;

/// How far (ms) the generator may run ahead of the clock before it waits.
pub const MAX_LEAD_MS: u64 = 100;

/// Bits of the millisecond timestamp (about 69 years from the epoch).
const TIMESTAMP_BITS: u32 = 41;

/// `unique_id_function`: the id layout (PgDog's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UniqueIdFunction {
    /// 63 bits: 41 of milliseconds, 10 of node id (0-1023), 12 of sequence
    /// (4096 ids per millisecond per node).
    #[default]
    Standard,
    /// 53 bits, safe as a JavaScript number: 41 of milliseconds, 6 of node
    /// id (0-63), 6 of sequence (64 ids per millisecond per node).
    Compact,
}

impl UniqueIdFunction {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            UniqueIdFunction::Standard => "standard",
            UniqueIdFunction::Compact => "compact",
        }
    }

    fn node_bits(self) -> u32 {
        match self {
            UniqueIdFunction::Standard => 10,
            UniqueIdFunction::Compact => 6,
        }
    }

    fn seq_bits(self) -> u32 {
        match self {
            UniqueIdFunction::Standard => 12,
            UniqueIdFunction::Compact => 6,
        }
    }

    /// The largest node id of the layout.
    pub fn max_node(self) -> u64 {
        (1 << self.node_bits()) - 1
    }

    /// The largest sequence number within one millisecond.
    pub fn max_seq(self) -> u64 {
        (1 << self.seq_bits()) - 1
    }

    /// The largest id the layout gives (with `unique_id_min` added).
    pub fn ceiling(self) -> u64 {
        match self {
            UniqueIdFunction::Standard => i64::MAX as u64,
            UniqueIdFunction::Compact => (1 << 53) - 1,
        }
    }
}

/// The parts of an id, for tests and SHOW commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdParts {
    pub ms: u64,
    pub node: u64,
    pub seq: u64,
}

/// Why no id can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UniqueIdError {
    #[error("the system clock reads {now_ms} ms since 1970, before the id epoch ({EPOCH_MS})")]
    BeforeEpoch { now_ms: u64 },
    #[error("the id timestamp no longer fits in {TIMESTAMP_BITS} bits (69 years after the epoch)")]
    TimestampOverflow,
    #[error("unique_id_min ({min}) plus the id exceeds the largest {function} id ({ceiling})")]
    AboveCeiling {
        min: u64,
        function: &'static str,
        ceiling: u64,
    },
}

/// What the generator does for one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Id(i64),
    /// Ahead of the clock by more than [`MAX_LEAD_MS`]: wait this many
    /// milliseconds and ask again (nothing was used).
    Wait(u64),
}

/// One instance's generator: its layout, node id and minimum, and the last
/// (millisecond, sequence) it used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generator {
    function: UniqueIdFunction,
    node: u64,
    min: u64,
    /// The last millisecond (since the epoch) used, and its last sequence
    /// number; `None` before the first id.
    last: Option<(u64, u64)>,
}

impl Generator {
    /// A generator for `node` (checked against the layout by the config).
    pub fn new(function: UniqueIdFunction, node: u64, min: u64) -> Generator {
        Generator {
            function,
            node: node & function.max_node(),
            min,
            last: None,
        }
    }

    /// The next id at clock reading `now_ms` (Unix milliseconds).
    pub fn next(&mut self, now_ms: u64) -> Result<Next, UniqueIdError> {
        let now = now_ms
            .checked_sub(EPOCH_MS)
            .ok_or(UniqueIdError::BeforeEpoch { now_ms })?;
        let (ms, seq) = match self.last {
            Some((last, seq)) if last >= now => {
                if seq < self.function.max_seq() {
                    (last, seq + 1)
                } else {
                    (last + 1, 0)
                }
            }
            _ => (now, 0),
        };
        if ms > now + MAX_LEAD_MS {
            return Ok(Next::Wait(ms - now - MAX_LEAD_MS));
        }
        let id = self.compose(IdParts {
            ms,
            node: self.node,
            seq,
        })?;
        self.last = Some((ms, seq));
        Ok(Next::Id(id))
    }

    /// The id of `parts` with the minimum added.
    pub fn compose(&self, parts: IdParts) -> Result<i64, UniqueIdError> {
        let f = self.function;
        if parts.ms >> TIMESTAMP_BITS != 0 {
            return Err(UniqueIdError::TimestampOverflow);
        }
        let raw = parts.ms << (f.node_bits() + f.seq_bits())
            | (parts.node & f.max_node()) << f.seq_bits()
            | (parts.seq & f.max_seq());
        let above = UniqueIdError::AboveCeiling {
            min: self.min,
            function: f.as_str(),
            ceiling: f.ceiling(),
        };
        match raw.checked_add(self.min) {
            Some(id) if id <= f.ceiling() => i64::try_from(id).map_err(|_| above),
            _ => Err(above),
        }
    }

    /// The parts of `id` (made by a generator of this layout and minimum).
    pub fn parts(&self, id: i64) -> IdParts {
        let f = self.function;
        let raw = (id as u64).wrapping_sub(self.min);
        IdParts {
            ms: raw >> (f.node_bits() + f.seq_bits()),
            node: (raw >> f.seq_bits()) & f.max_node(),
            seq: raw & f.max_seq(),
        }
    }
}

#[cfg(test)]
mod tests;
