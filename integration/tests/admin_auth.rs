//! Authentication and the admin console against real servers: each client
//! auth method, logging into servers as another role, the SHOW commands,
//! RELOAD, PAUSE/RESUME and SHUTDOWN.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::wire::{self, Wire};
use common::{code, column, connect, rows, Cluster, USERS};
use integration::{HostAuth, ServerOptions};

/// The Authentication request pgshard answers a startup for `user` with:
/// 0 ok (trust), 3 cleartext, 5 MD5, 10 SASL.
async fn auth_request(port: u16, user: &str) -> u32 {
    let mut raw = Wire::connect(port).await;
    raw.send(&wire::startup(0, &[("user", user), ("database", "prod")]))
        .await;
    let (tag, body) = raw.recv().await;
    assert_eq!(tag, b'R', "{body:?}");
    u32::from_be_bytes(body[..4].try_into().unwrap())
}

/// A `[[users]]` entry for cluster `prod` that logs into the servers as `app`.
fn user_as_app(name: &str, extra: &str) -> String {
    format!(
        "[[users]]\nname = \"{name}\"\ndatabase = \"prod\"\nserver_user = \"app\"\n\
         server_password = \"app-pw\"\n{extra}\n"
    )
}

async fn assert_logs_in(port: u16, user: &str, password: &str) {
    let client = connect(port, user, password, "prod")
        .await
        .unwrap_or_else(|err| panic!("{user} with {password:?}: {err:?}"));
    assert_eq!(
        column(&client, "SELECT shard FROM whoami", "shard").await,
        vec!["0"],
        "{user}"
    );
}

async fn assert_denied(port: u16, user: &str, password: &str, database: &str) {
    let err = connect(port, user, password, database)
        .await
        .err()
        .unwrap_or_else(|| panic!("{user} got in with {password:?}"));
    assert_eq!(code(&err), Some("28P01"), "{user}: {err}");
}

#[tokio::test]
async fn each_client_auth_method_runs_its_exchange_and_checks_the_password() {
    let users = format!(
        "{USERS}{}{}{}",
        user_as_app(
            "md5client",
            "password = \"md5-secret\"\nauth_type = \"md5\""
        ),
        user_as_app(
            "plainclient",
            "password = \"plain-secret\"\nauth_type = \"plain\""
        ),
        user_as_app("trustclient", "auth_type = \"trust\""),
    );
    let cluster = Cluster::start_with(1, "", &users);
    let port = cluster.port();
    // Each user gets the exchange its auth_type names, whatever the client
    // would accept (tokio-postgres accepts them all).
    for (user, request) in [
        ("app", 10),
        ("md5client", 5),
        ("plainclient", 3),
        ("trustclient", 0),
    ] {
        assert_eq!(auth_request(port, user).await, request, "{user}");
    }
    assert_logs_in(port, "app", "app-pw").await;
    assert_logs_in(port, "md5client", "md5-secret").await;
    assert_logs_in(port, "plainclient", "plain-secret").await;
    assert_logs_in(port, "trustclient", "anything").await;
    let no_password = format!("host=127.0.0.1 port={port} user=trustclient dbname=prod");
    let client = common::connect_str(&no_password).await.unwrap();
    client.simple_query("SELECT 1").await.unwrap();
    assert_denied(port, "app", "md5-secret", "prod").await;
    assert_denied(port, "md5client", "app-pw", "prod").await;
    // Another user's password is no good either.
    assert_denied(port, "plainclient", "md5-secret", "prod").await;
    assert_denied(port, "plainclient", "plain-secret2", "prod").await;
}

#[tokio::test]
async fn general_auth_type_is_the_default_and_the_console_never_trusts() {
    let users = format!(
        "{}{}",
        user_as_app("open", ""),
        user_as_app(
            "careful",
            "password = \"careful-pw\"\nauth_type = \"scram\""
        ),
    );
    let cluster = Cluster::start_with(1, "auth_type = \"trust\"", &users);
    let port = cluster.port();
    assert_eq!(auth_request(port, "open").await, 0);
    assert_logs_in(port, "open", "whatever").await;
    // A user's own auth_type wins over general.auth_type.
    assert_eq!(auth_request(port, "careful").await, 10);
    assert_logs_in(port, "careful", "careful-pw").await;
    assert_denied(port, "careful", "whatever", "prod").await;
    // Trust admits listed users only.
    assert_denied(port, "stranger", "whatever", "prod").await;
    // The admin console asks for its password even under trust.
    assert_denied(port, "admin", "whatever", "admin").await;
    let admin = cluster.admin().await;
    let auth_type = rows(&admin, "SHOW CONFIG")
        .await
        .into_iter()
        .find(|r| r["key"] == "auth_type")
        .unwrap();
    assert_eq!(auth_type["value"], "trust");
}

#[tokio::test]
async fn servers_are_logged_into_as_server_user_with_an_md5_secret() {
    // `md5user` has an MD5 secret, which a scram-sha-256 pg_hba.conf refuses.
    let servers = common::servers_with(
        1,
        &ServerOptions {
            host_auth: HostAuth::Md5,
            ..ServerOptions::default()
        },
    );
    let users = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"app-pw\"\n\
                 server_user = \"md5user\"\nserver_password = \"md5-pw\"\n\
                 [[users]]\nname = \"misconfigured\"\ndatabase = \"prod\"\npassword = \"mis-pw\"\n\
                 server_user = \"md5user\"\nserver_password = \"wrong-server-pw\"\n";
    let cluster = Cluster::start_on(servers, "", users);
    let client = cluster.connect().await;
    for _ in 0..3 {
        assert_eq!(
            column(&client, "SELECT current_user AS who", "who").await,
            vec!["md5user"]
        );
    }
    assert_eq!(
        column(&client, "SELECT shard FROM whoami", "shard").await,
        vec!["0"]
    );
    // A server login that fails is reported to the client at once, with
    // what went wrong but not the password.
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        connect(cluster.port(), "misconfigured", "mis-pw", "prod"),
    )
    .await
    .expect("login hangs when the server refuses pgshard's password")
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "{started:?}");
    assert_eq!(code(&err), Some("08006"), "{err:?}");
    let message = err.as_db_error().unwrap().message().to_owned();
    assert!(message.contains("md5user"), "{message}");
    assert!(!message.contains("wrong-server-pw"), "{message}");
    // The working user is unaffected.
    assert_eq!(
        column(&client, "SELECT current_user AS who", "who").await,
        vec!["md5user"]
    );
}

/// The row of `SHOW POOLS`/`SHOW STATS` for prod/app on shard 0.
async fn app_row(admin: &tokio_postgres::Client, sql: &str) -> HashMap<String, String> {
    rows(admin, sql)
        .await
        .into_iter()
        .find(|r| r["database"] == "prod" && r["user"] == "app" && r["shard"] == "0")
        .unwrap_or_else(|| panic!("no prod/app row in {sql}"))
}

#[tokio::test]
async fn admin_console_show_commands() {
    let cluster = Cluster::start("default_pool_size = 4");
    let admin = cluster.admin().await;
    let client = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=prod application_name=show-me",
        cluster.port()
    ))
    .await
    .unwrap();
    client.simple_query("SELECT 1").await.unwrap();
    // What pgjdbc sends at login to a server it takes for an old one.
    admin
        .simple_query("SET extra_float_digits = 2")
        .await
        .unwrap();

    // The client has its reply before pgshard gives the server back: wait
    // (a server never given back fails here).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut pool = app_row(&admin, "SHOW POOLS").await;
    while pool["sv_active"] != "0" && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        pool = app_row(&admin, "SHOW POOLS").await;
    }
    for column in [
        "cl_active",
        "cl_waiting",
        "sv_active",
        "sv_idle",
        "sv_used",
        "maxwait",
        "pool_mode",
        "pool_size",
    ] {
        assert!(pool.contains_key(column), "SHOW POOLS lacks {column}");
    }
    assert!(pool["sv_idle"].parse::<usize>().unwrap() >= 1, "{pool:?}");
    assert_eq!(pool["sv_active"], "0", "{pool:?}");
    assert_eq!(pool["cl_waiting"], "0", "{pool:?}");
    assert_eq!(pool["pool_mode"], "transaction", "{pool:?}");
    assert_eq!(pool["pool_size"], "4", "{pool:?}");

    let clients = rows(&admin, "SHOW CLIENTS").await;
    let app = clients
        .iter()
        .find(|c| c["user"] == "app")
        .unwrap_or_else(|| panic!("no app client in {clients:?}"));
    assert_eq!(app["database"], "prod");
    assert_eq!(app["application_name"], "show-me");
    assert_eq!(app["addr"], "127.0.0.1");
    assert_eq!(app["state"], "idle");
    assert!(clients.iter().any(|c| c["user"] == "admin"), "{clients:?}");
    drop(client);
    // A client that left is no longer listed.
    let mut gone = false;
    for _ in 0..50 {
        if !rows(&admin, "SHOW CLIENTS")
            .await
            .iter()
            .any(|c| c["user"] == "app")
        {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "SHOW CLIENTS still lists a client that disconnected");

    let servers = rows(&admin, "SHOW SERVERS").await;
    let server = servers
        .iter()
        .find(|s| s["state"] == "idle")
        .unwrap_or_else(|| panic!("no idle server in {servers:?}"));
    assert_eq!(server["user"], "app");
    assert_eq!(server["database"], "shard_0");
    assert_eq!(server["port"], cluster.servers[0].port().to_string());
    assert!(
        server["remote_pid"].parse::<u32>().unwrap() > 0,
        "{server:?}"
    );

    let client = cluster.connect().await;
    let before: u64 = app_row(&admin, "SHOW STATS").await["total_xact_count"]
        .parse()
        .unwrap();
    for _ in 0..3 {
        client.simple_query("SELECT 1").await.unwrap();
    }
    client
        .batch_execute("BEGIN; SELECT 1; SELECT 2; COMMIT")
        .await
        .unwrap();
    let stats = app_row(&admin, "SHOW STATS").await;
    let after: u64 = stats["total_xact_count"].parse().unwrap();
    assert!(after >= before + 4, "{before} -> {after}");
    assert!(
        stats["total_query_count"].parse::<u64>().unwrap() >= 4,
        "{stats:?}"
    );
    // Query time (µs) from the same timing as pool_query_seconds.
    let total_query_time: u64 = stats["total_query_time"].parse().unwrap();
    let avg_query_time: u64 = stats["avg_query_time"].parse().unwrap();
    assert!(total_query_time > 0, "{stats:?}");
    assert!(avg_query_time > 0 && avg_query_time <= total_query_time);

    let config: HashMap<String, String> = rows(&admin, "SHOW CONFIG")
        .await
        .into_iter()
        .map(|r| (r["key"].clone(), r["value"].clone()))
        .collect();
    assert_eq!(config["default_pool_size"], "4", "{config:?}");
    assert_eq!(config["shutdown_timeout"], "1000", "{config:?}");
    assert_eq!(config["pooler_mode"], "transaction", "{config:?}");

    let databases = rows(&admin, "SHOW DATABASES").await;
    let prod = databases
        .iter()
        .find(|d| d["name"] == "prod" && d["shard"] == "0")
        .unwrap_or_else(|| panic!("no prod database in {databases:?}"));
    assert_eq!(prod["database"], "shard_0", "{prod:?}");
    assert_eq!(prod["port"], cluster.servers[0].port().to_string());
    assert_eq!(prod["pool_size"], "4", "{prod:?}");
    assert_eq!(prod["pool_mode"], "transaction", "{prod:?}");
    assert_eq!(prod["paused"], "0", "{prod:?}");
    assert!(
        prod["current_connections"].parse::<usize>().unwrap() >= 1,
        "{prod:?}"
    );
    let users = rows(&admin, "SHOW USERS").await;
    assert!(
        users.iter().any(|u| u["name"] == "app"
            && u["database"] == "prod"
            && u["pool_mode"] == "transaction"),
        "{users:?}"
    );
    let lists: HashMap<String, String> = rows(&admin, "SHOW LISTS")
        .await
        .into_iter()
        .map(|r| (r["list"].clone(), r["items"].clone()))
        .collect();
    assert_eq!(lists["databases"], databases.len().to_string(), "{lists:?}");
    assert_eq!(lists["users"], users.len().to_string(), "{lists:?}");
    assert!(
        lists["used_clients"].parse::<usize>().unwrap() >= 2,
        "{lists:?}"
    );
    assert!(
        lists["free_servers"].parse::<usize>().unwrap() >= 1,
        "{lists:?}"
    );

    let version = column(&admin, "SHOW VERSION", "version").await;
    assert_eq!(version.len(), 1);
    assert!(version[0].starts_with("pgshard "), "{version:?}");

    // Several commands in one query, lower case.
    let both = admin
        .simple_query("show version; show config")
        .await
        .unwrap();
    let completes = both
        .iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::CommandComplete(_)))
        .count();
    assert_eq!(completes, 2);

    let err = admin.simple_query("SHOW NONSENSE").await.unwrap_err();
    assert!(err.as_db_error().is_some(), "{err:?}");
    let err = admin.simple_query("DROP DATABASE prod").await.unwrap_err();
    assert!(err.as_db_error().is_some(), "{err:?}");
    // The console is still usable after errors.
    assert_eq!(column(&admin, "SHOW VERSION", "version").await, version);

    assert_denied(cluster.port(), "admin", "wrong", "admin").await;
    assert_denied(cluster.port(), "app", "app-pw", "admin").await;
}

#[tokio::test]
async fn reload_applies_a_new_config_and_keeps_the_old_one_when_broken() {
    let cluster = Cluster::start("default_pool_size = 3");
    let admin = cluster.admin().await;
    let client = cluster.connect().await;
    client.simple_query("SELECT 1").await.unwrap();
    assert_eq!(app_row(&admin, "SHOW POOLS").await["pool_size"], "3");
    assert_denied(cluster.port(), "newbie", "newbie-pw", "prod").await;

    let general = "[general]\nshutdown_timeout = 1000\ndefault_pool_size = 7\n";
    let users = format!(
        "{USERS}[[users]]\nname = \"newbie\"\ndatabase = \"prod\"\npassword = \"newbie-pw\"\n\
         server_user = \"app\"\nserver_password = \"app-pw\"\n"
    );
    cluster.rewrite_config(general, &users);
    admin.simple_query("RELOAD").await.unwrap();
    assert_eq!(app_row(&admin, "SHOW POOLS").await["pool_size"], "7");
    let config = rows(&admin, "SHOW CONFIG").await;
    let pool_size = config
        .iter()
        .find(|r| r["key"] == "default_pool_size")
        .unwrap();
    assert_eq!(pool_size["value"], "7");
    // The client connected before the reload goes on working.
    for _ in 0..3 {
        assert_eq!(
            column(&client, "SELECT shard FROM whoami", "shard").await,
            vec!["0"]
        );
    }
    // users.toml was read again too.
    assert_logs_in(cluster.port(), "newbie", "newbie-pw").await;

    // A broken config is refused and the running one stays.
    cluster.rewrite_config(
        "[general]\nshutdown_timeout = 1000\nno_such_key = 1\n",
        &users,
    );
    let err = admin.simple_query("RELOAD").await.unwrap_err();
    let message = err.as_db_error().unwrap().message().to_owned();
    assert!(message.contains("no_such_key"), "{message}");
    // So is a config that parses but does not validate.
    cluster.rewrite_config(
        "[general]\nshutdown_timeout = 1000\ndefault_pool_size = 5\n",
        "[[users]]\nname = \"app\"\ndatabase = \"nowhere\"\npassword = \"app-pw\"\n",
    );
    admin.simple_query("RELOAD").await.unwrap_err();
    assert_eq!(app_row(&admin, "SHOW POOLS").await["pool_size"], "7");
    assert_eq!(
        column(&client, "SELECT shard FROM whoami", "shard").await,
        vec!["0"]
    );
    assert_logs_in(cluster.port(), "newbie", "newbie-pw").await;
    // And the console itself is fine.
    assert_eq!(column(&admin, "SHOW VERSION", "version").await.len(), 1);
}

#[tokio::test]
async fn pause_holds_queries_until_resume() {
    let cluster = Cluster::start("");
    let admin = cluster.admin().await;
    let client = cluster.connect().await;
    client.simple_query("SELECT 1").await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), admin.simple_query("PAUSE"))
        .await
        .expect("PAUSE with no transaction running returns at once")
        .unwrap();
    let query = client.simple_query("SELECT 42 AS answer");
    tokio::pin!(query);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut query)
            .await
            .is_err(),
        "a query completed while pgshard was paused"
    );
    // The console still answers while paused.
    assert_eq!(column(&admin, "SHOW VERSION", "version").await.len(), 1);
    admin.simple_query("RESUME").await.unwrap();
    let messages = tokio::time::timeout(Duration::from_secs(5), query)
        .await
        .expect("the held query did not complete after RESUME")
        .unwrap();
    let answer = messages.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get("answer").map(str::to_owned),
        _ => None,
    });
    assert_eq!(answer.as_deref(), Some("42"));
    // And the next ones go straight through.
    assert_eq!(
        column(&client, "SELECT shard FROM whoami", "shard").await,
        vec!["0"]
    );
}

#[tokio::test]
async fn pause_lets_a_server_restart_unnoticed() {
    // PAUSE's purpose: hold everyone, restart the database, RESUME.
    let mut cluster = Cluster::start("");
    let port = cluster.port();
    let admin = cluster.admin().await;
    let client = cluster.connect().await;
    assert_eq!(
        column(&client, "SELECT shard FROM whoami", "shard").await,
        vec!["0"]
    );
    admin.simple_query("PAUSE").await.unwrap();
    cluster.servers[0].stop().unwrap();
    let query = client.simple_query("SELECT shard FROM whoami");
    // A client arriving during the pause, with settings no earlier login
    // had (so its login cannot be answered from what pgshard remembers).
    let late_conninfo = format!(
        "host=127.0.0.1 port={port} user=app password=app-pw dbname=prod application_name=late"
    );
    let late = common::connect_str(&late_conninfo);
    tokio::pin!(query, late);
    let held = tokio::time::timeout(Duration::from_millis(300), async {
        tokio::select! {
            result = &mut query => panic!("a query ran while paused: {result:?}"),
            result = &mut late => panic!("a login used a server while paused: {result:?}"),
        }
    })
    .await;
    assert!(held.is_err());
    cluster.servers[0].start_again().unwrap();
    admin.simple_query("RESUME").await.unwrap();
    let (query, late) =
        tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(query, late) })
            .await
            .expect("clients still held after RESUME");
    let query = query.unwrap();
    assert!(
        query
            .iter()
            .any(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_))),
        "{query:?}"
    );
    let late = late.unwrap();
    assert_eq!(
        column(&late, "SHOW application_name", "application_name").await,
        vec!["late"]
    );
    assert_eq!(
        column(&client, "SELECT shard FROM whoami", "shard").await,
        vec!["0"]
    );
}

#[tokio::test]
async fn shutdown_refuses_new_clients_and_closes_idle_ones() {
    let cluster = Cluster::start("");
    let port = cluster.port();
    let admin = cluster.admin().await;
    let (idle, mut connection) = common::connect_raw(port).await;
    // Drive the idle client's connection, keeping the error that ends it.
    let ended = tokio::spawn(async move {
        loop {
            match futures_util::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(_)) => {}
                Some(Err(err)) => return Some(err),
                None => return None,
            }
        }
    });
    idle.simple_query("SELECT 1").await.unwrap();
    admin.simple_query("SHUTDOWN").await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(3), ended)
        .await
        .expect("an idle client stays connected after SHUTDOWN")
        .unwrap()
        .expect("closed without saying why");
    assert_eq!(code(&err), Some("57P01"), "{err:?}");
    assert!(idle.simple_query("SELECT 1").await.is_err());
    let refused = tokio::time::timeout(
        Duration::from_secs(5),
        connect(port, "app", "app-pw", "prod"),
    )
    .await
    .expect("a new connection hangs after SHUTDOWN");
    assert!(refused.is_err(), "a new client got in after SHUTDOWN");
}

#[tokio::test]
async fn reload_refuses_to_move_logical_shards_placed_by_default() {
    let table =
        "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"t\"\ncolumn = \"k\"\nshard_count = 4\n";
    let cluster = Cluster::start_with(2, table, USERS);
    let admin = cluster.admin().await;
    let client = cluster.connect().await;
    for sql in [
        "CREATE TABLE t (k bigint PRIMARY KEY)",
        "INSERT INTO t (k) VALUES (2)",
        "INSERT INTO t (k) VALUES (3)",
    ] {
        client.simple_query(sql).await.unwrap();
    }
    // A third database: with no `placement`, logical shard 2 would go from
    // database 0 (2 % 2) to database 2 (2 % 3), without its rows.
    let third = format!(
        "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\n\
         database_name = \"shard_1\"\nshard = 2\n",
        cluster.servers[1].port()
    );
    let write = |placement: &str| {
        let text = format!(
            "{}{placement}\n[admin]\npassword = \"admin-pw\"\n{}{third}",
            cluster.general, cluster.databases
        );
        cluster.proxy.rewrite_config(&text, USERS).unwrap();
    };
    let shards = |databases: Vec<HashMap<String, String>>| {
        let mut shards: Vec<String> = databases
            .into_iter()
            .filter(|d| d["name"] == "prod")
            .map(|d| d["shard"].clone())
            .collect();
        shards.sort();
        shards
    };
    write("");
    let err = admin.simple_query("RELOAD").await.unwrap_err();
    let message = err.as_db_error().unwrap().message().to_owned();
    assert!(
        message
            .contains("sharded_tables[0].placement: cluster \"prod\" goes from 2 to 3 databases")
            && message.contains("`shard_count = 4` and `placement = [0, 1, 0, 1]`"),
        "{message}"
    );
    assert_eq!(shards(rows(&admin, "SHOW DATABASES").await), ["0", "1"]);
    // The running placement stays: every row is found where it is.
    for k in [2, 3] {
        let found = client
            .simple_query(&format!("SELECT k FROM t WHERE k = {k}"))
            .await
            .unwrap();
        assert_eq!(rows_of(&found), 1, "key {k}");
    }
    // With the layout the error printed, the same reload is taken.
    write("placement = [0, 1, 0, 1]");
    admin.simple_query("RELOAD").await.unwrap();
    assert_eq!(
        shards(rows(&admin, "SHOW DATABASES").await),
        ["0", "1", "2"]
    );
    for k in [2, 3] {
        let found = client
            .simple_query(&format!("SELECT k FROM t WHERE k = {k}"))
            .await
            .unwrap();
        assert_eq!(rows_of(&found), 1, "key {k} after the reload");
    }
}

fn rows_of(messages: &[tokio_postgres::SimpleQueryMessage]) -> usize {
    messages
        .iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
        .count()
}
