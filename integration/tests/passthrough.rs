//! pgshard's pass-through stage against real servers: clients reach shard 0 of
//! the cluster they name, the server authenticates them, bad startups fail
//! cleanly and do not disturb other clients.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};

use integration::{PasswordEncryption, PgServer, ServerOptions, TestProxy};

struct Setup {
    _servers: Vec<PgServer>,
    proxy: TestProxy,
}

/// Two servers, each with database `shard_<i>` owned by `app` (SCRAM), behind
/// one proxy as cluster `prod`.
fn setup() -> Setup {
    let servers = PgServer::start_many(2, &ServerOptions::default()).unwrap();
    let mut databases = String::new();
    for (i, server) in servers.iter().enumerate() {
        server
            .create_user("app", "app-pw", PasswordEncryption::ScramSha256)
            .unwrap();
        server
            .create_database(&format!("shard_{i}"), Some("app"))
            .unwrap();
        server
            .psql(
                &format!("shard_{i}"),
                &format!(
                    "CREATE TABLE whoami AS SELECT {i} AS shard; ALTER TABLE whoami OWNER TO app"
                ),
            )
            .unwrap();
        databases.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_{i}\"\nshard = {i}\n",
            server.port()
        ));
    }
    let proxy = TestProxy::start(
        &databases,
        "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"app-pw\"\n",
    )
    .unwrap();
    Setup {
        _servers: servers,
        proxy,
    }
}

async fn connect(
    port: u16,
    user: &str,
    password: &str,
    database: &str,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let conninfo =
        format!("host=127.0.0.1 port={port} user={user} password={password} dbname={database}");
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

#[tokio::test]
async fn queries_reach_shard_zero_through_scram() {
    let setup = setup();
    let client = connect(setup.proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    let row = client
        .query_one("SELECT shard FROM whoami", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 0);
    // Extended protocol with a parameter passes through too.
    let row = client
        .query_one("SELECT $1::int + 1", &[&41i32])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);
}

#[tokio::test]
async fn wrong_password_is_the_servers_28p01() {
    let setup = setup();
    let err = connect(setup.proxy.port(), "app", "wrong", "prod")
        .await
        .unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("28P01"), "{err}");
}

#[tokio::test]
async fn unknown_database_and_user_are_refused_by_pgshard() {
    let setup = setup();
    let err = connect(setup.proxy.port(), "app", "app-pw", "nope")
        .await
        .unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("3D000"), "{err}");
    let err = connect(setup.proxy.port(), "stranger", "x", "prod")
        .await
        .unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("28000"), "{err}");
}

#[tokio::test]
async fn garbage_startup_gets_protocol_violation_and_others_keep_working() {
    let setup = setup();
    let port = setup.proxy.port();
    let bad: &[&[u8]] = &[
        b"\xff\xff\xff\xffGET / HTTP/1.1\r\n\r\n", // oversize length
        b"\x00\x00\x00\x09\x00\x02\x00\x00\x00",   // protocol 2
        b"\x00\x00\x00\x0d\x00\x03\x00\x00user\x00", // unterminated
    ];
    for bytes in bad {
        let reply = tokio::task::spawn_blocking({
            let bytes = bytes.to_vec();
            move || {
                let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                stream.write_all(&bytes).unwrap();
                let mut reply = Vec::new();
                let _ = stream.read_to_end(&mut reply);
                reply
            }
        })
        .await
        .unwrap();
        assert_eq!(reply.first(), Some(&b'E'), "{reply:?}");
        assert!(
            reply.windows(6).any(|w| w == b"C08P01"),
            "no protocol-violation code in {:?}",
            String::from_utf8_lossy(&reply)
        );
    }
    let client = connect(port, "app", "app-pw", "prod").await.unwrap();
    client.simple_query("SELECT 1").await.unwrap();
}

#[test]
fn psql_round_trip_and_ssl_refusal() {
    let setup = setup();
    let bins = integration::PgBinaries::find().unwrap();
    // sslmode=prefer: psql asks for TLS first, pgshard answers N, psql goes on in clear.
    let output = std::process::Command::new(bins.bindir().join("psql"))
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p"])
        .arg(setup.proxy.port().to_string())
        .args(["-U", "app", "-d", "prod", "-c", "SELECT shard FROM whoami"])
        .env("PGPASSWORD", "app-pw")
        .env("PGSSLMODE", "prefer")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "0");
}
