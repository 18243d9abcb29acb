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

    /// Each parameter's format and value (`None` is SQL NULL), in order.
    pub fn values(&self) -> impl Iterator<Item = (i16, Option<&[u8]>)> + '_ {
        let format = |i| self.param_format(i);
        (self.params.iter().enumerate()).map(move |(i, v)| (format(i), v.as_deref()))
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
            b'Q' => FrontendMessage::Query(r.cstr()?),
            b'P' => decode_parse(&mut r)?,
            b'B' => FrontendMessage::Bind(decode_bind(&mut r)?),
            b'D' | b'C' => decode_describe_or_close(&mut r)?,
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
            b'f' => FrontendMessage::CopyFail(r.cstr()?),
            b'p' => return Ok(FrontendMessage::Password(r.body)),
            b'F' => return Ok(FrontendMessage::FunctionCall),
            other => return Err(FrameError::UnknownTag(other)),
        };
        r.end()?;
        Ok(message)
    }
}

/// The fields of a Parse (`P`): statement name, query, parameter types.
fn decode_parse(r: &mut Reader) -> Result<FrontendMessage, FrameError> {
    let name = r.cstr()?;
    let query = r.cstr()?;
    let n = r.count(4)?;
    let mut param_types = Vec::with_capacity(n);
    for _ in 0..n {
        param_types.push(r.i32()? as u32);
    }
    Ok(FrontendMessage::Parse {
        name,
        query,
        param_types,
    })
}

/// The fields of a Bind (`B`), read by [`BindView`].
fn decode_bind(r: &mut Reader) -> Result<Bind, FrameError> {
    let bind = BindView::parse(&r.body)?.to_bind();
    r.body.clear();
    Ok(bind)
}

/// The fields of a Describe (`D`) or Close (`C`): the kind, `S` statement or
/// `P` portal, and the name.
fn decode_describe_or_close(r: &mut Reader) -> Result<FrontendMessage, FrameError> {
    let kind = r.u8()?;
    if kind != b'S' && kind != b'P' {
        return Err(r.malformed("kind is neither 'S' nor 'P'"));
    }
    let name = r.cstr()?;
    if r.tag == b'D' {
        Ok(FrontendMessage::Describe { kind, name })
    } else {
        Ok(FrontendMessage::Close { kind, name })
    }
}

mod bind_view;
pub use bind_view::BindView;

#[cfg(test)]
mod tests;
