//! CancelRequest: clients hold pgshard's cancel keys, never a server's; a
//! request is checked against the client it names and forwarded to the
//! server running that client's query, if any.

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::debug;

use crate::auth::constant_time_eq;
use crate::protocol::startup::encode_cancel;
use crate::state::{CancelTarget, State};

/// How long delivering a cancel to a server may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// Handle a CancelRequest for pgshard key (`process_id`, `secret`).
pub async fn handle(state: &State, process_id: u32, secret: &[u8]) {
    let Some(client) = state.client(process_id) else {
        debug!(process_id, "cancel for an unknown client");
        return;
    };
    if !constant_time_eq(secret, &client.secret.to_be_bytes()) {
        debug!(process_id, "cancel with a wrong key");
        return;
    }
    // Held while the request is delivered: the session cannot hand its
    // server to another client in the meantime.
    let targets = client.cancel.lock().await;
    if targets.is_empty() {
        debug!(process_id, "cancel for an idle client");
    }
    // Every server running the client's statement (several in a fan-out).
    let sends: Vec<_> = targets.iter().map(send).collect();
    for sent in sends {
        sent.await;
    }
}

/// Deliver a CancelRequest to a server and wait for it to close the socket.
pub async fn send(target: &CancelTarget) {
    let deliver = async {
        let mut server = TcpStream::connect(target.addr).await?;
        let mut packet = BytesMut::with_capacity(16);
        encode_cancel(target.process_id, &target.secret_key, &mut packet);
        server.write_all(&packet).await?;
        let mut sink = [0u8; 1];
        let _ = server.read(&mut sink).await;
        Ok::<(), std::io::Error>(())
    };
    match tokio::time::timeout(CANCEL_TIMEOUT, deliver).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => debug!(%err, "cancel delivery failed"),
        Err(_) => debug!("cancel delivery timed out"),
    }
}
