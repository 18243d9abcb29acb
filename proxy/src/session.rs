//! One client session after login: client messages are rewritten where
//! pooling requires it (statement names, settings) and forwarded to a pooled
//! server connection, which the session holds for one transaction
//! (transaction mode) or for its whole life (session mode); server replies
//! are relayed in order, with pgshard's own replies interleaved by the plan.

pub mod login;
pub mod params;
pub mod plan;
pub mod routing;
pub mod segment;
pub mod statements;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use router::config::PoolerMode;
use router::route::Overrides;
use router::sharding::{ParserEngine, Sharding};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tracing::{debug, warn};

use crate::pool::{PoolError, Pooled};
use crate::protocol::backend::{error_code, error_response, sqlstate, Severity};
use crate::protocol::frame::FrontendMessage;
use crate::protocol::frame::{decode_frontend_frame, Frame};
use crate::protocol::messages;
use crate::server_conn::ServerError;
use crate::state::{
    CancelTarget, ClientInfo, ClusterPools, State, CLIENT_ACTIVE, CLIENT_IDLE, CLIENT_WAITING,
};
use params::{Kind, ParamChange, ParamSet};
use plan::{Effect, Plan, Step};
use routing::{Target, Txn};
use segment::Segment;
use statements::{ClientStatements, Statement};

/// Flush replies to the client once this much is buffered.
pub(crate) const CLIENT_FLUSH_AT: usize = 64 * 1024;

/// Why a session ends.
#[derive(Debug)]
pub(crate) enum End {
    /// Terminate, EOF or a broken client socket.
    ClientGone,
    /// A FATAL error to send before closing.
    Fatal(&'static str, String),
}

/// What a logged-in session starts from.
pub struct Start {
    pub state: Arc<State>,
    pub info: Arc<ClientInfo>,
    pub pools: ClusterPools,
    pub mode: PoolerMode,
    pub defaults: ParamSet,
    pub max_message: usize,
    pub prepared_limit: usize,
    /// In session mode, the server the login already checked out.
    pub server: Option<Pooled>,
}

pub struct Session<S> {
    state: Arc<State>,
    info: Arc<ClientInfo>,
    pools: ClusterPools,
    generation: u64,
    mode: PoolerMode,
    client: S,
    cbuf: BytesMut,
    to_client: BytesMut,
    to_server: BytesMut,
    server: Option<Pooled>,
    plan: Plan,
    statements: ClientStatements,
    /// Startup settings: what RESET returns to.
    defaults: ParamSet,
    /// The settings the client expects now.
    params: ParamSet,
    /// Settings changed inside the open transaction: kept on COMMIT.
    pending: Vec<ParamChange>,
    /// pgshard refused an extended-protocol message: skip to Sync, as
    /// Postgres does after an error.
    skipping: bool,
    /// Extended-protocol messages were sent with no Sync after them yet.
    unsynced: bool,
    /// The server is in COPY IN.
    copy_in: bool,
    /// The running Query/Sync has already reported an error.
    failed: bool,
    max_message: usize,
    prepared_limit: usize,
    checked_out_at: Instant,
    /// The cluster's sharding model and parser engine (refreshed on reload).
    sharding: Arc<Sharding>,
    engine: ParserEngine,
    /// The shard of the attached server.
    shard: usize,
    txn: Txn,
    /// `SET pgdog.shard` / `SET pgdog.sharding_key`.
    overrides: Overrides,
    /// They were set inside a transaction: they end with it.
    overrides_in_txn: bool,
    /// A Bind that goes to several shards, held with what follows until Sync.
    batch: Option<Segment>,
    /// The portal just bound is transaction control pgshard answers itself
    /// (extended protocol): its Describe and Execute get local replies, with
    /// this command tag, until the next Parse, Bind or Sync.
    local_portal: Option<&'static str>,
    /// Setting changes of extended-protocol statements bound since the last
    /// Sync: the client's once that Sync's ReadyForQuery comes without an
    /// error in between (an error rolls the implicit transaction back).
    extended_settings: Vec<ParamChange>,
    /// Session mode: the client's settings differ from the server's (a
    /// RESET returned the server to its own default, not the client's
    /// startup value); brought in line before the next statement.
    resync: bool,
    /// ErrorResponses relayed to the client for the segment it is sending
    /// (after its last Sync): the rest of that segment is to be skipped.
    segment_errors: u64,
    /// The server connection (id) that holds the client's unnamed
    /// statement: the last Parse of it went there, and no simple query
    /// (which drops it) followed. Elsewhere it is parsed again first.
    unnamed_on: Option<u64>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    pub fn new(client: S, cbuf: BytesMut, start: Start) -> Session<S> {
        let generation = start.state.generation.load(Ordering::Acquire);
        let (sharding, engine) = sharding_of(&start.state, &start.info.database);
        Session {
            sharding,
            engine,
            shard: 0,
            txn: Txn::None,
            overrides: Overrides::default(),
            overrides_in_txn: false,
            batch: None,
            local_portal: None,
            segment_errors: 0,
            extended_settings: Vec::new(),
            resync: false,
            unnamed_on: None,
            generation,
            state: start.state,
            info: start.info,
            pools: start.pools,
            mode: start.mode,
            client,
            cbuf,
            to_client: BytesMut::with_capacity(8 * 1024),
            to_server: BytesMut::with_capacity(8 * 1024),
            server: start.server,
            plan: Plan::default(),
            statements: ClientStatements::default(),
            params: start.defaults.clone(),
            defaults: start.defaults,
            pending: Vec::new(),
            skipping: false,
            unsynced: false,
            copy_in: false,
            failed: false,
            max_message: start.max_message,
            prepared_limit: start.prepared_limit,
            checked_out_at: Instant::now(),
        }
    }

    /// Serve the client until it leaves; the server connection goes back to
    /// its pool clean, or is closed.
    pub async fn run(mut self) {
        if let Some(server) = &self.server {
            self.set_cancel_target(Some(cancel_target(server))).await;
        }
        let end = self.serve().await;
        if let End::Fatal(code, message) = &end {
            self.to_client.clear();
            error_response(&mut self.to_client, Severity::Fatal, code, message);
            let _ = self.client.write_all(&self.to_client).await;
        }
        self.finish().await;
        self.state.unregister_client(self.info.process_id);
    }

    async fn serve(&mut self) -> End {
        let mut shutdown = self.state.shutdown.subscribe();
        loop {
            loop {
                let frame = match decode_frontend_frame(&mut self.cbuf, self.max_message) {
                    Ok(Some(frame)) => frame,
                    Ok(None) => break,
                    Err(e) => return End::Fatal(sqlstate::PROTOCOL_VIOLATION, e.to_string()),
                };
                if let Err(end) = self.on_client_frame(frame).await {
                    return end;
                }
            }
            if let Err(end) = self.flush().await {
                return end;
            }
            if let Err(end) = self.maybe_release().await {
                return end;
            }
            let query_timeout = self
                .server
                .as_ref()
                .and_then(|s| s.pool().settings.query_timeout)
                .filter(|_| self.plan.awaiting_server());
            match &mut self.server {
                Some(server) => {
                    let timeout = async {
                        match query_timeout {
                            Some(t) => tokio::time::sleep(t).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        read = self.client.read_buf(&mut self.cbuf) => match read {
                            Ok(0) | Err(_) => return End::ClientGone,
                            Ok(n) => count(&server.pool().stats.bytes_received, n),
                        },
                        read = server.conn.stream.read_buf(&mut server.conn.rbuf) => match read {
                            Ok(0) | Err(_) => {
                                warn!("server connection lost mid-session");
                                self.server = None;
                                return End::Fatal(
                                    sqlstate::CONNECTION_FAILURE,
                                    "server closed the connection unexpectedly".into(),
                                );
                            }
                            Ok(_) => {
                                if let Err(end) = self.on_server_data().await {
                                    return end;
                                }
                            }
                        },
                        () = timeout => self.cancel_running_query().await,
                    }
                }
                None => {
                    tokio::select! {
                        read = self.client.read_buf(&mut self.cbuf) => match read {
                            Ok(0) | Err(_) => return End::ClientGone,
                            // Counted where the client's last server was.
                            Ok(n) => if let Some(pool) = self.pools.get(self.shard) {
                                count(&pool.stats.bytes_received, n);
                            },
                        },
                        _ = shutdown.wait_for(|s| *s) => {
                            return End::Fatal(
                                sqlstate::ADMIN_SHUTDOWN,
                                "terminating connection: pgshard is shutting down".into(),
                            );
                        }
                    }
                }
            }
        }
    }

    /// One client message.
    async fn on_client_frame(&mut self, frame: Frame) -> Result<(), End> {
        let tag = frame.tag;

        if self.skipping && matches!(tag, b'P' | b'B' | b'D' | b'E' | b'C' | b'H') {
            return Ok(());
        }
        if let Some(tag) = self.local_portal {
            match frame.tag {
                b'E' => {
                    self.local_tag(tag, false);
                    return Ok(());
                }
                b'D' => {
                    self.local_reply(messages::no_data);
                    return Ok(());
                }
                b'C' => {
                    self.local_reply(messages::close_complete);
                    return Ok(());
                }
                b'H' => return Ok(()),
                _ => self.local_portal = None,
            }
        }
        if self.batch.is_some() {
            return self.on_segment_frame(frame).await;
        }
        match tag {
            b'Q' => self.on_query(frame).await,
            b'P' => self.on_parse(frame).await,
            b'B' | b'D' => self.on_bind_or_describe(frame).await,
            b'E' => {
                self.forward_extended(&frame, Step::forward(plan::EXECUTE))
                    .await
            }
            b'C' => self.on_close(frame).await,
            b'S' => {
                self.skipping = false;
                self.unsynced = false;
                if self.server.is_none() && !self.plan.awaiting_server() {
                    // Everything since the last Sync was answered locally.
                    self.plan.push(Step::Local {
                        bytes: Bytes::new(),
                        ready: true,
                    });
                    return Ok(());
                }
                if self.copy_in {
                    // Postgres ignores Sync in COPY IN: no reply is owed.
                    self.put_frame(&frame);
                    return Ok(());
                }
                self.count_query();
                self.put_frame(&frame);
                self.plan.push(Step::forward(plan::SYNC));
                Ok(())
            }
            b'H' => {
                if self.server.is_some() {
                    self.put_frame(&frame);
                }
                Ok(())
            }
            b'F' => {
                if !self.ensure_server_or_reply(Target::Any, true).await? {
                    return Ok(());
                }
                self.count_query();
                self.put_frame(&frame);
                self.plan.push(Step::forward(plan::SYNC));
                Ok(())
            }
            b'd' | b'c' | b'f' => {
                if tag != b'd' {
                    self.copy_in = false;
                }
                if self.server.is_some() {
                    self.put_frame(&frame);
                }
                Ok(())
            }
            b'X' => Err(End::ClientGone),
            other => Err(End::Fatal(
                sqlstate::PROTOCOL_VIOLATION,
                format!("invalid frontend message type {}", char::from(other)),
            )),
        }
    }

    async fn on_query(&mut self, frame: Frame) -> Result<(), End> {
        let sql_bytes = frame.body.strip_suffix(&[0]).unwrap_or(&frame.body);
        let sql = String::from_utf8_lossy(sql_bytes);
        let kind = params::classify(&sql);
        let mut dirty = kind == Kind::SessionState;
        let mut effect = Effect::None;
        match kind {
            Kind::Plain | Kind::SessionState => {}
            Kind::Setting => match params::setting_changes(&sql) {
                Some(changes) if !changes.is_empty() => effect = Effect::Settings(changes),
                Some(_) => {}
                None => dirty = true,
            },
            Kind::Deallocate => match params::deallocate_target(&sql) {
                Some(Some(name)) if self.statements.remove(name.as_bytes()).is_some() => {
                    // A statement pgshard renamed: only the client's name goes.
                    let mut reply = BytesMut::new();
                    messages::command_complete(&mut reply, "DEALLOCATE");
                    self.plan.push(Step::Local {
                        bytes: reply.freeze(),
                        ready: true,
                    });
                    return Ok(());
                }
                Some(None) => {
                    self.statements.clear();
                    effect = Effect::DeallocateAll;
                }
                _ => {}
            },
            Kind::DiscardAll => effect = Effect::DiscardAll,
        }
        let target = if self.sharded() {
            match self.route_query(&sql).await? {
                routing::Plan::Done => return Ok(()),
                routing::Plan::Send(target) => target,
            }
        } else {
            Target::Any
        };
        if !self.ensure_server_or_reply(target, true).await? {
            return Ok(());
        }
        if let Some(server) = &mut self.server {
            server.conn.dirty |= dirty && self.mode == PoolerMode::Transaction;
        }
        self.count_query();
        self.unnamed_on = None;
        self.put_frame(&frame);
        self.plan.push(Step::forward_with(plan::SYNC, effect));
        Ok(())
    }

    async fn on_parse(&mut self, frame: Frame) -> Result<(), End> {
        let frame_bytes = frame.clone();
        let (name, query, param_types) = match FrontendMessage::decode(frame) {
            Ok(FrontendMessage::Parse {
                name,
                query,
                param_types,
            }) => (name, query, param_types),
            Ok(_) => return Ok(()),
            Err(e) => return Err(End::Fatal(sqlstate::PROTOCOL_VIOLATION, e.to_string())),
        };
        let statement = self.state.statements.get_or_insert(&query, &param_types);
        if let Err(message) = self.statements.insert(name.clone(), Arc::clone(&statement)) {
            self.local_error(sqlstate::DUPLICATE_PREPARED_STATEMENT, &message, false);
            return Ok(());
        }
        self.unsynced = true;
        if name.is_empty() {
            return self.on_unnamed_parse(&frame_bytes, &statement);
        }
        let Some(server) = &mut self.server else {
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
        server.conn.dirty |= statement.leaves_state && self.mode == PoolerMode::Transaction;
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
    fn on_unnamed_parse(&mut self, frame: &Frame, statement: &Statement) -> Result<(), End> {
        let Some(server) = &mut self.server else {
            self.unnamed_on = None;
            self.local_reply(messages::parse_complete);
            return Ok(());
        };
        server.conn.dirty |= statement.leaves_state && self.mode == PoolerMode::Transaction;
        self.unnamed_on = Some(server.conn.id);
        self.put_frame(frame);
        self.plan.push(Step::forward(plan::PARSE));
        Ok(())
    }

    /// A reply pgshard makes itself, in its place among the server's.
    fn local_reply(&mut self, encode: fn(&mut BytesMut)) {
        let mut reply = BytesMut::new();
        encode(&mut reply);
        self.plan.push(Step::Local {
            bytes: reply.freeze(),
            ready: false,
        });
    }

    /// Send `statement`'s Parse to the attached server, closing its least
    /// recently used statement first if the server holds too many. With
    /// `forward` the reply is the client's; else it is swallowed. If the
    /// Parse fails, `client_name` stops naming the statement.
    fn prepare_on_server(
        &mut self,
        statement: &Statement,
        forward: bool,
        client_name: Option<Bytes>,
    ) {
        let Some(server) = &mut self.server else {
            return;
        };
        let conn = &mut server.conn;
        if conn.prepared.len() >= self.prepared_limit {
            if let Some(oldest) = conn.prepared.oldest() {
                conn.prepared.remove(oldest);
                messages::close(
                    &mut self.to_server,
                    b'S',
                    format!("__pgshard_{oldest}").as_bytes(),
                );
                self.plan
                    .push(Step::injected(plan::CLOSE, Effect::Closed(oldest)));
            }
        }
        self.to_server.extend_from_slice(&statement.parse);
        conn.prepared.insert(statement.id);
        let effect = Effect::Prepared(statement.id, client_name);
        self.plan.push(if forward {
            Step::forward_with(plan::PARSE, effect)
        } else {
            Step::injected(plan::PARSE, effect)
        });
    }

    /// Bind and Describe: a statement name pgshard renamed is rewritten,
    /// and prepared first if this server lacks it.
    async fn on_bind_or_describe(&mut self, frame: Frame) -> Result<(), End> {
        let terminals = if frame.tag == b'B' {
            plan::BIND
        } else {
            plan::DESCRIBE
        };
        let body = &frame.body;
        // Where the statement name starts: after the portal name (Bind) or
        // the kind byte (Describe of a statement).
        let name_start = match frame.tag {
            b'B' => body.iter().position(|&b| b == 0).map(|p| p + 1),
            _ if body.first() == Some(&b'S') => Some(1),
            _ => None,
        };
        let Some(name_start) = name_start else {
            return self
                .forward_extended(&frame, Step::forward(terminals))
                .await;
        };
        let Some(name_len) = body[name_start..].iter().position(|&b| b == 0) else {
            return Err(End::Fatal(
                sqlstate::PROTOCOL_VIOLATION,
                format!("malformed \"{}\" message", char::from(frame.tag)),
            ));
        };
        let Some(statement) = self
            .statements
            .get(&body[name_start..name_start + name_len])
            .cloned()
        else {
            // Not prepared through pgshard (or never prepared): Postgres
            // gives the client the error it would give anyway.
            return self
                .forward_extended(&frame, Step::forward(terminals))
                .await;
        };
        let rest = &body[name_start + name_len..];
        let unnamed = name_len == 0;
        // The name the server knows the statement by.
        let server_name: &[u8] = if unnamed { b"" } else { &statement.name };
        let target = if self.sharded() && frame.tag == b'B' {
            let bind = match FrontendMessage::decode(frame.clone()) {
                Ok(FrontendMessage::Bind(bind)) => bind,
                Ok(_) => return Ok(()),
                Err(e) => return Err(End::Fatal(sqlstate::PROTOCOL_VIOLATION, e.to_string())),
            };
            let target = self.route_bind(&statement, unnamed, &bind, |out| {
                let at = messages::begin(out, b'B');
                out.put_slice(&body[..name_start]);
                out.put_slice(server_name);
                out.put_slice(rest);
                messages::finish(out, at);
            });
            match target {
                Some(target) => target,
                None => {
                    self.unsynced = true;
                    return Ok(());
                }
            }
        } else if self.sharded() {
            self.describe_target(&statement)
        } else {
            Target::Any
        };
        if !self.ensure_server_or_reply(target, false).await? {
            return Ok(());
        }
        if let Some(server) = &mut self.server {
            server.conn.dirty |= statement.leaves_state && self.mode == PoolerMode::Transaction;
            if unnamed {
                if self.unnamed_on != Some(server.conn.id) {
                    self.unnamed_on = Some(server.conn.id);
                    messages::parse(
                        &mut self.to_server,
                        b"",
                        &statement.query,
                        &statement.param_types,
                    );
                    self.plan.push(Step::injected(plan::PARSE, Effect::None));
                }
            } else if !server.conn.prepared.contains(statement.id) {
                let name = Bytes::copy_from_slice(&body[name_start..name_start + name_len]);
                self.prepare_on_server(&statement, false, Some(name));
            }
        }
        let at = messages::begin(&mut self.to_server, frame.tag);
        self.to_server.put_slice(&body[..name_start]);
        self.to_server.put_slice(server_name);
        self.to_server.put_slice(rest);
        messages::finish(&mut self.to_server, at);
        self.unsynced = true;
        if frame.tag == b'B' {
            if let Some(changes) = &statement.settings {
                self.extended_settings.extend(changes.iter().cloned());
            }
        }
        self.plan.push(if frame.tag == b'B' && !unnamed {
            Step::forward_with(terminals, Effect::Bound(statement.id))
        } else {
            Step::forward(terminals)
        });
        Ok(())
    }

    async fn on_close(&mut self, frame: Frame) -> Result<(), End> {
        match FrontendMessage::decode(frame.clone()) {
            Ok(FrontendMessage::Close { kind: b'S', name }) => {
                // Servers keep the statement for other clients; closing a
                // name that does not exist is not an error in Postgres.
                self.statements.remove(&name);
                self.local_reply(messages::close_complete);
                Ok(())
            }
            Ok(_) => {
                self.forward_extended(&frame, Step::forward(plan::CLOSE))
                    .await
            }
            Err(e) => Err(End::Fatal(sqlstate::PROTOCOL_VIOLATION, e.to_string())),
        }
    }

    async fn forward_extended(&mut self, frame: &Frame, step: Step) -> Result<(), End> {
        if !self.ensure_server_or_reply(Target::Any, false).await? {
            return Ok(());
        }
        self.unsynced = true;
        self.put_frame(frame);
        self.plan.push(step);
        Ok(())
    }

    /// An error pgshard raises itself. In the extended protocol the rest up
    /// to Sync is skipped, as Postgres does; a simple query gets its
    /// ReadyForQuery right away.
    fn local_error(&mut self, code: &str, message: &str, simple: bool) {
        let mut reply = BytesMut::new();
        error_response(&mut reply, Severity::Error, code, message);
        self.plan.push(Step::Local {
            bytes: reply.freeze(),
            ready: simple,
        });
        if !simple {
            self.skipping = true;
        }
    }

    /// Make sure a server is attached; if none can be had, reply with the
    /// error and return `Ok(false)`.
    async fn ensure_server_or_reply(&mut self, target: Target, simple: bool) -> Result<bool, End> {
        if self.sharded() && !self.fit_server(target, simple).await? {
            return Ok(false);
        }
        if self.server.is_none() {
            let shard = match target {
                Target::Shard(shard) | Target::Near(shard) => shard,
                Target::Any if self.sharded() => self.any_shard(),
                Target::Any => 0,
            };
            if let Err(err) = self.attach(shard).await? {
                let (code, message) = pool_error_reply(&err);
                self.local_error(code, &message, simple);
                return Ok(false);
            }
        }
        if matches!(target, Target::Shard(_)) {
            self.open_deferred();
        }
        self.resync_settings();
        Ok(true)
    }

    /// Session mode: after a RESET (or a SET to DEFAULT), the server holds
    /// its own default where the client's startup value belongs (Postgres
    /// resets to the startup packet's values, which this server connection
    /// never saw): set them before the next statement, outside any
    /// transaction.
    fn resync_settings(&mut self) {
        if !self.resync || self.plan.awaiting_server() {
            return;
        }
        let Some(server) = &mut self.server else {
            return;
        };
        if server.conn.status != b'I' {
            return;
        }
        self.resync = false;
        if let Some(sql) = self.params.sync_sql(&server.conn.applied) {
            server.conn.applied = self.params.clone();
            self.unnamed_on = None;
            messages::query(&mut self.to_server, &sql);
            self.plan.push(Step::injected_query());
        }
    }

    /// Check a server of `shard` out and attach it to this session.
    async fn attach(&mut self, shard: usize) -> Result<Result<(), PoolError>, End> {
        let server = match self.checkout_server(shard).await? {
            Ok(server) => server,
            Err(err) => return Ok(Err(err)),
        };
        self.set_cancel_target(Some(cancel_target(&server))).await;
        State::set_client_state(&self.info, CLIENT_ACTIVE);
        self.checked_out_at = Instant::now();
        self.server = Some(server);
        self.shard = shard;
        Ok(Ok(()))
    }

    /// Check a server of `shard` out of its pool and bring its settings in
    /// line. Waiting (for PAUSE to end, for a free connection) ends early,
    /// with `Err`, if the client leaves meanwhile.
    async fn checkout_server(&mut self, shard: usize) -> Result<Result<Pooled, PoolError>, End> {
        if *self.state.paused.borrow() {
            let mut paused = self.state.paused.subscribe();
            let resumed = paused.wait_for(|p| !*p);
            let _ = watch_client(&mut self.client, &mut self.cbuf, resumed).await?;
        }
        let generation = self.state.generation.load(Ordering::Acquire);
        if generation != self.generation {
            if let Some(pools) = self.state.pools(&self.info.database, &self.info.user) {
                self.pools = pools;
            }
            (self.sharding, self.engine) = sharding_of(&self.state, &self.info.database);
            self.generation = generation;
        }
        let Some(pool) = self.pools.get(shard).cloned() else {
            return Ok(Err(PoolError::Closed));
        };
        State::set_client_state(&self.info, CLIENT_WAITING);
        let result = watch_client(&mut self.client, &mut self.cbuf, pool.checkout()).await;
        State::set_client_state(&self.info, CLIENT_IDLE);
        let mut server = match result? {
            Ok(server) => server,
            Err(err) => return Ok(Err(err)),
        };
        if let Some(sql) = self.params.sync_sql(&server.conn.applied) {
            match server.conn.run(&sql).await {
                Ok(Ok(())) => server.conn.applied = self.params.clone(),
                Ok(Err(message)) => {
                    // The client's settings were valid when it set them; a
                    // server that refuses them now is not one to use.
                    warn!(%message, "server refused the client's settings");
                    return Ok(Err(PoolError::Server(ServerError::Refused(message))));
                }
                Err(err) => return Ok(Err(PoolError::Server(err))),
            }
        }
        Ok(Ok(server))
    }

    fn put_frame(&mut self, frame: &Frame) {
        put_frame(&mut self.to_server, frame);
    }

    fn count_query(&self) {
        if let Some(server) = &self.server {
            server
                .pool()
                .stats
                .query_count
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The transaction status the client sees.
    fn status(&self) -> u8 {
        self.client_status(self.server.as_ref().map_or(b'I', |s| s.conn.status))
    }

    /// Send what is buffered: to the server first, so it starts working.
    async fn flush(&mut self) -> Result<(), End> {
        if !self.to_server.is_empty() {
            if let Some(server) = &mut self.server {
                if server.conn.stream.write_all(&self.to_server).await.is_err() {
                    self.server = None;
                    return Err(End::Fatal(
                        sqlstate::CONNECTION_FAILURE,
                        "server closed the connection unexpectedly".into(),
                    ));
                }
            }
            self.to_server.clear();
        }
        let status = self.status();
        self.plan.drain_local(&mut self.to_client, status);
        self.flush_client().await
    }

    async fn flush_client(&mut self) -> Result<(), End> {
        if self.to_client.is_empty() {
            return Ok(());
        }
        let result = self.client.write_all(&self.to_client).await;
        self.to_client.clear();
        result.map_err(|_| End::ClientGone)
    }

    /// Handle every whole message the server has sent.
    async fn on_server_data(&mut self) -> Result<(), End> {
        loop {
            let Some(server) = &mut self.server else {
                return Ok(());
            };
            let (conn, pool) = server.parts();
            if conn.rbuf.len() < 5 {
                break;
            }
            let tag = conn.rbuf[0];
            let len = u32::from_be_bytes([conn.rbuf[1], conn.rbuf[2], conn.rbuf[3], conn.rbuf[4]])
                as usize;
            if len < 4 {
                self.server = None;
                return Err(End::Fatal(
                    sqlstate::PROTOCOL_VIOLATION,
                    "invalid message from server".into(),
                ));
            }
            if conn.rbuf.len() < 1 + len {
                conn.rbuf.reserve(1 + len - conn.rbuf.len());
                break;
            }
            self.plan.drain_local(
                &mut self.to_client,
                routing::client_status(&self.txn, conn.status),
            );
            let message = conn.rbuf.split_to(1 + len);

            let body = &message[5..];
            match tag {
                b'Z' => {
                    conn.status = body.first().copied().unwrap_or(b'I');
                    if conn.status == b'I' && self.txn == Txn::None && self.overrides_in_txn {
                        self.overrides = Overrides::default();
                        self.overrides_in_txn = false;
                    }
                }
                b'S' => conn.note_parameter(body),
                b'C' => {
                    retire_on_ddl(&self.state, body);
                    if body.starts_with(b"COMMIT\0") {
                        for change in self.pending.drain(..) {
                            self.params.apply(&change, &self.defaults);
                            conn.applied.apply_on_server(&change);
                            self.resync |= self.mode == PoolerMode::Session;
                        }
                    } else if body.starts_with(b"ROLLBACK\0") {
                        self.pending.clear();
                    }
                }
                b'E' if self.plan.at_sync() => self.failed = true,
                b'G' => {
                    self.copy_in = true;
                    if !self.plan.at_sync() {
                        self.plan.copy_in_started();
                    }
                }
                _ => {}
            }
            let verdict = self.plan.on_server_message(tag);
            if tag == b'E' && verdict.forward && matches!(self.txn, Txn::Deferred(_)) {
                // A statement of the transaction failed (it ran outside it,
                // before it opened): the transaction is aborted, as it
                // would be on Postgres.
                self.txn = Txn::Failed;
            }
            if let Some(Effect::Bound(id)) = verdict.failed.first() {
                if error_code(body).is_some_and(stale_statement) {
                    self.state.statements.retire(*id);
                }
            }
            for effect in verdict.failed {
                match effect {
                    Effect::Prepared(id, name) => {
                        conn.prepared.remove(id);
                        if let Some(name) = name {
                            self.statements.remove_if_id(&name, id);
                        }
                    }
                    Effect::Named(id, name) => self.statements.remove_if_id(&name, id),
                    Effect::Closed(id) => conn.prepared.insert(id),
                    _ => {}
                }
            }
            if tag == b'E' && verdict.forward {
                self.extended_settings.clear();
            }
            if tag == b'Z' {
                let status = conn.status;
                let extended = std::mem::take(&mut self.extended_settings);
                if !self.failed {
                    let changes = match &verdict.completed {
                        Effect::Settings(changes) => changes.clone(),
                        _ => Vec::new(),
                    };
                    for change in changes.into_iter().chain(extended) {
                        if status == b'I' {
                            self.params.apply(&change, &self.defaults);
                            conn.applied.apply_on_server(&change);
                            self.resync |= self.mode == PoolerMode::Session;
                        } else {
                            self.pending.push(change);
                        }
                    }
                }
                if !self.failed {
                    match verdict.completed {
                        Effect::DiscardAll => {
                            conn.prepared.clear();
                            conn.applied = ParamSet::default();
                            conn.dirty = false;
                            self.statements.clear();
                            self.params = self.defaults.clone();
                            self.pending.clear();
                        }
                        Effect::DeallocateAll => conn.prepared.clear(),
                        _ => {}
                    }
                }
                self.failed = false;
                if status == b'I' {
                    pool.stats.xact_count.fetch_add(1, Ordering::Relaxed);
                }
            }
            if verdict.forward {
                if tag == b'Z' && self.txn != Txn::None {
                    // pgshard holds a transaction the server does not know of.
                    let status = routing::client_status(&self.txn, conn.status);
                    messages::ready_for_query(&mut self.to_client, status);
                } else {
                    self.to_client.extend_from_slice(&message);
                }
                if tag == b'E' && self.plan.pending_syncs() <= 1 {
                    // An error of the latest segment (what the client sent
                    // after its last Sync, or since its last Query), not of
                    // an earlier one still being answered.
                    self.segment_errors += 1;
                }
                count(&pool.stats.bytes_sent, message.len());
            }
            if self.to_client.len() >= CLIENT_FLUSH_AT {
                self.flush_client().await?;
            }
        }
        let status = self.status();
        self.plan.drain_local(&mut self.to_client, status);
        self.flush_client().await
    }

    /// In transaction mode, give the server back once the transaction is
    /// over and nothing is in flight.
    async fn maybe_release(&mut self) -> Result<(), End> {
        if self.mode != PoolerMode::Transaction {
            return Ok(());
        }
        let Some(server) = &self.server else {
            return Ok(());
        };
        if self.plan.awaiting_server()
            || self.unsynced
            || self.copy_in
            || server.conn.status != b'I'
            || !self.to_server.is_empty()
        {
            return Ok(());
        }
        if let Some(server) = self.server.take() {
            self.release(server, false).await;
        }
        Ok(())
    }

    /// Hand a server back clean, or close it. `reset` runs DISCARD ALL
    /// (session mode's end); a dirty server gets it regardless.
    async fn release(&mut self, mut server: Pooled, reset: bool) {
        if self.unnamed_on == Some(server.conn.id) {
            self.unnamed_on = None;
        }
        self.set_cancel_target(None).await;
        State::set_client_state(&self.info, CLIENT_IDLE);
        let pool = Arc::clone(server.pool());
        count(
            &pool.stats.xact_time_us,
            self.checked_out_at.elapsed().as_micros() as usize,
        );
        let cleanup = async {
            if server.conn.status != b'I' {
                server.conn.run("ROLLBACK").await.ok()?.ok()?;
            }
            if reset || server.conn.dirty {
                server.conn.run("DISCARD ALL").await.ok()?.ok()?;
                server.conn.prepared.clear();
                server.conn.applied = ParamSet::default();
                server.conn.dirty = false;
            }
            Some(())
        };
        match tokio::time::timeout(CLEANUP_TIMEOUT, cleanup).await {
            Ok(Some(())) => pool.checkin(server),
            _ => debug!("server connection closed instead of reset"),
        }
    }

    /// The client is gone: leave its server rolled back (and reset in
    /// session mode) before anyone else gets it.
    async fn finish(&mut self) {
        let Some(server) = self.server.take() else {
            return;
        };
        if self.plan.awaiting_server() || self.unsynced || self.copy_in {
            // A query is still running: closing the connection makes
            // Postgres abort it and roll back; nothing else is as sure. A
            // cancel first stops a statement that would not notice the
            // closed socket until it next writes (pg_sleep, a long scan).
            if self.plan.awaiting_server() {
                let target = cancel_target(&server);
                tokio::spawn(async move { crate::cancel::send(&target).await });
            }
            self.set_cancel_target(None).await;
            return;
        }
        let reset = self.mode == PoolerMode::Session;
        self.release(server, reset).await;
    }

    async fn set_cancel_target(&self, target: Option<CancelTarget>) {
        *self.info.cancel.lock().await = target;
    }

    /// `query_timeout` passed: cancel the running query; the server answers
    /// with its "canceling statement" error.
    async fn cancel_running_query(&mut self) {
        if let Some(server) = &self.server {
            warn!(timeout = ?server.pool().settings.query_timeout, "query_timeout: cancelling");
            let target = cancel_target(server);
            tokio::spawn(async move { crate::cancel::send(&target).await });
        }
    }
}

/// Most client bytes buffered while a session waits on something else
/// (a pool, PAUSE, a fan-out); past it the client is not read until the
/// wait ends (pipelining clients wait, as with a full socket buffer).
const WATCH_BUFFER_LIMIT: usize = 1024 * 1024;

/// Wait for `wait` while watching the client: what it sends meanwhile is
/// kept in `cbuf` for later; if it leaves, the wait is abandoned with
/// [`End::ClientGone`] (dropping `wait` gives back whatever it held).
pub(crate) async fn watch_client<S: AsyncRead + Unpin, T>(
    client: &mut S,
    cbuf: &mut BytesMut,
    wait: impl std::future::Future<Output = T>,
) -> Result<T, End> {
    tokio::pin!(wait);
    loop {
        if cbuf.len() >= WATCH_BUFFER_LIMIT {
            return Ok(wait.await);
        }
        tokio::select! {
            biased;
            out = &mut wait => return Ok(out),
            read = client.read_buf(cbuf) => match read {
                Ok(0) | Err(_) => return Err(End::ClientGone),
                Ok(_) => {}
            },
        }
    }
}

/// A command tag that says the schema changed (CREATE, ALTER, DROP...):
/// shared statements analysed before it may be stale, so they are retired.
pub(crate) fn retire_on_ddl(state: &State, tag: &[u8]) {
    const DDL: [&[u8]; 4] = [b"CREATE ", b"ALTER ", b"DROP ", b"COMMENT"];
    if DDL.iter().any(|word| tag.starts_with(word)) {
        state.statements.retire_all();
    }
}

/// A Bind error that says the server's copy of a statement no longer fits
/// the schema: "cached plan must not change result type" (0A000) or an
/// error of the statement's re-analysis (class 42: a column's type
/// changed, a table is gone).
fn stale_statement(code: &[u8]) -> bool {
    code == b"0A000" || code.starts_with(b"42")
}

/// How long cleaning a server up may take before it is closed instead.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(5);

fn cancel_target(server: &Pooled) -> CancelTarget {
    CancelTarget {
        addr: server.conn.addr,
        process_id: server.conn.process_id,
        secret_key: server.conn.secret_key.clone(),
    }
}

fn count(counter: &std::sync::atomic::AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}

fn put_frame(out: &mut BytesMut, frame: &Frame) {
    out.put_u8(frame.tag);
    out.put_u32(frame.body.len() as u32 + 4);
    out.put_slice(&frame.body);
}

/// The SQLSTATE and message a client gets when no server can be had.
pub(crate) fn pool_error_reply(err: &PoolError) -> (&'static str, String) {
    let code = match err {
        PoolError::Timeout(_) => sqlstate::TOO_MANY_CONNECTIONS,
        PoolError::Closed => sqlstate::ADMIN_SHUTDOWN,
        PoolError::Server(_) => sqlstate::CONNECTION_FAILURE,
    };
    (code, err.to_string())
}

/// A cluster's sharding model and the configured parser engine.
fn sharding_of(state: &State, cluster: &str) -> (Arc<Sharding>, ParserEngine) {
    let config = state.config();
    let sharding = config
        .clusters
        .get(cluster)
        .map(|c| Arc::clone(&c.sharding))
        .unwrap_or_default();
    (sharding, config.general.query_parser_engine)
}
