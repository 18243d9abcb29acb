//! Following a failover (`role = "auto"`): a primary and a real streaming
//! replica (synchronous, so a commit the primary acknowledged is on the
//! replica), both `auto`, behind pgshard, and a loop of writes through
//! pgshard from several clients in transaction mode. The primary is stopped
//! (`pg_ctl stop -m immediate`) and the replica promoted (`pg_ctl
//! promote`): writes wait, then fail with 57P03 (no primary within
//! `checkout_timeout`), then resume on the new primary within
//! `lsn_check_interval + lsn_check_timeout` of the promotion; every write
//! reported successful is on the new primary, none went to a read-only
//! server (no 25006 ever), and SHOW SERVERS / POOLS / REPLICATION and the
//! metrics show the new roles. Then the old primary comes back as a
//! standalone still claiming the primary role (split brain): it is fenced
//! (no writes, no reads), writes stay on the promoted server.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{column, connect, ADMIN, USERS};
use integration::{PgServer, ServerOptions, TestProxy};
use proxy::pool::roles::RoleNow;

/// `lsn_check_interval` and `lsn_check_timeout` of the test (ms): the
/// stated time to notice a promotion is their sum.
const INTERVAL_MS: u64 = 200;
const TIMEOUT_MS: u64 = 500;
const CHECKOUT_TIMEOUT_MS: u64 = 1000;

/// What the writers saw.
#[derive(Default)]
struct Outcomes {
    /// Ids whose INSERT was reported successful, with when.
    ok: Vec<(i64, Instant)>,
    /// SQLSTATEs (or "closed" for a lost connection) of the failed ones.
    errors: BTreeMap<String, usize>,
    /// A 57P03's message.
    no_primary: Option<String>,
}

/// Writers inserting increasing ids into `events` through pgshard, each
/// on a connection of its own (opened again when lost), until `stop`.
fn start_writers(port: u16, n: usize, stop: &Arc<AtomicBool>) -> Arc<Mutex<Outcomes>> {
    let outcomes = Arc::new(Mutex::new(Outcomes::default()));
    let next = Arc::new(AtomicI64::new(1));
    for _ in 0..n {
        let (outcomes, next, stop) = (Arc::clone(&outcomes), Arc::clone(&next), Arc::clone(stop));
        tokio::spawn(async move {
            let mut client = None;
            while !stop.load(Ordering::Relaxed) {
                let Some(c) = client
                    .as_ref()
                    .filter(|c: &&tokio_postgres::Client| !c.is_closed())
                else {
                    client = connect(port, "app", "app-pw", "prod").await.ok();
                    if client.is_none() {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    continue;
                };
                let id = next.fetch_add(1, Ordering::Relaxed);
                let done = c.execute("INSERT INTO events VALUES ($1)", &[&id]).await;
                let mut seen = outcomes.lock().unwrap();
                match done {
                    Ok(_) => seen.ok.push((id, Instant::now())),
                    Err(err) => {
                        let code = err
                            .code()
                            .map_or("closed".to_owned(), |c| c.code().to_owned());
                        if code == "57P03" {
                            seen.no_primary = err.as_db_error().map(|e| e.message().to_owned());
                        }
                        *seen.errors.entry(code).or_default() += 1;
                    }
                }
            }
        });
    }
    outcomes
}

/// Wait (up to 10 s) until the shard's roles are `expected`, by server
/// port.
async fn wait_roles(proxy: &TestProxy, expected: &[(u16, RoleNow)]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let roles = proxy.state().all_roles();
        let now: Vec<(u16, RoleNow)> = roles[0]
            .report()
            .iter()
            .map(|s| (s.port, s.found))
            .collect();
        if expected.iter().all(|e| now.contains(e)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "roles {now:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// (port, role) of every row of an admin command with `port`/`addr` and
/// `role` columns.
async fn admin_roles(
    admin: &tokio_postgres::Client,
    command: &str,
    port_col: &str,
) -> BTreeSet<(String, String)> {
    let ports = column(admin, command, port_col).await;
    let roles = column(admin, command, "role").await;
    ports.into_iter().zip(roles).collect()
}

async fn ids(server: &PgServer, sql: &str) -> BTreeSet<i64> {
    let client = connect(server.port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    client
        .query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_follow_a_promotion_and_a_returning_old_primary_is_fenced() {
    let t0 = Instant::now();
    let phase = |what: &str| eprintln!("{:>8.1?} {what}", t0.elapsed());
    let mut old = common::servers(1).pop().unwrap();
    old.psql(
        "shard_0",
        "CREATE TABLE events (id bigint PRIMARY KEY); ALTER TABLE events OWNER TO app",
    )
    .unwrap();
    phase("primary up");
    let new = PgServer::start_replica(&old, ServerOptions::default()).unwrap();
    phase("replica up");
    // Synchronous: a commit the old primary acknowledged was flushed on the
    // replica, so none may be missing after the promotion.
    old.psql(
        "postgres",
        "ALTER SYSTEM SET synchronous_standby_names = '*'",
    )
    .unwrap();
    old.psql("postgres", "SELECT pg_reload_conf()").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while old
        .psql(
            "postgres",
            "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'",
        )
        .unwrap()
        != "1"
    {
        assert!(
            Instant::now() < deadline,
            "the replica never became synchronous"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The replica is listed first: which one is the primary is found.
    let mut databases = String::new();
    for server in [&new, &old] {
        databases.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_0\"\nrole = \"auto\"\n",
            server.port()
        ));
    }
    let pgdog = format!(
        "[general]\nshutdown_timeout = 1000\nconnect_timeout = 300\ncheckout_timeout = {CHECKOUT_TIMEOUT_MS}\n\
         lsn_check_interval = {INTERVAL_MS}\nlsn_check_timeout = {TIMEOUT_MS}\n{ADMIN}{databases}"
    );
    phase("servers ready");
    let proxy = TestProxy::start(&pgdog, USERS).unwrap();
    wait_roles(
        &proxy,
        &[
            (old.port(), RoleNow::Primary),
            (new.port(), RoleNow::Replica),
        ],
    )
    .await;
    phase("roles found");
    let admin = connect(proxy.port(), "admin", "admin-pw", "admin")
        .await
        .unwrap();

    // Writes run on the old primary.
    let stop = Arc::new(AtomicBool::new(false));
    let outcomes = start_writers(proxy.port(), 4, &stop);
    let deadline = Instant::now() + Duration::from_secs(10);
    while outcomes.lock().unwrap().ok.len() < 20 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = outcomes.lock().unwrap().ok.len();
    assert!(
        before > 0,
        "no write went through before the failover: {:?} {:?}",
        outcomes.lock().unwrap().errors,
        outcomes.lock().unwrap().no_primary
    );

    // The primary goes; for longer than checkout_timeout, none is there.
    phase("writes ran");
    old.stop_immediate().unwrap();
    wait_roles(&proxy, &[(old.port(), RoleNow::Down)]).await;
    tokio::time::sleep(Duration::from_millis(CHECKOUT_TIMEOUT_MS + 500)).await;
    phase("stopped, waited");
    new.promote().unwrap();
    let promoted = Instant::now();
    let stated = Duration::from_millis(INTERVAL_MS + TIMEOUT_MS);
    let resumed = loop {
        let first = outcomes
            .lock()
            .unwrap()
            .ok
            .iter()
            .map(|(_, at)| *at)
            .find(|at| *at > promoted);
        if let Some(at) = first {
            break at - promoted;
        }
        assert!(
            promoted.elapsed() < Duration::from_secs(10),
            "writes never resumed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    eprintln!("writes resumed {resumed:?} after the promotion (stated: within {stated:?} plus a write's time)");
    // The stated time, plus room for the write itself on a busy machine.
    assert!(
        resumed < stated + Duration::from_millis(1500),
        "writes resumed after {resumed:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;

    phase("writes after promotion");
    let seen = std::mem::take(&mut *outcomes.lock().unwrap());
    let on_new = ids(&new, "SELECT id FROM events").await;
    let lost: Vec<i64> = seen
        .ok
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| !on_new.contains(id))
        .collect();
    assert!(
        lost.is_empty(),
        "writes reported successful but not on the new primary: {lost:?}"
    );
    assert!(seen.ok.len() > before, "no write after the promotion");
    // None went to a read-only server; the wait ended in a clear error.
    assert!(
        !seen.errors.contains_key("25006"),
        "a write reached a read-only server: {:?}",
        seen.errors
    );
    assert!(
        seen.errors.contains_key("57P03"),
        "no write waited out checkout_timeout: {:?}",
        seen.errors
    );
    let message = seen.no_primary.unwrap();
    assert!(
        message.starts_with("no primary for database \"prod\" shard 0: "),
        "{message}"
    );
    eprintln!("errors while there was no primary: {:?}", seen.errors);

    // The admin console and the metrics show the new roles.
    let (old_port, new_port) = (old.port().to_string(), new.port().to_string());
    let servers = admin_roles(&admin, "SHOW REPLICATION", "port").await;
    assert!(
        servers.contains(&(new_port.clone(), "primary".into())),
        "{servers:?}"
    );
    assert!(
        servers.contains(&(old_port.clone(), "down".into())),
        "{servers:?}"
    );
    let pools = column(&admin, "SHOW POOLS", "role").await;
    assert_eq!(
        pools.iter().filter(|r| *r == "primary").count(),
        1,
        "{pools:?}"
    );
    let connections = admin_roles(&admin, "SHOW SERVERS", "port").await;
    assert!(
        connections
            .iter()
            .all(|(port, role)| *port == new_port && role == "primary"),
        "{connections:?}"
    );
    let listed = column(&admin, "SHOW DATABASES", "port").await;
    assert_eq!(
        listed,
        std::slice::from_ref(&new_port),
        "SHOW DATABASES lists the primary now"
    );
    let metrics = proxy::openmetrics::render(proxy.state());
    let role_line = format!("server_role{{cluster=\"prod\",shard=\"0\",host=\"127.0.0.1:{new_port}\",role=\"primary\"}} 1");
    assert!(
        metrics.lines().any(|l| l == role_line),
        "{role_line} in:\n{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l == "failovers_total{cluster=\"prod\",shard=\"0\"} 1"),
        "{metrics}"
    );

    // The old primary comes back as a standalone, on the old timeline: it
    // is fenced, and writes stay on the promoted server.
    phase("checked");
    old.start_again().unwrap();
    wait_roles(
        &proxy,
        &[
            (old.port(), RoleNow::Fenced),
            (new.port(), RoleNow::Primary),
        ],
    )
    .await;
    let servers = admin_roles(&admin, "SHOW REPLICATION", "port").await;
    assert!(
        servers.contains(&(old_port, "fenced".into())),
        "{servers:?}"
    );
    let client = connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    for id in 1_000_000..1_000_050_i64 {
        client
            .execute("INSERT INTO events VALUES ($1)", &[&id])
            .await
            .unwrap();
        // Reads never go to the fenced server either.
        let port: i32 = client
            .query_one("SELECT inet_server_port() FROM events LIMIT 1", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(port, i32::from(new.port()));
    }
    phase("fenced, written");
    let later = "SELECT id FROM events WHERE id >= 1000000";
    assert_eq!(ids(&new, later).await.len(), 50);
    assert!(ids(&old, later).await.is_empty());
    assert_eq!(proxy.state().all_roles()[0].failovers(), 1);
}
