//! SQL PREPARE in a session: a client's `PREPARE name [(types)] AS
//! statement` names a shared statement (`sql_prepared.rs`) that pgshard
//! prepares on servers under its own name, so that any server may run the
//! client's EXECUTEs (`sql_execute.rs`) and the server needs no reset. The
//! PREPARE itself is checked by Postgres on the server the session holds
//! (or any, outside a transaction), unless that server holds the statement
//! already: the client's own PREPARE, deallocated at once, then pgshard's,
//! in one query, so that an error is the client's to the letter (its
//! position in the client's text included) and stops the rest. Only then
//! is the name the client's, and PREPARE answered. A query string may
//! start with PREPAREs; the rest of it then runs as a query of its own.

use std::sync::Arc;

use bytes::Bytes;
use router::cache::Lookup;
use router::summary::{SessionEffect, Summary};

use super::reply_plan::{self, Effect, Step};
use super::sql_prepared::{self, SqlStatement};
use super::transaction::Target;
use super::{End, Session};
use crate::conn::server::prepared_set;
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::Frame;
use crate::protocol::sqlstate;

/// What became of a simple query that PREPAREs or EXECUTEs.
pub(super) enum SqlQuery {
    /// Neither, or an EXECUTE of a name pgshard does not know (Postgres
    /// says why): it goes on as usual.
    Not,
    /// Answered, refused or fanned out here.
    Done,
    /// Its leading PREPAREs were answered: the rest of the string goes on
    /// as a query of its own.
    Rest(Frame),
    /// Run `text` (the EXECUTE with the server's name for the statement)
    /// on `target`, the statement prepared there first.
    Run(Target, Arc<SqlStatement>, String),
}

impl Session {
    /// A simple query that starts with PREPARE, or is one EXECUTE (or
    /// EXPLAIN EXECUTE) of a statement the client prepared.
    pub(super) async fn sql_prepared_query(&mut self, lookup: &Lookup) -> Result<SqlQuery, End> {
        let summary = &lookup.entry.summary;
        let Some(first) = summary.statements.first() else {
            return Ok(SqlQuery::Not);
        };
        match &first.session {
            Some(SessionEffect::Prepare { .. }) => {}
            Some(SessionEffect::Execute { name, .. }) if summary.statements.len() == 1 => {
                if self.named.sql.get(name).is_none() {
                    if self.named.protocol.find(name.as_bytes()).is_none() {
                        return Ok(SqlQuery::Not);
                    }
                    self.refuse(ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, format!("EXECUTE of \"{name}\", a statement prepared with the extended protocol's Parse, is not supported: run it with Bind and Execute")), true);
                    return Ok(SqlQuery::Done);
                }
            }
            _ => return Ok(SqlQuery::Not),
        }
        if self.status() == TransactionStatus::Failed {
            self.aborted(true);
            return Ok(SqlQuery::Done);
        }
        match &first.session {
            Some(effect @ SessionEffect::Execute { .. }) => {
                self.sql_execute(lookup, &first.kind, effect).await
            }
            Some(effect) => self.leading_prepare(lookup, effect).await,
            None => Ok(SqlQuery::Not),
        }
    }

    /// The first statement of a string, a PREPARE: answered, and the rest
    /// of the string (if any) handed back.
    async fn leading_prepare(
        &mut self,
        lookup: &Lookup,
        effect: &SessionEffect,
    ) -> Result<SqlQuery, End> {
        let text = &lookup.entry.text;
        let rest = match effect {
            SessionEffect::Prepare { start, len, .. } if *len > 0 => text
                .get(start + len..)
                .unwrap_or_default()
                .trim_start_matches(|c: char| c == ';' || c.is_whitespace()),
            _ => "",
        };
        if !self
            .prepare_statement(effect, text, rest.is_empty())
            .await?
            || rest.is_empty()
        {
            return Ok(SqlQuery::Done);
        }
        Ok(SqlQuery::Rest(Frame::query(rest)))
    }

    /// PREPARE (`effect`, parsed from `text`): checked by a server, then
    /// the client's name for its statement. `last`: its reply ends the
    /// query (ReadyForQuery). Whether it succeeded; if not, the client has
    /// the error and its ReadyForQuery.
    async fn prepare_statement(
        &mut self,
        effect: &SessionEffect,
        text: &str,
        last: bool,
    ) -> Result<bool, End> {
        let SessionEffect::Prepare { name, types, .. } = effect else {
            return Ok(false);
        };
        let Some(parts) = effect
            .statement_text(text)
            .and_then(router::prepared::prepare_text)
        else {
            let error = ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("pgshard could not find the statement PREPARE \"{name}\" prepares in its text; send it as PREPARE name [(types)] AS statement"),
            );
            self.refuse(error, true);
            return Ok(false);
        };
        if self.named.taken(name) {
            self.refuse(sql_prepared::duplicate(name), true);
            return Ok(false);
        }
        let statement = self.shared.statements.sql(parts.types, parts.body, types);
        if !self.ensure_server_or_reply(Target::Any, true).await? {
            return Ok(false);
        }
        // The client's own PREPARE (deallocated at once) checks it, so
        // that its errors are Postgres's to the letter, their positions in
        // the client's text included.
        let start = match effect {
            SessionEffect::Prepare { start, .. } => *start,
            _ => 0,
        };
        let own = effect.statement_text(text).unwrap_or_default();
        let rest = text.get(start..).unwrap_or_default();
        let at = start + (rest.len() - rest.trim_start().len());
        let before = text.get(..at).map_or(0, |before| before.chars().count());
        let check = format!("{}{own}\n; DEALLOCATE {}", " ".repeat(before), parts.name);
        if !self.sql_prepared_here(&statement, Some(&check)).await? {
            self.ready_after_error();
            return Ok(false);
        }
        if let Err(error) = self.named.sql.insert(name, statement) {
            self.refuse(error, true);
            return Ok(false);
        }
        self.local_tag("PREPARE", last);
        Ok(true)
    }

    /// Make sure the attached server holds `statement`: if it lacks it,
    /// PREPARE it there (closing the server's least recently used
    /// statement first if it holds too many) and wait for the reply, whose
    /// error, if any, goes to the client. `check`: statements to run first
    /// in the same query (which stops at their error). Whether the server
    /// holds it.
    pub(super) async fn sql_prepared_here(
        &mut self,
        statement: &SqlStatement,
        check: Option<&str>,
    ) -> Result<bool, End> {
        let Some(server) = self.attached.main_mut() else {
            return Ok(false);
        };
        let conn = &mut server.conn;
        if conn.prepared.contains(statement.id) {
            return Ok(true);
        }
        if let Some(oldest) = conn.prepared.make_room(self.cluster.prepared_limit()) {
            prepared_set::close(self.pipeline.for_server(), oldest);
            self.plan
                .push(Step::injected(reply_plan::CLOSE, Effect::Closed(oldest)));
        }
        conn.prepared.insert(statement.id);
        let sql = match check {
            Some(check) => format!("{check}; {}", statement.prepare),
            None => statement.prepare.clone(),
        };
        self.pipeline.query(&sql);
        self.plan.push(Step::injected_query_showing_errors_with(
            Effect::SqlPrepared(statement.id),
        ));
        self.settle_main().await?;
        Ok(self
            .attached
            .main_mut()
            .is_some_and(|server| server.conn.prepared.contains(statement.id)))
    }

    /// The ReadyForQuery that ends a simple query whose error pgshard
    /// relayed from a statement it sent for it.
    pub(super) fn ready_after_error(&mut self) {
        self.plan.push(Step::Local {
            bytes: Bytes::new(),
            ready: true,
        });
    }

    /// A PREPARE or an EXECUTE of a statement the client prepared in a
    /// string pgshard does not take apart (not at its start, or with other
    /// statements after an EXECUTE, or under CREATE TABLE AS): why it is
    /// refused.
    pub(super) fn sql_prepared_elsewhere(&self, summary: &Summary) -> Option<ClientError> {
        let refused = |what: &str| {
            Some(ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("{what}; pgshard tracks prepared statements only in PREPARE at the start of a query string and in EXECUTE sent alone"),
            ))
        };
        summary.statements.iter().find_map(|statement| match &statement.session {
            Some(SessionEffect::Prepare { .. }) => refused("PREPARE after another statement of a query string"),
            Some(SessionEffect::Execute { name, .. }) if self.named.sql.get(name).is_some() => {
                match summary.statements.len() {
                    1 => refused("CREATE TABLE AS EXECUTE of a prepared statement is not supported (CREATE TABLE AS the statement itself)"),
                    _ => refused("EXECUTE of a prepared statement with other statements in one query string is not supported (send it as a query of its own)"),
                }
            }
            _ => None,
        })
    }
}
