//! Routing inside a session on a sharded cluster: each statement is looked
//! up in the AST cache, routed by the router, and sent to the shard it picks;
//! BEGIN waits for the first routable statement; keyless statements fan out;
//! a string whose statements go to different shards runs one statement at
//! a time (`query_string.rs`).
//!
//! What the client's transaction allows is `transaction.rs`'s to say;
//! statements answered without a server are `local.rs`'s.

use std::sync::atomic::Ordering;

use bytes::BytesMut;
use router::cache::{Entry, Lookup, LookupError};
use router::route::{Overrides, Route, RouteError};
use router::summary::{CursorEffect, StatementKind, Summary};

mod bind;

pub(crate) use bind::bind_params;
use bind::needs_transaction_block;

use super::dispatch::{Dispatch, Shards};
use super::fan_out::{Reply, Scope};
use super::holds::Held;
use super::merge::Rows;
use super::reply_plan::Step;
use super::statements::Statement;
use super::transaction::{Fit, Placement, ServerView, Target, CROSS_SHARD_TXN};
use super::{End, Session};
use crate::errors::ClientError;
use crate::metrics::RouteKind;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::Named;
use crate::protocol::messages;
use crate::protocol::sqlstate;

/// The shards of a fan-out (a route to any shard, `None`, has none).
fn all_of(shards: Option<Shards>) -> Vec<usize> {
    shards.map(Shards::into_vec).unwrap_or_default()
}

impl Session {
    /// The cluster has more than one database: statements need routing.
    pub(super) fn sharded(&self) -> bool {
        !self.cluster.sharding().is_trivial()
    }

    /// The overrides in force for this statement: comment ones win.
    pub(super) fn overrides(&self, from_comments: &Overrides) -> Overrides {
        Overrides {
            shard: from_comments.shard.or(self.routing.overrides().shard),
            sharding_key: from_comments
                .sharding_key
                .clone()
                .or_else(|| self.routing.overrides().sharding_key.clone()),
        }
    }

    /// The cache's entry for a simple query's text: first as a new text of
    /// one of the templated statements this session ran last (matched
    /// against their keys, without the shared map: `AstCache::lookup_like`),
    /// else from the shared map.
    pub(super) fn lookup(&mut self, sql: &str) -> Result<Lookup, LookupError> {
        self.routing
            .lookup(&self.shared.cache, sql, self.cluster.engine())
    }

    /// Route a simple query on a sharded cluster; `known` is its cache
    /// lookup when the caller made it already.
    pub(super) async fn route_query(
        &mut self,
        frame_sql: &str,
        known: Option<Lookup>,
    ) -> Result<Dispatch, End> {
        self.follow_config();
        let lookup = match known.map_or_else(|| self.lookup(frame_sql), Ok) {
            Ok(lookup) => lookup,
            // Postgres gives the client its own syntax error.
            Err(_) => return Ok(Dispatch::Send(Target::Any)),
        };
        let summary = &lookup.entry.summary;
        // A statement that reads views is routed as their queries.
        match self.expanded(summary, frame_sql) {
            Ok(Some(text)) => return Box::pin(self.route_query(&text, None)).await,
            Ok(None) => {}
            Err(error) => return Ok(self.refused(error)),
        }
        self.note_schema_change(summary);
        if router::route::unseen_table(summary, self.cluster.sharding()).is_some() {
            self.look_up_unseen(summary).await;
        }
        // Transaction control and pgdog settings are answered here, as in
        // the extended protocol.
        if self.answer_locally(summary, frame_sql.as_bytes(), true) {
            return Ok(Dispatch::Done);
        }
        if let Some(error) = self.sql_prepared_elsewhere(summary) {
            return Ok(self.refused(error));
        }
        if let Some(done) = self.spanning_statement(summary, frame_sql).await? {
            return Ok(done);
        }
        if let Some(done) = self.cursor_query(summary).await? {
            return Ok(done);
        }
        let params = lookup.params(&[]);
        let overrides = self.overrides(&lookup.overrides);
        let routed = match self.route_holding(&lookup, &params, &overrides).await? {
            Held::Routed(routed) => routed,
            Held::Unrouted(err) => {
                return Box::pin(self.unrouted_query(err, summary, frame_sql)).await
            }
            Held::TimedOut(error) => return Ok(self.refused(error)),
        };
        if self.cuts_rows(summary, frame_sql) {
            return Box::pin(self.carry_query(frame_sql, None)).await;
        }
        let shards = self.routed_to(&lookup.entry, &routed.route);
        if let Some(error) =
            self.insert_select_error(summary, frame_sql.as_bytes(), shards.as_deref())
        {
            return Box::pin(self.refused_moving(frame_sql, summary, error)).await;
        }
        if let Some(CursorEffect::Declare { .. }) = super::cursor::cursor_effect(summary) {
            return Box::pin(self.declare_query(summary, frame_sql, shards)).await;
        }
        if is_copy_from(summary) && shards.as_ref().is_some_and(|s| s.len() > 1) {
            // An omnisharded table's copies each get every row.
            return Box::pin(self.copy_sharded(frame_sql)).await;
        }
        if shards.as_ref().is_some_and(|s| s.len() > 1) && summary.statements.len() > 1 {
            return Box::pin(self.query_string(summary, frame_sql)).await;
        }
        let needs_block = needs_transaction_block(summary, frame_sql.as_bytes());
        match self.place(shards.as_deref(), needs_block) {
            Placement::Send(target) => Ok(Dispatch::Send(target)),
            Placement::Refuse => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN);
                self.refuse(error, true);
                Ok(Dispatch::Done)
            }
            Placement::FanOut => {
                Box::pin(self.fan_out_query(&lookup, frame_sql, all_of(shards), false)).await
            }
            Placement::FanOutInTxn => {
                Box::pin(self.fan_out_query(&lookup, frame_sql, all_of(shards), true)).await
            }
        }
    }

    /// A simple query the router did not route: run a way pgshard has for it, else refuse it.
    async fn unrouted_query(
        &mut self,
        err: RouteError,
        summary: &Summary,
        frame_sql: &str,
    ) -> Result<Dispatch, End> {
        let one = summary.statements.len() == 1;
        if let Some(error) = self.hold_row_split(&err, summary).await? {
            return Ok(self.refused(error));
        }
        match err {
            RouteError::MultiRowInsert { .. }
                if one && self.shared.config().rewrite.splits_inserts() =>
            {
                self.split_insert(frame_sql).await
            }
            RouteError::CopyIntoSharded { .. } if one => self.copy_sharded(frame_sql).await,
            RouteError::ShardingKeyChange { .. }
                if one && self.shared.config().rewrite.moves_rows() =>
            {
                self.move_row_query(frame_sql, &summary.statements[0]).await
            }
            RouteError::InsertWithoutKey { .. }
                if one && summary.statements[0].insert_without_columns =>
            {
                self.route_with_columns(err, frame_sql).await
            }
            // With a column-only entry, the table's columns say whether it
            // has the key column.
            RouteError::UnknownTableWrite {
                statement: "INSERT",
                ..
            } if one
                && summary.statements[0].insert_without_columns
                && self.cluster.sharding().unlisted_by_columns =>
            {
                self.route_with_columns(err, frame_sql).await
            }
            RouteError::StatementsOnDifferentShards { .. } => {
                self.query_string(summary, frame_sql).await
            }
            ref e if self.dml_with(summary) => self.dml_with_routed(frame_sql, summary, e).await,
            ref e if self.moves_rows(e, summary, frame_sql) => self.move_rows(frame_sql, e).await,
            ref err if self.carries(err, summary) => self.carry_query(frame_sql, Some(err)).await,
            err => {
                let gathers =
                    super::carry::gathered_refusal(&err) && self.finishes_on_coordinator(summary);
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string());
                match gathers {
                    true => self.gather_query(frame_sql, error, false).await,
                    false => Ok(self.refused(error)),
                }
            }
        }
    }

    /// An INSERT that names no columns routed again with the table's
    /// columns written in, or refused with `err` when they cannot be.
    async fn route_with_columns(
        &mut self,
        err: RouteError,
        frame_sql: &str,
    ) -> Result<Dispatch, End> {
        match self.insert_with_columns(frame_sql).await? {
            Some(sql) => match Box::pin(self.route_query(&sql, None)).await? {
                Dispatch::Send(target) => Ok(Dispatch::Rewritten(target, sql)),
                other => Ok(other),
            },
            None => Ok(self.refused(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                err.to_string(),
            ))),
        }
    }

    /// A simple query on several shards: its EXPLAIN lines or row merge,
    /// then the fan-out.
    async fn fan_out_query(
        &mut self,
        lookup: &Lookup,
        frame_sql: &str,
        shards: Vec<usize>,
        in_txn: bool,
    ) -> Result<Dispatch, End> {
        let summary = &lookup.entry.summary;
        let explained =
            super::merge::explain_rows(summary, frame_sql, &shards, self.cluster.sharding());
        let rows = match explained {
            Ok(Some((sql, lines))) => Ok((sql.map(|s| (s, false)), Reply::Concat(lines))),
            Ok(None) if is_copy_to(summary) => {
                super::merge::copy_out_reply(frame_sql, self.cluster.sharding())
            }
            Ok(None) if router::route::holds_copies(summary, self.cluster.sharding()) => {
                Ok((None, Reply::Copies))
            }
            Ok(None) => {
                super::merge::simple_query_rows(&lookup.entry, frame_sql, self.cluster.sharding())
                    .map(|rows| match rows {
                        Rows::Concatenated => (None, Reply::Concat(Vec::new())),
                        Rows::Merged { sql, request } => {
                            (sql.map(|s| (s, false)), Reply::Merge(request))
                        }
                    })
            }
            Err(error) => Err(error),
        };
        let (sql, reply) = match rows {
            Ok(rows) => rows,
            Err(error)
                if error.code == sqlstate::FEATURE_NOT_SUPPORTED
                    && (self.finishes_on_coordinator(summary) || self.dml_with(summary)) =>
            {
                return self.finish_query(frame_sql, summary, error, in_txn).await;
            }
            Err(error) => return Ok(self.refused(error)),
        };
        let query = match &sql {
            None => shard_request(frame_sql, false),
            Some((sql, binary)) => shard_request(sql, *binary),
        };
        let request = |_: &crate::pool::Pooled, out: &mut BytesMut| out.extend_from_slice(&query);
        // The shards' unnamed statement goes with a simple query (or the
        // Parse of a merged COPY's SELECT).
        self.pipeline.unnamed_dropped();
        if in_txn {
            self.fan_out(&shards, request, reply, Scope::InTxn).await?;
        } else if super::dispatch::atomic_across_shards(summary, frame_sql, self.cluster.sharding())
        {
            self.fan_out_atomic(&shards, request, reply, None).await?;
        } else {
            self.fan_out(&shards, request, reply, Scope::Outside)
                .await?;
        }
        Ok(Dispatch::Done)
    }

    /// Refuse a simple query (counted as refused).
    pub(super) fn refused(&mut self, error: ClientError) -> Dispatch {
        self.shared.metrics.route(RouteKind::Refused);
        self.refuse(error, true);
        Dispatch::Done
    }

    /// Where the transaction lets a routed statement go (counted for the
    /// metrics).
    pub(super) fn place(&mut self, shards: Option<&[usize]>, needs_block: bool) -> Placement {
        let placement = self
            .txn
            .place(shards, needs_block, self.server_view(), || self.any_shard());
        let kind = match placement {
            Placement::Send(Target::Any) => RouteKind::Any,
            Placement::Send(_) => RouteKind::One,
            Placement::FanOut | Placement::FanOutInTxn
                if shards.is_some_and(|s| s.len() >= self.cluster.shards()) =>
            {
                RouteKind::All
            }
            Placement::FanOut | Placement::FanOutInTxn => RouteKind::Several,
            Placement::Refuse => RouteKind::Refused,
        };
        self.shared.metrics.route(kind);
        self.pipeline.clock_mut().routed(kind);
        placement
    }

    /// The attached server, as the transaction sees it.
    pub(super) fn server_view(&self) -> Option<ServerView> {
        let shard = self.attached.shard()?;
        self.attached.main().map(|server| ServerView {
            shard,
            status: server.conn.status(),
            copy_in: self.pipeline.in_copy_in(),
        })
    }

    /// The databases of `entry`'s route, counted in the entry (SHOW
    /// QUERY_CACHE's direct and multi); `None` for [`Route::Any`].
    pub(super) fn routed_to(&self, entry: &Entry, route: &Route) -> Option<Shards> {
        // A notification any shard may send goes to the first, unless a
        // transaction holds a server: those sent one after the other
        // arrive in order (each shard's listening connection is read on
        // its own).
        let notify = || {
            (self.attached.is_none() && bind::notifies(&entry.summary, entry.text.as_bytes()))
                .then(|| smallvec::smallvec![0])
        };
        let shards = self.shards_of(route).or_else(notify);
        entry.stats.routed(shards.as_ref().map_or(1, |s| s.len()));
        shards
    }

    /// The databases of a route; `None` for [`Route::Any`].
    pub(super) fn shards_of(&self, route: &Route) -> Option<Shards> {
        match route {
            Route::Any => None,
            Route::Shard(s) => Some(smallvec::smallvec![*s]),
            Route::Shards(set) => Some(Shards::from_slice(set)),
            Route::All => Some(self.every_database()),
        }
    }

    /// Refuse a statement; inside a transaction, the transaction is over: it
    /// is rolled back on its server and the client sees it aborted.
    pub(super) fn refuse(&mut self, error: ClientError, simple: bool) {
        if self.txn.refuse(self.server_view()) {
            self.pipeline.query("ROLLBACK");
            self.plan.push(Step::injected_query());
        }
        self.local_error(error, simple);
    }

    /// The transaction status the client should see now.
    pub(super) fn client_status(&self, server_status: TransactionStatus) -> TransactionStatus {
        self.txn.status(server_status)
    }

    /// A prepared statement's cache entry, looked up once per statement:
    /// the entry of its views' expansion when it reads views (see
    /// `behind.rs`; one that cannot be expanded keeps its own entry, which
    /// the router refuses).
    pub(super) fn route_info<'s>(&self, statement: &'s Statement) -> Option<&'s Lookup> {
        statement
            .route
            .get_or_init(|| {
                let sql = String::from_utf8_lossy(&statement.query);
                let lookup = self.shared.cache.lookup(&sql, self.cluster.engine()).ok()?;
                match self.expanded(&lookup.entry.summary, &sql) {
                    Ok(Some(text)) => self.shared.cache.lookup(&text, self.cluster.engine()).ok(),
                    _ => Some(lookup),
                }
            })
            .as_ref()
    }

    /// Where a Describe of `statement` goes before any Bind: the shard its
    /// text alone routes to (a table-family name, literal keys, overrides),
    /// else any shard: every shard has the schema of sharded tables.
    pub(super) fn describe_target(&self, statement: &Statement) -> Target {
        let Some(info) = self.route_info(statement) else {
            return Target::Any;
        };
        let params = info.params(&[]);
        let overrides = self.overrides(&info.overrides);
        match info
            .entry
            .route(&params, &overrides, self.cluster.sharding())
        {
            Ok(routed) => match routed.route {
                Route::Shard(shard) => Target::Near(shard),
                _ => Target::Any,
            },
            Err(_) => Target::Any,
        }
    }

    /// Make the attached server fit `target`: keep it, or give it back
    /// (finishing what is in flight) so another can be checked out. Fails
    /// with the client's error when the transaction holds it.
    pub(super) async fn fit_server(&mut self, target: Target, simple: bool) -> Result<bool, End> {
        let Some(attached) = self.server_view() else {
            return Ok(true);
        };
        match self.txn.fit(target, attached) {
            Fit::Keep => Ok(true),
            Fit::Refuse => {
                let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN);
                self.refuse(error, simple);
                Ok(false)
            }
            Fit::Detach => {
                self.detach().await?;
                Ok(true)
            }
            Fit::Switch => match target {
                Target::Shard(shard) => Box::pin(self.switch_main(shard, simple)).await,
                _ => Ok(true),
            },
        }
    }

    /// Finish what the attached (idle) server is doing and give it back.
    pub(super) async fn detach(&mut self) -> Result<(), End> {
        self.settle_main().await?;
        if let Some(server) = self.attached.take_main() {
            self.release(server, false).await;
        }
        Ok(())
    }

    /// A deferred transaction opens on the server just attached: its BEGIN,
    /// then any `SET LOCAL` the client sent before this statement. An error
    /// there reaches the client (the transaction is then aborted on the
    /// server, and the statement fails too).
    pub(super) fn open_deferred(&mut self) {
        if let Some(begin) = self.txn.open() {
            let begin = String::from_utf8_lossy(&begin).into_owned();
            self.pipeline.query(&begin);
            self.plan.push(Step::injected_query_showing_errors());
        }
    }

    /// The shard for [`Target::Any`] when no server is attached.
    pub(super) fn any_shard(&self) -> usize {
        let n = self.cluster.shards().max(1);
        self.shared.any_shard.fetch_add(1, Ordering::Relaxed) % n
    }
}

/// A `COPY ... FROM` (one statement).
fn is_copy_from(summary: &Summary) -> bool {
    matches!(
        summary.statements.as_slice(),
        [statement] if statement.kind == StatementKind::Copy { to: false }
    )
}

/// What the shards of a fan-out are sent: `sql` as a simple query, or,
/// for rows wanted in binary, Parse, Bind (binary results), Describe,
/// Execute and Sync of the unnamed statement.
fn shard_request(sql: &str, binary: bool) -> bytes::Bytes {
    let mut out = BytesMut::new();
    if binary {
        messages::parse(&mut out, b"", sql.as_bytes(), &[]);
        messages::bind_values(&mut out, (b"", b""), &[], &[], &[1]);
        messages::describe(&mut out, Named::Portal, b"");
        messages::execute(&mut out, b"");
        messages::sync(&mut out);
    } else {
        messages::query(&mut out, sql);
    }
    out.freeze()
}

/// A `COPY ... TO` (one statement).
fn is_copy_to(summary: &Summary) -> bool {
    matches!(
        summary.statements.as_slice(),
        [statement] if statement.kind == StatementKind::Copy { to: true }
    )
}
