//! A new client connection, from the first byte to a running session: TLS
//! or not, CancelRequest, protocol version negotiation, connection limits,
//! authentication, then the admin console or a pooled session.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU8;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::BytesMut;
use router::config::{AuthType, PoolerMode};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::{debug, info};

use crate::admin;
use crate::errors::ClientError;
use crate::pool::{Pool, Pooled};
use crate::protocol::backend::sqlstate;
use crate::protocol::messages;
use crate::protocol::startup::Startup;
use crate::session::login::{self, AuthFailure, First};
use crate::session::params::ParamSet;
use crate::session::watch_client;
use crate::session::{Session, Start};
use crate::state::{ClientInfo, State, CLIENT_IDLE};
use crate::tls::{ClientStream, TlsAcceptor};

/// Serve one accepted connection to its end. Errors end this client only.
pub async fn serve(stream: TcpStream, state: Arc<State>, tls: Option<TlsAcceptor>) {
    let _ = stream.set_nodelay(true);
    let peer = stream.peer_addr().ok();
    let mut client = ClientStream::Plain(stream);
    let mut buf = BytesMut::with_capacity(1024);
    let startup = loop {
        match login::read_first(&mut client, &mut buf, tls.is_some()).await {
            Ok(First::Startup(startup)) => break startup,
            Ok(First::Cancel { process_id, secret }) => {
                crate::cancel::handle(&state, process_id, &secret).await;
                return;
            }
            Ok(First::Tls) => {
                let (Some(acceptor), ClientStream::Plain(plain)) = (&tls, client) else {
                    return;
                };
                match acceptor.accept(plain).await {
                    Ok(stream) => client = ClientStream::Tls(Box::new(stream)),
                    Err(err) => {
                        debug!(%err, "TLS handshake failed");
                        return;
                    }
                }
            }
            Ok(First::Gone) => return,
            Err(message) => {
                debug!(%message, "startup refused");
                login::fatal(&mut client, sqlstate::PROTOCOL_VIOLATION, &message).await;
                return;
            }
        }
    };
    start_session(client, buf, startup, state, peer).await;
}

async fn start_session<S: AsyncRead + AsyncWrite + Unpin>(
    mut client: S,
    mut buf: BytesMut,
    startup: Startup,
    state: Arc<State>,
    peer: Option<SocketAddr>,
) {
    let config = state.config();
    let user = startup.param("user").unwrap_or_default().to_owned();
    let database = startup.param("database").unwrap_or(&user).to_owned();
    // A newer 3.x minor or protocol options: say what we speak (3.0).
    let unknown: Vec<&str> = startup
        .params
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| k.starts_with("_pq_."))
        .collect();
    if startup.minor > 0 || !unknown.is_empty() {
        let mut out = BytesMut::new();
        messages::negotiate_protocol_version(&mut out, 0, &unknown);
        if client.write_all(&out).await.is_err() {
            return;
        }
    }
    if state.is_shutting_down() {
        login::fatal(
            &mut client,
            sqlstate::CANNOT_CONNECT_NOW,
            "pgshard is shutting down",
        )
        .await;
        return;
    }
    if state.client_count() >= config.general.max_client_conn {
        login::fatal(
            &mut client,
            sqlstate::TOO_MANY_CONNECTIONS,
            "sorry, too many clients already (max_client_conn)",
        )
        .await;
        return;
    }
    if database == config.admin.name {
        let password = (user == config.admin.user)
            .then_some(config.admin.password.as_deref())
            .flatten();
        let method = match config.general.auth_type {
            AuthType::Trust => AuthType::Scram,
            other => other,
        };
        match login::authenticate(&mut client, &mut buf, &state, method, &user, password).await {
            Ok(()) => {}
            Err(failure) => return refuse(&mut client, &user, failure).await,
        }
        let info = state.register_client(client_info(&user, &database, &startup, peer));
        info!(%user, "admin console login");
        admin::serve(client, buf, Arc::clone(&state), Arc::clone(&info)).await;
        state.unregister_client(info.process_id);
        return;
    }
    if !config.clusters.contains_key(&database) {
        let message = format!("database \"{database}\" does not exist");
        login::fatal(&mut client, sqlstate::INVALID_CATALOG_NAME, &message).await;
        return;
    }
    let configured = config.user(&user, &database);
    let method = configured.map_or(config.general.auth_type, |u| config.auth_type(u));
    let password = configured.and_then(|u| u.password.as_deref());
    let password = if configured.is_some() && method == AuthType::Trust {
        Some(password.unwrap_or(""))
    } else {
        password
    };
    if let Err(failure) =
        login::authenticate(&mut client, &mut buf, &state, method, &user, password).await
    {
        return refuse(&mut client, &user, failure).await;
    }
    let defaults = match ParamSet::from_startup(&startup.params) {
        Ok(defaults) => defaults,
        Err(message) => {
            login::fatal(&mut client, sqlstate::PROTOCOL_VIOLATION, &message).await;
            return;
        }
    };
    let Some(pools) = state.pools(&database, &user) else {
        login::deny(&mut client, &user).await;
        return;
    };
    let Some(pool) = pools.first().cloned() else {
        return;
    };
    let mode = pool.settings.pooler_mode;
    // The values the client is told (ParameterStatus) are what a server
    // reports with the client's settings applied; the first login with a
    // given set of settings asks a server, which also validates them.
    let mut server = None;
    let report = match pool.login_report(&defaults) {
        Some(report) if mode == PoolerMode::Transaction => report,
        _ => {
            // Like every other use of a server, a login waits out PAUSE
            // (the database may be restarting behind it). A client that
            // leaves meanwhile ends the wait, holding nothing.
            let Ok(resumed) = watch_client(&mut client, &mut buf, wait_for_resume(&state)).await
            else {
                return;
            };
            if !resumed {
                login::fatal(
                    &mut client,
                    sqlstate::CANNOT_CONNECT_NOW,
                    "pgshard is shutting down",
                )
                .await;
                return;
            }
            let login = watch_client(&mut client, &mut buf, login_on_server(&pool, &defaults));
            let Ok(login) = login.await else {
                return;
            };
            match login {
                Ok((checked_out, report)) => {
                    server = Some(checked_out);
                    report
                }
                Err((code, message)) => {
                    login::fatal(&mut client, code, &message).await;
                    return;
                }
            }
        }
    };
    let info = state.register_client(client_info(&user, &database, &startup, peer));
    let mut out = BytesMut::with_capacity(512);
    messages::authentication(&mut out, 0, &[]);
    for (name, value) in report.iter() {
        messages::parameter_status(&mut out, name, value);
    }
    messages::backend_key_data(&mut out, info.process_id, info.secret);
    messages::ready_for_query(&mut out, b'I');
    let server = match (mode, server) {
        (PoolerMode::Transaction, Some(server)) => {
            pool.checkin(server);
            None
        }
        (_, server) => server,
    };
    if client.write_all(&out).await.is_err() {
        state.unregister_client(info.process_id);
        return;
    }
    info!(%user, %database, mode = mode.as_str(), "client logged in");
    let session = Session::new(
        client,
        buf,
        Start {
            state: Arc::clone(&state),
            info,
            pools,
            mode,
            defaults,
            max_message: config.general.max_message_size,
            prepared_limit: config.general.prepared_statements_limit,
            server,
        },
    );
    session.run().await;
}

/// Wait while the admin console has pgshard paused; `false` if it started
/// shutting down instead.
async fn wait_for_resume(state: &State) -> bool {
    let mut paused = state.paused.subscribe();
    let mut shutdown = state.shutdown.subscribe();
    tokio::select! {
        _ = paused.wait_for(|p| !*p) => !state.is_shutting_down(),
        _ = shutdown.wait_for(|s| *s) => false,
    }
}

/// Check a server out and apply the client's startup settings on it.
async fn login_on_server(
    pool: &Arc<Pool>,
    defaults: &ParamSet,
) -> Result<(Pooled, Arc<Vec<(String, String)>>), (&'static str, String)> {
    let mut server = match pool.checkout().await {
        Ok(server) => server,
        Err(err) => {
            let error = ClientError::from_pool(&err, &pool.cluster, pool.shard);
            return Err((error.code, error.message));
        }
    };
    if let Some(sql) = defaults.sync_sql(&server.conn.applied) {
        match server.conn.run(&sql).await {
            Ok(Ok(())) => server.conn.applied = defaults.clone(),
            Ok(Err(message)) => {
                // e.g. an unknown setting in the startup packet: refused
                // with the server's message, as Postgres would.
                server.conn.dirty = true;
                pool.checkin(server);
                return Err((sqlstate::INVALID_PARAMETER_VALUE, message));
            }
            Err(err) => {
                let error = ClientError::from_pool(&err.into(), &pool.cluster, pool.shard);
                return Err((error.code, error.message));
            }
        }
    }
    let report = Arc::new(server.conn.params.clone());
    pool.remember_login_report(defaults.clone(), server.conn.params.clone());
    Ok((server, report))
}

async fn refuse<S: AsyncWrite + Unpin>(client: &mut S, user: &str, failure: AuthFailure) {
    match failure {
        AuthFailure::Denied => {
            info!(%user, "authentication failed");
            login::deny(client, user).await;
        }
        AuthFailure::Protocol(message) => {
            login::fatal(client, sqlstate::PROTOCOL_VIOLATION, &message).await;
        }
    }
}

fn client_info(
    user: &str,
    database: &str,
    startup: &Startup,
    peer: Option<SocketAddr>,
) -> ClientInfo {
    ClientInfo {
        process_id: 0,
        secret: 0,
        user: user.to_owned(),
        database: database.to_owned(),
        application_name: startup
            .param("application_name")
            .unwrap_or_default()
            .to_owned(),
        addr: peer,
        connected_at: SystemTime::now(),
        state: AtomicU8::new(CLIENT_IDLE),
        cancel: tokio::sync::Mutex::new(Vec::new()),
    }
}
