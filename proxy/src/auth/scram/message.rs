//! Parsing of SCRAM-SHA-256 messages from untrusted bytes: the attributes,
//! the client-first, client-final and server-first messages, and the base64
//! keys and decimal counts inside them. Malformed input is an [`AuthError`].

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use super::{KEY_LEN, MAX_CLIENT_ITERATIONS};
use crate::auth::AuthError;

/// A base64 32-byte key, proof or signature; `None` for bad base64 or another length.
pub(super) fn decode_key(b64: &[u8]) -> Option<[u8; KEY_LEN]> {
    BASE64.decode(b64).ok()?.try_into().ok()
}

/// A decimal u32 of ASCII digits only (no sign, no spaces); `None` on overflow.
pub(super) fn parse_decimal(digits: &[u8]) -> Option<u32> {
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
pub(super) struct ClientFirst<'a> {
    pub(super) cbind_flag: u8,
    /// client-first-message-bare: everything after the GS2 header.
    pub(super) bare: &'a [u8],
    pub(super) nonce: &'a [u8],
}

/// `gs2-cbind-flag "," [authzid] "," [reserved-mext ","] username "," nonce ["," extensions]`,
/// with Postgres' rules: no channel binding, no authzid, no mandatory extension.
pub(super) fn parse_client_first(data: &[u8]) -> Result<ClientFirst<'_>, AuthError> {
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
pub(super) struct ClientFinal<'a> {
    pub(super) channel_binding: &'a [u8],
    pub(super) nonce: &'a [u8],
    /// client-final-message-without-proof, part of the AuthMessage.
    pub(super) without_proof: &'a [u8],
    pub(super) proof: [u8; KEY_LEN],
}

/// `"c=" cbind-input "," "r=" nonce ["," extensions] "," "p=" proof`.
pub(super) fn parse_client_final(data: &[u8]) -> Result<ClientFinal<'_>, AuthError> {
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
pub(super) struct ServerFirst<'a> {
    pub(super) nonce: &'a [u8],
    pub(super) salt: Vec<u8>,
    pub(super) iterations: u32,
}

/// `["m=" ext ","] "r=" nonce "," "s=" salt "," "i=" iteration-count`; like libpq,
/// nothing may follow the iteration count.
pub(super) fn parse_server_first(data: &[u8]) -> Result<ServerFirst<'_>, AuthError> {
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
