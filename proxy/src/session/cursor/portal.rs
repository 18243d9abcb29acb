//! Cursors in the extended protocol: a DECLARE bound for several shards
//! (its shards bind the DECLARE with the rewritten query when the merge
//! needs hidden columns); a bound FETCH, MOVE, CLOSE or CLOSE ALL of a
//! cursor pgshard answers ([`CursorPortal`], psycopg's named cursors send
//! them so); and a Describe, Execute or Close naming a merged cursor or
//! portal itself (a cursor is a portal too).

use std::sync::Arc;

use bytes::Bytes;
use router::summary::{CursorEffect, Summary};

use super::{cursor_effect, refusal, Ask, Follow, Use};
use crate::errors::ClientError;
use crate::protocol::frontend::{Bind, BindView, Frame, FrontendKind, FrontendMessage, Named};
use crate::protocol::messages;
use crate::session::reply_plan::{self, Step};
use crate::session::statements::Statement;
use crate::session::transaction::{Placement, Target, CROSS_SHARD_TXN};
use crate::session::{End, Session};

/// Why a FETCH of a merged cursor cannot have binary results.
const BINARY_FETCH: &str = "a FETCH of a cursor over several shards with binary results is not supported: its rows are merged from the shards' text FETCHes; fetch it with text results";

/// A merged cursor a Bind of DECLARE makes.
pub(in crate::session) struct Declared {
    pub name: Bytes,
    /// The statement its shards bind instead (its query rewritten).
    pub instead: Option<Arc<Statement>>,
}

/// A bound FETCH, MOVE, CLOSE or CLOSE ALL pgshard answers: its portal's
/// Describe, Execute and Close are answered here until the next Parse,
/// Bind or Sync.
#[derive(Debug, Clone)]
pub(in crate::session) struct CursorPortal {
    portal: Bytes,
    /// The merged cursor it uses (none for CLOSE ALL).
    cursor: Bytes,
    using: Option<Use>,
    /// It was executed: an Execute again finds nothing more to do.
    done: bool,
}

impl Session {
    /// A Bind of a statement that uses a cursor pgshard knows: where it
    /// goes, or `None` when it is answered here (or refused).
    pub(in crate::session) fn bind_cursor_statement(
        &mut self,
        summary: &Summary,
        bind: &BindView<'_>,
    ) -> Option<Option<Target>> {
        let portal = bind.portal;
        let effect = cursor_effect(summary)?;
        let cursor = match effect {
            CursorEffect::Close(Some(name)) | CursorEffect::Fetch { name, .. } => {
                Bytes::copy_from_slice(name.as_bytes())
            }
            _ => Bytes::new(),
        };
        let using = match self.follow_cursor(effect)? {
            Follow::Shard(shard) => {
                return Some(match self.place(Some(&[shard]), false) {
                    Placement::Send(target) => Some(target),
                    _ => {
                        self.refuse(refusal(CROSS_SHARD_TXN), false);
                        None
                    }
                })
            }
            Follow::Refuse(error) => {
                self.refuse(error, false);
                return Some(None);
            }
            Follow::Merged(Use::Read(Ask::Fetch { .. }))
                if bind.to_bind().result_formats.contains(&1) =>
            {
                self.refuse(refusal(BINARY_FETCH), false);
                return Some(None);
            }
            Follow::Merged(Use::Read(Ask::Fetch { rows, .. })) => Some(Use::Read(Ask::Fetch {
                rows,
                describe: false,
            })),
            Follow::Merged(using) => Some(using),
            Follow::CloseAll => None,
        };
        self.local_reply(messages::bind_complete);
        self.phase.bind_cursor(CursorPortal {
            portal: Bytes::copy_from_slice(portal),
            cursor,
            using,
            done: false,
        });
        Some(None)
    }

    /// A message while a bound cursor statement's portal is answered
    /// here; whether it was handled (any other ends that portal).
    pub(in crate::session) async fn on_cursor_portal(
        &mut self,
        frame: &Frame,
    ) -> Result<bool, End> {
        let Some(portal) = self.phase.cursor_portal().cloned() else {
            return Ok(false);
        };
        let message = match frame.kind {
            FrontendKind::Describe | FrontendKind::Execute | FrontendKind::Close => {
                FrontendMessage::decode(frame).ok()
            }
            FrontendKind::Flush => return Ok(true),
            _ => None,
        };
        let fetches = matches!(portal.using, Some(Use::Read(Ask::Fetch { .. })));
        match message {
            Some(FrontendMessage::Describe {
                kind: Named::Portal,
                name,
            }) if name == portal.portal => {
                if fetches {
                    let ask = Use::Read(Ask::Describe);
                    self.use_merged(&portal.cursor, ask, false).await?;
                } else {
                    self.local_reply(messages::no_data);
                }
            }
            Some(FrontendMessage::Execute {
                portal: name,
                max_rows,
            }) if name == portal.portal => {
                self.execute_cursor_portal(portal, max_rows).await?;
            }
            Some(FrontendMessage::Close {
                kind: Named::Portal,
                name,
            }) if name == portal.portal => {
                self.phase.end_portal();
                self.local_reply(messages::close_complete);
            }
            _ => {
                self.phase.end_portal();
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn execute_cursor_portal(
        &mut self,
        portal: CursorPortal,
        max_rows: i32,
    ) -> Result<(), End> {
        if let Some(current) = self.phase.cursor_portal_mut() {
            current.done = true;
        }
        if max_rows != 0 && matches!(portal.using, Some(Use::Read(_))) {
            let error = refusal("an Execute with a row limit of a FETCH or MOVE statement of a cursor over several shards is not supported: Execute it whole (FETCH's count is its limit)");
            self.local_error(error, false);
            return Ok(());
        }
        let tag = match (portal.done, portal.using) {
            (false, Some(using)) => return self.use_merged(&portal.cursor, using, false).await,
            (false, None) => {
                self.close_all(false).await?;
                return Ok(());
            }
            (true, Some(Use::Read(Ask::Move { .. }))) => "MOVE 0",
            (true, Some(Use::Read(_))) => "FETCH 0",
            (true, None) => "CLOSE CURSOR ALL",
            (true, _) => "CLOSE CURSOR",
        };
        self.local_tag(tag, false);
        Ok(())
    }

    /// A Describe, Execute or Close of a portal that is a cursor pgshard
    /// knows: a merged one's answered here, a one-shard one's sent to its
    /// shard (a WITH HOLD cursor's pinned server); whether it was one.
    pub(in crate::session) async fn on_known_portal(&mut self, frame: &Frame) -> Result<bool, End> {
        let portal_message = matches!(
            frame.kind,
            FrontendKind::Describe | FrontendKind::Execute | FrontendKind::Close
        );
        if self.portals.cursors.is_empty() || !portal_message {
            return Ok(false);
        }
        let (name, using, terminals) = match FrontendMessage::decode(frame) {
            Ok(FrontendMessage::Describe {
                kind: Named::Portal,
                name,
            }) => (name, Use::Read(Ask::Describe), reply_plan::DESCRIBE),
            Ok(FrontendMessage::Execute { portal, max_rows }) => {
                let rows = u64::try_from(max_rows).unwrap_or(0);
                (
                    portal,
                    Use::Read(Ask::Execute { rows }),
                    reply_plan::EXECUTE,
                )
            }
            Ok(FrontendMessage::Close {
                kind: Named::Portal,
                name,
            }) => (name, Use::CloseMessage, reply_plan::CLOSE),
            _ => return Ok(false),
        };
        if let Some(shard) = self.portals.cursors.shard_of(&name) {
            if using == Use::CloseMessage {
                self.portals.cursors.forget(&name);
            }
            if self
                .ensure_server_or_reply(Target::Shard(shard), false)
                .await?
            {
                self.pipeline.sent_extended();
                self.put_frame(frame);
                self.plan.push(Step::forward(terminals));
            }
            return Ok(true);
        }
        if !self.portals.cursors.is_merged(&name) {
            return Ok(false);
        }
        self.use_merged(&name, using, false).await?;
        Ok(true)
    }

    /// A DECLARE bound for several shards: the merged cursor it makes
    /// (remembered now; a failed segment forgets it) and the statement its
    /// shards bind instead when its query is rewritten; `Err`: refused.
    pub(in crate::session) fn bind_declare(
        &mut self,
        statement: &Statement,
        summary: &Summary,
        bind: &Bind,
        shards: &[usize],
    ) -> Result<Option<Declared>, ClientError> {
        let Some(CursorEffect::Declare { name, options }) = cursor_effect(summary) else {
            return Ok(None);
        };
        let name = Bytes::copy_from_slice(name.as_bytes());
        let sql = String::from_utf8_lossy(&statement.query);
        let locking = summary.statements.iter().any(|s| s.locking);
        let bind_of = (bind, statement.param_types.as_slice());
        let planned = (shards.to_vec(), Some(bind_of));
        let (merged, shard_sql) = self.merged_cursor(&sql, &name, *options, locking, planned)?;
        self.portals
            .cursors
            .put_merged(name.clone(), Box::new(merged));
        let instead = shard_sql.map(|sql| {
            self.shared.statements.get_or_insert(
                &Bytes::from(sql),
                &statement.param_types,
                &self.shared.cache,
                self.cluster.engine(),
            )
        });
        Ok(Some(Declared { name, instead }))
    }
}
