//! What a session sends: the server's and the client's bytes are buffered
//! while a wake-up's messages are handled, then written, the server's
//! first. The `_now` forms write what the sockets take at once and build
//! no future (the usual case: a reply fits the socket's buffer); the async
//! forms finish what is left.

use bytes::Buf;
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
        if !self.flush_now()? {
            self.flush_rest().await?;
        }
        Ok(())
    }

    /// [`flush`](Self::flush) as far as the sockets take it now; `false`
    /// when bytes are left for [`flush_rest`](Self::flush_rest).
    pub(super) fn flush_now(&mut self) -> Result<bool, End> {
        if !self.to_server.is_empty() {
            match self
                .attached
                .main_mut()
                .map(|s| s.conn.try_send(&self.to_server))
            {
                Some(Ok(n)) => self.to_server.advance(n),
                Some(Err(_)) => {
                    self.lose_main();
                    return Err(End::server_lost());
                }
                None => self.to_server.clear(),
            }
            if !self.to_server.is_empty() {
                return Ok(false);
            }
        }
        let status = self.status();
        self.plan.drain_local(&mut self.to_client, status);
        self.flush_client_now()
    }

    /// What [`flush_now`](Self::flush_now) left.
    async fn flush_rest(&mut self) -> Result<(), End> {
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
        if self.flush_client_now()? {
            return Ok(());
        }
        let result = self.client.write_all(&self.to_client).await;
        self.to_client.clear();
        result.map_err(|_| End::ClientGone)
    }

    /// What the client's socket takes of the client's buffer now; `false`
    /// when bytes are left.
    pub(super) fn flush_client_now(&mut self) -> Result<bool, End> {
        if self.to_client.is_empty() {
            return Ok(true);
        }
        match self.client.try_write_now(&self.to_client) {
            Ok(n) => self.to_client.advance(n),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {
                self.to_client.clear();
                return Err(End::ClientGone);
            }
        }
        Ok(self.to_client.is_empty())
    }
}
