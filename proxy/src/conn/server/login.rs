//! Logging in to a server: the startup packet, then whatever
//! authentication the server asks for (trust, cleartext, MD5,
//! SCRAM-SHA-256, the server proving it knows the password too), up to its
//! first ReadyForQuery; the cancel key and the settings it reports are kept.
//! A replication target asks for a walsender (`replication=database`).

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;

use super::{ServerConn, ServerError, ServerTarget};
use crate::auth::{md5, scram};
use crate::protocol::backend::{Authentication, BackendMessage};
use crate::protocol::messages;
use crate::protocol::startup::Startup;

impl ServerConn {
    /// Answer one authentication request (`R`) from the server during
    /// [`login`](Self::login): encode the reply into `out`, or nothing for
    /// AuthenticationOk and SASLFinal. `scram` carries a SCRAM exchange from
    /// one request to the next.
    fn answer_authentication(
        target: &ServerTarget,
        request: Authentication<'_>,
        scram: &mut Option<scram::ClientExchange>,
        out: &mut BytesMut,
    ) -> Result<(), ServerError> {
        let password = || {
            target
                .password
                .as_deref()
                .ok_or_else(|| ServerError::NoPassword(target.user.clone()))
        };
        match request {
            // After SCRAM, Ok counts only once the server has
            // proved it knows the password too (SASLFinal).
            Authentication::Ok if scram.as_ref().is_some_and(|s| !s.is_complete()) => {
                return Err(ServerError::Protocol(
                    "server skipped SCRAM's final message".into(),
                ));
            }
            Authentication::Ok => {}
            Authentication::Cleartext => {
                let mut payload = password()?.as_bytes().to_vec();
                payload.push(0);
                messages::password(out, &payload);
            }
            Authentication::Md5 { salt } => {
                let hashed = md5::md5_password(&target.user, password()?, salt);
                let mut payload = hashed.into_bytes();
                payload.push(0);
                messages::password(out, &payload);
            }
            Authentication::Sasl(mechanisms) => {
                let offers_scram = mechanisms.split(|&b| b == 0).any(|m| m == b"SCRAM-SHA-256");
                if !offers_scram {
                    return Err(ServerError::UnsupportedAuth(10));
                }
                let mut exchange = scram::ClientExchange::new(password()?);
                let first = exchange.client_first();
                messages::sasl_initial_response(out, "SCRAM-SHA-256", &first);
                *scram = Some(exchange);
            }
            Authentication::SaslContinue(data) => {
                let exchange = scram
                    .as_mut()
                    .ok_or_else(|| ServerError::Protocol("SASL continue without SASL".into()))?;
                let reply = exchange.server_first(data)?;
                messages::password(out, &reply);
            }
            Authentication::SaslFinal(data) => {
                let exchange = scram
                    .as_mut()
                    .ok_or_else(|| ServerError::Protocol("SASL final without SASL".into()))?;
                exchange.server_final(data)?;
            }
            Authentication::Other(code) => return Err(ServerError::UnsupportedAuth(code)),
        }
        Ok(())
    }

    pub(super) async fn login(&mut self, target: &ServerTarget) -> Result<(), ServerError> {
        let mut params = vec![
            ("user".to_owned(), target.user.clone()),
            ("database".to_owned(), target.database.clone()),
        ];
        if target.replication {
            // A walsender bound to the database: logical replication
            // commands and plain SQL both.
            params.push(("replication".to_owned(), "database".to_owned()));
        }
        let startup = Startup {
            major: 3,
            minor: 0,
            params,
        };
        let mut out = BytesMut::with_capacity(128);
        startup.encode(&mut out);
        self.stream.write_all(&out).await?;
        let mut scram: Option<scram::ClientExchange> = None;
        loop {
            let frame = self.read_message().await?;
            match frame.message() {
                BackendMessage::Authentication(request) => {
                    out.clear();
                    Self::answer_authentication(target, request, &mut scram, &mut out)?;
                    // AuthenticationOk and SASLFinal need no reply.
                    if !out.is_empty() {
                        self.stream.write_all(&out).await?;
                    }
                }
                BackendMessage::BackendKeyData { process_id, secret } => {
                    self.process_id = process_id;
                    self.secret_key = Bytes::copy_from_slice(secret);
                }
                BackendMessage::ReadyForQuery(_) => return Ok(()),
                BackendMessage::ErrorResponse(error) => {
                    let code = error.code().unwrap_or(b"XX000");
                    return Err(ServerError::Refused {
                        code: String::from_utf8_lossy(code).into_owned(),
                        message: error.message(),
                    });
                }
                // ParameterStatus (noted as it was read), NoticeResponse,
                // NegotiateProtocolVersion: nothing to do.
                _ => {}
            }
        }
    }
}
