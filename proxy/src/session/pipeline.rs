//! What is in flight between a client and its servers: the bytes queued
//! for the server, whether extended-protocol messages went with no Sync
//! after them, whether the server is in COPY IN, whether the running
//! Query/Sync already reported an error, the errors relayed for the
//! segment the client is sending, which server holds the client's unnamed
//! statement, and the clock timing requests.

use bytes::BytesMut;

use super::query_clock::QueryClock;

/// A session's traffic in flight.
pub(super) struct Pipeline {
    /// Messages for the attached server(s), sent at the next flush.
    pub(super) to_server: BytesMut,
    /// Extended-protocol messages were sent with no Sync after them yet.
    pub(super) unsynced: bool,
    /// The server is in COPY IN.
    pub(super) copy_in: bool,
    /// The running Query/Sync has already reported an error.
    pub(super) failed: bool,
    /// ErrorResponses relayed to the client for the segment it is sending
    /// (after its last Sync): the rest of that segment is to be skipped.
    pub(super) segment_errors: u64,
    /// The server connection (id) that holds the client's unnamed
    /// statement: the last Parse of it went there, and no simple query
    /// (which drops it) followed. Elsewhere it is parsed again first.
    pub(super) unnamed_on: Option<u64>,
    /// Times requests for the query histogram and the slow-query log.
    pub(super) clock: QueryClock,
}

impl Pipeline {
    pub(super) fn new(clock: QueryClock) -> Pipeline {
        Pipeline {
            to_server: BytesMut::with_capacity(8 * 1024),
            unsynced: false,
            copy_in: false,
            failed: false,
            segment_errors: 0,
            unnamed_on: None,
            clock,
        }
    }
}
