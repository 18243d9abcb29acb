//! A client's first moments: the startup packet (SSL/GSS negotiation,
//! CancelRequest, protocol version), limits, and authentication with the
//! method configured for the user (SCRAM-SHA-256, MD5, cleartext or trust).

use bytes::{Buf, BytesMut};
use router::config::AuthType;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::auth::{md5, scram};
use crate::errors::ClientError;
use crate::protocol::frame::{FrameError, SMALL_MESSAGE_LIMIT};
use crate::protocol::frontend::{decode_frontend_frame, Frame, FrontendKind};
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::protocol::startup::{decode_startup, Startup, StartupError, StartupMessage};
use crate::state::State;

/// How the first message ended.
pub enum First {
    Startup(Startup),
    Cancel {
        process_id: u32,
        secret: Vec<u8>,
    },
    /// SSLRequest when TLS is configured: the caller upgrades and reads again.
    Tls,
    /// The client went away.
    Gone,
}

/// Why a client's login broke off: a protocol violation (08P01), with
/// what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// Bytes sent before the TLS handshake could be injected by a man in
    /// the middle (CVE-2021-23214).
    #[error("unexpected data after SSLRequest")]
    DataAfterSslRequest,
    #[error("client went away during authentication")]
    Gone,
    #[error("cannot write to the client: {0}")]
    Io(#[from] std::io::Error),
}

/// Read up to the StartupMessage. `tls` says whether to accept SSLRequest.
pub async fn read_first<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut S,
    buf: &mut BytesMut,
    tls: bool,
) -> Result<First, LoginError> {
    loop {
        match decode_startup(buf)? {
            Some(StartupMessage::Startup(startup)) => return Ok(First::Startup(startup)),
            Some(StartupMessage::SslRequest) if tls => {
                if !buf.is_empty() {
                    // Bytes sent before the handshake could be injected by a
                    // man in the middle (CVE-2021-23214): refuse.
                    return Err(LoginError::DataAfterSslRequest);
                }
                client.write_all(b"S").await?;
                return Ok(First::Tls);
            }
            Some(StartupMessage::SslRequest | StartupMessage::GssEncRequest) => {
                if client.write_all(b"N").await.is_err() {
                    return Ok(First::Gone);
                }
            }
            Some(StartupMessage::Cancel {
                process_id,
                secret_key,
            }) => {
                return Ok(First::Cancel {
                    process_id,
                    secret: secret_key.to_vec(),
                })
            }
            None => match client.read_buf(buf).await {
                Ok(0) | Err(_) => return Ok(First::Gone),
                Ok(_) => {}
            },
        }
    }
}

/// Send a FATAL error and give up on the client.
pub async fn fatal<S: AsyncWrite + Unpin>(client: &mut S, code: &str, message: &str) {
    let mut out = BytesMut::new();
    ClientError::from_server(code, message).encode_fatal(&mut out);
    let _ = client.write_all(&out).await;
    let _ = client.shutdown().await;
}

/// Read one whole client message during authentication.
async fn read_message<S: AsyncRead + Unpin>(
    client: &mut S,
    buf: &mut BytesMut,
) -> Result<Frame, LoginError> {
    loop {
        if let Some(frame) = decode_frontend_frame(buf, SMALL_MESSAGE_LIMIT)? {
            return Ok(frame);
        }
        match client.read_buf(buf).await {
            Ok(0) | Err(_) => return Err(LoginError::Gone),
            Ok(_) => {}
        }
    }
}

/// Send an authentication request (`code`, `payload`) and read the client's
/// PasswordMessage-family answer (`p`).
async fn ask<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut S,
    buf: &mut BytesMut,
    code: u32,
    payload: &[u8],
) -> Result<bytes::Bytes, AuthFailure> {
    let mut out = BytesMut::new();
    messages::authentication(&mut out, code, payload);
    client.write_all(&out).await.map_err(LoginError::from)?;
    let frame = read_message(client, buf).await?;
    if frame.kind != FrontendKind::Password {
        return Err(AuthFailure::NotPassword(frame.kind.letter()));
    }
    Ok(frame.body_bytes())
}

/// Why authentication did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum AuthFailure {
    /// Wrong password (or unknown user): 28P01, nothing more said.
    #[error("password authentication failed")]
    Denied,
    /// The exchange itself broke: protocol violation.
    #[error(transparent)]
    Login(#[from] LoginError),
    #[error("expected password response, got message type {0}")]
    NotPassword(char),
    #[error("malformed SASLInitialResponse")]
    MalformedSasl,
    #[error("client selected an invalid SASL authentication mechanism")]
    SaslMechanism,
    #[error(transparent)]
    Scram(crate::auth::AuthError),
}

/// Authenticate the client against `password` with `method`. `password` is
/// `None` for unknown users: the exchange runs against a random secret so
/// the client cannot tell a missing user from a wrong password.
pub async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut S,
    buf: &mut BytesMut,
    state: &State,
    method: AuthType,
    user: &str,
    password: Option<&str>,
) -> Result<(), AuthFailure> {
    match method {
        AuthType::Trust if password.is_some() => Ok(()),
        AuthType::Trust => Err(AuthFailure::Denied),
        AuthType::Plain => {
            let body = ask(client, buf, 3, &[]).await?;
            let given = body.strip_suffix(&[0]).unwrap_or(&body);
            match password {
                Some(p) if crate::auth::constant_time_eq(given, p.as_bytes()) => Ok(()),
                _ => Err(AuthFailure::Denied),
            }
        }
        AuthType::Md5 => {
            let salt = md5::random_salt();
            let body = ask(client, buf, 5, &salt).await?;
            let given = body.strip_suffix(&[0]).unwrap_or(&body);
            match password {
                Some(p) if md5::verify(user, p, salt, given) => Ok(()),
                _ => Err(AuthFailure::Denied),
            }
        }
        AuthType::Scram => {
            let secret = match password {
                Some(p) => state.scram_secret(p),
                None => std::sync::Arc::new(state.mock_scram_secret(user)),
            };
            let mut body = ask(client, buf, 10, b"SCRAM-SHA-256\0\0").await?;
            let malformed = || AuthFailure::MalformedSasl;
            let mechanism_end = body.iter().position(|&b| b == 0).ok_or_else(malformed)?;
            if &body[..mechanism_end] != b"SCRAM-SHA-256" {
                return Err(AuthFailure::SaslMechanism);
            }
            body.advance(mechanism_end + 1);
            if body.len() < 4 {
                return Err(malformed());
            }
            let len = body.get_i32();
            if len < 0 || len as usize != body.len() {
                return Err(malformed());
            }
            let mut exchange = scram::ServerExchange::new(&secret);
            let reply = exchange.client_first(&body).map_err(AuthFailure::Scram)?;
            let body = ask(client, buf, 11, &reply).await?;
            let reply = exchange.client_final(&body).map_err(|e| match e {
                crate::auth::AuthError::WrongPassword => AuthFailure::Denied,
                other => AuthFailure::Scram(other),
            })?;
            if password.is_none() {
                return Err(AuthFailure::Denied);
            }
            let mut out = BytesMut::new();
            messages::authentication(&mut out, 12, &reply);
            client
                .write_all(&out)
                .await
                .map_err(|e| LoginError::from(e).into())
        }
    }
}

/// Refuse a login with the error Postgres gives for a bad password.
pub async fn deny<S: AsyncWrite + Unpin>(client: &mut S, user: &str) {
    let message = format!("password authentication failed for user \"{user}\"");
    fatal(client, sqlstate::INVALID_PASSWORD, &message).await;
}
