//! The messages a client sends after startup: framed ([`Frame`]: the
//! whole message kept for forwarding, its kind read from its tag) and
//! decoded into views of the frame ([`FrontendMessage`]; a Bind routed on a
//! sharded cluster is read in place by [`BindView`]).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use std::ops::Range;

use super::frame::{self, split_frontend_message, FrameError};

/// What a client message is, by its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrontendKind {
    Query,
    Parse,
    Bind,
    Describe,
    Execute,
    Close,
    Sync,
    Flush,
    Terminate,
    CopyData,
    CopyDone,
    CopyFail,
    /// A password, SASL initial response or SASL response.
    Password,
    FunctionCall,
}

impl FrontendKind {
    fn of_tag(tag: u8) -> Option<FrontendKind> {
        use FrontendKind::*;
        Some(match tag {
            b'Q' => Query,
            b'P' => Parse,
            b'B' => Bind,
            b'D' => Describe,
            b'E' => Execute,
            b'C' => Close,
            b'S' => Sync,
            b'H' => Flush,
            b'X' => Terminate,
            b'd' => CopyData,
            b'c' => CopyDone,
            b'f' => CopyFail,
            b'p' => Password,
            b'F' => FunctionCall,
            _ => return None,
        })
    }

    /// The message's tag byte.
    pub fn tag(self) -> u8 {
        use FrontendKind::*;
        match self {
            Query => b'Q',
            Parse => b'P',
            Bind => b'B',
            Describe => b'D',
            Execute => b'E',
            Close => b'C',
            Sync => b'S',
            Flush => b'H',
            Terminate => b'X',
            CopyData => b'd',
            CopyDone => b'c',
            CopyFail => b'f',
            Password => b'p',
            FunctionCall => b'F',
        }
    }

    /// The message type as Postgres names it in errors (its tag).
    pub fn letter(self) -> char {
        char::from(self.tag())
    }
}

/// One client message, whole (tag and length included: forwarded as it
/// is), and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrontendKind,
    bytes: Bytes,
}

impl Frame {
    /// A message of `kind` with `body`, framed.
    pub fn new(kind: FrontendKind, body: &[u8]) -> Frame {
        let mut out = BytesMut::with_capacity(body.len() + 5);
        out.put_u8(kind.tag());
        out.put_u32(body.len() as u32 + 4);
        out.put_slice(body);
        Frame {
            kind,
            bytes: out.freeze(),
        }
    }

    /// A Query of `sql` (a text pgshard sends instead of the client's).
    pub fn query(sql: &str) -> Frame {
        let mut body = Vec::with_capacity(sql.len() + 1);
        body.extend_from_slice(sql.as_bytes());
        body.push(0);
        Frame::new(FrontendKind::Query, &body)
    }

    /// The whole message.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The bytes after the length.
    pub fn body(&self) -> &[u8] {
        self.bytes.get(5..).unwrap_or_default()
    }

    /// The body, sharing the frame's buffer.
    pub fn body_bytes(&self) -> Bytes {
        self.bytes.slice(5.min(self.bytes.len())..)
    }

    /// Whether this is a Bind of the unnamed portal (its portal name, the
    /// body's first string, empty).
    pub fn binds_unnamed_portal(&self) -> bool {
        self.kind == FrontendKind::Bind && self.body().first() == Some(&0)
    }

    /// Where the statement a Bind, or a Describe of a statement, names is
    /// in the body; `None` for other messages.
    pub fn statement_name(&self) -> Result<Option<Range<usize>>, FrameError> {
        let body = self.body();
        let start = match self.kind {
            // After the portal name.
            FrontendKind::Bind => body.iter().position(|&b| b == 0).map(|p| p + 1),
            // After the kind byte.
            FrontendKind::Describe if body.first() == Some(&b'S') => Some(1),
            _ => None,
        };
        let Some(start) = start else {
            return Ok(None);
        };
        match body[start..].iter().position(|&b| b == 0) {
            Some(len) => Ok(Some(start..start + len)),
            None => Err(FrameError::Malformed {
                tag: self.kind.tag(),
                reason: "missing NUL terminator",
            }),
        }
    }

    /// This message with the bytes `name` of its body (a statement name,
    /// as [`statement_name`](Self::statement_name) finds it) replaced by
    /// `new`, appended to `out`.
    pub fn write_renamed(&self, name: Range<usize>, new: &[u8], out: &mut BytesMut) {
        let body = self.body();
        let at = frame::begin(out, self.kind.tag());
        out.put_slice(body.get(..name.start).unwrap_or_default());
        out.put_slice(new);
        out.put_slice(body.get(name.end..).unwrap_or_default());
        frame::finish(out, at);
    }
}

/// Decode one client message from the front of `buf`: `Ok(None)` when more
/// bytes are needed. The length is checked against the tag's cap as soon as
/// the header is in, before the body is buffered.
pub fn decode_frontend_frame(
    buf: &mut BytesMut,
    configured_max: usize,
) -> Result<Option<Frame>, FrameError> {
    let Some(bytes) = split_frontend_message(buf, configured_max)? else {
        return Ok(None);
    };
    let tag = bytes.first().copied().unwrap_or(0);
    let kind = FrontendKind::of_tag(tag).ok_or(FrameError::UnknownTag(tag))?;
    Ok(Some(Frame { kind, bytes }))
}

/// A SASLInitialResponse (a `p` message while a SASL exchange starts):
/// the mechanism the client chose and its initial data; `None` when it is
/// malformed.
pub fn sasl_initial_response(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = body.iter().position(|&b| b == 0)?;
    let (mechanism, rest) = (&body[..end], &body[end + 1..]);
    let (&length, data) = rest.split_first_chunk::<4>()?;
    let length = i32::from_be_bytes(length);
    (usize::try_from(length).ok()? == data.len()).then_some((mechanism, data))
}

/// What a Describe or Close names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Named {
    /// `S`: a prepared statement.
    Statement,
    /// `P`: a portal.
    Portal,
}

impl Named {
    /// The byte that says it on the wire.
    pub fn byte(self) -> u8 {
        match self {
            Named::Statement => b'S',
            Named::Portal => b'P',
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
    /// `D`
    Describe {
        kind: Named,
        name: Bytes,
    },
    /// `E`
    Execute {
        portal: Bytes,
        max_rows: i32,
    },
    /// `C`
    Close {
        kind: Named,
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
    pub fn decode(frame: &Frame) -> Result<FrontendMessage, FrameError> {
        let mut r = Reader {
            tag: frame.kind.tag(),
            body: frame.body_bytes(),
        };
        use FrontendKind as K;
        let message = match frame.kind {
            K::Query => FrontendMessage::Query(r.cstr()?),
            K::Parse => decode_parse(&mut r)?,
            K::Bind => FrontendMessage::Bind(decode_bind(&mut r)?),
            K::Describe | K::Close => decode_describe_or_close(&mut r)?,
            K::Execute => {
                let portal = r.cstr()?;
                let max_rows = r.i32()?;
                FrontendMessage::Execute { portal, max_rows }
            }
            K::Sync => FrontendMessage::Sync,
            K::Flush => FrontendMessage::Flush,
            K::Terminate => FrontendMessage::Terminate,
            K::CopyData => return Ok(FrontendMessage::CopyData(r.body)),
            K::CopyDone => FrontendMessage::CopyDone,
            K::CopyFail => FrontendMessage::CopyFail(r.cstr()?),
            K::Password => return Ok(FrontendMessage::Password(r.body)),
            K::FunctionCall => return Ok(FrontendMessage::FunctionCall),
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
    let kind = match r.u8()? {
        b'S' => Named::Statement,
        b'P' => Named::Portal,
        _ => return Err(r.malformed("kind is neither 'S' nor 'P'")),
    };
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
