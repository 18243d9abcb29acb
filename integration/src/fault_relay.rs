//! A TCP relay on loopback between pgshard and one server, for fault tests:
//! it forwards bytes both ways until told to freeze, then holds every byte
//! (new connections are accepted and held too) without closing a socket, as
//! a network that stops delivering does; thawed, it forwards again. It runs
//! on a thread and runtime of its own, so sync and async tests alike can
//! use it, and stops (closing every socket) when dropped.

use std::net::SocketAddr;
use std::thread::JoinHandle;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

use crate::HarnessError;

/// A running relay to `upstream`.
#[derive(Debug)]
pub struct FaultRelay {
    port: u16,
    frozen: watch::Sender<bool>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FaultRelay {
    /// Relay a free loopback port to `upstream`.
    pub fn start(upstream: SocketAddr) -> Result<FaultRelay, HarnessError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |err| HarnessError::Io(what, err)
        };
        // Bound here with std, served on the relay's own thread and runtime
        // (this may run inside a test's runtime, which cannot block on
        // another).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(io("relay bind"))?;
        listener
            .set_nonblocking(true)
            .map_err(io("relay nonblocking"))?;
        let port = listener.local_addr().map_err(io("relay address"))?.port();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io("relay runtime"))?;
        let (frozen, watch) = watch::channel(false);
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = TcpListener::from_std(listener) else {
                    return;
                };
                tokio::select! {
                    () = accept(listener, upstream, watch) => {}
                    _ = stopped => {}
                }
            });
        });
        Ok(FaultRelay {
            port,
            frozen,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The port pgshard connects to instead of the server's.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stop forwarding (a black hole): nothing is delivered, nothing closed.
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Forward again, what was held first.
    pub fn thaw(&self) {
        self.frozen.send_replace(false);
    }
}

impl Drop for FaultRelay {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, frozen: watch::Receiver<bool>) {
    while let Ok((client, _)) = listener.accept().await {
        let frozen = frozen.clone();
        tokio::spawn(async move {
            let Ok(server) = TcpStream::connect(upstream).await else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            tokio::join!(
                pump(client_read, server_write, frozen.clone()),
                pump(server_read, client_write, frozen),
            );
        });
    }
}

/// Copy `from` to `to`, holding each chunk while the relay is frozen.
async fn pump(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    mut frozen: watch::Receiver<bool>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if frozen.wait_for(|frozen| !frozen).await.is_err() {
            break;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    // A black hole delivers no end of stream either.
    let _ = frozen.wait_for(|frozen| !frozen).await;
    let _ = to.shutdown().await;
}
