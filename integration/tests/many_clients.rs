//! Scale and slow clients (issue 35 point 3, first part): 10,000 clients
//! at once on a pool of 20 are all served, with the memory an idle client
//! costs printed; 1,000 clients that send their startup packet a byte a
//! second are cut at `client_login_timeout` while other clients log in and
//! run queries as usual.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::wire::{self, Read, Wire};
use common::{Cluster, USERS};
use tokio::sync::Semaphore;

/// `trusty` logs in without a password (as the servers' `app`), so a
/// login costs pgshard no SCRAM work and the test measures connections.
fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"trusty\"\ndatabase = \"prod\"\nserver_user = \"app\"\n\
         server_password = \"app-pw\"\nauth_type = \"trust\"\n"
    )
}

/// Raise this process's open-file limit to its hard limit (the test's
/// sockets and, in-process, pgshard's).
fn raise_fd_limit(needed: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    // As root the hard limit may be raised too; elsewhere keep it.
    let hard = if hard < needed && setrlimit(Resource::RLIMIT_NOFILE, needed, needed).is_ok() {
        needed
    } else {
        hard
    };
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    assert!(hard >= needed, "open-file limit {hard} < {needed}");
}

/// This process's resident memory in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `SELECT <i>` on `wire`; its one value.
async fn select(wire: &mut Wire, i: usize) -> String {
    wire.send(&wire::query(&format!("SELECT {i}"))).await;
    let replies = wire.until_ready().await;
    assert!(wire::errors(&replies).is_empty(), "{replies:?}");
    wire::first_column(&replies).concat()
}

/// 10,000 clients: each side of every connection needs a descriptor, and
/// the hard limit (20,000 here, not raisable without CAP_SYS_RESOURCE) does
/// not hold both in one process. So the clients run in a child process (this
/// test binary again, running [`client_swarm`]), and this process (the
/// proxy, in-process) measures its own memory per idle client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_clients_on_a_pool_of_twenty_are_all_served() {
    use std::io::{BufRead, BufReader, Write};
    // SWARM_CLIENTS overrides, for trying it at a smaller scale.
    let clients_env = std::env::var("SWARM_CLIENTS").ok();
    let clients = clients_env
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000usize);
    raise_fd_limit(clients as u64 + 1_000);
    let cluster = Cluster::start_with(
        1,
        "default_pool_size = 20\nmax_client_conn = 10100\ncheckout_timeout = 60000",
        &users(),
    );
    let port = cluster.port();
    // Warm up: the pool, and the allocator's arenas.
    let mut first = Wire::login(port, "trusty", "prod").await;
    assert_eq!(select(&mut first, 0).await, "0");
    let before = rss_kib();

    let mut swarm = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "client_swarm",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SWARM_PORT", port.to_string())
        .env("SWARM_CLIENTS", clients.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut tell = swarm.stdin.take().unwrap();
    let mut hear = BufReader::new(swarm.stdout.take().unwrap()).lines();
    let mut next = |prefix: &str| loop {
        let line = hear.next().expect("the swarm ended early").unwrap();
        // libtest writes `test client_swarm ... ` before the test's own
        // output, on the same line.
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_owned();
        }
    };
    let logged_in = tokio::task::block_in_place(|| next("LOGGED_IN"));
    // Idle clients at rest: what each costs pgshard.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_client = (rss_kib().saturating_sub(before) as f64) / clients as f64;
    writeln!(tell, "QUERY").unwrap();
    let served = tokio::task::block_in_place(|| next("SERVED"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_client_after = (rss_kib().saturating_sub(before) as f64) / clients as f64;
    // The pool's own count (SHOW POOLS), and Postgres's: the pool's
    // connections plus the catalog reader's one connection.
    let admin = cluster.admin().await;
    let pool = trusty_pool(&admin).await;
    let listed = admin.simple_query("SHOW CLIENTS").await.unwrap();
    let listed = listed
        .iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(r) if r.get("user") == Some("trusty")))
        .count();
    let opened: usize = ["sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"]
        .iter()
        .map(|column| pool[*column].parse::<usize>().unwrap())
        .sum();
    let on_server: usize = cluster.servers[0]
        .psql(
            "postgres",
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app'",
        )
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(tell);
    assert!(swarm.wait().unwrap().success(), "the client swarm failed");
    // Every client of the swarm (and the warm-up's) still connected.
    assert_eq!(listed, clients + 1, "clients in SHOW CLIENTS");
    assert!(
        opened <= 20,
        "{opened} server connections for a pool of 20: {pool:?}"
    );
    assert!(on_server <= 21, "{on_server} connections on the server");
    let servers = opened;
    println!(
        "{clients} clients: logged in in {logged_in} ms, one query each in {served} ms over \
         {servers} server connections; pgshard's RSS grew {per_client:.1} KiB per idle client after its login, \
         {per_client_after:.1} KiB after its query"
    );
}

/// SHOW POOLS's row for `trusty`.
async fn trusty_pool(admin: &tokio_postgres::Client) -> HashMap<String, String> {
    let messages = admin.simple_query("SHOW POOLS").await.unwrap();
    messages
        .iter()
        .find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) if row.get("user") == Some("trusty") => {
                Some(
                    row.columns()
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (c.name().to_owned(), row.get(i).unwrap_or("").to_owned()))
                        .collect(),
                )
            }
            _ => None,
        })
        .expect("no pool for trusty in SHOW POOLS")
}

/// The client side of [`ten_thousand_clients_on_a_pool_of_twenty_are_all_served`],
/// run by it in a child process: logs `SWARM_CLIENTS` clients in (200 in
/// flight), reports, and on `QUERY` runs one query on each and checks
/// every answer; exits when its stdin closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the client side of ten_thousand_clients_on_a_pool_of_twenty_are_all_served"]
async fn client_swarm() {
    use std::io::BufRead;
    let port: u16 = std::env::var("SWARM_PORT").unwrap().parse().unwrap();
    let count: usize = std::env::var("SWARM_CLIENTS").unwrap().parse().unwrap();
    raise_fd_limit(count as u64 + 1_000);
    let logins = Arc::new(Semaphore::new(200));
    let started = Instant::now();
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let logins = Arc::clone(&logins);
            tokio::spawn(async move {
                let _permit = logins.acquire().await.unwrap();
                Wire::login(port, "trusty", "prod").await
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(count);
    for task in tasks {
        clients.push(task.await.unwrap());
    }
    println!("LOGGED_IN {}", started.elapsed().as_millis());
    let mut stdin = std::io::stdin().lock().lines();
    assert_eq!(stdin.next().unwrap().unwrap(), "QUERY");
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, mut wire)| {
            tokio::spawn(async move {
                let value = select(&mut wire, i).await;
                (i, value, wire)
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(count);
    for task in tasks {
        let (i, value, wire) = task.await.unwrap();
        assert_eq!(value, i.to_string());
        clients.push(wire);
    }
    assert_eq!(clients.len(), count);
    println!("SERVED {}", started.elapsed().as_millis());
    // Stay connected until the parent has looked at the servers.
    assert!(stdin.next().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_slow_logins_are_cut_without_slowing_others() {
    const SLOW: usize = 1_000;
    raise_fd_limit(4 * SLOW as u64 + 1_000);
    let cluster = Cluster::start_with(1, "client_login_timeout = 3000", &users());
    let port = cluster.port();

    // Baseline: 20 logins and queries with nobody slow around.
    let baseline = logins_and_queries(port).await;

    // 1,000 clients trickle their startup packets a byte a second.
    let packet = wire::startup(0, &[("user", "trusty"), ("database", "prod")]);
    let started = Instant::now();
    let slow: Vec<_> = (0..SLOW)
        .map(|_| {
            let packet = packet.clone();
            tokio::spawn(async move {
                let mut wire = Wire::connect(port).await;
                for byte in packet {
                    wire.send(&[byte]).await;
                    match wire.read_within(Duration::from_secs(1)).await {
                        Read::Silent => {}
                        Read::Closed => return Some(Instant::now()),
                        Read::Message(tag, body) => {
                            panic!("{tag} {body:?} before the packet ended")
                        }
                    }
                }
                None
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = logins_and_queries(port).await;
    let served_at = started.elapsed();
    let mut cut = Vec::new();
    for task in slow {
        let closed = task.await.unwrap().expect("a slow login was never cut off");
        cut.push(closed.duration_since(started));
    }
    cut.sort();
    // Everyone else was served while the slow clients were all still there.
    assert!(
        served_at < cut[0],
        "others served at {served_at:?}, first cut at {:?}",
        cut[0]
    );
    assert!(
        cut[0] >= Duration::from_millis(2900),
        "cut early: {:?}",
        cut[0]
    );
    println!(
        "{SLOW} slow logins cut between {:?} and {:?} (client_login_timeout 3 s); 20 other logins \
         with a query each: {baseline:?} alone, {during:?} beside them",
        cut[0],
        cut[SLOW - 1]
    );
}

/// Log 20 clients in, one after another, each running a query; the time
/// it took.
async fn logins_and_queries(port: u16) -> Duration {
    let started = Instant::now();
    for i in 0..20 {
        let mut wire = Wire::login(port, "trusty", "prod").await;
        assert_eq!(select(&mut wire, i).await, i.to_string());
    }
    started.elapsed()
}
