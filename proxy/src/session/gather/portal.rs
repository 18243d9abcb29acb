//! A gathered statement in the extended protocol (a prepared statement, or
//! an SQL EXECUTE of one prepared with SQL PREPARE): its Bind answered here
//! (BindComplete) and held as the phase's portal; a Describe of it answered
//! with the statement's description on one shard (the coordinator's
//! columns are the same: the temp tables have the tables' types); its
//! Execute runs the plan, the finish parsed on the coordinator with the
//! statement's parameter types and bound with the client's values and
//! result formats. A named portal (one read across Syncs) and an Execute
//! with a row limit (a portal read in parts) are refused (0A000) for now;
//! any other message ends the portal.

use std::sync::Arc;

use bytes::BytesMut;

use super::{not_yet, Finish, Gathered};
use crate::errors::ClientError;
use crate::execute::gather::finish;
use crate::protocol::backend::BackendMessage;
use crate::protocol::frontend::{Bind, Frame, FrontendKind, FrontendMessage, Named};
use crate::protocol::messages;
use crate::session::reply_plan::Step;
use crate::session::statements::Statement;
use crate::session::transaction::Target;
use crate::session::{End, Session};

/// A bound statement that the coordinator finishes at its Execute.
#[derive(Debug)]
pub struct GatherPortal {
    bound: Bound,
    /// The streaming path's refusal, for the client's message if the
    /// coordinator cannot take it either.
    refusal: ClientError,
}

/// What a gathered portal runs.
#[derive(Debug, Clone)]
enum Bound {
    /// A prepared statement, bound with the client's values.
    Statement {
        statement: Arc<Statement>,
        bind: Bind,
    },
    /// `EXECUTE name (args)` of a statement prepared with SQL PREPARE
    /// (`body`, its `types` as written).
    Sql {
        body: String,
        types: String,
        args: String,
        result_formats: Vec<i16>,
    },
}

/// The name a Describe of an SQL-prepared gathered statement prepares it
/// under on a shard.
const SQL_DESCRIBE: &str = "pgshard_describe";

impl Session {
    /// A Bind of `statement` that the streaming path refused with
    /// `refusal`: answered here, run at its Execute.
    pub(in crate::session) fn bind_gathered(
        &mut self,
        statement: &Arc<Statement>,
        bind: &Bind,
        refusal: ClientError,
    ) -> Option<Target> {
        if !bind.portal.is_empty() {
            // A named portal may be read across Syncs, which the phase's
            // portal does not outlive.
            let error = not_yet(
                &refusal,
                ("in a named portal", "bind it to the unnamed portal"),
            );
            self.shared
                .metrics
                .route(crate::metrics::RouteKind::Refused);
            self.refuse(error, false);
            return None;
        }
        self.local_reply(messages::bind_complete);
        let bound = Bound::Statement {
            statement: Arc::clone(statement),
            bind: bind.clone(),
        };
        self.phase.bind_gather(GatherPortal { bound, refusal });
        None
    }

    /// A Bind of `EXECUTE name (args)` (`args`: its text after the name)
    /// of `statement`, which the streaming path refused with `refusal`:
    /// answered here, run at its Execute.
    pub(in crate::session) fn bind_sql_gathered(
        &mut self,
        statement: &crate::session::sql_prepared::SqlStatement,
        args: &str,
        bind: &Bind,
        refusal: ClientError,
    ) {
        if !bind.portal.is_empty() {
            let error = not_yet(
                &refusal,
                ("in a named portal", "bind it to the unnamed portal"),
            );
            self.shared
                .metrics
                .route(crate::metrics::RouteKind::Refused);
            self.refuse(error, false);
            return;
        }
        self.local_reply(messages::bind_complete);
        let bound = Bound::Sql {
            body: statement.body.clone(),
            types: statement.types.clone(),
            args: args.to_owned(),
            result_formats: bind.result_formats.clone(),
        };
        self.phase.bind_gather(GatherPortal { bound, refusal });
    }

    /// A message while a gathered portal is bound: whether it was answered
    /// (any other message ends the portal).
    pub(in crate::session) async fn on_gather_portal(
        &mut self,
        frame: &Frame,
    ) -> Result<bool, End> {
        match frame.kind {
            FrontendKind::Flush => {}
            FrontendKind::Describe => {
                let of_portal = matches!(
                    FrontendMessage::decode(frame),
                    Ok(FrontendMessage::Describe { kind: Named::Portal, name }) if name.is_empty()
                );
                let Some(portal) = self.phase.gather_portal().filter(|_| of_portal) else {
                    // A Describe of a statement ends the portal.
                    self.phase.end_portal();
                    return Ok(false);
                };
                let bound = portal.bound.clone();
                self.describe_gathered(&bound).await?;
            }
            FrontendKind::Execute => {
                let max_rows = match FrontendMessage::decode(frame) {
                    Ok(FrontendMessage::Execute { max_rows, .. }) => max_rows,
                    _ => 0,
                };
                let Some(portal) = self.phase.take_gather() else {
                    return Ok(false);
                };
                self.execute_gathered(portal, max_rows).await?;
            }
            _ => {
                self.phase.end_portal();
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Run the portal's statement on the coordinator (`max_rows`: the
    /// Execute's row limit, refused for now).
    async fn execute_gathered(&mut self, portal: GatherPortal, max_rows: i32) -> Result<(), End> {
        if max_rows > 0 {
            let error = not_yet(
                &portal.refusal,
                ("with a row limit on its Execute", "execute it without one"),
            );
            self.shared
                .metrics
                .route(crate::metrics::RouteKind::Refused);
            self.refuse(error, false);
            return Ok(());
        }
        let (sql, finish) = match portal.bound {
            Bound::Statement { statement, bind } => (
                String::from_utf8_lossy(&statement.query).into_owned(),
                Finish::Extended {
                    bind,
                    param_types: statement.param_types.clone(),
                },
            ),
            Bound::Sql {
                body, types, args, ..
            } => (
                body,
                Finish::Sql {
                    types,
                    args,
                    extended: true,
                },
            ),
        };
        let errors = self.pipeline.error_mark();
        let gathered = self
            .gather_statement(&sql, portal.refusal, false, &finish)
            .await?;
        if matches!(gathered, Gathered::Ran) && self.pipeline.errors_since(errors) {
            // The rest up to the client's Sync is skipped, as Postgres does.
            self.phase.skip();
        }
        Ok(())
    }

    /// A Describe of the portal: the statement's columns as one shard
    /// describes it (origins zeroed, as the finish's are), or its error.
    async fn describe_gathered(&mut self, bound: &Bound) -> Result<(), End> {
        let shard = self.any_shard();
        let mut server = match self.checkout_server(shard, true).await? {
            Ok(server) => server,
            Err(err) => {
                let error = err.client_error(&self.info.database, shard);
                self.refuse(error, false);
                return Ok(());
            }
        };
        let (out, mut syncs) = describe_request(bound);
        let mut reply = BytesMut::new();
        let mut error = None;
        let read = async {
            server.conn.send(&out).await.ok()?;
            loop {
                let message = server.conn.read_message().await.ok()?;
                match message.message() {
                    BackendMessage::ReadyForQuery(_) => {
                        syncs -= 1;
                        if syncs == 0 {
                            return Some(());
                        }
                    }
                    BackendMessage::RowDescription(_) | BackendMessage::NoData => {
                        reply.extend_from_slice(finish::for_client(message).bytes());
                    }
                    BackendMessage::ErrorResponse(_) if error.is_none() => {
                        error = Some(message);
                    }
                    _ => {}
                }
            }
        };
        let answered = read.await.is_some();
        match answered {
            true => self.release(server, false).await,
            false => drop(server),
        }
        match (answered, error) {
            (true, None) => self.plan.push(Step::Local {
                bytes: reply.freeze(),
                ready: false,
            }),
            (true, Some(error)) => {
                self.plan.push(Step::Local {
                    bytes: bytes::Bytes::copy_from_slice(error.bytes()),
                    ready: false,
                });
                self.pipeline.error_relayed();
                self.txn.on_error();
                self.phase.skip();
            }
            (false, _) => self.refuse(ClientError::shard_lost(), false),
        }
        Ok(())
    }
}

/// What a shard is sent to describe `bound`'s portal, and how many
/// ReadyForQuery end its reply. An SQL-prepared statement is prepared
/// there under [`SQL_DESCRIBE`] (with the client's type list), its EXECUTE
/// described, and deallocated again (whether or not the rest worked).
fn describe_request(bound: &Bound) -> (BytesMut, usize) {
    let mut out = BytesMut::new();
    match bound {
        Bound::Statement { statement, bind } => {
            messages::parse(&mut out, b"", &statement.query, &statement.param_types);
            messages::bind(&mut out, bind, b"", &bind.result_formats);
            messages::describe(&mut out, Named::Portal, &bind.portal);
            messages::sync(&mut out);
            (out, 1)
        }
        Bound::Sql {
            body,
            types,
            args,
            result_formats,
        } => {
            messages::query(
                &mut out,
                &format!("PREPARE {SQL_DESCRIBE} {types} AS {body}"),
            );
            let execute = format!("EXECUTE {SQL_DESCRIBE}{args}");
            messages::parse(&mut out, b"", execute.as_bytes(), &[]);
            let bind = Bind {
                portal: bytes::Bytes::new(),
                statement: bytes::Bytes::new(),
                param_formats: Vec::new(),
                params: Vec::new(),
                result_formats: result_formats.clone(),
            };
            messages::bind(&mut out, &bind, b"", result_formats);
            messages::describe(&mut out, Named::Portal, b"");
            messages::sync(&mut out);
            messages::query(&mut out, &format!("DEALLOCATE {SQL_DESCRIBE}"));
            (out, 3)
        }
    }
}
