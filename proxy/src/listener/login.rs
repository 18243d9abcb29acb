//! How a client is authenticated, and refused in the words Postgres uses.
//! A client of a pooled database logs in as `users.toml` says (its user's
//! `auth_type` and password), or, when `users.toml` does not list its user
//! and `passthrough_auth` is on, by passthrough: the password is asked for
//! in cleartext (only over TLS or the Unix socket with `"enabled"`), then
//! checked by logging into the cluster's first primary with it
//! (`pool::clusters::passthrough`), which makes or refreshes the (cluster,
//! user) pools. The server's refusal reaches the client as the server said
//! it (28P01 for a wrong password).

use router::config::{AuthType, Config, PassthroughAuth};
use tracing::info;

use std::sync::Arc;

use tokio::time::Instant;

use crate::conn::client::{AuthFailure, ClientConn, Credentials};
use crate::conn::server::ServerError;
use crate::pool::clusters::PassthroughError;
use crate::pool::PoolError;
use crate::protocol::sqlstate;
use crate::state::State;

/// Why a passthrough login is refused on an unencrypted connection.
const NEEDS_ENCRYPTION: &str = "passthrough authentication needs an encrypted connection \
    (the password is sent in cleartext): connect with TLS (sslmode=require) or through the \
    Unix socket, or set passthrough_auth = \"enabled_plain\" to accept unencrypted ones";

/// Authenticate `user` of `database`: through passthrough when it is on
/// and `users.toml` does not list them (those it lists keep their
/// configured authentication). `false` when the client was refused (and
/// told why) or left.
pub(super) async fn pooled(
    client: &mut ClientConn,
    state: &State,
    config: &Config,
    user: &str,
    database: &str,
) -> bool {
    if config.general.passthrough_auth.is_enabled() && config.user(user, database).is_none() {
        return passthrough(client, state, config, user, database).await;
    }
    let (method, password) = pool_user_credentials(config, user, database);
    let credentials = Credentials {
        method,
        user,
        password,
    };
    match authenticate(client, credentials, state).await {
        Ok(()) => true,
        Err(failure) => {
            refuse(client, user, failure).await;
            false
        }
    }
}

/// The authentication method and password for a client of a pooled
/// database: the configured user's, else `[general]`'s method and no
/// password (`None`: an unknown user). Under trust a configured user without
/// a password still counts as known (`Some("")`).
fn pool_user_credentials<'c>(
    config: &'c Config,
    user: &str,
    database: &str,
) -> (AuthType, Option<&'c str>) {
    let configured = config.user(user, database);
    let method = configured.map_or(config.general.auth_type, |u| config.auth_type(u));
    let password = configured.and_then(|u| u.password.as_deref());
    let password = if configured.is_some() && method == AuthType::Trust {
        Some(password.unwrap_or(""))
    } else {
        password
    };
    (method, password)
}

/// Log `user` of `database` in through passthrough; `false` when the
/// client was refused (and told why) or left.
async fn passthrough(
    client: &mut ClientConn,
    state: &State,
    config: &Config,
    user: &str,
    database: &str,
) -> bool {
    if config.general.passthrough_auth == PassthroughAuth::Enabled && client.is_plain_tcp() {
        client
            .fatal(sqlstate::INVALID_AUTHORIZATION, NEEDS_ENCRYPTION)
            .await;
        return false;
    }
    let password = match client.ask_password().await {
        Ok(password) => password,
        Err(failure) => {
            refuse(client, user, failure).await;
            return false;
        }
    };
    // Like every other use of a server, the check waits out PAUSE.
    match client.watch(state.gate.wait_resumed(database)).await {
        Ok(true) => {}
        Ok(false) => {
            let message = "pgshard is shutting down";
            client.fatal(sqlstate::CANNOT_CONNECT_NOW, message).await;
            return false;
        }
        Err(_) => return false,
    }
    let login = state
        .clusters
        .passthrough_login(database, user, &password, &state.metrics);
    let Ok(checked) = client.watch(login).await else {
        return false;
    };
    match checked {
        Ok(()) => {
            info!(%user, %database, "passthrough login accepted by the server");
            true
        }
        Err(PassthroughError::Server(ServerError::Refused { code, message })) => {
            // The server's own words: 28P01 for a wrong password, 28000
            // for a role that may not log in there.
            info!(%user, %database, %code, "passthrough login refused by the server");
            client.fatal(&code, &message).await;
            false
        }
        Err(PassthroughError::Server(error)) => {
            let error = PoolError::from(error).client_error(database, 0);
            client.fatal(&error.code, &error.message).await;
            false
        }
        Err(PassthroughError::Unavailable) => {
            client.deny(user).await;
            false
        }
    }
}

/// Tell a client its login failed: 28P01 for a wrong password (or an
/// unknown user), 08P01 for a broken exchange.
pub(super) async fn refuse(client: &mut ClientConn, user: &str, failure: AuthFailure) {
    match failure {
        AuthFailure::Denied => {
            info!(%user, "authentication failed");
            client.deny(user).await;
        }
        broken => {
            let message = broken.to_string();
            client.fatal(sqlstate::PROTOCOL_VIOLATION, &message).await;
        }
    }
}

/// Authenticate `client` as `credentials` say, with the SCRAM secrets the
/// state derives (a mock one for a user the config does not know).
pub(super) async fn authenticate(
    client: &mut ClientConn,
    credentials: Credentials<'_>,
    state: &State,
) -> Result<(), AuthFailure> {
    let user = credentials.user;
    let secret = |password: Option<&str>| match password {
        Some(password) => state.scram_secret(password),
        None => Arc::new(state.mock_scram_secret(user)),
    };
    client.authenticate(credentials, secret).await
}

/// `step` of a login, cut off at `deadline` (`client_login_timeout`;
/// `None` when it ran out).
pub(super) async fn in_time<F: std::future::Future>(
    deadline: Option<Instant>,
    step: F,
) -> Option<F::Output> {
    match deadline {
        None => Some(step.await),
        Some(at) => tokio::time::timeout_at(at, step).await.ok(),
    }
}

/// Tell a client its login ran past `client_login_timeout` and close it
/// (a client that does not read is not waited for).
pub(super) async fn login_timed_out(mut client: ClientConn) {
    info!("client_login_timeout: login not finished in time, connection closed");
    let message = "client_login_timeout: the login did not finish in time";
    let fatal = client.fatal(sqlstate::PROTOCOL_VIOLATION, message);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), fatal).await;
}
