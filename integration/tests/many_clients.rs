//! Slow clients (issue 35 point 3, first part): 1,000 clients that send
//! their startup packet a byte a second are cut at `client_login_timeout`
//! while other clients log in and run queries as usual.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::wire::{self, Read, Wire};
use common::{Cluster, USERS};

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

/// `SELECT <i>` on `wire`; its one value.
async fn select(wire: &mut Wire, i: usize) -> String {
    wire.send(&wire::query(&format!("SELECT {i}"))).await;
    let replies = wire.until_ready().await;
    assert!(wire::errors(&replies).is_empty(), "{replies:?}");
    wire::first_column(&replies).concat()
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
