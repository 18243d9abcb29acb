//! One client session after login: client messages are rewritten where
//! pooling requires it (statement names, settings) and forwarded to a pooled
//! server connection, which the session holds for one transaction
//! (transaction mode) or for its whole life (session mode); server replies
//! are relayed in order, with pgshard's own replies interleaved by the plan.
//!
//! This file holds the session, a composition of small states, and its
//! message loop; `simple.rs` the simple protocol, `extended.rs` the
//! extended protocol, `attach.rs` and `attached.rs` the server connections
//! it holds, `server_replies.rs` what comes back, `routing.rs`, `local.rs`,
//! `fan_out.rs` and `segment.rs` the sharded cluster's parts; its states:
//! `cluster_view.rs` (pools, sharding), `settings.rs` (the client's
//! settings), `pipeline.rs` (what is in flight), `phase.rs` (the
//! extended-protocol phase), `route_state.rs` (what routing keeps),
//! `named.rs` (the client's statement names), `portals.rs` (the cursors
//! and portals answered here), `reply_plan.rs` (the replies owed, pure)
//! and `transaction.rs` (what the client's transaction allows, pure).

mod attach;
mod attached;
mod behind;
mod carry;
mod client_info;
mod cluster_view;
mod commit;
mod copy_in;
mod cursor;
mod dispatch;
mod extended;
mod fan_out;
mod gather;
mod holds;
mod insert_select;
mod key_move;
mod listen;
mod local;
mod merge;
mod named;
mod output;
mod phase;
mod pipeline;
mod portals;
mod query_clock;
mod query_string;
mod read_split;
pub mod reply_plan;
mod route_state;
pub mod routing;
pub mod segment;
mod server_replies;
pub mod session_effects;
mod settings;
mod shared;
mod simple;
mod spanning;
mod split_bind;
mod split_insert;
mod sql_execute;
mod sql_extended;
mod sql_prepare;
pub mod sql_prepared;
pub mod statements;
mod transaction;
mod unique_id;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use router::config::PoolerMode;
use tracing::warn;

use crate::conn::client::{ClientConn, Gone};
use crate::conn::settings::ParamSet;
use crate::errors::ClientError;
use crate::pool::clusters::ClusterPools;
use crate::pool::Pooled;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::{Frame, FrontendKind};
use crate::protocol::sqlstate;
use attach::cancel_target;
use attached::Attached;
pub use client_info::{ClientAddr, ClientInfo, CLIENT_ACTIVE, CLIENT_IDLE, CLIENT_WAITING};
use cluster_view::ClusterView;
use named::Named;
use phase::Phase;
use pipeline::Pipeline;
use portals::Portals;
use query_clock::QueryClock;
use reply_plan::{ReplyPlan, Step};
use route_state::RouteState;
use settings::Settings;
pub use shared::{Shared, TableColumns};
use transaction::{Target, Transaction};

/// Flush replies to the client once this much is buffered.
pub(crate) const CLIENT_FLUSH_AT: usize = 64 * 1024;

/// Why a session ends.
#[derive(Debug)]
pub enum End {
    /// Terminate, EOF or a broken client socket.
    ClientGone,
    /// A FATAL error to send before closing.
    Fatal(ClientError),
}

impl From<Gone> for End {
    fn from(_: Gone) -> End {
        End::ClientGone
    }
}

impl End {
    /// The client broke the protocol.
    pub(crate) fn protocol(error: impl std::fmt::Display) -> End {
        End::Fatal(ClientError::new(
            sqlstate::PROTOCOL_VIOLATION,
            error.to_string(),
        ))
    }

    /// The session's server went away mid-statement.
    pub(crate) fn server_lost() -> End {
        End::Fatal(ClientError::new(
            sqlstate::CONNECTION_FAILURE,
            "server closed the connection unexpectedly",
        ))
    }
}

/// What a logged-in session starts from.
pub struct Start {
    pub shared: Arc<Shared>,
    pub info: Arc<ClientInfo>,
    pub pools: ClusterPools,
    pub mode: PoolerMode,
    pub defaults: ParamSet,
    pub prepared_limit: usize,
    /// In session mode, the server the login already checked out.
    pub server: Option<Pooled>,
}

/// A client's session: a composition of states, each owning its methods
/// (and tested alone where it is pure), so that no flag or map sits here.
/// States that change together are one field: both kinds of statement
/// names (`named`: one name space in Postgres), the cursors' registry and
/// the gathered portals that are names in it (`portals`), routing's state
/// and the move counts taken when a statement is routed (`routing`).
pub struct Session {
    shared: Arc<Shared>,
    info: Arc<ClientInfo>,
    /// The client's span (peer, user, database, application_name): the
    /// parent of the session's log lines, never entered (`listener/arrival.rs`).
    span: tracing::Span,
    /// Its pools, pooler mode, sharding model and parser engine.
    cluster: ClusterView,
    client: ClientConn,
    /// The server connections held between messages.
    attached: Attached,
    /// The replies owed to the client, in order.
    plan: ReplyPlan,
    /// What is in flight to and from the servers.
    pipeline: Pipeline,
    /// The extended-protocol phase: skipping to Sync, a segment held, a
    /// portal answered here.
    phase: Phase,
    /// The client's named statements, by Parse and by `PREPARE`.
    named: Named,
    /// The client's settings.
    settings: Settings,
    /// The client's transaction on a sharded cluster.
    txn: Transaction,
    /// What routing keeps between statements, and what the session is
    /// counted in for moves.
    routing: RouteState,
    /// Cursors and portals pgshard routes, merges or finishes, and the
    /// servers WITH HOLD cursors keep.
    portals: Portals,
    /// LISTEN in transaction mode: the client's channels and its place in
    /// the notification relay.
    listening: listen::Listening,
}

impl Session {
    pub fn new(client: ClientConn, start: Start) -> Session {
        let generation = start.shared.clusters.generation();
        let sharding = attach::sharding_of(&start.shared, &start.info.database);
        let clock = QueryClock::new(start.shared.config().general.slow_query_threshold());
        Session {
            cluster: ClusterView::new(
                start.pools,
                generation,
                start.mode,
                sharding,
                start.prepared_limit,
            ),
            shared: start.shared,
            info: start.info,
            span: tracing::Span::none(),
            client,
            attached: Attached::new(0, start.server),
            plan: ReplyPlan::default(),
            pipeline: Pipeline::new(clock),
            phase: Phase::Idle,
            named: Named::default(),
            settings: Settings::new(start.defaults),
            txn: Transaction::default(),
            routing: RouteState::default(),
            portals: Portals::default(),
            listening: listen::Listening::default(),
        }
    }

    /// Serve the client until it leaves; the server connection goes back to
    /// its pool clean, or is closed. `span` is the client's, for log lines.
    /// (The client stays registered: the caller unregisters it.) Boxed, so
    /// a client's task holds a pointer to the session, not the session.
    pub async fn run(mut self: Box<Self>, span: tracing::Span) {
        self.span = span;
        if let Some(server) = self.attached.main() {
            self.set_cancel_target(Some(cancel_target(server))).await;
        }
        let end = self.serve_unless_killed().await;
        self.end(end).await;
    }

    /// The client's process id (its cancel key's), under which it is
    /// registered.
    pub fn process_id(&self) -> u32 {
        self.info.process_id
    }

    async fn serve(&mut self) -> End {
        let (info, state) = (Arc::clone(&self.info), Arc::clone(&self.shared));
        let stopping = info.interrupt.until(|| state.is_shutting_down());
        tokio::pin!(stopping);
        // When a cancel went to the main server at `query_timeout`, until
        // the statement ends; and since when the client has waited for the
        // server (its last request, as PgBouncer's `request_time`: what the
        // server sends meanwhile does not extend the wait).
        let mut cancelled: Option<tokio::time::Instant> = None;
        let mut waiting_since: Option<tokio::time::Instant> = None;
        loop {
            if let Err(end) = self.on_client_messages().await {
                return end;
            }
            let query_timeout = self
                .attached
                .main()
                .and_then(|s| s.pool().settings.query_timeout)
                .filter(|_| self.plan.awaiting_server());
            if query_timeout.is_none() {
                cancelled = None;
                waiting_since = None;
            }
            self.pipeline.clock_mut().waiting();
            let notify = self.notifications_deliverable();
            match self.attached.main_mut() {
                Some(server) => {
                    let since = *waiting_since.get_or_insert_with(tokio::time::Instant::now);
                    let timeout = attach::query_timer(query_timeout, since, cancelled);
                    tokio::select! {
                        // The server first: its replies free it sooner.
                        biased;
                        read = server.conn.fill() => match read {
                            Ok(0) | Err(_) => {
                                warn!(parent: &self.span, "server connection lost mid-session");
                                self.lose_main();
                                return End::server_lost();
                            }
                            Ok(_) => {
                                if let Err(end) = self.on_server_data_in_loop().await {
                                    return end;
                                }
                            }
                        },
                        read = self.client.fill() => match read {
                            Err(_) => return End::ClientGone,
                            Ok(n) => {
                                waiting_since = None;
                                count(&server.pool().stats.bytes_received, n)
                            }
                        },
                        () = timeout => if let Err(end) = self.on_query_timeout(query_timeout, &mut cancelled).await {
                            return end;
                        },
                        note = self.listening.next(), if notify => if let Err(end) = self.on_notification(note).await {
                            return end;
                        },
                    }
                }
                None => {
                    if let Err(end) = self.wait_idle(stopping.as_mut(), notify).await {
                        return end;
                    }
                }
            }
        }
    }

    /// Idle between transactions: hold no buffers, and wait for the
    /// client, pgshard's shutdown or a notification to deliver.
    async fn wait_idle(
        &mut self,
        stopping: Pin<&mut impl Future<Output = ()>>,
        notify: bool,
    ) -> Result<(), End> {
        self.client.give_back_buffers();
        self.pipeline.give_back_buffer();
        tokio::select! {
            biased;
            read = self.client.fill() => match read {
                Err(_) => return Err(End::ClientGone),
                // Counted where the client's last server was.
                Ok(n) => if let Some(pools) = self.cluster.pools().get(self.routing.shard()) {
                    count(&pools.first().stats.bytes_received, n);
                },
            },
            () = stopping => {
                return Err(End::Fatal(ClientError::new(sqlstate::ADMIN_SHUTDOWN, "terminating connection: pgshard is shutting down")));
            }
            note = self.listening.next(), if notify => self.on_notification(note).await?,
        }
        Ok(())
    }

    /// Every whole message the client has sent, then what they leave to
    /// finish.
    async fn on_client_messages(&mut self) -> Result<(), End> {
        while let Some(frame) = self.client.read_message().map_err(End::protocol)? {
            self.on_client_frame(frame).await?;
        }
        self.settle_between_reads().await
    }

    /// What the client sent is handled: finish what can be finished now,
    /// and give back the count in flight on moving shards when idle.
    async fn settle_between_reads(&mut self) -> Result<(), End> {
        match self.settle_now() {
            Ok(false) => self.settle().await?,
            settled => settled.map(drop)?,
        }
        self.leave_moving_if_idle();
        Ok(())
    }

    /// A message for a portal pgshard answers itself: whether it was
    /// answered.
    async fn on_bound_portal(&mut self, frame: &Frame) -> Result<bool, End> {
        let kind = frame.kind;
        Ok(
            (self.phase.local_portal().is_some() && self.on_local_portal(kind))
                || (self.phase.copy_bound() && Box::pin(self.on_copy_portal(kind)).await?)
                || (self.phase.move_bound() && Box::pin(self.on_move_portal(kind)).await?)
                || (self.phase.gather_portal().is_some()
                    && Box::pin(self.on_gather_portal(frame)).await?)
                || (self.phase.cursor_portal().is_some()
                    && Box::pin(self.on_cursor_portal(frame)).await?)
                || (self.portals.any_gathered()
                    && Box::pin(self.on_named_gather_portal(frame)).await?),
        )
    }

    /// One client message.
    async fn on_client_frame(&mut self, frame: Frame) -> Result<(), End> {
        use FrontendKind as K;
        let kind = frame.kind;
        let extended = matches!(
            kind,
            K::Parse | K::Bind | K::Describe | K::Execute | K::Close | K::Flush
        );
        if self.phase.skipping() && extended {
            return Ok(());
        }
        if self.on_bound_portal(&frame).await? {
            return Ok(());
        }
        if self.sharded() {
            match kind {
                K::Query | K::Bind => self.before_routing().await?,
                K::Parse => self.own_catalog_current().await,
                _ => {}
            }
        }
        if !self.portals.cursors.is_empty() {
            self.portals.cursors.forget_unnamed(&frame);
            if !self.phase.holds_batch() && Box::pin(self.on_known_portal(&frame)).await? {
                return Ok(());
            }
        }
        if self.phase.holds_batch() {
            return Box::pin(self.on_segment_frame(frame)).await;
        }
        match kind {
            K::Query => self.on_query(frame).await,
            K::Parse => self.on_parse(frame).await,
            K::Bind | K::Describe => self.on_bind_or_describe(frame).await,
            K::Execute => {
                self.forward_extended(&frame, Step::forward(reply_plan::EXECUTE))
                    .await
            }
            K::Close => self.on_close(frame).await,
            K::Sync => {
                self.on_sync(&frame);
                Ok(())
            }
            K::Flush => {
                if self.attached.is_some() {
                    self.put_frame(&frame);
                }
                Ok(())
            }
            K::FunctionCall => {
                if !self.ensure_server_or_reply(Target::Any, true).await? {
                    return Ok(());
                }
                self.count_query();
                self.put_frame(&frame);
                self.plan.push(Step::forward(reply_plan::SYNC));
                Ok(())
            }
            K::CopyData | K::CopyDone | K::CopyFail => {
                if kind != K::CopyData {
                    self.pipeline.copy_in_ended();
                }
                if self.attached.is_some() {
                    self.put_frame(&frame);
                }
                Ok(())
            }
            K::Terminate => Err(End::ClientGone),
            K::Password => Err(End::Fatal(ClientError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!("invalid frontend message type {}", kind.letter()),
            ))),
        }
    }

    fn on_sync(&mut self, frame: &Frame) {
        self.phase.synced();
        self.pipeline.synced();
        if self.attached.is_none() && !self.plan.awaiting_server() {
            // Everything since the last Sync was answered locally.
            self.plan.push(Step::Local {
                bytes: Bytes::new(),
                ready: true,
            });
            return;
        }
        if self.pipeline.in_copy_in() {
            // Postgres ignores Sync in COPY IN: no reply is owed.
            self.put_frame(frame);
            return;
        }
        self.count_query();
        self.put_frame(frame);
        self.plan.push(Step::forward(reply_plan::SYNC));
    }

    fn put_frame(&mut self, frame: &Frame) {
        self.pipeline.for_server().extend_from_slice(frame.bytes());
    }

    fn count_query(&mut self) {
        self.pipeline.clock_mut().start();
        if let Some(server) = self.attached.main() {
            server
                .pool()
                .stats
                .query_count
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The transaction status the client sees.
    fn status(&self) -> TransactionStatus {
        self.client_status(self.attached.status().unwrap_or_default())
    }
}

/// A client's SQL as text: borrowed when it is valid UTF-8 (checked a
/// word at a time, the common case), with replacement characters
/// otherwise (Postgres then reports the encoding error).
pub(crate) fn sql_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

pub(super) fn count(counter: &std::sync::atomic::AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}
