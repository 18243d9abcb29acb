//! The untagged first message of a connection: StartupMessage, SSLRequest,
//! GSSENCRequest or CancelRequest, decoded and (for StartupMessage) re-encoded.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Postgres refuses startup packets longer than this (`MAX_STARTUP_PACKET_LENGTH`
/// in `src/include/libpq/pqcomm.h`); so do we, before buffering them.
pub const MAX_STARTUP_PACKET_LENGTH: usize = 10_000;

/// The smallest packet: a length and a code.
const MIN_STARTUP_PACKET_LENGTH: usize = 8;

/// Request codes that stand where a protocol version would (`pqcomm.h`).
const CANCEL_REQUEST_CODE: u32 = (1234 << 16) | 5678;
const SSL_REQUEST_CODE: u32 = (1234 << 16) | 5679;
const GSSENC_REQUEST_CODE: u32 = (1234 << 16) | 5680;

/// A decoded first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartupMessage {
    SslRequest,
    GssEncRequest,
    /// Cancel the query running on the backend identified by this key.
    Cancel {
        process_id: u32,
        secret_key: Bytes,
    },
    Startup(Startup),
}

/// A StartupMessage: protocol version and the parameters the client sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Startup {
    pub major: u16,
    pub minor: u16,
    /// Parameters in the order sent (`user`, `database`, `application_name`, ...).
    pub params: Vec<(String, String)>,
}

impl Startup {
    /// The value of parameter `name`, if the client sent it.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// Set parameter `name`, replacing an earlier value or appending it.
    pub fn set_param(&mut self, name: &str, value: &str) {
        match self.params.iter_mut().find(|(key, _)| key == name) {
            Some((_, old)) => value.clone_into(old),
            None => self.params.push((name.to_owned(), value.to_owned())),
        }
    }

    /// Append this StartupMessage, length prefix included, to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        let start = out.len();
        out.put_u32(0); // length, patched below
        out.put_u16(self.major);
        out.put_u16(self.minor);
        for (key, value) in &self.params {
            out.put_slice(key.as_bytes());
            out.put_u8(0);
            out.put_slice(value.as_bytes());
            out.put_u8(0);
        }
        out.put_u8(0);
        let len = (out.len() - start) as u32;
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    }
}

/// Append a CancelRequest for the backend identified by this key to `out`.
pub fn encode_cancel(process_id: u32, secret_key: &[u8], out: &mut BytesMut) {
    out.put_u32((12 + secret_key.len()) as u32);
    out.put_u32(CANCEL_REQUEST_CODE);
    out.put_u32(process_id);
    out.put_slice(secret_key);
}

/// Why a first message was refused. Each closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartupError {
    #[error("invalid length of startup packet: {0}")]
    BadLength(usize),
    #[error("unsupported frontend protocol {major}.{minor}: server supports 3.0")]
    UnsupportedProtocol { major: u16, minor: u16 },
    #[error("invalid startup packet layout: {0}")]
    Malformed(&'static str),
    #[error("no PostgreSQL user name specified in startup packet")]
    NoUser,
    /// Postgres keeps the last of two values; pgshard refuses rather than
    /// choose (which `user` a client meant must never be a guess).
    #[error("startup parameter \"{0}\" given more than once")]
    Duplicate(String),
}

/// Decode one first message from the front of `buf`.
pub fn decode_startup(buf: &mut BytesMut) -> Result<Option<StartupMessage>, StartupError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if !(MIN_STARTUP_PACKET_LENGTH..=MAX_STARTUP_PACKET_LENGTH).contains(&len) {
        return Err(StartupError::BadLength(len));
    }
    if buf.len() < len {
        return Ok(None);
    }
    let mut packet = buf.split_to(len).freeze();
    packet.advance(4);
    let code = packet.get_u32();
    match code {
        SSL_REQUEST_CODE if packet.is_empty() => Ok(Some(StartupMessage::SslRequest)),
        GSSENC_REQUEST_CODE if packet.is_empty() => Ok(Some(StartupMessage::GssEncRequest)),
        SSL_REQUEST_CODE | GSSENC_REQUEST_CODE => Err(StartupError::BadLength(len)),
        CANCEL_REQUEST_CODE => {
            // Protocol 3.0 keys are 4 bytes; 3.2 allows up to 256 (`pqcomm.h`).
            if packet.len() < 8 || packet.len() > 4 + 256 {
                return Err(StartupError::BadLength(len));
            }
            let process_id = packet.get_u32();
            Ok(Some(StartupMessage::Cancel {
                process_id,
                secret_key: packet,
            }))
        }
        version => {
            let (major, minor) = ((version >> 16) as u16, (version & 0xffff) as u16);
            if major != 3 {
                return Err(StartupError::UnsupportedProtocol { major, minor });
            }
            let params = decode_params(packet)?;
            let startup = Startup {
                major,
                minor,
                params,
            };
            if startup.param("user").is_none_or(str::is_empty) {
                return Err(StartupError::NoUser);
            }
            Ok(Some(StartupMessage::Startup(startup)))
        }
    }
}

/// Parameters are NUL-terminated name/value pairs, then one more NUL.
fn decode_params(mut body: Bytes) -> Result<Vec<(String, String)>, StartupError> {
    let mut params = Vec::new();
    loop {
        let name = take_cstr(&mut body)?;
        if name.is_empty() {
            break;
        }
        let value = take_cstr(&mut body)?;
        if params
            .iter()
            .any(|(seen, _): &(String, String)| seen.eq_ignore_ascii_case(&name))
        {
            return Err(StartupError::Duplicate(name));
        }
        params.push((name, value));
    }
    if !body.is_empty() {
        return Err(StartupError::Malformed("bytes after the final terminator"));
    }
    Ok(params)
}

fn take_cstr(body: &mut Bytes) -> Result<String, StartupError> {
    let end = body
        .iter()
        .position(|&b| b == 0)
        .ok_or(StartupError::Malformed("missing NUL terminator"))?;
    let text = String::from_utf8(body.split_to(end).to_vec())
        .map_err(|_| StartupError::Malformed("parameter is not UTF-8"))?;
    body.advance(1);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Result<Option<StartupMessage>, StartupError> {
        decode_startup(&mut BytesMut::from(bytes))
    }

    #[test]
    fn ssl_request() {
        assert_eq!(
            decode(b"\x00\x00\x00\x08\x04\xd2\x16\x2f").unwrap(),
            Some(StartupMessage::SslRequest)
        );
    }

    #[test]
    fn gssenc_request() {
        assert_eq!(
            decode(b"\x00\x00\x00\x08\x04\xd2\x16\x30").unwrap(),
            Some(StartupMessage::GssEncRequest)
        );
    }

    #[test]
    fn cancel_request() {
        let msg = decode(b"\x00\x00\x00\x10\x04\xd2\x16\x2e\x00\x00\x30\x39\xde\xad\xbe\xef")
            .unwrap()
            .unwrap();
        assert_eq!(
            msg,
            StartupMessage::Cancel {
                process_id: 12345,
                secret_key: Bytes::from_static(b"\xde\xad\xbe\xef"),
            }
        );
    }

    #[test]
    fn cancel_request_round_trips() {
        let mut out = BytesMut::new();
        encode_cancel(7, b"\x01\x02\x03\x04", &mut out);
        assert_eq!(
            decode_startup(&mut out).unwrap(),
            Some(StartupMessage::Cancel {
                process_id: 7,
                secret_key: Bytes::from_static(b"\x01\x02\x03\x04"),
            })
        );
    }

    #[test]
    fn startup_round_trips() {
        let bytes = b"\x00\x00\x00\x20\x00\x03\x00\x00user\x00app\x00database\x00prod\x00\x00";
        let Some(StartupMessage::Startup(startup)) = decode(bytes).unwrap() else {
            panic!("not a startup message");
        };
        assert_eq!(startup.param("user"), Some("app"));
        assert_eq!(startup.param("database"), Some("prod"));
        let mut out = BytesMut::new();
        startup.encode(&mut out);
        assert_eq!(&out[..], &bytes[..]);
    }

    #[test]
    fn set_param_replaces_and_appends() {
        let mut startup = Startup {
            major: 3,
            minor: 0,
            params: vec![("user".into(), "a".into()), ("database".into(), "x".into())],
        };
        startup.set_param("database", "y");
        startup.set_param("application_name", "z");
        assert_eq!(startup.param("database"), Some("y"));
        assert_eq!(startup.params.len(), 3);
    }

    #[test]
    fn partial_input_needs_more() {
        assert_eq!(decode(b"").unwrap(), None);
        assert_eq!(decode(b"\x00\x00").unwrap(), None);
        assert_eq!(
            decode(b"\x00\x00\x00\x20\x00\x03\x00\x00user").unwrap(),
            None
        );
    }

    #[test]
    fn hostile_lengths_are_refused_before_buffering() {
        assert_eq!(decode(b"\x00\x00\x00\x04"), Err(StartupError::BadLength(4)));
        assert_eq!(
            decode(b"\xff\xff\xff\xff"),
            Err(StartupError::BadLength(u32::MAX as usize))
        );
        assert_eq!(
            decode(b"\x00\x00\x27\x11"),
            Err(StartupError::BadLength(10_001))
        );
    }

    #[test]
    fn malformed_bodies_are_errors() {
        // Missing the final terminator.
        assert!(decode(b"\x00\x00\x00\x0d\x00\x03\x00\x00user\x00").is_err());
        // No user.
        assert_eq!(
            decode(b"\x00\x00\x00\x09\x00\x03\x00\x00\x00"),
            Err(StartupError::NoUser)
        );
        // Protocol 2.
        assert_eq!(
            decode(b"\x00\x00\x00\x09\x00\x02\x00\x00\x00"),
            Err(StartupError::UnsupportedProtocol { major: 2, minor: 0 })
        );
        // SSLRequest with a body.
        assert!(decode(b"\x00\x00\x00\x09\x04\xd2\x16\x2f\x00").is_err());
        // Invalid UTF-8.
        assert!(decode(b"\x00\x00\x00\x0f\x00\x03\x00\x00user\x00\xff\x00\x00").is_err());
    }

    #[test]
    fn duplicated_parameters_are_refused() {
        let packet = |params: &[(&str, &str)]| {
            let startup = Startup {
                major: 3,
                minor: 0,
                params: params
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            };
            let mut out = BytesMut::new();
            startup.encode(&mut out);
            decode_startup(&mut out)
        };
        assert_eq!(
            packet(&[("user", "app"), ("user", "postgres")]),
            Err(StartupError::Duplicate("user".into()))
        );
        assert_eq!(
            packet(&[("user", "app"), ("search_path", "a"), ("SEARCH_PATH", "b")]),
            Err(StartupError::Duplicate("SEARCH_PATH".into()))
        );
        assert!(matches!(
            packet(&[("user", "app"), ("database", "app")]),
            Ok(Some(StartupMessage::Startup(_)))
        ));
    }
}
