//! A client's first moments: the startup packet (SSL/GSS negotiation,
//! CancelRequest, protocol version), and authentication with the method
//! configured for the user (SCRAM-SHA-256, MD5, cleartext or trust).

use std::sync::Arc;

use bytes::Bytes;
use router::config::AuthType;

use super::{ClientConn, Gone, ReadError};
use crate::auth::scram::ScramSecret;
use crate::auth::{md5, scram};
use crate::errors::ClientError;
use crate::protocol::frame::FrameError;
use crate::protocol::frontend::{sasl_initial_response, FrontendKind};
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::protocol::startup::{Startup, StartupError, StartupMessage};

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
}

impl From<Gone> for LoginError {
    fn from(_: Gone) -> LoginError {
        LoginError::Gone
    }
}

impl From<ReadError> for LoginError {
    fn from(error: ReadError) -> LoginError {
        match error {
            ReadError::Gone(_) => LoginError::Gone,
            ReadError::Frame(error) => LoginError::Frame(error),
        }
    }
}

impl ClientConn {
    /// Read up to the StartupMessage. `tls` says whether to accept
    /// SSLRequest.
    pub async fn read_first(&mut self, tls: bool) -> Result<First, LoginError> {
        loop {
            match self.read_startup()? {
                Some(StartupMessage::Startup(startup)) => return Ok(First::Startup(startup)),
                Some(StartupMessage::SslRequest) if tls => {
                    if self.has_unread() {
                        // Bytes sent before the handshake could be injected
                        // by a man in the middle (CVE-2021-23214): refuse.
                        return Err(LoginError::DataAfterSslRequest);
                    }
                    self.send(b"S").await?;
                    return Ok(First::Tls);
                }
                Some(StartupMessage::SslRequest | StartupMessage::GssEncRequest) => {
                    if self.send(b"N").await.is_err() {
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
                None => {
                    if self.fill().await.is_err() {
                        return Ok(First::Gone);
                    }
                }
            }
        }
    }

    /// Send a FATAL error and give up on the client.
    pub async fn fatal(&mut self, code: &str, message: &str) {
        ClientError::from_server(code, message).encode_fatal(self.out());
        self.shutdown().await;
    }

    /// Refuse a login with the error Postgres gives for a bad password.
    pub async fn deny(&mut self, user: &str) {
        let message = format!("password authentication failed for user \"{user}\"");
        self.fatal(sqlstate::INVALID_PASSWORD, &message).await;
    }

    /// Send an authentication request (`code`, `payload`) and read the
    /// client's PasswordMessage-family answer (`p`).
    async fn ask(&mut self, code: u32, payload: &[u8]) -> Result<Bytes, AuthFailure> {
        messages::authentication(self.out(), code, payload);
        self.flush().await.map_err(LoginError::from)?;
        let frame = self.next_message().await.map_err(LoginError::from)?;
        if frame.kind != FrontendKind::Password {
            return Err(AuthFailure::NotPassword(frame.kind.letter()));
        }
        Ok(frame.body_bytes())
    }

    /// Ask for the password in cleartext (AuthenticationCleartextPassword),
    /// as passthrough authentication must: the server checks it, so
    /// pgshard needs the password itself, which no SCRAM or MD5 answer
    /// gives. An empty password, or one with a NUL or not UTF-8, is
    /// refused as wrong (no Postgres password can be such).
    pub async fn ask_password(&mut self) -> Result<String, AuthFailure> {
        let body = self.ask(3, &[]).await?;
        let given = body.strip_suffix(&[0]).unwrap_or(&body);
        if given.is_empty() || given.contains(&0) {
            return Err(AuthFailure::Denied);
        }
        String::from_utf8(given.to_vec()).map_err(|_| AuthFailure::Denied)
    }

    /// Authenticate the client as `credentials` say. A user without a
    /// password (unknown to the config) runs the exchange against a
    /// random secret, so the client cannot tell a missing user from a
    /// wrong password: `scram_secret` gives the secret for a password
    /// (`None`: the mock one).
    pub async fn authenticate(
        &mut self,
        credentials: Credentials<'_>,
        scram_secret: impl FnOnce(Option<&str>) -> Arc<ScramSecret>,
    ) -> Result<(), AuthFailure> {
        let Credentials {
            method,
            user,
            password,
        } = credentials;
        match method {
            AuthType::Trust if password.is_some() => Ok(()),
            AuthType::Trust => Err(AuthFailure::Denied),
            AuthType::Plain => {
                let body = self.ask(3, &[]).await?;
                let given = body.strip_suffix(&[0]).unwrap_or(&body);
                match password {
                    Some(p) if crate::auth::constant_time_eq(given, p.as_bytes()) => Ok(()),
                    _ => Err(AuthFailure::Denied),
                }
            }
            AuthType::Md5 => {
                let salt = md5::random_salt();
                let body = self.ask(5, &salt).await?;
                let given = body.strip_suffix(&[0]).unwrap_or(&body);
                match password {
                    Some(p) if md5::verify(user, p, salt, given) => Ok(()),
                    _ => Err(AuthFailure::Denied),
                }
            }
            AuthType::Scram => {
                let secret = scram_secret(password);
                self.scram(&secret, password.is_some()).await
            }
        }
    }

    /// SCRAM-SHA-256 against `secret`; `known`: the secret is the user's
    /// (not a mock one, which never lets a client in).
    async fn scram(&mut self, secret: &ScramSecret, known: bool) -> Result<(), AuthFailure> {
        let body = self.ask(10, b"SCRAM-SHA-256\0\0").await?;
        let (mechanism, first) = sasl_initial_response(&body).ok_or(AuthFailure::MalformedSasl)?;
        if mechanism != b"SCRAM-SHA-256" {
            return Err(AuthFailure::SaslMechanism);
        }
        let mut exchange = scram::ServerExchange::new(secret);
        let reply = exchange.client_first(first).map_err(AuthFailure::Scram)?;
        let body = self.ask(11, &reply).await?;
        let reply = exchange.client_final(&body).map_err(|e| match e {
            crate::auth::AuthError::WrongPassword => AuthFailure::Denied,
            other => AuthFailure::Scram(other),
        })?;
        if !known {
            return Err(AuthFailure::Denied);
        }
        messages::authentication(self.out(), 12, &reply);
        self.flush().await.map_err(|e| LoginError::from(e).into())
    }
}

/// Who a client says it is and how it must prove it.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    pub method: AuthType,
    pub user: &'a str,
    /// `None` for a user the config does not know.
    pub password: Option<&'a str>,
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

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn ask_password_takes_only_a_password_a_server_could_accept() {
        let cases: [(&[u8], Option<&str>); 5] = [
            (b"s3cret\0", Some("s3cret")),
            (b"no-terminator", Some("no-terminator")),
            (b"\0", None),
            (b"a\0b\0", None),
            (b"\xff\xfe\0", None),
        ];
        for (body, expected) in cases {
            let (ours, mut theirs) = tokio::net::UnixStream::pair().unwrap();
            let mut client = ClientConn::unix(ours);
            let mut message = vec![b'p'];
            message.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
            message.extend_from_slice(body);
            theirs.write_all(&message).await.unwrap();
            let asked = client.ask_password().await;
            match (asked, expected) {
                (Ok(password), Some(expected)) => assert_eq!(password, expected),
                (Err(AuthFailure::Denied), None) => {}
                (other, _) => panic!("{body:?}: {other:?}"),
            }
        }
    }
}
