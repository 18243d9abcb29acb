//! A new client connection, from the first byte to a running session: TLS
//! or not, CancelRequest, protocol version negotiation, connection limits,
//! authentication, then the admin console or a pooled session.

use std::sync::atomic::AtomicU8;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::BytesMut;
use router::config::{AuthType, Config, PoolerMode};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::Instant;
use tracing::{debug, info, Instrument};

use super::admission;
use super::login::{authenticate, in_time, login_timed_out, refuse};
use crate::admin;
use crate::conn::cancel::CancelTargets;
use crate::conn::client::{ClientConn, Credentials, First};
use crate::conn::settings::ParamSet;
use crate::conn::tls::TlsAcceptor;
use crate::interrupt::Interrupt;
use crate::pool::{LoginReport, Pool, PoolError, Pooled};
use crate::protocol::backend::TransactionStatus;
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::protocol::startup::Startup;
use crate::session::{ClientAddr, ClientInfo, CLIENT_IDLE};
use crate::session::{Session, Start};
use crate::state::State;

/// Serve one accepted TCP connection to its end. Errors end this client
/// only.
///
/// The login runs inside the client's `span` (peer, then user, database and
/// application_name); the session that follows does not enter it on every
/// wake-up, as `Instrumented` would (the subscriber's enter and exit cost
/// about 5% of a proxied transaction's user time): its log lines name the
/// span as their parent instead.
pub async fn serve(
    stream: TcpStream,
    state: Arc<State>,
    tls: Option<TlsAcceptor>,
    span: tracing::Span,
) {
    let _ = stream.set_nodelay(true);
    let peer = Peer {
        addr: stream
            .peer_addr()
            .map_or(ClientAddr::Unknown, ClientAddr::Tcp),
        fd: Some(std::os::fd::AsRawFd::as_raw_fd(&stream)),
    };
    serve_conn(ClientConn::new(stream), peer, state, tls, span).await;
}

/// Serve one client of the Unix socket for `port` to its end. An
/// SSLRequest there is answered `N`, as Postgres does.
pub async fn serve_unix(stream: UnixStream, port: u16, state: Arc<State>, span: tracing::Span) {
    let peer = Peer {
        addr: ClientAddr::Unix { port },
        fd: Some(std::os::fd::AsRawFd::as_raw_fd(&stream)),
    };
    serve_conn(ClientConn::unix(stream), peer, state, None, span).await;
}

async fn serve_conn(
    client: ClientConn,
    peer: Peer,
    state: Arc<State>,
    tls: Option<TlsAcceptor>,
    span: tracing::Span,
) {
    // Boxed: the login's state is large and done with once the session
    // runs (each client's task holds only the larger of the two).
    let session =
        Box::pin(arrive(client, peer, Arc::clone(&state), tls).instrument(span.clone())).await;
    if let Some(session) = session {
        let process_id = session.process_id();
        session.run(span).await;
        state.unregister_client(process_id);
    }
}

/// From the first byte to a logged-in session (`None`: the client was
/// turned away, went to the admin console, or left). The startup packet,
/// TLS and authentication must be over within `client_login_timeout`.
async fn arrive(
    client: ClientConn,
    peer: Peer,
    state: Arc<State>,
    tls: Option<TlsAcceptor>,
) -> Option<Box<Session>> {
    let deadline = state
        .config()
        .general
        .client_login_timeout()
        .map(|timeout| Instant::now() + timeout);
    let first = read_startup(client, &state, tls.as_ref());
    let Some(first) = in_time(deadline, first).await else {
        // Nothing to tell a client that has not finished its first packet
        // (Postgres closes too).
        info!("client_login_timeout: no startup packet in time, connection closed");
        return None;
    };
    let (client, startup) = first?;
    start_session(client, startup, state, peer, deadline).await
}

/// Read the startup packet, answering SSLRequest/GSSENCRequest and
/// upgrading to TLS on the way (`None`: a CancelRequest, a refused packet,
/// or the client left).
async fn read_startup(
    mut client: ClientConn,
    state: &State,
    tls: Option<&TlsAcceptor>,
) -> Option<(ClientConn, Startup)> {
    loop {
        match client.read_first(tls.is_some()).await {
            Ok(First::Startup(startup)) => return Some((client, startup)),
            Ok(First::Cancel { process_id, secret }) => {
                cancel(state, process_id, &secret).await;
                return None;
            }
            Ok(First::Tls) => match client.into_tls(tls?).await {
                Ok(upgraded) => client = upgraded,
                Err(err) => {
                    debug!(%err, "TLS handshake failed");
                    return None;
                }
            },
            Ok(First::Gone) => return None,
            Err(error) => {
                debug!(%error, "startup refused");
                let message = error.to_string();
                client.fatal(sqlstate::PROTOCOL_VIOLATION, &message).await;
                return None;
            }
        }
    }
}

/// Take a client from its startup packet to the admin console or a pooled
/// session, or turn it away with an ErrorResponse.
async fn start_session(
    mut client: ClientConn,
    startup: Startup,
    state: Arc<State>,
    peer: Peer,
    deadline: Option<Instant>,
) -> Option<Box<Session>> {
    let config = state.config();
    let arrival = Arrival::new(startup, peer);
    arrival.record_in_span();
    if !negotiate_protocol_version(&mut client, &arrival.startup).await {
        return None;
    }
    if let Some((code, message)) = admission::turned_away(&state, &config) {
        client.fatal(code, message).await;
        return None;
    }
    let plain_tcp = client.is_plain_tcp();
    if let Some((code, message)) = admission::refusal(&arrival.startup, &config.general, plain_tcp)
    {
        info!(%code, %message, "startup refused");
        client.fatal(code, &message).await;
        return None;
    }
    if arrival.database == config.admin.name {
        serve_admin_console(client, state, &config, &arrival, deadline).await;
        None
    } else {
        start_pooled_session(client, state, &config, &arrival, deadline).await
    }
}

/// Where a client connected from: its address and socket.
#[derive(Debug, Clone, Copy)]
struct Peer {
    addr: ClientAddr,
    fd: Option<i32>,
}

/// Who a new client says it is: its startup packet, the user and database
/// that names (the database defaults to the user, as in Postgres), and
/// where it connected from.
struct Arrival {
    startup: Startup,
    user: String,
    database: String,
    peer: Peer,
}

impl Arrival {
    fn new(startup: Startup, peer: Peer) -> Arrival {
        let user = startup.param("user").unwrap_or_default().to_owned();
        let database = startup.param("database").unwrap_or(&user).to_owned();
        Arrival {
            startup,
            user,
            database,
            peer,
        }
    }

    /// Who the client is, in its session span (opened at accept with its
    /// address): every line it logs carries them.
    fn record_in_span(&self) {
        let span = tracing::Span::current();
        span.record("user", self.user.as_str());
        span.record("database", self.database.as_str());
        if let Some(name) = self.startup.param("application_name") {
            span.record("application_name", name);
        }
    }

    /// The client's entry for the registry, which assigns its process id
    /// and cancel secret.
    fn client_info(&self) -> ClientInfo {
        ClientInfo {
            process_id: 0,
            secret: 0,
            user: self.user.clone(),
            database: self.database.clone(),
            application_name: self
                .startup
                .param("application_name")
                .unwrap_or_default()
                .to_owned(),
            addr: self.peer.addr,
            connected_at: SystemTime::now(),
            state: AtomicU8::new(CLIENT_IDLE),
            cancel: CancelTargets::default(),
            fd: self.peer.fd,
            interrupt: Interrupt::default(),
        }
    }
}

/// A newer 3.x minor or protocol options: say what we speak (3.0).
/// `false` if the client is gone.
async fn negotiate_protocol_version(client: &mut ClientConn, startup: &Startup) -> bool {
    let unknown: Vec<&str> = startup
        .params
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| k.starts_with("_pq_."))
        .collect();
    if startup.minor > 0 || !unknown.is_empty() {
        messages::negotiate_protocol_version(client.out(), 0, &unknown);
        if client.flush().await.is_err() {
            return false;
        }
    }
    true
}

/// Authenticate a client of the admin database (only `[admin]`'s user has a
/// password, and `trust` means SCRAM there) and serve the console.
async fn serve_admin_console(
    mut client: ClientConn,
    state: Arc<State>,
    config: &Config,
    arrival: &Arrival,
    deadline: Option<Instant>,
) {
    let user = &arrival.user;
    let password = (*user == config.admin.user)
        .then_some(config.admin.password.as_deref())
        .flatten();
    let method = match config.general.auth_type {
        AuthType::Trust => AuthType::Scram,
        other => other,
    };
    let credentials = Credentials {
        method,
        user,
        password,
    };
    let checked = in_time(deadline, authenticate(&mut client, credentials, &state)).await;
    match checked {
        None => return login_timed_out(client).await,
        Some(Err(failure)) => return refuse(&mut client, user, failure).await,
        Some(Ok(())) => {}
    }
    let info = state.register_client(arrival.client_info());
    info!(%user, "admin console login");
    admin::serve(client, Arc::clone(&state), Arc::clone(&info)).await;
    state.unregister_client(info.process_id);
}

/// Authenticate a client of a pooled database, tell it the server's
/// parameters and its cancel key, and run its session.
async fn start_pooled_session(
    mut client: ClientConn,
    state: Arc<State>,
    config: &Config,
    arrival: &Arrival,
    deadline: Option<Instant>,
) -> Option<Box<Session>> {
    let (user, database) = (&arrival.user, &arrival.database);
    if !config.clusters.contains_key(database) {
        let message = format!("database \"{database}\" does not exist");
        client.fatal(sqlstate::INVALID_CATALOG_NAME, &message).await;
        return None;
    }
    let login = super::login::pooled(&mut client, &state, config, user, database);
    match in_time(deadline, login).await {
        None => {
            login_timed_out(client).await;
            return None;
        }
        Some(false) => return None,
        Some(true) => {}
    }
    let defaults = match ParamSet::from_startup(&arrival.startup.params) {
        Ok(defaults) => defaults,
        Err(error) => {
            let message = error.to_string();
            client.fatal(sqlstate::PROTOCOL_VIOLATION, &message).await;
            return None;
        }
    };
    let Some(pools) = state.pools(database, user) else {
        client.deny(user).await;
        return None;
    };
    let pool = pools.first().map(|shard| Arc::clone(shard.preferred()))?;
    let defaults = pool.shared_settings(defaults);
    let mode = pool.settings.pooler_mode;
    let (report, server) = login_report(&mut client, &state, &pool, &defaults).await?;
    let info = state.register_client(arrival.client_info());
    login_ok(client.out(), &report, &info);
    let server = match (mode, server) {
        (PoolerMode::Transaction, Some(server)) => {
            pool.checkin(server);
            None
        }
        (_, server) => server,
    };
    if client.flush().await.is_err() {
        state.unregister_client(info.process_id);
        return None;
    }
    client.accept_messages_up_to(config.general.max_message_size);
    info!(%user, %database, mode = mode.as_str(), "client logged in");
    Some(Box::new(Session::new(
        client,
        Start {
            shared: state.shared(),
            info,
            pools,
            mode,
            defaults,
            prepared_limit: config.general.prepared_statements_limit,
            server,
        },
    )))
}

/// The parameters to report to the client (ParameterStatus): what a server
/// reports with the client's settings applied. The first login with a given
/// set of settings (and every login in session mode) asks a server, which
/// also validates them, and hands over the server it checked out. `None`
/// if the client is gone or was refused (and told so).
async fn login_report(
    client: &mut ClientConn,
    state: &State,
    pool: &Arc<Pool>,
    defaults: &ParamSet,
) -> Option<(LoginReport, Option<Pooled>)> {
    match pool.login_report(defaults) {
        Some(report) if pool.settings.pooler_mode == PoolerMode::Transaction => {
            Some((report, None))
        }
        _ => {
            // Like every other use of a server, a login waits out PAUSE
            // (the database may be restarting behind it). A client that
            // leaves meanwhile ends the wait, holding nothing.
            let resumed = state.gate.wait_resumed(&pool.cluster);
            let Ok(resumed) = client.watch(resumed).await else {
                return None;
            };
            if !resumed {
                let message = "pgshard is shutting down";
                client.fatal(sqlstate::CANNOT_CONNECT_NOW, message).await;
                return None;
            }
            let Ok(login) = client.watch(login_on_server(pool, defaults)).await else {
                return None;
            };
            match login {
                Ok((checked_out, report)) => Some((report, Some(checked_out))),
                Err((code, message)) => {
                    client.fatal(&code, &message).await;
                    None
                }
            }
        }
    }
}

/// AuthenticationOk, the reported parameters, the client's cancel key and
/// ReadyForQuery: what a client reads once it is logged in.
fn login_ok(out: &mut BytesMut, report: &LoginReport, info: &ClientInfo) {
    messages::authentication(out, 0, &[]);
    for (name, value) in report.iter() {
        messages::parameter_status(out, name, value);
    }
    messages::backend_key_data(out, info.process_id, info.secret);
    messages::ready_for_query(out, TransactionStatus::Idle);
}

/// Check a server out and apply the client's startup settings on it.
async fn login_on_server(
    pool: &Arc<Pool>,
    defaults: &ParamSet,
) -> Result<(Pooled, Arc<Vec<(String, String)>>), (std::borrow::Cow<'static, str>, String)> {
    let mut server = match pool.checkout().await {
        Ok(server) => server,
        Err(err) => {
            let error = err.client_error(&pool.cluster, pool.shard);
            return Err((error.code, error.message));
        }
    };
    if let Some(sql) = defaults.sync_sql(&server.conn.applied) {
        match server.conn.run(&sql).await {
            Ok(Ok(())) => server.conn.applied = defaults.clone(),
            Ok(Err(refusal)) => {
                // e.g. an unknown setting in the startup packet: refused
                // with the server's message, as Postgres would.
                server.conn.dirty = true;
                pool.checkin(server);
                return Err((sqlstate::INVALID_PARAMETER_VALUE.into(), refusal.0));
            }
            Err(err) => {
                let error = PoolError::from(err).client_error(&pool.cluster, pool.shard);
                return Err((error.code, error.message));
            }
        }
    }
    let report = Arc::new(server.conn.params.clone());
    pool.remember_login_report(defaults.clone(), server.conn.params.clone());
    Ok((server, report))
}

/// Handle a CancelRequest for pgshard key (`process_id`, `secret`): the
/// client's query is cancelled on every server running it.
async fn cancel(state: &State, process_id: u32, secret: &[u8]) {
    let Some(client) = state.client(process_id) else {
        debug!(process_id, "cancel for an unknown client");
        return;
    };
    if !crate::auth::constant_time_eq(secret, &client.secret.to_be_bytes()) {
        debug!(process_id, "cancel with a wrong key");
        return;
    }
    // Held while the request is delivered: the session cannot hand its
    // server to another client in the meantime.
    let delivery = client.cancel.deliver();
    if delivery.targets.is_empty() {
        debug!(process_id, "cancel for an idle client");
    }
    // Every server running the client's statement (several in a fan-out).
    let sends: Vec<_> = delivery
        .targets
        .iter()
        .map(crate::conn::cancel::send)
        .collect();
    for sent in sends {
        sent.await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use router::config::Config;

    use crate::state::State;

    /// Every client's task is `serve`'s future, idle clients' too: it
    /// stays small because the login and the session's large, rarer steps
    /// (fan-outs, cursors, COPY, moves...) are boxed where they are
    /// awaited. It was 12.6 KiB before they were.
    #[tokio::test]
    async fn a_clients_task_stays_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let config = Config::from_toml(
            "[[databases]]\nname = \"db\"\nhost = \"127.0.0.1\"\n",
            "[[users]]\nname = \"u\"\ndatabase = \"db\"\npassword = \"p\"\n",
        )
        .unwrap();
        let state = State::new(Arc::new(config), None);
        let task = super::serve(stream, state, None, tracing::Span::none());
        let size = std::mem::size_of_val(&task);
        assert!(size <= 5 * 1024, "a client's task is {size} bytes");
    }
}
