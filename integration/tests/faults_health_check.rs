//! A shard that stops answering (a black hole) while its pool holds idle
//! connections due for a health check (issue 35 point 1): a client's
//! checkout checks one, which times out, and must not then check every
//! other idle connection in turn (each another `healthcheck_timeout`) before
//! it connects anew: the client's wait stays within one health check, one
//! `connect_timeout` and a stated slack, whatever the pool's size.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use integration::{FaultRelay, TestProxy};

const POOL_SIZE: usize = 6;
const HEALTHCHECK_TIMEOUT: Duration = Duration::from_millis(500);
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// One health check, one connect attempt, and slack for a busy debug build.
const BOUND: Duration = Duration::from_millis(2_000);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_costs_a_checkout_one_health_check_not_one_per_idle_connection() {
    let server = common::servers(1).pop().unwrap();
    let relay = FaultRelay::start(([127, 0, 0, 1], server.port()).into()).unwrap();
    let config = format!(
        "[general]\nshutdown_timeout = 1000\ndefault_pool_size = {POOL_SIZE}\nhealthcheck_interval = 0\n\
         healthcheck_timeout = {}\nconnect_timeout = {}\ncheckout_timeout = 5000\n{}\
         [[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_0\"\n",
        HEALTHCHECK_TIMEOUT.as_millis(),
        CONNECT_TIMEOUT.as_millis(),
        common::ADMIN,
        relay.port()
    );
    let proxy = TestProxy::start(&config, common::USERS).unwrap();
    // Fill the pool: POOL_SIZE transactions at once, then all idle.
    let mut clients = Vec::new();
    for _ in 0..POOL_SIZE {
        let client = common::connect(proxy.port(), "app", "app-pw", "prod")
            .await
            .unwrap();
        client.batch_execute("BEGIN; SELECT 1").await.unwrap();
        clients.push(client);
    }
    for client in &clients {
        client.batch_execute("COMMIT").await.unwrap();
    }
    relay.freeze();
    let client = &clients[0];
    let started = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(30), client.simple_query("SELECT 1"))
        .await
        .expect("no answer within 30 s");
    let took = started.elapsed();
    let err = result.expect_err("a query through a black hole succeeded");
    println!("failed after {took:?}: {}", common::describe(&err));
    assert!(err.code().is_some(), "no SQLSTATE: {err}");
    assert!(
        took <= BOUND,
        "the client waited {took:?} (bound {BOUND:?})"
    );
    relay.thaw();
    // Once healed, the pool serves again.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let client = common::connect(proxy.port(), "app", "app-pw", "prod")
            .await
            .unwrap();
        match client.simple_query("SELECT 1").await {
            Ok(_) => break,
            Err(err) => assert!(Instant::now() < deadline, "not serving again: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
