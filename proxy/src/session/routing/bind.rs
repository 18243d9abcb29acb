//! Routing a Bind on a sharded cluster: where its statement goes with its
//! parameters, or the start of a segment that holds it (and what follows)
//! until Sync when it goes to several shards; before routing a Bind, or a
//! Describe of a statement no Bind precedes, the wait for a move's
//! cutover hold of the shards it touches (`holds.rs`).

use std::sync::Arc;

use bytes::BytesMut;
use router::cache::Lookup;
use router::route::{ParamValue, ParamValues, Route, RouteError, Routed};
use router::summary::{StatementKind, Summary};

use super::is_copy_from;
use crate::errors::ClientError;
use crate::metrics::RouteKind;
use crate::protocol::frontend::BindView;
use crate::protocol::sqlstate;
use crate::session::holds;
use crate::session::statements::Statement;
use crate::session::transaction::{Placement, Target, CROSS_SHARD_TXN};
use crate::session::{End, Session};

impl Session {
    /// Where a Bind of `statement` goes, or `None` when it was answered
    /// (refused, or held for a fan-out at Sync).
    pub(in crate::session) fn route_bind(
        &mut self,
        statement: &Arc<Statement>,
        unnamed: bool,
        bind: &BindView<'_>,
        rewritten: impl FnOnce(&mut BytesMut),
    ) -> Option<Target> {
        self.follow_config();
        let Some(info) = self.route_info(statement) else {
            if self.txn.failed() {
                self.aborted(false);
                return None;
            }
            return Some(Target::Any);
        };
        self.note_schema_change(&info.entry.summary);
        if self.answer_locally(&info.entry.summary, &statement.query, false) {
            return None;
        }
        if let Some(target) = self.bind_cursor_statement(&info.entry.summary, bind) {
            return target;
        }
        self.note_bound(&info.entry.summary, &statement.query);
        let (routed, touches) = self.route_bound(info, bind);
        if let Some(error) = self.bind_hold_refusal(touches) {
            self.shared.metrics.route(RouteKind::Refused);
            self.refuse(error, false);
            return None;
        }
        let routed = match routed {
            Ok(routed) => routed,
            Err(err) => {
                let bound = (statement, unnamed, bind);
                return self.bind_unrouted(bound, &info.entry.summary, err);
            }
        };
        let shards = self.routed_to(&info.entry, &routed.route);
        let shards = self.declared_on_one(&info.entry.summary, shards);
        if let Some(error) =
            self.insert_select_error(&info.entry.summary, &statement.query, shards.as_deref())
        {
            let bound = (statement, &bind.to_bind());
            match self.bind_moved_rows(bound, None, &info.entry.summary, error) {
                Ok(target) => return target,
                Err(error) => {
                    self.shared.metrics.route(RouteKind::Refused);
                    self.refuse(error, false);
                    return None;
                }
            }
        }
        if is_copy_from(&info.entry.summary)
            && shards.as_ref().is_some_and(|s| s.len() > 1)
            && !self.plan.awaiting_server()
        {
            self.bind_copy(&statement.query);
            return None;
        }
        // A named portal may be fetched across Syncs, as asyncpg and
        // pgjdbc's fetch size do: it needs the transaction block.
        let needs_block = !bind.portal.is_empty()
            || needs_transaction_block(&info.entry.summary, &statement.query);
        match self.place(shards.as_deref(), needs_block) {
            Placement::Send(target) => Some(target),
            Placement::Refuse => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN);
                self.refuse(error, false);
                None
            }
            // Held until Sync, then run on every shard: inside the
            // transaction when there is one (`segment/in_txn.rs`).
            Placement::FanOut | Placement::FanOutInTxn => {
                let shards = super::all_of(shards);
                self.hold_segment(statement, unnamed, &bind.to_bind(), shards, rewritten);
                None
            }
        }
    }

    /// A Bind of `statement` (`summary`) the router did not route (`err`):
    /// run another way (a COPY, a split INSERT, a row move, gathered and
    /// finished on the coordinator) or refused.
    fn bind_unrouted(
        &mut self,
        (statement, unnamed, bind): (&Arc<Statement>, bool, &BindView<'_>),
        summary: &Summary,
        err: RouteError,
    ) -> Option<Target> {
        let alone = summary.statements.len() == 1;
        let config = self.shared.config();
        match err {
            RouteError::CopyIntoSharded { .. } if alone && !self.plan.awaiting_server() => {
                self.bind_copy(&statement.query);
                None
            }
            RouteError::MultiRowInsert { .. } if alone && config.rewrite.splits_inserts() => {
                self.route_split_bind(statement, unnamed, bind)
            }
            RouteError::ShardingKeyChange { .. } if alone && config.rewrite.moves_rows() => {
                self.route_move_bind(statement, &bind.to_bind())
            }
            err => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string());
                if crate::session::carry::gathered_refusal(&err)
                    && self.finishes_on_coordinator(summary)
                {
                    return self.bind_gathered(statement, &bind.to_bind(), error);
                }
                let error = match self.bind_moved_rows(
                    (statement, &bind.to_bind()),
                    Some(&err),
                    summary,
                    error,
                ) {
                    Ok(target) => return target,
                    Err(error) => error,
                };
                self.shared.metrics.route(RouteKind::Refused);
                self.refuse(error, false);
                None
            }
        }
    }

    /// Before a Bind is routed: while a move is under way, wait for the
    /// cutover's hold of the shards it touches to be let go (routing it
    /// again after each wait), then count it in flight; so that routing
    /// it next finds it counted. `false`: it waited too long, and the
    /// client has its error.
    pub(in crate::session) async fn wait_bind_hold(
        &mut self,
        statement: &Statement,
        bind: &BindView<'_>,
    ) -> Result<bool, End> {
        self.wait_hold(statement, |session, info| session.route_bound(info, bind).1)
            .await
    }

    /// Before a Describe of `statement` that no Bind precedes: the same
    /// wait when its text alone routes it to one shard that is moving (a
    /// table of the moving shard's family, a literal key). Such a Describe
    /// would otherwise reach the source while the cutover has its tables
    /// moved aside (42P01). One its text does not route to one shard (its
    /// key a parameter) goes to any database, where the table's schema
    /// is, and does not wait.
    pub(in crate::session) async fn wait_describe_hold(
        &mut self,
        statement: &Statement,
    ) -> Result<bool, End> {
        self.wait_hold(statement, |session, info| {
            let params = info.params(&[]);
            let overrides = session.overrides(&info.overrides);
            let sharding = session.cluster.sharding();
            let routed = info.entry.route(&params, &overrides, sharding);
            matches!(
                routed,
                Ok(Routed {
                    route: Route::Shard(_),
                    touches_moving: true,
                    ..
                })
            )
        })
        .await
    }

    /// The wait of [`Self::wait_bind_hold`], with `touches` saying whether
    /// the statement, routed as the session's config is now, touches a
    /// moving shard.
    async fn wait_hold(
        &mut self,
        statement: &Statement,
        touches: impl Fn(&Session, &Lookup) -> bool,
    ) -> Result<bool, End> {
        loop {
            self.follow_config();
            if !self.cluster.sharding().moving() {
                return Ok(true);
            }
            let Some(info) = self.route_info(statement) else {
                return Ok(true);
            };
            let touches = touches(self, info);
            match self.pass_hold(touches).await? {
                holds::Pass::Go => return Ok(true),
                holds::Pass::Again => continue,
                holds::Pass::TimedOut(error) => {
                    self.shared.metrics.route(RouteKind::Refused);
                    self.refuse(error, false);
                    self.pipeline.sent_extended();
                    return Ok(false);
                }
            }
        }
    }

    /// Where the statement of `info` goes with this Bind's parameters and
    /// the session's overrides, and whether that touches a moving logical
    /// shard (`holds.rs`).
    pub(in crate::session) fn route_bound(
        &self,
        info: &Lookup,
        bind: &BindView<'_>,
    ) -> (Result<Routed, RouteError>, bool) {
        let bind_params = bind_params(bind.values());
        let params = info.params(&bind_params);
        let overrides = self.overrides(&info.overrides);
        let routed = info
            .entry
            .route(&params, &overrides, self.cluster.sharding());
        let touches = holds::touches(&routed, &info.entry.summary, self.cluster.sharding());
        (routed, touches)
    }
}

/// A Bind's parameter values (format, value; `None` is NULL) as the router
/// takes them: inline, without allocating, up to 8.
pub(crate) fn bind_params<'a>(
    values: impl Iterator<Item = (i16, Option<&'a [u8]>)>,
) -> ParamValues<'a> {
    values
        .map(|(format, value)| match value {
            None => ParamValue::Null,
            Some(bytes) if format == 1 => ParamValue::Binary(bytes),
            Some(bytes) => ParamValue::Text(bytes),
        })
        .collect()
}

/// A statement that fails outside a transaction block, or whose effect
/// must last as long as the transaction: SAVEPOINT, RELEASE, ROLLBACK TO
/// (and the rest of [`StatementKind::TransactionOther`]), DECLARE CURSOR,
/// NOTIFY and `pg_notify()`.
pub(super) fn needs_transaction_block(summary: &Summary, sql: &[u8]) -> bool {
    // A notification is sent when its transaction commits, and never
    // after a rollback: it runs inside the client's transaction.
    if notifies(summary, sql) {
        return true;
    }
    match summary.statements.as_slice() {
        [only] if only.kind == StatementKind::TransactionOther => true,
        // DECLARE CURSOR is summarized as an `Other` statement.
        [only] if only.kind == StatementKind::Other => {
            let sql = crate::session::sql_text(sql);
            let [first] = crate::session::session_effects::leading_words::<1>(&sql);
            first.eq_ignore_ascii_case("DECLARE")
        }
        _ => false,
    }
}

/// Whether a statement string (`sql`) sends a notification: a NOTIFY
/// alone (summarized as an `Other` statement) or a `pg_notify()` call.
pub(super) fn notifies(summary: &Summary, sql: &[u8]) -> bool {
    let pg_notify = |call: &router::summary::Call| {
        call.name.eq_ignore_ascii_case("pg_notify")
            && call.schema.as_deref().is_none_or(|s| s == "pg_catalog")
    };
    let notify = match summary.statements.as_slice() {
        [only] if only.kind == StatementKind::Other => {
            let sql = crate::session::sql_text(sql);
            let [first] = crate::session::session_effects::leading_words::<1>(&sql);
            first.eq_ignore_ascii_case("NOTIFY")
        }
        _ => false,
    };
    notify
        || summary
            .statements
            .iter()
            .flat_map(|s| &s.calls)
            .any(pg_notify)
}
