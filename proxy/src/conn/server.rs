//! One connection to a Postgres server: connect and log in (whatever the
//! server asks for, `server/login.rs`), its messages read in one place (in
//! place, or split off whole) and written, and the state pgshard tracks on
//! it: the transaction status and settings it reported (noted as its
//! messages are read), the statements prepared and settings applied on it,
//! its cancel key.

mod login;
pub mod prepared_set;
mod stream;

use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::conn::settings::ParamSet;
use crate::protocol::backend::{BackendFrame, BackendMessage, TransactionStatus};
use crate::protocol::frame::{backend_extent, reserve_missing, Extent, FrameError};
use crate::protocol::messages;
pub use prepared_set::PreparedSet;
pub use stream::{ServerAddr, ServerStream};

/// The least free room in a server connection's read buffer for a read.
const SERVER_READ_ROOM: usize = 8 * 1024;

/// Where and as whom to log in.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerTarget {
    pub host: String,
    pub port: u16,
    pub database: String,
    pub user: String,
    pub password: Option<String>,
    /// Log in as a logical replication connection (`replication=database`):
    /// it takes replication commands (`CREATE_REPLICATION_SLOT`) as well as
    /// simple queries. Never pooled.
    pub replication: bool,
}

impl std::fmt::Debug for ServerTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password: Debug output reaches logs.
        f.debug_struct("ServerTarget")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("replication", &self.replication)
            .finish_non_exhaustive()
    }
}

/// Why a server connection could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot connect to {0}: {1}")]
    Connect(String, std::io::Error),
    #[error("timed out connecting to {0}")]
    ConnectTimeout(String),
    #[error("server connection lost: {0}")]
    Io(#[from] std::io::Error),
    #[error("server closed the connection")]
    Closed,
    /// The server's ErrorResponse during login: its SQLSTATE and message
    /// (28P01 for a wrong password).
    #[error("server refused login: {message}")]
    Refused { code: String, message: String },
    #[error("server asked for a password but none is configured for user \"{0}\"")]
    NoPassword(String),
    #[error("server requested unsupported authentication (code {0})")]
    UnsupportedAuth(u32),
    #[error("server authentication failed: {0}")]
    Auth(#[from] crate::auth::AuthError),
    #[error("protocol error from server: {0}")]
    Protocol(String),
}

/// Where a client's query is running, so a CancelRequest can reach it:
/// shared with the server connection, so that a checkout and a release
/// each move one reference, not an address and a key.
pub type CancelTarget = std::sync::Arc<CancelKey>;

/// A server connection's address and cancel key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelKey {
    pub addr: ServerAddr,
    pub process_id: u32,
    pub secret_key: Bytes,
}

/// A statement the server refused: its ErrorResponse's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// A logged-in server connection.
#[derive(Debug)]
pub struct ServerConn {
    /// The socket: only this type reads or writes it.
    stream: ServerStream,
    /// Bytes read from the server and not yet handled.
    rbuf: BytesMut,
    pub addr: ServerAddr,
    /// The server's cancel key.
    pub process_id: u32,
    pub secret_key: Bytes,
    /// Latest ParameterStatus values, as the server reported them.
    pub params: Vec<(String, String)>,
    pub created: Instant,
    pub last_used: Instant,
    /// When a health check last passed on it (`pool/health.rs`).
    pub checked: Instant,
    pub prepared: PreparedSet,
    /// Session settings applied on this connection, as SET statements.
    pub applied: ParamSet,
    /// Transaction status of the last ReadyForQuery read.
    status: TransactionStatus,
    /// A client left session state behind (temp tables, LISTEN, SQL
    /// PREPARE...): reset it with DISCARD ALL before reuse.
    pub dirty: bool,
    pub id: u64,
    /// The worker thread whose reactor the socket is registered with
    /// (`workers.rs`; `None` off worker threads).
    home: Option<usize>,
    /// `addr`, `process_id` and `secret_key` together, from the login on.
    cancel: Option<CancelTarget>,
}

impl ServerConn {
    /// What a CancelRequest for the query running on it needs.
    pub fn cancel_key(&self) -> CancelTarget {
        match &self.cancel {
            Some(key) => std::sync::Arc::clone(key),
            None => self.make_cancel_key(),
        }
    }

    fn make_cancel_key(&self) -> CancelTarget {
        std::sync::Arc::new(CancelKey {
            addr: self.addr.clone(),
            process_id: self.process_id,
            secret_key: self.secret_key.clone(),
        })
    }

    /// The socket's file descriptor (SHOW FDS).
    pub fn fd(&self) -> i32 {
        self.stream.fd()
    }

    /// Connect and log in; returns once the server is ready for queries.
    pub async fn connect(
        target: &ServerTarget,
        timeout: Duration,
        id: u64,
    ) -> Result<Box<ServerConn>, ServerError> {
        let place = match ServerAddr::unix_socket(&target.host, target.port) {
            Some(path) => path.display().to_string(),
            None => format!("{}:{}", target.host, target.port),
        };
        let login = async {
            let (stream, addr) = ServerStream::connect(&target.host, target.port)
                .await
                .map_err(|e| ServerError::Connect(place.clone(), e))?;
            // Boxed: a connection moves between the pool and sessions on
            // every checkout, and a pointer is cheaper to move than the
            // struct.
            let mut conn = Box::new(ServerConn {
                stream,
                rbuf: BytesMut::with_capacity(16 * 1024),
                addr,
                process_id: 0,
                secret_key: Bytes::new(),
                params: Vec::new(),
                created: Instant::now(),
                last_used: Instant::now(),
                checked: Instant::now(),
                prepared: PreparedSet::default(),
                applied: ParamSet::default(),
                status: TransactionStatus::Idle,
                dirty: false,
                id,
                home: crate::conn::worker::current(),
                cancel: None,
            });
            conn.login(target).await?;
            conn.cancel = Some(conn.make_cancel_key());
            Ok(conn)
        };
        match tokio::time::timeout(timeout, login).await {
            Ok(result) => result,
            Err(_) => Err(ServerError::ConnectTimeout(place)),
        }
    }

    /// Read what the server has sent into the buffer; `Ok(0)` when it
    /// closed the connection. Cancel-safe: a read abandoned in a `select!`
    /// loses nothing.
    pub async fn fill(&mut self) -> std::io::Result<usize> {
        // Room for a whole reply of the usual size in one read: a read that
        // fills the buffer is followed by another.
        self.rbuf.reserve(SERVER_READ_ROOM);
        self.stream.read_buf(&mut self.rbuf).await
    }

    /// The next whole message already read, split off the buffer (its
    /// ReadyForQuery status and ParameterStatus noted); `None` until one is
    /// complete.
    pub fn next_message(&mut self) -> Result<Option<BackendFrame>, FrameError> {
        let frame = BackendFrame::split(&mut self.rbuf)?;
        if let Some(frame) = &frame {
            note(&mut self.status, &mut self.params, frame.message());
        }
        Ok(frame)
    }

    /// The message at offset `at` of what was read and not yet consumed,
    /// read in place (for relaying runs of messages without splitting each
    /// off): its ReadyForQuery status and ParameterStatus noted as it is
    /// read. What is read is consumed with [`consume`](Self::consume).
    pub fn read_at(&mut self, at: usize) -> Result<Ahead<'_>, FrameError> {
        let rest = self.rbuf.get(at..).unwrap_or_default();
        let length = match backend_extent(rest)? {
            Extent::Whole(length) => length,
            Extent::Missing(missing) => return Ok(Ahead::Missing(missing)),
        };
        let raw = &rest[..length];
        let message = BackendMessage::parse(raw)?;
        note(&mut self.status, &mut self.params, message);
        Ok(Ahead::Message(message, raw))
    }

    /// Bytes `range` of what was read and not yet consumed (a run of
    /// whole messages [`read_at`](Self::read_at) read).
    pub fn read_bytes(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.rbuf.get(range).unwrap_or_default()
    }

    /// The first `read` bytes were handled; `missing` more are needed for
    /// the message after them (room is made as they come).
    pub fn consume(&mut self, read: usize, missing: usize) {
        self.rbuf.advance(read);
        if self.rbuf.len() >= 5 {
            reserve_missing(&mut self.rbuf, missing);
        }
    }

    /// Read one whole message from the server, waiting for it.
    pub async fn read_message(&mut self) -> Result<BackendFrame, ServerError> {
        loop {
            match self.next_message() {
                Ok(Some(frame)) => return Ok(frame),
                Ok(None) => {}
                Err(e) => return Err(ServerError::Protocol(e.to_string())),
            }
            if self.stream.read_buf(&mut self.rbuf).await? == 0 {
                return Err(ServerError::Closed);
            }
        }
    }

    /// Its transaction status, as the last ReadyForQuery read said.
    pub fn status(&self) -> TransactionStatus {
        self.status
    }

    /// Write what of `bytes` the socket takes now (0 when it takes
    /// nothing), without waiting.
    pub fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self.stream.try_write(bytes) {
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            written => written,
        }
    }

    /// Write `bytes` to the server.
    pub async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        // The usual case: the socket takes it all at once, and no write
        // future is built or polled.
        let written = self.try_send(bytes)?;
        match bytes.get(written..) {
            Some(rest) if !rest.is_empty() => self.stream.write_all(rest).await,
            _ => Ok(()),
        }
    }

    /// Run `sql` as a simple query and read to ReadyForQuery, keeping the
    /// server's ParameterStatus reports: `Ok(Err(_))` with the first
    /// error's message when the server refused it.
    pub async fn run(&mut self, sql: &str) -> Result<Result<(), Refusal>, ServerError> {
        let mut out = BytesMut::new();
        messages::query(&mut out, sql);
        self.stream.write_all(&out).await?;
        let mut result = Ok(());
        loop {
            let frame = self.read_message().await?;
            match frame.message() {
                BackendMessage::ErrorResponse(error) if result.is_ok() => {
                    result = Err(Refusal(error.message()))
                }
                BackendMessage::ReadyForQuery(_) => return Ok(result),
                _ => {}
            }
        }
    }

    /// Run `sql` as a simple query and read to ReadyForQuery: the rows of
    /// its text-format results and its first error (SQLSTATE, message).
    pub async fn query(&mut self, sql: &str) -> Result<Answer, ServerError> {
        self.send_query(sql).await?;
        self.answer().await
    }

    /// Send `sql` as a simple query without waiting for it: several
    /// servers then run theirs at once, each read with [`answer`](Self::answer).
    pub async fn send_query(&mut self, sql: &str) -> Result<(), ServerError> {
        let mut out = BytesMut::new();
        messages::query(&mut out, sql);
        Ok(self.stream.write_all(&out).await?)
    }

    /// The answer to the simple query sent last, read to ReadyForQuery.
    pub async fn answer(&mut self) -> Result<Answer, ServerError> {
        let mut answer = Answer::default();
        loop {
            let frame = self.read_message().await?;
            match frame.message() {
                BackendMessage::DataRow(_) => {
                    if let Some(row) = crate::protocol::rows::parse_row(frame.bytes()) {
                        let values = (0..row.values.len()).map(|c| {
                            row.value(c)
                                .map(|v| String::from_utf8_lossy(v).into_owned())
                        });
                        answer.rows.push(values.collect());
                    }
                }
                BackendMessage::ErrorResponse(error) if answer.error.is_none() => {
                    let code = error.code().unwrap_or_default();
                    let code = String::from_utf8_lossy(code).into_owned();
                    answer.error = Some((code, error.message()));
                }
                BackendMessage::ReadyForQuery(_) => return Ok(answer),
                _ => {}
            }
        }
    }

    /// The worker thread the socket is registered with.
    pub fn home(&self) -> Option<usize> {
        self.home
    }

    /// The connection, registered with this worker thread's reactor if it
    /// was another's (on a worker thread), so its readiness wakes this
    /// thread's tasks without waking the other thread. Costs two
    /// `epoll_ctl` and a probe, once per move: the new registration knows
    /// no readiness yet, so [`is_broken_while_idle`](Self::is_broken_while_idle)
    /// would see nothing; the probe does (EOF, or an unsolicited message).
    pub fn settle_here(self: Box<Self>) -> std::io::Result<Box<ServerConn>> {
        let here = crate::conn::worker::current();
        if here.is_none() || here == self.home {
            return Ok(self);
        }
        // Out of its box and into a new one: the stream is replaced whole.
        let mut conn = *self;
        conn.stream = conn.stream.rehome()?;
        conn.home = here;
        Ok(Box::new(conn))
    }

    /// The server closed the socket or sent something while idle: a pooled
    /// connection in that state must not be handed out. Never blocks.
    pub fn is_broken_while_idle(&mut self) -> bool {
        if !self.rbuf.is_empty() {
            return true;
        }
        let mut probe = [0u8; 1];
        match self.stream.try_read(&mut probe) {
            Ok(_) => true, // EOF, or an unsolicited message (e.g. FATAL on shutdown)
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        }
    }

    /// Say goodbye politely; errors do not matter any more.
    pub async fn terminate(mut self) {
        let mut out = BytesMut::new();
        messages::terminate(&mut out);
        let _ = self.stream.write_all(&out).await;
    }
}

/// What [`ServerConn::query`] read: text values, and the first error's
/// SQLSTATE and message.
#[derive(Debug, Default)]
pub struct Answer {
    pub rows: Vec<Vec<Option<String>>>,
    pub error: Option<(String, String)>,
}

/// What the read buffer holds at an offset ([`ServerConn::read_at`]).
#[derive(Debug)]
pub enum Ahead<'a> {
    /// A whole message: its view, and its bytes (tag and length included).
    Message(BackendMessage<'a>, &'a [u8]),
    /// This many more bytes are needed for the message there.
    Missing(usize),
}

/// What a message read from the server says of the connection: the
/// transaction status of a ReadyForQuery, the setting a ParameterStatus
/// reports.
fn note(
    status: &mut TransactionStatus,
    params: &mut Vec<(String, String)>,
    message: BackendMessage<'_>,
) {
    match message {
        BackendMessage::ReadyForQuery(now) => *status = now,
        BackendMessage::ParameterStatus { name, value } => {
            let name = String::from_utf8_lossy(name);
            let value = String::from_utf8_lossy(value).into_owned();
            match params.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => *v = value,
                None => params.push((name.into_owned(), value)),
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_unix_socket_directory_with_no_server_is_named_in_the_error() {
        let target = ServerTarget {
            host: "/nonexistent-pgshard-dir".to_owned(),
            port: 6543,
            database: "db".to_owned(),
            user: "u".to_owned(),
            password: None,
            replication: false,
        };
        match ServerConn::connect(&target, Duration::from_secs(2), 0).await {
            Err(err @ ServerError::Connect(..)) => assert_eq!(
                err.to_string().split(": ").next(),
                Some("cannot connect to /nonexistent-pgshard-dir/.s.PGSQL.6543")
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(ServerAddr::unix_socket("db.example", 5432), None);
        assert_eq!(ServerAddr::unix_socket("127.0.0.1", 5432), None);
    }

    #[test]
    fn messages_read_in_place_or_split_off_note_the_status() {
        let mut status = TransactionStatus::Idle;
        let mut params = Vec::new();
        note(
            &mut status,
            &mut params,
            BackendMessage::ReadyForQuery(TransactionStatus::Failed),
        );
        note(
            &mut status,
            &mut params,
            BackendMessage::ParameterStatus {
                name: b"TimeZone",
                value: b"UTC",
            },
        );
        note(
            &mut status,
            &mut params,
            BackendMessage::ParameterStatus {
                name: b"TimeZone",
                value: b"CET",
            },
        );
        assert_eq!(status, TransactionStatus::Failed);
        assert_eq!(params, vec![("TimeZone".to_owned(), "CET".to_owned())]);
    }
}
