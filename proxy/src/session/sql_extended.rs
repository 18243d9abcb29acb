//! SQL PREPARE, EXECUTE and DEALLOCATE sent through the extended protocol
//! (a Parse of `EXECUTE q(1)`, then Bind, Describe, Execute): at the Bind,
//! PREPARE and DEALLOCATE are answered here (the portal's Describe and
//! Execute too, as for transaction control), the PREPARE prepared first on
//! the server the session holds unless it holds it already; an EXECUTE of
//! a statement the client prepared is bound (and described) as the
//! statement that EXECUTEs pgshard's name for it, routed as in the simple
//! protocol (`sql_execute.rs`), the statement prepared first where the
//! server lacks it. The PREPARE pgshard sends goes through the extended
//! protocol too (the unnamed statement, a portal of its own closed after
//! it), so that nothing is committed before the client's Sync and an
//! error skips the rest to it, as the client's own statement would.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use router::cache::Lookup;
use router::prepared::{self, ArgValue};
use router::summary::{SessionEffect, StatementKind};

use super::fan_out::Reply;
use super::local::LocalPortal;
use super::merge::BindMerge;
use super::reply_plan::{self, Effect, Step};
use super::segment::Held;
use super::sql_prepared::{self, SqlStatement};
use super::statements::Statement;
use super::transaction::{Placement, Target, CROSS_SHARD_TXN};
use super::{End, Session};
use crate::conn::server::prepared_set;
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::{BindView, Frame, FrontendKind, Named};
use crate::protocol::messages;
use crate::protocol::sqlstate;

/// Where the Bind of an EXECUTE goes on a sharded cluster.
enum Routed {
    One(Target),
    /// Its statement's shards, with its body's lookup and the arguments.
    Several(Lookup, Vec<ArgValue>, Vec<usize>),
    /// Refused by the streaming path with this error: the coordinator may
    /// finish it (`gather/portal.rs`).
    Gathered(ClientError),
    /// Answered or refused.
    Done,
}

/// The portal the PREPAREs pgshard sends run in.
pub(in crate::session) const PORTAL: &[u8] = b"__pgshard_prepare";

impl Session {
    /// A Bind or statement Describe (`frame`) of `statement`, whose name
    /// is `body[name.0..name.0 + name.1]`: handled here when its text
    /// PREPAREs, DEALLOCATEs or EXECUTEs a SQL-prepared statement.
    /// Whether it was.
    pub(super) async fn sql_bind_or_describe(
        &mut self,
        frame: &Frame,
        statement: &Arc<Statement>,
        name: std::ops::Range<usize>,
    ) -> Result<bool, End> {
        if !super::session_effects::names_prepared(&statement.query) {
            return Ok(false);
        }
        let Some(info) = self.route_info(statement) else {
            return Ok(false);
        };
        let [only] = info.entry.summary.statements.as_slice() else {
            return Ok(false);
        };
        let bind = frame.kind == FrontendKind::Bind;
        let answered = matches!(
            only.session,
            Some(SessionEffect::Prepare { .. } | SessionEffect::Deallocate(_))
        );
        if bind && answered && self.status() == TransactionStatus::Failed {
            self.aborted(false);
            return Ok(true);
        }
        match &only.session {
            Some(effect @ SessionEffect::Prepare { .. }) if bind => {
                Box::pin(self.bind_prepare(effect, &info.entry.text)).await?;
                Ok(true)
            }
            Some(SessionEffect::Deallocate(deallocated)) if bind => {
                Ok(self.bind_deallocate(deallocated.as_deref()))
            }
            Some(effect @ SessionEffect::Execute { name: executed, .. }) => {
                let Some(sql) = self.named.sql.get(executed).cloned() else {
                    return Ok(false);
                };
                let kind = only.kind.clone();
                let rewritten = self.executing(statement, info, effect, &sql);
                match rewritten {
                    Some(rewritten) => {
                        let execute = (sql, rewritten, kind);
                        Box::pin(self.bind_execute(frame, statement, info, execute, name)).await?
                    }
                    None => self.refuse(super::sql_execute::unparsed(), false),
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The Bind of a PREPARE: the statement checked where it is missing,
    /// the name the client's, the portal answered here.
    async fn bind_prepare(&mut self, effect: &SessionEffect, text: &str) -> Result<(), End> {
        let SessionEffect::Prepare { name, types, .. } = effect else {
            return Ok(());
        };
        let parts = effect.statement_text(text).and_then(prepared::prepare_text);
        let Some(parts) = parts else {
            self.refuse(super::sql_execute::unparsed(), false);
            return Ok(());
        };
        if self.named.taken(name) {
            self.refuse(sql_prepared::duplicate(name), false);
            return Ok(());
        }
        let statement = self.shared.statements.sql(parts.types, parts.body, types);
        if !self.ensure_server_or_reply(Target::Any, false).await? {
            return Ok(());
        }
        self.sql_prepared_next(&statement, Some(name));
        if let Err(error) = self.named.sql.insert(name, statement) {
            self.refuse(error, false);
            return Ok(());
        }
        self.answer_portal("PREPARE");
        Ok(())
    }

    /// The Bind of a DEALLOCATE of a name the client prepared (or of
    /// ALL): answered here. Whether it was.
    fn bind_deallocate(&mut self, name: Option<&str>) -> bool {
        let tag = match name {
            Some(name) => {
                let name = name.as_bytes();
                if !self.named.deallocate(name) {
                    // Postgres says why.
                    return false;
                }
                "DEALLOCATE"
            }
            None => {
                self.named.clear();
                "DEALLOCATE ALL"
            }
        };
        self.answer_portal(tag);
        true
    }

    /// BindComplete now, and the portal's Describe and Execute answered
    /// with `tag` until Sync.
    fn answer_portal(&mut self, tag: &'static str) {
        self.pipeline.sent_extended();
        self.local_reply(messages::bind_complete);
        self.phase.bind_local(LocalPortal { tag, nested: false });
    }

    /// The statement that runs `statement` (an EXECUTE, summarized in
    /// `info` as `effect`) with pgshard's name for `sql`.
    fn executing(
        &self,
        statement: &Statement,
        info: &Lookup,
        effect: &SessionEffect,
        sql: &Arc<SqlStatement>,
    ) -> Option<Arc<Statement>> {
        let SessionEffect::Execute { name, .. } = effect else {
            return None;
        };
        let text = effect.statement_text(&info.entry.text)?;
        let at = prepared::execute_name(text, name)?;
        let run = prepared::replace(text, at, &sql.name);
        Some(self.executing_text(run, statement, sql))
    }

    /// The shared statement of text `run`, which EXECUTEs `sql`, with
    /// `statement`'s parameter types.
    fn executing_text(
        &self,
        run: String,
        statement: &Statement,
        sql: &Arc<SqlStatement>,
    ) -> Arc<Statement> {
        let executing = self.shared.statements.get_or_insert(
            &Bytes::from(run),
            &statement.param_types,
            &self.shared.cache,
            self.cluster.engine(),
        );
        let _ = executing.executes.set(Arc::clone(sql));
        executing
    }

    /// Whether a Bind of `statement` PREPAREs, EXECUTEs or DEALLOCATEs a
    /// SQL-prepared statement (which a held segment cannot take).
    pub(super) fn binds_sql_prepared(&self, statement: &Statement) -> bool {
        if !super::session_effects::names_prepared(&statement.query) {
            return false;
        }
        let Some(info) = self.route_info(statement) else {
            return false;
        };
        info.entry
            .summary
            .statements
            .iter()
            .any(|s| match &s.session {
                Some(SessionEffect::Prepare { .. }) => true,
                Some(SessionEffect::Execute { name, .. }) => self.named.sql.get(name).is_some(),
                Some(SessionEffect::Deallocate(Some(name))) => self.named.taken(name),
                Some(SessionEffect::Deallocate(None)) => true,
                _ => false,
            })
    }

    /// A Bind or Describe of an EXECUTE (`statement`, summarized in
    /// `info`) of `sql`: `rewritten` (which runs it under pgshard's name)
    /// bound or described instead, where the EXECUTE routes (a Bind), on
    /// a server that holds `sql` (prepared first where missing).
    async fn bind_execute(
        &mut self,
        frame: &Frame,
        statement: &Statement,
        info: &Lookup,
        (sql, rewritten, kind): (Arc<SqlStatement>, Arc<Statement>, StatementKind),
        name: std::ops::Range<usize>,
    ) -> Result<(), End> {
        let bind = frame.kind == FrontendKind::Bind;
        let target = match bind && self.sharded() {
            true => match self.execute_bind_target(statement, info, &sql, &kind) {
                Routed::One(target) => target,
                Routed::Done => return Ok(()),
                Routed::Gathered(error) => {
                    self.bind_execute_gathered(frame, info, &sql, error);
                    return Ok(());
                }
                Routed::Several(body, values, shards) => {
                    let gathers = body.clone();
                    let routed = (body, values, shards);
                    let held =
                        self.hold_execute(frame, statement, info, (&sql, &rewritten), routed, name);
                    match held {
                        Err(error) if self.gathers_execute(&gathers, &error) => {
                            self.bind_execute_gathered(frame, info, &sql, error);
                        }
                        Err(error) => self.refuse(error, false),
                        Ok(()) => {}
                    }
                    return Ok(());
                }
            },
            false => Target::Any,
        };
        if !self.ensure_server_or_reply(target, false).await? {
            return Ok(());
        }
        self.sql_prepared_next(&sql, None);
        if let Some(server) = self.attached.main_mut() {
            server.conn.dirty |= sql.leaves_state && self.cluster.transaction_mode();
        }
        self.statement_on_server(&rewritten, b"\0");
        frame.write_renamed(name, &rewritten.name, self.pipeline.for_server());
        self.pipeline.sent_extended();
        self.plan.push(match bind {
            true => Step::forward_with(reply_plan::BIND, Effect::Bound(rewritten.id)),
            false => Step::forward(reply_plan::DESCRIBE),
        });
        Ok(())
    }

    /// The Bind (`frame`) of an EXECUTE (looked up as `info`) of `sql` that
    /// the streaming path refused with `error`: bound for the coordinator.
    fn bind_execute_gathered(
        &mut self,
        frame: &Frame,
        info: &Lookup,
        sql: &SqlStatement,
        error: ClientError,
    ) {
        let args = match &info.entry.summary.statements[0].session {
            Some(effect @ SessionEffect::Execute { name, .. }) => {
                let text = effect.statement_text(&info.entry.text).unwrap_or_default();
                prepared::execute_name(text, name).and_then(|at| text.get(at.1..))
            }
            _ => None,
        };
        match (args, BindView::of(frame)) {
            (Some(args), Ok(view)) => {
                let args = args.to_owned();
                self.bind_sql_gathered(sql, &args, &view.to_bind(), error);
            }
            _ => self.refuse(error, false),
        }
    }

    /// Where the Bind of an EXECUTE of `sql` goes on a sharded cluster.
    fn execute_bind_target(
        &mut self,
        statement: &Statement,
        info: &Lookup,
        sql: &SqlStatement,
        kind: &StatementKind,
    ) -> Routed {
        self.follow_config();
        if self.answer_locally(&info.entry.summary, &statement.query, false) {
            return Routed::Done;
        }
        let refused = |what: &str| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, what);
        if *kind == StatementKind::Ddl {
            self.refuse(refused("CREATE TABLE AS EXECUTE of a prepared statement is not supported on a sharded cluster (CREATE TABLE AS the statement itself)"), false);
            return Routed::Done;
        }
        let Some(body) = self.sql_body(sql).cloned() else {
            self.refuse(super::sql_execute::unparsed(), false);
            return Routed::Done;
        };
        self.note_bound(&body.entry.summary, body.entry.text.as_bytes());
        let args = match &info.entry.summary.statements[0].session {
            Some(SessionEffect::Execute { args, .. }) => args.as_slice(),
            _ => &[],
        };
        let values: Vec<ArgValue> = args.iter().map(ArgValue::of).collect();
        let shards = match self.route_sql(&info.overrides, sql, &body, &values) {
            Ok((shards, touches)) => match self.bind_hold_refusal(touches) {
                None => shards,
                Some(error) => {
                    self.refuse(error, false);
                    return Routed::Done;
                }
            },
            Err(error)
                if *kind != StatementKind::Explain && self.gathers_execute(&body, &error) =>
            {
                return Routed::Gathered(error);
            }
            Err(error) => {
                self.refuse(error, false);
                return Routed::Done;
            }
        };
        if self.cuts_rows(&body.entry.summary, &sql.body) {
            // Its FROM/USING subquery or WITH query would cut rows per
            // shard (`router::carry`'s rule 8); run first only for a
            // simple query's EXECUTE.
            let why = "; pgshard runs it first for an EXECUTE sent as a simple query, not yet through Parse/Bind/Execute";
            let error = super::carry::refusal(None);
            self.refuse(refused(&format!("{}{why}", error.message)), false);
            return Routed::Done;
        }
        match self.place(shards.as_deref(), false) {
            Placement::Send(target) => Routed::One(target),
            Placement::Refuse => {
                self.refuse(refused(CROSS_SHARD_TXN), false);
                Routed::Done
            }
            Placement::FanOut | Placement::FanOutInTxn if *kind == StatementKind::Explain => {
                self.refuse(refused("EXPLAIN EXECUTE of a prepared statement that runs on several shards is not supported; EXPLAIN the statement itself"), false);
                Routed::Done
            }
            Placement::FanOut | Placement::FanOutInTxn => {
                let shards = shards.map(|s| s.into_vec()).unwrap_or_default();
                Routed::Several(body, values, shards)
            }
        }
    }

    /// The Bind of an EXECUTE of `sql` (bound as `rewritten`) whose
    /// statement runs on several shards: held as a segment, run at Sync,
    /// its rows merged as the statement's own (the shards run the
    /// statement its merge rewrites, where it does).
    fn hold_execute(
        &mut self,
        frame: &Frame,
        statement: &Statement,
        info: &Lookup,
        (sql, rewritten): (&Arc<SqlStatement>, &Arc<Statement>),
        (body, values, shards): (Lookup, Vec<ArgValue>, Vec<usize>),
        name: std::ops::Range<usize>,
    ) -> Result<(), ClientError> {
        let bind = BindView::of(frame)
            .map_err(|e| ClientError::new(sqlstate::PROTOCOL_VIOLATION, e.to_string()))?
            .to_bind();
        let summary = &body.entry.summary;
        let copies = router::route::holds_copies(summary, self.cluster.sharding());
        let (shard, reply) = match copies {
            true => (None, None),
            false => match self.execute_rows(sql, &body, &values)? {
                (shard, Reply::Merge(request)) => (shard, Some(request)),
                (shard, _) => (shard, None),
            },
        };
        let args = match (&info.entry.summary.statements[0].session, &shard) {
            (Some(effect @ SessionEffect::Execute { name, .. }), Some(_)) => {
                let text = effect.statement_text(&info.entry.text).unwrap_or_default();
                prepared::execute_name(text, name).map(|at| &text[at.1..])
            }
            _ => None,
        };
        let shard_statement = shard.zip(args).and_then(|(shard, args)| {
            let run = shard.execute(args)?;
            Some(self.executing_text(run, statement, &shard.statement))
        });
        let merge = reply.map(|request| BindMerge {
            plan: request.plan,
            window: request.window,
            shard_statement,
            params: request.params,
        });
        let mut bytes = BytesMut::new();
        frame.write_renamed(name, &rewritten.name, &mut bytes);
        let writes = super::spanning::writes(summary);
        let readable = super::segment::readable(summary, merge.as_ref());
        let held = Held {
            bytes: bytes.freeze(),
            merge,
            writes,
            copies,
            declared: None,
            readable,
        };
        self.hold_bind(rewritten, false, &bind, shards, held);
        self.pipeline.sent_extended();
        Ok(())
    }

    /// Make sure the attached server holds `sql` before the next message:
    /// where it lacks it, its PREPARE goes first (closing the server's
    /// least recently used statement if it holds too many), through the
    /// extended protocol, its reply swallowed but for an error, which
    /// undoes what it was for (the server's statement, and `client_name`
    /// when the client's PREPARE made it).
    pub(super) fn sql_prepared_next(&mut self, sql: &SqlStatement, client_name: Option<&str>) {
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        let conn = &mut server.conn;
        if conn.prepared.contains(sql.id) {
            return;
        }
        if let Some(oldest) = conn.prepared.make_room(self.cluster.prepared_limit()) {
            prepared_set::close(self.pipeline.for_server(), oldest);
            self.plan
                .push(Step::injected(reply_plan::CLOSE, Effect::Closed(oldest)));
        }
        conn.prepared.insert(sql.id);
        self.pipeline.unnamed_dropped();
        let out = self.pipeline.for_server();
        messages::parse(out, b"", sql.prepare.as_bytes(), &[]);
        messages::bind_values(out, (PORTAL, b""), &[], &[], &[]);
        messages::execute(out, PORTAL);
        messages::close(out, Named::Portal, PORTAL);
        let named = client_name.map_or(Effect::None, |name| {
            Effect::SqlNamed(sql.id, Bytes::copy_from_slice(name.as_bytes()))
        });
        for (terminals, effect) in [
            (reply_plan::PARSE, Effect::None),
            (reply_plan::BIND, Effect::None),
            (reply_plan::EXECUTE, Effect::SqlPrepared(sql.id)),
            (reply_plan::CLOSE, named),
        ] {
            self.plan.push(Step::injected(terminals, effect));
        }
    }
}
