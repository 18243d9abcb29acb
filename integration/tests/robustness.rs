//! Hostile and unusual clients on the raw protocol against real servers:
//! bad message types and lengths, truncated and random input, oversized
//! startup packets, connection limits, protocol negotiation, and named
//! statements after DEALLOCATE. The proxy must refuse what is wrong the way
//! Postgres does and go on serving everyone else.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::wire::{self, errors, tags, Read, Wire};
use common::{code, column, rows, Cluster, USERS};
use integration::TestProxy;
use tokio::io::AsyncWriteExt;

/// Users: `app` (SCRAM) and `raw`, trusted, so raw sockets need no
/// password exchange.
fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"raw\"\ndatabase = \"prod\"\nauth_type = \"trust\"\n\
         server_user = \"app\"\nserver_password = \"app-pw\"\n"
    )
}

fn start(general: &str) -> Cluster {
    Cluster::start_with(1, general, &users())
}

async fn login(cluster: &Cluster) -> Wire {
    Wire::login(cluster.port(), "raw", "prod").await
}

/// A simple query on a raw connection gives one row with `expected`.
async fn assert_raw_query(raw: &mut Wire, sql: &str, expected: &str) {
    raw.send(&wire::query(sql)).await;
    let replies = raw.until_ready().await;
    assert_eq!(tags(&replies), "TDCZ", "{replies:?}");
    let row = &replies[1].1;
    // DataRow: column count, then one length-prefixed value.
    assert_eq!(&row[6..], expected.as_bytes(), "{replies:?}");
}

async fn assert_works(client: &tokio_postgres::Client) {
    assert_eq!(
        column(client, "SELECT shard FROM whoami", "shard").await,
        vec!["0"]
    );
}

/// After a refusal: an ErrorResponse with `sqlstate`, then the close.
async fn assert_refused_and_closed(raw: &mut Wire, sqlstate: &str, within: Duration) {
    let replies = raw.until_closed(within).await;
    assert_eq!(errors(&replies), vec![sqlstate], "{replies:?}");
}

#[tokio::test]
async fn an_unknown_message_type_is_a_protocol_violation() {
    let cluster = start("");
    let other = cluster.connect().await;
    assert_works(&other).await;
    let mut raw = login(&cluster).await;
    assert_raw_query(&mut raw, "SELECT 1", "1").await;
    raw.send(&wire::message(b'!', b"hello")).await;
    assert_refused_and_closed(&mut raw, "08P01", Duration::from_secs(5)).await;
    // Mid-transaction too: the transaction is rolled back with the session.
    let mut raw = login(&cluster).await;
    raw.send(&wire::query("BEGIN; CREATE TABLE half (x int)"))
        .await;
    assert_eq!(tags(&raw.until_ready().await), "CCZ");
    raw.send(&wire::message(0, &[])).await;
    assert_refused_and_closed(&mut raw, "08P01", Duration::from_secs(5)).await;
    assert_works(&other).await;
    let err = other.simple_query("SELECT * FROM half").await.unwrap_err();
    assert_eq!(code(&err), Some("42P01"), "{err}");
    assert_works(&cluster.connect().await).await;
}

#[tokio::test]
async fn a_message_longer_than_max_message_size_is_refused_before_its_body() {
    let cluster = start("max_message_size = 100000");
    let mut raw = login(&cluster).await;
    // A query just under the limit is fine.
    let sql = format!("SELECT length('{}')", "x".repeat(90_000));
    assert_raw_query(&mut raw, &sql, "90000").await;
    // A header claiming 200000 bytes, and no body: refused at once.
    let mut header = vec![b'Q'];
    header.extend_from_slice(&200_004u32.to_be_bytes());
    raw.send(&header).await;
    assert_refused_and_closed(&mut raw, "08P01", Duration::from_secs(2)).await;
    // Small-message types have Postgres's own 10000-byte cap whatever the
    // configured size.
    let mut raw = login(&cluster).await;
    let mut header = vec![b'S'];
    header.extend_from_slice(&20_004u32.to_be_bytes());
    raw.send(&header).await;
    assert_refused_and_closed(&mut raw, "08P01", Duration::from_secs(2)).await;
    // A length below the header's own size.
    let mut raw = login(&cluster).await;
    raw.send(&[b'Q', 0, 0, 0, 3]).await;
    assert_refused_and_closed(&mut raw, "08P01", Duration::from_secs(2)).await;
    assert_works(&cluster.connect().await).await;
}

/// A small deterministic PRNG (xorshift64*), so a failure can be replayed.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Random input for round `round`, in turn: pure noise; a real message
/// type with a consistent length and a random body (to reach the message
/// decoders); a valid extended-protocol exchange with a few bytes changed
/// (to reach the statement handling and the servers).
fn garbage(prng: &mut Prng, round: usize) -> Vec<u8> {
    match round % 3 {
        0 => {
            let len = 1 + prng.below(300) as usize;
            prng.bytes(len)
        }
        1 => {
            const TAGS: &[u8] = b"QPBDECSHFdcf";
            let tag = TAGS[prng.below(TAGS.len() as u64) as usize];
            let len = prng.below(100) as usize;
            [wire::message(tag, &prng.bytes(len)), wire::sync()].concat()
        }
        _ => {
            let mut bytes = [
                wire::parse("s1", "SELECT $1::int + 1"),
                wire::bind("s1"),
                wire::message(b'D', b"P\0"),
                wire::execute(),
                wire::message(b'C', b"S\0"),
                wire::query("SELECT 1; SELECT 'x'"),
                wire::sync(),
            ]
            .concat();
            for _ in 0..1 + prng.below(3) {
                let at = prng.below(bytes.len() as u64) as usize;
                bytes[at] = prng.next() as u8;
            }
            bytes
        }
    }
}

#[tokio::test]
async fn truncated_and_random_input_harms_no_one() {
    common::watch_proxy_panics();
    // Two server connections, so what the bad clients leave behind is what
    // the good ones get next.
    let cluster = start("default_pool_size = 2\nmax_message_size = 100000");
    let other = cluster.connect().await;
    let admin = cluster.admin().await;

    // A message cut off by EOF, on its own and after extended-protocol
    // messages with no Sync (the server is held for them).
    let truncated = [
        b"Q\x00\x00\x00\x40SELECT".to_vec(),
        [
            wire::parse("", "SELECT 1"),
            wire::bind(""),
            b"E\x00\x00".to_vec(),
        ]
        .concat(),
        [wire::query("BEGIN"), b"P\x00\x00\x01\x00".to_vec()].concat(),
    ];
    for bytes in truncated {
        let mut raw = login(&cluster).await;
        raw.send(&bytes).await;
        raw.stream.shutdown().await.unwrap();
        // The proxy notices the EOF and closes its side.
        raw.until_closed(Duration::from_secs(5)).await;
        assert_works(&other).await;
    }

    let mut prng = Prng(0x5eed_1234_abcd_0001);
    for round in 0..20 {
        let bytes = garbage(&mut prng, round);
        let mut raw = login(&cluster).await;
        raw.send(&bytes).await;
        // Whatever comes back, it must be well-formed messages; then leave.
        while let Read::Message(tag, body) = raw.read_within(Duration::from_millis(200)).await {
            assert!(
                tag.is_ascii_alphabetic() || matches!(tag, b'1' | b'2' | b'3'),
                "round {round}: reply {tag} {body:?}"
            );
        }
        drop(raw);
        for _ in 0..2 {
            assert_works(&other).await;
        }
    }

    // Nothing is left checked out: every server went back or was closed.
    let mut settled = false;
    for _ in 0..100 {
        let pools = rows(&admin, "SHOW POOLS").await;
        let pool = pools.iter().find(|p| p["user"] == "app").unwrap();
        // SHOW SERVERS lists no connection as checked out either: those
        // dropped with their client left the list with them.
        let servers = rows(&admin, "SHOW SERVERS").await;
        let listed_active = servers.iter().any(|s| s["state"] == "active");
        if pool["sv_active"] == "0" && pool["cl_active"] == "0" && !listed_active {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        settled,
        "{:?} {:?}",
        rows(&admin, "SHOW POOLS").await,
        rows(&admin, "SHOW SERVERS").await
    );
    // Fresh clients get clean servers: no transaction left open.
    for _ in 0..4 {
        let client = cluster.connect().await;
        assert_eq!(
            column(
                &client,
                "SELECT now() = statement_timestamp() AS fresh",
                "fresh"
            )
            .await,
            vec!["t"]
        );
    }
    let mut raw = login(&cluster).await;
    assert_raw_query(&mut raw, "SELECT 7", "7").await;
    assert_eq!(common::proxy_panics(), 0, "a proxy task panicked");
}

#[tokio::test]
async fn a_startup_packet_over_10000_bytes_is_refused() {
    let cluster = start("");
    let mut raw = Wire::connect(cluster.port()).await;
    let long = "x".repeat(10_050);
    let packet = wire::startup(0, &[("user", "raw"), ("database", "prod"), ("long", &long)]);
    assert!(packet.len() > 10_000);
    raw.send(&packet).await;
    match raw.read_within(Duration::from_secs(5)).await {
        Read::Message(b'E', body) => {
            assert_eq!(wire::sqlstate(&body).as_deref(), Some("08P01"), "{body:?}")
        }
        other => panic!("expected an ErrorResponse, got {other:?}"),
    }
    // Just under the limit is accepted (Postgres's limit is inclusive).
    let mut raw = Wire::connect(cluster.port()).await;
    let base = wire::startup(
        0,
        &[
            ("user", "raw"),
            ("database", "prod"),
            ("application_name", ""),
        ],
    );
    let fill = "y".repeat(10_000 - base.len());
    raw.send(&wire::startup(
        0,
        &[
            ("user", "raw"),
            ("database", "prod"),
            ("application_name", &fill),
        ],
    ))
    .await;
    let replies = raw.until_ready().await;
    assert_eq!(errors(&replies), Vec::<String>::new(), "{replies:?}");
    assert_works(&cluster.connect().await).await;
}

#[tokio::test]
async fn max_client_conn_refuses_the_client_over_the_limit() {
    let cluster = start("max_client_conn = 2");
    let first = cluster.connect().await;
    let second = cluster.connect().await;
    let err = common::connect(cluster.port(), "app", "app-pw", "prod")
        .await
        .unwrap_err();
    assert_eq!(code(&err), Some("53300"), "{err}");
    // Raw clients count the same.
    let mut raw = Wire::connect(cluster.port()).await;
    raw.send(&wire::startup(0, &[("user", "raw"), ("database", "prod")]))
        .await;
    assert_refused_and_closed(&mut raw, "53300", Duration::from_secs(5)).await;
    assert_works(&first).await;
    assert_works(&second).await;
    // A place that frees up can be taken.
    drop(first);
    let mut third = None;
    for _ in 0..100 {
        if let Ok(client) = common::connect(cluster.port(), "app", "app-pw", "prod").await {
            third = Some(client);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_works(&third.expect("no room after a client left")).await;
}

#[tokio::test]
async fn protocol_3_1_and_pq_options_are_negotiated_down() {
    let cluster = start("");
    let mut raw = Wire::connect(cluster.port()).await;
    raw.send(&wire::startup(
        1,
        &[
            ("user", "raw"),
            ("database", "prod"),
            ("_pq_.something", "on"),
        ],
    ))
    .await;
    let (tag, body) = raw.recv().await;
    assert_eq!(tag, b'v', "{body:?}");
    let mut expected = Vec::new();
    expected.extend_from_slice(&0x0003_0000u32.to_be_bytes());
    expected.extend_from_slice(&1u32.to_be_bytes());
    expected.extend_from_slice(b"_pq_.something\0");
    assert_eq!(body, Bytes::from(expected));
    let replies = raw.until_ready().await;
    assert_eq!(replies[0], (b'R', Bytes::from_static(&[0, 0, 0, 0])));
    assert_eq!(errors(&replies), Vec::<String>::new());
    assert_raw_query(&mut raw, "SELECT 5", "5").await;
    // 3.0 with an option: negotiated too; a newer minor alone as well.
    for (minor, params, options) in [
        (0, vec![("_pq_.a", "1"), ("_pq_.b", "2")], 2u32),
        (2, vec![], 0),
    ] {
        let mut raw = Wire::connect(cluster.port()).await;
        let mut all = vec![("user", "raw"), ("database", "prod")];
        all.extend(params);
        raw.send(&wire::startup(minor, &all)).await;
        let (tag, body) = raw.recv().await;
        assert_eq!(tag, b'v', "minor {minor}: {body:?}");
        assert_eq!(&body[..4], &0x0003_0000u32.to_be_bytes());
        assert_eq!(&body[4..8], &options.to_be_bytes());
        raw.until_ready().await;
        assert_raw_query(&mut raw, "SELECT 6", "6").await;
    }
}

#[tokio::test]
async fn named_statements_follow_deallocate_and_refuse_duplicates() {
    let cluster = start("");
    let mut raw = login(&cluster).await;
    let run = |bytes: Vec<Vec<u8>>| bytes.concat();

    raw.send(&run(vec![wire::parse("foo", "SELECT 1"), wire::sync()]))
        .await;
    assert_eq!(tags(&raw.until_ready().await), "1Z");
    raw.send(&run(vec![wire::bind("foo"), wire::execute(), wire::sync()]))
        .await;
    assert_eq!(tags(&raw.until_ready().await), "2DCZ");

    raw.send(&wire::query("DEALLOCATE foo")).await;
    let replies = raw.until_ready().await;
    assert_eq!(tags(&replies), "CZ", "{replies:?}");
    assert_eq!(&replies[0].1[..], b"DEALLOCATE\0");

    raw.send(&run(vec![wire::bind("foo"), wire::execute(), wire::sync()]))
        .await;
    let replies = raw.until_ready().await;
    assert_eq!(tags(&replies), "EZ", "{replies:?}");
    assert_eq!(errors(&replies), vec!["26000"]);
    // Deallocating it again is an error too, as in Postgres.
    raw.send(&wire::query("DEALLOCATE foo")).await;
    assert_eq!(errors(&raw.until_ready().await), vec!["26000"]);

    // The name is free again; a second Parse of it is refused and the
    // first definition stays.
    raw.send(&run(vec![wire::parse("foo", "SELECT 2"), wire::sync()]))
        .await;
    assert_eq!(tags(&raw.until_ready().await), "1Z");
    raw.send(&run(vec![wire::parse("foo", "SELECT 3"), wire::sync()]))
        .await;
    let replies = raw.until_ready().await;
    assert_eq!(tags(&replies), "EZ", "{replies:?}");
    assert_eq!(errors(&replies), vec!["42P05"]);
    raw.send(&run(vec![wire::bind("foo"), wire::execute(), wire::sync()]))
        .await;
    let replies = raw.until_ready().await;
    assert_eq!(tags(&replies), "2DCZ", "{replies:?}");
    assert_eq!(&replies[1].1[6..], b"2");
    // The connection is in a normal state afterwards.
    assert_raw_query(&mut raw, "SELECT 8", "8").await;
}

/// A server speaking just enough of the protocol: trust login, then every
/// query answered with one row, except a query containing `hostile`, which
/// gets `reply` (a message with an impossible length). No real Postgres
/// sends such bytes: this is pgshard's defence against a broken stream.
async fn fake_server(listener: tokio::net::TcpListener, reply: &'static [u8]) {
    use tokio::io::AsyncReadExt;
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            let mut buf = bytes::BytesMut::new();
            // The startup packet: length, then the rest.
            while buf.len() < 4
                || buf.len() < u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize
            {
                if socket.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                    return;
                }
            }
            let _ = buf.split_to(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize);
            let mut hello = wire::message(b'R', &[0, 0, 0, 0]);
            hello.extend(wire::message(b'S', b"server_version\x0015.0\x00"));
            hello.extend(wire::message(b'K', &[0, 0, 0, 1, 0, 0, 0, 2]));
            hello.extend(wire::message(b'Z', b"I"));
            let _ = socket.write_all(&hello).await;
            loop {
                while buf.len() >= 5 {
                    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
                    if buf.len() < 1 + len {
                        break;
                    }
                    let message = buf.split_to(1 + len);
                    match message[0] {
                        b'Q' if message.windows(7).any(|w| w == b"hostile") => {
                            let _ = socket.write_all(reply).await;
                        }
                        b'Q' => {
                            let mut out = wire::message(b'T', b"\x00\x01x\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x19\xff\xff\xff\xff\xff\xff\x00\x00");
                            out.extend(wire::message(b'D', b"\x00\x01\x00\x00\x00\x01y"));
                            out.extend(wire::message(b'C', b"SELECT 1\x00"));
                            out.extend(wire::message(b'Z', b"I"));
                            let _ = socket.write_all(&out).await;
                        }
                        b'X' => return,
                        _ => {}
                    }
                }
                if socket.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                    return;
                }
            }
        });
    }
}

/// A server message whose length is impossible for its kind (a 2 GiB
/// DataRow, a 100 kB ReadyForQuery) ends that session with a clean error,
/// reserving nothing like that much, and everyone else goes on.
#[tokio::test]
async fn a_hostile_server_length_is_a_clean_error() {
    common::watch_proxy_panics();
    for reply in [&b"D\x7f\xff\xff\xf0"[..], b"Z\x00\x01\x86\xa0I"] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(fake_server(listener, reply));
        let config = format!(
            "[general]\nshutdown_timeout = 1000\n{}\
             [[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {port}\ndatabase_name = \"fake\"\n",
            common::ADMIN
        );
        let users = "[[users]]\nname = \"raw\"\ndatabase = \"prod\"\nauth_type = \"trust\"\n\
                     server_user = \"fake\"\n";
        let proxy = TestProxy::start(&config, users).unwrap();
        let mut victim = Wire::login(proxy.port(), "raw", "prod").await;
        let mut other = Wire::login(proxy.port(), "raw", "prod").await;
        victim.send(&wire::query("SELECT 'hostile'")).await;
        let replies = victim.until_closed(Duration::from_secs(5)).await;
        assert_eq!(errors(&replies), vec!["08P01"], "{replies:?}");
        other.send(&wire::query("SELECT 1")).await;
        assert_eq!(tags(&other.until_ready().await), "TDCZ");
        server.abort();
    }
    assert_eq!(common::proxy_panics(), 0);
}

/// A shard that cannot be reached is reported with a SQLSTATE and which
/// database and shard, never with the server's address (that goes to the
/// log).
#[tokio::test]
async fn an_unreachable_server_is_reported_without_its_address() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let config = format!(
        "[general]\nshutdown_timeout = 1000\nconnect_timeout = 1000\n{}\
         [[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {port}\ndatabase_name = \"gone\"\n",
        common::ADMIN
    );
    let users = "[[users]]\nname = \"raw\"\ndatabase = \"prod\"\nauth_type = \"trust\"\nserver_user = \"x\"\n";
    let proxy = TestProxy::start(&config, users).unwrap();
    let mut raw = Wire::connect(proxy.port()).await;
    raw.send(&wire::startup(0, &[("user", "raw"), ("database", "prod")]))
        .await;
    let replies = raw.until_closed(Duration::from_secs(5)).await;
    let error = replies
        .iter()
        .find(|(tag, _)| *tag == b'E')
        .map(|(_, body)| String::from_utf8_lossy(body).into_owned())
        .unwrap_or_else(|| panic!("no error: {replies:?}"));
    assert_eq!(errors(&replies), vec!["08006"], "{error}");
    assert!(error.contains("shard 0"), "{error}");
    assert!(
        !error.contains("127.0.0.1") && !error.contains(&port.to_string()),
        "{error}"
    );
}

/// A shard that stops answering without closing its sockets (a black hole
/// in the network): at `query_timeout` pgshard cancels the statement, and
/// when the cancel cannot get through either it closes the server and
/// answers the client 57014 within about `query_timeout` plus a second, as
/// PgBouncer answers at `query_timeout`, for one server and for a fan-out;
/// the other shard serves on, and the frozen one again once it thaws.
/// A keyless statement while a shard answers nothing: cancelled at
/// `query_timeout` (57014), or, once pgshard's reads of the move records
/// have missed that shard past their bound (`resharding_freshness_timeout`
/// after the freeze), refused before it runs (0A000: it cannot know no
/// move copies rows), naming the shard whose reads fail.
fn timed_out_or_unread(err: &tokio_postgres::Error) {
    match code(err) {
        Some("57014") => {}
        Some("0A000") => {
            let message = err.as_db_error().map(|e| e.message().to_owned());
            let unread = message.is_some_and(|m| {
                m.contains("has not read lately") && m.contains("database 1: no ")
            });
            assert!(unread, "{err:?}");
        }
        _ => panic!("{err}"),
    }
}

#[tokio::test]
async fn query_timeout_gives_up_on_a_shard_that_stops_answering() {
    let servers = common::servers(2);
    let relay = integration::FaultRelay::start(([127, 0, 0, 1], servers[1].port()).into()).unwrap();
    for (i, server) in servers.iter().enumerate() {
        server
            .psql(
                &format!("shard_{i}"),
                "CREATE TABLE t (id int8, v text); GRANT ALL ON t TO app",
            )
            .unwrap();
    }
    let mut databases = String::new();
    for (i, port) in [servers[0].port(), relay.port()].into_iter().enumerate() {
        databases.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {port}\ndatabase_name = \"shard_{i}\"\nshard = {i}\n"
        ));
    }
    let config = format!(
        "[general]\nshutdown_timeout = 1000\nquery_timeout = 1000\nconnect_timeout = 1000\ncheckout_timeout = 3000\n{}{databases}\
         [[sharded_tables]]\ndatabase = \"prod\"\nname = \"t\"\ncolumn = \"id\"\ndata_type = \"bigint\"\n",
        common::ADMIN
    );
    let proxy = TestProxy::start(&config, USERS).unwrap();
    let connect = || common::connect(proxy.port(), "app", "app-pw", "prod");
    // Keys 1..=20 land on both shards; find one of each.
    let client = connect().await.unwrap();
    for id in 1..=20i64 {
        client
            .execute("INSERT INTO t VALUES ($1, 'x')", &[&id])
            .await
            .unwrap();
    }
    let shard_of = |id: i64| async move {
        let c = connect().await.unwrap();
        let row = c
            .query_one("SELECT current_database() FROM t WHERE id = $1", &[&id])
            .await
            .unwrap();
        row.get::<_, String>(0)
    };
    let mut on = [None, None];
    for id in 1..=20i64 {
        let db = shard_of(id).await;
        on[usize::from(db == "shard_1")].get_or_insert(id);
    }
    let (healthy, frozen) = (on[0].unwrap(), on[1].unwrap());
    // Four server connections to each shard open before the freeze (four
    // transactions at once), so the statements below find one (a new one
    // would fail at connect_timeout instead).
    let mut open = Vec::new();
    for _ in 0..4 {
        let c = connect().await.unwrap();
        c.batch_execute("BEGIN").await.unwrap();
        c.query("SELECT count(*) FROM t", &[]).await.unwrap();
        open.push(c);
    }
    for c in &open {
        c.batch_execute("COMMIT").await.unwrap();
    }

    relay.freeze();
    let timed = |sql: &'static str, id: Option<i64>| async move {
        let c = connect().await.unwrap();
        let started = std::time::Instant::now();
        // Bounded, so that a wait past every timeout fails the test.
        let result = tokio::time::timeout(Duration::from_secs(10), async {
            match id {
                Some(id) => c.query(sql, &[&id]).await,
                None => c.query(sql, &[]).await,
            }
        })
        .await
        .expect("no answer within 10 s");
        (result, started.elapsed())
    };
    // One server: the frozen shard's key.
    let (result, took) = timed("SELECT v FROM t WHERE id = $1", Some(frozen)).await;
    let err = result.unwrap_err();
    assert_eq!(code(&err), Some("57014"), "{err}");
    let message = err.as_db_error().map(|e| e.message().to_owned());
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("query_timeout") && m.contains("shard 1")),
        "{message:?}"
    );
    assert!(took < Duration::from_millis(4_500), "waited {took:?}");
    assert!(
        took >= Duration::from_millis(1_000),
        "gave up early: {took:?}"
    );
    // A fan-out over both shards, in the simple and the extended protocol.
    let c = connect().await.unwrap();
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        c.simple_query("SELECT count(*) FROM t"),
    )
    .await
    .expect("no answer within 10 s")
    .unwrap_err();
    let took = started.elapsed();
    timed_out_or_unread(&err);
    assert!(took < Duration::from_millis(4_500), "waited {took:?}");
    let (result, took) = timed("SELECT count(*) FROM t", None).await;
    let err = result.unwrap_err();
    timed_out_or_unread(&err);
    assert!(took < Duration::from_millis(4_500), "waited {took:?}");
    // The healthy shard serves meanwhile, fast.
    let (result, took) = timed("SELECT v FROM t WHERE id = $1", Some(healthy)).await;
    assert_eq!(result.unwrap().len(), 1);
    assert!(
        took < Duration::from_millis(900),
        "the healthy shard waited {took:?}"
    );

    // Thawed, the frozen shard serves again: new connections, same pool.
    relay.thaw();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (result, _) = timed("SELECT count(*) FROM t", None).await;
        match result {
            Ok(rows) => {
                assert_eq!(rows[0].get::<_, i64>(0), 20);
                break;
            }
            Err(err) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let _ = err;
            }
            Err(err) => panic!("the thawed shard does not serve again: {err}"),
        }
    }
}
