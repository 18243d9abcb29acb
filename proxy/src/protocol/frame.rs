//! Framing of tagged protocol messages (`tag`, `int32 length`, body), with the
//! per-message length caps Postgres applies, and the typed decode of the
//! messages a client sends after startup.

use bytes::{Buf, Bytes, BytesMut};

/// Postgres's cap for messages that may be large (Query, Parse, Bind,
/// CopyData, FunctionCall): `PQ_LARGE_MESSAGE_LIMIT` = MaxAllocSize - 1
/// (`src/include/libpq/libpq.h`).
pub const LARGE_MESSAGE_LIMIT: usize = 0x3fff_ffff - 1;

/// Postgres's cap for messages that are always small (Sync, Execute, Describe,
/// Close, Flush, Terminate, CopyDone, CopyFail): `PQ_SMALL_MESSAGE_LIMIT`.
pub const SMALL_MESSAGE_LIMIT: usize = 10_000;

/// One message: its tag and its body (the bytes after the length).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub tag: u8,
    pub body: Bytes,
}

/// Why a message stream is unusable. The connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("invalid message length {length} for message type \"{tag}\"", tag = char::from(*.tag))]
    BadLength { tag: u8, length: usize },
    #[error("invalid frontend message type {0}")]
    UnknownTag(u8),
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

/// Decode one client message from the front of `buf`: `Ok(None)` when more
/// bytes are needed. The length is checked against the tag's cap as soon as
/// the header is in, before the body is buffered.
pub fn decode_frontend_frame(
    buf: &mut BytesMut,
    configured_max: usize,
) -> Result<Option<Frame>, FrameError> {
    let Some(&tag) = buf.first() else {
        return Ok(None);
    };
    let limit = frontend_limit(tag, configured_max).ok_or(FrameError::UnknownTag(tag))?;
    take_frame(buf, limit)
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

/// Decode one server message from the front of `buf`, its length capped by
/// [`backend_limit`].
pub fn decode_backend_frame(buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
    let Some(mut message) = split_backend_message(buf)? else {
        return Ok(None);
    };
    let tag = message[0];
    message.advance(5);
    Ok(Some(Frame { tag, body: message }))
}

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

/// Split one frame whose body may be at most `limit` bytes off `buf`.
fn take_frame(buf: &mut BytesMut, limit: usize) -> Result<Option<Frame>, FrameError> {
    let Some(mut frame) = split_message(buf, limit)? else {
        return Ok(None);
    };
    let tag = frame[0];
    frame.advance(5);
    Ok(Some(Frame {
        tag,
        body: frame.freeze(),
    }))
}

/// How much more room a buffer makes at once for a message still arriving:
/// a length field claiming a large message reserves memory only as its
/// bytes come.
const RESERVE_AHEAD: usize = 256 * 1024;

/// Split one whole message whose body may be at most `limit` bytes off
/// `buf` (header included); `None` until it is all there.
fn split_message(buf: &mut BytesMut, limit: usize) -> Result<Option<BytesMut>, FrameError> {
    if buf.len() < 5 {
        return Ok(None);
    }
    let tag = buf[0];
    let length = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if length < 4 || length - 4 > limit {
        return Err(FrameError::BadLength { tag, length });
    }
    if buf.len() < 1 + length {
        buf.reserve((1 + length - buf.len()).min(RESERVE_AHEAD));
        return Ok(None);
    }
    Ok(Some(buf.split_to(1 + length)))
}

/// A client message after startup, with views into the frame's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontendMessage {
    /// `Q`: a simple-protocol query string (may hold several statements).
    Query(Bytes),
    /// `P`
    Parse {
        name: Bytes,
        query: Bytes,
        param_types: Vec<u32>,
    },
    /// `B`
    Bind(Bind),
    /// `D`: `S` statement or `P` portal.
    Describe {
        kind: u8,
        name: Bytes,
    },
    /// `E`
    Execute {
        portal: Bytes,
        max_rows: i32,
    },
    /// `C`: `S` statement or `P` portal.
    Close {
        kind: u8,
        name: Bytes,
    },
    Sync,
    Flush,
    Terminate,
    CopyData(Bytes),
    CopyDone,
    CopyFail(Bytes),
    /// `p`: a password, SASL initial response or SASL response; its layout
    /// depends on the authentication exchange in progress.
    Password(Bytes),
    /// `F`: the fastpath function call, which pgshard refuses.
    FunctionCall,
}

/// A Bind message: parameter values stay views into the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub portal: Bytes,
    pub statement: Bytes,
    /// 0 text, 1 binary: none (all text), one (applies to all) or one per parameter.
    pub param_formats: Vec<i16>,
    /// `None` is SQL NULL.
    pub params: Vec<Option<Bytes>>,
    pub result_formats: Vec<i16>,
}

impl Bind {
    /// The format (0 text, 1 binary) of parameter `index`.
    pub fn param_format(&self, index: usize) -> i16 {
        match self.param_formats.len() {
            0 => 0,
            1 => self.param_formats[0],
            _ => self.param_formats.get(index).copied().unwrap_or(0),
        }
    }
}

/// Reads the fields of one message body, failing on short or trailing input.
struct Reader {
    tag: u8,
    body: Bytes,
}

impl Reader {
    fn malformed(&self, reason: &'static str) -> FrameError {
        FrameError::Malformed {
            tag: self.tag,
            reason,
        }
    }

    fn cstr(&mut self) -> Result<Bytes, FrameError> {
        let end = self
            .body
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| self.malformed("missing NUL terminator"))?;
        let text = self.body.split_to(end);
        self.body.advance(1);
        Ok(text)
    }

    fn u8(&mut self) -> Result<u8, FrameError> {
        if self.body.is_empty() {
            return Err(self.malformed("message too short"));
        }
        Ok(self.body.get_u8())
    }

    fn i16(&mut self) -> Result<i16, FrameError> {
        if self.body.len() < 2 {
            return Err(self.malformed("message too short"));
        }
        Ok(self.body.get_i16())
    }

    fn i32(&mut self) -> Result<i32, FrameError> {
        if self.body.len() < 4 {
            return Err(self.malformed("message too short"));
        }
        Ok(self.body.get_i32())
    }

    /// A count of parameters, parameter types or format codes: an unsigned
    /// 16-bit integer, as Postgres reads it (`pq_getmsgint(msg, 2)` in
    /// `exec_parse_message`/`exec_bind_message`), so up to 65,535. Refused
    /// when the rest of the body could not hold that many items of `min_item`
    /// bytes (so a hostile count never reserves memory the message does not
    /// back).
    fn count(&mut self, min_item: usize) -> Result<usize, FrameError> {
        if self.body.len() < 2 {
            return Err(self.malformed("message too short"));
        }
        let n = usize::from(self.body.get_u16());
        if n * min_item > self.body.len() {
            return Err(self.malformed("count larger than the message"));
        }
        Ok(n)
    }

    fn bytes(&mut self, n: usize) -> Result<Bytes, FrameError> {
        if self.body.len() < n {
            return Err(self.malformed("value longer than the message"));
        }
        Ok(self.body.split_to(n))
    }

    fn end(self) -> Result<(), FrameError> {
        if self.body.is_empty() {
            Ok(())
        } else {
            Err(self.malformed("bytes after the last field"))
        }
    }
}

impl FrontendMessage {
    /// Decode the body of a frame from a client.
    pub fn decode(frame: Frame) -> Result<FrontendMessage, FrameError> {
        let mut r = Reader {
            tag: frame.tag,
            body: frame.body,
        };
        let message = match frame.tag {
            b'Q' => {
                let query = r.cstr()?;
                r.end()?;
                return Ok(FrontendMessage::Query(query));
            }
            b'P' => {
                let name = r.cstr()?;
                let query = r.cstr()?;
                let n = r.count(4)?;
                let mut param_types = Vec::with_capacity(n);
                for _ in 0..n {
                    param_types.push(r.i32()? as u32);
                }
                FrontendMessage::Parse {
                    name,
                    query,
                    param_types,
                }
            }
            b'B' => {
                let portal = r.cstr()?;
                let statement = r.cstr()?;
                let n = r.count(2)?;
                let mut param_formats = Vec::with_capacity(n);
                for _ in 0..n {
                    param_formats.push(r.i16()?);
                }
                let n = r.count(4)?;
                let mut params = Vec::with_capacity(n);
                for _ in 0..n {
                    let len = r.i32()?;
                    params.push(match len {
                        -1 => None,
                        len if len < 0 => return Err(r.malformed("negative parameter length")),
                        len => Some(r.bytes(len as usize)?),
                    });
                }
                let n = r.count(2)?;
                let mut result_formats = Vec::with_capacity(n);
                for _ in 0..n {
                    result_formats.push(r.i16()?);
                }
                FrontendMessage::Bind(Bind {
                    portal,
                    statement,
                    param_formats,
                    params,
                    result_formats,
                })
            }
            b'D' | b'C' => {
                let kind = r.u8()?;
                if kind != b'S' && kind != b'P' {
                    return Err(r.malformed("kind is neither 'S' nor 'P'"));
                }
                let name = r.cstr()?;
                if frame.tag == b'D' {
                    FrontendMessage::Describe { kind, name }
                } else {
                    FrontendMessage::Close { kind, name }
                }
            }
            b'E' => {
                let portal = r.cstr()?;
                let max_rows = r.i32()?;
                FrontendMessage::Execute { portal, max_rows }
            }
            b'S' => FrontendMessage::Sync,
            b'H' => FrontendMessage::Flush,
            b'X' => FrontendMessage::Terminate,
            b'd' => return Ok(FrontendMessage::CopyData(r.body)),
            b'c' => FrontendMessage::CopyDone,
            b'f' => {
                let reason = r.cstr()?;
                FrontendMessage::CopyFail(reason)
            }
            b'p' => return Ok(FrontendMessage::Password(r.body)),
            b'F' => return Ok(FrontendMessage::FunctionCall),
            other => return Err(FrameError::UnknownTag(other)),
        };
        r.end()?;
        Ok(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1 << 20;

    fn frame(bytes: &[u8]) -> Result<Option<Frame>, FrameError> {
        decode_frontend_frame(&mut BytesMut::from(bytes), MAX)
    }

    fn message(bytes: &[u8]) -> Result<FrontendMessage, FrameError> {
        FrontendMessage::decode(frame(bytes)?.expect("a whole frame"))
    }

    #[test]
    fn query() {
        assert_eq!(
            message(b"Q\x00\x00\x00\x0dSELECT 1\x00").unwrap(),
            FrontendMessage::Query(Bytes::from_static(b"SELECT 1"))
        );
    }

    #[test]
    fn parse_bind_describe_execute_sync() {
        let parse =
            message(b"P\x00\x00\x00\x17s1\x00SELECT $1\x00\x00\x01\x00\x00\x00\x17").unwrap();
        assert_eq!(
            parse,
            FrontendMessage::Parse {
                name: Bytes::from_static(b"s1"),
                query: Bytes::from_static(b"SELECT $1"),
                param_types: vec![23],
            }
        );
        let bind = message(b"B\x00\x00\x00\x1c\x00s1\x00\x00\x01\x00\x01\x00\x02\x00\x00\x00\x04\x00\x00\x00\x2a\xff\xff\xff\xff\x00\x00").unwrap();
        let FrontendMessage::Bind(bind) = bind else {
            panic!("{bind:?}")
        };
        assert_eq!(bind.statement, Bytes::from_static(b"s1"));
        assert_eq!(
            bind.params,
            vec![Some(Bytes::from_static(b"\x00\x00\x00\x2a")), None]
        );
        assert_eq!(bind.param_format(1), 1);
        assert_eq!(
            message(b"D\x00\x00\x00\x08Ss1\x00").unwrap(),
            FrontendMessage::Describe {
                kind: b'S',
                name: Bytes::from_static(b"s1")
            }
        );
        assert_eq!(
            message(b"E\x00\x00\x00\x09\x00\x00\x00\x00\x0a").unwrap(),
            FrontendMessage::Execute {
                portal: Bytes::new(),
                max_rows: 10
            }
        );
        assert_eq!(
            message(b"S\x00\x00\x00\x04").unwrap(),
            FrontendMessage::Sync
        );
    }

    #[test]
    fn pipelined_messages_come_out_one_by_one() {
        let mut buf = BytesMut::from(&b"S\x00\x00\x00\x04H\x00\x00\x00\x04X\x00\x00"[..]);
        assert_eq!(
            decode_frontend_frame(&mut buf, MAX).unwrap().unwrap().tag,
            b'S'
        );
        assert_eq!(
            decode_frontend_frame(&mut buf, MAX).unwrap().unwrap().tag,
            b'H'
        );
        assert_eq!(decode_frontend_frame(&mut buf, MAX).unwrap(), None);
        buf.extend_from_slice(b"\x00\x04");
        assert_eq!(
            decode_frontend_frame(&mut buf, MAX).unwrap().unwrap().tag,
            b'X'
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn hostile_lengths_are_refused_from_the_header() {
        // Sync claiming 10 MB, a Query over the configured maximum, a length
        // shorter than itself, and an unknown tag.
        assert!(matches!(
            frame(b"S\x00\x98\x96\x80"),
            Err(FrameError::BadLength { tag: b'S', .. })
        ));
        assert!(matches!(
            frame(b"Q\x7f\xff\xff\xff"),
            Err(FrameError::BadLength { tag: b'Q', .. })
        ));
        assert!(matches!(
            frame(b"Q\x00\x00\x00\x03"),
            Err(FrameError::BadLength { .. })
        ));
        assert_eq!(
            frame(b"Z\x00\x00\x00\x04"),
            Err(FrameError::UnknownTag(b'Z'))
        );
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        // Unterminated query, trailing bytes, Bind with a count larger than the
        // body, a negative parameter length, a bad Describe kind, truncation.
        for bytes in [
            &b"Q\x00\x00\x00\x08abcd"[..],
            b"Q\x00\x00\x00\x07a\x00b",
            b"B\x00\x00\x00\x08\x00\x00\x7f\xff",
            b"B\x00\x00\x00\x0e\x00\x00\x00\x00\x00\x01\xff\xff\xff\xfe",
            b"D\x00\x00\x00\x06X\x00",
            b"E\x00\x00\x00\x06\x00\x00",
            b"P\x00\x00\x00\x09\x00x\x00\x00\x02",
        ] {
            assert!(message(bytes).is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn counts_are_unsigned_16_bit_as_in_postgres() {
        // A Parse with 40,000 parameter types and a Bind with 65,535 NULL
        // parameters (the most Postgres accepts): counts above 32,767 are
        // not negative.
        let mut body = b"\0SELECT 1\0".to_vec();
        body.extend_from_slice(&40_000u16.to_be_bytes());
        body.extend(std::iter::repeat_n([0, 0, 0, 23], 40_000).flatten());
        let Ok(FrontendMessage::Parse { param_types, .. }) = message(&frame_bytes(b'P', &body))
        else {
            panic!("Parse with 40,000 types refused");
        };
        assert_eq!(param_types.len(), 40_000);
        let mut body = b"\0\0\0\0".to_vec();
        body.extend_from_slice(&u16::MAX.to_be_bytes());
        body.extend(std::iter::repeat_n([0xff; 4], 65_535).flatten());
        body.extend_from_slice(&[0, 0]);
        let Ok(FrontendMessage::Bind(bind)) = message(&frame_bytes(b'B', &body)) else {
            panic!("Bind with 65,535 parameters refused");
        };
        assert_eq!(bind.params.len(), 65_535);
        assert!(bind.params.iter().all(Option::is_none));
        // A count the body cannot back is still refused.
        assert!(message(b"B\x00\x00\x00\x08\x00\x00\xff\xff").is_err());
    }

    fn frame_bytes(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn backend_messages_are_capped_by_kind() {
        let mut buf = BytesMut::from(&b"D\x00\x00\x00\x0a\x00\x01\x00\x00\x00\x00Z\x00"[..]);
        let whole = split_backend_message(&mut buf).unwrap().unwrap();
        assert_eq!(&whole[..], b"D\x00\x00\x00\x0a\x00\x01\x00\x00\x00\x00");
        assert_eq!(split_backend_message(&mut buf), Ok(None));
        buf.extend_from_slice(b"\x00\x00\x05I");
        assert_eq!(decode_backend_frame(&mut buf).unwrap().unwrap().tag, b'Z');
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
