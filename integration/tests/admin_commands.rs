//! The admin console's newer commands against real servers, each checked by
//! its effect, not only its reply: SHOW HELP, FDS, PREPARED_STATEMENTS and
//! CONFIG; SHOW QUERY_CACHE and RESET QUERY_CACHE; KILL db (clients and server backends gone,
//! the database held until RESUME); RECONNECT and WAIT_CLOSE (backends
//! replaced after their current use); PAUSE db / RESUME db (only that
//! database held); MAINTENANCE ON/OFF (transactions under way finish).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use common::{code, column, connect, create_sharded_schema, rows, Cluster, SHARDING, USERS};
use integration::TestProxy;
use tokio_postgres::AsyncMessage;

/// Whether `future` is still pending after `wait` (then it is left to run).
async fn still_pending<F: Future + Unpin>(future: &mut F, wait: Duration) -> bool {
    tokio::time::timeout(wait, future).await.is_err()
}

/// Poll `probe` until it holds, for up to 10 s.
async fn eventually<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..500 {
        if probe().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("still not true after 10 s: {what}");
}

/// The backend pid serving `client` now.
async fn backend_pid(client: &tokio_postgres::Client) -> String {
    column(client, "SELECT pg_backend_pid() AS pid", "pid")
        .await
        .remove(0)
}

/// Whether a backend with `pid` still runs on the server `direct` is
/// connected to.
async fn backend_alive(direct: &tokio_postgres::Client, pid: &str) -> bool {
    let sql = format!("SELECT count(*) AS n FROM pg_stat_activity WHERE pid = {pid}");
    column(direct, &sql, "n").await == vec!["1"]
}

/// The admin console, with its NoticeResponses collected.
async fn admin_with_notices(
    port: u16,
) -> (
    tokio_postgres::Client,
    tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::error::DbError>,
) {
    let conninfo = format!("host=127.0.0.1 port={port} user=admin password=admin-pw dbname=admin");
    let (client, mut connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    let (send, notices) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(message)) =
            futures_util::future::poll_fn(|cx| connection.poll_message(cx)).await
        {
            if let AsyncMessage::Notice(notice) = message {
                let _ = send.send(notice);
            }
        }
    });
    (client, notices)
}

#[tokio::test]
async fn show_help_fds_prepared_statements_and_config() {
    let servers = common::servers(2);
    create_sharded_schema(&servers);
    let cluster = Cluster::start_sharded(servers, "log_min_duration_statement = 250", SHARDING);
    let (admin, mut notices) = admin_with_notices(cluster.port()).await;

    admin.simple_query("SHOW HELP").await.unwrap();
    let help = notices.recv().await.unwrap();
    assert_eq!(help.message(), "Console usage");
    let detail = help.detail().unwrap();
    for command in [
        "SHOW HELP|CONFIG|DATABASES",
        "KILL <db>",
        "RECONNECT [<db>]",
        "WAIT_CLOSE [<db>]",
        "MAINTENANCE ON|OFF",
        "RESET QUERY_CACHE",
        "SETUP SHARDED SEQUENCES",
    ] {
        assert!(detail.contains(command), "{command} in {detail}");
    }

    let client = cluster.connect().await;
    let statement = client
        .prepare("SELECT $1::bigint + 1 AS next")
        .await
        .unwrap();
    client.query(&statement, &[&41i64]).await.unwrap();
    let prepared = rows(&admin, "SHOW PREPARED_STATEMENTS").await;
    let ours = prepared
        .iter()
        .find(|p| p["statement"] == "SELECT $1::bigint + 1 AS next")
        .unwrap_or_else(|| panic!("not listed: {prepared:?}"));
    assert!(ours["name"].starts_with("__pgshard_"), "{ours:?}");
    // tokio-postgres leaves the types to the server.
    assert_eq!(ours["parameter_types"], "", "{ours:?}");
    assert_eq!(ours["used_by"], "1", "{ours:?}");
    assert_eq!(ours["rewrite"], "", "{ours:?}");
    assert!(
        ours["memory_used"].parse::<usize>().unwrap() > 0,
        "{ours:?}"
    );
    assert_eq!(rows(&admin, "SHOW PREPARED STATEMENTS").await, prepared);

    // Every client and server socket, PgBouncer's columns in its order.
    client.simple_query("SELECT 1").await.unwrap();
    let fds = columns(&admin, "SHOW FDS").await;
    assert_eq!(
        fds[..8],
        ["fd", "task", "user", "database", "addr", "port", "cancel", "link"]
    );
    let fds = rows(&admin, "SHOW FDS").await;
    let app = fds
        .iter()
        .find(|f| f["task"] == "client" && f["user"] == "app")
        .unwrap_or_else(|| panic!("no app client in {fds:?}"));
    assert!(app["fd"].parse::<i32>().unwrap() > 0, "{app:?}");
    assert_eq!(app["database"], "prod");
    let server_ports: HashSet<String> = fds
        .iter()
        .filter(|f| f["task"] == "server")
        .map(|f| f["port"].clone())
        .collect();
    assert!(
        server_ports.contains(&cluster.servers[0].port().to_string()),
        "{fds:?}"
    );

    let config: HashMap<String, String> = rows(&admin, "SHOW CONFIG")
        .await
        .into_iter()
        .map(|r| (r["key"].clone(), r["value"].clone()))
        .collect();
    assert_eq!(config["query_parser_engine"], "zero_copy", "{config:?}");
    assert_eq!(config["cross_shard_disabled"], "false");
    assert_eq!(config["log_min_duration_statement"], "250");
    assert_eq!(config["log_format"], "text");
    let orders = &config["sharded_tables.prod.orders"];
    assert!(orders.contains("column=tenant_id"), "{orders}");
    assert!(orders.contains("hash=postgres shards=2"), "{orders}");
    // Every key pgdog.toml.example documents under [general] is listed.
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pgdog.toml.example"),
    )
    .unwrap();
    let general = example
        .split("\n[[databases]]")
        .next()
        .unwrap()
        .split("[general]")
        .nth(1)
        .unwrap();
    for line in general.lines() {
        let line = line.trim_start_matches("# ");
        let Some((key, _)) = line.split_once(" = ") else {
            continue;
        };
        if key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            assert!(config.contains_key(key), "SHOW CONFIG lacks {key}");
        }
    }
}

#[tokio::test]
async fn reset_query_cache_empties_the_cache() {
    let servers = common::servers(2);
    create_sharded_schema(&servers);
    let cluster = Cluster::start_sharded(servers, "", SHARDING);
    let admin = cluster.admin().await;
    let client = cluster.connect().await;
    client
        .simple_query("SELECT * FROM orders WHERE tenant_id = 7")
        .await
        .unwrap();
    client
        .simple_query("SELECT * FROM orders WHERE tenant_id = 8")
        .await
        .unwrap();
    client
        .simple_query("SELECT * FROM orders ORDER BY tenant_id")
        .await
        .unwrap();
    // PgDog's shape: one row per statement, literals as `?`, with its
    // hits and routes to one shard (direct) or several (multi).
    let cache = rows(&admin, "SHOW QUERY_CACHE").await;
    let keyed = cache
        .iter()
        .find(|r| r["query"] == "SELECT * FROM orders WHERE tenant_id = ?")
        .unwrap_or_else(|| panic!("{cache:?}"));
    assert_eq!(keyed["hits"], "1", "{keyed:?}");
    assert_eq!(keyed["direct"], "2", "{keyed:?}");
    assert_eq!(keyed["multi"], "0", "{keyed:?}");
    let all = rows(&admin, "SHOW QUERY_CACHE order by").await;
    assert_eq!(all.len(), 1, "the filter keeps one: {all:?}");
    assert_eq!(all[0]["multi"], "1", "{all:?}");
    assert_eq!(rows(&admin, "SHOW QUERY CACHE").await.len(), cache.len());

    admin.simple_query("RESET QUERY_CACHE").await.unwrap();
    assert_eq!(rows(&admin, "SHOW QUERY_CACHE").await, Vec::new());
    // Statements are parsed (and routed) again.
    client
        .simple_query("SELECT * FROM orders WHERE tenant_id = 7")
        .await
        .unwrap();
    let cache = rows(&admin, "SHOW QUERY_CACHE").await;
    assert_eq!(cache.len(), 1, "{cache:?}");
    assert_eq!(cache[0]["hits"], "0", "{cache:?}");
}

#[tokio::test]
async fn kill_closes_clients_and_servers_and_holds_the_database() {
    let cluster = Cluster::start("default_pool_size = 4");
    let admin = cluster.admin().await;
    let direct = cluster.shard(0).await;
    let (idle, mut idle_connection) = common::connect_raw(cluster.port()).await;
    let idle_ended = tokio::spawn(async move {
        loop {
            match futures_util::future::poll_fn(|cx| idle_connection.poll_message(cx)).await {
                Some(Ok(_)) => {}
                Some(Err(err)) => return Some(err),
                None => return None,
            }
        }
    });
    idle.simple_query("SELECT 1").await.unwrap();
    let in_transaction = cluster.connect().await;
    in_transaction.batch_execute("BEGIN").await.unwrap();
    let held_pid = backend_pid(&in_transaction).await;
    // An idle pooled connection too.
    let idle_pid = backend_pid(&idle).await;
    assert!(backend_alive(&direct, &held_pid).await);

    admin.simple_query("KILL prod").await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(5), idle_ended)
        .await
        .expect("an idle client stays connected after KILL")
        .unwrap()
        .expect("closed without saying why");
    assert_eq!(code(&err), Some("57P01"), "{err:?}");
    assert!(in_transaction.simple_query("SELECT 1").await.is_err());
    // The backends it held or pooled are gone: closed, not given back.
    eventually("KILL closes the server backends", || async {
        !backend_alive(&direct, &held_pid).await && !backend_alive(&direct, &idle_pid).await
    })
    .await;
    eventually("killed clients leave SHOW CLIENTS", || async {
        !rows(&admin, "SHOW CLIENTS")
            .await
            .iter()
            .any(|c| c["user"] == "app")
    })
    .await;
    let databases = rows(&admin, "SHOW DATABASES").await;
    assert_eq!(databases[0]["paused"], "1", "{databases:?}");

    // As in PgBouncer, the database is held until RESUME.
    let late = cluster.connect().await;
    let mut query = Box::pin(column(&late, "SELECT 42 AS answer", "answer"));
    assert!(still_pending(&mut query, Duration::from_millis(300)).await);
    admin.simple_query("RESUME prod").await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), query)
        .await
        .expect("held after RESUME");
    assert_eq!(answer, vec!["42"]);
    assert!(admin.simple_query("KILL nowhere").await.is_err());
    assert!(admin.simple_query("KILL").await.is_err());
}

#[tokio::test]
async fn reconnect_replaces_servers_after_their_current_use() {
    let cluster = Cluster::start("default_pool_size = 2");
    let admin = cluster.admin().await;
    let direct = cluster.shard(0).await;
    let holder = cluster.connect().await;
    let other = cluster.connect().await;
    holder.batch_execute("BEGIN").await.unwrap();
    let held = backend_pid(&holder).await;
    let pooled = backend_pid(&other).await;
    assert_ne!(held, pooled);

    admin.simple_query("RECONNECT").await.unwrap();
    // SHOW SERVERS marks the one in use (PgBouncer's close_needed).
    let servers = rows(&admin, "SHOW SERVERS").await;
    let in_use = servers
        .iter()
        .find(|s| s["remote_pid"] == held)
        .unwrap_or_else(|| panic!("{held} not in {servers:?}"));
    assert_eq!(in_use["state"], "active", "{in_use:?}");
    assert_eq!(in_use["close_needed"], "1", "{in_use:?}");
    // The idle one is closed at once; the one in use serves its
    // transaction to the end.
    eventually("RECONNECT closes idle servers", || async {
        !backend_alive(&direct, &pooled).await
    })
    .await;
    let (waiter, _) = admin_with_notices(cluster.port()).await;
    let mut wait_close = Box::pin(waiter.simple_query("WAIT_CLOSE prod"));
    assert!(still_pending(&mut wait_close, Duration::from_millis(300)).await);
    assert_eq!(backend_pid(&holder).await, held);
    holder.batch_execute("COMMIT").await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), wait_close)
        .await
        .expect("WAIT_CLOSE still waits after the server was given back")
        .unwrap();
    // Closed as it came back (the backend exits a moment later).
    eventually(
        "the server given back after RECONNECT is closed",
        || async { !backend_alive(&direct, &held).await },
    )
    .await;
    for client in [&holder, &other] {
        let pid = backend_pid(client).await;
        assert!(pid != held && pid != pooled, "an old server served {pid}");
    }
    // Nothing to wait for now.
    tokio::time::timeout(Duration::from_secs(2), admin.simple_query("WAIT_CLOSE"))
        .await
        .unwrap()
        .unwrap();
    let servers = rows(&admin, "SHOW SERVERS").await;
    assert!(
        servers.iter().all(|s| s["close_needed"] == "0"),
        "{servers:?}"
    );
}

/// The column names of a SHOW command's reply.
async fn columns(admin: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    admin
        .simple_query(sql)
        .await
        .unwrap()
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::RowDescription(columns) => {
                Some(columns.iter().map(|c| c.name().to_owned()).collect())
            }
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn pgbouncers_views_have_its_columns_in_its_order() {
    let cluster = Cluster::start("");
    let admin = cluster.admin().await;
    let pgbouncer = [
        "type",
        "user",
        "database",
        "replication",
        "state",
        "addr",
        "port",
        "local_addr",
        "local_port",
        "connect_time",
        "request_time",
        "wait",
        "wait_us",
        "close_needed",
        "ptr",
        "link",
        "remote_pid",
        "tls",
        "application_name",
        "prepared_statements",
        "id",
    ];
    for command in ["SHOW CLIENTS", "SHOW SERVERS"] {
        let names = columns(&admin, command).await;
        assert_eq!(names[..pgbouncer.len()], pgbouncer, "{command}");
        assert_eq!(names[pgbouncer.len()..], ["shard", "role"], "{command}");
    }
    // The other views PgBouncer has: its columns first, in its order.
    for (command, pgbouncer) in [
        (
            "SHOW POOLS",
            &[
                "database",
                "user",
                "cl_active",
                "cl_waiting",
                "cl_active_cancel_req",
                "cl_waiting_cancel_req",
                "sv_active",
                "sv_active_cancel",
                "sv_being_canceled",
                "sv_idle",
                "sv_used",
                "sv_tested",
                "sv_login",
                "maxwait",
                "maxwait_us",
                "pool_mode",
                "load_balance_hosts",
            ][..],
        ),
        (
            "SHOW DATABASES",
            &[
                "name",
                "host",
                "port",
                "database",
                "force_user",
                "pool_size",
                "min_pool_size",
                "reserve_pool",
                "server_lifetime",
                "pool_mode",
                "load_balance_hosts",
                "max_connections",
                "current_connections",
                "max_client_connections",
                "current_client_connections",
                "paused",
                "disabled",
            ][..],
        ),
        (
            "SHOW USERS",
            &[
                "name",
                "pool_size",
                "reserve_pool_size",
                "pool_mode",
                "max_user_connections",
                "current_connections",
                "max_user_client_connections",
                "current_client_connections",
            ][..],
        ),
        (
            "SHOW STATS",
            &[
                "database",
                "total_server_assignment_count",
                "total_xact_count",
                "total_query_count",
                "total_received",
                "total_sent",
                "total_xact_time",
                "total_query_time",
                "total_wait_time",
                "total_client_parse_count",
                "total_server_parse_count",
                "total_bind_count",
                "avg_server_assignment_count",
                "avg_xact_count",
                "avg_query_count",
                "avg_recv",
                "avg_sent",
                "avg_xact_time",
                "avg_query_time",
                "avg_wait_time",
                "avg_client_parse_count",
                "avg_server_parse_count",
                "avg_bind_count",
            ][..],
        ),
        (
            "SHOW CONFIG",
            &["key", "value", "default", "changeable"][..],
        ),
        ("SHOW LISTS", &["list", "items"][..]),
        ("SHOW VERSION", &["version"][..]),
    ] {
        let names = columns(&admin, command).await;
        assert_eq!(names[..pgbouncer.len()], *pgbouncer, "{command}");
    }
    let client = cluster.connect().await;
    client.simple_query("SELECT 1").await.unwrap();
    let users = rows(&admin, "SHOW USERS").await;
    let app = users.iter().find(|u| u["name"] == "app").unwrap();
    assert_eq!(app["pool_size"], "10", "{app:?}");
    assert_eq!(app["current_client_connections"], "1", "{app:?}");
    let databases = rows(&admin, "SHOW DATABASES").await;
    assert_eq!(databases[0]["current_client_connections"], "1");
    let stats = rows(&admin, "SHOW STATS").await;
    assert_eq!(stats[0]["database"], "prod");
    assert_eq!(stats[0]["user"], "app");
    let assignments: u64 = stats[0]["total_server_assignment_count"].parse().unwrap();
    assert!(assignments >= 1, "{stats:?}");
    let config = rows(&admin, "SHOW CONFIG").await;
    let pool_size = config
        .iter()
        .find(|r| r["key"] == "default_pool_size")
        .unwrap();
    assert_eq!(pool_size["default"], "10", "{pool_size:?}");
}

/// pgshard over one server with two databases (clusters) on it: `prod`
/// and `other` (the same server database, another pool).
fn two_databases() -> (TestProxy, Vec<integration::PgServer>) {
    let servers = common::servers(1);
    let config = format!(
        "[general]\nshutdown_timeout = 2000\n{}{}\
         [[databases]]\nname = \"other\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_0\"\n",
        common::ADMIN,
        common::databases(&servers),
        servers[0].port()
    );
    let users =
        format!("{USERS}[[users]]\nname = \"app\"\ndatabase = \"other\"\npassword = \"app-pw\"\n");
    (TestProxy::start(&config, &users).unwrap(), servers)
}

#[tokio::test]
async fn pause_db_holds_only_that_database_until_resume_db() {
    let (proxy, _servers) = two_databases();
    let port = proxy.port();
    let admin = connect(port, "admin", "admin-pw", "admin").await.unwrap();
    let prod = connect(port, "app", "app-pw", "prod").await.unwrap();
    let other = connect(port, "app", "app-pw", "other").await.unwrap();
    prod.batch_execute("BEGIN").await.unwrap();
    prod.simple_query("SELECT 1").await.unwrap();

    // PAUSE prod returns once prod's servers are back.
    let mut pause = Box::pin(admin.simple_query("PAUSE prod"));
    assert!(still_pending(&mut pause, Duration::from_millis(300)).await);
    prod.batch_execute("COMMIT").await.unwrap();
    tokio::time::timeout(Duration::from_secs(3), pause)
        .await
        .expect("PAUSE prod still waits with its servers back")
        .unwrap();

    let mut held = Box::pin(column(&prod, "SELECT 1 AS one", "one"));
    assert!(still_pending(&mut held, Duration::from_millis(300)).await);
    assert_eq!(column(&other, "SELECT 2 AS two", "two").await, vec!["2"]);
    let paused: HashMap<String, String> = rows(&admin, "SHOW DATABASES")
        .await
        .into_iter()
        .map(|d| (d["name"].clone(), d["paused"].clone()))
        .collect();
    assert_eq!(paused["prod"], "1");
    assert_eq!(paused["other"], "0");
    // Resuming another database lets nothing of prod through.
    admin.simple_query("RESUME other").await.unwrap();
    assert!(still_pending(&mut held, Duration::from_millis(200)).await);
    admin.simple_query("RESUME prod").await.unwrap();
    let one = tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .expect("held after RESUME prod");
    assert_eq!(one, vec!["1"]);
    let err = admin.simple_query("PAUSE nowhere").await.unwrap_err();
    assert_eq!(code(&err), Some("3D000"));

    // PgDog's MAINTENANCE ON db holds that database only, too.
    admin.simple_query("MAINTENANCE ON other").await.unwrap();
    let mut held = Box::pin(column(&other, "SELECT 5 AS five", "five"));
    assert!(still_pending(&mut held, Duration::from_millis(300)).await);
    assert_eq!(column(&prod, "SELECT 6 AS six", "six").await, vec!["6"]);
    admin.simple_query("MAINTENANCE OFF other").await.unwrap();
    let five = tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .expect("held after MAINTENANCE OFF other");
    assert_eq!(five, vec!["5"]);
}

#[tokio::test]
async fn maintenance_lets_transactions_finish_and_holds_the_rest() {
    let cluster = Cluster::start("");
    let admin = cluster.admin().await;
    let busy = cluster.connect().await;
    let idle = cluster.connect().await;
    busy.batch_execute("BEGIN").await.unwrap();
    busy.simple_query("SELECT 1").await.unwrap();
    // Returns at once, with a transaction open.
    tokio::time::timeout(Duration::from_secs(2), admin.simple_query("MAINTENANCE ON"))
        .await
        .expect("MAINTENANCE ON waited")
        .unwrap();
    let mut held = Box::pin(column(&idle, "SELECT 3 AS three", "three"));
    assert!(still_pending(&mut held, Duration::from_millis(300)).await);
    assert_eq!(column(&busy, "SELECT 4 AS four", "four").await, vec!["4"]);
    busy.batch_execute("COMMIT").await.unwrap();
    assert!(still_pending(&mut held, Duration::from_millis(100)).await);
    // RESUME is PAUSE's: maintenance stays on until MAINTENANCE OFF.
    admin.simple_query("RESUME").await.unwrap();
    assert!(still_pending(&mut held, Duration::from_millis(100)).await);
    admin.simple_query("MAINTENANCE OFF").await.unwrap();
    let three = tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .expect("held after MAINTENANCE OFF");
    assert_eq!(three, vec!["3"]);
    assert!(admin.simple_query("MAINTENANCE maybe").await.is_err());
}
