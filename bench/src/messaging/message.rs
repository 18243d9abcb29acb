//! The message payload: a 24-byte header (creation time in microseconds
//! since the run's epoch, partition id, offset or sequence number, each a
//! little-endian i64) padded with filler to the configured size, so a
//! reader can tell end-to-end latency and check what it got.

/// Bytes of header at the start of every payload.
pub const HEADER_LEN: usize = 24;

/// What a payload's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Microseconds since the run's epoch when the writer made it.
    pub created_us: i64,
    pub partition: i64,
    /// The log offset (pub/sub) or the writer's sequence number (queue).
    pub seq: i64,
}

/// A payload of `size` bytes (at least [`HEADER_LEN`]) carrying `header`.
pub fn encode(header: Header, size: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(size.max(HEADER_LEN));
    bytes.extend_from_slice(&header.created_us.to_le_bytes());
    bytes.extend_from_slice(&header.partition.to_le_bytes());
    bytes.extend_from_slice(&header.seq.to_le_bytes());
    bytes.resize(size.max(HEADER_LEN), b'.');
    bytes
}

/// The header of `payload`, or `None` when it is too short to have one.
pub fn decode(payload: &[u8]) -> Option<Header> {
    let field = |i: usize| -> Option<i64> {
        let bytes: [u8; 8] = payload.get(i * 8..i * 8 + 8)?.try_into().ok()?;
        Some(i64::from_le_bytes(bytes))
    };
    Some(Header {
        created_us: field(0)?,
        partition: field(1)?,
        seq: field(2)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_pads() {
        let header = Header {
            created_us: 1_234_567,
            partition: 7,
            seq: -3,
        };
        let bytes = encode(header, 1024);
        assert_eq!(bytes.len(), 1024);
        assert_eq!(decode(&bytes), Some(header));
        assert_eq!(encode(header, 3).len(), HEADER_LEN);
        assert_eq!(decode(&bytes[..23]), None);
    }
}
