//! `COPY ... TO STDOUT` from several shards joined into one output: in text
//! and CSV without a header the shards' CopyData pass untouched; a header
//! line (each shard sends it as its first CopyData, as `copyto.c` sends one
//! CopyData per line) goes out once; in binary each shard's stream is read
//! tuple by tuple (`router::copy::binary`), its file header and trailer
//! dropped, and one header and one trailer frame the whole. Anything a
//! shard sends that does not fit (different headers, data after its
//! trailer, a stream cut short) fails the COPY rather than pass on.

use bytes::BytesMut;
use router::copy::{binary, CopyOut, Format};

use crate::protocol::messages;

/// Why the shards' COPY outputs cannot be joined into one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyJoinError {
    #[error("the shards' COPY headers differ: their tables do not match")]
    HeadersDiffer,
    #[error("a shard sent COPY data after its trailer")]
    DataAfterTrailer,
    #[error("a shard's binary COPY output ended without its trailer")]
    CutShort,
    /// A shard's binary stream does not read as COPY's binary format.
    #[error("{0}")]
    Binary(String),
}

/// Joins the CopyData of several shards' COPY TO.
#[derive(Debug)]
pub struct CopyJoin {
    plan: CopyOut,
    /// The header that went out (header line, or binary file header).
    header: Option<Vec<u8>>,
    /// Per reading position: that shard's stream.
    streams: Vec<Stream>,
}

#[derive(Debug, Default)]
struct Stream {
    /// Its header was read.
    headed: bool,
    /// Binary: bytes not yet a whole tuple.
    pending: Vec<u8>,
    /// Binary: its trailer was read.
    ended: bool,
}

impl CopyJoin {
    pub fn new(plan: CopyOut) -> CopyJoin {
        CopyJoin {
            plan,
            header: None,
            streams: Vec::new(),
        }
    }

    /// One CopyData body from the shard at position `index`; what the
    /// client should see is appended to `out`.
    pub fn data(
        &mut self,
        index: usize,
        body: &[u8],
        out: &mut BytesMut,
    ) -> Result<(), CopyJoinError> {
        if index >= self.streams.len() {
            self.streams.resize_with(index + 1, Stream::default);
        }
        match self.plan.format {
            Format::Binary => self.binary(index, body, out),
            _ if self.plan.header && !self.streams[index].headed => {
                self.streams[index].headed = true;
                self.header(body, out)
            }
            _ => {
                messages::copy_data(out, body);
                Ok(())
            }
        }
    }

    /// A shard's header: the first goes out, the others must match it.
    fn header(&mut self, header: &[u8], out: &mut BytesMut) -> Result<(), CopyJoinError> {
        match &self.header {
            None => {
                messages::copy_data(out, header);
                self.header = Some(header.to_vec());
                Ok(())
            }
            Some(first) if first == header => Ok(()),
            Some(_) => Err(CopyJoinError::HeadersDiffer),
        }
    }

    /// Binary data of the shard at `index`: its whole tuples go out in one
    /// CopyData, its header and trailer are kept back.
    fn binary(
        &mut self,
        index: usize,
        body: &[u8],
        out: &mut BytesMut,
    ) -> Result<(), CopyJoinError> {
        let stream = &mut self.streams[index];
        stream.pending.extend_from_slice(body);
        let mut start = 0;
        let mut header = None;
        if !stream.headed {
            let header_len = binary::header(&stream.pending)
                .map_err(|e| CopyJoinError::Binary(e.to_string()))?;
            match header_len {
                Some(len) => {
                    stream.headed = true;
                    header = Some(stream.pending[..len].to_vec());
                    start = len;
                }
                None => return Ok(()),
            }
        }
        let rows_from = start;
        let mut rows_to = start;
        while start < stream.pending.len() {
            if stream.ended {
                return Err(CopyJoinError::DataAfterTrailer);
            }
            let piece = binary::piece(&stream.pending[start..], None)
                .map_err(|e| CopyJoinError::Binary(e.to_string()))?;
            match piece {
                Some(binary::Piece::Trailer) => {
                    stream.ended = true;
                    start += binary::TRAILER.len();
                }
                Some(binary::Piece::Row { len, .. }) => {
                    start += len;
                    rows_to = start;
                }
                None => break,
            }
        }
        let rows = stream.pending[rows_from..rows_to].to_vec();
        stream.pending.drain(..start);
        if let Some(header) = header {
            self.header(&header, out)?;
        }
        if !rows.is_empty() {
            messages::copy_data(out, &rows);
        }
        Ok(())
    }

    /// Every shard's output is in: the binary trailer goes out; a shard
    /// whose binary stream did not end whole fails the COPY.
    pub fn finish(self, out: &mut BytesMut) -> Result<(), CopyJoinError> {
        if self.plan.format != Format::Binary {
            return Ok(());
        }
        let cut = self
            .streams
            .iter()
            .any(|s| !s.pending.is_empty() || (s.headed && !s.ended));
        if cut {
            return Err(CopyJoinError::CutShort);
        }
        if self.header.is_some() {
            messages::copy_data(out, binary::TRAILER);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

    /// The CopyData bodies in `out`.
    fn bodies(out: &[u8]) -> Vec<Vec<u8>> {
        let mut bodies = Vec::new();
        let mut rest = out;
        while rest.len() >= 5 {
            assert_eq!(rest[0], b'd');
            let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
            bodies.push(rest[5..1 + len].to_vec());
            rest = &rest[1 + len..];
        }
        bodies
    }

    fn join(format: Format, header: bool) -> CopyJoin {
        CopyJoin::new(CopyOut {
            format,
            header,
            merge: None,
        })
    }

    #[test]
    fn csv_header_goes_out_once() {
        let mut j = join(Format::Csv, true);
        let mut out = BytesMut::new();
        for (index, body) in [(0, "a,b\n"), (1, "a,b\n"), (0, "1,2\n"), (1, "3,4\n")] {
            j.data(index, body.as_bytes(), &mut out).unwrap();
        }
        j.finish(&mut out).unwrap();
        assert_eq!(bodies(&out), [b"a,b\n", b"1,2\n", b"3,4\n"]);
        let mut j = join(Format::Csv, true);
        j.data(0, b"a,b\n", &mut out).unwrap();
        assert!(j.data(1, b"a,c\n", &mut out).is_err());
    }

    #[test]
    fn binary_has_one_header_and_one_trailer() {
        let row1 = b"\x00\x01\x00\x00\x00\x01x";
        let row2 = b"\x00\x01\xff\xff\xff\xff";
        let shard0 = [HEADER, row1, b"\xff\xff"].concat();
        let shard1 = [HEADER, row2, row2, b"\xff\xff"].concat();
        let mut j = join(Format::Binary, false);
        let mut out = BytesMut::new();
        // Shard 1 in pieces that cut its header and rows anywhere.
        for piece in shard1.chunks(3) {
            j.data(1, piece, &mut out).unwrap();
        }
        j.data(0, &shard0, &mut out).unwrap();
        j.finish(&mut out).unwrap();
        let all: Vec<u8> = bodies(&out).concat();
        assert_eq!(all, [HEADER, row2, row2, row1, b"\xff\xff"].concat());
        // A stream cut short, data after a trailer.
        let mut j = join(Format::Binary, false);
        j.data(0, &shard0[..25], &mut out).unwrap();
        assert!(j.finish(&mut out).is_err());
        let mut j = join(Format::Binary, false);
        assert!(j
            .data(0, &[&shard0[..], b"\x00"].concat(), &mut out)
            .is_err());
    }
}
