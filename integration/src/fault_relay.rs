//! A TCP relay on loopback between pgshard and one server, for fault tests:
//! it forwards bytes both ways until told to inject a [`Fault`] (refuse new
//! connections, reset them, cut a reply in the middle of a message, stop
//! forwarding without closing a socket, add latency, or slow one direction
//! to a trickle), and forwards normally again once healed. It runs on a
//! thread and runtime of its own, so sync and async tests alike can use it,
//! and stops (closing every socket) when dropped.

use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::HarnessError;

/// Which way bytes flow through the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From pgshard to the server (queries).
    ToServer,
    /// From the server to pgshard (replies).
    ToClient,
}

/// What the relay does wrong until healed. One at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// New connections are refused (the port is closed: ECONNREFUSED);
    /// connections already open forward on.
    Refuse,
    /// Every open connection is reset (RST) at once, and every new one as
    /// soon as it is accepted.
    Reset,
    /// The next reply on each connection is cut in the middle of a message:
    /// part of it is delivered, then both sides are closed.
    CutMidMessage,
    /// A black hole: nothing is delivered, nothing closed (new connections
    /// are accepted and held too).
    BlackHole,
    /// Every chunk is delivered this much later, both ways.
    Latency(Duration),
    /// One direction is slowed to this many bytes a second.
    Throttle {
        direction: Direction,
        bytes_per_second: u64,
    },
}

/// The relay's current fault, shared by its tasks.
type Faults = watch::Receiver<Option<Fault>>;

/// A running relay to `upstream`.
#[derive(Debug)]
pub struct FaultRelay {
    port: u16,
    fault: watch::Sender<Option<Fault>>,
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
        let (fault, faults) = watch::channel(None);
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = TcpListener::from_std(listener) else {
                    return;
                };
                tokio::select! {
                    () = accept(listener, upstream, faults) => {}
                    _ = stopped => {}
                }
            });
        });
        Ok(FaultRelay {
            port,
            fault,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The port pgshard connects to instead of the server's.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Start misbehaving (replacing any fault injected before).
    pub fn inject(&self, fault: Fault) {
        self.fault.send_replace(Some(fault));
    }

    /// Forward normally again (what a black hole held is delivered first).
    pub fn heal(&self) {
        self.fault.send_replace(None);
    }

    /// Stop forwarding (a black hole): nothing is delivered, nothing closed.
    pub fn freeze(&self) {
        self.inject(Fault::BlackHole);
    }

    /// Forward again, what was held first.
    pub fn thaw(&self) {
        self.heal();
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

fn is(fault: Fault) -> impl Fn(&Option<Fault>) -> bool {
    move |current| *current == Some(fault)
}

/// Accept and relay connections; while refusing, the port is closed.
async fn accept(mut listener: TcpListener, upstream: SocketAddr, mut faults: Faults) {
    loop {
        let refusing = async { faults.wait_for(is(Fault::Refuse)).await.map(|_| ()) };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            refusing = refusing => {
                let Ok(addr) = listener.local_addr() else { return };
                drop(listener);
                let healed = faults.wait_for(|f| *f != Some(Fault::Refuse)).await.map(|_| ());
                match refusing.and(healed).map(|()| rebind(addr)) {
                    Ok(Ok(again)) => listener = again,
                    _ => return,
                }
                continue;
            }
        };
        let Ok((client, _)) = accepted else { return };
        let faults = faults.clone();
        tokio::spawn(async move {
            if *faults.borrow() == Some(Fault::Reset) {
                let _ = client.set_zero_linger();
                return;
            }
            let Ok(server) = TcpStream::connect(upstream).await else {
                return;
            };
            relay(client, server, faults).await;
        });
    }
}

/// Listen on `addr` again after refusing.
fn rebind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Relay one connection until either side closes, a cut, or a reset.
async fn relay(mut client: TcpStream, mut server: TcpStream, faults: Faults) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cut, mut was_cut) = watch::channel(false);
    let reset = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let up = pump(
            client_read,
            server_write,
            Direction::ToServer,
            (faults.clone(), &cut),
        );
        let down = pump(
            server_read,
            client_write,
            Direction::ToClient,
            (faults.clone(), &cut),
        );
        let mut faults = faults;
        tokio::select! {
            _ = async { tokio::join!(up, down) } => false,
            // A cut in one direction closes the other too.
            _ = was_cut.wait_for(|cut| *cut) => false,
            _ = faults.wait_for(is(Fault::Reset)) => true,
        }
    };
    if reset {
        let _ = client.set_zero_linger();
        let _ = server.set_zero_linger();
    }
}

/// A chunk read at `at`, due once the relay's latency has passed.
struct Chunk {
    at: Instant,
    bytes: Vec<u8>,
}

/// Copy `from` to `to`, one chunk at a time, as the current fault allows.
async fn pump(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    direction: Direction,
    (faults, cut): (Faults, &watch::Sender<bool>),
) {
    let (chunks, mut due) = mpsc::unbounded_channel::<Chunk>();
    let read = async move {
        let mut buffer = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = from.read(&mut buffer).await {
            let chunk = Chunk {
                at: Instant::now(),
                bytes: buffer[..n].to_vec(),
            };
            if chunks.send(chunk).is_err() {
                break;
            }
        }
        // Dropping `chunks` ends the writer once it has delivered the rest.
        drop(chunks);
        std::future::pending::<()>().await
    };
    let write = async move {
        let mut faults = faults;
        while let Some(chunk) = due.recv().await {
            match deliver(&mut to, chunk, direction, &mut faults).await {
                Delivered::All => {}
                Delivered::Cut => {
                    cut.send_replace(true);
                    return;
                }
                Delivered::Failed => return,
            }
        }
        // A black hole delivers no end of stream either.
        let _ = faults.wait_for(|f| *f != Some(Fault::BlackHole)).await;
        let _ = to.shutdown().await;
    };
    // The writer ends the pump (the reader, done, waits for it).
    tokio::select! {
        () = read => {}
        () = write => {}
    }
}

/// How a chunk's delivery ended.
enum Delivered {
    All,
    /// Part of it went out, then the connection is to be closed.
    Cut,
    /// The other side is gone.
    Failed,
}

/// Deliver one chunk as the current fault allows.
async fn deliver(
    to: &mut (impl AsyncWriteExt + Unpin),
    chunk: Chunk,
    direction: Direction,
    faults: &mut Faults,
) -> Delivered {
    if faults
        .wait_for(|f| *f != Some(Fault::BlackHole))
        .await
        .is_err()
    {
        return Delivered::Failed;
    }
    let current = *faults.borrow();
    match current {
        Some(Fault::Latency(delay)) => tokio::time::sleep_until(chunk.at + delay).await,
        Some(Fault::CutMidMessage) if direction == Direction::ToClient => {
            // A message has at least its tag and 4 length bytes: half a
            // chunk that starts at a message ends inside one.
            let part = (chunk.bytes.len() / 2).max(1);
            let _ = to.write_all(&chunk.bytes[..part]).await;
            let _ = to.flush().await;
            return Delivered::Cut;
        }
        Some(Fault::Throttle {
            direction: slow,
            bytes_per_second,
        }) if slow == direction => {
            return trickle(to, &chunk.bytes, bytes_per_second.max(1), faults).await;
        }
        _ => {}
    }
    match to.write_all(&chunk.bytes).await {
        Ok(()) => Delivered::All,
        Err(_) => Delivered::Failed,
    }
}

/// Write `bytes` at about `rate` bytes a second, in slices of a twentieth
/// of a second, at full speed again as soon as the throttle is healed.
async fn trickle(
    to: &mut (impl AsyncWriteExt + Unpin),
    mut bytes: &[u8],
    rate: u64,
    faults: &Faults,
) -> Delivered {
    let slice = usize::try_from(rate / 20).unwrap_or(usize::MAX).max(1);
    while !bytes.is_empty() {
        let throttled = matches!(*faults.borrow(), Some(Fault::Throttle { .. }));
        let n = if throttled {
            slice.min(bytes.len())
        } else {
            bytes.len()
        };
        if to.write_all(&bytes[..n]).await.is_err() {
            return Delivered::Failed;
        }
        bytes = &bytes[n..];
        if throttled && !bytes.is_empty() {
            let n = u64::try_from(n).unwrap_or(u64::MAX);
            tokio::time::sleep(Duration::from_micros(n.saturating_mul(1_000_000) / rate)).await;
        }
    }
    Delivered::All
}

#[cfg(test)]
mod tests;
