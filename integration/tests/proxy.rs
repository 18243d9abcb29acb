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

/// `unix_socket_dir`: clients reach pgshard on `<dir>/.s.PGSQL.<port>` (libpq
/// and psql with `-h <dir>`), with the mode and group asked for, TLS
/// declined there as Postgres does, SHOW CLIENTS saying `unix`; a live
/// socket is not taken over, a stale one is, and the file goes when
/// pgshard stops.
#[tokio::test]
async fn a_unix_socket_serves_clients_and_goes_with_pgshard() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let shown = dir.path().display().to_string();
    let cluster = Cluster::start(&format!(
        "unix_socket_dir = \"{shown}\"\nunix_socket_mode = \"0770\"\nunix_socket_group = \"postgres\""
    ));
    let port = cluster.port();
    let path = dir.path().join(format!(".s.PGSQL.{port}"));
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o770);
    let postgres = nix::unistd::Group::from_name("postgres").unwrap().unwrap();
    assert_eq!(meta.gid(), postgres.gid.as_raw());

    // libpq's way (tokio-postgres takes a directory as the host).
    let client = common::connect_str(&format!(
        "host={shown} port={port} user=app password=app-pw dbname=prod"
    ))
    .await
    .unwrap();
    let row = client
        .query_one("SELECT shard FROM whoami", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 0);
    let statement = client.prepare("SELECT $1::int8 * 2").await.unwrap();
    for i in 0..10i64 {
        let row = client.query_one(&statement, &[&i]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), i * 2);
    }
    client
        .batch_execute("BEGIN; CREATE TEMP TABLE t (x int); INSERT INTO t VALUES (1); ROLLBACK")
        .await
        .unwrap();

    // SHOW CLIENTS: the Unix client with PgBouncer's `unix` and our port.
    let admin = cluster.admin().await;
    let rows = admin.simple_query("SHOW CLIENTS").await.unwrap();
    let unix_clients = rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        })
        .filter(|row| row.get("addr") == Some("unix"))
        .map(|row| row.get("port").map(str::to_owned))
        .collect::<Vec<_>>();
    assert_eq!(unix_clients, vec![Some(port.to_string())]);

    // psql, and an SSLRequest answered N (then the startup goes on).
    let socket_dir = shown.clone();
    let out = tokio::task::spawn_blocking(move || {
        let bins = integration::PgBinaries::find().unwrap();
        std::process::Command::new(bins.bindir().join("psql"))
            .args(["-X", "-A", "-t", "-h", &socket_dir, "-p", &port.to_string()])
            .args(["-U", "app", "-d", "prod", "-c", "SELECT 40 + 2"])
            .env("PGPASSWORD", "app-pw")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
    let ssl_path = path.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let mut stream = std::os::unix::net::UnixStream::connect(ssl_path).unwrap();
        stream.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).unwrap();
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).unwrap();
        byte[0]
    })
    .await
    .unwrap();
    assert_eq!(answer, b'N');

    // The live socket is not taken over by a second pgshard on the port.
    let mut general = router::config::General {
        unix_socket_dir: Some(dir.path().to_owned()),
        ..Default::default()
    };
    let err = proxy::listener::unix::UnixSocket::bind(&general, port).unwrap_err();
    assert!(
        err.to_string().contains("another server is listening"),
        "{err}"
    );
    // A stale one (its process gone) is replaced, and removed with its owner.
    let stale = dir.path().join(".s.PGSQL.1");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    general.unix_socket_mode = router::config::UnixSocketMode(0o700);
    let taken = proxy::listener::unix::UnixSocket::bind(&general, 1)
        .unwrap()
        .unwrap();
    let meta = std::fs::symlink_metadata(taken.path()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    drop(taken);
    assert!(!stale.exists());
    // An unknown group stops the start with its name.
    general.unix_socket_group = Some("no-such-group-here".to_owned());
    let err = proxy::listener::unix::UnixSocket::bind(&general, 2).unwrap_err();
    assert!(err.to_string().contains("no-such-group-here"), "{err}");

    drop(client);
    drop(cluster);
    assert!(!path.exists(), "the socket file outlived pgshard");
}
