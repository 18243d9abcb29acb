//! Hostile input end to end (issue 35): many connections send random and
//! mutated first packets and client messages to pgshard over real Postgres
//! while a well-behaved client keeps running queries; and a fake server
//! that answers pgshard's login with valid, then random or mutated, server
//! messages. pgshard answers each bad peer with a clean error or closes
//! it, the good client is never disturbed, and nothing panics.
//!
//! The number of hostile connections per test is `PROPTEST_CASES` (short
//! by default; README's "Fuzzing" has the long run).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../router/tests/support/fuzz.rs"]
#[allow(dead_code)]
mod fuzz;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use common::wire::{self, Read, Wire};
use common::{proxy_panics, watch_proxy_panics, Cluster};
use integration::TestProxy;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Hostile connections per test: `PROPTEST_CASES`, else `default`.
fn cases(default: usize) -> usize {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// A value of `strategy` drawn with `seed` (the same seed, the same value).
fn draw<S: Strategy>(strategy: S, seed: u64) -> S::Value {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(fuzz::config(1), rng);
    strategy.new_tree(&mut runner).unwrap().current()
}

/// Valid client messages of every kind a session reads.
fn client_message() -> impl Strategy<Value = Vec<u8>> {
    let sql = prop::sample::select(vec![
        "SELECT 1",
        "SELECT * FROM orders WHERE tenant_id = 1",
        "SELECT * FROM orders WHERE tenant_id = $1",
        "INSERT INTO orders (tenant_id, id, item) VALUES (1, 1, 'x'), (2, 2, 'y')",
        "SELECT count(*), max(item) FROM orders",
        "BEGIN",
        "COMMIT",
        "COPY orders FROM STDIN",
    ]);
    prop_oneof![
        sql.clone().prop_map(wire::query),
        sql.prop_map(|s| wire::parse("s", s)),
        Just(wire::bind_text("", "s", &[Some("1")])),
        Just(wire::bind_text("", "", &[Some("7"), None])),
        Just(wire::describe(b'S', "s")),
        Just(wire::describe(b'P', "")),
        Just(wire::execute_portal("", 1)),
        Just(wire::execute()),
        Just(wire::sync()),
        Just(wire::message(b'H', &[])),
        Just(wire::message(b'd', b"1\t1\tx\n")),
        Just(wire::message(b'c', &[])),
        Just(wire::message(b'f', b"no\0")),
        Just(wire::message(b'C', b"Ss\0")),
        Just(wire::message(b'X', &[])),
    ]
}

/// A first packet of each kind (as user `raw` of `database`).
fn first_packet(database: &'static str) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(wire::startup(0, &[("user", "raw"), ("database", database)])),
        Just(wire::startup(
            2,
            &[
                ("user", "raw"),
                ("database", database),
                ("application_name", "x")
            ]
        )),
        Just(b"\x00\x00\x00\x08\x04\xd2\x16\x2f".to_vec()),
        Just(b"\x00\x00\x00\x08\x04\xd2\x16\x30".to_vec()),
        Just(b"\x00\x00\x00\x10\x04\xd2\x16\x2e\x00\x00\x30\x39\xde\xad\xbe\xef".to_vec()),
    ]
}

/// What a hostile connection does: log in properly first (or not), then
/// send these bytes.
fn hostile() -> impl Strategy<Value = (bool, Vec<u8>)> {
    let messages = || prop::collection::vec(client_message(), 1..6).prop_map(|m| m.concat());
    prop_oneof![
        (Just(false), fuzz::mutated(first_packet("prod"), 4)),
        (
            Just(false),
            (first_packet("prod"), fuzz::mutated(messages(), 3)).prop_map(|(a, b)| [a, b].concat())
        ),
        (Just(true), fuzz::mutated(messages(), 6)),
        (Just(false), prop::collection::vec(any::<u8>(), 0..64)),
    ]
}

/// One hostile connection: its bytes sent, its replies read until pgshard
/// closes it or goes quiet. Every error it gets carries a SQLSTATE.
async fn hostile_connection(port: u16, seed: u64) {
    let (login, bytes) = draw(hostile(), seed);
    let mut raw = match login {
        true => Wire::login(port, "raw", "prod").await,
        false => Wire::connect(port).await,
    };
    raw.send(&bytes).await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        match raw.read_within(Duration::from_millis(300)).await {
            Read::Message(b'E', body) => {
                assert!(
                    wire::sqlstate(&body).is_some(),
                    "seed {seed}: an error without a SQLSTATE: {body:?}"
                );
            }
            Read::Message(..) => {}
            Read::Closed | Read::Silent => return,
        }
    }
}

/// The good client: queries in a loop until `stop`, each answered right
/// and in time. Returns how many ran.
async fn good_client(port: u16, stop: Arc<AtomicBool>) -> usize {
    let client = common::connect(port, "app", "app-pw", "prod")
        .await
        .unwrap();
    let mut ran = 0;
    while !stop.load(Ordering::SeqCst) {
        let key = (ran % 50) as i64;
        let started = Instant::now();
        let row = client
            .query_one("SELECT $1::bigint + 1 AS n", &[&key])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>("n"), key + 1);
        let rows = client
            .query("SELECT id FROM orders WHERE tenant_id = $1", &[&key])
            .await
            .unwrap();
        assert_eq!(rows.len(), 1, "tenant {key}");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "a good query took {took:?}");
        ran += 1;
    }
    ran
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hostile_clients_do_not_disturb_a_good_one() {
    watch_proxy_panics();
    let cluster = Cluster::start_sharded_raw(2, "", "");
    let port = cluster.port();
    let setup = cluster.connect().await;
    for key in 0..50i64 {
        setup
            .execute(
                "INSERT INTO orders (tenant_id, id, item) VALUES ($1, $1, 'x')",
                &[&key],
            )
            .await
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let good = tokio::spawn(good_client(port, Arc::clone(&stop)));
    let total = cases(120) as u64;
    let next = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..6)
        .map(|_| {
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                loop {
                    let seed = next.fetch_add(1, Ordering::SeqCst);
                    if seed >= total {
                        break;
                    }
                    hostile_connection(port, seed).await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let ran = good.await.unwrap();
    assert!(ran > 0, "the good client ran no query");
    // pgshard still serves new clients.
    let after = cluster.connect().await;
    let row = after
        .query_one("SELECT count(*) FROM orders", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 50);
    assert_eq!(proxy_panics(), 0, "pgshard panicked");
    eprintln!("{total} hostile connections; the good client ran {ran} query pairs");
}

/// A server message: `tag`, length, `body`.
fn server_message(tag: u8, body: &[u8]) -> Vec<u8> {
    wire::message(tag, body)
}

/// What a fake server says after a login: AuthenticationOk, parameters,
/// its key, ReadyForQuery.
fn login_replies() -> Vec<u8> {
    let mut out = server_message(b'R', &[0, 0, 0, 0]);
    for (name, value) in [
        ("server_version", "15.0"),
        ("client_encoding", "UTF8"),
        ("standard_conforming_strings", "on"),
        ("integer_datetimes", "on"),
        ("DateStyle", "ISO, MDY"),
    ] {
        out.extend(server_message(
            b'S',
            format!("{name}\0{value}\0").as_bytes(),
        ));
    }
    out.extend(server_message(b'K', &[0, 0, 0x30, 0x39, 1, 2, 3, 4]));
    out.extend(server_message(b'Z', b"I"));
    out
}

/// A reply to one query: a row of one int4 column, its tag, ReadyForQuery.
fn query_replies() -> Vec<u8> {
    let mut description = BytesMut::new();
    description.put_u16(1);
    description.put_slice(b"n\0");
    description.put_u32(0);
    description.put_u16(0);
    description.put_u32(23);
    description.put_i16(4);
    description.put_i32(-1);
    description.put_i16(0);
    let mut out = server_message(b'T', &description);
    out.extend(server_message(b'D', b"\x00\x01\x00\x00\x00\x011"));
    out.extend(server_message(b'C', b"SELECT 1\0"));
    out.extend(server_message(b'Z', b"I"));
    out
}

/// How a fake server connection misbehaves.
fn misbehaviour() -> impl Strategy<Value = (bool, Vec<u8>)> {
    prop_oneof![
        // The login itself mutated.
        (Just(false), fuzz::mutated(Just(login_replies()), 4)),
        // A valid login, then a mutated reply to the first query.
        (Just(true), fuzz::mutated(Just(query_replies()), 4)),
        // A valid login, then random bytes.
        (Just(true), prop::collection::vec(any::<u8>(), 0..48)),
    ]
}

/// Read the client's startup (answering an SSLRequest with `N`).
async fn read_startup(socket: &mut TcpStream) -> Option<()> {
    loop {
        let len = socket.read_u32().await.ok()? as usize;
        let mut body = vec![0; len.checked_sub(4)?.min(10_000)];
        socket.read_exact(&mut body).await.ok()?;
        if body.starts_with(&[0x04, 0xd2, 0x16, 0x2f]) {
            socket.write_all(b"N").await.ok()?;
            continue;
        }
        return Some(());
    }
}

/// One fake server connection: a login, then the misbehaviour for `seed`,
/// then it stays open, reading, until pgshard closes it.
async fn fake_connection(mut socket: TcpStream, seed: u64) {
    let (login_first, bytes) = draw(misbehaviour(), seed);
    if read_startup(&mut socket).await.is_none() {
        return;
    }
    let mut buf = vec![0; 4096];
    if login_first {
        let _ = socket.write_all(&login_replies()).await;
        // The first message pgshard sends on it.
        if !matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {
            return;
        }
    }
    let _ = socket.write_all(&bytes).await;
    let idle = Duration::from_secs(10);
    while let Ok(Ok(n)) = tokio::time::timeout(idle, socket.read(&mut buf)).await {
        if n == 0 {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_sending_garbage_gets_its_client_a_clean_error() {
    watch_proxy_panics();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fake_port = listener.local_addr().unwrap().port();
    let seeds = Arc::new(AtomicU64::new(0));
    let server_seeds = Arc::clone(&seeds);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let seed = server_seeds.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(fake_connection(socket, seed));
        }
    });
    let servers = common::servers(1);
    let config = format!(
        "[general]\nshutdown_timeout = 1000\nquery_timeout = 1000\nconnect_timeout = 1000\n\
         checkout_timeout = 1000\nban_timeout = 1\n{}{}\
         [[databases]]\nname = \"fake\"\nhost = \"127.0.0.1\"\nport = {fake_port}\n\
         user = \"fake\"\npassword = \"fake\"\n",
        common::ADMIN,
        common::databases(&servers),
    );
    let users = format!(
        "{}[[users]]\nname = \"raw\"\ndatabase = \"fake\"\nauth_type = \"trust\"\n",
        common::USERS
    );
    let proxy = TestProxy::start(&config, &users).unwrap();
    let port = proxy.port();
    let stop = Arc::new(AtomicBool::new(false));
    let good = tokio::spawn(good_select(port, Arc::clone(&stop)));
    let total = cases(48);
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                loop {
                    let case = next.fetch_add(1, Ordering::SeqCst);
                    if case >= total {
                        return outcomes;
                    }
                    outcomes.push(fake_client(port, case).await);
                }
            })
        })
        .collect();
    let mut outcomes = std::collections::BTreeMap::<&str, usize>::new();
    for client in clients {
        for outcome in client.await.unwrap() {
            *outcomes.entry(outcome).or_default() += 1;
        }
    }
    assert_eq!(outcomes.values().sum::<usize>(), total);
    stop.store(true, Ordering::SeqCst);
    let ran = good.await.unwrap();
    assert!(ran > 0, "the good client ran no query");
    assert_eq!(proxy_panics(), 0, "pgshard panicked");
    eprintln!(
        "{} fake server connections; client outcomes {outcomes:?}; the good client ran {ran} queries",
        seeds.load(Ordering::SeqCst)
    );
}

/// A client of the fake server: logs in and runs `SELECT 1`. What it got:
/// the row, a clean error (an ErrorResponse with a SQLSTATE, the
/// connection then usable or closed), or a close. Never silence past the
/// timeouts.
async fn fake_client(port: u16, case: usize) -> &'static str {
    let mut raw = Wire::connect(port).await;
    raw.send(&wire::startup(0, &[("user", "raw"), ("database", "fake")]))
        .await;
    let mut sent_query = false;
    let mut saw_error = false;
    loop {
        match raw.read_within(Duration::from_secs(5)).await {
            Read::Message(b'E', body) => {
                assert!(wire::sqlstate(&body).is_some(), "case {case}: {body:?}");
                saw_error = true;
            }
            Read::Message(b'Z', _) if !sent_query => {
                raw.send(&wire::query("SELECT 1")).await;
                sent_query = true;
            }
            Read::Message(b'Z', _) => return if saw_error { "error" } else { "answered" },
            Read::Message(..) => {}
            Read::Closed if saw_error => return "error, closed",
            Read::Closed => return "closed",
            Read::Silent => panic!("case {case}: pgshard silent for 5 s (query_timeout is 1 s)"),
        }
    }
}

/// The good client of the real server, beside the fake one.
async fn good_select(port: u16, stop: Arc<AtomicBool>) -> usize {
    let client = common::connect(port, "app", "app-pw", "prod")
        .await
        .unwrap();
    let mut ran = 0;
    while !stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        let row = client.query_one("SELECT 41 + 1", &[]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 42);
        assert!(started.elapsed() < Duration::from_secs(2));
        ran += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    ran
}
