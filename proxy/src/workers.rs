//! Worker threads, thread per core: each runs its own current-thread Tokio
//! runtime and accepts clients on its own `SO_REUSEPORT` listener (the
//! kernel spreads connections over them), so a client's session, the server
//! connections it checks out and the readiness of both sockets are driven
//! by one thread. Nothing is woken across threads on the way of a
//! transaction: no futex, no eventfd, no context switch beyond the ones
//! `epoll_wait` takes. Pools are shared; `pool.rs` prefers connections that
//! live on the checking-out thread and moves the others over
//! (`ServerConn::settle_here`), and `pool/places.rs` hands a freed place to
//! a waiter on the same thread first.

use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use router::config::General;
use tokio::net::{TcpListener, TcpSocket};
use tokio::runtime::Runtime;
use tracing::warn;

use crate::listener::unix::{UnixSocket, UnixSocketError};
use crate::state::State;

/// Listen backlog of each worker's listener (Linux caps it at somaxconn).
const BACKLOG: u32 = 1024;

/// The worker runtimes, each with its listener, before they run.
pub struct Workers {
    workers: Vec<(Runtime, TcpListener)>,
    addr: SocketAddr,
    /// The Unix socket, served by the first worker.
    unix: Option<UnixSocket>,
}

impl Workers {
    /// `count` runtimes (at least one) listening on `host:port` (port 0:
    /// one free port that all of them share).
    pub fn bind(count: usize, host: &str, port: u16) -> std::io::Result<Workers> {
        let mut addr = (host, port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| std::io::Error::other(format!("{host} resolves to no address")))?;
        let mut workers = Vec::with_capacity(count.max(1));
        for _ in 0..count.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let listener = {
                let _context = runtime.enter();
                listen(addr)?
            };
            addr = listener.local_addr()?;
            workers.push((runtime, listener));
        }
        Ok(Workers {
            workers,
            addr,
            unix: None,
        })
    }

    /// Also listen on the Unix socket `general` asks for (if any), for the
    /// port the workers listen on.
    pub fn bind_unix(&mut self, general: &General) -> Result<(), UnixSocketError> {
        self.unix = UnixSocket::bind(general, self.addr.port())?;
        Ok(())
    }

    /// The Unix socket's file, if there is one.
    pub fn unix_socket_path(&self) -> Option<&std::path::Path> {
        self.unix.as_ref().map(UnixSocket::path)
    }

    /// The address every worker listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Run `f` in the first worker's runtime (tasks it spawns, such as the
    /// pools' maintenance, run there).
    pub fn in_first<T>(&self, f: impl FnOnce() -> T) -> T {
        let _context = self.workers.first().map(|(runtime, _)| runtime.enter());
        f()
    }

    /// Run `future` to completion on the first worker's runtime (before
    /// [`Workers::run`]; tasks it spawns run there once serving starts).
    pub fn block_on_first<T>(&self, future: impl Future<Output = T>) -> Option<T> {
        self.workers
            .first()
            .map(|(runtime, _)| runtime.block_on(future))
    }

    /// Serve clients on every worker until `shutdown` completes (or the
    /// admin console's SHUTDOWN), drain them, then stop the workers (a
    /// session still running is dropped with its runtime). The first
    /// worker runs on this thread, with the metrics endpoint and whatever
    /// `shutdown` waits for (signals).
    pub fn run<F: Future<Output = ()>>(self, state: Arc<State>, shutdown: F) {
        for (runtime, _) in &self.workers {
            runtime.spawn(heartbeat());
        }
        let unix = self.unix;
        let mut workers = self.workers.into_iter().enumerate();
        let Some((_, (first, listener))) = workers.next() else {
            return;
        };
        let tls = match crate::listener::tls_acceptor(&state) {
            Ok(tls) => tls,
            Err(err) => {
                warn!(%err, "TLS is configured but unusable; not starting");
                return;
            }
        };
        // Before any worker accepts a client.
        first.block_on(crate::listener::read_placement(&state));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut threads = Vec::new();
        for (id, (runtime, listener)) in workers {
            let state = Arc::clone(&state);
            let tls = tls.clone();
            let mut stopped = stopped.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("pgshard-worker-{id}"))
                .spawn(move || {
                    crate::conn::worker::set(Some(id));
                    runtime.block_on(async move {
                        crate::listener::accept(listener, &state, tls, std::future::pending())
                            .await;
                        // Sessions keep running here while the first worker
                        // drains them.
                        let _ = stopped.wait_for(|s| *s).await;
                    });
                });
            match spawned {
                Ok(thread) => threads.push(thread),
                Err(err) => warn!(%err, worker = id, "cannot start a worker thread"),
            }
        }
        crate::conn::worker::set(Some(0));
        first.block_on(crate::listener::serve(listener, unix, state, tls, shutdown));
        stop.send_replace(true);
        for thread in threads {
            let _ = thread.join();
        }
        crate::conn::worker::set(None);
    }
}

/// A timer that fires every [`HEARTBEAT`] on each worker, and does
/// nothing else. Tokio's timer wakes its reactor up (a write to its
/// eventfd, and an `epoll_wait` that returns at once) when a timer is set
/// to expire before the reactor's next planned wake-up, and with no timer
/// at all every new timer is such a one: a statement under `query_timeout`
/// sets one, and so does each pool's sweeper of waits past
/// `checkout_timeout` (`pool/places.rs`). With the heartbeat the reactor
/// always plans to wake within a second, so such timers are set quietly.
async fn heartbeat() {
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
    }
}

const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(1);

/// A listener on `addr` that other sockets may share (`SO_REUSEPORT`).
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_share_one_port_and_know_who_they_are() {
        let workers = Workers::bind(3, "127.0.0.1", 0).unwrap();
        let addr = workers.local_addr();
        assert_ne!(addr.port(), 0);
        let ports: Vec<u16> = workers
            .workers
            .iter()
            .map(|(_, listener)| listener.local_addr().unwrap().port())
            .collect();
        assert_eq!(ports, vec![addr.port(); 3]);
        assert_eq!(crate::conn::worker::current(), None);
        // Each worker's runtime serves connections to the shared port.
        let served = std::thread::spawn(move || {
            let (runtime, listener) = workers.workers.into_iter().next().unwrap();
            runtime.block_on(async move {
                let client = tokio::net::TcpStream::connect(addr);
                let (accepted, connected) = tokio::join!(listener.accept(), client);
                accepted.is_ok() && connected.is_ok()
            })
        });
        // The other two listeners were dropped with `workers`: the kernel
        // sends every connection to the one left.
        assert!(served.join().unwrap());
    }
}
