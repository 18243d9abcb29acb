//! The relay's faults, each against a loopback echo server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{Direction, Fault, FaultRelay};

/// An upstream that echoes whatever it reads, and a relay in front of it.
async fn echo_behind_relay() -> FaultRelay {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 * 1024];
                while let Ok(n @ 1..) = socket.read(&mut buffer).await {
                    if socket.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    FaultRelay::start(upstream).unwrap()
}

async fn connect(relay: &FaultRelay) -> std::io::Result<TcpStream> {
    TcpStream::connect(("127.0.0.1", relay.port())).await
}

/// Send `bytes`, read as many back; how long the round trip took.
async fn round_trip(socket: &mut TcpStream, bytes: &[u8]) -> Duration {
    let started = Instant::now();
    socket.write_all(bytes).await.unwrap();
    let mut back = vec![0u8; bytes.len()];
    tokio::time::timeout(Duration::from_secs(5), socket.read_exact(&mut back))
        .await
        .expect("no echo within 5 s")
        .unwrap();
    assert_eq!(back, bytes);
    started.elapsed()
}

#[tokio::test]
async fn forwards_then_refuses_new_connections_until_healed() {
    let relay = echo_behind_relay().await;
    let mut open = connect(&relay).await.unwrap();
    round_trip(&mut open, b"hello").await;
    relay.inject(Fault::Refuse);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = connect(&relay).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    // A connection made before forwards on.
    round_trip(&mut open, b"still here").await;
    relay.heal();
    tokio::time::sleep(Duration::from_millis(100)).await;
    round_trip(&mut connect(&relay).await.unwrap(), b"again").await;
}

#[tokio::test]
async fn resets_open_and_new_connections() {
    let relay = echo_behind_relay().await;
    let mut open = connect(&relay).await.unwrap();
    round_trip(&mut open, b"hello").await;
    relay.inject(Fault::Reset);
    let mut buffer = [0u8; 8];
    let err = open.read(&mut buffer).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    // A new connection is reset as soon as accepted: at the first read,
    // or already when the connect completes.
    let read = match connect(&relay).await {
        Ok(mut new) => new.read(&mut buffer).await,
        Err(err) => Err(err),
    };
    assert!(
        matches!(&read, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "{read:?}"
    );
    relay.heal();
    round_trip(&mut connect(&relay).await.unwrap(), b"again").await;
}

#[tokio::test]
async fn cuts_a_reply_in_the_middle_then_closes() {
    let relay = echo_behind_relay().await;
    let mut open = connect(&relay).await.unwrap();
    relay.inject(Fault::CutMidMessage);
    open.write_all(b"0123456789").await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), open.read_to_end(&mut got))
        .await
        .expect("not closed within 5 s")
        .unwrap();
    assert_eq!(got, b"01234");
    relay.heal();
    round_trip(&mut connect(&relay).await.unwrap(), b"whole").await;
}

#[tokio::test]
async fn black_hole_holds_without_closing_then_delivers() {
    let relay = echo_behind_relay().await;
    let mut open = connect(&relay).await.unwrap();
    relay.freeze();
    open.write_all(b"held").await.unwrap();
    let mut back = [0u8; 4];
    let read = tokio::time::timeout(Duration::from_millis(300), open.read(&mut back)).await;
    assert!(read.is_err(), "delivered through a black hole: {read:?}");
    relay.thaw();
    tokio::time::timeout(Duration::from_secs(5), open.read_exact(&mut back))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&back, b"held");
}

#[tokio::test]
async fn adds_latency_both_ways() {
    let relay = echo_behind_relay().await;
    let mut open = connect(&relay).await.unwrap();
    assert!(round_trip(&mut open, b"fast").await < Duration::from_millis(100));
    relay.inject(Fault::Latency(Duration::from_millis(150)));
    let took = round_trip(&mut open, b"slow").await;
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_millis(1_000), "{took:?}");
}

#[tokio::test]
async fn throttles_one_direction_only() {
    let relay = echo_behind_relay().await;
    let mut open = connect(&relay).await.unwrap();
    let payload = vec![7u8; 4_000];
    let throttle = |direction| Fault::Throttle {
        direction,
        bytes_per_second: 8_000,
    };
    relay.inject(throttle(Direction::ToClient));
    let took = round_trip(&mut open, &payload).await;
    // 4,000 bytes at 8,000 a second: half a second (slices of 400 bytes).
    assert!(took >= Duration::from_millis(400), "{took:?}");
    relay.inject(throttle(Direction::ToServer));
    assert!(round_trip(&mut open, &payload).await >= Duration::from_millis(400));
    relay.heal();
    assert!(round_trip(&mut open, &payload).await < Duration::from_millis(200));
}
