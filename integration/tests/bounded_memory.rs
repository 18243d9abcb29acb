//! Bounded memory per client (issue 35 point 3): a client that stops
//! reading a large result (from one shard or from a fan-out) holds pgshard
//! to a bound while others are served; a 1 GiB result streams out and a
//! 100 MiB sharded COPY streams in without pgshard's memory following them.
//!
//! pgshard runs in this process, so its growth is this process's resident
//! memory sampled while the bytes flow (the test's own client reads and
//! writes in 64 KiB pieces and keeps nothing). The tests take turns: two
//! at once would see each other's memory.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::wire::{self, Read, Wire};
use common::Cluster;
use tokio::io::AsyncReadExt;

/// One test at a time (see the module doc).
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The bound each test holds pgshard to: a client's buffers are 64 KiB
/// (flushed at `CLIENT_FLUSH_AT`) and a fan-out's queues a few messages
/// per shard, so anything near the result's size fails this by far.
const BOUND_KIB: u64 = 48 * 1024;

/// This process's resident memory in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The highest resident memory seen while it runs, sampled every 20 ms.
struct PeakRss {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    fn start() -> PeakRss {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(rss_kib()));
        let sampler = {
            let (stop, peak) = (Arc::clone(&stop), Arc::clone(&peak));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(rss_kib(), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        PeakRss {
            stop,
            peak,
            sampler: Some(sampler),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.sampler.take().unwrap().join().unwrap();
        self.peak.load(Ordering::Relaxed)
    }
}

/// A warmed-up 2-shard cluster (the pool and the allocator's arenas) and
/// its memory at rest.
async fn warm_cluster() -> (Cluster, u64) {
    let cluster = Cluster::start_sharded_raw(2, "default_pool_size = 4", "");
    let mut wire = Wire::login(cluster.port(), "raw", "prod").await;
    for _ in 0..3 {
        wire.send(&wire::query(
            "SELECT repeat('x', 8192) FROM generate_series(1, 200)",
        ))
        .await;
        assert!(wire::errors(&wire.until_ready().await).is_empty());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    (cluster, rss_kib())
}

/// Read and drop what the proxy sends until ReadyForQuery; the bytes read.
async fn drain(stream: &mut tokio::net::TcpStream) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "the proxy closed mid-result after {total} bytes");
        total += n as u64;
        // ReadyForQuery ends the reply: `Z`, length 5, status.
        tail.extend_from_slice(&buf[..n]);
        let keep = tail.len().saturating_sub(6);
        tail.drain(..keep);
        if tail.len() == 6 && tail[0] == b'Z' && tail[1..5] == [0, 0, 0, 5] {
            return total;
        }
    }
}

/// A client that sends a query for a large result, then stops reading:
/// pgshard stops reading the servers once its buffers for that client are
/// full, so its memory stays within [`BOUND_KIB`], and another client is
/// served meanwhile; when the stalled client leaves, its servers come back
/// to the pool and the server-side queries end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_holds_pgshard_to_a_bound() {
    let _turn = TURN.lock().await;
    let (cluster, rest) = warm_cluster().await;
    // 20,000 rows on each shard, 8 KiB each in the result: 320 MiB over
    // the fan-out; 800 MiB from one server.
    let per_shard = fill_orders(&cluster, 20_000).await;
    let cases = [
        (
            "one server",
            "SELECT repeat('x', 8192) FROM generate_series(1, 100000)".to_owned(),
        ),
        (
            "a fan-out over both shards",
            "SELECT tenant_id, repeat(item, 8192) FROM orders".to_owned(),
        ),
    ];
    for (what, sql) in cases {
        let peak = PeakRss::start();
        let mut stalled = Wire::login(cluster.port(), "raw", "prod").await;
        stalled.send(&wire::query(&sql)).await;
        // The first message arrives; then the client reads nothing more.
        assert!(matches!(
            stalled.read_within(Duration::from_secs(10)).await,
            Read::Message(b'T', _)
        ));
        tokio::time::sleep(Duration::from_secs(3)).await;
        // Others are served meanwhile.
        let mut other = Wire::login(cluster.port(), "raw", "prod").await;
        other
            .send(&wire::query("SELECT count(*) FROM orders"))
            .await;
        let replies = other.until_ready().await;
        assert_eq!(
            wire::first_column(&replies),
            vec![(2 * per_shard).to_string()]
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        let grew = peak.finish().saturating_sub(rest);
        assert!(
            grew < BOUND_KIB,
            "{what}: pgshard grew {grew} KiB for a client that stopped reading"
        );
        println!("{what}: a client that stopped reading: pgshard's RSS grew at most {grew} KiB");
        // It leaves: its servers' queries end and the pool is whole again.
        drop(stalled);
        wait_for_quiet_servers(&cluster).await;
    }
}

/// KILL of a database while one of its clients stopped reading a large
/// result: the session cannot write its FATAL whole; it closes its servers
/// at once and gives the client up after a bound, not when it reads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_of_a_client_that_stopped_reading_frees_its_servers() {
    let _turn = TURN.lock().await;
    let (cluster, _rest) = warm_cluster().await;
    let mut stalled = Wire::login(cluster.port(), "raw", "prod").await;
    let sql = "SELECT repeat('x', 8192) FROM generate_series(1, 100000)";
    stalled.send(&wire::query(sql)).await;
    assert!(matches!(
        stalled.read_within(Duration::from_secs(10)).await,
        Read::Message(b'T', _)
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let admin = cluster.admin().await;
    admin.simple_query("KILL prod").await.unwrap();
    // The stalled client is still connected, reading nothing.
    wait_for_quiet_servers(&cluster).await;
    drop(stalled);
    admin.simple_query("RESUME prod").await.unwrap();
}

/// Rows `tenant_id 1..=n` on each shard directly (keys hashed by Postgres
/// itself into each shard's one partition), so each shard holds `n`.
async fn fill_orders(cluster: &Cluster, n: i64) -> i64 {
    for (i, shard) in cluster.shards().await.into_iter().enumerate() {
        shard.batch_execute("TRUNCATE orders").await.unwrap();
        shard
            .batch_execute(&format!(
                "INSERT INTO orders_on_shard SELECT k, 1, 'x' FROM \
                 (SELECT k FROM generate_series(1, 1000000) k \
                  WHERE satisfies_hash_partition('orders'::regclass, 2, {i}, k::bigint) LIMIT {n}) s"
            ))
            .await
            .unwrap();
    }
    n
}

/// No query left running on any shard for `app` but this check's own, and
/// no server connection checked out in SHOW POOLS, within 10 s.
async fn wait_for_quiet_servers(cluster: &Cluster) {
    let admin = cluster.admin().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut busy = Vec::new();
        for message in admin.simple_query("SHOW POOLS").await.unwrap() {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                if row.get("sv_active") != Some("0") {
                    busy.push(format!(
                        "pool {:?} sv_active {:?}",
                        row.get("shard"),
                        row.get("sv_active")
                    ));
                }
            }
        }
        for (i, server) in cluster.servers.iter().enumerate() {
            let running = server
                .psql(
                    &format!("shard_{i}"),
                    "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app' \
                     AND state = 'active' AND pid <> pg_backend_pid()",
                )
                .unwrap();
            if running.trim() != "0" {
                busy.push(format!("shard {i}: {} queries running", running.trim()));
            }
        }
        if busy.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "still busy: {busy:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A 1 GiB result (131,072 rows of 8 KiB) read by a client as fast as it
/// can: every byte arrives, and pgshard's memory stays within the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gibibyte_result_streams_out_in_bounded_memory() {
    let _turn = TURN.lock().await;
    let (cluster, rest) = warm_cluster().await;
    let wire = Wire::login(cluster.port(), "raw", "prod").await;
    let mut stream = wire.into_stream();
    let peak = PeakRss::start();
    let started = Instant::now();
    tokio::io::AsyncWriteExt::write_all(
        &mut stream,
        &wire::query("SELECT repeat('x', 8192) FROM generate_series(1, 131072)"),
    )
    .await
    .unwrap();
    let bytes = drain(&mut stream).await;
    let took = started.elapsed();
    let grew = peak.finish().saturating_sub(rest);
    // Each DataRow: tag, length, column count, value length, 8,192 bytes.
    assert!(bytes > 131_072 * (8192 + 11), "{bytes} bytes");
    assert!(grew < BOUND_KIB, "pgshard grew {grew} KiB relaying 1 GiB");
    println!("1 GiB result: {bytes} bytes in {took:?}; pgshard's RSS grew at most {grew} KiB");
}

/// A 100 MiB COPY into the sharded `orders` (102,400 rows of just over 1 KiB, split
/// over both shards): every row lands, and pgshard's memory stays within
/// the bound while the client sends as fast as pgshard takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_mebibyte_copy_streams_in_in_bounded_memory() {
    let _turn = TURN.lock().await;
    let (cluster, rest) = warm_cluster().await;
    const ROWS: u64 = 102_400;
    let item = "y".repeat(1024);
    let mut wire = Wire::login(cluster.port(), "raw", "prod").await;
    let peak = PeakRss::start();
    let started = Instant::now();
    wire.send(&wire::query("COPY orders (tenant_id, id, item) FROM STDIN"))
        .await;
    assert_eq!(wire.recv().await.0, b'G');
    let mut sent = 0u64;
    let mut chunk = String::with_capacity(70 * 1024);
    for row in 0..ROWS {
        chunk.push_str(&format!("{}\t{row}\t{item}\n", row % 5_000));
        if chunk.len() >= 64 * 1024 || row + 1 == ROWS {
            sent += chunk.len() as u64;
            wire.send(&wire::message(b'd', chunk.as_bytes())).await;
            chunk.clear();
        }
    }
    wire.send(&wire::message(b'c', &[])).await;
    let replies = wire.until_ready().await;
    let took = started.elapsed();
    let grew = peak.finish().saturating_sub(rest);
    assert!(wire::errors(&replies).is_empty(), "{replies:?}");
    assert_eq!(wire::command_tags(&replies), vec![format!("COPY {ROWS}")]);
    let mut landed = 0u64;
    for shard in cluster.shards().await {
        let n: i64 = shard
            .query_one("SELECT count(*) FROM orders", &[])
            .await
            .unwrap()
            .get(0);
        assert!(n > 0, "a shard got no rows");
        landed += n as u64;
    }
    assert_eq!(landed, ROWS);
    assert!(sent > 100 * 1024 * 1024, "{sent} bytes sent");
    assert!(
        grew < BOUND_KIB,
        "pgshard grew {grew} KiB taking a 100 MiB COPY"
    );
    println!("100 MiB COPY: {sent} bytes in {took:?}; pgshard's RSS grew at most {grew} KiB");
}
