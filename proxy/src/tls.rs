//! TLS for client connections (rustls), when `tls_certificate` and
//! `tls_private_key` are configured, and the stream type sessions run on.

use std::io::BufReader;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::server::TlsStream;

pub use tokio_rustls::TlsAcceptor;

/// Load a certificate chain and private key (PEM) into an acceptor.
pub fn acceptor(certificate: &Path, private_key: &Path) -> Result<TlsAcceptor, String> {
    let open = |path: &Path| {
        std::fs::File::open(path)
            .map(BufReader::new)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let certs = rustls_pemfile::certs(&mut open(certificate)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", certificate.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate found", certificate.display()));
    }
    let key = rustls_pemfile::private_key(&mut open(private_key)?)
        .map_err(|e| format!("{}: {e}", private_key.display()))?
        .ok_or_else(|| format!("{}: no private key found", private_key.display()))?;
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate/key: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A client connection, in clear or encrypted.
#[derive(Debug)]
pub enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl crate::session::ClientIo for ClientStream {
    fn try_write_now(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            ClientStream::Plain(s) => s.try_write(bytes),
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
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_flush(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
