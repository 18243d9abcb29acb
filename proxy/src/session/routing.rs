//! Routing inside a session on a sharded cluster: each statement is looked
//! up in the AST cache, routed by the router, and sent to the shard it picks;
//! BEGIN waits for the first routable statement; keyless statements fan out.
//!
//! Transactions: a client's `BEGIN` is answered here (the transaction is
//! "deferred") and opened on the shard of the first statement that routes to
//! one. Statements with no data dependency (`SELECT 1`, SET, reads of
//! omnisharded tables, a Describe before the key is known) run meanwhile on
//! any shard, outside the transaction; one of them failing aborts the
//! transaction all the same (status `E`, then 25P02). Statements that need
//! the transaction block (DECLARE, SAVEPOINT, a named portal fetched across
//! Syncs) open it on a shard of their own. Once the transaction is open, a
//! statement routed elsewhere is refused and the transaction is rolled back
//! on its server; the client sees an aborted transaction (status `E`) until it
//! ends it, as Postgres would show after an error.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::cache::Lookup;
use router::route::{Overrides, ParamValue, Route};
use router::summary::{StatementKind, Summary};
use tokio::io::{AsyncRead, AsyncWrite};

use super::params;
use super::plan::Step;
use super::statements::Statement;
use super::{End, Session};
use crate::errors::ClientError;
use crate::protocol::backend::sqlstate;
use crate::protocol::frame::Bind;
use crate::protocol::messages;

/// The client's transaction as pgshard sees it, beyond what the server
/// attached (if any) reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Txn {
    /// Nothing pending here: the attached server's status is the truth.
    #[default]
    None,
    /// BEGIN was answered by pgshard; the text to open it with.
    Deferred(Bytes),
    /// pgshard refused a statement inside the transaction and rolled it back
    /// on its server: everything but COMMIT/ROLLBACK is refused.
    Failed,
}

/// The transaction status a client sees, given its server's.
pub fn client_status(txn: &Txn, server_status: u8) -> u8 {
    match txn {
        Txn::None => server_status,
        Txn::Deferred(_) => b'T',
        Txn::Failed => b'E',
    }
}

/// Where the next statement must run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Any shard (the attached server's, else one picked round-robin),
    /// outside a deferred transaction.
    Any,
    /// This shard; a deferred transaction opens there.
    Shard(usize),
    /// This shard if no transaction holds another, outside a deferred
    /// transaction: a Describe whose tables live there (a family table).
    Near(usize),
}

/// What to do with a simple query.
pub enum Plan {
    /// Answered or refused locally, or already executed (fan-out).
    Done,
    Send(Target),
}

const CROSS_SHARD_TXN: &str = "cross-shard transactions are not supported yet: every statement of a transaction must route to the shard of its first statement (use one sharding key per transaction)";

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    /// The cluster has more than one database: statements need routing.
    pub(super) fn sharded(&self) -> bool {
        !self.sharding.is_trivial()
    }

    /// The overrides in force for this statement: comment ones win.
    pub(super) fn overrides(&self, from_comments: &Overrides) -> Overrides {
        Overrides {
            shard: from_comments.shard.or(self.overrides.shard),
            sharding_key: from_comments
                .sharding_key
                .clone()
                .or_else(|| self.overrides.sharding_key.clone()),
        }
    }

    /// Route a simple query on a sharded cluster.
    pub(super) async fn route_query(&mut self, frame_sql: &str) -> Result<Plan, End> {
        let lookup = match self.state.cache.lookup(frame_sql, self.engine) {
            Ok(lookup) => lookup,
            // Postgres gives the client its own syntax error.
            Err(_) => return Ok(Plan::Send(Target::Any)),
        };
        let summary = &lookup.entry.summary;
        if self.txn == Txn::Failed {
            return Ok(self.in_failed_txn(summary));
        }
        // Transaction control and pgdog settings are answered here, as in
        // the extended protocol.
        match self.local_statement(summary, frame_sql.as_bytes()) {
            Some(Ok(tag)) => {
                self.local_tag(tag, true);
                return Ok(Plan::Done);
            }
            Some(Err(message)) => {
                self.local_error(
                    ClientError::new(sqlstate::INVALID_PARAMETER_VALUE, message),
                    true,
                );
                return Ok(Plan::Done);
            }
            None => {}
        }
        let params = lookup.params(&[]);
        let overrides = self.overrides(&lookup.overrides);
        let routed = lookup.entry.route(&params, &overrides, &self.sharding);
        match routed {
            Err(err) => {
                self.refuse(
                    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string()),
                    true,
                );
                Ok(Plan::Done)
            }
            Ok(routed) => match self.shards_of(&routed.route) {
                None => Ok(Plan::Send(self.block_target(needs_transaction_block(
                    summary,
                    frame_sql.as_bytes(),
                )))),
                Some(shards) if shards.len() == 1 => Ok(Plan::Send(Target::Shard(shards[0]))),
                Some(shards) => {
                    if summary.statements.len() > 1 {
                        self.refuse(ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, "a query string whose statements go to several shards must be sent one statement at a time"), true);
                        return Ok(Plan::Done);
                    }
                    if self.in_txn() {
                        self.refuse(
                            ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN),
                            true,
                        );
                        return Ok(Plan::Done);
                    }
                    let query = {
                        let mut out = BytesMut::new();
                        messages::query(&mut out, frame_sql);
                        out.freeze()
                    };
                    self.fan_out(&shards, |_, out| out.extend_from_slice(&query))
                        .await?;
                    Ok(Plan::Done)
                }
            },
        }
    }

    /// The databases of a route; `None` for [`Route::Any`].
    pub(super) fn shards_of(&self, route: &Route) -> Option<Vec<usize>> {
        match route {
            Route::Any => None,
            Route::Shard(s) => Some(vec![*s]),
            Route::Shards(set) => Some(set.clone()),
            Route::All => Some((0..self.pools.len()).collect()),
        }
    }

    fn in_failed_txn(&mut self, summary: &Summary) -> Plan {
        let ends = matches!(
            summary.statements.as_slice(),
            [only] if matches!(only.kind, StatementKind::Commit | StatementKind::Rollback)
        );
        if ends {
            // Any ROLLBACK pgshard injected is ahead in the plan: this
            // reply follows it.
            self.txn = Txn::None;
            self.end_txn_overrides();
            self.local_tag("ROLLBACK", true);
        } else {
            self.aborted(true);
        }
        Plan::Done
    }

    /// The error for a statement inside a transaction pgshard refused.
    fn aborted(&mut self, simple: bool) {
        self.local_error(
            ClientError::new(
                sqlstate::IN_FAILED_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ),
            simple,
        );
    }

    /// `SET pgdog.shard` (`None`: RESET): its command tag, or why the value
    /// is refused.
    fn apply_shard_override(&mut self, value: Option<&str>) -> Result<&'static str, String> {
        match value.map(|v| v.trim().parse::<usize>()) {
            None => {
                self.overrides.shard = None;
                Ok("RESET")
            }
            Some(Ok(shard)) if shard < self.pools.len() => {
                self.overrides.shard = Some(shard);
                self.overrides_in_txn = self.in_txn();
                Ok("SET")
            }
            Some(_) => Err(format!(
                "invalid value for pgdog.shard: {:?} (this cluster has shards 0 to {})",
                value.unwrap_or_default(),
                self.pools.len().saturating_sub(1)
            )),
        }
    }

    /// `SET pgdog.sharding_key` (`None`: RESET): its command tag.
    fn apply_sharding_key_override(&mut self, value: Option<String>) -> &'static str {
        let tag = if value.is_some() { "SET" } else { "RESET" };
        self.overrides.sharding_key = value;
        self.overrides_in_txn = self.in_txn();
        tag
    }

    /// Overrides set inside a transaction last until it ends.
    pub(super) fn end_txn_overrides(&mut self) {
        if self.overrides_in_txn {
            self.overrides = Overrides::default();
            self.overrides_in_txn = false;
        }
    }

    /// A transaction is open or deferred.
    pub(super) fn in_txn(&self) -> bool {
        self.txn != Txn::None || self.server.as_ref().is_some_and(|s| s.conn.status != b'I')
    }

    pub(super) fn local_tag(&mut self, tag: &str, simple: bool) {
        let mut reply = BytesMut::new();
        messages::command_complete(&mut reply, tag);
        self.plan.push(Step::Local {
            bytes: reply.freeze(),
            ready: simple,
        });
    }

    /// Refuse a statement; inside a transaction, the transaction is over: it
    /// is rolled back on its server and the client sees it aborted.
    pub(super) fn refuse(&mut self, error: ClientError, simple: bool) {
        let open_on_server = self.server.as_ref().is_some_and(|s| s.conn.status != b'I');
        if open_on_server {
            self.unnamed_on = None;
            messages::query(&mut self.to_server, "ROLLBACK");
            self.plan.push(Step::injected_query());
        }
        if open_on_server || self.txn != Txn::None {
            self.txn = Txn::Failed;
        }
        self.local_error(error, simple);
    }

    /// The transaction status the client should see now.
    pub(super) fn client_status(&self, server_status: u8) -> u8 {
        client_status(&self.txn, server_status)
    }

    /// Where a Bind of `statement` goes, or `None` when it was answered
    /// (refused, or held for a fan-out at Sync).
    pub(super) fn route_bind(
        &mut self,
        statement: &Arc<Statement>,
        unnamed: bool,
        bind: &Bind,
        rewritten: impl FnOnce(&mut BytesMut),
    ) -> Option<Target> {
        let Some(info) = self.route_info(statement) else {
            if self.txn == Txn::Failed {
                self.aborted(false);
                return None;
            }
            return Some(Target::Any);
        };
        match self.local_statement(&info.entry.summary, &statement.query) {
            Some(Ok(tag)) => {
                // Answered here: BindComplete now, the rest of the portal's
                // messages until Sync by `Session::local_portal`.
                let mut reply = BytesMut::new();
                messages::bind_complete(&mut reply);
                self.plan.push(Step::Local {
                    bytes: reply.freeze(),
                    ready: false,
                });
                self.local_portal = Some(tag);
                return None;
            }
            Some(Err(message)) => {
                self.local_error(
                    ClientError::new(sqlstate::INVALID_PARAMETER_VALUE, message),
                    false,
                );
                return None;
            }
            None => {}
        }
        if self.txn == Txn::Failed {
            self.aborted(false);
            return None;
        }
        let bind_params = bind_params(bind);
        let params = info.params(&bind_params);
        let overrides = self.overrides(&info.overrides);
        match info.entry.route(&params, &overrides, &self.sharding) {
            Err(err) => {
                self.refuse(
                    ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string()),
                    false,
                );
                None
            }
            Ok(routed) => match self.shards_of(&routed.route) {
                None => Some(self.block_target(
                    !bind.portal.is_empty()
                        || needs_transaction_block(&info.entry.summary, &statement.query),
                )),
                Some(shards) if shards.len() == 1 => Some(Target::Shard(shards[0])),
                Some(shards) => {
                    if self.in_txn() {
                        self.refuse(
                            ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN),
                            false,
                        );
                        return None;
                    }
                    let mut bytes = BytesMut::new();
                    rewritten(&mut bytes);
                    self.batch = Some(super::segment::Segment::start(
                        shards,
                        bind.portal.clone(),
                        bytes.freeze(),
                        statement,
                        unnamed,
                        self.statements.get(b"").cloned(),
                    ));
                    None
                }
            },
        }
    }

    /// Where a statement any shard could run goes. One that needs the
    /// transaction block (`needs_block`: DECLARE, SAVEPOINT, a named portal
    /// fetched across Syncs as asyncpg and pgjdbc's fetch size do) opens a
    /// deferred transaction on a shard (the attached one if any); others
    /// run outside it, anywhere.
    fn block_target(&self, needs_block: bool) -> Target {
        if !needs_block || !matches!(self.txn, Txn::Deferred(_)) {
            return Target::Any;
        }
        if self.server.is_some() {
            Target::Shard(self.shard)
        } else {
            Target::Shard(self.any_shard())
        }
    }

    /// Statements pgshard answers itself (a simple query, or a Bind, whose
    /// portal `Session::local_portal` then answers): BEGIN is deferred, COMMIT or ROLLBACK
    /// of a deferred or failed transaction ends it, a transaction-scoped SET
    /// joins the deferred BEGIN, and `SET pgdog.shard` / `SET
    /// pgdog.sharding_key` set the session's overrides. Returns the
    /// statement's command tag (or why it is refused), or `None` when the
    /// Bind goes to a server.
    fn local_statement(
        &mut self,
        summary: &Summary,
        query: &[u8],
    ) -> Option<Result<&'static str, String>> {
        let [only] = summary.statements.as_slice() else {
            return None;
        };
        if self.txn != Txn::Failed {
            match &only.kind {
                StatementKind::SetShard(value) => {
                    return Some(self.apply_shard_override(value.as_deref()));
                }
                StatementKind::SetShardingKey(value) => {
                    return Some(Ok(self.apply_sharding_key_override(value.clone())));
                }
                _ => {}
            }
        }
        let tag = match (&only.kind, &self.txn) {
            (StatementKind::Begin, Txn::None) if !self.in_txn() && !self.plan.awaiting_server() => {
                self.txn = Txn::Deferred(Bytes::copy_from_slice(query));
                "BEGIN"
            }
            (StatementKind::Commit | StatementKind::Rollback, Txn::Deferred(_) | Txn::Failed) => {
                // A failed transaction was rolled back on its server already.
                let tag = if only.kind == StatementKind::Commit && self.txn != Txn::Failed {
                    "COMMIT"
                } else {
                    "ROLLBACK"
                };
                self.txn = Txn::None;
                self.end_txn_overrides();
                tag
            }
            (StatementKind::Session, Txn::Deferred(begin)) => {
                let tag = params::transaction_scoped(std::str::from_utf8(query).ok()?)?;
                // They belong to the transaction, which opens later: they
                // travel with its BEGIN (their errors reach the client then).
                // A newline ends a trailing `--` comment.
                let mut text = BytesMut::from(&begin[..]);
                text.extend_from_slice(b"\n;");
                text.extend_from_slice(query);
                self.txn = Txn::Deferred(text.freeze());
                tag
            }
            _ => return None,
        };
        Some(Ok(tag))
    }

    /// A prepared statement's cache entry, looked up once per statement.
    pub(super) fn route_info<'s>(&self, statement: &'s Statement) -> Option<&'s Lookup> {
        statement
            .route
            .get_or_init(|| {
                let sql = String::from_utf8_lossy(&statement.query);
                self.state.cache.lookup(&sql, self.engine).ok()
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
        match info.entry.route(&params, &overrides, &self.sharding) {
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
        let Some(server) = &self.server else {
            return Ok(true);
        };
        let keep = match target {
            Target::Any => true,
            Target::Shard(s) => s == self.shard && !matches!(self.txn, Txn::Deferred(_)),
            // A transaction's server is the one to ask, whatever its shard.
            Target::Near(s) => s == self.shard || server.conn.status != b'I' || self.copy_in,
        };
        if keep {
            return Ok(true);
        }
        if server.conn.status != b'I' || self.copy_in {
            self.refuse(
                ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, CROSS_SHARD_TXN),
                simple,
            );
            return Ok(false);
        }
        self.detach().await?;
        Ok(true)
    }

    /// Finish what the attached (idle) server is doing and give it back.
    pub(super) async fn detach(&mut self) -> Result<(), End> {
        if self.server.is_none() {
            return Ok(());
        }
        // A server answers only at a Sync: one goes after what the client
        // left unsynced, or after what pgshard sent for it (a Parse and
        // Describe before a Bind held for a fan-out, whose Sync pgshard
        // consumed).
        if self.unsynced || self.plan.unsynced_tail() {
            messages::sync(&mut self.to_server);
            self.plan.push(Step::injected_query());
        }
        let errors = self.segment_errors;
        self.flush().await?;
        self.answer_all().await?;
        if self.segment_errors != errors && self.unsynced {
            // The client saw an error: it expects the rest up to its Sync
            // to be skipped.
            self.skipping = true;
        }
        if let Some(server) = self.server.take() {
            self.release(server, false).await;
        }
        Ok(())
    }

    /// A deferred transaction opens on the server just attached: its BEGIN,
    /// then any `SET LOCAL` the client sent before this statement. An error
    /// there reaches the client (the transaction is then aborted on the
    /// server, and the statement fails too).
    pub(super) fn open_deferred(&mut self) {
        if let Txn::Deferred(begin) = std::mem::take(&mut self.txn) {
            let begin = String::from_utf8_lossy(&begin).into_owned();
            self.unnamed_on = None;
            messages::query(&mut self.to_server, &begin);
            self.plan.push(Step::injected_query_showing_errors());
        }
    }

    /// The shard for [`Target::Any`] when no server is attached.
    pub(super) fn any_shard(&self) -> usize {
        let n = self.pools.len().max(1);
        self.state.any_shard.fetch_add(1, Ordering::Relaxed) % n
    }
}

/// A statement that fails outside a transaction block, or whose effect
/// must last as long as the transaction: SAVEPOINT, RELEASE, ROLLBACK TO
/// (and the rest of [`StatementKind::TransactionOther`]), DECLARE CURSOR.
fn needs_transaction_block(summary: &Summary, sql: &[u8]) -> bool {
    match summary.statements.as_slice() {
        [only] if only.kind == StatementKind::TransactionOther => true,
        [_] => {
            let sql = String::from_utf8_lossy(sql);
            let [first] = params::leading_words::<1>(&sql);
            first.eq_ignore_ascii_case("DECLARE")
        }
        _ => false,
    }
}

/// A Bind's parameter values as the router takes them.
pub(super) fn bind_params(bind: &Bind) -> Vec<ParamValue<'_>> {
    bind.params
        .iter()
        .enumerate()
        .map(|(i, value)| match value {
            None => ParamValue::Null,
            Some(bytes) if bind.param_format(i) == 1 => ParamValue::Binary(bytes),
            Some(bytes) => ParamValue::Text(bytes),
        })
        .collect()
}
