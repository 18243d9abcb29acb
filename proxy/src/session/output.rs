//! What a session sends: the server's and the client's bytes are buffered
//! while a wake-up's messages are handled, then written, the server's
//! first; a write the socket takes whole at once builds no future.

use tokio::io::AsyncWriteExt;

use super::{End, Session};

/// A session's client socket: a stream, and a write that does not wait.
pub trait ClientIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin {
    /// Write what the socket takes now, without a future to poll:
    /// `WouldBlock` when it takes nothing now (or cannot say, as TLS).
    fn try_write_now(&mut self, bytes: &[u8]) -> std::io::Result<usize>;
}

impl<S: ClientIo> Session<S> {
    /// Send what is buffered: to the server first, so it starts working.
    pub(super) async fn flush(&mut self) -> Result<(), End> {
        if !self.to_server.is_empty() {
            if let Some(server) = self.attached.main_mut() {
                if server.conn.send(&self.to_server).await.is_err() {
                    self.lose_main();
                    return Err(End::server_lost());
                }
            }
            self.to_server.clear();
        }
        let status = self.status();
        self.plan.drain_local(&mut self.to_client, status);
        self.flush_client().await
    }

    pub(super) async fn flush_client(&mut self) -> Result<(), End> {
        if self.to_client.is_empty() {
            return Ok(());
        }
        // The usual case: the socket takes the whole reply at once, and no
        // write future is built or polled.
        let written = match self.client.try_write_now(&self.to_client) {
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(_) => {
                self.to_client.clear();
                return Err(End::ClientGone);
            }
        };
        let result = match self.to_client.get(written..) {
            Some(rest) if !rest.is_empty() => self.client.write_all(rest).await,
            _ => Ok(()),
        };
        self.to_client.clear();
        result.map_err(|_| End::ClientGone)
    }
}
