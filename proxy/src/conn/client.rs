//! A client's connection: its socket (TCP, or TLS over it) and its two
//! buffers, what was read and not yet handled and what is to be written.
//! The login (`client/authenticate.rs`), the session, the admin console and
//! the watch on a client while something else is awaited all read and
//! write the client through it; nothing else touches the socket.

mod authenticate;

use std::future::Future;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use super::spare;
use super::tls::{ClientStream, TlsAcceptor};
use crate::protocol::frame::{backend_extent, Extent, FrameError, SMALL_MESSAGE_LIMIT};
use crate::protocol::frontend::{decode_frontend_frame, Frame};
use crate::protocol::ready::drop_ready_for_query;
use crate::protocol::startup::{decode_startup, StartupError, StartupMessage};
pub use authenticate::{AuthFailure, Credentials, First, LoginError};

/// The least free room in the read buffer for a read.
const READ_ROOM: usize = 4 * 1024;

/// Most bytes buffered while something else is awaited (a pool, PAUSE, a
/// fan-out): past it the client is not read until the wait ends (a
/// pipelining client waits, as with a full socket buffer).
pub const WATCH_BUFFER_LIMIT: usize = 1024 * 1024;

/// The client went away: end of stream, a broken socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the client went away")]
pub struct Gone;

/// A client's connection.
#[derive(Debug)]
pub struct ClientConn {
    stream: ClientStream,
    read: BytesMut,
    write: BytesMut,
    /// The longest message accepted: Postgres's cap for small messages
    /// until the login is over, then `max_message_size`.
    max_message: usize,
    /// While a query string runs one statement at a time: the end of the
    /// whole messages at the front of `write` that hold no ReadyForQuery
    /// (see [`ClientConn::hold_ready`]).
    held: Option<usize>,
    /// The bytes at the front of `write` that finish a message whose
    /// start was written already: they go out before anything else, even
    /// when the rest of the output is discarded ([`discard_output`]).
    ///
    /// [`discard_output`]: ClientConn::discard_output
    unfinished: usize,
}

impl ClientConn {
    /// A client that just connected over TCP.
    pub fn new(stream: TcpStream) -> ClientConn {
        ClientConn::over(ClientStream::Plain(stream))
    }

    /// A client that just connected on the Unix socket.
    pub fn unix(stream: UnixStream) -> ClientConn {
        ClientConn::over(ClientStream::Unix(stream))
    }

    fn over(stream: ClientStream) -> ClientConn {
        ClientConn {
            stream,
            read: BytesMut::with_capacity(1024),
            write: BytesMut::new(),
            max_message: SMALL_MESSAGE_LIMIT,
            held: None,
            unfinished: 0,
        }
    }

    /// Whether the client is on TCP without TLS (what it sends crosses
    /// the network readable).
    pub fn is_plain_tcp(&self) -> bool {
        matches!(self.stream, ClientStream::Plain(_))
    }

    /// The longest message accepted from now on.
    pub fn accept_messages_up_to(&mut self, max_message: usize) {
        self.max_message = max_message;
    }

    /// The connection over TLS, once the handshake with `acceptor` is
    /// done; `None` when it failed or it is TLS already.
    pub async fn into_tls(self, acceptor: &TlsAcceptor) -> std::io::Result<ClientConn> {
        let ClientStream::Plain(plain) = self.stream else {
            return Err(std::io::Error::other("TLS over TLS, or on a Unix socket"));
        };
        let stream = ClientStream::Tls(Box::new(acceptor.accept(plain).await?));
        Ok(ClientConn { stream, ..self })
    }

    /// The next whole message already read; `None` until one is complete.
    pub fn read_message(&mut self) -> Result<Option<Frame>, FrameError> {
        decode_frontend_frame(&mut self.read, self.max_message)
    }

    /// The next whole message, read as it comes.
    pub async fn next_message(&mut self) -> Result<Frame, ReadError> {
        loop {
            if let Some(frame) = self.read_message()? {
                return Ok(frame);
            }
            self.fill().await?;
        }
    }

    /// The untagged first message already read (StartupMessage,
    /// SSLRequest, CancelRequest...); `None` until it is complete.
    pub fn read_startup(&mut self) -> Result<Option<StartupMessage>, StartupError> {
        decode_startup(&mut self.read)
    }

    /// Bytes were read and not handled yet.
    pub fn has_unread(&self) -> bool {
        !self.read.is_empty()
    }

    /// Read what the client sent: how many bytes, or `Gone` at the end of
    /// its stream. Cancel-safe: a read abandoned in a `select!` loses
    /// nothing.
    pub async fn fill(&mut self) -> Result<usize, Gone> {
        if self.read.capacity() == 0 {
            // Idle, its buffer given back: take one when bytes come.
            self.stream.readable().await.map_err(|_| Gone)?;
            spare::ensure(&mut self.read);
        }
        // Room for a whole message of the usual size in one read: a read
        // that fills the buffer is followed by another.
        self.read.reserve(READ_ROOM);
        match self.stream.read_buf(&mut self.read).await {
            Ok(0) | Err(_) => Err(Gone),
            Ok(n) => Ok(n),
        }
    }

    /// Whether [`fill`](Self::fill) may read more while something else is
    /// awaited (below [`WATCH_BUFFER_LIMIT`]).
    pub fn may_buffer(&self) -> bool {
        self.read.len() < WATCH_BUFFER_LIMIT
    }

    /// Wait for `wait` while watching the client: what it sends meanwhile
    /// is kept for later; if it leaves, the wait is abandoned with `Gone`
    /// (dropping `wait` gives back whatever it held).
    pub async fn watch<T>(&mut self, wait: impl Future<Output = T>) -> Result<T, Gone> {
        tokio::pin!(wait);
        loop {
            if !self.may_buffer() {
                return Ok(wait.await);
            }
            tokio::select! {
                biased;
                out = &mut wait => return Ok(out),
                read = self.fill() => { read?; }
            }
        }
    }

    /// What is to be written to the client (sent by [`flush`](Self::flush)).
    pub fn out(&mut self) -> &mut BytesMut {
        spare::ensure(&mut self.write)
    }

    /// The client is idle (nothing unread, nothing to write): its buffers
    /// go back to the thread's spares until it sends again (kept over TLS,
    /// whose stream says nothing of readiness).
    pub fn give_back_buffers(&mut self) {
        if matches!(self.stream, ClientStream::Tls(_)) || self.held.is_some() {
            return;
        }
        spare::give_if_empty(&mut self.read);
        spare::give_if_empty(&mut self.write);
    }

    /// Bytes are waiting to be written.
    pub fn has_output(&self) -> bool {
        !self.write.is_empty()
    }

    /// From now until [`release_ready`](Self::release_ready), every
    /// ReadyForQuery written to the output is dropped (what is in it
    /// already stays): a query string run one statement at a time owes
    /// the client one, at its end. Only whole messages are written
    /// meanwhile.
    pub fn hold_ready(&mut self) {
        self.held = Some(self.write.len());
    }

    /// End [`hold_ready`](Self::hold_ready): the ReadyForQuery messages
    /// written since are dropped, the next ones go out.
    pub fn release_ready(&mut self) {
        if let Some(from) = self.held.take() {
            drop_ready_for_query(&mut self.write, from);
        }
    }

    /// How much of the output may be written now: all of it, or while
    /// ReadyForQuery messages are held, the whole messages without them.
    fn writable(&mut self) -> usize {
        match self.held {
            Some(from) => {
                let end = drop_ready_for_query(&mut self.write, from);
                self.held = Some(end);
                end
            }
            None => self.write.len(),
        }
    }

    /// `n` bytes of the output were written. When a write ends inside a
    /// message, what is left of it is noted ([`unfinished`](Self::unfinished)):
    /// only a write the socket cut short walks the messages.
    fn written(&mut self, n: usize) {
        self.unfinished = if n >= self.write.len() {
            0
        } else {
            let mut at = self.unfinished;
            while at < n {
                match backend_extent(&self.write[at..]) {
                    Ok(Extent::Whole(length)) => at += length,
                    // Not a whole message (pgshard writes only whole ones):
                    // all of it is kept.
                    _ => at = self.write.len(),
                }
            }
            at - n
        };
        self.write.advance(n);
        if let Some(end) = self.held.as_mut() {
            *end -= n;
        }
    }

    /// Write what the socket takes of the output now, building no future
    /// (the usual case: a reply fits the socket's buffer); `false` when
    /// bytes are left for [`flush`](Self::flush).
    pub fn flush_now(&mut self) -> Result<bool, Gone> {
        let end = self.writable();
        if end == 0 {
            return Ok(true);
        }
        match self.stream.try_write_now(&self.write[..end]) {
            Ok(n) => self.written(n),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {
                self.lost_output();
                return Err(Gone);
            }
        }
        Ok(self.writable() == 0)
    }

    /// Write all of the output (while ReadyForQuery messages are held, all
    /// its whole messages). Cancel-safe: each write is accounted for as it
    /// completes, so a flush abandoned in a `select!` (a KILL, say) leaves
    /// the output as it is on the wire.
    pub async fn flush(&mut self) -> Result<(), Gone> {
        if self.flush_now()? {
            return Ok(());
        }
        loop {
            let end = self.writable();
            if end == 0 {
                return Ok(());
            }
            match self.stream.write(&self.write[..end]).await {
                Ok(n) if n > 0 => self.written(n),
                _ => {
                    self.lost_output();
                    return Err(Gone);
                }
            }
        }
    }

    /// The client cannot be written to: its output goes.
    fn lost_output(&mut self) {
        self.write.clear();
        self.unfinished = 0;
        self.held = self.held.map(|_| 0);
    }

    /// Drop the output not yet written, to put a last message (a FATAL
    /// error) in its place: what finishes a message already partly
    /// written stays, so the client reads whole messages up to it, and
    /// ReadyForQuery messages are no longer held.
    pub fn discard_output(&mut self) {
        self.write.truncate(self.unfinished);
        self.held = None;
    }

    /// Write `bytes` now, ahead of nothing else (the output is empty
    /// during the login).
    pub async fn send(&mut self, bytes: &[u8]) -> Result<(), Gone> {
        self.write.extend_from_slice(bytes);
        self.flush().await
    }

    /// Close the connection after what was written.
    pub async fn shutdown(&mut self) {
        let _ = self.flush().await;
        let _ = self.stream.shutdown().await;
    }
}

/// Why the next message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Gone(#[from] Gone),
    #[error(transparent)]
    Frame(#[from] FrameError),
}

#[cfg(test)]
mod tests;
