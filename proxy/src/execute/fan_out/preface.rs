//! What a fan-out's reading task sends a server before the request when
//! the request runs a statement prepared with SQL PREPARE that the server
//! lacks: the PREPARE (after a Close of the server's least recently used
//! statement when it holds too many), read to its ReadyForQuery before the
//! request goes. Its error, if any, is the server's reply to the fan-out,
//! and the request is not sent.

use bytes::BytesMut;
use tokio::sync::mpsc;

use super::{Prepare, Report};
use crate::conn::server::prepared_set;
use crate::pool::Pooled;
use crate::protocol::backend::{BackendFrame, BackendKind};
use crate::protocol::messages;

/// The messages to send first, and how many ReadyForQuery end their reply.
pub(super) struct Preface {
    id: u64,
    bytes: BytesMut,
    syncs: usize,
}

/// What `server` must be sent first for `prepare`'s statement; `None` when
/// it holds it. The statement counts as held from now on (the task forgets
/// it if the PREPARE fails).
pub(super) fn preface(prepare: &Prepare, server: &mut Pooled) -> Option<Preface> {
    let conn = &mut server.conn;
    if conn.prepared.contains(prepare.id) {
        return None;
    }
    let mut bytes = BytesMut::new();
    let mut syncs = 1;
    if let Some(oldest) = conn.prepared.make_room(prepare.limit) {
        prepared_set::close(&mut bytes, oldest);
        messages::sync(&mut bytes);
        syncs += 1;
    }
    messages::query(&mut bytes, &prepare.sql);
    conn.prepared.insert(prepare.id);
    Some(Preface {
        id: prepare.id,
        bytes,
        syncs,
    })
}

/// Send `preface` and read its reply: `Some(true)` when the statement is
/// prepared, `Some(false)` when the PREPARE failed (its ErrorResponse was
/// reported as the server's reply), `None` when the connection broke (as
/// `read_reply` reports it).
pub(super) async fn run(
    server: &mut Pooled,
    preface: Preface,
    reports: &mpsc::Sender<Report>,
) -> Option<bool> {
    let read = read(server, &preface).await;
    let Some(error) = read else {
        server.pool().ban("server connection lost mid-query");
        let _ = reports.send(None).await;
        return None;
    };
    let Some(error) = error else {
        return Some(true);
    };
    server.conn.prepared.remove(preface.id);
    reports.send(Some(error)).await.ok()?;
    Some(false)
}

/// The PREPARE's ErrorResponse, if any (`None`: the connection broke).
async fn read(server: &mut Pooled, preface: &Preface) -> Option<Option<BackendFrame>> {
    server.conn.send(&preface.bytes).await.ok()?;
    let mut left = preface.syncs;
    let mut error = None;
    loop {
        let message = loop {
            if let Some(message) = server.conn.next_message().ok()? {
                break message;
            }
            if server.conn.fill().await.ok()? == 0 {
                return None;
            }
        };
        match message.kind() {
            BackendKind::ReadyForQuery => {
                left -= 1;
                if left == 0 {
                    return Some(error);
                }
            }
            // The PREPARE's (the last part's), not a Close's.
            BackendKind::ErrorResponse if left == 1 => error = Some(message),
            _ => {}
        }
    }
}
