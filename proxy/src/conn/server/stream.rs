//! The socket to a Postgres server: TCP, or a Unix-domain socket when the
//! configured host is a directory (`host = "/var/run/postgresql"`, as
//! libpq and PgBouncer read it: the socket is `<dir>/.s.PGSQL.<port>`). A
//! Unix socket skips the TCP stack on both ends of every round trip
//! (bench/README.md measures what that saves). A Unix socket is registered
//! for readability only ([`UnixSocket`]).

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

mod unix;
pub use unix::UnixSocket;

/// Where a server connection goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddr {
    Tcp(SocketAddr),
    /// The socket's path, and the port it is named after.
    Unix {
        path: Arc<Path>,
        port: u16,
    },
}

impl ServerAddr {
    /// The address of `port` on `host`: a Unix socket when `host` is an
    /// absolute directory path, else TCP (resolved when connecting).
    pub fn unix_socket(host: &str, port: u16) -> Option<PathBuf> {
        host.starts_with('/')
            .then(|| Path::new(host).join(format!(".s.PGSQL.{port}")))
    }

    /// The address as the admin console shows it (PgBouncer's `addr`
    /// column: the IP, or `unix`).
    pub fn host_text(&self) -> String {
        match self {
            ServerAddr::Tcp(addr) => addr.ip().to_string(),
            ServerAddr::Unix { .. } => "unix".to_owned(),
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            ServerAddr::Tcp(addr) => addr.port(),
            ServerAddr::Unix { port, .. } => *port,
        }
    }
}

impl std::fmt::Display for ServerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerAddr::Tcp(addr) => addr.fmt(f),
            ServerAddr::Unix { path, .. } => path.display().fmt(f),
        }
    }
}

/// A connected socket to a server.
#[derive(Debug)]
pub enum ServerStream {
    Tcp(TcpStream),
    Unix(UnixSocket),
}

impl ServerStream {
    /// Connect to `port` on `host` (see [`ServerAddr::unix_socket`]).
    pub async fn connect(host: &str, port: u16) -> io::Result<(ServerStream, ServerAddr)> {
        if let Some(path) = ServerAddr::unix_socket(host, port) {
            let socket = UnixSocket::connect(&path).await?;
            let path = Arc::from(path.as_path());
            return Ok((ServerStream::Unix(socket), ServerAddr::Unix { path, port }));
        }
        let stream = TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        let addr = stream.peer_addr()?;
        Ok((ServerStream::Tcp(stream), ServerAddr::Tcp(addr)))
    }

    /// Connect to `addr` again (a CancelRequest goes on a new connection).
    pub async fn reach(addr: &ServerAddr) -> io::Result<ServerStream> {
        Ok(match addr {
            ServerAddr::Tcp(addr) => ServerStream::Tcp(TcpStream::connect(addr).await?),
            ServerAddr::Unix { path, .. } => ServerStream::Unix(UnixSocket::connect(path).await?),
        })
    }

    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        match self {
            ServerStream::Tcp(s) => s.as_raw_fd(),
            ServerStream::Unix(s) => s.fd(),
        }
    }

    pub fn try_write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            ServerStream::Tcp(s) => s.try_write(bytes),
            ServerStream::Unix(s) => s.try_write(bytes),
        }
    }

    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ServerStream::Tcp(s) => s.try_read(buf),
            ServerStream::Unix(s) => s.try_read(buf),
        }
    }

    /// The socket, registered again with the current thread's reactor,
    /// once a read that cannot wait shows the server quiet: an error if
    /// it closed the socket or sent something while idle (the connection
    /// is then dropped, so what the read took does not matter). The new
    /// registration knows no readiness yet, so only a read tells.
    pub fn rehome(self) -> io::Result<ServerStream> {
        use std::io::Read;
        fn quiet(mut socket: impl Read) -> io::Result<()> {
            match socket.read(&mut [0u8; 1]) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                Err(e) => Err(e),
                Ok(_) => Err(io::Error::other("closed or talking while idle")),
            }
        }
        // `into_std` leaves the socket non-blocking.
        Ok(match self {
            ServerStream::Tcp(s) => {
                let socket = s.into_std()?;
                quiet(&socket)?;
                ServerStream::Tcp(TcpStream::from_std(socket)?)
            }
            ServerStream::Unix(s) => {
                let socket = s.into_std()?;
                quiet(&socket)?;
                ServerStream::Unix(UnixSocket::from_std(socket)?)
            }
        })
    }
}

impl AsyncRead for ServerStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            ServerStream::Unix(s) => s.poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ServerStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ServerStream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            ServerStream::Unix(s) => s.poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Tcp(s) => Pin::new(s).poll_flush(cx),
            ServerStream::Unix(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            ServerStream::Unix(s) => Poll::Ready(s.shutdown()),
        }
    }
}
