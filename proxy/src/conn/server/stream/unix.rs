//! A Unix-domain socket to a server, registered with the reactor for
//! readability only. A Unix socket reports writable each time the server
//! consumes what was sent (the kernel's `unix_write_space` does not wait
//! for a full buffer to drain, as TCP's write space does), so under Tokio's
//! usual read-and-write registration every round trip woke the worker one
//! more time for nothing: 3 `epoll_wait` and 3 context switches per
//! transaction at one client where PgBouncer, which asks for writability
//! only when a write waits, makes 2. Here writability is asked for only
//! while a write waits for room, as PgBouncer does.
//!
//! Hand-rolled over `AsyncFd` because `tokio::net::UnixStream` always
//! registers both interests.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{Interest, ReadBuf};

/// The most one read takes. Safe code reads only into initialized memory,
/// so this much of the buffer is zeroed before each read.
const READ_ROOM: usize = 8 * 1024;

#[derive(Debug)]
pub struct UnixSocket {
    /// `None` only after registering it again failed: unusable then.
    fd: Option<AsyncFd<UnixStream>>,
    /// Registered for writability too: a write waited for room.
    writing: bool,
}

/// `stream` registered with this thread's reactor for `interest`.
/// Tokio 1.54 deprecates the safe constructor because an arbitrary
/// `AsRawFd` type could close its descriptor while registered; a
/// `UnixStream` owns its descriptor and closes it only when dropped, which
/// the `AsyncFd` it is moved into prevents, so the safe form is sound here
/// (and the proxy crate has no `unsafe`).
#[allow(deprecated)]
fn registered(stream: UnixStream, interest: Interest) -> io::Result<AsyncFd<UnixStream>> {
    AsyncFd::with_interest(stream, interest)
}

/// One non-blocking write.
fn write(fd: &AsyncFd<UnixStream>, bytes: &[u8]) -> io::Result<usize> {
    (&mut fd.get_ref()).write(bytes)
}

fn lost() -> io::Error {
    io::Error::other("server socket lost while registering it again")
}

impl UnixSocket {
    pub async fn connect(path: &Path) -> io::Result<UnixSocket> {
        let stream = tokio::net::UnixStream::connect(path).await?;
        UnixSocket::from_std(stream.into_std()?)
    }

    /// Register `stream` with this thread's reactor (readability only).
    pub fn from_std(stream: UnixStream) -> io::Result<UnixSocket> {
        stream.set_nonblocking(true)?;
        Ok(UnixSocket {
            fd: Some(registered(stream, Interest::READABLE)?),
            writing: false,
        })
    }

    /// The socket, deregistered (still non-blocking).
    pub fn into_std(mut self) -> io::Result<UnixStream> {
        Ok(self.fd.take().ok_or_else(lost)?.into_inner())
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_ref().map_or(-1, |fd| fd.get_ref().as_raw_fd())
    }

    fn stream(&self) -> io::Result<&AsyncFd<UnixStream>> {
        self.fd.as_ref().ok_or_else(lost)
    }

    /// Register again, for writability too or not (two `epoll_ctl`).
    fn register(&mut self, writing: bool) -> io::Result<()> {
        let stream = self.fd.take().ok_or_else(lost)?.into_inner();
        let interest = if writing {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        self.fd = Some(registered(stream, interest)?);
        self.writing = writing;
        Ok(())
    }

    /// Read what is there now; `WouldBlock` when the reactor knows of
    /// nothing to read (no syscall then).
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream()?
            .try_io(Interest::READABLE, |mut s| s.read(buf))
    }

    /// Write what the socket takes now (`WouldBlock` if nothing). The start
    /// of a send: a socket registered for writability by an earlier wait
    /// goes back to readability only.
    pub fn try_write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = write(self.stream()?, bytes)?;
        if self.writing {
            self.register(false)?;
        }
        Ok(written)
    }

    pub fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.stream()?.poll_read_ready(cx))?;
            let room = buf.remaining().min(READ_ROOM);
            let unfilled = buf.initialize_unfilled_to(room);
            match guard.try_io(|s| (&mut s.get_ref()).read(unfilled)) {
                Ok(Ok(n)) => {
                    if n < room {
                        // Drained: edge-triggered, new data brings a new
                        // event (what Tokio's own streams do), so the next
                        // read waits instead of failing with EAGAIN.
                        guard.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                Err(_would_block) => continue,
            }
        }
    }

    pub fn poll_write(&mut self, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            match write(self.stream()?, bytes) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
            if !self.writing {
                self.register(true)?;
            }
            let mut guard = ready!(self.stream()?.poll_write_ready(cx))?;
            // Wait for the next edge if this attempt finds no room either.
            guard.clear_ready();
        }
    }

    pub fn shutdown(&self) -> io::Result<()> {
        self.stream()?.get_ref().shutdown(std::net::Shutdown::Write)
    }
}
