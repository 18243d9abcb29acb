//! pgshard as a drop-in endpoint, against real servers: logins, the simple
//! and extended protocols, bad input, and psql.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};

use common::{code, connect, Cluster};

#[tokio::test]
async fn simple_and_extended_queries_round_trip() {
    let cluster = Cluster::start("");
    let client = cluster.connect().await;
    let row = client
        .query_one("SELECT shard FROM whoami", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 0);
    let row = client
        .query_one("SELECT $1::int + 1", &[&41i32])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);
    let messages = client.simple_query("SELECT 1; SELECT 2, 3").await.unwrap();
    let rows: Vec<_> = messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.len()),
            _ => None,
        })
        .collect();
    let completes = messages
        .iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::CommandComplete(1)))
        .count();
    assert_eq!((rows, completes), (vec![1, 2], 2));
}

#[tokio::test]
async fn wrong_password_unknown_user_and_database() {
    let cluster = Cluster::start("");
    let err = connect(cluster.port(), "app", "wrong", "prod")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("28P01"), "{err}");
    // An unknown user looks exactly like a wrong password.
    let err = connect(cluster.port(), "stranger", "x", "prod")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("28P01"), "{err}");
    let err = connect(cluster.port(), "app", "app-pw", "nope")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("3D000"), "{err}");
}

#[tokio::test]
async fn garbage_startup_gets_protocol_violation_and_others_keep_working() {
    let cluster = Cluster::start("");
    let port = cluster.port();
    let bad: &[&[u8]] = &[
        b"\xff\xff\xff\xffGET / HTTP/1.1\r\n\r\n", // oversize length
        b"\x00\x00\x00\x09\x00\x02\x00\x00\x00",   // protocol 2
        b"\x00\x00\x00\x0d\x00\x03\x00\x00user\x00", // unterminated
    ];
    for bytes in bad {
        let reply = raw_exchange(port, bytes.to_vec()).await;
        assert_eq!(reply.first(), Some(&b'E'), "{reply:?}");
        assert!(
            reply.windows(6).any(|w| w == b"C08P01"),
            "no protocol-violation code in {:?}",
            String::from_utf8_lossy(&reply)
        );
    }
    let client = cluster.connect().await;
    client.simple_query("SELECT 1").await.unwrap();
}

/// Send `bytes` on a fresh connection and read until the proxy closes it.
async fn raw_exchange(port: u16, bytes: Vec<u8>) -> Vec<u8> {
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        stream.write_all(&bytes).unwrap();
        let mut reply = Vec::new();
        let _ = stream.read_to_end(&mut reply);
        reply
    })
    .await
    .unwrap()
}

#[test]
fn psql_round_trip_and_ssl_refusal() {
    let cluster = Cluster::start("");
    // sslmode=prefer: psql asks for TLS first, pgshard answers N, psql goes on in clear.
    assert_eq!(
        common::psql(cluster.port(), "prefer", "SELECT shard FROM whoami"),
        "0"
    );
}
