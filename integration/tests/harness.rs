//! The harness itself: several servers, databases, users, crash and restart.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use integration::{PasswordEncryption, PgServer, ServerOptions};

#[test]
fn two_servers_survive_one_being_killed_and_restarted() {
    let mut servers = PgServer::start_many(2, &ServerOptions::default()).unwrap();
    assert_ne!(servers[0].port(), servers[1].port());
    for (i, server) in servers.iter().enumerate() {
        server.create_database("app", None).unwrap();
        server
            .psql(
                "app",
                &format!("CREATE TABLE t (id int); INSERT INTO t VALUES ({i})"),
            )
            .unwrap();
        // Each server really is separate: it sees only its own row.
        assert_eq!(
            server.psql("app", "SELECT id FROM t").unwrap(),
            i.to_string()
        );
    }

    servers[0].kill().unwrap();
    assert!(!servers[0].is_running());
    let err = servers[0].psql("app", "SELECT 1").unwrap_err();
    assert!(err.to_string().contains("psql"), "{err}");
    assert_eq!(servers[1].psql("app", "SELECT id FROM t").unwrap(), "1");

    servers[0].start_again().unwrap();
    // Crash recovery kept the committed row.
    assert_eq!(servers[0].psql("app", "SELECT id FROM t").unwrap(), "0");
}

#[test]
fn a_replica_streams_from_its_primary_and_refuses_writes() {
    let primary = PgServer::start().unwrap();
    primary.create_database("app", None).unwrap();
    primary
        .psql("app", "CREATE TABLE t (id int); INSERT INTO t VALUES (1)")
        .unwrap();
    let replica = PgServer::start_replica(&primary, ServerOptions::default()).unwrap();
    assert_ne!(replica.port(), primary.port());
    assert_eq!(
        replica.psql("app", "SELECT pg_is_in_recovery()").unwrap(),
        "t"
    );
    primary.psql("app", "INSERT INTO t VALUES (2)").unwrap();
    replica.wait_for_replay(&primary).unwrap();
    assert_eq!(replica.psql("app", "SELECT sum(id) FROM t").unwrap(), "3");
    let err = replica.psql("app", "INSERT INTO t VALUES (3)").unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
}

#[test]
fn server_is_set_up_for_tests() {
    let server = PgServer::start().unwrap();
    assert_eq!(
        server
            .psql("postgres", "SHOW max_prepared_transactions")
            .unwrap(),
        "64"
    );
    assert_eq!(
        server.psql("postgres", "SHOW listen_addresses").unwrap(),
        "127.0.0.1"
    );
    assert_eq!(
        server.psql("postgres", "SHOW server_encoding").unwrap(),
        "UTF8"
    );
}

#[test]
fn users_get_scram_or_md5_secrets() {
    let server = PgServer::start().unwrap();
    server
        .create_user("scram_user", "s3cret'pw", PasswordEncryption::ScramSha256)
        .unwrap();
    server
        .create_user("md5_user", "pw", PasswordEncryption::Md5)
        .unwrap();
    let secrets = server
        .psql(
            "postgres",
            "SELECT rolname || ':' || split_part(rolpassword, '$', 1) FROM pg_authid \
             WHERE rolname LIKE '%_user' ORDER BY 1",
        )
        .unwrap();
    let lines: Vec<&str> = secrets.lines().collect();
    assert_eq!(lines[1], "scram_user:SCRAM-SHA-256");
    assert!(lines[0].starts_with("md5_user:md5"), "{secrets}");
}

#[test]
fn dropped_server_is_stopped_and_removed() {
    let server = PgServer::start().unwrap();
    let dir = server.dir().to_owned();
    let port = server.port();
    drop(server);
    assert!(!dir.exists(), "{} still exists", dir.display());
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn panicking_test_still_cleans_up() {
    let dir = std::sync::Mutex::new(None);
    let result = std::panic::catch_unwind(|| {
        let server = PgServer::start().unwrap();
        *dir.lock().unwrap() = Some((server.dir().to_owned(), server.port()));
        panic!("test failure while the server runs");
    });
    assert!(result.is_err());
    let (dir, port) = dir.into_inner().unwrap().unwrap();
    assert!(!dir.exists());
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}
