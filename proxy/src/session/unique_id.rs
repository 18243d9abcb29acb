//! `pgdog.unique_id()` in a Query: each call replaced by an id of the
//! instance's generator (`unique_ids.rs`) where Postgres would call it once
//! (`router::unique_id::rewrite` says where), and the new text run as the
//! client's, through the usual routing: an id in a VALUES row is a literal
//! key, so single-row INSERTs route on it and multi-row ones split on it.
//! Anywhere else the call is refused (0A000) with the reason.

use router::unique_id::rewrite::{find, mentions, RewriteError};
use router::unique_id::UniqueIdError;

use super::Session;
use crate::errors::ClientError;
use crate::protocol::frontend::Frame;
use crate::protocol::sqlstate;

/// What became of a Query's `pgdog.unique_id()` calls.
pub(super) enum Replaced {
    /// None to replace (or the text does not parse: the server says why).
    Unchanged,
    /// The Query to run instead.
    Query(Frame),
    /// Refused; the error is queued.
    Refused,
}

impl Session {
    /// The Query `sql` with its `pgdog.unique_id()` calls replaced.
    pub(super) async fn replace_unique_ids(&mut self, sql: &[u8]) -> Replaced {
        if !mentions(sql) {
            return Replaced::Unchanged;
        }
        let text = super::sql_text(sql);
        let calls = match find(&text) {
            Ok(Some(calls)) => calls,
            Ok(None) | Err(RewriteError::Parse(_)) => return Replaced::Unchanged,
            Err(why) => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string());
                let _ = self.refused(error);
                return Replaced::Refused;
            }
        };
        if let Some(why) = self.shared.unique_ids.conflict() {
            let error = ClientError::new(
                sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("pgdog.unique_id() is off in this pgshard: {why}"),
            );
            let _ = self.refused(error);
            return Replaced::Refused;
        }
        match self.shared.unique_ids.take(calls.len()).await {
            Ok(ids) => Replaced::Query(Frame::query(&calls.apply(&text, &ids))),
            Err(why) => {
                let _ = self.refused(generator_error(&why));
                Replaced::Refused
            }
        }
    }
}

fn generator_error(why: &UniqueIdError) -> ClientError {
    let code = match why {
        UniqueIdError::BeforeEpoch { .. } => sqlstate::INTERNAL_ERROR,
        UniqueIdError::TimestampOverflow | UniqueIdError::AboveCeiling { .. } => {
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE
        }
    };
    ClientError::new(code, format!("pgdog.unique_id(): {why}"))
}

/// Why a Parse calling `pgdog.unique_id()` is refused.
pub(super) const PREPARED: &str = "pgdog.unique_id() in a prepared statement (the extended \
     protocol's Parse, which most drivers use for queries with parameters) is not supported yet: \
     every execution needs a new id, and pgshard replaces the call only in a simple Query; send \
     it as a simple query (psycopg: conn.execute(..., prepare=False) with no parameters, pgx: \
     QueryExecModeSimpleProtocol), or take ids with a simple SELECT pgdog.unique_id() and bind them";

impl Session {
    /// A Parse of `query` that calls `pgdog.unique_id()` is answered with
    /// an error (`PREPARED`); `true` when it was.
    pub(super) fn refuse_unique_id_parse(&mut self, query: &[u8]) -> bool {
        if !mentions(query) {
            return false;
        }
        match find(&super::sql_text(query)) {
            Ok(None) | Err(RewriteError::Parse(_)) => false,
            Ok(Some(_)) | Err(_) => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, PREPARED);
                self.refuse(error, false);
                true
            }
        }
    }
}
