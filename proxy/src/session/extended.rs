//! The extended protocol under pooling: Parse, Bind, Describe and Close
//! with statement names rewritten to pgshard's shared statements (the
//! unnamed one parsed afresh where it runs), statements prepared on a
//! server that lacks them, and Binds routed on sharded clusters.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::carry::Carried;
use super::reply_plan::{self, Effect, Step};
use super::statements::Statement;
use super::transaction::Target;
use super::{End, Session};
use crate::conn::server::prepared_set;
use crate::protocol::frontend::{BindView, Frame, FrontendKind, FrontendMessage, Named};
use crate::protocol::messages;

impl Session {
    /// What a Bind says before it is routed: a table made behind pgshard's
    /// back is looked up (`behind.rs`); on one database, a WITH HOLD
    /// cursor bound keeps its server (`cursor`).
    async fn noted_bind(&mut self, statement: &Arc<Statement>, bind: bool) {
        self.look_up_unseen_of(statement, bind).await;
        if bind && !self.sharded() {
            self.note_bound_cursor(statement);
        }
    }

    pub(super) async fn on_parse(&mut self, frame: Frame) -> Result<(), End> {
        let (name, query, param_types) = match FrontendMessage::decode(&frame) {
            Ok(FrontendMessage::Parse {
                name,
                query,
                param_types,
            }) => (name, query, param_types),
            Ok(_) => return Ok(()),
            Err(e) => return Err(End::protocol(e)),
        };
        // pgdog.unique_id() calls become parameters (`unique_id.rs`).
        let Ok(id_parse) = self.unique_id_parse(&query, &param_types) else {
            return Ok(());
        };
        let (query, param_types, frame) = match &id_parse {
            Some(parse) => {
                let mut out = BytesMut::new();
                messages::parse(&mut out, &name, &parse.query, &parse.param_types);
                let frame = Frame::new(FrontendKind::Parse, &out[5..]);
                (parse.query.clone(), parse.param_types.clone(), frame)
            }
            None => (query, param_types, frame),
        };
        if !name.is_empty() && self.named.sql.contains(&name) {
            // SQL PREPARE and Parse name statements in one namespace.
            let name = String::from_utf8_lossy(&name);
            self.local_error(super::sql_prepared::duplicate(&name), false);
            return Ok(());
        }
        let statement = self.shared.statements.get_or_insert(
            &query,
            &param_types,
            &self.shared.cache,
            self.cluster.engine(),
        );
        if let Some(parse) = id_parse {
            self.note_id_params(&statement, parse);
        }
        if let Err(error) = self
            .named
            .protocol
            .insert(name.clone(), Arc::clone(&statement))
        {
            self.local_error(error, false);
            return Ok(());
        }
        self.pipeline.sent_extended();
        if name.is_empty() {
            return self.on_unnamed_parse(&frame, &statement);
        }
        let Some(server) = self.attached.main_mut() else {
            // No server attached (no transaction open): the Parse waits for
            // the Bind or Describe that needs it. Checking a server out just
            // to prepare would hold it across the client's think time, and
            // clients that prepare synchronously while holding other
            // connections' transactions open (pgbench -M prepared with -j)
            // would deadlock on the pool. A bad statement's error arrives
            // with the Bind instead, as with PgBouncer and PgDog.
            self.plan
                .push(Step::LocalParse(Effect::Named(statement.id, name)));
            return Ok(());
        };
        server.conn.dirty |= statement.leaves_state && self.cluster.transaction_mode();
        if server.conn.prepared.contains(statement.id) {
            self.plan
                .push(Step::LocalParse(Effect::Named(statement.id, name)));
        } else {
            self.prepare_on_server(&statement, true, Some(name));
        }
        Ok(())
    }

    /// Parse of the unnamed statement: forwarded as it is to the attached
    /// server, else answered here and parsed with the Bind or Describe that
    /// needs it (on whichever server that is).
    pub(super) fn on_unnamed_parse(
        &mut self,
        frame: &Frame,
        statement: &Statement,
    ) -> Result<(), End> {
        let Some(server) = self.attached.main_mut() else {
            self.pipeline.unnamed_dropped();
            self.local_reply(messages::parse_complete);
            return Ok(());
        };
        server.conn.dirty |= statement.leaves_state && self.cluster.transaction_mode();
        self.pipeline.unnamed_parsed_on(server.conn.id);
        self.put_frame(frame);
        self.plan.push(Step::forward(reply_plan::PARSE));
        Ok(())
    }

    /// Send `statement`'s Parse to the attached server, closing its least
    /// recently used statement first if the server holds too many. With
    /// `forward` the reply is the client's; else it is swallowed. If the
    /// Parse fails, `client_name` stops naming the statement.
    pub(super) fn prepare_on_server(
        &mut self,
        statement: &Statement,
        forward: bool,
        client_name: Option<Bytes>,
    ) {
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        let conn = &mut server.conn;
        if let Some(oldest) = conn.prepared.make_room(self.cluster.prepared_limit()) {
            prepared_set::close(self.pipeline.for_server(), oldest);
            self.plan
                .push(Step::injected(reply_plan::CLOSE, Effect::Closed(oldest)));
        }
        self.pipeline
            .for_server()
            .extend_from_slice(&statement.parse);
        conn.prepared.insert(statement.id);
        let effect = Effect::Prepared(statement.id, client_name);
        self.plan.push(if forward {
            Step::forward_with(reply_plan::PARSE, effect)
        } else {
            Step::injected(reply_plan::PARSE, effect)
        });
    }

    /// Bind and Describe: a statement name pgshard renamed is rewritten,
    /// and prepared first if this server lacks it.
    pub(super) async fn on_bind_or_describe(&mut self, frame: Frame) -> Result<(), End> {
        let Some(frame) = self.unique_id_frame(frame).await? else {
            return Ok(());
        };
        let bind = frame.kind == FrontendKind::Bind;
        let terminals = [reply_plan::DESCRIBE, reply_plan::BIND][usize::from(bind)];
        let body = frame.body();
        let Some(name) = frame.statement_name().map_err(End::protocol)? else {
            return self
                .forward_extended(&frame, Step::forward(terminals))
                .await;
        };
        let Some(statement) = self.named.protocol.get(&body[name.clone()]) else {
            // Not prepared through pgshard (or never prepared): Postgres
            // gives the client the error it would give anyway.
            return self
                .forward_extended(&frame, Step::forward(terminals))
                .await;
        };
        if bind && self.on_listen_bind(&statement.query).await? {
            return Ok(());
        }
        if (bind && self.attached.spans() && Box::pin(self.spanning_bind(&statement)).await?)
            || (self.sql_bind_or_describe(&frame, &statement, name.clone())).await?
        {
            return Ok(());
        }
        self.noted_bind(&statement, bind).await;
        let view = self.bind_view(&frame)?;
        let Some((statement, instead)) = self.bound_instead(view.as_ref(), statement).await? else {
            self.pipeline.sent_extended();
            return Ok(());
        };
        let client_name: &[u8] = if instead { b"\0" } else { &body[name.clone()] };
        let unnamed = client_name.is_empty();
        // The name the server knows the statement by.
        let server_name: &[u8] = if unnamed { b"" } else { &statement.name };
        let target = if let Some(view) = &view {
            if !Box::pin(self.wait_bind_hold(&statement, view)).await? {
                return Ok(());
            }
            let rewritten =
                |out: &mut BytesMut| frame.write_renamed(name.clone(), server_name, out);
            match self.bind_target(view, &statement, unnamed, rewritten) {
                Some(target) => target,
                None => return Ok(()),
            }
        } else if self.sharded() {
            if !Box::pin(self.wait_describe_hold(&statement)).await? {
                return Ok(());
            }
            self.describe_target(&statement)
        } else {
            Target::Any
        };
        self.split_statement(&statement).await?;
        if !self.ensure_server_or_reply(target, false).await? {
            return Ok(());
        }
        self.statement_on_server(&statement, client_name);
        frame.write_renamed(name, server_name, self.pipeline.for_server());
        self.pipeline.sent_extended();
        if bind {
            if let Some(changes) = &statement.settings {
                self.settings.extended.extend(changes.iter().cloned());
            }
        }
        self.plan.push(if bind && !unnamed {
            Step::forward_with(terminals, Effect::Bound(statement.id))
        } else {
            Step::forward(terminals)
        });
        Ok(())
    }

    /// The statement a Bind (`bind`: on a sharded cluster) of `statement`
    /// binds, and whether it is another than the client's: an INSERT that
    /// names no columns with its table's columns written in, a write whose
    /// subqueries read across shards with their results once they ran
    /// (`carry/bound.rs`); `None`: the client has its error.
    async fn bound_instead(
        &mut self,
        bind: Option<&BindView<'_>>,
        statement: Arc<Statement>,
    ) -> Result<Option<(Arc<Statement>, bool)>, End> {
        if let Some(rewritten) = self.bound_with_columns(bind, &statement).await? {
            return Ok(Some((rewritten, true)));
        }
        Ok(
            match Box::pin(self.carried_statement(bind, &statement)).await? {
                Carried::Unchanged => Some((statement, false)),
                Carried::Answered => None,
                Carried::Instead(rewritten) => Some((rewritten, true)),
            },
        )
    }

    /// A Bind on a sharded cluster, read once, in place, for routing.
    fn bind_view<'f>(&self, frame: &'f Frame) -> Result<Option<BindView<'f>>, End> {
        if !self.sharded() || frame.kind != FrontendKind::Bind {
            return Ok(None);
        }
        BindView::of(frame).map(Some).map_err(End::protocol)
    }

    /// The statement a Bind of `statement` binds instead on a sharded
    /// cluster (an INSERT given its table's columns), if any.
    async fn bound_with_columns(
        &mut self,
        bind: Option<&BindView<'_>>,
        statement: &Arc<Statement>,
    ) -> Result<Option<Arc<Statement>>, End> {
        match bind {
            Some(bind) => Box::pin(self.columns_statement(statement, bind)).await,
            None => Ok(None),
        }
    }

    /// Where a Bind goes on a sharded cluster; `None` when it was answered
    /// here or held for a fan-out.
    fn bind_target(
        &mut self,
        bind: &BindView<'_>,
        statement: &Arc<Statement>,
        unnamed: bool,
        rewritten: impl FnOnce(&mut BytesMut),
    ) -> Option<Target> {
        self.pipeline.clock_mut().statement(&statement.query);
        let target = self.route_bind(statement, unnamed, bind, rewritten);
        if target.is_none() {
            self.pipeline.sent_extended();
        }
        target
    }

    /// Make sure the attached server holds `statement` (known to the client
    /// as `client_name`) before a Bind or Describe of it: the unnamed one is
    /// parsed again where its last Parse did not go, a shared one prepared
    /// where it is missing.
    pub(super) fn statement_on_server(&mut self, statement: &Arc<Statement>, client_name: &[u8]) {
        self.pipeline.clock_mut().statement(&statement.query);
        let Some(server) = self.attached.main_mut() else {
            return;
        };
        server.conn.dirty |= statement.leaves_state && self.cluster.transaction_mode();
        if client_name.is_empty() {
            if !self.pipeline.unnamed_is_on(server.conn.id) {
                self.pipeline.unnamed_parsed_on(server.conn.id);
                messages::parse(
                    self.pipeline.for_server(),
                    b"",
                    &statement.query,
                    &statement.param_types,
                );
                self.plan
                    .push(Step::injected(reply_plan::PARSE, Effect::None));
            }
        } else if !server.conn.prepared.contains(statement.id) {
            let name = Bytes::copy_from_slice(client_name);
            self.prepare_on_server(statement, false, Some(name));
        }
    }

    pub(super) async fn on_close(&mut self, frame: Frame) -> Result<(), End> {
        match FrontendMessage::decode(&frame) {
            Ok(FrontendMessage::Close {
                kind: Named::Statement,
                name,
            }) => {
                // Servers keep the statement for other clients; closing a
                // name that does not exist is not an error in Postgres.
                self.named.protocol.remove(&name);
                self.forget_describe_twin(&name);
                self.named.sql.remove(&name);
                self.local_reply(messages::close_complete);
                Ok(())
            }
            Ok(FrontendMessage::Close {
                kind: Named::Portal,
                ..
            }) if self.attached.is_none() && !self.plan.awaiting_server() => {
                // No server holds a portal of the client (a portal lives in
                // a transaction; a WITH HOLD cursor's is routed before):
                // closing a name that does not exist is not an error.
                self.local_reply(messages::close_complete);
                Ok(())
            }
            Ok(_) => {
                self.forward_extended(&frame, Step::forward(reply_plan::CLOSE))
                    .await
            }
            Err(e) => Err(End::protocol(e)),
        }
    }

    pub(super) async fn forward_extended(&mut self, frame: &Frame, step: Step) -> Result<(), End> {
        if !self.ensure_server_or_reply(Target::Any, false).await? {
            return Ok(());
        }
        self.pipeline.sent_extended();
        self.put_frame(frame);
        self.plan.push(step);
        Ok(())
    }
}
