//! Binds and segments: the Bind that starts one (for several shards,
//! outside a transaction), and a Bind inside a held segment: routed with
//! its parameters to the shards it names (a split INSERT's parts each to
//! their own), the statement's server name put in, its merge planned when
//! its rows need one.

use std::sync::Arc;

use bytes::BytesMut;

use super::{malformed, no_statement, refused, Segment, MIXED};
use crate::errors::ClientError;
use crate::metrics::RouteKind;
use crate::protocol::frontend::{Bind, BindView, Frame};
use crate::protocol::messages;
use crate::session::statements::Statement;
use crate::session::{End, Session};

impl Session {
    /// A Bind for several shards: held as the start of a segment, which
    /// runs at Sync (inside the client's transaction when there is one,
    /// `segment/in_txn.rs`), with what its rows need: a merge, or one
    /// shard's reply for all when they hold copies.
    pub(in crate::session) fn hold_segment(
        &mut self,
        statement: &Arc<Statement>,
        unnamed: bool,
        bind: &Bind,
        shards: Vec<usize>,
        rewritten: impl FnOnce(&mut BytesMut),
    ) {
        let Some(info) = self.route_info(statement) else {
            return;
        };
        let summary = &info.entry.summary;
        let planned = self
            .bind_merge(statement, summary, bind)
            .and_then(|merge| Ok((merge, self.bind_declare(statement, summary, bind, &shards)?)));
        let (merge, declared) = match planned {
            Ok(planned) => planned,
            Err(error)
                if error.code == crate::protocol::sqlstate::FEATURE_NOT_SUPPORTED
                    && self.finishes_on_coordinator(summary) =>
            {
                self.bind_gathered(statement, bind, error);
                return;
            }
            Err(error) => {
                self.shared.metrics.route(RouteKind::Refused);
                self.refuse(error, false);
                return;
            }
        };
        let writes = crate::session::spanning::writes(summary);
        let copies = router::route::holds_copies(summary, self.cluster.sharding());
        let readable = super::readable(summary, merge.as_ref());
        if let Err(why) = readable {
            // A named portal may be read in parts: the coordinator reads
            // it so when the merge cannot (`session/gather.rs`).
            let in_block = self.status() != crate::protocol::backend::TransactionStatus::Idle
                || self.txn.spans();
            if !bind.portal.is_empty()
                && in_block
                && declared.is_none()
                && self.finishes_on_coordinator(summary)
            {
                self.bind_gathered(statement, bind, refused(why));
                return;
            }
        }
        let mut bytes = BytesMut::new();
        // A DECLARE whose query is rewritten: its shards bind that one.
        let instead = declared.as_ref().and_then(|d| d.instead.clone());
        match &instead {
            Some(instead) => messages::bind(&mut bytes, bind, &instead.name, &bind.result_formats),
            None => rewritten(&mut bytes),
        }
        let held = Held {
            bytes: bytes.freeze(),
            merge,
            writes,
            copies,
            declared: declared.map(|d| d.name),
            readable,
        };
        match &instead {
            Some(instead) => self.hold_bind(instead, false, bind, shards, held),
            None => self.hold_bind(statement, unnamed, bind, shards, held),
        }
    }

    /// Hold a segment that starts with `bind` of `statement` (`unnamed`:
    /// the client's unnamed one) for `shards`, as `held` says.
    pub(in crate::session) fn hold_bind(
        &mut self,
        statement: &Arc<Statement>,
        unnamed: bool,
        bind: &Bind,
        shards: Vec<usize>,
        held: Held,
    ) {
        let mut segment = Segment::start(
            shards.clone(),
            (bind.portal.clone(), held.bytes),
            statement,
            unnamed,
            self.named.protocol.get(b""),
            held.merge.map(|merge| (merge, bind)),
            held.copies,
        );
        segment.declared.extend(held.declared);
        segment.set_readable(&bind.portal, held.readable);
        if held.writes {
            segment.note_writes(&shards);
        }
        self.phase.hold_batch(segment);
    }

    /// A Bind while a segment is held; `Ok(Err)`: the client's error.
    pub(super) async fn segment_bind(
        &mut self,
        segment: &mut Segment,
        frame: Frame,
    ) -> Result<Result<(), ClientError>, End> {
        let Ok(view) = BindView::of(&frame) else {
            return Ok(Err(malformed("Bind")));
        };
        let bind = view.to_bind();
        let unnamed = bind.statement.is_empty();
        let statement = if unnamed {
            segment.unnamed.clone()
        } else {
            self.named.protocol.get(&bind.statement)
        };
        let Some(statement) = statement else {
            return Ok(Err(no_statement(&bind.statement)));
        };
        if self.binds_sql_prepared(&statement) {
            return Ok(Err(refused(&format!(
                "{MIXED}: PREPARE, EXECUTE and DEALLOCATE of SQL-prepared statements must be sent after its Sync"
            ))));
        }
        // An INSERT that names no columns binds the statement with its
        // table's columns written in.
        Ok(match self.columns_statement(&statement, &view).await? {
            Some(rewritten) => self.bind_in_segment(segment, &bind, &frame, &rewritten, false),
            None => self.bind_in_segment(segment, &bind, &frame, &statement, unnamed),
        })
    }

    /// Add the Bind `bind` (its message `frame`) of `statement` to the
    /// segment (`unnamed`: as the unnamed statement).
    fn bind_in_segment(
        &mut self,
        segment: &mut Segment,
        bind: &Bind,
        frame: &Frame,
        statement: &Arc<Statement>,
        unnamed: bool,
    ) -> Result<(), ClientError> {
        let shards = match self.segment_route(statement, bind)? {
            BindRoute::Split => {
                // Split from the frame read in place (checked already).
                let view = BindView::of(frame).map_err(|_| malformed("Bind"))?;
                let split = self.split_bind(statement, &view)?;
                segment.push_split(split, bind.portal.clone());
                return Ok(());
            }
            BindRoute::Shards(Some(shards)) => shards,
            BindRoute::Shards(None) => vec![segment.first_shard()],
        };
        let mut copies = false;
        if let Some(info) = self.route_info(statement) {
            if crate::session::spanning::writes(&info.entry.summary) {
                segment.note_writes(&shards);
            }
            copies = shards.len() > 1
                && router::route::holds_copies(&info.entry.summary, self.cluster.sharding());
        }
        let mut readable = Err(super::IN_PARTS);
        let merge = match self.route_info(statement) {
            Some(info) if shards.len() > 1 => {
                if let Some(declared) =
                    self.bind_declare(statement, &info.entry.summary, bind, &shards)?
                {
                    segment.declared.push(declared.name);
                    if let Some(instead) = declared.instead {
                        // Its shards bind the DECLARE of the rewritten query.
                        let mut bytes = BytesMut::new();
                        messages::bind(&mut bytes, bind, &instead.name, &bind.result_formats);
                        let item = (bind.portal.clone(), bytes.freeze());
                        segment.push_bind(shards, item, &instead, false, None, false);
                        return Ok(());
                    }
                }
                let merge = self
                    .bind_merge(statement, &info.entry.summary, bind)
                    .map_err(|error| self.later_in_segment(&info.entry.summary, error))?;
                readable = super::readable(&info.entry.summary, merge.as_ref());
                merge
            }
            _ => None,
        };
        // The Bind with the server's name for the statement.
        let name_start = bind.portal.len() + 1;
        let name = name_start..name_start + bind.statement.len();
        let server_name: &[u8] = if unnamed { b"" } else { &statement.name };
        let mut bytes = BytesMut::with_capacity(frame.bytes().len() + 16);
        frame.write_renamed(name, server_name, &mut bytes);
        segment.push_bind(
            shards,
            (bind.portal.clone(), bytes.freeze()),
            statement,
            unnamed,
            merge.map(|merge| (merge, bind)),
            copies,
        );
        segment.set_readable(&bind.portal, readable);
        Ok(())
    }

    /// A merge's refusal of a Bind inside a segment: one the coordinator
    /// would finish alone says so.
    fn later_in_segment(
        &self,
        summary: &router::summary::Summary,
        error: ClientError,
    ) -> ClientError {
        match self.finishes_on_coordinator(summary) {
            true if error.code == crate::protocol::sqlstate::FEATURE_NOT_SUPPORTED => {
                crate::session::gather::not_yet(
                    &error,
                    (
                        "after another statement before the Sync",
                        "send a Sync before it",
                    ),
                )
            }
            _ => error,
        }
    }

    /// Where a Bind inside a segment goes.
    fn segment_route(
        &mut self,
        statement: &Arc<Statement>,
        bind: &crate::protocol::frontend::Bind,
    ) -> Result<BindRoute, ClientError> {
        let Some(info) = self.route_info(statement) else {
            return Ok(BindRoute::Shards(None));
        };
        let summary = &info.entry.summary;
        if summary.statements.iter().any(|s| {
            matches!(
                s.kind,
                router::summary::StatementKind::Begin
                    | router::summary::StatementKind::Commit
                    | router::summary::StatementKind::Rollback
                    | router::summary::StatementKind::TransactionOther
                    | router::summary::StatementKind::SetShard(_)
                    | router::summary::StatementKind::SetShardingKey(_)
                    | router::summary::StatementKind::Session
            )
        }) {
            return Err(refused(&format!(
                "{MIXED}: transaction control and settings must be sent after its Sync"
            )));
        }
        let params = crate::session::routing::bind_params(bind.values());
        let params = info.params(&params);
        let overrides = self.overrides(&info.overrides);
        let routed = match info
            .entry
            .route(&params, &overrides, self.cluster.sharding())
        {
            Ok(routed) => routed,
            Err(router::route::RouteError::MultiRowInsert { .. })
                if summary.statements.len() == 1
                    && self.shared.config().rewrite.splits_inserts() =>
            {
                return Ok(BindRoute::Split);
            }
            Err(e) => return Err(refused(&e.to_string())),
        };
        // Counted in flight by the segment's first Bind, or refused.
        if let Some(error) = self.bind_hold_refusal(routed.touches_moving) {
            return Err(error);
        }
        Ok(BindRoute::Shards(
            self.routed_to(&info.entry, &routed.route)
                .map(|s| s.into_vec()),
        ))
    }
}

/// How a Bind starts a segment: the Bind to send (with the server's name
/// for the statement), what its rows need, whether it writes, whether its
/// shards hold copies.
pub(in crate::session) struct Held {
    pub bytes: bytes::Bytes,
    pub merge: Option<crate::session::merge::BindMerge>,
    pub writes: bool,
    pub copies: bool,
    /// The cursor a bound DECLARE makes on the shards.
    pub declared: Option<bytes::Bytes>,
    /// Its portal's rows may be read in parts (row-limited Executes), or
    /// why not.
    pub readable: Result<(), &'static str>,
}

/// Where a Bind inside a segment goes.
enum BindRoute {
    /// These shards (`None`: any shard).
    Shards(Option<Vec<usize>>),
    /// A multi-row INSERT whose rows go to several shards: split.
    Split,
}
