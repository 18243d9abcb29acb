//! `passthrough_auth` against real servers (SCRAM-SHA-256 in their
//! `pg_hba.conf`): a role `users.toml` does not list logs in with the
//! server's password for it and runs queries on every shard through pools
//! of its own; a wrong password gets Postgres's 28P01 and leaves no pool and
//! no server connection; ALTER ROLE ... PASSWORD takes effect for the next
//! login; with passthrough off, or for the admin console, nothing changes;
//! `"enabled"` takes passwords only over TLS.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::wire::{self, Wire};
use common::{code, column, connect, rows, Cluster, USERS};
use integration::{HostAuth, PasswordEncryption, PgServer, ServerOptions};

const PLAIN: &str = "passthrough_auth = \"enabled_plain\"\ndefault_pool_size = 3";

/// Create role `name` with `password` on every server, able to read
/// `whoami`.
fn create_role(servers: &[PgServer], name: &str, password: &str) {
    for (i, server) in servers.iter().enumerate() {
        server
            .create_user(name, password, PasswordEncryption::ScramSha256)
            .unwrap();
        server
            .psql(
                &format!("shard_{i}"),
                &format!("GRANT SELECT ON whoami TO {name}"),
            )
            .unwrap();
    }
}

fn set_password(servers: &[PgServer], name: &str, password: &str) {
    for server in servers {
        server
            .psql(
                "postgres",
                &format!("ALTER ROLE {name} PASSWORD '{password}'"),
            )
            .unwrap();
    }
}

/// The Authentication request pgshard answers a startup for `user` of
/// `database` with: 3 cleartext, 10 SASL.
async fn auth_request(port: u16, user: &str, database: &str) -> u32 {
    let mut raw = Wire::connect(port).await;
    raw.send(&wire::startup(0, &[("user", user), ("database", database)]))
        .await;
    let (tag, body) = raw.recv().await;
    assert_eq!(tag, b'R', "{body:?}");
    u32::from_be_bytes(body[..4].try_into().unwrap())
}

/// Server connections of role `user` on each server (pg_stat_activity).
fn server_sessions(servers: &[PgServer], user: &str) -> Vec<String> {
    servers
        .iter()
        .map(|s| {
            let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE usename = '{user}'");
            s.psql("postgres", &sql).unwrap()
        })
        .collect()
}

/// SHOW POOLS rows of `user`.
async fn pools_of(admin: &tokio_postgres::Client, user: &str) -> usize {
    rows(admin, "SHOW POOLS")
        .await
        .iter()
        .filter(|r| r["user"] == user)
        .count()
}

/// Each shard's `whoami`, read through pgshard by `client`.
async fn shards_seen(client: &tokio_postgres::Client) -> Vec<String> {
    let mut seen = Vec::new();
    for shard in 0..2 {
        let sql = format!("/* pgdog_shard: {shard} */ SELECT shard FROM whoami");
        seen.extend(column(client, &sql, "shard").await);
    }
    seen
}

async fn assert_refused(port: u16, user: &str, password: &str, database: &str) {
    let err = connect(port, user, password, database)
        .await
        .err()
        .unwrap_or_else(|| panic!("{user} got in to {database} with {password:?}"));
    assert_eq!(code(&err), Some("28P01"), "{user}: {err}");
    let message = err.as_db_error().map(|e| e.message().to_owned());
    assert_eq!(
        message.as_deref(),
        Some(format!("password authentication failed for user \"{user}\"").as_str())
    );
}

#[tokio::test]
async fn unlisted_role_logs_in_with_its_server_password_on_every_shard() {
    let cluster = Cluster::start_with(2, PLAIN, USERS);
    create_role(&cluster.servers, "pt", "pt-pw");
    let port = cluster.port();
    // Listed users keep their configured SCRAM; the unlisted one is asked
    // for its password in cleartext.
    assert_eq!(auth_request(port, "app", "prod").await, 10);
    assert_eq!(auth_request(port, "pt", "prod").await, 3);

    let client = connect(port, "pt", "pt-pw", "prod").await.unwrap();
    assert_eq!(shards_seen(&client).await, ["0", "1"]);
    assert_eq!(
        column(&client, "SELECT current_user AS u", "u").await,
        ["pt"]
    );
    // Several clients share the user's pools (transaction mode).
    let mut clients = Vec::new();
    for _ in 0..5 {
        clients.push(connect(port, "pt", "pt-pw", "prod").await.unwrap());
    }
    for other in &clients {
        assert_eq!(shards_seen(other).await, ["0", "1"]);
    }
    let admin = cluster.admin().await;
    let pools = rows(&admin, "SHOW POOLS").await;
    let pt: Vec<_> = pools.iter().filter(|r| r["user"] == "pt").collect();
    assert_eq!(pt.len(), 2, "one pool per shard: {pools:?}");
    for pool in pt {
        assert_eq!(pool["pool_mode"], "transaction", "{pool:?}");
        let servers: usize =
            pool["sv_idle"].parse::<usize>().unwrap() + pool["sv_active"].parse::<usize>().unwrap();
        assert!(servers <= 3, "pool_size bounds it: {pool:?}");
    }
    // The listed user is untouched.
    assert_eq!(
        column(&cluster.connect().await, "SELECT current_user AS u", "u").await,
        ["app"]
    );
}

/// Servers that ask for MD5 or a cleartext password get what they ask for.
#[tokio::test]
async fn md5_and_cleartext_servers_check_the_password_too() {
    for host_auth in [HostAuth::Md5, HostAuth::Password] {
        let options = ServerOptions {
            host_auth,
            ..ServerOptions::default()
        };
        let servers = common::servers_with(1, &options);
        servers[0]
            .create_user("pt", "pt-pw", PasswordEncryption::Md5)
            .unwrap();
        servers[0]
            .psql("shard_0", "GRANT SELECT ON whoami TO pt")
            .unwrap();
        let cluster = Cluster::start_on(servers, PLAIN, USERS);
        let client = connect(cluster.port(), "pt", "pt-pw", "prod")
            .await
            .unwrap_or_else(|err| panic!("{host_auth:?}: {err:?}"));
        assert_eq!(
            column(&client, "SELECT shard FROM whoami", "shard").await,
            ["0"],
            "{host_auth:?}"
        );
        assert_refused(cluster.port(), "pt", "wrong", "prod").await;
    }
}

#[tokio::test]
async fn wrong_passwords_are_refused_as_postgres_does_and_leave_nothing() {
    let cluster = Cluster::start_with(2, PLAIN, USERS);
    create_role(&cluster.servers, "pt", "pt-pw");
    let port = cluster.port();
    let admin = cluster.admin().await;
    for _ in 0..20 {
        assert_refused(port, "pt", "wrong", "prod").await;
    }
    // A role the server does not have: the same words.
    assert_refused(port, "nobody", "pt-pw", "prod").await;
    assert_eq!(pools_of(&admin, "pt").await, 0);
    assert_eq!(pools_of(&admin, "nobody").await, 0);
    // The refused logins' server backends end with them.
    let deadline = Instant::now() + Duration::from_secs(5);
    while server_sessions(&cluster.servers, "pt") != ["0", "0"] {
        assert!(Instant::now() < deadline, "server connections were left");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        rows(&admin, "SHOW CLIENTS")
            .await
            .iter()
            .filter(|r| r["user"] == "pt")
            .count(),
        0
    );
    // A wrong password after a good one does not reach the pool either.
    let good = connect(port, "pt", "pt-pw", "prod").await.unwrap();
    assert_refused(port, "pt", "wrong", "prod").await;
    assert_eq!(shards_seen(&good).await, ["0", "1"]);
}

#[tokio::test]
async fn a_password_changed_on_the_server_takes_effect_for_the_next_login() {
    let cluster = Cluster::start_with(2, PLAIN, USERS);
    create_role(&cluster.servers, "pt", "old-pw");
    let port = cluster.port();
    let before = connect(port, "pt", "old-pw", "prod").await.unwrap();
    assert_eq!(shards_seen(&before).await, ["0", "1"]);

    set_password(&cluster.servers, "pt", "new-pw");
    // Checked against the server, not a copy: the old password stops
    // working at once, the new one works without a reload.
    assert_refused(port, "pt", "old-pw", "prod").await;
    // A client logged in before keeps working on the connections open.
    assert_eq!(shards_seen(&before).await, ["0", "1"]);
    let after = connect(port, "pt", "new-pw", "prod").await.unwrap();
    assert_eq!(shards_seen(&after).await, ["0", "1"]);
    // The pools now log in with the new password: two transactions at
    // once need a second server connection, opened with it.
    after.simple_query("BEGIN").await.unwrap();
    before.simple_query("BEGIN").await.unwrap();
    assert_eq!(shards_seen(&after).await, ["0", "1"]);
    assert_eq!(shards_seen(&before).await, ["0", "1"]);
    after.simple_query("COMMIT").await.unwrap();
    before.simple_query("COMMIT").await.unwrap();
    assert_refused(port, "pt", "old-pw", "prod").await;
}

#[tokio::test]
async fn passthrough_off_or_to_the_admin_console_refuses_as_before() {
    // Off (the default): an unlisted role gets SCRAM against a mock
    // secret and 28P01, whatever its server password.
    let cluster = Cluster::start_with(1, "", USERS);
    create_role(&cluster.servers, "pt", "pt-pw");
    assert_eq!(auth_request(cluster.port(), "pt", "prod").await, 10);
    assert_refused(cluster.port(), "pt", "pt-pw", "prod").await;
    drop(cluster);

    // On: the admin console admits only its own user, as before.
    let cluster = Cluster::start_with(1, PLAIN, USERS);
    create_role(&cluster.servers, "pt", "pt-pw");
    let port = cluster.port();
    assert_eq!(auth_request(port, "pt", "admin").await, 10);
    assert_refused(port, "pt", "pt-pw", "admin").await;
    // A database that is not a cluster is not one to pass through to.
    let err = connect(port, "pt", "pt-pw", "nope").await.err().unwrap();
    assert_eq!(code(&err), Some("3D000"), "{err}");
    // RELOAD keeps the passthrough pools; turning passthrough off drops them.
    let client = connect(port, "pt", "pt-pw", "prod").await.unwrap();
    let admin = cluster.admin().await;
    admin.simple_query("RELOAD").await.unwrap();
    assert_eq!(pools_of(&admin, "pt").await, 1);
    assert_eq!(
        column(&client, "SELECT shard FROM whoami", "shard").await,
        ["0"]
    );
    cluster.rewrite_config(&cluster.general.replace(PLAIN, ""), USERS);
    admin.simple_query("RELOAD").await.unwrap();
    assert_eq!(pools_of(&admin, "pt").await, 0);
    assert_refused(port, "pt", "pt-pw", "prod").await;
}

#[tokio::test]
async fn enabled_takes_passwords_only_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let general = format!(
        "passthrough_auth = \"enabled\"\n{}",
        common::self_signed_tls(dir.path())
    );
    let cluster = Cluster::start_with(1, &general, USERS);
    create_role(&cluster.servers, "pt", "pt-pw");
    // Without TLS: refused before any password is asked for.
    let err = connect(cluster.port(), "pt", "pt-pw", "prod")
        .await
        .err()
        .unwrap();
    assert_eq!(code(&err), Some("28000"), "{err}");
    let message = err.as_db_error().unwrap().message();
    assert!(message.contains("enabled_plain"), "{message}");
    // Over TLS: in.
    let sql = "SELECT shard FROM whoami";
    let shard = common::psql_as(cluster.port(), ("pt", "pt-pw", "prod"), "require", sql);
    assert_eq!(shard, "0");
}
