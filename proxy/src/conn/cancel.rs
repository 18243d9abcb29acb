//! Cancelling a server's query: the servers running a client's query
//! right now (its cancel targets, changed only while no cancel is being
//! delivered to them), and a CancelRequest sent to one on a connection of
//! its own. Clients hold pgshard's cancel keys, never a server's: the
//! listener checks a client's request against the key it names.

use std::sync::Mutex;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::debug;

use super::server::ServerStream;
pub use super::server::{CancelKey, CancelTarget};
use crate::lock::lock;
use crate::protocol::startup::encode_cancel;

/// How long delivering a cancel to a server may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// The servers running a client's query right now, if any (several in a
/// fan-out). A session changes them on every checkout and release, so
/// that is a lock and a check; while a CancelRequest is being delivered to
/// them, the session waits before changing them, so a late cancel can
/// never reach a server that already serves someone else.
#[derive(Debug, Default)]
pub struct CancelTargets {
    held: Mutex<Held>,
    delivered: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Held {
    targets: Vec<CancelTarget>,
    /// CancelRequests being delivered to `targets`.
    delivering: usize,
}

impl CancelTargets {
    /// Replace the targets (once no cancel is being delivered to them).
    pub async fn set(&self, targets: impl IntoIterator<Item = CancelTarget>) {
        let mut targets = Some(targets);
        self.when_idle(|held| {
            // Cleared and refilled: the list keeps its memory across
            // checkouts.
            held.clear();
            held.extend(targets.take().into_iter().flatten());
        })
        .await;
    }

    /// Replace the targets now, unless a cancel is being delivered to them
    /// (they come back then): [`set`](Self::set) without its future, for
    /// the session's hot path.
    pub fn try_set<I: IntoIterator<Item = CancelTarget>>(&self, targets: I) -> Result<(), I> {
        let mut held = lock(&self.held);
        if held.delivering > 0 {
            return Err(targets);
        }
        held.targets.clear();
        held.targets.extend(targets);
        Ok(())
    }

    /// The targets, leaving none (once no cancel is being delivered).
    pub async fn take(&self) -> Vec<CancelTarget> {
        let mut taken = Vec::new();
        self.when_idle(|held| std::mem::swap(&mut taken, held))
            .await;
        taken
    }

    /// Run `change` on the targets once no cancel is being delivered.
    async fn when_idle(&self, mut change: impl FnMut(&mut Vec<CancelTarget>)) {
        let mut try_change = || {
            let mut held = lock(&self.held);
            if held.delivering > 0 {
                return false;
            }
            change(&mut held.targets);
            true
        };
        loop {
            if try_change() {
                return;
            }
            let delivered = self.delivered.notified();
            if try_change() {
                return;
            }
            delivered.await;
        }
    }

    /// A copy of the targets.
    pub fn get(&self) -> Vec<CancelTarget> {
        lock(&self.held).targets.clone()
    }

    /// The targets, for a CancelRequest: they stay as they are until the
    /// delivery is dropped.
    pub fn deliver(&self) -> Delivery<'_> {
        let mut held = lock(&self.held);
        held.delivering += 1;
        Delivery {
            targets: held.targets.clone(),
            owner: self,
        }
    }
}

/// A CancelRequest being delivered (see [`CancelTargets::deliver`]).
pub struct Delivery<'a> {
    pub targets: Vec<CancelTarget>,
    owner: &'a CancelTargets,
}

impl Drop for Delivery<'_> {
    fn drop(&mut self) {
        let done = {
            let mut held = lock(&self.owner.held);
            held.delivering -= 1;
            held.delivering == 0
        };
        if done {
            self.owner.delivered.notify_waiters();
        }
    }
}

/// Deliver a CancelRequest to a server and wait for it to close the socket.
pub async fn send(target: &CancelTarget) {
    let deliver = async {
        let mut server = ServerStream::reach(&target.addr).await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn target(process_id: u32) -> CancelTarget {
        Arc::new(crate::conn::cancel::CancelKey {
            addr: crate::conn::server::ServerAddr::Tcp(([127, 0, 0, 1], 5432).into()),
            process_id,
            secret_key: bytes::Bytes::from_static(b"key!"),
        })
    }

    #[tokio::test]
    async fn targets_change_only_when_no_cancel_is_being_delivered() {
        let targets = Arc::new(CancelTargets::default());
        targets.set([target(1)]).await;
        let delivery = targets.deliver();
        assert_eq!(delivery.targets, vec![target(1)]);
        let change = tokio::spawn({
            let targets = Arc::clone(&targets);
            async move { targets.set([target(2)]).await }
        });
        tokio::task::yield_now().await;
        assert!(!change.is_finished());
        assert_eq!(targets.get(), vec![target(1)]);
        drop(delivery);
        change.await.unwrap();
        assert_eq!(targets.get(), vec![target(2)]);
        assert_eq!(targets.take().await, vec![target(2)]);
        assert!(targets.get().is_empty());
    }
}
