//! A gathered statement in the extended protocol (a prepared statement, or
//! an SQL EXECUTE of one prepared with SQL PREPARE): its Bind answered here
//! (BindComplete) and held as the phase's portal; a Describe of it answered
//! with the statement's description on one shard (the coordinator's
//! columns are the same: the temp tables have the tables' types); its
//! Execute runs the plan, the finish parsed on the coordinator with the
//! statement's parameter types and bound with the client's values and
//! result formats under the client's portal name. A named portal (one read
//! across Syncs) or an Execute with a row limit (a portal read in parts)
//! is kept on the coordinator's server inside the client's block (its
//! later Describe, Execute and Close follow it there, `gather.rs`'s
//! `Kept`); an SQL EXECUTE so bound is refused (0A000). Any other message
//! ends the portal.

use std::sync::Arc;

use bytes::BytesMut;

use super::{not_yet, Finish, Gathered};
use crate::errors::ClientError;
use crate::execute::gather::finish;
use crate::protocol::backend::{BackendMessage, TransactionStatus};
use crate::protocol::frontend::{Bind, Frame, FrontendKind, FrontendMessage, Named};
use crate::protocol::messages;
use crate::session::cursor::Place;
use crate::session::reply_plan::Step;
use crate::session::statements::Statement;
use crate::session::transaction::Target;
use crate::session::{End, Session};

/// What a message does to a named gathered portal.
enum Action {
    Describe,
    /// Its row limit.
    Execute(i32),
    Close,
}

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

impl GatherPortal {
    /// The client's name for the portal.
    fn portal(&self) -> &bytes::Bytes {
        match &self.bound {
            Bound::Statement { bind, .. } => &bind.portal,
            Bound::Sql { .. } => &UNNAMED,
        }
    }
}

/// The unnamed portal's name.
static UNNAMED: bytes::Bytes = bytes::Bytes::new();

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
        self.local_reply(messages::bind_complete);
        let bound = Bound::Statement {
            statement: Arc::clone(statement),
            bind: bind.clone(),
        };
        let portal = GatherPortal { bound, refusal };
        let in_block = self.status() != TransactionStatus::Idle || self.txn.spans();
        match bind.portal.is_empty() || !in_block {
            true => self.phase.bind_gather(portal),
            false => {
                // Read across Syncs: kept until its Execute, and known as
                // a portal of the coordinator's database meanwhile (so it
                // goes with the block, as the cursors' registry says).
                let coordinator = self.shared.config().general.cross_shard_coordinator;
                let place = Place::Shard {
                    shard: coordinator,
                    hold: false,
                    in_txn: true,
                };
                self.portals
                    .keep_gathered(bind.portal.clone(), place, portal);
            }
        }
        None
    }

    /// A Describe, Execute or Close of a named portal in
    /// the gathered named portals (`session/portals.rs`): whether it was answered here. One the block no
    /// longer holds (the cursors' registry forgot it) is dropped, and the
    /// message goes its usual way.
    pub(in crate::session) async fn on_named_gather_portal(
        &mut self,
        frame: &Frame,
    ) -> Result<bool, End> {
        let (name, action) = match FrontendMessage::decode(frame) {
            Ok(FrontendMessage::Describe {
                kind: Named::Portal,
                name,
            }) => (name, Action::Describe),
            Ok(FrontendMessage::Execute { portal, max_rows }) => {
                (portal, Action::Execute(max_rows))
            }
            Ok(FrontendMessage::Close {
                kind: Named::Portal,
                name,
            }) => (name, Action::Close),
            _ => return Ok(false),
        };
        if self.portals.gathered(&name).is_none() {
            return Ok(false);
        }
        self.phase.end_portal();
        match action {
            Action::Describe => {
                let Some(portal) = self.portals.gathered(&name) else {
                    return Ok(false);
                };
                let bound = portal.bound.clone();
                self.describe_gathered(&bound).await?;
            }
            Action::Close => {
                self.portals.take_gathered(&name);
                self.local_reply(messages::close_complete);
            }
            Action::Execute(max_rows) => {
                let Some(portal) = self.portals.take_gathered(&name) else {
                    return Ok(false);
                };
                self.execute_gathered(portal, max_rows).await?;
            }
        }
        Ok(true)
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
                (
                    "as an SQL EXECUTE in a named portal",
                    "bind it to the unnamed portal",
                ),
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
                let described = match FrontendMessage::decode(frame) {
                    Ok(FrontendMessage::Describe {
                        kind: Named::Portal,
                        name,
                    }) => Some(name),
                    _ => None,
                };
                let Some(described) = described else {
                    // A Describe of a statement goes its usual way and
                    // leaves the portal bound, as on Postgres (tokio-postgres's
                    // `query_typed` sends one between its Bind and Execute).
                    return Ok(false);
                };
                let portal = self.phase.gather_portal();
                let Some(portal) = portal.filter(|p| described == p.portal()) else {
                    // A Describe of another portal ends this one.
                    self.phase.end_portal();
                    return Ok(false);
                };
                let bound = portal.bound.clone();
                self.describe_gathered(&bound).await?;
            }
            FrontendKind::Execute => {
                let (name, max_rows) = match FrontendMessage::decode(frame) {
                    Ok(FrontendMessage::Execute { portal, max_rows }) => (portal, max_rows),
                    _ => (bytes::Bytes::new(), 0),
                };
                if self.phase.gather_portal().map(GatherPortal::portal) != Some(&name) {
                    // Another portal's Execute ends this one.
                    self.phase.end_portal();
                    return Ok(false);
                }
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
    /// Execute's row limit; a prepared statement's portal read in parts
    /// is kept there, `gather.rs`).
    async fn execute_gathered(&mut self, portal: GatherPortal, max_rows: i32) -> Result<(), End> {
        if max_rows > 0 && matches!(portal.bound, Bound::Sql { .. }) {
            let error = not_yet(
                &portal.refusal,
                (
                    "as an SQL EXECUTE with a row limit on its Execute",
                    "execute it without one",
                ),
            );
            self.shared
                .metrics
                .route(crate::metrics::RouteKind::Refused);
            self.refuse(error, false);
            return Ok(());
        }
        let (sql, finish) = match portal.bound {
            Bound::Statement { statement, bind }
                if router::insert_select::is_insert_select(&String::from_utf8_lossy(
                    &statement.query,
                )) =>
            {
                // Its SELECT runs on the coordinator, its rows go to their
                // shards (`insert_select.rs`).
                let sql = String::from_utf8_lossy(&statement.query).into_owned();
                let bound = (bind, statement.param_types.clone(), max_rows);
                let errors = self.pipeline.error_mark();
                let gathered = self
                    .execute_insert_select(&sql, bound, portal.refusal)
                    .await?;
                if matches!(gathered, Gathered::Ran) && self.pipeline.errors_since(errors) {
                    self.phase.skip();
                }
                return Ok(());
            }
            Bound::Statement { statement, bind } => (
                String::from_utf8_lossy(&statement.query).into_owned(),
                Finish::Extended {
                    bind,
                    param_types: statement.param_types.clone(),
                    max_rows,
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
