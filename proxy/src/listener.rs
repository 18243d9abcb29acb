//! The accept loop: one task per client until shutdown, then a drain that
//! lets transactions in flight finish (up to `shutdown_timeout`). The
//! binary runs one accept loop per worker thread (`workers.rs`); tests run
//! one on their own runtime. A client's first moments, up to a running
//! session or the admin console, are `listener/arrival.rs`'s.

mod admission;
mod arrival;
mod login;
pub mod unix;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use router::config::Config;
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::conn::tls;
use crate::conn::tls::TlsAcceptor;
use crate::state::State;

/// Serve clients on `listener` with an in-memory config (no RELOAD from
/// files) until `shutdown` completes.
pub async fn run(listener: TcpListener, config: Arc<Config>, shutdown: impl Future<Output = ()>) {
    let state = State::new(config, None);
    run_with_state(listener, state, shutdown).await;
}

/// Serve clients on `listener` until `shutdown` completes or the admin
/// console says SHUTDOWN. The listener is bound by the caller, so tests can
/// pass `127.0.0.1:0`.
pub async fn run_with_state(
    listener: TcpListener,
    state: Arc<State>,
    shutdown: impl Future<Output = ()>,
) {
    match tls_acceptor(&state) {
        Ok(tls) => serve(listener, None, state, tls, shutdown).await,
        Err(err) => warn!(%err, "TLS is configured but unusable; not starting"),
    }
}

/// Where moves put logical shards, as the databases record it, read before
/// the first client is served (once; bounded: a database that does not
/// answer leaves the file's placement until the next poll). The workers
/// call it before any of them accepts.
pub(crate) async fn read_placement(state: &State) {
    if !state.moves.first_read() {
        return;
    }
    let bound = state.config().general.connect_timeout() * 2;
    let read = crate::reshard::overlay::first_read(state, &state.moves);
    if tokio::time::timeout(bound, read).await.is_err() {
        warn!("placement not read from the databases within {bound:?}; the next poll reads it");
    }
}

/// The client TLS acceptor, if TLS is configured; `Err` when it is
/// configured but unusable: refusing to start beats silently serving in
/// clear.
pub(crate) fn tls_acceptor(state: &State) -> Result<Option<TlsAcceptor>, tls::TlsError> {
    match state.config().general.tls() {
        Some((certificate, key)) => tls::acceptor(certificate, key).map(Some),
        None => Ok(None),
    }
}

/// The first (or only) accept loop: with the Unix socket's, the metrics
/// endpoint, and the drain at the end.
pub(crate) async fn serve(
    listener: TcpListener,
    unix: Option<unix::UnixSocket>,
    state: Arc<State>,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let config = state.config();
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, tls = tls.is_some(), "listening");
    }
    if let Some(port) = config.general.openmetrics_port {
        match TcpListener::bind((config.general.host.as_str(), port)).await {
            Ok(metrics) => {
                tokio::spawn(crate::openmetrics::serve(metrics, Arc::clone(&state)));
            }
            // Clients matter more than metrics: keep serving them.
            Err(err) => warn!(%err, port, "cannot listen for metrics (openmetrics_port)"),
        }
    }
    // Which unlisted tables are omnisharded, where the catalog says
    // (a no-op for clusters without column-only entries).
    tokio::spawn(crate::schema::run(Arc::clone(&state)));
    read_placement(&state).await;
    tokio::spawn(crate::reshard::run(
        state.shared(),
        Arc::clone(&state.moves),
    ));
    if config.general.two_phase_commit {
        let interval = config.general.two_phase_commit_recovery_interval();
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let two_phase = &state.two_phase;
            crate::execute::two_phase::recovery::run(
                &state.clusters,
                two_phase,
                &state.gate,
                interval,
            )
            .await
        });
    }
    // The Unix socket stops taking clients with the TCP listener (and its
    // file goes then); its clients drain with the others.
    let (stop_unix, unix_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(socket) = unix {
        let stopped = async move {
            let _ = unix_stopped.await;
        };
        tokio::spawn(unix::accept(socket, Arc::clone(&state), stopped));
    }
    accept(listener, &state, tls, shutdown).await;
    drop(stop_unix);
    drain(&state).await;
}

/// Accept clients, a task each on this runtime, until `shutdown` completes
/// or pgshard shuts down.
pub(crate) async fn accept(
    listener: TcpListener,
    state: &Arc<State>,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let mut admin_shutdown = state.gate.shutdown.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // The login fills in who the client is.
                    let span = tracing::info_span!(
                        "client",
                        %peer,
                        user = tracing::field::Empty,
                        database = tracing::field::Empty,
                        application_name = tracing::field::Empty,
                    );
                    tokio::spawn(arrival::serve(stream, Arc::clone(state), tls.clone(), span));
                }
                // Typically EMFILE: keep serving the clients we have.
                Err(err) => warn!(%err, "accept failed"),
            },
            () = &mut shutdown => break,
            _ = admin_shutdown.wait_for(|s| *s) => break,
        }
    }
}
/// Stop taking new work and wait for clients to finish their transactions.
async fn drain(state: &State) {
    state.shut_down();
    let timeout = state.config().general.shutdown_timeout();
    let deadline = Instant::now() + timeout;
    info!(
        clients = state.client_count(),
        ?timeout,
        "shutting down: draining clients"
    );
    while state.client_count() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = state.client_count();
    if left > 0 {
        warn!(
            left,
            "shutdown_timeout reached; closing the remaining clients"
        );
    }
    for pool in state.all_pools() {
        pool.close_idle();
    }
    info!("shut down");
}
