//! Server messages as typed views: each whole message, as the framing
//! split or measured it, is read once into a [`BackendMessage`] over its
//! bytes (after postgres-protocol's `message::backend::Message`), so code
//! above the codec matches variants, never tag bytes. Reading a view costs
//! a tag and a length, and what its kind holds inline (a ReadyForQuery's
//! status); bodies are read when asked ([`ErrorFields`], [`CommandTag`],
//! `rows.rs` for DataRow and RowDescription). The message bytes stay
//! untouched: a view never copies, so what is forwarded is the slice it
//! was read from ([`BackendFrame`] owns one for code that keeps it).

use bytes::{Bytes, BytesMut};

use super::frame::{split_backend_message, FrameError};

/// A server's transaction status, as its ReadyForQuery reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum TransactionStatus {
    /// `I`: not in a transaction block.
    #[default]
    Idle,
    /// `T`: in a transaction block.
    InBlock,
    /// `E`: in a failed transaction block (statements refused until it
    /// ends).
    Failed,
}

impl TransactionStatus {
    /// The status byte on the wire.
    pub fn byte(self) -> u8 {
        match self {
            TransactionStatus::Idle => b'I',
            TransactionStatus::InBlock => b'T',
            TransactionStatus::Failed => b'E',
        }
    }

    fn from_byte(byte: u8) -> Option<TransactionStatus> {
        match byte {
            b'I' => Some(TransactionStatus::Idle),
            b'T' => Some(TransactionStatus::InBlock),
            b'E' => Some(TransactionStatus::Failed),
            _ => None,
        }
    }

    /// The status of several servers seen as one Postgres would report
    /// it: failed if any failed, else in a block if any is.
    pub fn combine(self, other: TransactionStatus) -> TransactionStatus {
        use TransactionStatus::*;
        match (self, other) {
            (Failed, _) | (_, Failed) => Failed,
            (InBlock, _) | (_, InBlock) => InBlock,
            _ => Idle,
        }
    }
}

/// The kind of a server message (what its tag says), for sets of the
/// replies a request ends with ([`Kinds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    Authentication,
    BackendKeyData,
    BindComplete,
    CloseComplete,
    CommandComplete,
    CopyData,
    CopyDone,
    CopyInResponse,
    CopyOutResponse,
    CopyBothResponse,
    DataRow,
    EmptyQueryResponse,
    ErrorResponse,
    FunctionCallResponse,
    NegotiateProtocolVersion,
    NoData,
    NoticeResponse,
    NotificationResponse,
    ParameterDescription,
    ParameterStatus,
    ParseComplete,
    PortalSuspended,
    ReadyForQuery,
    RowDescription,
}

impl BackendKind {
    /// The kind a tag names (`None`: no server message has it).
    pub fn of_tag(tag: u8) -> Option<BackendKind> {
        use BackendKind::*;
        Some(match tag {
            b'R' => Authentication,
            b'K' => BackendKeyData,
            b'2' => BindComplete,
            b'3' => CloseComplete,
            b'C' => CommandComplete,
            b'd' => CopyData,
            b'c' => CopyDone,
            b'G' => CopyInResponse,
            b'H' => CopyOutResponse,
            b'W' => CopyBothResponse,
            b'D' => DataRow,
            b'I' => EmptyQueryResponse,
            b'E' => ErrorResponse,
            b'V' => FunctionCallResponse,
            b'v' => NegotiateProtocolVersion,
            b'n' => NoData,
            b'N' => NoticeResponse,
            b'A' => NotificationResponse,
            b't' => ParameterDescription,
            b'S' => ParameterStatus,
            b'1' => ParseComplete,
            b's' => PortalSuspended,
            b'Z' => ReadyForQuery,
            b'T' => RowDescription,
            _ => return None,
        })
    }

    /// What a server may send at any time, whatever it is answering
    /// (NoticeResponse, ParameterStatus, NotificationResponse): it ends no
    /// reply.
    pub fn is_async(self) -> bool {
        matches!(
            self,
            BackendKind::NoticeResponse
                | BackendKind::ParameterStatus
                | BackendKind::NotificationResponse
        )
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// A set of message kinds: the replies that end a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kinds(u32);

impl Kinds {
    /// The set of `kinds`.
    pub const fn of(kinds: &[BackendKind]) -> Kinds {
        let mut bits = 0;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << (kinds[i] as u32);
            i += 1;
        }
        Kinds(bits)
    }

    pub fn contains(self, kind: BackendKind) -> bool {
        self.0 & kind.bit() != 0
    }
}

/// A server message, viewed over its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendMessage<'a> {
    Authentication(Authentication<'a>),
    BackendKeyData {
        process_id: u32,
        secret: &'a [u8],
    },
    BindComplete,
    CloseComplete,
    CommandComplete(CommandTag<'a>),
    CopyData(&'a [u8]),
    CopyDone,
    /// The COPY's format and columns' formats (body).
    CopyInResponse(&'a [u8]),
    CopyOutResponse(&'a [u8]),
    CopyBothResponse(&'a [u8]),
    /// The body (`rows.rs` reads its values).
    DataRow(&'a [u8]),
    EmptyQueryResponse,
    ErrorResponse(ErrorFields<'a>),
    FunctionCallResponse(&'a [u8]),
    NegotiateProtocolVersion(&'a [u8]),
    NoData,
    NoticeResponse(ErrorFields<'a>),
    NotificationResponse(&'a [u8]),
    ParameterDescription(&'a [u8]),
    ParameterStatus {
        name: &'a [u8],
        value: &'a [u8],
    },
    ParseComplete,
    PortalSuspended,
    ReadyForQuery(TransactionStatus),
    /// The body (`rows.rs` reads its fields).
    RowDescription(&'a [u8]),
}

/// An authentication request (`R`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authentication<'a> {
    Ok,
    Cleartext,
    Md5 {
        salt: [u8; 4],
    },
    /// The SASL mechanisms offered, each NUL-terminated.
    Sasl(&'a [u8]),
    SaslContinue(&'a [u8]),
    SaslFinal(&'a [u8]),
    /// A method pgshard does not speak (Kerberos, GSSAPI, SSPI...).
    Other(u32),
}

/// A CommandComplete's tag (`SELECT 3`, `INSERT 0 1`, `CREATE TABLE`),
/// without its NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandTag<'a>(pub &'a [u8]);

impl<'a> CommandTag<'a> {
    pub fn as_bytes(self) -> &'a [u8] {
        self.0
    }

    /// The tag of a COMMIT that committed.
    pub fn is_commit(self) -> bool {
        self.0 == b"COMMIT"
    }

    /// The tag of a ROLLBACK (also a COMMIT of an aborted transaction's,
    /// and a ROLLBACK TO's).
    pub fn is_rollback(self) -> bool {
        self.0 == b"ROLLBACK"
    }

    /// A tag that says the schema changed (CREATE, ALTER, DROP, COMMENT).
    pub fn changes_schema(self) -> bool {
        const DDL: [&[u8]; 4] = [b"CREATE ", b"ALTER ", b"DROP ", b"COMMENT"];
        // (The first byte settles the usual tag, SELECT's, at once.)
        matches!(self.0.first(), Some(b'C' | b'A' | b'D'))
            && DDL.iter().any(|word| self.0.starts_with(word))
    }

    /// The tag's words before its row count, and the count (`None` for a
    /// tag without one: `CREATE TABLE`, or whose last word is no number).
    pub fn split_count(self) -> (&'a [u8], Option<u64>) {
        let Some(space) = self.0.iter().rposition(|&b| b == b' ') else {
            return (self.0, None);
        };
        let count = std::str::from_utf8(&self.0[space + 1..])
            .ok()
            .and_then(|n| n.parse::<u64>().ok());
        match count {
            Some(count) if space > 0 => (&self.0[..space], Some(count)),
            _ => (self.0, None),
        }
    }
}

/// The fields of an ErrorResponse or NoticeResponse body, each a code
/// byte and a NUL-terminated string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorFields<'a>(pub &'a [u8]);

impl<'a> ErrorFields<'a> {
    /// The value of field `code` (`C` SQLSTATE, `M` message, `D`
    /// detail...); `None` when absent or malformed.
    pub fn field(self, code: u8) -> Option<&'a [u8]> {
        let mut rest = self.0;
        while let Some((&field, tail)) = rest.split_first() {
            if field == 0 {
                return None;
            }
            let end = tail.iter().position(|&b| b == 0)?;
            if field == code {
                return Some(&tail[..end]);
            }
            rest = &tail[end + 1..];
        }
        None
    }

    /// The SQLSTATE (`C`).
    pub fn code(self) -> Option<&'a [u8]> {
        self.field(b'C')
    }

    /// The message (`M`), as text.
    pub fn message(self) -> String {
        self.text(b'M')
            .unwrap_or_else(|| "unknown error".to_owned())
    }

    /// Field `code` as text.
    pub fn text(self, code: u8) -> Option<String> {
        self.field(code)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }
}

impl<'a> BackendMessage<'a> {
    /// Read a whole server message (tag, length and body), checking what
    /// its kind fixes: a known tag, a ReadyForQuery's status, the length
    /// of the messages that have one.
    pub fn parse(message: &'a [u8]) -> Result<BackendMessage<'a>, FrameError> {
        validate(message)?;
        Ok(view(message))
    }

    pub fn kind(&self) -> BackendKind {
        use BackendMessage as M;
        match self {
            M::Authentication(_) => BackendKind::Authentication,
            M::BackendKeyData { .. } => BackendKind::BackendKeyData,
            M::BindComplete => BackendKind::BindComplete,
            M::CloseComplete => BackendKind::CloseComplete,
            M::CommandComplete(_) => BackendKind::CommandComplete,
            M::CopyData(_) => BackendKind::CopyData,
            M::CopyDone => BackendKind::CopyDone,
            M::CopyInResponse(_) => BackendKind::CopyInResponse,
            M::CopyOutResponse(_) => BackendKind::CopyOutResponse,
            M::CopyBothResponse(_) => BackendKind::CopyBothResponse,
            M::DataRow(_) => BackendKind::DataRow,
            M::EmptyQueryResponse => BackendKind::EmptyQueryResponse,
            M::ErrorResponse(_) => BackendKind::ErrorResponse,
            M::FunctionCallResponse(_) => BackendKind::FunctionCallResponse,
            M::NegotiateProtocolVersion(_) => BackendKind::NegotiateProtocolVersion,
            M::NoData => BackendKind::NoData,
            M::NoticeResponse(_) => BackendKind::NoticeResponse,
            M::NotificationResponse(_) => BackendKind::NotificationResponse,
            M::ParameterDescription(_) => BackendKind::ParameterDescription,
            M::ParameterStatus { .. } => BackendKind::ParameterStatus,
            M::ParseComplete => BackendKind::ParseComplete,
            M::PortalSuspended => BackendKind::PortalSuspended,
            M::ReadyForQuery(_) => BackendKind::ReadyForQuery,
            M::RowDescription(_) => BackendKind::RowDescription,
        }
    }
}

/// The checks [`BackendMessage::parse`] makes: after them, [`view`] reads
/// every field it needs in range.
fn validate(message: &[u8]) -> Result<(), FrameError> {
    let [tag, _, _, _, _, body @ ..] = message else {
        return Err(FrameError::Malformed {
            tag: message.first().copied().unwrap_or(0),
            reason: "message too short",
        });
    };
    let kind = BackendKind::of_tag(*tag).ok_or(FrameError::UnknownBackendTag(*tag))?;
    let malformed = |reason| FrameError::Malformed { tag: *tag, reason };
    match kind {
        BackendKind::ReadyForQuery => match body {
            [status] if TransactionStatus::from_byte(*status).is_some() => Ok(()),
            _ => Err(malformed("not a transaction status")),
        },
        BackendKind::BackendKeyData if body.len() < 8 => Err(malformed("message too short")),
        BackendKind::Authentication if body.len() < 4 => Err(malformed("message too short")),
        BackendKind::Authentication if u32_at(body, 0) == 5 && body.len() < 8 => {
            Err(malformed("message too short"))
        }
        BackendKind::ParameterStatus if body.iter().filter(|&&b| b == 0).count() < 2 => {
            Err(malformed("missing NUL terminator"))
        }
        _ => Ok(()),
    }
}

/// The view of a message [`validate`] accepted (reads past its checks are
/// read as empty, never out of range).
fn view(message: &[u8]) -> BackendMessage<'_> {
    use BackendMessage as M;
    let tag = message.first().copied().unwrap_or(0);
    let body = message.get(5..).unwrap_or_default();
    let Some(kind) = BackendKind::of_tag(tag) else {
        return M::NoticeResponse(ErrorFields(&[]));
    };
    match kind {
        BackendKind::Authentication => M::Authentication(authentication(body)),
        BackendKind::BackendKeyData => M::BackendKeyData {
            process_id: u32_at(body, 0),
            secret: body.get(4..).unwrap_or_default(),
        },
        BackendKind::BindComplete => M::BindComplete,
        BackendKind::CloseComplete => M::CloseComplete,
        BackendKind::CommandComplete => {
            M::CommandComplete(CommandTag(body.strip_suffix(&[0]).unwrap_or(body)))
        }
        BackendKind::CopyData => M::CopyData(body),
        BackendKind::CopyDone => M::CopyDone,
        BackendKind::CopyInResponse => M::CopyInResponse(body),
        BackendKind::CopyOutResponse => M::CopyOutResponse(body),
        BackendKind::CopyBothResponse => M::CopyBothResponse(body),
        BackendKind::DataRow => M::DataRow(body),
        BackendKind::EmptyQueryResponse => M::EmptyQueryResponse,
        BackendKind::ErrorResponse => M::ErrorResponse(ErrorFields(body)),
        BackendKind::FunctionCallResponse => M::FunctionCallResponse(body),
        BackendKind::NegotiateProtocolVersion => M::NegotiateProtocolVersion(body),
        BackendKind::NoData => M::NoData,
        BackendKind::NoticeResponse => M::NoticeResponse(ErrorFields(body)),
        BackendKind::NotificationResponse => M::NotificationResponse(body),
        BackendKind::ParameterDescription => M::ParameterDescription(body),
        BackendKind::ParameterStatus => {
            let mut parts = body.split(|&b| b == 0);
            let name = parts.next().unwrap_or_default();
            let value = parts.next().unwrap_or_default();
            M::ParameterStatus { name, value }
        }
        BackendKind::ParseComplete => M::ParseComplete,
        BackendKind::PortalSuspended => M::PortalSuspended,
        BackendKind::ReadyForQuery => M::ReadyForQuery(
            body.first()
                .and_then(|&b| TransactionStatus::from_byte(b))
                .unwrap_or_default(),
        ),
        BackendKind::RowDescription => M::RowDescription(body),
    }
}

fn authentication(body: &[u8]) -> Authentication<'_> {
    let payload = body.get(4..).unwrap_or_default();
    match u32_at(body, 0) {
        0 => Authentication::Ok,
        3 => Authentication::Cleartext,
        5 => Authentication::Md5 {
            salt: [0, 1, 2, 3].map(|i| payload.get(i).copied().unwrap_or(0)),
        },
        10 => Authentication::Sasl(payload),
        11 => Authentication::SaslContinue(payload),
        12 => Authentication::SaslFinal(payload),
        other => Authentication::Other(other),
    }
}

/// The big-endian `u32` at `at` of `bytes` (0 past the end).
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// A whole server message kept as it came (tag and length included), read
/// and checked when it was split off the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendFrame(Bytes);

impl BackendFrame {
    /// Split one whole server message off the front of `buf` and read it;
    /// `None` until it is all there.
    pub fn split(buf: &mut BytesMut) -> Result<Option<BackendFrame>, FrameError> {
        let Some(message) = split_backend_message(buf)? else {
            return Ok(None);
        };
        validate(&message)?;
        Ok(Some(BackendFrame(message)))
    }

    /// A copy of the whole message `message`, read.
    pub fn copy_of(message: &[u8]) -> Result<BackendFrame, FrameError> {
        validate(message)?;
        Ok(BackendFrame(Bytes::copy_from_slice(message)))
    }

    /// This message with its body rewritten: `write` gets the body and
    /// writes the new one; the result is framed and read again (`None`
    /// if it does not read as a message of its kind).
    pub fn with_body(&self, write: impl FnOnce(&[u8], &mut BytesMut)) -> Option<BackendFrame> {
        let mut out = BytesMut::with_capacity(self.0.len());
        out.extend_from_slice(self.0.get(..5)?);
        write(self.0.get(5..)?, &mut out);
        let length = u32::try_from(out.len() - 1).ok()?;
        out[1..5].copy_from_slice(&length.to_be_bytes());
        validate(&out).ok()?;
        Some(BackendFrame(out.freeze()))
    }

    /// The message read (its checks were made when it was split).
    pub fn message(&self) -> BackendMessage<'_> {
        view(&self.0)
    }

    pub fn kind(&self) -> BackendKind {
        self.message().kind()
    }

    /// The whole message, to forward.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }

    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn messages_read_as_their_kinds() {
        let ready = message(b'Z', b"T");
        assert_eq!(
            BackendMessage::parse(&ready),
            Ok(BackendMessage::ReadyForQuery(TransactionStatus::InBlock))
        );
        let tag = message(b'C', b"INSERT 0 7\0");
        let BackendMessage::CommandComplete(tag) = BackendMessage::parse(&tag).unwrap() else {
            panic!("not a CommandComplete");
        };
        assert_eq!(tag.split_count(), (&b"INSERT 0"[..], Some(7)));
        assert_eq!(
            CommandTag(b"CREATE TABLE").split_count(),
            (&b"CREATE TABLE"[..], None)
        );
        assert!(CommandTag(b"DROP TABLE").changes_schema());
        assert!(!CommandTag(b"DELETE 3").changes_schema());
        let status = message(b'S', b"TimeZone\0UTC\0");
        assert_eq!(
            BackendMessage::parse(&status),
            Ok(BackendMessage::ParameterStatus {
                name: b"TimeZone",
                value: b"UTC"
            })
        );
        let md5 = message(b'R', b"\0\0\0\x05salt");
        assert_eq!(
            BackendMessage::parse(&md5),
            Ok(BackendMessage::Authentication(Authentication::Md5 {
                salt: *b"salt"
            }))
        );
    }

    #[test]
    fn what_a_kind_fixes_is_checked() {
        for bad in [
            message(b'Z', b"X"),
            message(b'Z', b""),
            message(b'Z', b"II"),
            message(b'K', b"\0\0\0\x01"),
            message(b'R', b"\0\0"),
            message(b'R', b"\0\0\0\x05ab"),
            message(b'S', b"name-only\0"),
            message(b'?', b""),
            b"Z\0\0".to_vec(),
        ] {
            assert!(BackendMessage::parse(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn error_fields() {
        let fields = ErrorFields(b"SERROR\0C28P01\0Mpassword authentication failed\0\0");
        assert_eq!(fields.code(), Some(&b"28P01"[..]));
        assert_eq!(fields.message(), "password authentication failed");
        assert_eq!(fields.field(b'D'), None);
        assert_eq!(ErrorFields(b"SERROR\0Cunterminated").code(), None);
        assert_eq!(ErrorFields(b"").message(), "unknown error");
    }

    #[test]
    fn kinds_sets() {
        let execute = Kinds::of(&[BackendKind::CommandComplete, BackendKind::PortalSuspended]);
        assert!(execute.contains(BackendKind::PortalSuspended));
        assert!(!execute.contains(BackendKind::DataRow));
        assert!(BackendKind::NoticeResponse.is_async());
    }

    #[test]
    fn a_frame_rewritten_is_framed_anew() {
        let error = BackendFrame::copy_of(&message(b'E', b"Mold\0\0")).unwrap();
        let renamed = error
            .with_body(|_, out| out.extend_from_slice(b"Mnewer\0\0"))
            .unwrap();
        assert_eq!(&renamed.bytes()[..], &message(b'E', b"Mnewer\0\0")[..]);
        let ready = BackendFrame::copy_of(&message(b'Z', b"I")).unwrap();
        assert_eq!(ready.with_body(|_, out| out.extend_from_slice(b"X")), None);
    }

    #[test]
    fn frames_split_read_and_keep_their_bytes() {
        let mut buf = BytesMut::from(&[message(b'2', b""), message(b'Z', b"I")].concat()[..]);
        let first = BackendFrame::split(&mut buf).unwrap().unwrap();
        assert_eq!(first.message(), BackendMessage::BindComplete);
        assert_eq!(&first.bytes()[..], b"2\0\0\0\x04");
        let second = BackendFrame::split(&mut buf).unwrap().unwrap();
        assert_eq!(second.kind(), BackendKind::ReadyForQuery);
        assert_eq!(BackendFrame::split(&mut buf), Ok(None));
        let mut bad = BytesMut::from(&message(b'Z', b"Q")[..]);
        assert!(BackendFrame::split(&mut bad).is_err());
    }
}
