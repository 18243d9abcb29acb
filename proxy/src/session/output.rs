//! What a session sends: the server's and the client's bytes are buffered
//! while a wake-up's messages are handled, then written, the server's
//! first. The `_now` forms write what the sockets take at once and build
//! no future (the usual case: a reply fits the socket's buffer); the async
//! forms finish what is left. And the session's last words: its servers
//! released, then its FATAL, if any, written within a bound.

use bytes::Buf;

use super::{End, Session};

/// How long a session that ends with a FATAL waits for the client to take
/// it (a client that stopped reading is given up after this).
const FATAL_WRITE: std::time::Duration = std::time::Duration::from_secs(2);

impl Session {
    /// The session is over (`end`): the servers go back or are closed
    /// first, so a client that stopped reading (KILLed with a large result
    /// unread) holds none while its FATAL waits; then the FATAL is written,
    /// given up after [`FATAL_WRITE`].
    pub(super) async fn end(&mut self, end: End) {
        let fatal = matches!(end, End::Fatal(_));
        if let End::Fatal(error) = &end {
            self.shared.metrics.error(error.code.as_bytes());
            self.client.discard_output();
            error.encode_fatal(self.client.out());
        }
        self.finish().await;
        if fatal {
            let _ = tokio::time::timeout(FATAL_WRITE, self.client.flush()).await;
        }
    }

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
        if !self.pipeline.queued().is_empty() {
            match self
                .attached
                .main_mut()
                .map(|s| s.conn.try_send(self.pipeline.queued()))
            {
                Some(Ok(n)) => self.pipeline.for_server().advance(n),
                Some(Err(_)) => {
                    self.lose_main();
                    return Err(End::server_lost());
                }
                None => self.pipeline.for_server().clear(),
            }
            if !self.pipeline.queued().is_empty() {
                return Ok(false);
            }
        }
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        Ok(self.client.flush_now()?)
    }

    /// What [`flush_now`](Self::flush_now) left.
    async fn flush_rest(&mut self) -> Result<(), End> {
        if !self.pipeline.queued().is_empty() {
            if let Some(server) = self.attached.main_mut() {
                if server.conn.send(self.pipeline.queued()).await.is_err() {
                    self.lose_main();
                    return Err(End::server_lost());
                }
            }
            self.pipeline.for_server().clear();
        }
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        Ok(self.client.flush().await?)
    }
}
