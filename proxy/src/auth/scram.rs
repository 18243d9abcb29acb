//! SCRAM-SHA-256 (RFC 5802 / RFC 7677) as Postgres speaks it: secrets, and both sides of the exchange.
//!
//! [`ServerExchange`] is pgshard authenticating a client against a stored
//! [`ScramSecret`]; [`ClientExchange`] is pgshard logging into a Postgres server
//! with a password. Neither offers channel binding: the GS2 header is `n,,`
//! (or `y,,` from a client that could bind but thinks the server cannot).
//!
//! Like Postgres, the user name inside the SCRAM messages is ignored (the
//! startup packet already named the role) and passwords go through SASLprep
//! when they can, else are used as raw bytes.
//!
//! Every message is parsed from untrusted bytes: malformed input is an
//! [`AuthError`](super::AuthError), never a panic.
//!
//! Code map: this file holds the constants and [`ScramSecret`];
//! `scram/server_exchange.rs` the server side, `scram/client_exchange.rs` the
//! client side, `scram/message.rs` the parsing of the SCRAM messages and
//! attributes, and `scram/crypto.rs` Hi(), HMAC, the derived keys and nonces.

mod client_exchange;
mod crypto;
mod message;
mod server_exchange;

use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use super::constant_time_eq;
use crypto::{prepare_password, Keys};
use message::{decode_key, parse_decimal};

pub use client_exchange::ClientExchange;
pub use server_exchange::ServerExchange;

/// The SASL mechanism name, as listed in `AuthenticationSASL`.
pub const MECHANISM: &str = "SCRAM-SHA-256";

/// Iterations for new secrets: Postgres' `scram_iterations` default.
pub const DEFAULT_ITERATIONS: u32 = 4096;

/// Salt length for new secrets, as Postgres' `SCRAM_DEFAULT_SALT_LEN`.
const SALT_LEN: usize = 16;

/// The most iterations a server may ask of pgshard-as-client. Hi() costs two
/// SHA-256 compressions per iteration, so this bounds the CPU a hostile or
/// misconfigured server can burn per login to a few seconds.
pub const MAX_CLIENT_ITERATIONS: u32 = 10_000_000;

/// Bytes in a SHA-256 digest, and so in every SCRAM key, proof and signature.
const KEY_LEN: usize = 32;

/// A role's SCRAM-SHA-256 secret, as stored in `pg_authid.rolpassword`.
///
/// Holds no password, but `stored_key` and `server_key` still let their holder
/// impersonate the server, so `Debug` does not print them.
#[derive(Clone)]
pub struct ScramSecret {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; 32],
    pub server_key: [u8; 32],
}

impl ScramSecret {
    /// Derive the secret for `password` with this salt and iteration count.
    /// An iteration count of 0 is taken as 1 (Hi() is undefined for 0).
    pub fn from_password(password: &str, salt: &[u8], iterations: u32) -> ScramSecret {
        let iterations = iterations.max(1);
        let keys = Keys::derive(&prepare_password(password), salt, iterations);
        ScramSecret {
            iterations,
            salt: salt.to_vec(),
            stored_key: keys.stored_key,
            server_key: keys.server_key,
        }
    }

    /// A new secret for `password` with a random 16-byte salt and 4096 iterations,
    /// as Postgres makes for `ALTER ROLE ... PASSWORD`.
    pub fn generate(password: &str) -> ScramSecret {
        let mut salt = [0u8; SALT_LEN];
        rand::fill(&mut salt);
        ScramSecret::from_password(password, &salt, DEFAULT_ITERATIONS)
    }

    /// Parse a `pg_authid` verifier:
    /// `SCRAM-SHA-256$<iterations>:<salt base64>$<StoredKey base64>:<ServerKey base64>`.
    /// Anything else (an MD5 hash, a plain password, a bad key length) is `None`.
    pub fn parse(verifier: &str) -> Option<ScramSecret> {
        let mut parts = verifier.split('$');
        let (mechanism, salt_part, keys_part) = (parts.next()?, parts.next()?, parts.next()?);
        if mechanism != MECHANISM || parts.next().is_some() {
            return None;
        }
        let (iterations, salt) = salt_part.split_once(':')?;
        let (stored_key, server_key) = keys_part.split_once(':')?;
        let iterations = parse_decimal(iterations.as_bytes()).filter(|&i| i >= 1)?;
        let salt = BASE64.decode(salt).ok().filter(|s| !s.is_empty())?;
        Some(ScramSecret {
            iterations,
            salt,
            stored_key: decode_key(stored_key.as_bytes())?,
            server_key: decode_key(server_key.as_bytes())?,
        })
    }

    /// The `pg_authid` form that [`ScramSecret::parse`] reads back.
    pub fn to_verifier(&self) -> String {
        format!(
            "{MECHANISM}${}:{}${}:{}",
            self.iterations,
            BASE64.encode(&self.salt),
            BASE64.encode(self.stored_key),
            BASE64.encode(self.server_key),
        )
    }
}

impl fmt::Debug for ScramSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramSecret")
            .field("iterations", &self.iterations)
            .field("salt", &BASE64.encode(&self.salt))
            .field("stored_key", &format_args!("<redacted>"))
            .field("server_key", &format_args!("<redacted>"))
            .finish()
    }
}

/// Equality compares the keys in constant time.
impl PartialEq for ScramSecret {
    fn eq(&self, other: &ScramSecret) -> bool {
        let keys_equal = constant_time_eq(&self.stored_key, &other.stored_key)
            & constant_time_eq(&self.server_key, &other.server_key);
        keys_equal && self.iterations == other.iterations && self.salt == other.salt
    }
}

impl Eq for ScramSecret {}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
