//! ReadyForQuery messages taken out of a client's output: a query string
//! pgshard runs one statement at a time owes the client one ReadyForQuery,
//! at its end, while each statement's reply brings its own.

use bytes::BytesMut;

use super::backend::BackendKind;
use super::frame::{backend_extent, Extent};

/// Drop every whole ReadyForQuery from `buf` at or after byte `from`, a
/// message boundary (a query string pgshard runs one statement at a time
/// owes the client one ReadyForQuery, at its end). Returns where the whole
/// messages end: bytes past it are a message still being written, to be
/// looked at again. A message that does not frame (a length below 4) ends
/// the scan there too; the codec that wrote it has a test of its own.
pub fn drop_ready_for_query(buf: &mut BytesMut, from: usize) -> usize {
    let mut at = from;
    while let Some(rest) = buf.get(at..) {
        let Ok(Extent::Whole(length)) = backend_extent(rest) else {
            break;
        };
        if BackendKind::of_tag(rest[0]) == Some(BackendKind::ReadyForQuery) {
            let tail = buf.split_off(at + length);
            buf.truncate(at);
            buf.unsplit(tail);
        } else {
            at += length;
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_for_query_is_dropped_from_whole_messages_only() {
        let ready = b"Z\x00\x00\x00\x05I";
        let complete = b"C\x00\x00\x00\x0dSELECT 1\x00";
        let mut buf = BytesMut::new();
        for part in [&complete[..], ready, complete, ready, b"Z\x00\x00"] {
            buf.extend_from_slice(part);
        }
        // The first message is before `from`: kept whatever it is.
        let mut kept = BytesMut::from(&[&ready[..], complete, ready][..].concat()[..]);
        assert_eq!(
            drop_ready_for_query(&mut kept, ready.len()),
            ready.len() + complete.len()
        );
        assert_eq!(&kept[..], &[&ready[..], complete].concat()[..]);
        // A ReadyForQuery still arriving stays, past the returned end.
        let end = drop_ready_for_query(&mut buf, 0);
        assert_eq!(end, 2 * complete.len());
        assert_eq!(&buf[..end], &[&complete[..], complete].concat()[..]);
        assert_eq!(&buf[end..], b"Z\x00\x00");
        buf.extend_from_slice(b"\x00\x05T");
        assert_eq!(drop_ready_for_query(&mut buf, end), end);
        assert_eq!(buf.len(), end);
        // A length below 4 stops the scan at that message.
        let mut bad = BytesMut::from(&[&complete[..], b"Z\x00\x00\x00\x03", ready].concat()[..]);
        assert_eq!(drop_ready_for_query(&mut bad, 0), complete.len());
        assert_eq!(bad.len(), complete.len() + 5 + ready.len());
    }
}
