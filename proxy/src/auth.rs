//! Password authentication crypto for the Postgres wire protocol: SCRAM-SHA-256 and MD5.
//!
//! Pure functions and state machines over byte slices: no I/O, no tokio. The
//! session code moves the bytes between these and the `Authentication*` /
//! `SASL*` / `PasswordMessage` frames; this module only computes and checks them.
//!
//! Architecture invariant: every comparison of a proof, signature or hash goes
//! through [`constant_time_eq`], and no parser here panics on hostile input.

pub mod md5;
pub mod scram;

/// Why an authentication exchange failed. Every variant ends the exchange.
///
/// The `Display` texts are for logs. What a client is told must not say more
/// than Postgres does (`password authentication failed for user "..."`), so the
/// session maps every variant to that one message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The client's proof (or MD5 hash) does not match the stored secret.
    #[error("password authentication failed")]
    WrongPassword,
    /// The peer sent a message that does not follow the SCRAM grammar.
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    /// The client asked for channel binding (`p=...`), which pgshard does not offer.
    #[error("SCRAM channel binding is not supported")]
    ChannelBindingUnsupported,
    /// The peer used a SCRAM feature Postgres does not support either
    /// (authorization identity, mandatory extensions).
    #[error("unsupported SCRAM feature: {0}")]
    Unsupported(&'static str),
    /// A nonce does not continue the exchange's nonce.
    #[error("SCRAM nonce mismatch")]
    NonceMismatch,
    /// The server's iteration count is outside `1..=MAX_CLIENT_ITERATIONS`.
    #[error("SCRAM iteration count out of range")]
    IterationCount,
    /// The server could not prove it knows the password's secret.
    #[error("SCRAM server signature does not match")]
    ServerSignatureMismatch,
    /// The server ended the exchange with `e=<message>` (RFC 5802 `server-error`).
    #[error("server reported SCRAM error: {0}")]
    Server(String),
    /// A step was called out of order, or after the exchange had finished or failed.
    #[error("SCRAM message out of order")]
    OutOfOrder,
}

/// Compare two byte strings without an early exit on the first difference.
///
/// The length is not secret (hashes and proofs have fixed lengths), so unequal
/// lengths return at once; equal lengths always touch every byte.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // `black_box` keeps the optimiser from turning the fold into an early-exit loop.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn constant_time_eq_compares_whole_slices() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"xbc"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
