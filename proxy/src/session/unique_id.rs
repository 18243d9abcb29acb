//! `pgdog.unique_id()` in a Query: each call replaced by an id of the
//! instance's generator (`unique_ids.rs`) where Postgres would call it once
//! (`router::unique_id::rewrite` says where), and the new text run as the
//! client's, through the usual routing: an id in a VALUES row is a literal
//! key, so single-row INSERTs route on it and multi-row ones split on it.
//! Anywhere else the call is refused (0A000) with the reason.
//!
//! In a Parse (extended protocol) the calls become parameters after the
//! client's (`$n::bigint`), and each Bind of the statement gets fresh ids
//! as its last values (text format), so one server statement serves every
//! execution; a Describe of the statement describes instead its twin, the
//! client's text with literal ids, whose parameters are the client's own.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::unique_id::rewrite::{find, mentions, RewriteError};
use router::unique_id::UniqueIdError;

use super::statements::{IdParams, Statement};
use super::{End, Session};
use crate::errors::ClientError;
use crate::protocol::frontend::{Bind, BindView, Frame, FrontendKind};
use crate::protocol::messages;
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

/// The int8 type's OID: the ids' parameters.
const INT8: u32 = 20;

/// The prefix of the per-client name a statement's describe twin gets.
const DESCRIBE_PREFIX: &[u8] = b"__pgshard_unique_id_";

/// A Parse whose `pgdog.unique_id()` calls became parameters.
pub(super) struct IdParse {
    /// The text the servers prepare, and its parameter types.
    pub query: Bytes,
    pub param_types: Vec<u32>,
    /// The client's text with literal ids, its own parameter types.
    describe_query: Bytes,
    client_types: Vec<u32>,
    client_params: usize,
    ids: usize,
}

impl Session {
    /// A Parse of `query`: `Ok(Some)` when it calls `pgdog.unique_id()`
    /// where a parameter can stand for it, `Err(())` when refused (the
    /// error is queued).
    pub(super) fn unique_id_parse(
        &mut self,
        query: &[u8],
        param_types: &[u32],
    ) -> Result<Option<IdParse>, ()> {
        if !mentions(query) {
            return Ok(None);
        }
        let text = super::sql_text(query);
        let calls = match find(&text) {
            Ok(Some(calls)) => calls,
            Ok(None) | Err(RewriteError::Parse(_)) => return Ok(None),
            Err(why) => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, why.to_string());
                self.refuse(error, false);
                return Err(());
            }
        };
        let client_params = calls.params.max(param_types.len());
        let mut types = param_types.to_vec();
        types.resize(client_params, 0);
        types.extend(std::iter::repeat_n(INT8, calls.len()));
        Ok(Some(IdParse {
            query: Bytes::from(calls.apply_params(&text, client_params)),
            param_types: types,
            describe_query: Bytes::from(calls.apply(&text, &vec![0; calls.len()])),
            client_types: param_types.to_vec(),
            client_params,
            ids: calls.len(),
        }))
    }

    /// Note on `statement` (prepared from `parse.query`) what its Binds
    /// and Describes need.
    pub(super) fn note_id_params(&self, statement: &Statement, parse: IdParse) {
        let describe = self.shared.statements.get_or_insert(
            &parse.describe_query,
            &parse.client_types,
            &self.shared.cache,
            self.cluster.engine(),
        );
        let _ = statement.unique_ids.set(IdParams {
            client_params: parse.client_params,
            ids: parse.ids,
            describe,
        });
    }

    /// A Bind or Describe of a statement whose calls are parameters: the
    /// Bind with fresh ids after the client's values, the Describe of its
    /// describe twin (under a name of the client's own). `None`: refused
    /// (the error is queued).
    pub(super) async fn unique_id_frame(&mut self, frame: Frame) -> Result<Option<Frame>, End> {
        let Some(name) = frame.statement_name().map_err(End::protocol)? else {
            return Ok(Some(frame));
        };
        // `get` remembers the name: the Bind's own lookup after this one
        // costs a comparison.
        let Some(statement) = self.named.protocol.get(&frame.body()[name.clone()]) else {
            return Ok(Some(frame));
        };
        let Some(params) = statement.unique_ids.get() else {
            return Ok(Some(frame));
        };
        let name = Bytes::copy_from_slice(&frame.body()[name]);
        if frame.kind != FrontendKind::Bind {
            let mut twin = DESCRIBE_PREFIX.to_vec();
            twin.extend_from_slice(&name);
            self.named.protocol.remove(&twin);
            let _ = self
                .named
                .protocol
                .insert(Bytes::from(twin.clone()), Arc::clone(&params.describe));
            let mut body = vec![b'S'];
            body.extend_from_slice(&twin);
            body.push(0);
            return Ok(Some(Frame::new(FrontendKind::Describe, &body)));
        }
        if let Some(why) = self.shared.unique_ids.conflict() {
            let error = ClientError::new(
                sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("pgdog.unique_id() is off in this pgshard: {why}"),
            );
            self.refuse(error, false);
            return Ok(None);
        }
        let ids = match self.shared.unique_ids.take(params.ids).await {
            Ok(ids) => ids,
            Err(why) => {
                self.refuse(generator_error(&why), false);
                return Ok(None);
            }
        };
        let view = BindView::of(&frame).map_err(End::protocol)?;
        let mut bind = view.to_bind();
        with_ids(&mut bind, params.client_params, &ids);
        let mut out = BytesMut::new();
        let statement_name = bind.statement.clone();
        let result_formats = bind.result_formats.clone();
        messages::bind(&mut out, &bind, &statement_name, &result_formats);
        Ok(Some(Frame::new(FrontendKind::Bind, &out[5..])))
    }

    /// Forget the describe twin's name of the client's statement `name`.
    pub(super) fn forget_describe_twin(&mut self, name: &[u8]) {
        let mut twin = DESCRIBE_PREFIX.to_vec();
        twin.extend_from_slice(name);
        self.named.protocol.remove(&twin);
    }
}

/// `bind` (of `client_params` values) with `ids` appended as text values.
fn with_ids(bind: &mut Bind, client_params: usize, ids: &[i64]) {
    match bind.param_formats.as_slice() {
        [] | [0] => {}
        [one] => {
            bind.param_formats = vec![*one; client_params];
            bind.param_formats.extend(std::iter::repeat_n(0, ids.len()));
        }
        _ => bind.param_formats.extend(std::iter::repeat_n(0, ids.len())),
    }
    bind.params
        .extend(ids.iter().map(|id| Some(Bytes::from(id.to_string()))));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(formats: &[i16], params: usize) -> Bind {
        Bind {
            portal: Bytes::new(),
            statement: Bytes::new(),
            param_formats: formats.to_vec(),
            params: vec![Some(Bytes::from_static(b"\0\0\0\x01")); params],
            result_formats: Vec::new(),
        }
    }

    #[test]
    fn ids_are_appended_as_text_whatever_the_client_formats() {
        for (formats, expected) in [
            (&[][..], &[][..]),
            (&[0], &[0]),
            (&[1], &[1, 1, 0, 0]),
            (&[1, 0], &[1, 0, 0, 0]),
        ] {
            let mut b = bind(formats, 2);
            with_ids(&mut b, 2, &[7, 8]);
            assert_eq!(b.param_formats, expected, "{formats:?}");
            assert_eq!(b.params.len(), 4);
            assert_eq!(b.params[3].as_deref(), Some(&b"8"[..]));
        }
    }
}
