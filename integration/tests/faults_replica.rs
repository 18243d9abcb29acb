//! A replica killed under read load (issue 35 point 1, as
//! `faults_under_load.rs` for shards): a primary and two streaming replicas
//! behind pgshard, clients reading in a loop. One replica's Postgres is
//! killed with SIGKILL, then restarted. Every failed read carries a
//! SQLSTATE and only statements in flight fail, no read waits longer than
//! the timeouts plus a stated slack, every read answers correctly, the
//! restarted replica serves reads again within [`SERVES_AGAIN`] of its
//! restart (its ban lasts `ban_timeout`), and afterwards no server
//! connection is leaked: the pools are idle and each server's backends are
//! exactly those SHOW SERVERS lists.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{connect, ADMIN, USERS};
use integration::{PgServer, ServerOptions, TestProxy};

const CLIENTS: usize = 6;
const QUERY_TIMEOUT: Duration = Duration::from_millis(1_000);
const CHECKOUT_TIMEOUT: Duration = Duration::from_millis(2_000);
const BAN_TIMEOUT: Duration = Duration::from_millis(2_000);
/// Longest a read may take: a wait for a server, then query_timeout, and
/// a second of slack for the cancel and a busy debug build.
const LATENCY_BOUND: Duration = Duration::from_millis(4_000);
/// The restarted replica is back in rotation within its ban, the health
/// check's interval and some slack.
const SERVES_AGAIN: Duration = Duration::from_millis(BAN_TIMEOUT.as_millis() as u64 + 2_000);
/// Longest the readers may take to log in and read from the replica to be
/// killed.
const WARM_UP: Duration = Duration::from_secs(30);
const READ: &str = "SELECT inet_server_port()::text, count(*)::text FROM items";
const ROWS: &str = "100";

#[derive(Debug, Default)]
struct Tally {
    /// Reads per server port, and since when each port last answered.
    reads: BTreeMap<u16, (usize, Option<Instant>)>,
    errors: Vec<String>,
    slowest: Duration,
}

fn start() -> (TestProxy, PgServer, Vec<PgServer>) {
    let primary = common::servers(1).pop().unwrap();
    primary
        .psql(
            "shard_0",
            "CREATE TABLE items (id int); ALTER TABLE items OWNER TO app;\
             INSERT INTO items SELECT generate_series(1, 100)",
        )
        .unwrap();
    let replicas: Vec<PgServer> = (0..2)
        .map(|_| PgServer::start_replica(&primary, ServerOptions::default()).unwrap())
        .collect();
    for replica in &replicas {
        replica.wait_for_replay(&primary).unwrap();
    }
    let mut databases = String::new();
    for (server, role) in [
        (&primary, "primary"),
        (&replicas[0], "replica"),
        (&replicas[1], "replica"),
    ] {
        databases.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_0\"\nrole = \"{role}\"\n",
            server.port()
        ));
    }
    let config = format!(
        "[general]\nshutdown_timeout = 1000\nconnect_timeout = 1000\nquery_timeout = {}\ncheckout_timeout = {}\n\
         ban_timeout = {}\nread_write_split = \"exclude_primary\"\nhealthcheck_interval = 200\n\
         idle_healthcheck_interval = 200\nidle_healthcheck_delay = 0\nhealthcheck_timeout = 500\n\
         default_pool_size = 4\n{ADMIN}{databases}",
        QUERY_TIMEOUT.as_millis(),
        CHECKOUT_TIMEOUT.as_millis(),
        BAN_TIMEOUT.as_millis()
    );
    (TestProxy::start(&config, USERS).unwrap(), primary, replicas)
}

/// Read in a loop until `stop`, reconnecting after an error.
async fn reader(port: u16, tally: Arc<Mutex<Tally>>, stop: Arc<AtomicBool>) {
    let mut client = None;
    while !stop.load(Ordering::Relaxed) {
        if client
            .as_ref()
            .is_none_or(tokio_postgres::Client::is_closed)
        {
            match connect(port, "app", "app-pw", "prod").await {
                Ok(c) => client = Some(c),
                Err(err) => {
                    tally
                        .lock()
                        .unwrap()
                        .errors
                        .push(format!("connect: {}", common::describe(&err)));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            }
        }
        let Some(c) = &client else { continue };
        let started = Instant::now();
        let result = c.simple_query(READ).await;
        if result.is_err() {
            // A failed read ended the connection (08006): the next read
            // reconnects (tokio-postgres may not say `is_closed` yet).
            client = None;
        }
        let took = started.elapsed();
        let mut tally = tally.lock().unwrap();
        tally.slowest = tally.slowest.max(took);
        match result {
            Ok(messages) => {
                let row = messages
                    .iter()
                    .find_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(row) => Some((
                            row.get(0).unwrap().to_owned(),
                            row.get(1).unwrap().to_owned(),
                        )),
                        _ => None,
                    })
                    .unwrap();
                assert_eq!(row.1, ROWS, "a read answered wrongly");
                let entry = tally.reads.entry(row.0.parse().unwrap()).or_default();
                entry.0 += 1;
                entry.1 = Some(Instant::now());
            }
            Err(err) => {
                assert!(
                    err.code().is_some(),
                    "a read failed without a SQLSTATE: {err}"
                );
                tally.errors.push(common::describe(&err));
            }
        }
    }
}

/// No pool busy, and the backends of user `app` on `server` (at `port`)
/// are exactly those SHOW SERVERS lists for it.
async fn settled(admin: &tokio_postgres::Client, server: &PgServer) -> Option<String> {
    for row in common::rows(admin, "SHOW POOLS").await {
        for column in ["cl_active", "cl_waiting", "sv_active"] {
            if row["user"] == "app" && row[column] != "0" {
                return Some(format!("{} {column} = {}", row["role"], row[column]));
            }
        }
    }
    let listed: BTreeSet<String> = common::rows(admin, "SHOW SERVERS")
        .await
        .into_iter()
        .filter(|r| r["user"] == "app" && r["port"] == server.port().to_string())
        .map(|r| r["remote_pid"].clone())
        .collect();
    let direct = connect(server.port(), "app", "app-pw", "shard_0")
        .await
        .unwrap();
    let backends: BTreeSet<String> = direct
        .query(
            "SELECT pid::text FROM pg_stat_activity WHERE usename = 'app' \
             AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    (backends != listed).then(|| {
        format!(
            "port {}: backends {backends:?}, SHOW SERVERS {listed:?}",
            server.port()
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_under_read_load_fails_cleanly_and_serves_again() {
    let (proxy, _primary, mut replicas) = start();
    let port = proxy.port();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..CLIENTS)
        .map(|_| tokio::spawn(reader(port, Arc::clone(&tally), Arc::clone(&stop))))
        .collect();
    let killed = replicas[0].port();
    // Both replicas serve before the kill (the logins of a debug build
    // under load take a while: waited for, up to WARM_UP).
    let started = Instant::now();
    loop {
        let served = tally.lock().unwrap().reads.contains_key(&killed);
        if served && started.elapsed() >= Duration::from_secs(2) {
            break;
        }
        assert!(
            started.elapsed() < WARM_UP,
            "the replica served no reads before the kill: {:?}",
            tally.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("warmed up in {:?}", started.elapsed());
    tokio::task::block_in_place(|| replicas[0].kill()).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let errors_while_down = tally.lock().unwrap().errors.len();
    tokio::task::block_in_place(|| replicas[0].start_again()).unwrap();
    let restarted = Instant::now();
    let back = loop {
        let answered = tally.lock().unwrap().reads[&killed].1;
        if answered.is_some_and(|at| at > restarted) {
            break restarted.elapsed();
        }
        assert!(
            restarted.elapsed() < Duration::from_secs(20),
            "the restarted replica serves no reads: {:?}",
            tally.lock().unwrap().errors
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.await.unwrap();
    }
    let tally = std::mem::take(&mut *tally.lock().unwrap());
    let reads: BTreeMap<u16, usize> = tally.reads.iter().map(|(p, (n, _))| (*p, *n)).collect();
    println!(
        "reads by port {reads:?}; errors {:?}; slowest read {:?}; the restarted replica served again after {back:?}",
        tally.errors, tally.slowest
    );
    assert!(
        errors_while_down <= CLIENTS && tally.errors.len() <= CLIENTS,
        "more errors than reads in flight at the kill: {:?}",
        tally.errors
    );
    assert!(
        tally.slowest <= LATENCY_BOUND,
        "a read waited {:?}",
        tally.slowest
    );
    assert!(
        back <= SERVES_AGAIN,
        "the restarted replica served again only after {back:?}"
    );
    let admin = connect(port, "admin", "admin-pw", "admin").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    for server in &replicas {
        while let Some(why) = settled(&admin, server).await {
            assert!(Instant::now() < deadline, "{why}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
