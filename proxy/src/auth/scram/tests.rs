//! Tests for SCRAM-SHA-256: the RFC 7677 transcript, both sides talking, and hostile input.

use super::crypto::{hmac_sha256, xor};
use super::message::parse_server_first;
use super::*;
use crate::auth::AuthError;

// RFC 7677 section 3: user "user", password "pencil".
const PASSWORD: &str = "pencil";
const CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const SALT_B64: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
const CLIENT_FIRST: &[u8] = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
const SERVER_FIRST: &[u8] =
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const CLIENT_FINAL: &[u8] = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
const SERVER_FINAL: &[u8] = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

/// The `pg_authid` verifier for "pencil" with the RFC's salt and iteration count.
/// Computed apart from this code (Python's `hashlib.pbkdf2_hmac` and `hmac`), and
/// proven right by the server-side RFC transcript below: only the right StoredKey
/// accepts the RFC's proof, only the right ServerKey yields its signature.
const PENCIL_VERIFIER: &str = "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$\
WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=";

fn pencil_secret() -> ScramSecret {
    ScramSecret::parse(PENCIL_VERIFIER).expect("the RFC verifier parses")
}

/// A cheap secret (2 iterations) for tests that run many exchanges.
fn cheap_secret(password: &str) -> ScramSecret {
    ScramSecret::from_password(password, b"0123456789abcdef", 2)
}

/// Run a whole exchange between our client and our server.
fn exchange(secret: &ScramSecret, client_password: &str) -> Result<(), AuthError> {
    let mut server = ServerExchange::new(secret);
    let mut client = ClientExchange::new(client_password);
    let server_first = server.client_first(&client.client_first())?;
    let client_final = client.server_first(&server_first)?;
    let server_final = server.client_final(&client_final)?;
    client.server_final(&server_final)
}

#[test]
fn client_side_reproduces_the_rfc_7677_transcript() {
    let mut client = ClientExchange::with_user_and_nonce(PASSWORD, "user", CLIENT_NONCE.to_owned());
    assert_eq!(client.client_first(), CLIENT_FIRST);
    assert_eq!(
        client.server_first(SERVER_FIRST).as_deref(),
        Ok(CLIENT_FINAL)
    );
    assert!(!client.is_complete());
    assert_eq!(client.server_final(SERVER_FINAL), Ok(()));
    assert!(client.is_complete());
}

#[test]
fn server_side_reproduces_the_rfc_7677_transcript() {
    let mut server = ServerExchange::with_server_nonce(&pencil_secret(), SERVER_NONCE.to_owned());
    assert_eq!(
        server.client_first(CLIENT_FIRST).as_deref(),
        Ok(SERVER_FIRST)
    );
    assert_eq!(
        server.client_final(CLIENT_FINAL).as_deref(),
        Ok(SERVER_FINAL)
    );
}

#[test]
fn the_pencil_verifier_matches_derivation_and_round_trips() {
    let salt = BASE64.decode(SALT_B64).expect("salt");
    let derived = ScramSecret::from_password(PASSWORD, &salt, 4096);
    assert_eq!(derived, pencil_secret());
    assert_eq!(derived.to_verifier(), PENCIL_VERIFIER);
    assert_eq!(pencil_secret().to_verifier(), PENCIL_VERIFIER);
    assert_eq!(derived.iterations, 4096);
    assert_eq!(derived.salt, salt);
    assert_eq!(
        BASE64.encode(derived.stored_key),
        "WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY="
    );
    assert_eq!(
        BASE64.encode(derived.server_key),
        "wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="
    );
}

#[test]
fn generated_secrets_have_fresh_salts_and_round_trip() {
    let a = ScramSecret::generate("hunter2");
    let b = ScramSecret::generate("hunter2");
    assert_eq!(a.iterations, DEFAULT_ITERATIONS);
    assert_eq!(a.salt.len(), SALT_LEN);
    assert_ne!(a.salt, b.salt);
    assert_ne!(a, b);
    assert_eq!(ScramSecret::parse(&a.to_verifier()), Some(a.clone()));
    assert_eq!(exchange(&a, "hunter2"), Ok(()));
}

#[test]
fn zero_iterations_are_taken_as_one() {
    assert_eq!(
        ScramSecret::from_password("pw", b"salt", 0),
        ScramSecret::from_password("pw", b"salt", 1)
    );
}

#[test]
fn parse_refuses_anything_but_a_well_formed_verifier() {
    let ok = PENCIL_VERIFIER;
    let key = "WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=";
    let bad = [
        String::new(),
        "md53175bce1d3201d16594cebf9d7eb3f9d".to_owned(),
        "pencil".to_owned(),
        ok.replace("SCRAM-SHA-256", "SCRAM-SHA-1"),
        ok.replace("SCRAM-SHA-256", "scram-sha-256"),
        format!("{ok}$"),
        format!("{ok}$extra"),
        ok.replacen('$', "", 1),
        ok.replace("4096:", "4096"),
        ok.replace("4096", "0"),
        ok.replace("4096", "-1"),
        ok.replace("4096", "+4096"),
        ok.replace("4096", " 4096"),
        ok.replace("4096", ""),
        ok.replace("4096", "99999999999999999999"),
        ok.replace("4096", "4294967296"),
        ok.replace(SALT_B64, ""),
        ok.replace(SALT_B64, "not base64!"),
        ok.replace(SALT_B64, "W22ZaJ0SNY7soEsUEjb6gQ"),
        ok.replace(key, ""),
        ok.replace(key, "AAAA"),
        ok.replace(key, &BASE64.encode([0u8; 33])),
        ok.replace(&format!("{key}:"), key),
        format!("{ok}:extra"),
        ok.replace(key, "WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY"),
    ];
    for verifier in &bad {
        assert_eq!(ScramSecret::parse(verifier), None, "{verifier:?}");
    }
    let max = ok.replace("4096", "4294967295");
    assert_eq!(
        ScramSecret::parse(&max).map(|s| s.iterations),
        Some(u32::MAX)
    );
}

#[test]
fn debug_output_hides_keys_and_passwords() {
    let secret = pencil_secret();
    let shown = format!("{secret:?}");
    assert!(shown.contains("4096"), "{shown}");
    assert!(
        !shown.contains(&BASE64.encode(secret.stored_key)),
        "{shown}"
    );
    assert!(
        !shown.contains(&BASE64.encode(secret.server_key)),
        "{shown}"
    );
    assert!(
        !shown.contains(&format!("{:?}", secret.stored_key)),
        "{shown}"
    );

    let mut server = ServerExchange::new(&secret);
    assert!(server.client_first(CLIENT_FIRST).is_ok());
    let shown = format!("{server:?}");
    assert!(
        !shown.contains(&BASE64.encode(secret.stored_key)),
        "{shown}"
    );
    assert!(
        !shown.contains(&format!("{:?}", secret.stored_key)),
        "{shown}"
    );

    let client = ClientExchange::new("very-secret-password");
    let shown = format!("{client:?}");
    assert!(!shown.contains("very-secret"), "{shown}");
    assert!(!shown.contains("118, 101, 114, 121"), "{shown}");
}

#[test]
fn right_password_passes_and_wrong_password_fails() {
    let secret = cheap_secret("correct horse");
    assert_eq!(exchange(&secret, "correct horse"), Ok(()));
    assert_eq!(
        exchange(&secret, "correct horsE"),
        Err(AuthError::WrongPassword)
    );
    assert_eq!(exchange(&secret, ""), Err(AuthError::WrongPassword));
    assert_eq!(exchange(&pencil_secret(), PASSWORD), Ok(()));
    assert_eq!(
        exchange(&pencil_secret(), "pencil "),
        Err(AuthError::WrongPassword)
    );
}

#[test]
fn passwords_are_saslprepped_or_used_raw() {
    // RFC 4013 section 3: SOFT HYPHEN maps to nothing, so "I\u{AD}X" is "IX".
    assert_eq!(
        ScramSecret::from_password("I\u{AD}X", b"s", 2),
        ScramSecret::from_password("IX", b"s", 2)
    );
    assert_eq!(exchange(&cheap_secret("IX"), "I\u{AD}X"), Ok(()));
    // NFKC: "\u{2168}" (ROMAN NUMERAL NINE) preps to "IX".
    assert_eq!(exchange(&cheap_secret("\u{2168}"), "IX"), Ok(()));
    // A control character is prohibited: SASLprep fails, the raw bytes are used.
    assert_eq!(prepare_password("a\u{7}b"), b"a\x07b");
    assert_eq!(exchange(&cheap_secret("a\u{7}b"), "a\u{7}b"), Ok(()));
    assert_eq!(
        exchange(&cheap_secret("a\u{7}b"), "ab"),
        Err(AuthError::WrongPassword)
    );
}

/// A client-final-message for `server_first`, built by hand so tests can choose
/// the channel-binding input and nonce.
fn hand_made_client_final(
    password: &str,
    client_first_bare: &[u8],
    server_first: &[u8],
    cbind_b64: &str,
    nonce: &[u8],
) -> Vec<u8> {
    let parsed = parse_server_first(server_first).expect("server-first");
    let keys = Keys::derive(password.as_bytes(), &parsed.salt, parsed.iterations);
    let mut without_proof = format!("c={cbind_b64},r=").into_bytes();
    without_proof.extend_from_slice(nonce);
    let auth = [client_first_bare, b",", server_first, b",", &without_proof];
    let proof = xor(&keys.client_key, &hmac_sha256(&keys.stored_key, &auth));
    without_proof.extend_from_slice(b",p=");
    without_proof.extend_from_slice(BASE64.encode(proof).as_bytes());
    without_proof
}

#[test]
fn y_flag_is_accepted_with_the_matching_binding_input() {
    let secret = cheap_secret("pw");
    let bare = b"n=,r=abc";
    for (flag, cbind, expect_ok) in [
        ("y", "eSws", true),
        ("y", "biws", false),
        ("n", "eSws", false),
        ("n", "biws", true),
    ] {
        let mut server = ServerExchange::with_server_nonce(&secret, "XYZ".to_owned());
        let first = format!("{flag},,n=,r=abc");
        let server_first = server.client_first(first.as_bytes()).expect("client-first");
        let last = hand_made_client_final("pw", bare, &server_first, cbind, b"abcXYZ");
        let result = server.client_final(&last);
        assert_eq!(result.is_ok(), expect_ok, "{flag} {cbind}: {result:?}");
    }
}

#[test]
fn unsupported_gs2_features_are_refused() {
    let cases: [(&[u8], AuthError); 9] = [
        (
            b"p=tls-server-end-point,,n=,r=abc",
            AuthError::ChannelBindingUnsupported,
        ),
        (b"p=,,n=,r=abc", AuthError::ChannelBindingUnsupported),
        (
            b"n,a=admin,n=,r=abc",
            AuthError::Unsupported("authorization identity"),
        ),
        (
            b"n,,m=ext,n=,r=abc",
            AuthError::Unsupported("mandatory extension"),
        ),
        (
            b"x,,n=,r=abc",
            AuthError::Malformed("unexpected channel-binding flag"),
        ),
        (
            b"n,b=1,n=,r=abc",
            AuthError::Malformed("unexpected attribute in GS2 header"),
        ),
        (
            b"n,,n=,r=a b",
            AuthError::Malformed("invalid characters in nonce"),
        ),
        (
            b"n,,n=,r=",
            AuthError::Malformed("invalid characters in nonce"),
        ),
        (
            b"n,,r=abc",
            AuthError::Malformed("expected user name attribute"),
        ),
    ];
    for (message, expected) in cases {
        let mut server = ServerExchange::new(&cheap_secret("pw"));
        assert_eq!(server.client_first(message), Err(expected), "{message:?}");
    }
    // Extensions after the nonce are ignored, as Postgres does.
    let mut server = ServerExchange::new(&cheap_secret("pw"));
    assert!(server.client_first(b"n,,n=someone,r=abc,x=ext").is_ok());
}

#[test]
fn nonce_mismatches_are_refused_on_both_sides() {
    let secret = cheap_secret("pw");
    let mut server = ServerExchange::with_server_nonce(&secret, "XYZ".to_owned());
    let server_first = server.client_first(b"n,,n=,r=abc").expect("client-first");
    let last = hand_made_client_final("pw", b"n=,r=abc", &server_first, "biws", b"abcXYQ");
    assert_eq!(server.client_final(&last), Err(AuthError::NonceMismatch));

    for server_first in [
        &b"r=someone-else,s=c2FsdA==,i=2"[..],
        b"r=abc,s=c2FsdA==,i=2",     // no server part
        b"r=ab,s=c2FsdA==,i=2",      // shorter than ours
        b"r=xabcXYZ,s=c2FsdA==,i=2", // ours, but not as a prefix
    ] {
        let mut client = ClientExchange::with_user_and_nonce("pw", "", "abc".to_owned());
        client.client_first();
        assert_eq!(
            client.server_first(server_first),
            Err(AuthError::NonceMismatch),
            "{server_first:?}"
        );
    }
    let mut client = ClientExchange::with_user_and_nonce("pw", "", "abc".to_owned());
    client.client_first();
    assert_eq!(
        client.server_first(b"r=abc\x01,s=c2FsdA==,i=2"),
        Err(AuthError::Malformed("invalid characters in nonce"))
    );
}

#[test]
fn iteration_counts_are_bounded() {
    for (iterations, expected) in [
        ("0", AuthError::IterationCount),
        ("10000001", AuthError::IterationCount),
        ("4294967295", AuthError::IterationCount),
        ("4294967296", AuthError::IterationCount),
        (
            "99999999999999999999999999999999",
            AuthError::IterationCount,
        ),
        ("-1", AuthError::IterationCount),
        ("+1", AuthError::IterationCount),
        (" 1", AuthError::IterationCount),
        ("", AuthError::IterationCount),
        ("1x", AuthError::IterationCount),
        ("0x10", AuthError::IterationCount),
        (
            "1,x=1",
            AuthError::Malformed("garbage at end of server-first-message"),
        ),
        (
            "1,",
            AuthError::Malformed("garbage at end of server-first-message"),
        ),
    ] {
        let mut client = ClientExchange::with_user_and_nonce("pw", "", "abc".to_owned());
        client.client_first();
        let server_first = format!("r=abcXYZ,s=c2FsdA==,i={iterations}");
        assert_eq!(
            client.server_first(server_first.as_bytes()),
            Err(expected),
            "{iterations:?}"
        );
    }
    assert_eq!(parse_decimal(b"10000000"), Some(MAX_CLIENT_ITERATIONS));
    assert_eq!(parse_decimal(b"4294967295"), Some(u32::MAX));
    assert_eq!(parse_decimal(b"4294967296"), None);
    assert_eq!(parse_decimal(b"007"), Some(7));
}

#[test]
fn server_first_needs_its_attributes_in_order() {
    for (message, expected) in [
        (
            &b"m=ext,r=abcXYZ,s=c2FsdA==,i=2"[..],
            AuthError::Unsupported("mandatory extension"),
        ),
        (
            b"s=c2FsdA==,r=abcXYZ,i=2",
            AuthError::Malformed("expected nonce attribute"),
        ),
        (
            b"r=abcXYZ,i=2,s=c2FsdA==",
            AuthError::Malformed("expected salt attribute"),
        ),
        (
            b"r=abcXYZ,s=c2FsdA==",
            AuthError::Malformed("expected iteration count attribute"),
        ),
        (b"r=abcXYZ,s=,i=2", AuthError::Malformed("invalid salt")),
        (
            b"r=abcXYZ,s=c2FsdA=,i=2",
            AuthError::Malformed("invalid salt"),
        ),
        (b"r=abcXYZ,s=!!!!,i=2", AuthError::Malformed("invalid salt")),
        (b"", AuthError::Malformed("expected nonce attribute")),
        (
            b"e=other-error",
            AuthError::Malformed("expected nonce attribute"),
        ),
    ] {
        let mut client = ClientExchange::with_user_and_nonce("pw", "", "abc".to_owned());
        client.client_first();
        assert_eq!(client.server_first(message), Err(expected), "{message:?}");
    }
}

#[test]
fn client_final_needs_its_attributes_in_order() {
    let secret = cheap_secret("pw");
    let proof = BASE64.encode([0u8; 32]);
    for (message, expected) in [
        (
            format!("r=abcXYZ,c=biws,p={proof}"),
            AuthError::Malformed("expected channel-binding attribute"),
        ),
        (
            format!("c=biws,p={proof}"),
            AuthError::Malformed("expected nonce attribute"),
        ),
        (
            "c=biws,r=abcXYZ".to_owned(),
            AuthError::Malformed("expected proof attribute"),
        ),
        (
            "c=biws,r=abcXYZ,p=".to_owned(),
            AuthError::Malformed("invalid proof"),
        ),
        (
            "c=biws,r=abcXYZ,p=AAAA".to_owned(),
            AuthError::Malformed("invalid proof"),
        ),
        (
            format!("c=biws,r=abcXYZ,p={proof},x=1"),
            AuthError::Malformed("expected proof attribute"),
        ),
        (
            format!("c=biws,r=abcXYZ,x=1,p={proof}"),
            AuthError::WrongPassword,
        ),
        (
            format!("c=cD10bHM=,r=abcXYZ,p={proof}"),
            AuthError::Malformed("unexpected channel-binding attribute in client-final-message"),
        ),
    ] {
        let mut server = ServerExchange::with_server_nonce(&secret, "XYZ".to_owned());
        server.client_first(b"n,,n=,r=abc").expect("client-first");
        assert_eq!(
            server.client_final(message.as_bytes()),
            Err(expected),
            "{message:?}"
        );
    }
}

#[test]
fn server_final_is_checked() {
    let run = |server_final: &[u8]| {
        let mut client =
            ClientExchange::with_user_and_nonce(PASSWORD, "user", CLIENT_NONCE.to_owned());
        client.client_first();
        client.server_first(SERVER_FIRST).expect("server-first");
        client.server_final(server_final)
    };
    assert_eq!(run(SERVER_FINAL), Ok(()));
    assert_eq!(
        run(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
        Err(AuthError::ServerSignatureMismatch)
    );
    assert_eq!(
        run(b"e=invalid-proof"),
        Err(AuthError::Server("invalid-proof".to_owned()))
    );
    assert_eq!(
        run(b"e=\xff"),
        Err(AuthError::Server("\u{FFFD}".to_owned()))
    );
    for malformed in [
        &b""[..],
        b"v=",
        b"v=AAAA",
        b"x=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
        b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=,x=1",
        b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4",
    ] {
        assert!(
            matches!(run(malformed), Err(AuthError::Malformed(_))),
            "{malformed:?}"
        );
    }
}

#[test]
fn steps_out_of_order_are_refused() {
    let secret = cheap_secret("pw");
    let mut server = ServerExchange::new(&secret);
    assert_eq!(
        server.client_final(CLIENT_FINAL),
        Err(AuthError::OutOfOrder)
    );
    // The misstep ended the exchange.
    assert_eq!(
        server.client_first(b"n,,n=,r=abc"),
        Err(AuthError::OutOfOrder)
    );

    let mut server = ServerExchange::new(&secret);
    assert!(server.client_first(b"n,,n=,r=abc").is_ok());
    assert_eq!(
        server.client_first(b"n,,n=,r=abc"),
        Err(AuthError::OutOfOrder)
    );

    // A failed proof cannot be retried on the same exchange.
    let mut server = ServerExchange::with_server_nonce(&secret, "XYZ".to_owned());
    let server_first = server.client_first(b"n,,n=,r=abc").expect("client-first");
    let wrong = hand_made_client_final("nope", b"n=,r=abc", &server_first, "biws", b"abcXYZ");
    let right = hand_made_client_final("pw", b"n=,r=abc", &server_first, "biws", b"abcXYZ");
    assert_eq!(server.client_final(&wrong), Err(AuthError::WrongPassword));
    assert_eq!(server.client_final(&right), Err(AuthError::OutOfOrder));

    let mut client = ClientExchange::new("pw");
    assert_eq!(
        client.server_first(b"r=x,s=c2FsdA==,i=2"),
        Err(AuthError::OutOfOrder)
    );
    let mut client = ClientExchange::new("pw");
    client.client_first();
    assert_eq!(
        client.server_final(SERVER_FINAL),
        Err(AuthError::OutOfOrder)
    );
    assert!(!client.is_complete());
}

/// xorshift64: a deterministic source of garbage, so failures reproduce.
struct Garbage(u64);

impl Garbage {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Bytes drawn mostly from SCRAM's own alphabet, so some get past the first checks.
    fn bytes(&mut self, max_len: u64) -> Vec<u8> {
        const ALPHABET: &[u8] = b"nypcrsivema=,,,==AZaz09+/XYZ\x00\xff\x80 \n";
        let len = self.next() % (max_len + 1);
        (0..len)
            .map(|_| ALPHABET[(self.next() % ALPHABET.len() as u64) as usize])
            .collect()
    }
}

/// Every prefix, every one-byte change, every one-byte deletion, and random
/// suffixes and whole messages: what a fuzzer would try first.
/// Never the valid message itself.
fn hostile_variants(valid: &[u8], garbage: &mut Garbage) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for len in 0..valid.len() {
        out.push(valid[..len].to_vec());
        let mut deleted = valid.to_vec();
        deleted.remove(len);
        out.push(deleted);
        for replacement in [0x00, b',', b'=', b'a', b'9', b'/', 0xff] {
            if valid[len] != replacement {
                let mut changed = valid.to_vec();
                changed[len] = replacement;
                out.push(changed);
            }
        }
    }
    for _ in 0..300 {
        let cut = (garbage.next() % (valid.len() as u64 + 1)) as usize;
        let mut mixed = valid[..cut].to_vec();
        mixed.extend(garbage.bytes(40));
        out.push(mixed);
        out.push(garbage.bytes(80));
    }
    out.retain(|variant| variant != valid);
    out
}

#[test]
fn hostile_input_at_every_step_is_an_error_not_a_panic() {
    let secret = cheap_secret("pw");
    let new_server = || ServerExchange::with_server_nonce(&secret, "SERVERNONCE".to_owned());
    let new_client = || ClientExchange::with_user_and_nonce("pw", "", "CLIENTNONCE".to_owned());

    // A valid transcript to mutate.
    let (mut server, mut client) = (new_server(), new_client());
    let client_first = client.client_first();
    let server_first = server.client_first(&client_first).expect("client-first");
    let client_final = client.server_first(&server_first).expect("server-first");
    let server_final = server.client_final(&client_final).expect("client-final");
    assert_eq!(client.server_final(&server_final), Ok(()));

    let mut garbage = Garbage(0x9e37_79b9_7f4a_7c15);

    // Server, step 1: whatever the client-first, no panic.
    for variant in hostile_variants(&client_first, &mut garbage) {
        let _ = new_server().client_first(&variant);
    }

    // Client, step 2. A mutated digit can raise the iteration count; keep those cheap.
    for variant in hostile_variants(&server_first, &mut garbage) {
        if parse_server_first(&variant).is_ok_and(|first| first.iterations > 1000) {
            continue;
        }
        let mut client = new_client();
        client.client_first();
        let _ = client.server_first(&variant);
    }

    // Server, step 3: every change to a valid client-final is refused.
    for variant in hostile_variants(&client_final, &mut garbage) {
        let mut server = new_server();
        server.client_first(&client_first).expect("client-first");
        let result = server.client_final(&variant);
        assert!(
            result.is_err(),
            "{:?} accepted",
            String::from_utf8_lossy(&variant)
        );
    }

    // Client, step 4: every change to a valid server-final is refused.
    for variant in hostile_variants(&server_final, &mut garbage) {
        let mut client = new_client();
        client.client_first();
        client.server_first(&server_first).expect("server-first");
        let result = client.server_final(&variant);
        assert!(
            result.is_err(),
            "{:?} accepted",
            String::from_utf8_lossy(&variant)
        );
        assert!(!client.is_complete());
    }

    // Verifiers, including non-UTF-8-looking garbage made into strings.
    for variant in hostile_variants(PENCIL_VERIFIER.as_bytes(), &mut garbage) {
        let _ = ScramSecret::parse(&String::from_utf8_lossy(&variant));
    }
}
