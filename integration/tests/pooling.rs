//! Transaction and session pooling against real servers: many clients over
//! few server connections, with no state leaking between clients, protocol
//! prepared statements, pipelining, COPY, cancel and checkout limits.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{code, column, Cluster};
use futures_util::{SinkExt, TryStreamExt};

#[tokio::test]
async fn settings_temp_tables_and_transactions_stay_with_their_client() {
    let cluster = Cluster::start("default_pool_size = 2");
    let mut clients = Vec::new();
    for i in 0..6 {
        let client = cluster.connect().await;
        client
            .simple_query(&format!("SET statement_timeout = '{}s'", i + 1))
            .await
            .unwrap();
        clients.push(client);
    }
    // Each client sees its own value in later transactions, whichever of
    // the two server connections serves it.
    for round in 0..3 {
        for (i, client) in clients.iter().enumerate() {
            let value = column(client, "SHOW statement_timeout", "statement_timeout").await;
            assert_eq!(
                value,
                vec![format!("{}s", i + 1)],
                "round {round} client {i}"
            );
        }
    }
    // RESET goes back to the default, on every server that serves it later.
    clients[0]
        .simple_query("RESET statement_timeout")
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(
            column(&clients[0], "SHOW statement_timeout", "statement_timeout").await,
            vec!["0"]
        );
    }
    // A SET rolled back does not stick.
    clients[1]
        .batch_execute("BEGIN; SET statement_timeout = '99s'; ROLLBACK")
        .await
        .unwrap();
    assert_eq!(
        column(&clients[1], "SHOW statement_timeout", "statement_timeout").await,
        vec!["2s"]
    );
    // A temp table is the creator's alone.
    clients[2]
        .simple_query("CREATE TEMP TABLE mine (x int)")
        .await
        .unwrap();
    for client in &clients[3..] {
        let err = client.simple_query("SELECT * FROM mine").await.unwrap_err();
        assert_eq!(code(&err), Some("42P01"), "{err}");
    }
    // A client that disconnects mid-transaction leaves nothing behind.
    let quitter = cluster.connect().await;
    quitter
        .batch_execute("CREATE TABLE t (x int)")
        .await
        .unwrap();
    quitter
        .batch_execute("BEGIN; INSERT INTO t VALUES (1)")
        .await
        .unwrap();
    drop(quitter);
    tokio::time::sleep(Duration::from_millis(200)).await;
    for client in &clients {
        let rows = client.query("SELECT count(*) FROM t", &[]).await.unwrap();
        assert_eq!(rows[0].get::<_, i64>(0), 0);
        // And the connection it held is usable, outside any transaction.
        let status = column(
            client,
            "SELECT now() = statement_timestamp() AS fresh",
            "fresh",
        )
        .await;
        assert_eq!(status, vec!["t"]);
    }
}

#[tokio::test]
async fn startup_parameters_follow_the_client() {
    let cluster = Cluster::start("default_pool_size = 1");
    let a = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=prod application_name=alpha options='-c search_path=alpha_schema'",
        cluster.port()
    ))
    .await
    .unwrap();
    let b = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=prod application_name=beta",
        cluster.port()
    ))
    .await
    .unwrap();
    for _ in 0..3 {
        assert_eq!(
            column(&a, "SHOW application_name", "application_name").await,
            vec!["alpha"]
        );
        assert_eq!(
            column(&b, "SHOW application_name", "application_name").await,
            vec!["beta"]
        );
        assert_eq!(
            column(&a, "SHOW search_path", "search_path").await,
            vec!["alpha_schema"]
        );
        assert_eq!(
            column(&b, "SHOW search_path", "search_path").await,
            vec!["\"$user\", public"]
        );
    }
    // A bad startup setting is refused like Postgres refuses it.
    let err = common::connect_str(&format!(
        "host=127.0.0.1 port={} user=app password=app-pw dbname=prod options='-c no_such_setting=1'",
        cluster.port()
    ))
    .await
    .unwrap_err();
    let message = err.as_db_error().map(|e| e.message().to_owned());
    assert!(
        message.unwrap_or_default().contains("no_such_setting"),
        "{err:?}"
    );
}

#[tokio::test]
async fn prepared_statements_work_with_more_clients_than_servers() {
    let cluster = Cluster::start("default_pool_size = 2");
    let setup = cluster.connect().await;
    setup
        .batch_execute("CREATE TABLE kv (k int PRIMARY KEY, v text)")
        .await
        .unwrap();
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(cluster.connect().await);
    }
    // tokio-postgres names statements s0, s1, ... per connection: the names
    // collide across clients, with different texts behind them.
    let mut statements = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        let insert = client
            .prepare(&format!("INSERT INTO kv VALUES ($1, $2 || '-{i}')"))
            .await
            .unwrap();
        let select = client
            .prepare("SELECT v FROM kv WHERE k = $1")
            .await
            .unwrap();
        statements.push((insert, select));
    }
    for round in 0..5 {
        for (i, (client, (insert, select))) in clients.iter().zip(&statements).enumerate() {
            let k = (round * 100 + i) as i32;
            client.execute(insert, &[&k, &"v"]).await.unwrap();
            let row = client.query_one(select, &[&k]).await.unwrap();
            assert_eq!(row.get::<_, String>(0), format!("v-{i}"));
        }
    }
    // Prepared inside a transaction, used (and closed) after COMMIT.
    let mut client = cluster.connect().await;
    let tx = client.transaction().await.unwrap();
    let statement = tx
        .prepare("SELECT count(*) FROM kv WHERE k >= $1")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let row = client.query_one(&statement, &[&0i32]).await.unwrap();
    assert_eq!(row.get::<_, i64>(0), 40);
    drop(statement); // tokio-postgres sends Close
    client.simple_query("SELECT 1").await.unwrap();
    // DEALLOCATE ALL and DISCARD ALL are honoured (named DEALLOCATE is
    // tested on the raw protocol in proxy.rs).
    let old = client.prepare("SELECT 7").await.unwrap();
    client.simple_query("DEALLOCATE ALL").await.unwrap();
    let err = client.query_one(&old, &[]).await.unwrap_err();
    assert_eq!(code(&err), Some("26000"), "{err}");
    client.simple_query("DISCARD ALL").await.unwrap();
    let again = client.prepare("SELECT 8").await.unwrap();
    assert_eq!(
        client
            .query_one(&again, &[])
            .await
            .unwrap()
            .get::<_, i32>(0),
        8
    );
    // Errors in a prepared statement do not break the pipeline state.
    let err = client.prepare("SELEC broken").await.unwrap_err();
    assert_eq!(code(&err), Some("42601"));
    assert_eq!(
        client
            .query_one("SELECT 9", &[])
            .await
            .unwrap()
            .get::<_, i32>(0),
        9
    );
}

#[tokio::test]
async fn pipelined_queries_come_back_in_order() {
    let cluster = Cluster::start("default_pool_size = 1");
    let client = cluster.connect().await;
    let statement = client.prepare("SELECT $1::int * 2").await.unwrap();
    // tokio-postgres pipelines concurrent queries on one connection.
    let futures = (0..50).map(|i| {
        let client = &client;
        let statement = &statement;
        async move {
            if i % 7 == 3 {
                // An error in the middle fails only its own query.
                let err = client.query_one("SELECT 1/0", &[]).await.unwrap_err();
                assert_eq!(code(&err), Some("22012"));
                None
            } else {
                Some(
                    client
                        .query_one(statement, &[&i])
                        .await
                        .unwrap()
                        .get::<_, i32>(0),
                )
            }
        }
    });
    let results = futures_util::future::join_all(futures).await;
    for (i, result) in results.into_iter().enumerate() {
        if let Some(value) = result {
            assert_eq!(value, 2 * i as i32);
        }
    }
}

#[tokio::test]
async fn copy_in_and_out() {
    let cluster = Cluster::start("default_pool_size = 1");
    let client = cluster.connect().await;
    client
        .batch_execute("CREATE TABLE c (a int, b text)")
        .await
        .unwrap();
    let sink = client.copy_in("COPY c FROM STDIN").await.unwrap();
    futures_util::pin_mut!(sink);
    for i in 0..1000 {
        sink.send(Bytes::from(format!("{i}\trow {i}\n")))
            .await
            .unwrap();
    }
    assert_eq!(sink.finish().await.unwrap(), 1000);
    let out: Vec<Bytes> = client
        .copy_out("COPY (SELECT * FROM c ORDER BY a) TO STDOUT")
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let text: String = out.iter().map(|b| String::from_utf8_lossy(b)).collect();
    assert_eq!(text.lines().count(), 1000);
    assert_eq!(text.lines().nth(999), Some("999\trow 999"));
    // A failed COPY is the client's error only. (tokio-postgres itself
    // cannot go on after one, directly against Postgres too: it sends
    // CopyFail + Sync and chokes on the extra ReadyForQuery; so the check
    // that the pool is fine uses a second client.)
    let err = client
        .copy_in::<_, Bytes>("COPY nope FROM STDIN")
        .await
        .err()
        .unwrap();
    assert_eq!(code(&err), Some("42P01"));
    drop(client);
    let other = cluster.connect().await;
    let count = other
        .query_one("SELECT count(*) FROM c", &[])
        .await
        .unwrap();
    assert_eq!(count.get::<_, i64>(0), 1000);
}

#[tokio::test]
async fn cancel_reaches_the_query_of_that_client_only() {
    let cluster = Cluster::start("default_pool_size = 4");
    let victim = cluster.connect().await;
    let bystander = cluster.connect().await;
    let token = victim.cancel_token();
    let started = Instant::now();
    let sleeping = tokio::spawn(async move { victim.simple_query("SELECT pg_sleep(30)").await });
    let other = tokio::spawn(async move { bystander.simple_query("SELECT pg_sleep(1.5)").await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    let err = sleeping.await.unwrap().unwrap_err();
    assert_eq!(code(&err), Some("57014"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    other
        .await
        .unwrap()
        .expect("the other client's query is not cancelled");
}

#[tokio::test]
async fn checkout_timeout_is_an_error_not_a_hang() {
    let cluster = Cluster::start("default_pool_size = 1\ncheckout_timeout = 300");
    let holder = cluster.connect().await;
    holder.batch_execute("BEGIN; SELECT 1").await.unwrap();
    let waiter = cluster.connect().await;
    let started = Instant::now();
    let err = waiter.simple_query("SELECT 1").await.unwrap_err();
    assert_eq!(code(&err), Some("53300"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    holder.batch_execute("COMMIT").await.unwrap();
    waiter.simple_query("SELECT 1").await.unwrap();
}

/// A client that leaves while it waits for a connection stops counting in
/// SHOW POOLS `cl_waiting` (its checkout was dropped mid-wait), and the
/// connection goes to the next client when it is given back.
#[tokio::test]
async fn a_client_that_leaves_while_waiting_is_no_longer_waiting() {
    let cluster = Cluster::start("default_pool_size = 1\ncheckout_timeout = 30000");
    let admin = cluster.admin().await;
    let holder = cluster.connect().await;
    holder.batch_execute("BEGIN; SELECT 1").await.unwrap();
    let (leaver, connection) = common::connect_raw(cluster.port()).await;
    let driven = tokio::spawn(connection);
    let query = tokio::spawn(async move { leaver.simple_query("SELECT 1").await.map(drop) });
    let deadline = Instant::now() + Duration::from_secs(5);
    while cl_waiting(&admin).await != "1" {
        assert!(Instant::now() < deadline, "the client never waited");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Gone: its socket closes with the connection task.
    query.abort();
    driven.abort();
    let deadline = Instant::now() + Duration::from_secs(5);
    while cl_waiting(&admin).await != "0" {
        assert!(
            Instant::now() < deadline,
            "still counted as waiting: {:?}",
            common::rows(&admin, "SHOW POOLS").await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    holder.batch_execute("COMMIT").await.unwrap();
    let next = cluster.connect().await;
    assert_eq!(column(&next, "SELECT 2 AS two", "two").await, vec!["2"]);
}

async fn cl_waiting(admin: &tokio_postgres::Client) -> String {
    common::rows(admin, "SHOW POOLS")
        .await
        .iter()
        .find(|p| p["user"] == "app")
        .map(|p| p["cl_waiting"].clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn session_mode_keeps_the_server_and_relays_notifications() {
    let cluster = Cluster::start("pooler_mode = \"session\"\ndefault_pool_size = 2");
    let (listener, mut connection) = common::connect_raw(cluster.port()).await;
    let (tx, mut notifications) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Ok(Some(message)) = stream.try_next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message {
                let _ = tx.send(n.payload().to_owned());
            }
        }
    });
    listener
        .batch_execute("LISTEN jobs; SET work_mem = '7MB'")
        .await
        .unwrap();
    let notifier = cluster.connect().await;
    notifier
        .batch_execute("NOTIFY jobs, 'hello'")
        .await
        .unwrap();
    let payload = tokio::time::timeout(Duration::from_secs(5), notifications.recv())
        .await
        .unwrap();
    assert_eq!(payload.as_deref(), Some("hello"));
    assert_eq!(
        column(&listener, "SHOW work_mem", "work_mem").await,
        vec!["7MB"]
    );
    // The session's server goes back reset: the next client sees defaults.
    drop(listener);
    drop(notifier);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let next = cluster.connect().await;
    assert_eq!(
        column(&next, "SHOW work_mem", "work_mem").await,
        vec!["4MB"]
    );
    let listening = column(
        &next,
        "SELECT count(*) AS n FROM pg_listening_channels()",
        "n",
    )
    .await;
    assert_eq!(listening, vec!["0"]);
}

#[tokio::test]
async fn dead_server_connections_are_detected_and_replaced() {
    let mut cluster = Cluster::start("default_pool_size = 2");
    let client = cluster.connect().await;
    client.simple_query("SELECT 1").await.unwrap();
    // The pooled connection dies with its server.
    cluster.servers[0].kill().unwrap();
    let err = client.simple_query("SELECT 1").await.unwrap_err();
    assert!(err.as_db_error().is_some() || err.is_closed(), "{err:?}");
    cluster.servers[0].start_again().unwrap();
    // New work gets a fresh connection, not the dead one.
    let mut ok = false;
    for _ in 0..50 {
        let fresh = match common::connect(cluster.port(), "app", "app-pw", "prod").await {
            Ok(fresh) => fresh,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if fresh.simple_query("SELECT 1").await.is_ok() {
            ok = true;
            break;
        }
    }
    assert!(ok, "no working connection after the server came back");
}

#[tokio::test]
async fn tls_when_a_certificate_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::start(&common::self_signed_tls(dir.path()));
    // sslmode=require fails unless pgshard answers the SSLRequest with S.
    assert_eq!(
        common::psql(cluster.port(), "require", "SELECT shard FROM whoami"),
        "0"
    );
}

/// (sv_idle, sv_active) of the one pool, from SHOW POOLS.
async fn pool_servers(admin: &tokio_postgres::Client) -> (u32, u32) {
    let pools = common::rows(admin, "SHOW POOLS").await;
    let pool = &pools[0];
    (
        pool["sv_idle"].parse().unwrap(),
        pool["sv_active"].parse().unwrap(),
    )
}

/// `server_round_robin` hands idle connections out oldest first: one
/// client's transactions go to each server in turn; by default the most
/// recently used one serves them all.
#[tokio::test]
async fn server_round_robin_hands_idle_connections_out_in_turn() {
    for (round_robin, servers) in [(true, 3), (false, 1)] {
        let cluster = Cluster::start(&format!(
            "default_pool_size = 3\nmin_pool_size = 3\nserver_round_robin = {round_robin}"
        ));
        let admin = cluster.admin().await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while pool_servers(&admin).await.0 < 3 {
            assert!(
                Instant::now() < deadline,
                "min_pool_size opened no 3 servers"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let client = cluster.connect().await;
        let mut pids = Vec::new();
        for _ in 0..6 {
            pids.extend(column(&client, "SELECT pg_backend_pid() AS pid", "pid").await);
        }
        let distinct: std::collections::BTreeSet<_> = pids.iter().collect();
        assert_eq!(
            distinct.len(),
            servers,
            "round robin {round_robin}: {pids:?}"
        );
        // In turn: the same order twice over.
        assert_eq!(pids[..3], pids[3..], "round robin {round_robin}: {pids:?}");
    }
}

#[tokio::test]
async fn min_pool_size_idle_timeout_server_lifetime_and_query_timeout() {
    let cluster = Cluster::start(
        "default_pool_size = 4\nmin_pool_size = 2\nidle_timeout = 1500\nserver_lifetime = 4000\nquery_timeout = 500",
    );
    let admin = cluster.admin().await;
    // min_pool_size opens connections before anyone asks.
    let deadline = Instant::now() + Duration::from_secs(5);
    while pool_servers(&admin).await.0 < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pool_servers(&admin).await, (2, 0));
    // Four transactions open at once: the pool grows to its size (open
    // transactions, not overlapping sleeps, which a loaded machine may
    // run one after the other)...
    let clients = futures_util::future::join_all((0..4).map(|_| cluster.connect())).await;
    for client in &clients {
        client.simple_query("BEGIN; SELECT 1").await.unwrap();
    }
    assert_eq!(pool_servers(&admin).await, (0, 4));
    for client in &clients {
        client.simple_query("COMMIT").await.unwrap();
    }
    assert_eq!(pool_servers(&admin).await, (4, 0));
    // ...and idle_timeout shrinks it back to min_pool_size.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(pool_servers(&admin).await.0, 2);
    // server_lifetime retires connections: the backends serving now are new.
    let before = column(&clients[0], "SELECT pg_backend_pid()::text AS pid", "pid").await;
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let after = column(&clients[0], "SELECT pg_backend_pid()::text AS pid", "pid").await;
    assert_ne!(
        before, after,
        "server_lifetime did not retire the connection"
    );
    // query_timeout cancels a query that runs too long.
    let err = clients[1]
        .simple_query("SELECT pg_sleep(5)")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("57014"), "{err}");
    clients[1].simple_query("SELECT 1").await.unwrap();
}

#[tokio::test]
async fn portals_with_row_limits() {
    let cluster = Cluster::start("default_pool_size = 1");
    let mut client = cluster.connect().await;
    let tx = client.transaction().await.unwrap();
    let statement = tx.prepare("SELECT generate_series(1, 5)").await.unwrap();
    let portal = tx.bind(&statement, &[]).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let rows = tx.query_portal(&portal, 2).await.unwrap();
        if rows.is_empty() {
            break;
        }
        assert!(rows.len() <= 2);
        seen.extend(rows.iter().map(|r| r.get::<_, i32>(0)));
    }
    tx.commit().await.unwrap();
    assert_eq!(seen, vec![1, 2, 3, 4, 5]);
}

/// A `host` that is a directory is a Unix-socket directory, as in libpq and
/// PgBouncer: pgshard logs in, pools, relays, cancels and shows the
/// connection over `<dir>/.s.PGSQL.<port>`; a directory with no server is
/// a clear error naming the socket.
#[tokio::test]
async fn a_server_on_a_unix_socket_is_pooled_cancelled_and_shown() {
    let servers = common::servers(1);
    let (dir, port) = (servers[0].dir().display().to_string(), servers[0].port());
    let entry = |dir: &str, name: &str| {
        format!("[[databases]]\nname = \"{name}\"\nhost = \"{dir}\"\nport = {port}\ndatabase_name = \"shard_0\"\n")
    };
    let missing = format!("{dir}/no-such-dir");
    let config = format!(
        "[general]\nshutdown_timeout = 1000\ndefault_pool_size = 2\nconnect_timeout = 2000\n{}{}{}",
        common::ADMIN,
        entry(&dir, "prod"),
        entry(&missing, "nowhere"),
    );
    let users = format!(
        "{}[[users]]\nname = \"app\"\ndatabase = \"nowhere\"\npassword = \"app-pw\"\n",
        common::USERS
    );
    let proxy = integration::TestProxy::start(&config, &users).unwrap();
    let client = common::connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    // Postgres reports no server address on a Unix-socket connection.
    let row = client
        .query_one("SELECT inet_server_addr() IS NULL, current_database()", &[])
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0), "the server saw a TCP connection");
    assert_eq!(row.get::<_, String>(1), "shard_0");
    // Prepared statements and transactions, through the pool.
    let statement = client.prepare("SELECT $1::int8 + 1").await.unwrap();
    for i in 0..20i64 {
        let row = client.query_one(&statement, &[&i]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), i + 1);
    }
    client
        .batch_execute("BEGIN; CREATE TEMP TABLE t (x int); ROLLBACK")
        .await
        .unwrap();

    // Bulk both ways: a COPY of ~8 MB (more than the socket's buffer, so
    // writes wait for room: the socket is registered for writability
    // then, and for readability only again after), and a result far
    // larger than one read.
    client
        .batch_execute("CREATE TABLE unix_bulk (i int, line text)")
        .await
        .unwrap();
    let sink = client.copy_in("COPY unix_bulk FROM STDIN").await.unwrap();
    futures_util::pin_mut!(sink);
    let line = "x".repeat(1000);
    for i in 0..8000 {
        sink.send(Bytes::from(format!("{i}\t{line}\n")))
            .await
            .unwrap();
    }
    assert_eq!(sink.finish().await.unwrap(), 8000);
    let row = client
        .query_one(
            "SELECT count(*), sum(length(line))::int8, string_agg(line, '' ORDER BY i) = repeat('x', 8000000) FROM unix_bulk",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 8000);
    assert_eq!(row.get::<_, i64>(1), 8_000_000);
    assert!(row.get::<_, bool>(2));
    let big = client
        .query_one("SELECT string_agg(line, '' ORDER BY i) FROM unix_bulk", &[])
        .await
        .unwrap();
    assert_eq!(big.get::<_, String>(0).len(), 8_000_000);
    for i in 0..20i64 {
        let row = client.query_one(&statement, &[&i]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), i + 1);
    }

    // A cancel reaches the server over the socket.
    let token = client.cancel_token();
    let started = Instant::now();
    let sleeping = tokio::spawn(async move {
        let result = client.simple_query("SELECT pg_sleep(30)").await;
        (client, result)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    let (client, result) = sleeping.await.unwrap();
    assert_eq!(code(&result.unwrap_err()), Some("57014"));
    assert!(started.elapsed() < Duration::from_secs(10));

    // The admin console shows it as PgBouncer does: addr `unix`, the port.
    let admin = common::connect(proxy.port(), "admin", "admin-pw", "admin")
        .await
        .unwrap();
    let servers_shown = common::rows(&admin, "SHOW SERVERS").await;
    let shown = servers_shown
        .iter()
        .find(|s| s["database"] == "shard_0")
        .unwrap_or_else(|| panic!("no server in {servers_shown:?}"));
    assert_eq!(shown["addr"], "unix", "{shown:?}");
    assert_eq!(shown["port"], port.to_string());
    let fds = common::rows(&admin, "SHOW FDS").await;
    assert!(
        fds.iter()
            .any(|f| f["task"] == "server" && f["addr"] == "unix"),
        "{fds:?}"
    );
    client.simple_query("SELECT 1").await.unwrap();

    // No server behind the other entry's directory: the client's error
    // (the socket's path is in pgshard's log), and the first client's pool
    // keeps working.
    let nowhere = common::connect(proxy.port(), "app", "app-pw", "nowhere").await;
    let err = match nowhere {
        Ok(other) => other.simple_query("SELECT 1").await.unwrap_err(),
        Err(err) => err,
    };
    let text = common::describe(&err);
    assert!(
        text.starts_with("08006") && text.contains("nowhere"),
        "{text}"
    );
    client.simple_query("SELECT 1").await.unwrap();
}
