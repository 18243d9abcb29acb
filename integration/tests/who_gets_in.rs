//! Who gets in (issue 35 point 4): clients trying to get where they do not
//! belong get a clear refusal, and nothing reaches a server as another
//! user. A user not listed for a database, a non-admin at the admin
//! console, a password message after a successful login, a walsender
//! (`replication=database`), `session_authorization` through startup
//! settings, duplicated and oversize startup packets, logins slower than
//! `client_login_timeout`, TCP without TLS under `tls_client_required`;
//! roles (startup `role`, `SET ROLE`, `set_config('role', ...)`) never
//! outlive their client on a pooled server. After each refusal a listed
//! client still works.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::wire::{self, Read, Wire};
use common::{code, column, connect, connect_str, Cluster, ADMIN, USERS};
use integration::TestProxy;

/// One pooled server connection (transaction mode), so every client below
/// shares it: a leak from one client would show in the next.
const GENERAL: &str =
    "shutdown_timeout = 1000\ndefault_pool_size = 1\nclient_login_timeout = 1500\n";

/// `app` (SCRAM, listed for `prod` only) and `plainclient` (cleartext
/// password, logs into the servers as `app`).
fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"plainclient\"\ndatabase = \"prod\"\nserver_user = \"app\"\n\
         server_password = \"app-pw\"\npassword = \"plain-secret\"\nauth_type = \"plain\"\n"
    )
}

/// One server behind pgshard with cluster `prod` and a second cluster
/// `other` on the same database, which users.toml lists nobody for.
fn cluster() -> Cluster {
    let servers = common::servers(1);
    let databases = format!(
        "{}[[databases]]\nname = \"other\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_0\"\n",
        common::databases(&servers),
        servers[0].port()
    );
    let general = format!("[general]\n{GENERAL}");
    let proxy = TestProxy::start(&format!("{general}{ADMIN}{databases}"), &users()).unwrap();
    Cluster {
        proxy,
        servers,
        databases,
        general,
        copies_differ: None,
    }
}

async fn app_works(port: u16) {
    let client = connect(port, "app", "app-pw", "prod").await.unwrap();
    assert_eq!(
        column(&client, "SELECT current_user AS u", "u").await,
        vec!["app"]
    );
}

/// The startup packet `params` gets a FATAL with `code` (whose message
/// has `says`), then the connection closes.
async fn startup_refused(port: u16, params: &[(&str, &str)], code: &str, says: &str) {
    let mut raw = Wire::connect(port).await;
    raw.send(&wire::startup(0, params)).await;
    let replies = raw.until_closed(Duration::from_secs(10)).await;
    assert_eq!(wire::tags(&replies), "E", "{params:?}: {replies:?}");
    assert_eq!(
        wire::sqlstate(&replies[0].1).as_deref(),
        Some(code),
        "{params:?}"
    );
    let text = String::from_utf8_lossy(&replies[0].1);
    assert!(text.contains(says), "{params:?}: {text}");
}

/// Every client backend on `server` (but this check's own) runs as `app`.
fn only_app_on_server(cluster: &Cluster) {
    let users = cluster.servers[0]
        .psql(
            "postgres",
            "SELECT coalesce(string_agg(DISTINCT usename::text, ','), '') FROM pg_stat_activity \
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
        )
        .unwrap();
    assert_eq!(users.trim(), "app", "server sessions by user");
}

#[tokio::test]
async fn logins_that_do_not_belong_are_refused_before_any_server() {
    common::watch_proxy_panics();
    let cluster = cluster();
    let port = cluster.port();
    app_works(port).await;

    // A user listed for another database: refused as a wrong password
    // (Postgres's words; nothing says which users exist).
    let err = connect(port, "app", "app-pw", "other").await.unwrap_err();
    assert_eq!(code(&err), Some("28P01"), "{err}");
    // The admin console with a pooled user's right password.
    let err = connect(port, "app", "app-pw", "admin").await.unwrap_err();
    assert_eq!(code(&err), Some("28P01"), "{err}");
    app_works(port).await;

    // Walsender requests: refused; `replication=false` is a normal session.
    for value in ["database", "true", "on", "1"] {
        let params = [
            ("user", "app"),
            ("database", "prod"),
            ("replication", value),
        ];
        startup_refused(port, &params, "0A000", "replication connections").await;
    }
    let err = connect_str(&format!(
        "host=127.0.0.1 port={port} user=app password=app-pw dbname=prod options='-c session_authorization=postgres'"
    ))
    .await
    .unwrap_err();
    assert_eq!(code(&err), Some("42501"), "{err}");
    let params = [("user", "app"), ("session_authorization", "postgres")];
    startup_refused(port, &params, "42501", "session_authorization").await;
    // Two users in one packet: Postgres would take the last; pgshard
    // refuses rather than guess which one authenticated.
    let params = [("user", "app"), ("database", "prod"), ("user", "postgres")];
    startup_refused(port, &params, "08P01", "more than once").await;
    // Oversize: refused from its length, before 20 kB is read.
    let mut raw = Wire::connect(port).await;
    raw.send(&[0, 0, 0x4e, 0x20, 0, 3, 0, 0]).await;
    let replies = raw.until_closed(Duration::from_secs(10)).await;
    assert_eq!(wire::sqlstate(&replies[0].1).as_deref(), Some("08P01"));
    app_works(port).await;

    // A password message after a successful login is a protocol
    // violation, never a second authentication.
    let mut raw = Wire::connect(port).await;
    raw.send(&wire::startup(
        0,
        &[("user", "plainclient"), ("database", "prod")],
    ))
    .await;
    assert_eq!(raw.recv().await, (b'R', vec![0, 0, 0, 3].into()));
    raw.send(&wire::message(b'p', b"plain-secret\0")).await;
    let login = raw.until_ready().await;
    assert_eq!(login[0], (b'R', vec![0, 0, 0, 0].into()));
    raw.send(&wire::message(b'p', b"wrong\0")).await;
    let after = raw.until_closed(Duration::from_secs(10)).await;
    assert!(!after.iter().any(|(tag, _)| *tag == b'R'), "{after:?}");
    assert_eq!(wire::errors(&after).len(), 1, "{after:?}");
    assert_eq!(
        wire::sqlstate(&after[0].1).as_deref(),
        Some("08P01"),
        "{after:?}"
    );
    let err = connect(port, "plainclient", "wrong", "prod")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("28P01"), "{err}");
    app_works(port).await;

    only_app_on_server(&cluster);
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn a_login_slower_than_client_login_timeout_is_cut_off() {
    let cluster = cluster();
    let port = cluster.port();
    // Half a startup packet, then nothing: closed without a word.
    let started = Instant::now();
    let mut silent = Wire::connect(port).await;
    silent
        .send(&wire::startup(0, &[("user", "app")])[..5])
        .await;
    // A startup, then no password.
    let mut mute = Wire::connect(port).await;
    mute.send(&wire::startup(0, &[("user", "app"), ("database", "prod")]))
        .await;
    assert_eq!(mute.recv().await.0, b'R');
    // Others log in meanwhile.
    app_works(port).await;
    assert!(silent.until_closed(Duration::from_secs(5)).await.is_empty());
    let replies = mute.until_closed(Duration::from_secs(5)).await;
    assert_eq!(
        wire::sqlstate(&replies[0].1).as_deref(),
        Some("08P01"),
        "{replies:?}"
    );
    assert!(String::from_utf8_lossy(&replies[0].1).contains("client_login_timeout"));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1400) && waited < Duration::from_secs(8),
        "cut after {waited:?}"
    );
    // A logged-in client is not cut by the login timeout.
    let client = connect(port, "app", "app-pw", "prod").await.unwrap();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(column(&client, "SELECT 1 AS one", "one").await, vec!["1"]);
    // One byte at a time within the limit is fine.
    let mut slow = Wire::connect(port).await;
    let packet = wire::startup(0, &[("user", "plainclient"), ("database", "prod")]);
    for byte in &packet {
        slow.send(&[*byte]).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(slow.recv().await, (b'R', vec![0, 0, 0, 3].into()));
    assert!(matches!(
        slow.read_within(Duration::from_millis(100)).await,
        Read::Silent
    ));
}

#[tokio::test]
async fn roles_never_outlive_their_client() {
    let cluster = cluster();
    let port = cluster.port();
    cluster.servers[0]
        .psql(
            "postgres",
            "CREATE ROLE reader NOLOGIN; GRANT reader TO app; CREATE ROLE boss NOLOGIN",
        )
        .unwrap();
    let who = |client| async move { column(client, "SELECT current_user AS u", "u").await };
    let plain = connect(port, "app", "app-pw", "prod").await.unwrap();

    // A role in the startup settings: applied as SET ROLE would be, where
    // the server login may take it; the one shared server goes back to
    // `app` for the next client.
    let options = |role: &str| {
        format!("host=127.0.0.1 port={port} user=app password=app-pw dbname=prod options='-c role={role}'")
    };
    let reader = connect_str(&options("reader")).await.unwrap();
    assert_eq!(who(&reader).await, vec!["reader"]);
    assert_eq!(who(&plain).await, vec!["app"]);
    assert_eq!(who(&reader).await, vec!["reader"]);
    let err = connect_str(&options("boss")).await.unwrap_err();
    assert!(format!("{err:?}").contains("permission denied"), "{err:?}");

    // SET ROLE: followed by its client, never seen by the next.
    let setter = connect(port, "app", "app-pw", "prod").await.unwrap();
    setter.batch_execute("SET ROLE reader").await.unwrap();
    assert_eq!(who(&plain).await, vec!["app"]);
    assert_eq!(who(&setter).await, vec!["reader"]);
    let err = setter.batch_execute("SET ROLE boss").await.unwrap_err();
    assert_eq!(code(&err), Some("42501"), "{err}");
    assert_eq!(who(&setter).await, vec!["reader"]);

    // set_config: pgshard cannot follow it, so the server is reset before
    // anyone else gets it (the caller loses it too: use SET).
    let caller = connect(port, "app", "app-pw", "prod").await.unwrap();
    caller
        .simple_query("SELECT set_config('role', 'reader', false)")
        .await
        .unwrap();
    assert_eq!(who(&plain).await, vec!["app"]);
    // Transaction-scoped: in force to its COMMIT, then gone.
    let tx = caller
        .simple_query("BEGIN; SELECT set_config('role', 'reader', true); SELECT current_user AS u")
        .await
        .unwrap();
    let inside: Vec<_> = tx
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) if row.columns()[0].name() == "u" => {
                row.get(0).map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert_eq!(inside, vec!["reader"]);
    caller.batch_execute("COMMIT").await.unwrap();
    assert_eq!(who(&plain).await, vec!["app"]);
    assert_eq!(who(&caller).await, vec!["app"]);
    only_app_on_server(&cluster);
}

/// `tls_client_required`: a TCP client without TLS is refused (28000)
/// before a password is asked for; with TLS, or on the Unix socket, it
/// logs in.
#[tokio::test]
async fn tls_required_refuses_plain_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let tls = common::self_signed_tls(dir.path());
    let shown = dir.path().display().to_string();
    let cluster = Cluster::start(&format!(
        "{tls}\ntls_client_required = true\nunix_socket_dir = \"{shown}\""
    ));
    let port = cluster.port();
    let mut raw = Wire::connect(port).await;
    raw.send(&wire::startup(0, &[("user", "app"), ("database", "prod")]))
        .await;
    let replies = raw.until_closed(Duration::from_secs(10)).await;
    assert_eq!(wire::tags(&replies), "E", "{replies:?}");
    assert_eq!(wire::sqlstate(&replies[0].1).as_deref(), Some("28000"));
    assert!(String::from_utf8_lossy(&replies[0].1).contains("tls_client_required"));
    let err = connect(port, "app", "app-pw", "prod").await.unwrap_err();
    assert_eq!(code(&err), Some("28000"), "{err}");
    // The console too.
    let err = connect(port, "admin", "admin-pw", "admin")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("28000"), "{err}");

    assert_eq!(common::psql(port, "require", "SELECT current_user"), "app");
    let socket = connect_str(&format!(
        "host={shown} port={port} user=app password=app-pw dbname=prod"
    ))
    .await
    .unwrap();
    assert_eq!(
        column(&socket, "SELECT current_user AS u", "u").await,
        vec!["app"]
    );
}
