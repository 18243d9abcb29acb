//! The server side of SCRAM-SHA-256: pgshard checking a client's proof
//! against a stored [`ScramSecret`].

use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::crypto::{hmac_sha256, random_nonce, xor};
use super::message::{parse_client_final, parse_client_first};
use super::{ScramSecret, KEY_LEN};
use crate::auth::{constant_time_eq, AuthError};

/// Server side: pgshard checking a client's password against a [`ScramSecret`].
///
/// Feed it the `SASLInitialResponse` data, then the `SASLResponse` data. Any
/// error ends the exchange; later calls return [`AuthError::OutOfOrder`].
pub struct ServerExchange {
    secret: ScramSecret,
    server_nonce: String,
    state: ServerState,
}

enum ServerState {
    AwaitClientFirst,
    AwaitClientFinal {
        /// The GS2 channel-binding flag the client sent: `b'n'` or `b'y'`.
        cbind_flag: u8,
        /// client-nonce + server-nonce, which client-final must echo.
        nonce: Vec<u8>,
        /// client-first-message-bare + "," + server-first-message + ",".
        auth_message_prefix: Vec<u8>,
    },
    Done,
}

impl ServerExchange {
    /// Start an exchange for a role with this secret, with a fresh random server nonce.
    pub fn new(secret: &ScramSecret) -> ServerExchange {
        ServerExchange::with_server_nonce(secret, random_nonce())
    }

    pub(super) fn with_server_nonce(secret: &ScramSecret, server_nonce: String) -> ServerExchange {
        ServerExchange {
            secret: secret.clone(),
            server_nonce,
            state: ServerState::AwaitClientFirst,
        }
    }

    /// Take the client-first-message (the `SASLInitialResponse` data) and return
    /// the server-first-message to send in `AuthenticationSASLContinue`.
    pub fn client_first(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        let ServerState::AwaitClientFirst = std::mem::replace(&mut self.state, ServerState::Done)
        else {
            return Err(AuthError::OutOfOrder);
        };
        let first = parse_client_first(data)?;
        let mut nonce = first.nonce.to_vec();
        nonce.extend_from_slice(self.server_nonce.as_bytes());

        let mut server_first = Vec::with_capacity(nonce.len() + 80);
        server_first.extend_from_slice(b"r=");
        server_first.extend_from_slice(&nonce);
        server_first.extend_from_slice(b",s=");
        server_first.extend_from_slice(BASE64.encode(&self.secret.salt).as_bytes());
        server_first.extend_from_slice(format!(",i={}", self.secret.iterations).as_bytes());

        let mut auth_message_prefix = Vec::with_capacity(first.bare.len() + server_first.len() + 2);
        auth_message_prefix.extend_from_slice(first.bare);
        auth_message_prefix.push(b',');
        auth_message_prefix.extend_from_slice(&server_first);
        auth_message_prefix.push(b',');

        self.state = ServerState::AwaitClientFinal {
            cbind_flag: first.cbind_flag,
            nonce,
            auth_message_prefix,
        };
        Ok(server_first)
    }

    /// Take the client-final-message (the `SASLResponse` data), check its proof and
    /// return the server-final-message (`v=...`) for `AuthenticationSASLFinal`.
    /// A proof that does not match is [`AuthError::WrongPassword`].
    pub fn client_final(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        let ServerState::AwaitClientFinal {
            cbind_flag,
            nonce,
            mut auth_message_prefix,
        } = std::mem::replace(&mut self.state, ServerState::Done)
        else {
            return Err(AuthError::OutOfOrder);
        };
        let last = parse_client_final(data)?;
        // Without channel binding, c= is the base64 GS2 header: "n,," or "y,,",
        // matching the flag the client sent first (as Postgres checks).
        let expected_binding: &[u8] = if cbind_flag == b'y' { b"eSws" } else { b"biws" };
        if last.channel_binding != expected_binding {
            return Err(AuthError::Malformed(
                "unexpected channel-binding attribute in client-final-message",
            ));
        }
        if last.nonce != nonce.as_slice() {
            return Err(AuthError::NonceMismatch);
        }

        auth_message_prefix.extend_from_slice(last.without_proof);
        let auth_message = auth_message_prefix;
        let client_signature = hmac_sha256(&self.secret.stored_key, &[&auth_message]);
        let client_key = xor(&last.proof, &client_signature);
        let stored_key: [u8; KEY_LEN] = Sha256::digest(client_key).into();
        if !constant_time_eq(&stored_key, &self.secret.stored_key) {
            return Err(AuthError::WrongPassword);
        }

        let server_signature = hmac_sha256(&self.secret.server_key, &[&auth_message]);
        let mut server_final = b"v=".to_vec();
        server_final.extend_from_slice(BASE64.encode(server_signature).as_bytes());
        Ok(server_final)
    }
}

impl fmt::Debug for ServerExchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            ServerState::AwaitClientFirst => "AwaitClientFirst",
            ServerState::AwaitClientFinal { .. } => "AwaitClientFinal",
            ServerState::Done => "Done",
        };
        f.debug_struct("ServerExchange")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}
