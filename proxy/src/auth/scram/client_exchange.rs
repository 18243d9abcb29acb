//! The client side of SCRAM-SHA-256: pgshard logging into a Postgres server
//! with a password, and checking that the server knows the secret too.

use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use super::crypto::{hmac_sha256, prepare_password, random_nonce, xor, Keys};
use super::message::{decode_key, parse_server_first};
use super::KEY_LEN;
use crate::auth::{constant_time_eq, AuthError};

/// Client side: pgshard logging into a Postgres server with a password.
///
/// Send [`client_first`](Self::client_first) in `SASLInitialResponse`, answer
/// `AuthenticationSASLContinue` with [`server_first`](Self::server_first), and
/// check `AuthenticationSASLFinal` with [`server_final`](Self::server_final).
/// Only after `server_final` succeeds has the server proven it knows the secret.
pub struct ClientExchange {
    /// The password after SASLprep (or raw, where SASLprep refuses it).
    password: Vec<u8>,
    /// Our random nonce.
    nonce: String,
    /// client-first-message-bare: `n=,r=<nonce>`.
    client_first_bare: Vec<u8>,
    state: ClientState,
}

enum ClientState {
    Initial,
    AwaitServerFirst,
    AwaitServerFinal {
        server_signature: [u8; KEY_LEN],
    },
    /// The server proved it knows the secret.
    Verified,
    /// Failed, or stepped out of order.
    Done,
}

impl ClientExchange {
    /// Start an exchange with a fresh random nonce.
    pub fn new(password: &str) -> ClientExchange {
        // Postgres ignores the SCRAM user name (the startup packet named the role),
        // and libpq sends it empty.
        ClientExchange::with_user_and_nonce(password, "", random_nonce())
    }

    /// `user` goes into `n=` as is; only tests pass a non-empty one (RFC 7677's
    /// transcript names "user"), so it is not escaped.
    pub(super) fn with_user_and_nonce(password: &str, user: &str, nonce: String) -> ClientExchange {
        let client_first_bare = format!("n={user},r={nonce}").into_bytes();
        ClientExchange {
            password: prepare_password(password),
            nonce,
            client_first_bare,
            state: ClientState::Initial,
        }
    }

    /// The client-first-message, `n,,n=,r=<nonce>`, for `SASLInitialResponse`.
    /// Calling it again restarts the exchange (with the same nonce).
    pub fn client_first(&mut self) -> Vec<u8> {
        self.state = ClientState::AwaitServerFirst;
        let mut out = b"n,,".to_vec();
        out.extend_from_slice(&self.client_first_bare);
        out
    }

    /// Take the server-first-message (`AuthenticationSASLContinue` data) and return
    /// the client-final-message for `SASLResponse`.
    ///
    /// Refuses a nonce that does not extend ours and an iteration count outside
    /// `1..=MAX_CLIENT_ITERATIONS`.
    pub fn server_first(&mut self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        let ClientState::AwaitServerFirst = std::mem::replace(&mut self.state, ClientState::Done)
        else {
            return Err(AuthError::OutOfOrder);
        };
        let first = parse_server_first(data)?;
        let ours = self.nonce.as_bytes();
        if first.nonce.len() <= ours.len() || !first.nonce.starts_with(ours) {
            return Err(AuthError::NonceMismatch);
        }
        let keys = Keys::derive(&self.password, &first.salt, first.iterations);

        let mut client_final = b"c=biws,r=".to_vec();
        client_final.extend_from_slice(first.nonce);
        let auth_message = [
            self.client_first_bare.as_slice(),
            b",",
            data,
            b",",
            client_final.as_slice(),
        ];
        let client_signature = hmac_sha256(&keys.stored_key, &auth_message);
        let proof = xor(&keys.client_key, &client_signature);
        let server_signature = hmac_sha256(&keys.server_key, &auth_message);

        client_final.extend_from_slice(b",p=");
        client_final.extend_from_slice(BASE64.encode(proof).as_bytes());
        self.state = ClientState::AwaitServerFinal { server_signature };
        Ok(client_final)
    }

    /// Check the server-final-message (`AuthenticationSASLFinal` data): `v=` must
    /// carry the server signature we expect; `e=<message>` is [`AuthError::Server`].
    pub fn server_final(&mut self, data: &[u8]) -> Result<(), AuthError> {
        let ClientState::AwaitServerFinal { server_signature } =
            std::mem::replace(&mut self.state, ClientState::Done)
        else {
            return Err(AuthError::OutOfOrder);
        };
        if let Some(message) = data.strip_prefix(b"e=") {
            return Err(AuthError::Server(
                String::from_utf8_lossy(message).into_owned(),
            ));
        }
        let signature = data
            .strip_prefix(b"v=")
            .ok_or(AuthError::Malformed("server-final-message without v="))?;
        // libpq likewise refuses anything after the signature.
        let signature =
            decode_key(signature).ok_or(AuthError::Malformed("invalid server signature"))?;
        if !constant_time_eq(&signature, &server_signature) {
            return Err(AuthError::ServerSignatureMismatch);
        }
        self.state = ClientState::Verified;
        Ok(())
    }

    /// True once [`server_final`](Self::server_final) has accepted the server's
    /// signature. A server that sends `AuthenticationOk` before then has not proven
    /// it knows the secret; refuse it, as libpq does.
    pub fn is_complete(&self) -> bool {
        matches!(self.state, ClientState::Verified)
    }
}

impl fmt::Debug for ClientExchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            ClientState::Initial => "Initial",
            ClientState::AwaitServerFirst => "AwaitServerFirst",
            ClientState::AwaitServerFinal { .. } => "AwaitServerFinal",
            ClientState::Verified => "Verified",
            ClientState::Done => "Done",
        };
        f.debug_struct("ClientExchange")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}
