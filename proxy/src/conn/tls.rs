//! TLS for client connections (rustls), when `tls_certificate` and
//! `tls_private_key` are configured, and the client's stream: plain TCP, or
//! TLS over it.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::rustls;
use tokio_rustls::server::TlsStream;

pub use tokio_rustls::TlsAcceptor;

/// Load a certificate chain and private key (PEM) into an acceptor.
pub fn acceptor(certificate: &Path, private_key: &Path) -> Result<TlsAcceptor, TlsError> {
    let open = |path: &Path| {
        std::fs::File::open(path)
            .map(BufReader::new)
            .map_err(|source| TlsError::Read(path.to_owned(), source))
    };
    let certs = rustls_pemfile::certs(&mut open(certificate)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem(certificate.to_owned(), source))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(certificate.to_owned()));
    }
    let key = rustls_pemfile::private_key(&mut open(private_key)?)
        .map_err(|source| TlsError::Pem(private_key.to_owned(), source))?
        .ok_or_else(|| TlsError::NoKey(private_key.to_owned()))?;
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(TlsError::Rustls)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Why the configured certificate and key cannot serve TLS.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}", path = .0.display(), source = .1)]
    Read(PathBuf, std::io::Error),
    #[error("{path}: {source}", path = .0.display(), source = .1)]
    Pem(PathBuf, std::io::Error),
    #[error("{path}: no certificate found", path = .0.display())]
    NoCertificate(PathBuf),
    #[error("{path}: no private key found", path = .0.display())]
    NoKey(PathBuf),
    #[error("TLS certificate/key: {0}")]
    Rustls(rustls::Error),
}

/// A client connection, in clear or encrypted.
#[derive(Debug)]
pub enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    /// A local client on the Unix socket (`unix_socket_dir`); never TLS, as
    /// in Postgres and PgBouncer.
    Unix(UnixStream),
}

impl ClientStream {
    /// Wait until a read would find something (or the end); at once for
    /// TLS, whose stream may hold decrypted bytes already.
    pub async fn readable(&self) -> std::io::Result<()> {
        match self {
            ClientStream::Plain(s) => s.readable().await,
            ClientStream::Unix(s) => s.readable().await,
            ClientStream::Tls(_) => Ok(()),
        }
    }

    /// Write what the socket takes now, without a future to poll:
    /// `WouldBlock` when it takes nothing now (or cannot say, as TLS).
    pub fn try_write_now(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.try_write(bytes),
            ClientStream::Unix(s) => s.try_write(bytes),
            // rustls buffers and encrypts: the write future does it.
            ClientStream::Tls(_) => Err(std::io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl AsyncRead for ClientStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ClientStream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            ClientStream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_flush(cx),
            ClientStream::Unix(s) => Pin::new(s).poll_flush(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            ClientStream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
