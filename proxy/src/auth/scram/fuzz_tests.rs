//! Property tests of SCRAM-SHA-256 on hostile input (issue 35): a whole
//! exchange's messages, mutated, fed to our server side (what a client
//! sends) and our client side (what a server sends). Never a panic; no
//! changed message authenticates.

use proptest::prelude::*;

use super::client_exchange::ClientExchange;
use super::server_exchange::ServerExchange;
use super::ScramSecret;
use crate::protocol::fuzz::{config, mutated};

const PASSWORD: &str = "pw";

fn secret() -> ScramSecret {
    ScramSecret::from_password(PASSWORD, b"0123456789abcdef", 2)
}

fn client() -> ClientExchange {
    ClientExchange::with_user_and_nonce(PASSWORD, "", "clientnonce".to_owned())
}

fn server() -> ServerExchange {
    ServerExchange::with_server_nonce(&secret(), "servernonce".to_owned())
}

/// The four messages of a good exchange: client-first, server-first,
/// client-final, server-final.
fn transcript() -> [Vec<u8>; 4] {
    let (mut client, mut server) = (client(), server());
    let client_first = client.client_first();
    let server_first = server.client_first(&client_first).unwrap();
    let client_final = client.server_first(&server_first).unwrap();
    let server_final = server.client_final(&client_final).unwrap();
    client.server_final(&server_final).unwrap();
    [client_first, server_first, client_final, server_final]
}

/// An iteration count a case may make the client compute (mutations can
/// write a larger one, up to the 10,000,000 it accepts).
fn cheap(server_first: &[u8]) -> bool {
    let count = server_first
        .rsplit(|&b| b == b'=')
        .next()
        .unwrap_or_default();
    count.len() < 5 || !count.iter().all(u8::is_ascii_digit)
}

proptest! {
    #![proptest_config(config(256))]

    /// What a client sends our server: mutated, it fails or is the same
    /// message; only the unchanged exchange authenticates.
    #[test]
    fn mutated_client_messages_never_authenticate(
        first in mutated(Just(transcript()[0].clone()), 3),
        last in mutated(Just(transcript()[2].clone()), 3),
    ) {
        let [client_first, _, client_final, _] = transcript();
        let mut server = server();
        if server.client_first(&first).is_ok() && server.client_final(&last).is_ok() {
            prop_assert_eq!(&first, &client_first);
            prop_assert_eq!(&last, &client_final);
        }
    }

    /// What a server sends our client (pgshard logging into a server).
    #[test]
    fn mutated_server_messages_never_authenticate(
        first in mutated(Just(transcript()[1].clone()), 3),
        last in mutated(Just(transcript()[3].clone()), 3),
    ) {
        prop_assume!(cheap(&first));
        let [client_first, server_first, _, server_final] = transcript();
        let mut client = client();
        prop_assert_eq!(client.client_first(), client_first);
        if client.server_first(&first).is_ok() && client.server_final(&last).is_ok() {
            prop_assert_eq!(&first, &server_first);
            prop_assert_eq!(&last, &server_final);
        }
    }
}
