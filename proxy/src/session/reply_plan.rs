//! The response plan: which server replies a client is owed, in order.
//!
//! pgshard rewrites the client's extended-protocol stream (statements renamed,
//! Parse skipped when the server already has the statement, Parse injected when
//! it lacks it, Close answered locally). Every message sent to the server, and
//! every reply pgshard makes itself, becomes one [`Step`]; server replies are
//! matched to steps by their terminal message, so injected replies are dropped
//! and local replies are interleaved exactly where Postgres would have sent
//! them. Pure logic, no I/O.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

use crate::protocol::backend::{BackendKind, Kinds, TransactionStatus};
use crate::protocol::messages;

/// What to do when a step's server reply has been seen in full.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Effect {
    #[default]
    None,
    /// An (injected or client) Parse of pgshard statement `id`: if it fails,
    /// the server does not have it after all.
    Prepared(u64, Option<Bytes>),
    /// A simple query that changes settings, if it succeeds.
    Settings(Vec<crate::conn::settings::ParamChange>),
    /// DISCARD ALL: the server forgets every statement and setting.
    DiscardAll,
    /// DEALLOCATE ALL: the server forgets every statement.
    DeallocateAll,
    /// A Bind of shared statement `id`: if it fails because the server's
    /// copy is stale, the statement is retired.
    Bound(u64),
    /// An injected Close of statement `id` (the server held too many): if
    /// an error skips it, the server still has the statement.
    Closed(u64),
    /// A statement pgshard prepared on the server with SQL PREPARE
    /// (`session/sql_prepare.rs`): if the PREPARE fails, the server does
    /// not have it after all.
    SqlPrepared(u64),
    /// The client's PREPARE made `name` mean SQL-prepared statement `id`
    /// (extended protocol): if an error skips it, it does not.
    SqlNamed(u64, Bytes),
    /// A ParseComplete pgshard answered itself for the client's `name`
    /// (statement `id`): if an error skips it, Postgres would not have
    /// created the statement, so the name no longer means it.
    Named(u64, Bytes),
}

/// One expected reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A message was sent to the server; its reply ends with one of
    /// `terminals`. `forward` is false for messages pgshard injected.
    Server {
        terminals: Kinds,
        forward: bool,
        /// A Sync or simple Query: its reply ends with ReadyForQuery and an
        /// error does not skip it.
        sync: bool,
        effect: Effect,
        /// An ErrorResponse in the reply goes to the client even when the
        /// rest is swallowed.
        errors: bool,
    },
    /// A reply pgshard makes itself (ParseComplete, CloseComplete, errors of
    /// its own), sent when every earlier reply has been; `ready` appends a
    /// ReadyForQuery with the transaction status current at that moment.
    Local { bytes: Bytes, ready: bool },
    /// A ParseComplete pgshard answers itself for a named Parse; if an
    /// error skips it, its effect ([`Effect::Named`]) is reported failed.
    LocalParse(Effect),
}

/// Terminal replies of each frontend message kind.
pub const PARSE: Kinds = Kinds::of(&[BackendKind::ParseComplete]);
pub const BIND: Kinds = Kinds::of(&[BackendKind::BindComplete]);
pub const DESCRIBE: Kinds = Kinds::of(&[BackendKind::RowDescription, BackendKind::NoData]);
pub const EXECUTE: Kinds = Kinds::of(&[
    BackendKind::CommandComplete,
    BackendKind::EmptyQueryResponse,
    BackendKind::PortalSuspended,
]);
pub const CLOSE: Kinds = Kinds::of(&[BackendKind::CloseComplete]);
pub const SYNC: Kinds = Kinds::of(&[BackendKind::ReadyForQuery]);

impl Step {
    /// A forwarded message whose reply the client gets.
    pub fn forward(terminals: Kinds) -> Step {
        Step::forward_with(terminals, Effect::None)
    }

    /// A forwarded message with an effect when its reply completes.
    pub fn forward_with(terminals: Kinds, effect: Effect) -> Step {
        Step::Server {
            terminals,
            forward: true,
            sync: terminals == SYNC,
            effect,
            errors: true,
        }
    }

    /// A simple Query or Sync pgshard injected (BEGIN of a deferred
    /// transaction, ROLLBACK, Sync before switching servers): its reply,
    /// ReadyForQuery included, is swallowed.
    pub fn injected_query() -> Step {
        Step::Server {
            terminals: SYNC,
            forward: false,
            sync: true,
            effect: Effect::None,
            errors: false,
        }
    }

    /// An injected simple Query whose errors the client must see (a deferred
    /// transaction's BEGIN carrying the client's `SET LOCAL`s): the rest of
    /// its reply is swallowed.
    pub fn injected_query_showing_errors() -> Step {
        Step::injected_query_showing_errors_with(Effect::None)
    }

    /// [`injected_query_showing_errors`](Self::injected_query_showing_errors)
    /// with an effect (reported at its ReadyForQuery).
    pub fn injected_query_showing_errors_with(effect: Effect) -> Step {
        Step::Server {
            terminals: SYNC,
            forward: false,
            sync: true,
            effect,
            errors: true,
        }
    }

    /// A message pgshard injected: its reply is swallowed.
    pub fn injected(terminals: Kinds, effect: Effect) -> Step {
        Step::Server {
            terminals,
            forward: false,
            sync: false,
            effect,
            errors: false,
        }
    }
}

/// What to do with one server message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub forward: bool,
    /// Effects whose messages failed (error before their terminal reply).
    pub failed: Vec<Effect>,
    /// The effect of the step this message completed, if any.
    pub completed: Effect,
}

/// The queue of expected replies for one client.
#[derive(Debug, Default)]
pub struct ReplyPlan {
    steps: VecDeque<Step>,
    /// ReadyForQuery replies still owed by the server (Syncs and Queries sent).
    pending_syncs: usize,
}

impl ReplyPlan {
    pub fn push(&mut self, step: Step) {
        if let Step::Server { sync: true, .. } = step {
            self.pending_syncs += 1;
        }
        self.steps.push_back(step);
    }

    /// Replies are still owed by the server.
    pub fn awaiting_server(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Server { .. }))
    }

    pub fn pending_syncs(&self) -> usize {
        self.pending_syncs
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Messages were sent to the server after its last Sync or Query: they
    /// are answered only once another Sync follows.
    pub fn unsynced_tail(&self) -> bool {
        self.steps
            .iter()
            .rev()
            .find(|s| matches!(s, Step::Server { .. }))
            .is_some_and(|s| matches!(s, Step::Server { sync: false, .. }))
    }

    /// A message of the forwarded reply under way that the client gets as
    /// it is, with nothing for the plan to decide: `true` for a DataRow or
    /// RowDescription, say, and for the reply that ends a forwarded
    /// message other than a Query or Sync (BindComplete, the command tag
    /// of an Execute: its step is done). A CommandComplete is one of them:
    /// the caller reads it. Transaction status, parameter reports, errors,
    /// COPY IN and the asynchronous messages are not.
    pub fn relays_plainly(&mut self, kind: BackendKind) -> bool {
        let Some(Step::Server {
            forward: true,
            terminals,
            sync,
            ..
        }) = self.steps.front()
        else {
            return false;
        };
        if kind.is_async()
            || matches!(
                kind,
                BackendKind::ReadyForQuery
                    | BackendKind::ErrorResponse
                    | BackendKind::CopyInResponse
            )
        {
            return false;
        }
        if !terminals.contains(kind) {
            return true;
        }
        if *sync {
            return false;
        }
        // (Its effect, if any, mattered only had the message failed.)
        self.steps.pop_front();
        true
    }

    /// A reply pgshard makes itself is next (see [`drain_local`](Self::drain_local)).
    pub fn local_next(&self) -> bool {
        matches!(
            self.steps.front(),
            Some(Step::Local { .. } | Step::LocalParse(_))
        )
    }

    /// The next reply owed is a ReadyForQuery (a Query or Sync is running).
    pub fn at_sync(&self) -> bool {
        matches!(self.steps.front(), Some(Step::Server { sync: true, .. }))
    }

    /// Move every local reply at the head of the queue to `out`; `status` is
    /// the transaction status for any ReadyForQuery among them.
    pub fn drain_local(&mut self, out: &mut BytesMut, status: TransactionStatus) {
        while let Some(Step::Local { .. } | Step::LocalParse(_)) = self.steps.front() {
            match self.steps.pop_front() {
                Some(Step::Local { bytes, ready }) => {
                    out.extend_from_slice(&bytes);
                    if ready {
                        messages::ready_for_query(out, status);
                    }
                }
                Some(Step::LocalParse(_)) => messages::parse_complete(out),
                _ => {}
            }
        }
    }

    /// The server entered COPY IN during an extended-protocol Execute: it
    /// ignores Sync and Flush until CopyDone/CopyFail, so Syncs already sent
    /// behind the Execute will not be answered.
    pub fn copy_in_started(&mut self) {
        let before = self.steps.len();
        let mut first = true;
        self.steps.retain(|s| {
            let keep = first || !matches!(s, Step::Server { sync: true, .. });
            first = false;
            keep
        });
        self.pending_syncs -= before - self.steps.len();
    }

    /// Decide the fate of one server message of kind `kind`.
    pub fn on_server_message(&mut self, kind: BackendKind) -> Verdict {
        let mut failed = Vec::new();
        // Asynchronous messages may arrive at any time: always the client's.
        if kind.is_async() {
            return Verdict {
                forward: true,
                failed,
                completed: Effect::None,
            };
        }
        let Some(Step::Server {
            terminals,
            forward,
            sync,
            errors,
            ..
        }) = self.steps.front()
        else {
            // Nothing expected (a server bug or a FATAL error before exit):
            // let the client see it.
            return Verdict {
                forward: true,
                failed,
                completed: Effect::None,
            };
        };
        let error = kind == BackendKind::ErrorResponse;
        let (forward, sync) = (*forward || (error && *errors), *sync);
        if error && !sync {
            // The server skips every message up to the next Sync: those steps
            // get no reply, and local replies among them are not sent either.
            while let Some(step) = self.steps.front() {
                match step {
                    Step::Server { sync: true, .. } => break,
                    Step::Server { effect, .. } => {
                        if *effect != Effect::None {
                            failed.push(effect.clone());
                        }
                        self.steps.pop_front();
                    }
                    Step::Local { .. } => {
                        self.steps.pop_front();
                    }
                    Step::LocalParse(_) => {
                        if let Some(Step::LocalParse(effect)) = self.steps.pop_front() {
                            failed.push(effect);
                        }
                    }
                }
            }
            // An injected message's error still goes to the client: the
            // statement it was about cannot run, and the client must know why.
            return Verdict {
                forward: true,
                failed,
                completed: Effect::None,
            };
        }
        let mut completed = Effect::None;
        if terminals.contains(kind) {
            if let Some(Step::Server { effect, .. }) = self.steps.pop_front() {
                completed = effect;
            }
            if sync {
                self.pending_syncs -= 1;
            }
        }
        Verdict {
            forward,
            failed,
            completed,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn injected_queries_can_show_their_errors() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::injected_query_showing_errors());
        plan.push(Step::forward(SYNC));
        assert!(!plan.on_server_message(K::CommandComplete).forward);
        assert!(plan.on_server_message(K::ErrorResponse).forward);
        assert!(!plan.on_server_message(K::ReadyForQuery).forward);
        assert!(plan.on_server_message(K::ErrorResponse).forward);
        assert!(plan.on_server_message(K::ReadyForQuery).forward);
        assert!(plan.is_empty());
        let mut plan = ReplyPlan::default();
        plan.push(Step::injected_query());
        assert!(!plan.on_server_message(K::ErrorResponse).forward);
    }

    use super::*;
    use BackendKind as K;

    fn local(bytes: &'static [u8]) -> Step {
        Step::Local {
            bytes: Bytes::from_static(bytes),
            ready: false,
        }
    }

    #[test]
    fn injected_parse_is_swallowed_and_local_replies_interleave() {
        let mut plan = ReplyPlan::default();
        plan.push(local(b"1"));
        plan.push(Step::injected(PARSE, Effect::Prepared(3, None)));
        plan.push(Step::forward(BIND));
        plan.push(Step::forward(EXECUTE));
        plan.push(Step::forward(SYNC));
        let mut out = BytesMut::new();
        plan.drain_local(&mut out, TransactionStatus::Idle);
        assert_eq!(&out[..], b"1");
        assert!(!plan.on_server_message(K::ParseComplete).forward);
        assert!(plan.on_server_message(K::BindComplete).forward);
        assert!(plan.on_server_message(K::DataRow).forward);
        assert!(plan.on_server_message(K::CommandComplete).forward);
        assert_eq!(plan.pending_syncs(), 1);
        assert!(plan.on_server_message(K::ReadyForQuery).forward);
        assert!(plan.is_empty());
        assert_eq!(plan.pending_syncs(), 0);
    }

    #[test]
    fn error_skips_to_sync_and_reports_failed_prepares() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::injected(PARSE, Effect::Prepared(9, None)));
        plan.push(Step::forward(BIND));
        plan.push(local(b"3"));
        plan.push(Step::forward(SYNC));
        let verdict = plan.on_server_message(K::ErrorResponse);
        assert!(verdict.forward);
        assert_eq!(verdict.failed, vec![Effect::Prepared(9, None)]);
        let mut out = BytesMut::new();
        plan.drain_local(&mut out, TransactionStatus::Idle);
        assert!(out.is_empty(), "a Close after the error gets no reply");
        assert!(plan.on_server_message(K::ReadyForQuery).forward);
        assert!(plan.is_empty());
    }

    #[test]
    fn skipped_local_parses_and_closes_are_reported() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::forward(BIND));
        plan.push(Step::injected(CLOSE, Effect::Closed(4)));
        plan.push(Step::LocalParse(Effect::Named(
            5,
            Bytes::from_static(b"s5"),
        )));
        plan.push(Step::forward(SYNC));
        let verdict = plan.on_server_message(K::ErrorResponse);
        assert_eq!(
            verdict.failed,
            vec![
                Effect::Closed(4),
                Effect::Named(5, Bytes::from_static(b"s5"))
            ]
        );
        let mut out = BytesMut::new();
        plan.drain_local(&mut out, TransactionStatus::Idle);
        assert!(out.is_empty(), "a skipped Parse gets no ParseComplete");
        assert!(plan.on_server_message(K::ReadyForQuery).forward);
        assert!(plan.is_empty());

        let mut plan = ReplyPlan::default();
        plan.push(Step::LocalParse(Effect::Named(5, Bytes::new())));
        let mut out = BytesMut::new();
        plan.drain_local(&mut out, TransactionStatus::Idle);
        assert_eq!(&out[..], b"1\0\0\0\x04");
    }

    #[test]
    fn an_unsynced_tail_is_seen_behind_a_sync() {
        let mut plan = ReplyPlan::default();
        assert!(!plan.unsynced_tail());
        plan.push(Step::forward(BIND));
        plan.push(Step::forward(SYNC));
        assert!(!plan.unsynced_tail());
        plan.push(Step::forward(PARSE));
        plan.push(local(b"1"));
        assert!(plan.unsynced_tail());
        plan.push(Step::injected_query());
        assert!(!plan.unsynced_tail());
    }

    #[test]
    fn simple_query_error_keeps_the_query_step() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::forward(SYNC));
        assert!(plan.on_server_message(K::ErrorResponse).forward);
        assert_eq!(plan.pending_syncs(), 1);
        assert!(plan.on_server_message(K::ReadyForQuery).forward);
        assert_eq!(plan.pending_syncs(), 0);
    }

    #[test]
    fn local_reply_with_ready_uses_current_status() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::Local {
            bytes: Bytes::from_static(b"C\0\0\0\x0fDEALLOCATE\0"),
            ready: true,
        });
        let mut out = BytesMut::new();
        plan.drain_local(&mut out, TransactionStatus::InBlock);
        assert!(out.ends_with(b"Z\0\0\0\x05T"));
    }

    #[test]
    fn copy_in_drops_syncs_sent_behind_the_execute() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::forward(EXECUTE));
        plan.push(Step::forward(SYNC));
        plan.copy_in_started();
        assert_eq!(plan.pending_syncs(), 0);
        assert!(plan.on_server_message(K::CommandComplete).forward);
        assert!(plan.is_empty());
    }

    #[test]
    fn plain_replies_pass_and_end_their_steps() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::forward_with(BIND, Effect::Bound(7)));
        plan.push(Step::forward(DESCRIBE));
        plan.push(Step::forward(EXECUTE));
        plan.push(Step::forward(SYNC));
        assert!(plan.relays_plainly(K::BindComplete));
        assert_eq!(plan.steps.len(), 3, "BindComplete ends the Bind");
        for kind in [
            K::ParameterStatus,
            K::NoticeResponse,
            K::NotificationResponse,
            K::ErrorResponse,
            K::CopyInResponse,
            K::ReadyForQuery,
        ] {
            assert!(!plan.relays_plainly(kind), "{kind:?} is read");
        }
        assert!(plan.relays_plainly(K::RowDescription));
        assert!(plan.relays_plainly(K::DataRow));
        assert_eq!(plan.steps.len(), 2, "a DataRow ends nothing");
        assert!(plan.relays_plainly(K::CommandComplete));
        assert!(plan.at_sync());
        assert!(
            !plan.relays_plainly(K::ReadyForQuery),
            "ReadyForQuery is decided"
        );
        assert!(plan.on_server_message(K::ReadyForQuery).forward);
        assert!(plan.is_empty());
        assert!(!plan.relays_plainly(K::DataRow), "nothing expected");

        // A simple query: its command tags pass, its step stays.
        plan.push(Step::forward(SYNC));
        assert!(plan.relays_plainly(K::CommandComplete));
        assert!(plan.relays_plainly(K::CommandComplete));
        assert_eq!(plan.pending_syncs(), 1);
        assert!(!plan.is_empty());
    }

    #[test]
    fn injected_and_local_replies_are_never_plain() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::injected(PARSE, Effect::Prepared(3, None)));
        assert!(!plan.relays_plainly(K::ParseComplete));
        plan.push(Step::forward(BIND));
        assert!(!plan.on_server_message(K::ParseComplete).forward);
        let mut plan = ReplyPlan::default();
        plan.push(local(b"1"));
        plan.push(Step::forward(BIND));
        assert!(
            !plan.relays_plainly(K::BindComplete),
            "the local reply goes first"
        );
        let mut plan = ReplyPlan::default();
        plan.push(Step::injected_query());
        assert!(!plan.relays_plainly(K::CommandComplete));
        assert!(!plan.relays_plainly(K::DataRow));
    }

    #[test]
    fn async_messages_pass_anywhere() {
        let mut plan = ReplyPlan::default();
        plan.push(Step::injected(PARSE, Effect::None));
        assert!(plan.on_server_message(K::NoticeResponse).forward);
        assert!(!plan.on_server_message(K::ParseComplete).forward);
        assert!(plan.on_server_message(K::NotificationResponse).forward);
    }
}
