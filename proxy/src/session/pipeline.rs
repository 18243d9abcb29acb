//! What is in flight between a client and its servers: the bytes queued
//! for the server, whether extended-protocol messages went with no Sync
//! after them, whether the server is in COPY IN, whether the running
//! Query/Sync already reported an error, the errors relayed for the
//! segment the client is sending, which server holds the client's unnamed
//! statement, and the clock timing requests.
//!
//! The three facts "unsynced", "in COPY IN" and "the running Query/Sync
//! failed" are independent (an extended-protocol COPY is in COPY IN
//! before its Sync is sent; an error ends neither), so they are three
//! private flags, each changed only by the event that names it: extended
//! messages sent, a Sync, CopyInResponse, the client's CopyDone/CopyFail,
//! an error at a Sync, ReadyForQuery.

use bytes::BytesMut;

use super::query_clock::QueryClock;
use crate::conn::spare;
use crate::protocol::messages;

/// A session's traffic in flight.
pub(super) struct Pipeline {
    /// Messages for the attached server(s), sent at the next flush.
    to_server: BytesMut,
    /// Extended-protocol messages were sent with no Sync after them yet.
    unsynced: bool,
    /// The server is in COPY IN.
    copy_in: bool,
    /// The running Query/Sync has already reported an error.
    failed: bool,
    /// ErrorResponses relayed to the client for the segment it is sending
    /// (after its last Sync): the rest of that segment is to be skipped.
    segment_errors: u64,
    /// The server connection (id) that holds the client's unnamed
    /// statement: the last Parse of it went there, and no simple query
    /// (which drops it) followed. Elsewhere it is parsed again first.
    unnamed_on: Option<u64>,
    /// Times requests for the query histogram and the slow-query log.
    clock: QueryClock,
}

/// How many errors had been relayed for the client's segment at some
/// point: [`Pipeline::errors_since`] says whether more came after.
#[derive(Debug, Clone, Copy)]
pub(super) struct ErrorMark(u64);

impl Pipeline {
    pub(super) fn new(clock: QueryClock) -> Pipeline {
        Pipeline {
            to_server: BytesMut::new(),
            unsynced: false,
            copy_in: false,
            failed: false,
            segment_errors: 0,
            unnamed_on: None,
            clock,
        }
    }

    /// Messages for the attached server(s), sent at the next flush.
    pub(super) fn for_server(&mut self) -> &mut BytesMut {
        spare::ensure(&mut self.to_server)
    }

    /// The client is idle: the queue's buffer, if empty, goes back to the
    /// thread's spares.
    pub(super) fn give_back_buffer(&mut self) {
        spare::give_if_empty(&mut self.to_server);
    }

    /// The messages queued for the server, unsent.
    pub(super) fn queued(&self) -> &[u8] {
        &self.to_server
    }

    /// The clock timing requests.
    pub(super) fn clock(&self) -> &QueryClock {
        &self.clock
    }

    /// The same, to time a request.
    pub(super) fn clock_mut(&mut self) -> &mut QueryClock {
        &mut self.clock
    }

    /// A simple query of pgshard's own is queued: it drops the server's
    /// unnamed statement.
    pub(super) fn query(&mut self, sql: &str) {
        self.unnamed_on = None;
        messages::query(spare::ensure(&mut self.to_server), sql);
    }

    /// Extended-protocol messages went to the server, no Sync after them.
    pub(super) fn sent_extended(&mut self) {
        self.unsynced = true;
    }

    /// A Sync went to the server (or the segment it ends was run).
    pub(super) fn synced(&mut self) {
        self.unsynced = false;
    }

    /// Extended-protocol messages went with no Sync after them yet.
    pub(super) fn unsynced(&self) -> bool {
        self.unsynced
    }

    /// The server answered CopyInResponse.
    pub(super) fn copy_in_started(&mut self) {
        self.copy_in = true;
    }

    /// The client ended its COPY data (CopyDone or CopyFail).
    pub(super) fn copy_in_ended(&mut self) {
        self.copy_in = false;
    }

    /// The server is in COPY IN.
    pub(super) fn in_copy_in(&self) -> bool {
        self.copy_in
    }

    /// Something is under way on the server that a ReadyForQuery has not
    /// ended yet: extended messages with no Sync, or COPY IN.
    pub(super) fn in_flight(&self) -> bool {
        self.unsynced || self.copy_in
    }

    /// The running Query/Sync reported an error.
    pub(super) fn failed_at_sync(&mut self) {
        self.failed = true;
    }

    /// ReadyForQuery ended the running Query/Sync: whether it had reported
    /// an error (the next one starts clean).
    pub(super) fn ready(&mut self) -> bool {
        std::mem::take(&mut self.failed)
    }

    /// An error was relayed to the client for the segment it is sending.
    pub(super) fn error_relayed(&mut self) {
        self.segment_errors += 1;
    }

    /// The errors relayed so far, to compare with later.
    pub(super) fn error_mark(&self) -> ErrorMark {
        ErrorMark(self.segment_errors)
    }

    /// An error was relayed since `mark` was taken.
    pub(super) fn errors_since(&self, mark: ErrorMark) -> bool {
        self.segment_errors != mark.0
    }

    /// The client's unnamed statement was parsed on server `id`.
    pub(super) fn unnamed_parsed_on(&mut self, id: u64) {
        self.unnamed_on = Some(id);
    }

    /// Server `id` holds the client's unnamed statement.
    pub(super) fn unnamed_is_on(&self, id: u64) -> bool {
        self.unnamed_on == Some(id)
    }

    /// No server holds the client's unnamed statement any more (a simple
    /// query dropped it, or it was parsed where no server saw it).
    pub(super) fn unnamed_dropped(&mut self) {
        self.unnamed_on = None;
    }

    /// Server `id` no longer holds the client's unnamed statement (a
    /// query of pgshard's ran there, or it went back to its pool).
    pub(super) fn unnamed_dropped_on(&mut self, id: u64) {
        if self.unnamed_is_on(id) {
            self.unnamed_on = None;
        }
    }
}

#[cfg(test)]
mod tests;
