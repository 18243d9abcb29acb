//! The admin console (database `admin` by default): its message loop and
//! the dispatch of commands, in PgBouncer's shapes where PgBouncer has the
//! command and PgDog's where only PgDog has it. The commands live in
//! `admin/`: `show.rs` (POOLS, CLIENTS, SERVERS, QUERY_CACHE,
//! PREPARED_STATEMENTS), `stats.rs` (STATS), `lists.rs` (DATABASES, USERS,
//! LISTS), `show_config.rs` (CONFIG), `sockets.rs` (FDS), `replication.rs`
//! (REPLICATION: the `auto` servers' roles) and `control.rs`
//! (RELOAD, PAUSE, RESUME, KILL, RECONNECT, WAIT_CLOSE, MAINTENANCE, RESET
//! QUERY_CACHE, SHUTDOWN).

mod control;
mod lists;
mod moves;
mod replication;
mod sequences;
mod show;
mod show_config;
mod sockets;
mod stats;

use std::sync::Arc;

use bytes::BytesMut;

use crate::conn::client::{ClientConn, ReadError};
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frame::SMALL_MESSAGE_LIMIT;
use crate::protocol::frontend::FrontendKind;
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::session::ClientInfo;
use crate::state::State;
pub use control::reload;

/// Serve admin commands until the client leaves.
pub async fn serve(mut client: ClientConn, state: Arc<State>, info: Arc<ClientInfo>) {
    client.accept_messages_up_to(1 << 20);
    greet(client.out(), &info);
    loop {
        if client.flush().await.is_err() {
            return;
        }
        let frame = match client.next_message().await {
            Ok(frame) => frame,
            Err(ReadError::Gone(_)) => return,
            Err(ReadError::Frame(e)) => {
                ClientError::new(sqlstate::PROTOCOL_VIOLATION, e.to_string())
                    .encode_fatal(client.out());
                let _ = client.flush().await;
                return;
            }
        };
        match frame.kind {
            FrontendKind::Query => {
                let body = frame.body();
                let sql = String::from_utf8_lossy(body.strip_suffix(&[0]).unwrap_or(body));
                let mut console = Console {
                    state: &state,
                    client: &mut client,
                };
                if console.run_query(&sql).await.is_err() {
                    return;
                }
            }
            FrontendKind::Terminate => return,
            FrontendKind::Sync => messages::ready_for_query(client.out(), TransactionStatus::Idle),
            _ if frame.body().len() > SMALL_MESSAGE_LIMIT => return,
            _ => ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "the admin console accepts simple queries only",
            )
            .encode(client.out()),
        }
    }
}

/// What a client reads once logged in to the console.
fn greet(out: &mut BytesMut, info: &ClientInfo) {
    messages::authentication(out, 0, &[]);
    for (name, value) in [
        ("server_version", env!("CARGO_PKG_VERSION")),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("standard_conforming_strings", "on"),
        ("integer_datetimes", "on"),
        ("application_name", "pgshard admin"),
    ] {
        messages::parameter_status(out, name, value);
    }
    messages::backend_key_data(out, info.process_id, info.secret);
    messages::ready_for_query(out, TransactionStatus::Idle);
}

/// The client left while a command waited for it (PAUSE, WAIT_CLOSE).
#[derive(Debug)]
struct ClientGone;

/// How a command fails: an error for the client, or the client is gone.
#[derive(Debug)]
enum Failure {
    Error(ClientError),
    Gone(ClientGone),
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Failure {
        Failure::Error(error)
    }
}

/// One admin client's query being answered: the shared state, the client
/// (watched while a command waits) and the replies.
struct Console<'c> {
    state: &'c Arc<State>,
    client: &'c mut ClientConn,
}

impl Console<'_> {
    /// Run each `;`-separated command of a query, stopping at the first
    /// error, and end with ReadyForQuery. `Err` if the client left.
    async fn run_query(&mut self, sql: &str) -> Result<(), ClientGone> {
        let mut any = false;
        for command in sql.split(';').map(str::trim).filter(|c| !c.is_empty()) {
            any = true;
            match self.execute(command).await {
                Ok(()) => {}
                Err(Failure::Error(error)) => {
                    error.encode(self.client.out());
                    break;
                }
                Err(Failure::Gone(gone)) => return Err(gone),
            }
        }
        if !any {
            messages::empty_query_response(self.client.out());
        }
        messages::ready_for_query(self.client.out(), TransactionStatus::Idle);
        Ok(())
    }

    /// Run one admin command, appending its reply.
    async fn execute(&mut self, command: &str) -> Result<(), Failure> {
        let Words {
            verb,
            what,
            what_upper,
            rest,
        } = Words::of(command);
        // A database name, as PgBouncer takes it: bare or double-quoted
        // (after ON/OFF in PgDog's MAINTENANCE).
        let database = match verb.as_str() {
            "MAINTENANCE" => rest.trim_matches('"'),
            _ => what.trim_matches('"'),
        };
        let takes_rest = matches!(
            (verb.as_str(), what_upper.as_str()),
            ("SET", _)
                | ("SHOW", "QUERY_CACHE")
                | ("MAINTENANCE", _)
                | ("SETUP", "SHARDED")
                | ("MOVE", "SHARD")
                | ("CANCEL", "MOVE")
                | ("REBALANCE", _)
        );
        if !rest.is_empty() && !takes_rest {
            return Err(unsupported(command));
        }
        let (state, out) = (self.state, self.client.out());
        match (verb.as_str(), what_upper.as_str()) {
            ("SHOW", "HELP") => show_help(out),
            ("SHOW", "POOLS") => show::show_pools(state, out),
            ("SHOW", "CLIENTS") => show::show_clients(state, out),
            ("SHOW", "SERVERS") => show::show_servers(state, out),
            ("SHOW", "STATS") => stats::show_stats(state, out),
            ("SHOW", "CONFIG") => show_config::show_config(state, out),
            ("SHOW", "QUERY_CACHE") => show::show_query_cache(state, &rest, out),
            ("SHOW", "PREPARED_STATEMENTS" | "PREPARED") => {
                show::show_prepared_statements(state, out)
            }
            ("SHOW", "FDS") => sockets::show_fds(state, out),
            ("SHOW", "REPLICATION") => replication::show_replication(state, out),
            ("SHOW", "DATABASES") => lists::show_databases(state, out),
            ("SHOW", "USERS") => lists::show_users(state, out),
            ("SHOW", "LISTS") => lists::show_lists(state, out),
            ("SHOW", "MOVES") => moves::show_moves(state, out),
            ("MOVE", "SHARD") => moves::move_shard(state, &rest, out)?,
            ("SHOW", "PLACEMENT") => moves::show_placement(state, out),
            ("CANCEL", "MOVE") => moves::cancel(state, &rest, out)?,
            ("REBALANCE", _) => moves::rebalance(state, what, &rest, out)?,
            ("SHOW", "VERSION") => {
                let mut rows = Rows::new(out, &["version"]);
                rows.row(&[format!("pgshard {}", env!("CARGO_PKG_VERSION"))]);
                rows.done("SHOW");
            }
            ("RESET", "QUERY_CACHE") => control::reset_query_cache(state, out),
            ("SETUP", "SHARDED") => {
                let (first, args) = rest.split_once(' ').unwrap_or((&rest, ""));
                if !first.eq_ignore_ascii_case("SEQUENCES") {
                    return Err(unsupported(command));
                }
                sequences::setup(state, args, out).await?;
            }
            // Session settings drivers send at login (pgjdbc: `SET
            // extra_float_digits = 2` to servers it takes for old ones) mean
            // nothing here: accepted, as no-ops, so such drivers can connect.
            ("SET", _) => messages::command_complete(out, "SET"),
            ("RESET", _) => messages::command_complete(out, "RESET"),
            _ => return self.control(&verb, &what_upper, database, command).await,
        }
        Ok(())
    }

    /// The commands that change what pgshard does.
    async fn control(
        &mut self,
        verb: &str,
        what: &str,
        database: &str,
        command: &str,
    ) -> Result<(), Failure> {
        let state = self.state;
        let takes_database = matches!(
            verb,
            "PAUSE" | "RESUME" | "KILL" | "RECONNECT" | "WAIT_CLOSE" | "MAINTENANCE"
        );
        // `None`: every database; an unknown one is an error.
        let target = match database {
            _ if !takes_database => None,
            "" => None,
            name if state.config().clusters.contains_key(name) => Some(name),
            name => {
                return Err(ClientError::new(
                    sqlstate::INVALID_CATALOG_NAME,
                    format!("no such database: {name}"),
                )
                .into())
            }
        };
        match (verb, what, target) {
            ("RELOAD", "", _) => control::reload_command(state, self.client.out())?,
            ("PAUSE", _, _) => self.pause(target).await?,
            ("RESUME", _, _) => control::resume(state, target, self.client.out()),
            ("KILL", _, Some(database)) => control::kill(state, database, self.client.out()),
            ("RECONNECT", _, _) => control::reconnect(state, target, self.client.out()),
            ("WAIT_CLOSE", _, _) => self.wait_close(target).await?,
            ("MAINTENANCE", "ON" | "OFF", _) => {
                control::maintenance(state, what == "ON", target, self.client.out())
            }
            ("SHUTDOWN", "", _) => control::shutdown(state, self.client.out()),
            _ => return Err(unsupported(command)),
        }
        Ok(())
    }
}

/// A command's words: the verb (upper case), the word after it (as
/// written and upper case; PgDog's two-word names `QUERY CACHE` and
/// `PREPARED STATEMENTS` read as `QUERY_CACHE` and `PREPARED_STATEMENTS`),
/// and the rest, joined by single spaces.
struct Words<'c> {
    verb: String,
    what: &'c str,
    what_upper: String,
    rest: String,
}

impl<'c> Words<'c> {
    fn of(command: &'c str) -> Words<'c> {
        let mut words = command.split_whitespace().peekable();
        let verb = words.next().unwrap_or_default().to_ascii_uppercase();
        let what = words.next().unwrap_or_default();
        let mut what_upper = what.to_ascii_uppercase();
        let second = words.peek().map(|w| w.to_ascii_uppercase());
        match (what_upper.as_str(), second.as_deref()) {
            ("QUERY", Some("CACHE")) | ("PREPARED", Some("STATEMENTS")) => {
                what_upper = format!("{what_upper}_{}", second.unwrap_or_default());
                words.next();
            }
            _ => {}
        }
        Words {
            verb,
            what,
            what_upper,
            rest: words.collect::<Vec<_>>().join(" "),
        }
    }
}

fn unsupported(command: &str) -> Failure {
    Failure::Error(ClientError::new(
        sqlstate::SYNTAX_ERROR,
        format!("unsupported admin command: {command} (SHOW HELP lists them)"),
    ))
}

/// The commands, as `SHOW HELP` lists them (PgBouncer's shape: a NOTICE
/// whose detail has one line per command family).
const HELP: &str = "\
SHOW HELP|CONFIG|DATABASES|POOLS|CLIENTS|SERVERS|USERS|VERSION
SHOW FDS|LISTS|STATS|PREPARED_STATEMENTS|REPLICATION
SHOW QUERY_CACHE [<filter>]
RELOAD
PAUSE [<db>]
RESUME [<db>]
KILL <db>
RECONNECT [<db>]
WAIT_CLOSE [<db>]
MAINTENANCE ON|OFF [<db>]
RESET QUERY_CACHE
SETUP SHARDED SEQUENCES [<db> [<table>]]
MOVE SHARD <s> TO <n> [IN <db>] [OF <table>]
CANCEL MOVE [<id>]
REBALANCE [<db>] [PARALLEL <n>]
SHOW MOVES|PLACEMENT
SHUTDOWN";

fn show_help(out: &mut BytesMut) {
    messages::notice(out, "Console usage", HELP);
    messages::command_complete(out, "SHOW");
}

/// A result set being built.
struct Rows<'a> {
    out: &'a mut BytesMut,
    count: usize,
}

impl<'a> Rows<'a> {
    fn new(out: &'a mut BytesMut, columns: &[&str]) -> Rows<'a> {
        messages::row_description(out, columns);
        Rows { out, count: 0 }
    }

    fn row(&mut self, values: &[String]) {
        let values: Vec<Option<&str>> = values.iter().map(|v| Some(v.as_str())).collect();
        messages::data_row(self.out, &values);
        self.count += 1;
    }

    fn done(self, command: &str) {
        messages::command_complete(self.out, command);
    }
}
