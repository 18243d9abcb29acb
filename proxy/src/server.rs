//! The accept loop: one task per client until shutdown is signalled.

use std::future::Future;
use std::sync::Arc;

use router::config::Config;
use tokio::net::TcpListener;
use tracing::{info, warn, Instrument};

use crate::passthrough;

/// Serve clients on `listener` until `shutdown` completes.
///
/// The listener is bound by the caller, so tests can pass `127.0.0.1:0`.
pub async fn run(listener: TcpListener, config: Arc<Config>, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "listening");
    }
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let config = Arc::clone(&config);
                    let span = tracing::info_span!("client", %peer);
                    tokio::spawn(passthrough::serve(stream, config).instrument(span));
                }
                // Typically EMFILE: keep serving the clients we have.
                Err(err) => warn!(%err, "accept failed"),
            },
            () = &mut shutdown => {
                info!("shutting down");
                return;
            }
        }
    }
}
