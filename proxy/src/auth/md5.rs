//! Postgres MD5 password authentication (`AuthenticationMD5Password`): hashing and checking.
//!
//! The client answers a 4-byte salt with
//! `"md5" + hex(md5(hex(md5(password + user)) + salt))`. The inner
//! `"md5" + hex(md5(password + user))` is what `pg_authid.rolpassword` stores for
//! MD5 roles, so a server can check a response from either the password or that
//! stored hash.

use ::md5::{Digest, Md5};

use super::constant_time_eq;

/// Length of `"md5"` followed by 32 hex digits, both for stored hashes and responses.
const HASH_LEN: usize = 3 + 32;

/// The response a client sends in its PasswordMessage for this user, password and salt.
pub fn md5_password(user: &str, password: &str, salt: [u8; 4]) -> String {
    salted(inner_hex(user, password).as_bytes(), salt)
}

/// Check a PasswordMessage `response` against the user's cleartext password.
///
/// `response` is the message payload; one trailing NUL (the C string terminator
/// on the wire) is ignored. The comparison is constant-time.
pub fn verify(user: &str, password: &str, salt: [u8; 4], response: &[u8]) -> bool {
    let expected = md5_password(user, password, salt);
    constant_time_eq(expected.as_bytes(), strip_nul(response))
}

/// Check a PasswordMessage `response` against a stored `pg_authid` MD5 hash
/// (`"md5"` + 32 lowercase hex digits). A stored value of any other shape never
/// verifies. The comparison is constant-time.
pub fn verify_stored(stored: &str, salt: [u8; 4], response: &[u8]) -> bool {
    let Some(inner) = stored.strip_prefix("md5") else {
        return false;
    };
    if stored.len() != HASH_LEN
        || !inner
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return false;
    }
    let expected = salted(inner.as_bytes(), salt);
    constant_time_eq(expected.as_bytes(), strip_nul(response))
}

/// A fresh random salt for an `AuthenticationMD5Password` request.
pub fn random_salt() -> [u8; 4] {
    let mut salt = [0u8; 4];
    rand::fill(&mut salt);
    salt
}

/// `hex(md5(password + user))`: the stored hash without its `"md5"` prefix.
fn inner_hex(user: &str, password: &str) -> String {
    let mut hasher = Md5::new();
    hasher.update(password.as_bytes());
    hasher.update(user.as_bytes());
    to_hex(&hasher.finalize())
}

/// `"md5" + hex(md5(inner_hex + salt))`.
fn salted(inner_hex: &[u8], salt: [u8; 4]) -> String {
    let mut hasher = Md5::new();
    hasher.update(inner_hex);
    hasher.update(salt);
    let mut out = String::with_capacity(HASH_LEN);
    out.push_str("md5");
    out.push_str(&to_hex(&hasher.finalize()));
    out
}

fn strip_nul(response: &[u8]) -> &[u8] {
    response.strip_suffix(b"\0").unwrap_or(response)
}

/// Lowercase hex, as Postgres writes MD5 digests.
fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_hash_matches_the_known_postgres_value() {
        // md5("postgres" + "postgres"), the well-known stored hash `md53175bc...`.
        assert_eq!(
            inner_hex("postgres", "postgres"),
            "3175bce1d3201d16594cebf9d7eb3f9d"
        );
    }

    #[test]
    fn md5_password_matches_a_step_by_step_computation() {
        let salt = [0x01, 0x02, 0x03, 0x04];
        // Independently, straight from the md-5 crate.
        let inner = Md5::digest(b"postgrespostgres");
        let inner_hex: String = inner.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(inner_hex, "3175bce1d3201d16594cebf9d7eb3f9d");
        let mut outer_input = inner_hex.into_bytes();
        outer_input.extend_from_slice(&salt);
        let outer = Md5::digest(&outer_input);
        let expected: String = std::iter::once("md5".to_owned())
            .chain(outer.iter().map(|b| format!("{b:02x}")))
            .collect();

        assert_eq!(md5_password("postgres", "postgres", salt), expected);
        // And cross-checked with Python's hashlib.
        assert_eq!(expected, "md568be9ed08db75f318087ab337aaea044");
        assert_eq!(
            md5_password("postgres", "postgres", [0xde, 0xad, 0xbe, 0xef]),
            "md58ee245854025535aedb7b15709315318"
        );
    }

    #[test]
    fn verify_accepts_the_right_response_only() {
        let salt = [0x01, 0x02, 0x03, 0x04];
        let good = b"md568be9ed08db75f318087ab337aaea044";
        assert!(verify("postgres", "postgres", salt, good));
        assert!(verify(
            "postgres",
            "postgres",
            salt,
            b"md568be9ed08db75f318087ab337aaea044\0"
        ));

        assert!(!verify("postgres", "wrong", salt, good));
        assert!(!verify("other", "postgres", salt, good));
        assert!(!verify("postgres", "postgres", [0, 2, 3, 4], good));
        assert!(!verify(
            "postgres",
            "postgres",
            salt,
            b"md568be9ed08db75f318087ab337aaea04"
        ));
        assert!(!verify(
            "postgres",
            "postgres",
            salt,
            b"md568be9ed08db75f318087ab337aaea0440"
        ));
        assert!(!verify(
            "postgres",
            "postgres",
            salt,
            b"MD568BE9ED08DB75F318087AB337AAEA044"
        ));
        assert!(!verify("postgres", "postgres", salt, b""));
        assert!(!verify("postgres", "postgres", salt, b"\0"));
        assert!(!verify("postgres", "postgres", salt, b"\xff\xfe garbage"));
    }

    #[test]
    fn verify_stored_checks_against_the_pg_authid_hash() {
        let salt = [0x01, 0x02, 0x03, 0x04];
        let stored = "md53175bce1d3201d16594cebf9d7eb3f9d";
        let good = b"md568be9ed08db75f318087ab337aaea044";
        assert!(verify_stored(stored, salt, good));
        assert!(!verify_stored(stored, [9, 9, 9, 9], good));
        assert!(!verify_stored(stored, salt, b"md5"));
        for bad_stored in [
            "",
            "md5",
            "3175bce1d3201d16594cebf9d7eb3f9d",
            "md53175BCE1D3201D16594CEBF9D7EB3F9D",
            "md53175bce1d3201d16594cebf9d7eb3f9",
            "md53175bce1d3201d16594cebf9d7eb3f9dd",
            "md53175bce1d3201d16594cebf9d7eb3f9g",
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$x:y",
        ] {
            assert!(!verify_stored(bad_stored, salt, good), "{bad_stored:?}");
        }
    }

    #[test]
    fn random_salts_vary() {
        let salts: Vec<[u8; 4]> = (0..8).map(|_| random_salt()).collect();
        assert!(salts.iter().any(|s| *s != salts[0]));
    }
}
