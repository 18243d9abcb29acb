//! Replicas behind pgshard: a primary and two real streaming replicas
//! (`pg_basebackup -R`). Reads spread over the replicas, writes and
//! transactions stay on the primary; a replica killed under a loop of reads
//! costs the clients no more than the statements in flight on it, is banned
//! (the metrics endpoint shows it) and the reads move to the other one; a
//! replica that is down, or stops answering, while nobody queries it is
//! banned by the background health check; on two shards, each shard's
//! reads go to its own replica, and a fan-out read passes over a replica
//! that went down.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{connect, ADMIN, USERS};
use integration::{PgServer, ServerOptions, TestProxy};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A read that names a table (so pgshard may send it to a replica) and
/// tells which server answered.
const WHO: &str = "SELECT inet_server_port() AS port FROM whoami";

struct Replicated {
    proxy: TestProxy,
    metrics_port: u16,
    replicas: Vec<PgServer>,
    primary: PgServer,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One primary (database `shard_0`, user `app`, table `whoami`) and two
/// replicas of it behind pgshard, with `general` added to `[general]`.
fn start(general: &str) -> Replicated {
    let primary = common::servers(1).pop().unwrap();
    primary
        .psql(
            "shard_0",
            "CREATE TABLE items (id int); ALTER TABLE items OWNER TO app",
        )
        .unwrap();
    let replicas: Vec<PgServer> = (0..2)
        .map(|_| PgServer::start_replica(&primary, ServerOptions::default()).unwrap())
        .collect();
    let mut databases = format!(
        "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_0\"\n",
        primary.port()
    );
    for replica in &replicas {
        databases.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_0\"\nrole = \"replica\"\n",
            replica.port()
        ));
    }
    let metrics_port = free_port();
    let pgdog = format!(
        "[general]\nshutdown_timeout = 1000\nconnect_timeout = 1000\n\
         openmetrics_port = {metrics_port}\n{general}\n{ADMIN}{databases}"
    );
    let proxy = TestProxy::start(&pgdog, USERS).unwrap();
    Replicated {
        proxy,
        metrics_port,
        replicas,
        primary,
    }
}

impl Replicated {
    async fn connect(&self) -> tokio_postgres::Client {
        connect(self.proxy.port(), "app", "app-pw", "prod")
            .await
            .unwrap()
    }

    /// `pool_banned` of the pool on `server`.
    async fn banned(&self, server: &PgServer) -> f64 {
        let body = scrape(self.metrics_port).await;
        let series = format!(
            "pool_banned{{cluster=\"prod\",user=\"app\",shard=\"0\",role=\"{}\",host=\"127.0.0.1:{}\"}}",
            if server.port() == self.primary.port() {
                "primary"
            } else {
                "replica"
            },
            server.port()
        );
        body.lines()
            .find_map(|line| line.strip_prefix(&format!("{series} ")))
            .unwrap_or_else(|| panic!("no {series} in:\n{body}"))
            .parse()
            .unwrap()
    }
}

/// The metrics exposition (`GET /metrics`).
async fn scrape(port: u16) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response.split_once("\r\n\r\n").unwrap().1.to_owned()
}

/// The postmaster `pid` and its children (the server's backends and
/// background processes), from `/proc`.
/// Send `sig` to `pid`, unless it is gone: a child that was exiting when
/// the server was stopped is reaped once the postmaster (continued first)
/// runs again, before its own turn comes.
fn signal(pid: Pid, sig: Signal) {
    match kill(pid, sig) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(err) => panic!("{sig} to {pid}: {err}"),
    }
}

fn server_processes(postmaster: i32) -> Vec<Pid> {
    let mut pids = vec![Pid::from_raw(postmaster)];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces, so read after
        // its closing parenthesis.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<i32>().ok());
        if ppid == Some(postmaster) {
            pids.push(Pid::from_raw(pid));
        }
    }
    pids
}

async fn port_of(client: &tokio_postgres::Client, sql: &str) -> u16 {
    common::column(client, sql, "port").await[0]
        .parse()
        .unwrap()
}

#[tokio::test]
async fn reads_spread_over_replicas_and_writes_stay_on_the_primary() {
    let cluster =
        start("load_balancing_strategy = \"round_robin\"\nread_write_split = \"exclude_primary\"");
    let replica_ports: BTreeSet<u16> = cluster.replicas.iter().map(PgServer::port).collect();
    let primary = cluster.primary.port();
    let client = cluster.connect().await;

    // Simple protocol: round robin over both replicas, never the primary.
    let mut seen = BTreeSet::new();
    for _ in 0..10 {
        seen.insert(port_of(&client, WHO).await);
    }
    assert_eq!(seen, replica_ports);

    // Extended protocol: the same.
    let statement = client
        .prepare("SELECT inet_server_port() AS port FROM whoami WHERE shard = $1")
        .await
        .unwrap();
    let mut seen = BTreeSet::new();
    for _ in 0..10 {
        let row = client.query_one(&statement, &[&0i32]).await.unwrap();
        let port: i32 = row.get(0);
        seen.insert(u16::try_from(port).unwrap());
    }
    assert_eq!(seen, replica_ports);

    // Writes run on the primary (a replica would refuse them), in both
    // protocols, and so does a locking read or one without a table.
    client
        .simple_query("INSERT INTO items VALUES (1)")
        .await
        .unwrap();
    client
        .execute("INSERT INTO items VALUES ($1)", &[&2i32])
        .await
        .unwrap();
    assert_eq!(
        port_of(&client, &format!("{WHO} FOR UPDATE")).await,
        primary
    );
    assert_eq!(
        port_of(&client, "SELECT inet_server_port() AS port").await,
        primary
    );

    // A transaction stays on the primary, reads included, and sees its
    // own writes.
    client.batch_execute("BEGIN").await.unwrap();
    assert_eq!(port_of(&client, WHO).await, primary);
    client
        .simple_query("INSERT INTO items VALUES (3)")
        .await
        .unwrap();
    let sum = common::column(&client, "SELECT sum(id) AS s FROM items", "s").await;
    assert_eq!(sum, ["6"]);
    client.batch_execute("COMMIT").await.unwrap();

    // A pipeline of a read then a write: the write still reaches the
    // primary.
    let read = client.prepare(WHO).await.unwrap();
    let write = client
        .prepare("INSERT INTO items VALUES (4)")
        .await
        .unwrap();
    let (r, w) = tokio::join!(client.query_one(&read, &[]), client.execute(&write, &[]));
    r.unwrap();
    assert_eq!(w.unwrap(), 1);

    // Replicas catch up and serve what the primary committed.
    for replica in &cluster.replicas {
        replica.wait_for_replay(&cluster.primary).unwrap();
    }
    let sum = common::column(&client, "SELECT sum(id) AS s FROM items", "s").await;
    assert_eq!(sum, ["10"]);
    assert_eq!(cluster.banned(&cluster.replicas[0]).await, 0.0);
}

/// What the reading clients saw: successes by server port, and errors.
#[derive(Default)]
struct Tally {
    reads: BTreeMap<u16, usize>,
    /// Ports that answered after the kill + settle time.
    late: BTreeSet<u16>,
    errors: Vec<String>,
}

const CLIENTS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_under_load_is_banned_and_reads_move_on() {
    let mut cluster = start(
        "load_balancing_strategy = \"least_active_connections\"\nread_write_split = \"exclude_primary\"\n\
         healthcheck_interval = 200\nidle_healthcheck_interval = 200\nidle_healthcheck_delay = 0\n\
         healthcheck_timeout = 500\nban_timeout = 60000",
    );
    let port = cluster.proxy.port();
    let stop = Arc::new(AtomicBool::new(false));
    let settled = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut loops = Vec::new();
    for _ in 0..CLIENTS {
        let (stop, settled, tally) = (stop.clone(), settled.clone(), tally.clone());
        loops.push(tokio::spawn(async move {
            let mut client = connect(port, "app", "app-pw", "prod").await.unwrap();
            while !stop.load(Ordering::Relaxed) {
                match client.simple_query(WHO).await {
                    Ok(messages) => {
                        let port: u16 = messages
                            .iter()
                            .find_map(|m| match m {
                                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
                                _ => None,
                            })
                            .unwrap()
                            .parse()
                            .unwrap();
                        let mut tally = tally.lock().unwrap();
                        *tally.reads.entry(port).or_default() += 1;
                        if settled.load(Ordering::Relaxed) {
                            tally.late.insert(port);
                        }
                    }
                    Err(err) => {
                        tally.lock().unwrap().errors.push(common::describe(&err));
                        // The session ended with its server: connect again.
                        client = connect(port, "app", "app-pw", "prod").await.unwrap();
                    }
                }
            }
        }));
    }
    let killed = cluster.replicas[0].port();
    let survivor = cluster.replicas[1].port();
    // Both replicas serve reads before the kill.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reads = tally.lock().unwrap().reads.clone();
        if reads.get(&killed).is_some_and(|n| *n >= 5)
            && reads.get(&survivor).is_some_and(|n| *n >= 5)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "reads before the kill: {reads:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::task::block_in_place(|| cluster.replicas[0].kill().unwrap());
    // Within the health-check interval (and then some for a loaded
    // machine) every read runs on the surviving replica.
    tokio::time::sleep(Duration::from_millis(500)).await;
    settled.store(true, Ordering::Relaxed);
    let before = tally.lock().unwrap().reads.values().sum::<usize>();
    let deadline = Instant::now() + Duration::from_secs(60);
    while tally.lock().unwrap().reads.values().sum::<usize>() < before + 40 {
        assert!(Instant::now() < deadline, "reads stopped after the kill");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for handle in loops {
        handle.await.unwrap();
    }
    let tally = std::mem::take(&mut *tally.lock().unwrap());
    eprintln!(
        "reads by port: {:?}; errors: {:?}",
        tally.reads, tally.errors
    );
    assert!(
        tally.errors.len() <= CLIENTS,
        "more errors than statements in flight: {:?}",
        tally.errors
    );
    assert_eq!(
        tally.late,
        BTreeSet::from([survivor]),
        "reads after the kill: {:?}",
        tally.reads
    );
    let killed_server = &cluster.replicas[0];
    assert_eq!(cluster.banned(killed_server).await, 1.0);
    assert_eq!(cluster.banned(&cluster.replicas[1]).await, 0.0);
    // Writes were never affected.
    let client = cluster.connect().await;
    client
        .simple_query("INSERT INTO items VALUES (1)")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_down_while_idle_is_banned_by_the_health_check() {
    let mut cluster = start(
        "read_write_split = \"include_primary_if_replica_banned\"\n\
         idle_healthcheck_interval = 200\nidle_healthcheck_delay = 0\nhealthcheck_timeout = 500",
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(cluster.banned(&cluster.replicas[0]).await, 0.0);
    tokio::task::block_in_place(|| cluster.replicas[0].kill().unwrap());
    // No client queries: only the background check can notice.
    let deadline = Instant::now() + Duration::from_secs(5);
    while cluster.banned(&cluster.replicas[0]).await != 1.0 {
        assert!(Instant::now() < deadline, "replica never banned");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cluster.banned(&cluster.replicas[1]).await, 0.0);
    assert_eq!(cluster.banned(&cluster.primary).await, 0.0);
    // With a replica banned, reads go to the other replica and the primary.
    let client = cluster.connect().await;
    let mut seen = BTreeSet::new();
    for _ in 0..40 {
        seen.insert(port_of(&client, WHO).await);
    }
    assert!(!seen.contains(&cluster.replicas[0].port()), "{seen:?}");
    assert!(seen.contains(&cluster.replicas[1].port()), "{seen:?}");
    assert!(seen.contains(&cluster.primary.port()), "{seen:?}");

    // A replica that stops answering (its processes stopped: connections
    // are accepted by the kernel and never served, queries never answered)
    // fails the check's timeout and is banned too; reads then go to the
    // primary alone.
    let postmaster = cluster.replicas[1].postmaster_pid().unwrap();
    let frozen = server_processes(postmaster);
    for pid in &frozen {
        signal(*pid, Signal::SIGSTOP);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let banned = loop {
        if cluster.banned(&cluster.replicas[1]).await == 1.0 {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for pid in &frozen {
        signal(*pid, Signal::SIGCONT);
    }
    assert!(banned, "a replica that stopped answering was not banned");
    for _ in 0..10 {
        assert_eq!(port_of(&client, WHO).await, cluster.primary.port());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_shard_reads_from_its_own_replica() {
    let primaries = common::servers(2);
    let replicas: Vec<PgServer> = primaries
        .iter()
        .map(|p| PgServer::start_replica(p, ServerOptions::default()).unwrap())
        .collect();
    let mut databases = String::new();
    for (i, (primary, replica)) in primaries.iter().zip(&replicas).enumerate() {
        for (server, role) in [(primary, "primary"), (replica, "replica")] {
            databases.push_str(&format!(
                "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\n\
                 database_name = \"shard_{i}\"\nshard = {i}\nrole = \"{role}\"\n",
                server.port()
            ));
        }
    }
    // `whoami` (which server answers) is read from every shard.
    let pgdog = format!(
        "[general]\nshutdown_timeout = 1000\nread_write_split = \"exclude_primary\"\n\
         unlisted_tables = \"sharded\"\n{ADMIN}{databases}"
    );
    let proxy = TestProxy::start(&pgdog, USERS).unwrap();
    let client = connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    let replica_ports: BTreeSet<u16> = replicas.iter().map(PgServer::port).collect();
    // A keyless read fans out: one row per shard, each from its replica.
    let ports: BTreeSet<u16> = common::column(&client, WHO, "port")
        .await
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(ports, replica_ports);
    for (i, replica) in replicas.iter().enumerate() {
        let sql = format!("/* pgdog_shard: {i} */ {WHO}");
        assert_eq!(port_of(&client, &sql).await, replica.port());
    }
    // A write goes to each shard's primary (a replica would refuse it).
    for i in 0..2 {
        client
            .simple_query(&format!(
                "/* pgdog_shard: {i} */ INSERT INTO whoami VALUES ({i})"
            ))
            .await
            .unwrap();
    }
    for (primary, replica) in primaries.iter().zip(&replicas) {
        replica.wait_for_replay(primary).unwrap();
    }
    let counts = common::column(&client, "SELECT count(*) AS n FROM whoami", "n").await;
    assert_eq!(counts, ["4"]);

    // Shard 1's replica goes down: a fan-out read still succeeds, shard 1's
    // part served by its primary (the last candidate once the replica
    // refused a connection and was banned).
    let mut replicas = replicas;
    tokio::task::block_in_place(|| replicas[1].kill().unwrap());
    // Its backends notice the postmaster's death and close their sockets.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ports: BTreeSet<u16> = common::column(&client, WHO, "port")
        .await
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(
        ports,
        BTreeSet::from([replicas[0].port(), primaries[1].port()])
    );
}
