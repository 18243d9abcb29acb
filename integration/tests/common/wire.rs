//! A raw protocol client for tests that need to send what no driver sends:
//! hand-built messages over a plain TCP socket, and the replies read back as
//! (tag, body) pairs.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a read waits before the test calls the proxy stuck.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection, with what has been read but not yet taken.
pub struct Wire {
    pub stream: TcpStream,
    buf: BytesMut,
}

/// What a read found.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    Message(u8, Bytes),
    /// The proxy closed the connection (EOF or reset).
    Closed,
    /// Nothing came within the time allowed.
    Silent,
}

impl Wire {
    pub async fn connect(port: u16) -> Wire {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Wire {
            stream,
            buf: BytesMut::new(),
        }
    }

    /// Connect, log in as a `trust` user and read up to ReadyForQuery.
    pub async fn login(port: u16, user: &str, database: &str) -> Wire {
        let mut wire = Wire::connect(port).await;
        wire.send(&startup(0, &[("user", user), ("database", database)]))
            .await;
        let replies = wire.until_ready().await;
        assert_eq!(
            replies.first().map(|(tag, body)| (*tag, body.clone())),
            Some((b'R', Bytes::from_static(&[0, 0, 0, 0]))),
            "expected AuthenticationOk first: {replies:?}"
        );
        wire
    }

    /// Write `bytes`; a write error (the proxy already closed) is ignored,
    /// since the reads that follow are what the tests check.
    pub async fn send(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    /// The socket itself, for a test that reads the bytes as they come
    /// (nothing may be buffered unread).
    pub fn into_stream(self) -> TcpStream {
        assert!(self.buf.is_empty(), "unread bytes: {:?}", self.buf);
        self.stream
    }

    /// The next message, waiting at most `wait`.
    pub async fn read_within(&mut self, wait: Duration) -> Read {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
                let len = len as usize;
                assert!(len >= 4, "bad length {len} from the proxy");
                if self.buf.len() > len {
                    let tag = self.buf[0];
                    let mut message = self.buf.split_to(1 + len);
                    message.advance(5);
                    return Read::Message(tag, message.freeze());
                }
            }
            match tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.buf)).await {
                Err(_) => return Read::Silent,
                Ok(Ok(0) | Err(_)) => return Read::Closed,
                Ok(Ok(_)) => {}
            }
        }
    }

    /// The next message; panics if the proxy closes or goes silent.
    pub async fn recv(&mut self) -> (u8, Bytes) {
        match self.read_within(READ_TIMEOUT).await {
            Read::Message(tag, body) => (tag, body),
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// Every message up to and including ReadyForQuery.
    pub async fn until_ready(&mut self) -> Vec<(u8, Bytes)> {
        let mut replies = Vec::new();
        loop {
            let (tag, body) = self.recv().await;
            replies.push((tag, body));
            if tag == b'Z' {
                return replies;
            }
        }
    }

    /// Read what remains until the proxy closes; panics if it does not
    /// within `wait`.
    pub async fn until_closed(&mut self, wait: Duration) -> Vec<(u8, Bytes)> {
        let mut replies = Vec::new();
        loop {
            match self.read_within(wait).await {
                Read::Message(tag, body) => replies.push((tag, body)),
                Read::Closed => return replies,
                Read::Silent => panic!("connection still open after {wait:?}: {replies:?}"),
            }
        }
    }
}

/// A tagged message: `tag`, length, `body`.
pub fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    out.put_u8(tag);
    out.put_u32(body.len() as u32 + 4);
    out.put_slice(body);
    out.to_vec()
}

fn cstr(out: &mut BytesMut, text: &str) {
    out.put_slice(text.as_bytes());
    out.put_u8(0);
}

/// A StartupMessage for protocol 3.`minor`.
pub fn startup(minor: u16, params: &[(&str, &str)]) -> Vec<u8> {
    let mut body = BytesMut::new();
    body.put_u32((3 << 16) | u32::from(minor));
    for (name, value) in params {
        cstr(&mut body, name);
        cstr(&mut body, value);
    }
    body.put_u8(0);
    let mut out = BytesMut::new();
    out.put_u32(body.len() as u32 + 4);
    out.put_slice(&body);
    out.to_vec()
}

pub fn query(sql: &str) -> Vec<u8> {
    let mut body = BytesMut::new();
    cstr(&mut body, sql);
    message(b'Q', &body)
}

/// Parse with no parameter types.
pub fn parse(name: &str, sql: &str) -> Vec<u8> {
    let mut body = BytesMut::new();
    cstr(&mut body, name);
    cstr(&mut body, sql);
    body.put_u16(0);
    message(b'P', &body)
}

/// Bind the unnamed portal to `statement`, with no parameters.
pub fn bind(statement: &str) -> Vec<u8> {
    let mut body = BytesMut::new();
    cstr(&mut body, "");
    cstr(&mut body, statement);
    body.put_u16(0);
    body.put_u16(0);
    body.put_u16(0);
    message(b'B', &body)
}

/// Execute the unnamed portal, all rows.
pub fn execute() -> Vec<u8> {
    message(b'E', &[0, 0, 0, 0, 0])
}

pub fn sync() -> Vec<u8> {
    message(b'S', &[])
}

/// The SQLSTATE (`C` field) of an ErrorResponse body.
pub fn sqlstate(body: &[u8]) -> Option<String> {
    body.split(|&b| b == 0)
        .find_map(|field| field.strip_prefix(b"C"))
        .map(|code| String::from_utf8_lossy(code).into_owned())
}

/// The SQLSTATEs of the ErrorResponses among `replies`.
pub fn errors(replies: &[(u8, Bytes)]) -> Vec<String> {
    replies
        .iter()
        .filter(|(tag, _)| *tag == b'E')
        .filter_map(|(_, body)| sqlstate(body))
        .collect()
}

/// The values of the DataRows among `replies`, as text (NULL as `NULL`).
pub fn data_rows(replies: &[(u8, Bytes)]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (_, body) in replies.iter().filter(|(tag, _)| *tag == b'D') {
        let count = u16::from_be_bytes([body[0], body[1]]);
        let mut at = 2;
        let mut row = Vec::new();
        for _ in 0..count {
            let len = i32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
            at += 4;
            match usize::try_from(len) {
                Ok(len) => {
                    row.push(String::from_utf8_lossy(&body[at..at + len]).into_owned());
                    at += len;
                }
                Err(_) => row.push("NULL".to_owned()),
            }
        }
        rows.push(row);
    }
    rows
}

/// The tags of `replies`, as a string for easy comparison.
pub fn tags(replies: &[(u8, Bytes)]) -> String {
    replies.iter().map(|(tag, _)| char::from(*tag)).collect()
}

/// Bind `portal` to `statement` with text parameters (`None` is NULL).
pub fn bind_text(portal: &str, statement: &str, params: &[Option<&str>]) -> Vec<u8> {
    let mut body = BytesMut::new();
    cstr(&mut body, portal);
    cstr(&mut body, statement);
    body.put_u16(0);
    body.put_u16(params.len() as u16);
    for param in params {
        match param {
            None => body.put_i32(-1),
            Some(value) => {
                body.put_i32(value.len() as i32);
                body.put_slice(value.as_bytes());
            }
        }
    }
    body.put_u16(0);
    message(b'B', &body)
}

/// Describe a statement (`S`) or portal (`P`).
pub fn describe(kind: u8, name: &str) -> Vec<u8> {
    let mut body = BytesMut::new();
    body.put_u8(kind);
    cstr(&mut body, name);
    message(b'D', &body)
}

/// Execute `portal`, at most `max_rows` rows (0: all).
pub fn execute_portal(portal: &str, max_rows: i32) -> Vec<u8> {
    let mut body = BytesMut::new();
    cstr(&mut body, portal);
    body.put_i32(max_rows);
    message(b'E', &body)
}

/// The text of the first column of every DataRow among `replies`.
pub fn first_column(replies: &[(u8, Bytes)]) -> Vec<String> {
    replies
        .iter()
        .filter(|(tag, _)| *tag == b'D')
        .map(|(_, body)| {
            let len = i32::from_be_bytes([body[2], body[3], body[4], body[5]]);
            String::from_utf8_lossy(&body[6..6 + len.max(0) as usize]).into_owned()
        })
        .collect()
}

/// Parse with declared parameter types (0: unspecified).
pub fn parse_typed(name: &str, sql: &str, types: &[u32]) -> Vec<u8> {
    let mut body = BytesMut::new();
    cstr(&mut body, name);
    cstr(&mut body, sql);
    body.put_u16(types.len() as u16);
    for oid in types {
        body.put_u32(*oid);
    }
    message(b'P', &body)
}

/// Bind `portal` to `statement` with raw values (`None` is NULL), the
/// parameter format codes given (none, one, or one each) and result
/// formats.
pub fn bind_formats(
    portal: &str,
    statement: &str,
    formats: &[i16],
    params: &[Option<Vec<u8>>],
    results: &[i16],
) -> Vec<u8> {
    let mut body = BytesMut::new();
    cstr(&mut body, portal);
    cstr(&mut body, statement);
    body.put_u16(formats.len() as u16);
    for format in formats {
        body.put_i16(*format);
    }
    body.put_u16(params.len() as u16);
    for param in params {
        match param {
            None => body.put_i32(-1),
            Some(value) => {
                body.put_i32(value.len() as i32);
                body.put_slice(value);
            }
        }
    }
    body.put_u16(results.len() as u16);
    for format in results {
        body.put_i16(*format);
    }
    message(b'B', &body)
}

/// The command tags (CommandComplete texts) among `replies`.
pub fn command_tags(replies: &[(u8, Bytes)]) -> Vec<String> {
    replies
        .iter()
        .filter(|(tag, _)| *tag == b'C')
        .map(|(_, body)| {
            String::from_utf8_lossy(body.strip_suffix(&[0]).unwrap_or(body)).into_owned()
        })
        .collect()
}
