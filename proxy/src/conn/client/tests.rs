//! The client's output when a flush is abandoned (a KILL ends a session
//! whose client stopped reading): the bytes on the wire stay whole messages.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use super::ClientConn;
use crate::errors::ClientError;
use crate::protocol::frame::{backend_extent, Extent};
use crate::protocol::sqlstate;

async fn pair() -> (ClientConn, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let peer = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (ours, _) = listener.accept().await.unwrap();
    (ClientConn::new(ours), peer)
}

/// A DataRow of one column of `n` bytes.
fn data_row(out: &mut bytes::BytesMut, n: usize) {
    out.extend_from_slice(b"D");
    out.extend_from_slice(&(4 + 2 + 4 + n as u32).to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(n as u32).to_be_bytes());
    out.extend_from_slice(&vec![b'x'; n]);
}

/// The tags of the whole messages in `bytes`, and what is left after them.
fn tags(bytes: &[u8]) -> (Vec<u8>, usize) {
    let (mut tags, mut at) = (Vec::new(), 0);
    while let Ok(Extent::Whole(length)) = backend_extent(&bytes[at..]) {
        tags.push(bytes[at]);
        at += length;
    }
    (tags, bytes.len() - at)
}

#[tokio::test]
async fn an_abandoned_flush_leaves_whole_messages_before_the_last_error() {
    let (mut client, mut peer) = pair().await;
    // More rows than the sockets hold (odd sizes: the socket cuts a row).
    for _ in 0..20_000 {
        data_row(client.out(), 1_001);
    }
    let abandoned = tokio::time::timeout(Duration::from_millis(200), client.flush()).await;
    assert!(
        abandoned.is_err(),
        "the peer read nothing, yet all was written"
    );
    client.discard_output();
    ClientError::new(sqlstate::ADMIN_SHUTDOWN, "killed").encode_fatal(client.out());
    let reader = tokio::spawn(async move {
        let mut all = Vec::new();
        peer.read_to_end(&mut all).await.unwrap();
        all
    });
    client.flush().await.unwrap();
    drop(client);
    let all = reader.await.unwrap();
    let (tags, left) = tags(&all);
    assert_eq!(left, 0, "a message cut off at the end");
    assert_eq!(tags.last(), Some(&b'E'), "no error last");
    assert!(tags[..tags.len() - 1].iter().all(|t| *t == b'D'));
    assert!(tags.len() > 2 && tags.len() < 20_000);
}
