//! Cursor statements on a sharded cluster, as simple queries or at their
//! Bind: a DECLARE routed by its query (one shard: sent there and
//! remembered; several: declared on each, inside the transaction, or as a
//! WITH HOLD cursor in a transaction of its own per shard, all or none;
//! one whose merge cannot be read in parts is declared on the coordinator
//! over its gathered rows, `session/gather.rs`, and followed there);
//! FETCH, MOVE, CLOSE and `WHERE CURRENT OF` of a cursor pgshard knows
//! follow it (a merged one's are answered here); CLOSE ALL reaches every
//! server that may hold one.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::merge::{MergePlan, Shape};
use router::summary::{CursorEffect, CursorOptions, SessionEffect, Summary};

use super::held::Use;
use super::{declare_refusal, forward, refusal, Ask, Merged, Place, Source};
use crate::errors::ClientError;
use crate::execute::merge::{in_parts, InParts};
use crate::pool::Pooled;
use crate::protocol::frontend::Bind;
use crate::protocol::messages;
use crate::session::dispatch::{Dispatch, Shards};
use crate::session::fan_out::{Reply, Scope};
use crate::session::statements::Statement;
use crate::session::transaction::{Placement, Target, CROSS_SHARD_TXN};
use crate::session::{End, Session};

/// The cursor effect of a statement string's only statement.
pub(in crate::session) fn cursor_effect(summary: &Summary) -> Option<&CursorEffect> {
    match summary.statements.as_slice() {
        [only] => match &only.session {
            Some(SessionEffect::Cursor(effect)) => Some(effect),
            _ => None,
        },
        _ => None,
    }
}

/// Where a statement that uses a known cursor goes.
pub(in crate::session) enum Follow {
    /// The cursor's shard.
    Shard(usize),
    /// pgshard answers it (a merged cursor's FETCH, MOVE or CLOSE).
    Merged(Use),
    /// CLOSE ALL with cursors pgshard knows.
    CloseAll,
    Refuse(ClientError),
}

impl Session {
    /// Where a statement using a cursor pgshard knows goes (`None`: route
    /// it as usual: it names no known cursor).
    pub(in crate::session) fn follow_cursor(&mut self, effect: &CursorEffect) -> Option<Follow> {
        if self.portals.cursors.is_empty() {
            return None;
        }
        let (name, moves) = match effect {
            // A merged cursor's name is known for sure (it ends with its
            // transaction): Postgres's error, before any shard is asked.
            CursorEffect::Declare { name, .. }
                if self.portals.cursors.is_merged(name.as_bytes()) =>
            {
                return Some(Follow::Refuse(ClientError::new(
                    "42P03",
                    format!("cursor \"{name}\" already exists"),
                )));
            }
            CursorEffect::Declare { .. } => return None,
            CursorEffect::Close(None) => return Some(Follow::CloseAll),
            CursorEffect::Close(Some(name)) => (name, None),
            CursorEffect::CurrentOf(name) => (name, None),
            CursorEffect::Fetch {
                name,
                direction,
                count,
                moves,
            } => (name, Some((*direction, *count, *moves))),
        };
        if let Some(shard) = self.portals.cursors.shard_of(name.as_bytes()) {
            if matches!(effect, CursorEffect::Close(_)) {
                self.portals.cursors.forget(name.as_bytes());
            }
            return Some(Follow::Shard(shard));
        }
        if !self.portals.cursors.is_merged(name.as_bytes()) {
            return None;
        }
        Some(match (effect, moves) {
            (CursorEffect::CurrentOf(_), _) => Follow::Refuse(refusal("WHERE CURRENT OF a cursor over several shards is not supported: its current row is the last one merged, which no shard's cursor is positioned on; use the row's key instead")),
            (_, Some((direction, count, moves))) => match forward(direction, count) {
                Ok(rows) if moves => Follow::Merged(Use::Read(Ask::Move { rows })),
                Ok(rows) => Follow::Merged(Use::Read(Ask::Fetch {
                    rows,
                    describe: true,
                })),
                Err(error) => Follow::Refuse(error),
            },
            _ => Follow::Merged(Use::Close),
        })
    }

    /// A simple query that uses a cursor pgshard knows (FETCH, MOVE, CLOSE,
    /// CLOSE ALL, `WHERE CURRENT OF`); `None`: route it as usual.
    pub(in crate::session) async fn cursor_query(
        &mut self,
        summary: &Summary,
    ) -> Result<Option<Dispatch>, End> {
        let Some(effect) = cursor_effect(summary) else {
            return Ok(None);
        };
        let name = match effect {
            CursorEffect::Close(Some(name)) | CursorEffect::Fetch { name, .. } => {
                Bytes::copy_from_slice(name.as_bytes())
            }
            _ => Bytes::new(),
        };
        Ok(Some(match self.follow_cursor(effect) {
            None => return Ok(None),
            Some(Follow::Shard(shard)) => self.cursor_shard_dispatch(shard),
            Some(Follow::Refuse(error)) => self.refused(error),
            Some(Follow::Merged(using)) => {
                Box::pin(self.use_merged(&name, using, true)).await?;
                Dispatch::Done
            }
            Some(Follow::CloseAll) => {
                self.close_all(true).await?;
                Dispatch::Done
            }
        }))
    }

    /// A statement for the one shard its cursor lives on.
    fn cursor_shard_dispatch(&mut self, shard: usize) -> Dispatch {
        match self.place(Some(&[shard]), false) {
            Placement::Send(target) => Dispatch::Send(target),
            _ => self.refused(ClientError::new(
                crate::protocol::sqlstate::FEATURE_NOT_SUPPORTED,
                CROSS_SHARD_TXN,
            )),
        }
    }

    /// CLOSE ALL: run on every server that may hold a cursor of the client
    /// (the transaction's, the pinned ones); every cursor is forgotten.
    pub(in crate::session) async fn close_all(&mut self, simple: bool) -> Result<bool, End> {
        self.settle_main().await?;
        let status = self.status();
        self.plan.drain_local(self.client.out(), status);
        let mut request = BytesMut::new();
        messages::query(&mut request, "CLOSE ALL");
        let mut servers = self.attached.take_all_keeping_writes();
        let mut pinned = self.portals.cursors.unpin_all();
        let mut failure = None;
        for server in servers.iter_mut().map(|(_, s)| s).chain(pinned.iter_mut()) {
            if let Some(error) = self.run_on(server, &request).await? {
                failure.get_or_insert(error);
            }
        }
        for (shard, server) in servers {
            self.attached.attach(shard, server);
        }
        self.portals.cursors.forget_all();
        for server in pinned {
            self.release(server, false).await;
        }
        let failed = failure.is_some();
        match failure {
            Some(error) => {
                self.client.out().extend_from_slice(&error);
                self.pipeline.error_relayed();
                if !simple {
                    self.phase.skip();
                }
            }
            None => messages::command_complete(self.client.out(), "CLOSE CURSOR ALL"),
        }
        if simple {
            let status = self.status();
            messages::ready_for_query(self.client.out(), status);
        }
        self.client.flush().await?;
        Ok(!failed)
    }

    /// A DECLARE routed to `shards` (`None`: any shard can run it, its
    /// query reads no sharded table): sent to one shard and remembered,
    /// or declared on each and merged here.
    pub(in crate::session) async fn declare_query(
        &mut self,
        summary: &Summary,
        sql: &str,
        shards: Option<Shards>,
    ) -> Result<Dispatch, End> {
        let Some(CursorEffect::Declare { name, options }) = cursor_effect(summary) else {
            return Ok(Dispatch::Send(Target::Any));
        };
        let name = Bytes::copy_from_slice(name.as_bytes());
        let (options, locking) = (*options, summary.statements.iter().any(|s| s.locking));
        let shards = match shards {
            Some(shards) if shards.len() > 1 => shards.into_vec(),
            one => {
                let shard = self.declare_on_one(name, options, one.as_deref());
                return Ok(self.cursor_shard_dispatch(shard));
            }
        };
        let in_txn = match self.place(Some(&shards), true) {
            Placement::FanOutInTxn => true,
            // It fails outside a transaction block, as Postgres says.
            Placement::FanOut if !options.hold => return Ok(Dispatch::Send(Target::Any)),
            Placement::FanOut => false,
            _ => {
                let error = refusal(CROSS_SHARD_TXN);
                self.refuse(error, true);
                return Ok(Dispatch::Done);
            }
        };
        let planned = self.merged_cursor(sql, &name, options, locking, (shards, None));
        let (merged, shard_sql) = match planned {
            Ok(planned) => planned,
            // Declared on the coordinator over its gathered rows instead.
            Err(error)
                if error.code == crate::protocol::sqlstate::FEATURE_NOT_SUPPORTED
                    && self.finishes_on_coordinator(summary) =>
            {
                return self.gather_query(sql, error, in_txn).await;
            }
            Err(error) => return Ok(self.refused(error)),
        };
        self.portals
            .cursors
            .put_merged(name.clone(), Box::new(merged));
        let query = shard_query(shard_sql.as_deref().unwrap_or(sql));
        let shards = self.declared_shards(&name);
        let request = |_: &Pooled, out: &mut BytesMut| out.extend_from_slice(&query);
        let errors = self.pipeline.error_mark();
        self.routing.placing_no_write();
        match in_txn {
            true => {
                let reply = Reply::Concat(Vec::new());
                self.fan_out(&shards, request, reply, Scope::InTxn).await?;
            }
            false => {
                // WITH HOLD, outside a transaction: declared in one of its
                // own on each shard (all or none), kept at its COMMIT.
                self.fan_out_atomic(&shards, request, Reply::Concat(Vec::new()), None)
                    .await?;
            }
        }
        if self.pipeline.errors_since(errors) {
            self.portals.cursors.forget(&name);
            self.release_unneeded_pins().await?;
        }
        Ok(Dispatch::Done)
    }

    /// A DECLARE for one shard (`shards`: its route's; none: any shard
    /// runs it): remembered there; the shard.
    pub(in crate::session) fn declare_on_one(
        &mut self,
        name: Bytes,
        options: CursorOptions,
        shards: Option<&[usize]>,
    ) -> usize {
        let shard = match shards {
            Some([shard]) => *shard,
            _ => self.attached.shard().unwrap_or_else(|| self.any_shard()),
        };
        let in_txn = self.txn.active(self.server_view());
        let place = Place::Shard {
            shard,
            hold: options.hold,
            in_txn,
        };
        self.portals.cursors.declare(name, place);
        shard
    }

    /// On a cluster of one database nothing is routed, but a WITH HOLD
    /// cursor is remembered until it is closed, so that its server stays.
    pub(in crate::session) fn note_unsharded_cursor(&mut self, summary: &Summary) {
        match cursor_effect(summary) {
            Some(CursorEffect::Declare { name, options }) if options.hold => {
                let name = Bytes::copy_from_slice(name.as_bytes());
                self.declare_on_one(name, *options, Some(&[0]));
            }
            Some(CursorEffect::Close(Some(name))) => {
                self.portals.cursors.forget(name.as_bytes());
            }
            Some(CursorEffect::Close(None)) => self.portals.cursors.forget_all(),
            _ => {}
        }
    }

    /// [`Session::note_unsharded_cursor`] for a Bind of `statement` (looked
    /// up only when it may be one: DECLARE WITH HOLD leaves state, and
    /// CLOSE matters once a cursor is known).
    pub(in crate::session) fn note_bound_cursor(&mut self, statement: &Statement) {
        if !statement.leaves_state && self.portals.cursors.is_empty() {
            return;
        }
        if let Some(info) = self.route_info(statement) {
            self.note_unsharded_cursor(&info.entry.summary);
        }
    }

    /// The shards of a statement routed to `shards`: a DECLARE for one
    /// shard (or any) is remembered there, and goes there.
    pub(in crate::session) fn declared_on_one(
        &mut self,
        summary: &Summary,
        shards: Option<Shards>,
    ) -> Option<Shards> {
        let Some(CursorEffect::Declare { name, options }) = cursor_effect(summary) else {
            return shards;
        };
        if shards.as_ref().is_some_and(|s| s.len() > 1) {
            return shards;
        }
        let name = Bytes::copy_from_slice(name.as_bytes());
        let shard = self.declare_on_one(name, *options, shards.as_deref());
        Some(smallvec::smallvec![shard])
    }

    /// After a segment ran (`ok`: without error), the merged cursors its
    /// DECLAREs made: kept (one outside a transaction was committed with
    /// its segment), or forgotten.
    pub(in crate::session) async fn segment_declared(
        &mut self,
        declared: Vec<Bytes>,
        ok: bool,
        in_txn: bool,
    ) -> Result<(), End> {
        if declared.is_empty() {
            return Ok(());
        }
        for name in declared {
            match ok {
                true if !in_txn => self.portals.cursors.committed(&name),
                true => {}
                false => {
                    self.portals.cursors.forget(&name);
                }
            }
        }
        self.release_unneeded_pins().await
    }

    fn declared_shards(&self, name: &[u8]) -> Vec<usize> {
        self.portals.cursors.merged_shards(name)
    }

    /// A cursor over `shards` for the DECLARE `sql`, and the DECLARE the
    /// shards run (when its query is rewritten), or why it is refused.
    pub(in crate::session) fn merged_cursor(
        &self,
        sql: &str,
        name: &[u8],
        options: CursorOptions,
        locking: bool,
        (shards, bind): (Vec<usize>, Option<(&Bind, &[u32])>),
    ) -> Result<(Merged, Option<String>), ClientError> {
        if let Some(error) = declare_refusal(options, locking) {
            return Err(error);
        }
        let planned = router::merge::declare(sql, self.cluster.sharding()).map(|p| p.shape);
        let mut plan = match planned {
            None | Some(Shape::Concat) => MergePlan::default(),
            Some(Shape::Merge(plan)) => plan,
            Some(Shape::Refuse(why)) => return Err(refusal(&why.to_string())),
        };
        in_parts(&plan).map_err(refusal)?;
        let window = crate::session::merge::window(&plan, bind.map(|(bind, _)| bind))?;
        let params = match bind {
            Some((bind, types)) => crate::session::merge::bind_text_params(&plan, bind, types)?,
            None => Vec::new(),
        };
        let shard_sql = plan.shard_sql.take();
        let rows = InParts::new(Arc::new(plan), window, params, shards.len());
        let source = Source::Cursor(String::from_utf8_lossy(name).into_owned());
        let merged = Merged {
            shards,
            source,
            rows,
            hold: options.hold,
            in_txn: true,
            broken: false,
            refused: None,
            bytewise: None,
        };
        Ok((merged, shard_sql))
    }
}

/// `sql` as a simple query.
fn shard_query(sql: &str) -> Bytes {
    let mut out = BytesMut::new();
    messages::query(&mut out, sql);
    out.freeze()
}
