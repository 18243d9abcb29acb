//! The cryptography under SCRAM-SHA-256: Hi() (PBKDF2), HMAC-SHA-256, the
//! keys derived from a password, SASLprep, and random nonces.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};

use super::KEY_LEN;

/// Random bytes in a nonce, as Postgres' `SCRAM_RAW_NONCE_LEN` (base64 makes it 24 chars).
const RAW_NONCE_LEN: usize = 18;

type HmacSha256 = Hmac<Sha256>;

/// The keys derived from a password: RFC 5802 section 3.
pub(super) struct Keys {
    pub(super) client_key: [u8; KEY_LEN],
    pub(super) stored_key: [u8; KEY_LEN],
    pub(super) server_key: [u8; KEY_LEN],
}

impl Keys {
    pub(super) fn derive(password: &[u8], salt: &[u8], iterations: u32) -> Keys {
        let salted_password = hi(password, salt, iterations);
        let client_key = hmac_sha256(&salted_password, &[b"Client Key"]);
        Keys {
            client_key,
            stored_key: Sha256::digest(client_key).into(),
            server_key: hmac_sha256(&salted_password, &[b"Server Key"]),
        }
    }
}

/// SASLprep the password as Postgres does (`pg_saslprep`): if it preps cleanly use
/// the result, else (prohibited or unassigned characters) use the raw bytes.
pub(super) fn prepare_password(password: &str) -> Vec<u8> {
    match stringprep::saslprep(password) {
        Ok(prepped) => prepped.into_owned().into_bytes(),
        Err(_) => password.as_bytes().to_vec(),
    }
}

/// SCRAM's Hi(): PBKDF2-HMAC-SHA-256 with a 32-byte output. That output is
/// exactly one PBKDF2 block (block index 1), so it is this loop rather than the
/// `pbkdf2` crate, whose multi-block generality we would not use.
fn hi(password: &[u8], salt: &[u8], iterations: u32) -> [u8; KEY_LEN] {
    let prf = hmac_keyed(password);
    let mut mac = prf.clone();
    mac.update(salt);
    mac.update(&1u32.to_be_bytes());
    let mut u: [u8; KEY_LEN] = mac.finalize().into_bytes().into();
    let mut out = u;
    for _ in 1..iterations {
        let mut mac = prf.clone();
        mac.update(&u);
        u = mac.finalize().into_bytes().into();
        for (o, x) in out.iter_mut().zip(u) {
            *o ^= x;
        }
    }
    out
}

/// HMAC-SHA-256 keyed with `key`, ready for input.
fn hmac_keyed(key: &[u8]) -> HmacSha256 {
    match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        // HMAC accepts keys of any length (longer ones are hashed), so this cannot happen.
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    }
}

/// HMAC-SHA-256 of the concatenation of `parts`.
pub(super) fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; KEY_LEN] {
    let mut mac = hmac_keyed(key);
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

pub(super) fn xor(a: &[u8; KEY_LEN], b: &[u8; KEY_LEN]) -> [u8; KEY_LEN] {
    let mut out = *a;
    for (o, x) in out.iter_mut().zip(b) {
        *o ^= x;
    }
    out
}

/// 18 random bytes in base64, as Postgres' and libpq's nonces.
pub(super) fn random_nonce() -> String {
    let mut raw = [0u8; RAW_NONCE_LEN];
    rand::fill(&mut raw);
    BASE64.encode(raw)
}
