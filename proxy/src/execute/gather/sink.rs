//! The gather sink: the shards' binary DataRows turned into the CopyData
//! of a binary COPY FROM STDIN on the coordinator, byte for byte (a binary
//! DataRow body, an int16 field count then an int32 length and the bytes of
//! each field, is a binary COPY tuple), after the 19-byte file header and
//! before the trailer; rows and bytes counted against
//! `cross_shard_gather_limit`. Pure: the caller writes [`GatherSink::take`]
//! to the coordinator whenever [`GatherSink::full`] says so, so no more
//! than about [`FLUSH_AT`] bytes of rows are ever held here.

use bytes::BytesMut;
use router::config::GatherLimit;

use crate::protocol::messages;

/// The binary COPY file header: signature, flags, no extension (19 bytes).
pub const HEADER: &[u8; 19] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// The binary COPY trailer: a tuple whose field count is -1.
pub const TRAILER: &[u8; 2] = b"\xff\xff";

/// Bytes of CopyData held before the caller must write them out.
pub const FLUSH_AT: usize = 64 * 1024;

/// Which bound of `cross_shard_gather_limit` a statement passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    Rows(u64),
    Bytes(u64),
}

impl Exceeded {
    /// The key, for the client's message.
    pub fn key(self) -> &'static str {
        match self {
            Exceeded::Rows(_) => "cross_shard_gather_limit.rows",
            Exceeded::Bytes(_) => "cross_shard_gather_limit.bytes",
        }
    }

    /// The bound in words (`1000 rows`, `2048 bytes`).
    pub fn bound(self) -> String {
        match self {
            Exceeded::Rows(n) => format!("{n} rows"),
            Exceeded::Bytes(n) => format!("{n} bytes"),
        }
    }
}

/// One statement's gathered rows on their way to the coordinator; the
/// counts run over all of the statement's gathers.
#[derive(Debug)]
pub struct GatherSink {
    limit: GatherLimit,
    rows: u64,
    bytes: u64,
    out: BytesMut,
}

impl GatherSink {
    pub fn new(limit: GatherLimit) -> Self {
        GatherSink {
            limit,
            rows: 0,
            bytes: 0,
            out: BytesMut::new(),
        }
    }

    /// A gather's COPY begins: its header.
    pub fn start(&mut self) {
        messages::copy_data(&mut self.out, HEADER);
    }

    /// One DataRow's body (binary values) as a COPY tuple; `Err` when it
    /// takes the statement past the limit (the row is not written).
    pub fn row(&mut self, body: &[u8]) -> Result<(), Exceeded> {
        let rows = self.rows + 1;
        let bytes = self.bytes + body.len() as u64;
        if rows > self.limit.rows {
            return Err(Exceeded::Rows(self.limit.rows));
        }
        if bytes > self.limit.bytes {
            return Err(Exceeded::Bytes(self.limit.bytes));
        }
        (self.rows, self.bytes) = (rows, bytes);
        messages::copy_data(&mut self.out, body);
        Ok(())
    }

    /// A gather's COPY ends: its trailer and CopyDone.
    pub fn finish(&mut self) {
        messages::copy_data(&mut self.out, TRAILER);
        messages::copy_done(&mut self.out);
    }

    /// Enough is held that the caller should write it out now.
    pub fn full(&self) -> bool {
        self.out.len() >= FLUSH_AT
    }

    /// What is held, to write to the coordinator.
    pub fn take(&mut self) -> BytesMut {
        self.out.split()
    }

    /// Rows the statement may still gather before it passes the limit.
    pub fn rows_left(&self) -> u64 {
        self.limit.rows.saturating_sub(self.rows)
    }

    /// `rows` gathered on the coordinator itself (its own database's part
    /// of a gather, an `INSERT ... SELECT ... LIMIT rows_left + 1` there):
    /// counted, `Err` when they take the statement past the row limit.
    /// Their bytes never pass through pgshard and are not counted.
    pub fn local(&mut self, rows: u64) -> Result<(), Exceeded> {
        let rows = self.rows.saturating_add(rows);
        if rows > self.limit.rows {
            return Err(Exceeded::Rows(self.limit.rows));
        }
        self.rows = rows;
        Ok(())
    }

    /// Rows and bytes (DataRow bodies) gathered so far.
    pub fn counted(&self) -> (u64, u64) {
        (self.rows, self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(rows: u64, bytes: u64) -> GatherSink {
        GatherSink::new(GatherLimit { rows, bytes })
    }

    /// A row of an int4 `7` and a NULL, as a binary DataRow body.
    const ROW: &[u8] = b"\0\x02\0\0\0\x04\0\0\0\x07\xff\xff\xff\xff";

    #[test]
    fn header_is_nineteen_bytes_in_a_copy_data() {
        let mut s = sink(10, 100);
        s.start();
        let out = s.take();
        assert_eq!(&out[..], b"d\0\0\0\x17PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0");
        assert_eq!(HEADER.len(), 19);
    }

    #[test]
    fn a_row_is_its_body_in_a_copy_data() {
        let mut s = sink(10, 100);
        s.row(ROW).unwrap();
        assert_eq!(
            &s.take()[..],
            b"d\0\0\0\x12\0\x02\0\0\0\x04\0\0\0\x07\xff\xff\xff\xff"
        );
        assert_eq!(s.counted(), (1, 14));
    }

    #[test]
    fn finish_writes_trailer_and_copy_done() {
        let mut s = sink(10, 100);
        s.finish();
        assert_eq!(&s.take()[..], b"d\0\0\0\x06\xff\xffc\0\0\0\x04");
    }

    #[test]
    fn a_whole_gather_in_order() {
        let mut s = sink(10, 100);
        s.start();
        s.row(b"\0\0").unwrap();
        s.finish();
        let mut want = b"d\0\0\0\x17PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec();
        want.extend_from_slice(b"d\0\0\0\x06\0\0");
        want.extend_from_slice(b"d\0\0\0\x06\xff\xffc\0\0\0\x04");
        assert_eq!(&s.take()[..], &want[..]);
        assert!(s.take().is_empty());
    }

    #[test]
    fn the_row_past_the_row_bound_is_refused_and_not_written() {
        let mut s = sink(2, 1000);
        s.row(ROW).unwrap();
        s.row(ROW).unwrap();
        let held = s.take().len();
        assert_eq!(s.row(ROW), Err(Exceeded::Rows(2)));
        assert!(s.take().is_empty());
        assert_eq!(held, 2 * (5 + ROW.len()));
        assert_eq!(s.counted(), (2, 28));
    }

    #[test]
    fn the_row_past_the_byte_bound_is_refused() {
        let mut s = sink(100, 20);
        s.row(ROW).unwrap();
        assert_eq!(s.row(ROW), Err(Exceeded::Bytes(20)));
        // Exactly at the bound is within it.
        let mut s = sink(100, 28);
        s.row(ROW).unwrap();
        assert_eq!(s.row(ROW), Ok(()));
    }

    #[test]
    fn counts_run_over_several_gathers() {
        let mut s = sink(3, 1000);
        for _ in 0..2 {
            s.start();
            s.row(ROW).unwrap();
            s.finish();
        }
        s.row(ROW).unwrap();
        assert_eq!(s.row(ROW), Err(Exceeded::Rows(3)));
    }

    #[test]
    fn local_rows_count_against_the_row_bound() {
        let mut s = sink(5, 1000);
        s.row(ROW).unwrap();
        assert_eq!(s.rows_left(), 4);
        assert_eq!(s.local(4), Ok(()));
        assert_eq!(s.rows_left(), 0);
        assert_eq!(s.local(1), Err(Exceeded::Rows(5)));
        assert_eq!(s.counted(), (5, 14));
        assert!(!s.take().is_empty(), "the streamed row is still held");
    }

    #[test]
    fn full_at_the_flush_size() {
        let mut s = sink(u64::MAX, u64::MAX);
        let body = vec![0u8; 1000];
        while !s.full() {
            s.row(&body).unwrap();
        }
        assert!(s.take().len() >= FLUSH_AT);
        assert!(!s.full());
    }

    #[test]
    fn exceeded_names_its_key() {
        assert_eq!(Exceeded::Rows(5).key(), "cross_shard_gather_limit.rows");
        assert_eq!(Exceeded::Bytes(9).bound(), "9 bytes");
    }
}
