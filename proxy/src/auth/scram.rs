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
//! [`AuthError`], never a panic.

use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};

use super::{constant_time_eq, AuthError};

/// The SASL mechanism name, as listed in `AuthenticationSASL`.
pub const MECHANISM: &str = "SCRAM-SHA-256";

/// Iterations for new secrets: Postgres' `scram_iterations` default.
pub const DEFAULT_ITERATIONS: u32 = 4096;

/// Salt length for new secrets, as Postgres' `SCRAM_DEFAULT_SALT_LEN`.
const SALT_LEN: usize = 16;

/// Random bytes in a nonce, as Postgres' `SCRAM_RAW_NONCE_LEN` (base64 makes it 24 chars).
const RAW_NONCE_LEN: usize = 18;

/// The most iterations a server may ask of pgshard-as-client. Hi() costs two
/// SHA-256 compressions per iteration, so this bounds the CPU a hostile or
/// misconfigured server can burn per login to a few seconds.
pub const MAX_CLIENT_ITERATIONS: u32 = 10_000_000;

/// Bytes in a SHA-256 digest, and so in every SCRAM key, proof and signature.
const KEY_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

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

    fn with_server_nonce(secret: &ScramSecret, server_nonce: String) -> ServerExchange {
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
    fn with_user_and_nonce(password: &str, user: &str, nonce: String) -> ClientExchange {
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

/// The keys derived from a password: RFC 5802 section 3.
struct Keys {
    client_key: [u8; KEY_LEN],
    stored_key: [u8; KEY_LEN],
    server_key: [u8; KEY_LEN],
}

impl Keys {
    fn derive(password: &[u8], salt: &[u8], iterations: u32) -> Keys {
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
fn prepare_password(password: &str) -> Vec<u8> {
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
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; KEY_LEN] {
    let mut mac = hmac_keyed(key);
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

fn xor(a: &[u8; KEY_LEN], b: &[u8; KEY_LEN]) -> [u8; KEY_LEN] {
    let mut out = *a;
    for (o, x) in out.iter_mut().zip(b) {
        *o ^= x;
    }
    out
}

/// 18 random bytes in base64, as Postgres' and libpq's nonces.
fn random_nonce() -> String {
    let mut raw = [0u8; RAW_NONCE_LEN];
    rand::fill(&mut raw);
    BASE64.encode(raw)
}

/// A base64 32-byte key, proof or signature; `None` for bad base64 or another length.
fn decode_key(b64: &[u8]) -> Option<[u8; KEY_LEN]> {
    BASE64.decode(b64).ok()?.try_into().ok()
}

/// A decimal u32 of ASCII digits only (no sign, no spaces); `None` on overflow.
fn parse_decimal(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u32, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u32::from(d - b'0'))
    })
}

/// RFC 5802 `printable`: `%x21-2B / %x2D-7E`, the characters a nonce may use.
fn is_printable(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| matches!(b, 0x21..=0x2b | 0x2d..=0x7e))
}

/// The value of attribute `name` in `part` (`name=value`), or `None`.
fn attribute(part: &[u8], name: u8) -> Option<&[u8]> {
    match part {
        [n, b'=', value @ ..] if *n == name => Some(value),
        _ => None,
    }
}

/// SCRAM values never contain `,` (it is escaped as `=2C` in names, and absent
/// from base64 and nonces), so splitting on it yields the attributes.
fn split_attributes(message: &[u8]) -> std::slice::Split<'_, u8, impl FnMut(&u8) -> bool> {
    message.split(|&b| b == b',')
}

/// The parts of a client-first-message the server needs.
#[derive(Debug)]
struct ClientFirst<'a> {
    cbind_flag: u8,
    /// client-first-message-bare: everything after the GS2 header.
    bare: &'a [u8],
    nonce: &'a [u8],
}

/// `gs2-cbind-flag "," [authzid] "," [reserved-mext ","] username "," nonce ["," extensions]`,
/// with Postgres' rules: no channel binding, no authzid, no mandatory extension.
fn parse_client_first(data: &[u8]) -> Result<ClientFirst<'_>, AuthError> {
    let mut parts = split_attributes(data);
    let cbind = parts.next().unwrap_or_default();
    let cbind_flag = match cbind {
        b"n" => b'n',
        b"y" => b'y',
        [b'p', b'=', ..] => return Err(AuthError::ChannelBindingUnsupported),
        _ => return Err(AuthError::Malformed("unexpected channel-binding flag")),
    };
    let authzid = parts
        .next()
        .ok_or(AuthError::Malformed("missing GS2 header"))?;
    if attribute(authzid, b'a').is_some() {
        return Err(AuthError::Unsupported("authorization identity"));
    }
    if !authzid.is_empty() {
        return Err(AuthError::Malformed("unexpected attribute in GS2 header"));
    }
    let bare = data
        .get(cbind.len() + authzid.len() + 2..)
        .ok_or(AuthError::Malformed("missing GS2 header"))?;

    let user = parts
        .next()
        .ok_or(AuthError::Malformed("missing GS2 header"))?;
    if attribute(user, b'm').is_some() {
        return Err(AuthError::Unsupported("mandatory extension"));
    }
    if attribute(user, b'n').is_none() {
        return Err(AuthError::Malformed("expected user name attribute"));
    }
    let nonce = parts
        .next()
        .and_then(|part| attribute(part, b'r'))
        .ok_or(AuthError::Malformed("expected nonce attribute"))?;
    if nonce.is_empty() || !is_printable(nonce) {
        return Err(AuthError::Malformed("invalid characters in nonce"));
    }
    // Optional extensions follow; like Postgres, ignore them.
    Ok(ClientFirst {
        cbind_flag,
        bare,
        nonce,
    })
}

/// The parts of a client-final-message the server needs.
#[derive(Debug)]
struct ClientFinal<'a> {
    channel_binding: &'a [u8],
    nonce: &'a [u8],
    /// client-final-message-without-proof, part of the AuthMessage.
    without_proof: &'a [u8],
    proof: [u8; KEY_LEN],
}

/// `"c=" cbind-input "," "r=" nonce ["," extensions] "," "p=" proof`.
fn parse_client_final(data: &[u8]) -> Result<ClientFinal<'_>, AuthError> {
    let mut parts = split_attributes(data);
    let channel_binding = parts
        .next()
        .and_then(|part| attribute(part, b'c'))
        .ok_or(AuthError::Malformed("expected channel-binding attribute"))?;
    let nonce = parts
        .next()
        .and_then(|part| attribute(part, b'r'))
        .ok_or(AuthError::Malformed("expected nonce attribute"))?;
    // The proof is the last attribute; extensions may sit between it and the nonce.
    let proof_part = parts
        .next_back()
        .ok_or(AuthError::Malformed("expected proof attribute"))?;
    let proof =
        attribute(proof_part, b'p').ok_or(AuthError::Malformed("expected proof attribute"))?;
    let proof = decode_key(proof).ok_or(AuthError::Malformed("invalid proof"))?;
    let without_proof = data
        .len()
        .checked_sub(proof_part.len() + 1)
        .and_then(|end| data.get(..end))
        .ok_or(AuthError::Malformed("expected proof attribute"))?;
    Ok(ClientFinal {
        channel_binding,
        nonce,
        without_proof,
        proof,
    })
}

/// The parts of a server-first-message the client needs.
#[derive(Debug)]
struct ServerFirst<'a> {
    nonce: &'a [u8],
    salt: Vec<u8>,
    iterations: u32,
}

/// `["m=" ext ","] "r=" nonce "," "s=" salt "," "i=" iteration-count`; like libpq,
/// nothing may follow the iteration count.
fn parse_server_first(data: &[u8]) -> Result<ServerFirst<'_>, AuthError> {
    let mut parts = split_attributes(data);
    let first = parts.next().unwrap_or_default();
    if attribute(first, b'm').is_some() {
        return Err(AuthError::Unsupported("mandatory extension"));
    }
    let nonce = attribute(first, b'r').ok_or(AuthError::Malformed("expected nonce attribute"))?;
    if !is_printable(nonce) {
        return Err(AuthError::Malformed("invalid characters in nonce"));
    }
    let salt = parts
        .next()
        .and_then(|part| attribute(part, b's'))
        .ok_or(AuthError::Malformed("expected salt attribute"))?;
    let salt = BASE64
        .decode(salt)
        .ok()
        .filter(|salt| !salt.is_empty())
        .ok_or(AuthError::Malformed("invalid salt"))?;
    let iterations = parts
        .next()
        .and_then(|part| attribute(part, b'i'))
        .ok_or(AuthError::Malformed("expected iteration count attribute"))?;
    let iterations = parse_decimal(iterations)
        .filter(|i| (1..=MAX_CLIENT_ITERATIONS).contains(i))
        .ok_or(AuthError::IterationCount)?;
    if parts.next().is_some() {
        return Err(AuthError::Malformed(
            "garbage at end of server-first-message",
        ));
    }
    Ok(ServerFirst {
        nonce,
        salt,
        iterations,
    })
}

#[cfg(test)]
mod tests;
