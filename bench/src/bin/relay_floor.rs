//! `relay_floor`: the least work a proxy can do per transaction, as a
//! target for `bench/pgbench.sh` (issue 14). One thread, one epoll set, a
//! server connection per client (no pool, no parsing, no protocol): each
//! readable socket is read once and what came is written to its peer at
//! once. Its CPU per transaction is the kernel's socket and wake-up work
//! that any proxy pays (the four socket syscalls of a proxied round trip,
//! plus the epoll calls), so pgshard's and PgBouncer's CPU over it is
//! their own work, and its throughput bounds what a proxy in front of the
//! same Postgres can reach on the same machine.
//!
//! Written on mio (Tokio's own epoll layer) rather than Tokio: a runtime's
//! task scheduling is part of what the floor leaves out.
//!
//!     relay_floor --listen 127.0.0.1:6433 --host 127.0.0.1 --port 5432
//!     relay_floor --listen 127.0.0.1:6433 --host /tmp --port 5432   # Unix socket

use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use mio::event::Source;
use mio::net::{TcpListener, TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Registry, Token};

#[derive(Parser)]
#[command(about = "A proxy that does nothing but relay bytes: the floor for bench/pgbench.sh")]
struct Args {
    /// Address to accept clients on.
    #[arg(long)]
    listen: SocketAddr,
    /// Postgres's host, or the directory of its Unix socket.
    #[arg(long)]
    host: String,
    #[arg(long)]
    port: u16,
}

const LISTENER: Token = Token(0);
/// What one read takes at most (a short read means the socket is drained).
const READ_SIZE: usize = 64 * 1024;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::bind(args.listen).context("binding --listen")?;
    // (A test that asked for port 0 reads the port here.)
    println!("listening on {}", listener.local_addr()?);
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut relay = Relay {
        pairs: Vec::new(),
        buf: vec![0; READ_SIZE],
    };
    let mut events = Events::with_capacity(256);
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e.into());
        }
        for event in &events {
            if event.token() == LISTENER {
                relay.accept(&listener, poll.registry(), &args);
            } else {
                let at = event.token().0 - 1;
                let ready = Ready {
                    writable: event.is_writable(),
                    read_closed: event.is_read_closed(),
                };
                relay.on_ready(poll.registry(), at / 2, at % 2, ready);
            }
        }
    }
}

/// Either kind of socket, as one mio source.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// One side of a client's relay: its socket and what waits to be written
/// to it (only when the socket had no room). A bench tool's shortcut: the
/// other side is read on regardless, so a peer that stops reading makes
/// `pending` grow without bound (pgbench reads every reply).
struct Side {
    stream: Stream,
    pending: Vec<u8>,
}

/// What an event said of a socket.
struct Ready {
    writable: bool,
    /// The peer closed its end: read to the end of the stream.
    read_closed: bool,
}

struct Relay {
    /// `[client, server]` per client; `None` once closed (tokens are
    /// `1 + 2 * pair + side`).
    pairs: Vec<Option<[Side; 2]>>,
    buf: Vec<u8>,
}

impl Relay {
    fn accept(&mut self, listener: &TcpListener, registry: &Registry, args: &Args) {
        loop {
            let client = match listener.accept() {
                Ok((client, _)) => client,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    eprintln!("relay_floor: accept: {e}");
                    return;
                }
            };
            if let Err(e) = self.add(client, registry, args) {
                eprintln!("relay_floor: connecting to the server: {e}");
            }
        }
    }

    fn add(&mut self, client: TcpStream, registry: &Registry, args: &Args) -> io::Result<()> {
        client.set_nodelay(true)?;
        let server = if args.host.starts_with('/') {
            let path = PathBuf::from(&args.host).join(format!(".s.PGSQL.{}", args.port));
            let server = std::os::unix::net::UnixStream::connect(path)?;
            server.set_nonblocking(true)?;
            Stream::Unix(UnixStream::from_std(server))
        } else {
            let server = std::net::TcpStream::connect((args.host.as_str(), args.port))?;
            server.set_nodelay(true)?;
            server.set_nonblocking(true)?;
            Stream::Tcp(TcpStream::from_std(server))
        };
        let pair = self
            .pairs
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                self.pairs.push(None);
                self.pairs.len() - 1
            });
        let mut sides = [Stream::Tcp(client), server].map(|stream| Side {
            stream,
            pending: Vec::new(),
        });
        for (side, s) in sides.iter_mut().enumerate() {
            s.stream
                .source()
                .register(registry, token(pair, side), Interest::READABLE)?;
        }
        self.pairs[pair] = Some(sides);
        Ok(())
    }

    /// `side` of `pair` is readable (or writable, when it had bytes
    /// pending): read once, write what came to the other side.
    fn on_ready(&mut self, registry: &Registry, pair: usize, side: usize, ready: Ready) {
        let Some(Some(sides)) = self.pairs.get_mut(pair) else {
            return;
        };
        let result = (|| {
            if ready.writable {
                flush(&mut sides[side], registry, token(pair, side))?;
            }
            loop {
                let n = match sides[side].stream.read(&mut self.buf) {
                    Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                    Err(e) => return Err(e),
                };
                let peer = &mut sides[1 - side];
                peer.pending.extend_from_slice(&self.buf[..n]);
                flush(peer, registry, token(pair, 1 - side))?;
                if n < self.buf.len() && !ready.read_closed {
                    // Drained: mio's edge-triggered readiness reports
                    // whatever comes next.
                    return Ok(());
                }
            }
        })();
        if result.is_err() {
            if let Some(mut sides) = self.pairs[pair].take() {
                for side in &mut sides {
                    // What the other side said last (a FATAL error, say)
                    // goes out if the socket takes it now.
                    let _ = side.stream.write(&side.pending);
                    let _ = side.stream.source().deregister(registry);
                }
            }
        }
    }
}

fn token(pair: usize, side: usize) -> Token {
    Token(1 + 2 * pair + side)
}

/// Write what `side` has pending; ask for writability while some is left.
fn flush(side: &mut Side, registry: &Registry, token: Token) -> io::Result<()> {
    let had = !side.pending.is_empty();
    let mut written = 0;
    while written < side.pending.len() {
        match side.stream.write(&side.pending[written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    side.pending.drain(..written);
    let interest = if side.pending.is_empty() {
        Interest::READABLE
    } else {
        Interest::READABLE | Interest::WRITABLE
    };
    if had || !side.pending.is_empty() {
        side.stream.source().reregister(registry, token, interest)?;
    }
    Ok(())
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Stream {
    /// The socket as mio registers it (registration is rare: reads and
    /// writes, the hot path, match on the kind instead).
    fn source(&mut self) -> &mut dyn Source {
        match self {
            Stream::Tcp(s) => s,
            Stream::Unix(s) => s,
        }
    }
}
