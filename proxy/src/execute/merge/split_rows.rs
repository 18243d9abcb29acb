//! The reply of an INSERT split across shards (`router::split`): RETURNING
//! rows put back in the order of the client's VALUES rows (each shard
//! returns its own rows in its own order). The parts run inside one
//! transaction per shard, committed together or not at all
//! (`session/commit.rs`), so a failure leaves no rows anywhere.

use bytes::BytesMut;

use crate::execute::merge::values::ValueError;

/// One split INSERT's rows, by server index (the fan-out's reading order).
#[derive(Debug, Default)]
pub struct SplitRows {
    /// The client's row numbers each server's INSERT holds, in order.
    rows: Vec<Vec<usize>>,
    /// RETURNING rows by client row number.
    returned: Vec<Option<Vec<u8>>>,
    /// Rows each server has returned so far.
    taken: Vec<usize>,
    /// The server the fan-out numbers 0 (the first to answer).
    first: Option<usize>,
    /// Positions are servers' indexes (an extended-protocol segment reads
    /// its shards in order), not the fan-out's numbering.
    positional: bool,
}

impl SplitRows {
    pub fn new(parts: Vec<(usize, Vec<usize>)>) -> SplitRows {
        let total = parts.iter().map(|(_, rows)| rows.len()).sum();
        let servers = parts.len();
        let rows = parts.into_iter().map(|(_, rows)| rows).collect();
        SplitRows {
            rows,
            returned: vec![None; total],
            taken: vec![0; servers],
            first: None,
            positional: false,
        }
    }

    /// A split INSERT's rows read by position: position `i` is the server
    /// holding `rows[i]`.
    pub fn positional(rows: Vec<Vec<usize>>) -> SplitRows {
        let mut split = SplitRows::new(rows.into_iter().map(|rows| (0, rows)).collect());
        split.positional = true;
        split
    }

    /// The fan-out numbers server `index` 0.
    pub(super) fn first_is(&mut self, index: usize) {
        self.first = Some(index);
    }

    fn server(&self, position: usize) -> Option<usize> {
        if self.positional {
            return Some(position);
        }
        match position {
            0 => self.first,
            p => Some(p - 1),
        }
    }

    /// A RETURNING row of the server at `position`.
    pub(super) fn row(&mut self, position: usize, message: &[u8]) -> Result<(), ValueError> {
        let extra = ValueError::Unreadable("RETURNING row beyond the rows inserted");
        let server = self.server(position).ok_or(extra.clone())?;
        let taken = self.taken.get_mut(server).ok_or(extra.clone())?;
        let row = *self
            .rows
            .get(server)
            .and_then(|rows| rows.get(*taken))
            .ok_or(extra.clone())?;
        *taken += 1;
        *self.returned.get_mut(row).ok_or(extra)? = Some(message.to_vec());
        Ok(())
    }

    /// The RETURNING rows in the client's order.
    pub(super) fn emit(self, out: &mut BytesMut) {
        for row in self.returned.into_iter().flatten() {
            out.extend_from_slice(&row);
        }
    }
}
