//! A fan-out's reading tasks, session-free: each server gets its request
//! (after a PREPARE it lacks, `fan_out/preface.rs`) and its reply is read
//! in a task of its own into a bounded channel of its own, whole messages
//! until its ReadyForQuery; the caller (`session/fan_out.rs`) takes the
//! reports as they come and merges them.

mod preface;

use std::task::Poll;

use bytes::BytesMut;
use tokio::sync::mpsc;

use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendKind};

/// What a reading task reports: a whole message of its server, or (`None`)
/// that its connection broke.
pub type Report = Option<BackendFrame>;

/// A statement prepared with SQL PREPARE that a fan-out's request runs: a
/// server that lacks it prepares it first (`fan_out/preface.rs`).
pub struct Prepare {
    pub id: u64,
    /// Its PREPARE.
    pub sql: String,
    /// How many statements a server may hold (`prepared_statements_limit`).
    pub limit: usize,
}

/// Server messages in flight from each reading task to the session: enough
/// to keep every shard busy, few enough that a fast shard cannot fill
/// memory while the client (or, in an ordered merge, another shard) is
/// slow.
const IN_FLIGHT: usize = 64;

/// Send each server its request and read its reply in a task of its own,
/// into a bounded channel of its own.
/// A server that lacks `prepare`'s statement prepares it first; if that
/// fails, its error is the server's reply and the request is not sent.
pub fn spawn_readers(
    servers: Vec<Pooled>,
    request: impl Fn(&Pooled, &mut BytesMut),
    prepare: Option<&Prepare>,
) -> (Vec<Reader>, Vec<Option<mpsc::Receiver<Report>>>) {
    let mut tasks = Vec::with_capacity(servers.len());
    let mut incoming = Vec::with_capacity(servers.len());
    for mut server in servers {
        let mut out = BytesMut::new();
        request(&server, &mut out);
        let preface = prepare.and_then(|prepare| preface::preface(prepare, &mut server));
        let (reports, receiver) = mpsc::channel::<Report>(IN_FLIGHT);
        incoming.push(Some(receiver));
        tasks.push(tokio::spawn(async move {
            if let Some(preface) = preface {
                match preface::run(&mut server, preface, &reports).await {
                    Some(true) => {}
                    Some(false) => return (server, true),
                    None => return (server, false),
                }
            }
            let ok =
                server.conn.send(&out).await.is_ok() && read_reply(&mut server, &reports).await;
            (server, ok)
        }));
    }
    (tasks, incoming)
}

/// Deliver a cancel to `target` in a task of its own.
pub fn send_cancel(target: crate::conn::cancel::CancelTarget) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move { crate::conn::cancel::send(&target).await })
}

/// A reading task: gives back its server and whether the reply came whole.
pub type Reader = tokio::task::JoinHandle<(Pooled, bool)>;

/// The next report of one of the `candidates`' channels: its index, and
/// the report (`None`: the channel closed, its task is over).
pub async fn next_report(
    incoming: &mut [Option<mpsc::Receiver<Report>>],
    candidates: &[usize],
) -> (usize, Option<Report>) {
    std::future::poll_fn(|cx| {
        for &index in candidates {
            if let Some(Some(receiver)) = incoming.get_mut(index) {
                if let Poll::Ready(report) = receiver.poll_recv(cx) {
                    return Poll::Ready((index, report));
                }
            }
        }
        Poll::Pending
    })
    .await
}

/// A reading task: send each whole message of `server`'s reply to the
/// session until its ReadyForQuery (recorded, not sent). Returns whether
/// the reply came whole.
async fn read_reply(server: &mut Pooled, reports: &mpsc::Sender<Report>) -> bool {
    loop {
        match server.conn.next_message() {
            Ok(Some(message)) if message.kind() == BackendKind::ReadyForQuery => {
                return true;
            }
            Ok(Some(message)) => {
                if reports.send(Some(message)).await.is_err() {
                    return false;
                }
                continue;
            }
            Ok(None) => {}
            Err(_) => break,
        }
        let conn = &mut server.conn;
        match conn.fill().await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    // The connection broke mid-reply: a replica's database is banned.
    server.pool().ban("server connection lost mid-query");
    let _ = reports.send(None).await;
    false
}
