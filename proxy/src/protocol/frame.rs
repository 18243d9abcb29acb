//! Framing of tagged protocol messages (`tag`, `int32 length`, body), with the
//! per-message length caps Postgres applies, and the typed decode of the
//! messages a client sends after startup.

use bytes::{BufMut, Bytes, BytesMut};

/// Start a message with `tag`; returns where its length goes, for
/// [`finish`].
pub fn begin(out: &mut BytesMut, tag: u8) -> usize {
    out.put_u8(tag);
    let at = out.len();
    out.put_u32(0);
    at
}

/// Patch the length of the message started at `at`.
pub fn finish(out: &mut BytesMut, at: usize) {
    let len = (out.len() - at) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// Postgres's cap for messages that may be large (Query, Parse, Bind,
/// CopyData, FunctionCall): `PQ_LARGE_MESSAGE_LIMIT` = MaxAllocSize - 1
/// (`src/include/libpq/libpq.h`).
pub const LARGE_MESSAGE_LIMIT: usize = 0x3fff_ffff - 1;

/// Postgres's cap for messages that are always small (Sync, Execute, Describe,
/// Close, Flush, Terminate, CopyDone, CopyFail): `PQ_SMALL_MESSAGE_LIMIT`.
pub const SMALL_MESSAGE_LIMIT: usize = 10_000;

/// Why a message stream is unusable. The connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("invalid message length {length} for message type \"{tag}\"", tag = char::from(*.tag))]
    BadLength { tag: u8, length: usize },
    #[error("invalid frontend message type {0}")]
    UnknownTag(u8),
    #[error("invalid message type {} from the server", char::from(*.0))]
    UnknownBackendTag(u8),
    #[error("malformed \"{tag}\" message: {reason}", tag = char::from(*.tag))]
    Malformed { tag: u8, reason: &'static str },
}

/// The most a client may send in one message of type `tag`: Postgres's own
/// limit, lowered to `configured_max` for the large kinds.
pub fn frontend_limit(tag: u8, configured_max: usize) -> Option<usize> {
    match tag {
        b'Q' | b'P' | b'B' | b'd' | b'F' | b'p' => Some(configured_max.min(LARGE_MESSAGE_LIMIT)),
        b'S' | b'E' | b'D' | b'C' | b'H' | b'X' | b'c' | b'f' => Some(SMALL_MESSAGE_LIMIT),
        _ => None,
    }
}

/// Split one whole client message (tag and length included) off the front
/// of `buf`: `Ok(None)` when more bytes are needed. The length is checked
/// against the tag's cap as soon as the header is in.
pub fn split_frontend_message(
    buf: &mut BytesMut,
    configured_max: usize,
) -> Result<Option<Bytes>, FrameError> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    let limit = frontend_limit(tag, configured_max).ok_or(FrameError::UnknownTag(tag))?;
    Ok(split_message(buf, limit)?.map(BytesMut::freeze))
}

/// The most a server may send in one message of type `tag`. Messages that
/// carry data (DataRow, CopyData, RowDescription, errors, notices,
/// notifications, function results: libpq's `VALID_LONG_MESSAGE_TYPE`) up to
/// what Postgres can allocate (`MaxAllocSize`); ParameterDescription up to
/// 65,535 parameter types; any other message up to 30,000 bytes, the size
/// past which libpq declares a stream of short messages lost
/// (`pqParseInput3`).
pub fn backend_limit(tag: u8) -> usize {
    match tag {
        b'd' | b'D' | b'E' | b'V' | b'N' | b'A' | b'T' => LARGE_MESSAGE_LIMIT,
        b't' => 2 + 4 * usize::from(u16::MAX),
        _ => SHORT_BACKEND_LIMIT,
    }
}

/// libpq's bound on a message that is not one of the long kinds.
const SHORT_BACKEND_LIMIT: usize = 30_000;

/// Split one whole server message (tag and length included, to be relayed
/// untouched) off the front of `buf`: the one framing of server messages.
/// The length is checked against [`backend_limit`] as soon as the header is
/// in.
pub fn split_backend_message(buf: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    Ok(split_message(buf, backend_limit(tag))?.map(BytesMut::freeze))
}

/// How much more room a buffer makes at once for a message still arriving:
/// a length field claiming a large message reserves memory only as its
/// bytes come.
const RESERVE_AHEAD: usize = 256 * 1024;

/// How much of the message at the front of a buffer has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// All of it: this many bytes, tag and length field included.
    Whole(usize),
    /// This many more bytes are needed.
    Missing(usize),
}

/// The extent of the message at the front of `buf`, whose body may be at
/// most `limit` bytes: the length is checked as soon as the header is in.
fn extent(buf: &[u8], limit: usize) -> Result<Extent, FrameError> {
    let [tag, a, b, c, d, ..] = *buf else {
        return Ok(Extent::Missing(5 - buf.len()));
    };
    let length = u32::from_be_bytes([a, b, c, d]) as usize;
    if length < 4 || length - 4 > limit {
        return Err(FrameError::BadLength { tag, length });
    }
    Ok(if buf.len() > length {
        Extent::Whole(1 + length)
    } else {
        Extent::Missing(1 + length - buf.len())
    })
}

/// The extent of the server message at the front of `buf`, its length
/// capped by [`backend_limit`]: for relaying messages in place, without
/// splitting them off the buffer.
pub fn backend_extent(buf: &[u8]) -> Result<Extent, FrameError> {
    match buf.first() {
        Some(&tag) => extent(buf, backend_limit(tag)),
        None => Ok(Extent::Missing(5)),
    }
}

/// Make room in `buf` for the `missing` bytes of a message still
/// arriving: a length field claiming a large message reserves memory only
/// as its bytes come.
pub fn reserve_missing(buf: &mut BytesMut, missing: usize) {
    buf.reserve(missing.min(RESERVE_AHEAD));
}

/// Split one whole message whose body may be at most `limit` bytes off
/// `buf` (header included); `None` until it is all there.
fn split_message(buf: &mut BytesMut, limit: usize) -> Result<Option<BytesMut>, FrameError> {
    match extent(buf, limit)? {
        Extent::Whole(length) => Ok(Some(buf.split_to(length))),
        Extent::Missing(missing) => {
            if buf.len() >= 5 {
                reserve_missing(buf, missing);
            }
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_messages_are_capped_by_kind() {
        let mut buf = BytesMut::from(&b"D\x00\x00\x00\x0a\x00\x01\x00\x00\x00\x00Z\x00"[..]);
        let whole = split_backend_message(&mut buf).unwrap().unwrap();
        assert_eq!(&whole[..], b"D\x00\x00\x00\x0a\x00\x01\x00\x00\x00\x00");
        assert_eq!(split_backend_message(&mut buf), Ok(None));
        buf.extend_from_slice(b"\x00\x00\x05I");
        assert_eq!(split_backend_message(&mut buf).unwrap().unwrap()[0], b'Z');
        // A DataRow may be large (its bytes are not reserved in advance); a
        // ReadyForQuery or a ParameterStatus may not; nothing is over 1 GiB.
        let mut buf = BytesMut::from(&b"D\x3f\xff\xff\xff"[..]);
        assert_eq!(split_backend_message(&mut buf), Ok(None));
        assert!(buf.capacity() < 1 << 20, "reserved {}", buf.capacity());
        for hostile in [
            &b"D\xff\xff\xff\xff"[..],
            b"Z\x00\x01\x00\x00",
            b"S\x00\x00\x80\x00",
            b"1\x00\x00\x00\x03",
        ] {
            let mut buf = BytesMut::from(hostile);
            assert!(split_backend_message(&mut buf).is_err(), "{hostile:?}");
        }
        let mut buf = BytesMut::from(&b"t\x00\x04\x00\x02"[..]);
        assert_eq!(
            split_backend_message(&mut buf),
            Ok(None),
            "65,535 types fit"
        );
    }
}
