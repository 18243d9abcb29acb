//! The client's transaction on a sharded cluster as pgshard sees it: a pure
//! state machine (no I/O, no session) the session asks what to do with each
//! statement and tells what its server reported.
//!
//! A client's `BEGIN` is answered here (the transaction is *deferred*) and
//! opened on the shard of the first statement that routes to one.
//! Statements with no data dependency (`SELECT 1`, SET, reads of omnisharded
//! tables, a Describe before the key is known) run meanwhile on any shard,
//! outside the transaction; one of them failing aborts the transaction all
//! the same (status `E`, then 25P02). Statements that need the transaction
//! block (DECLARE, SAVEPOINT, a named portal fetched across Syncs) open it on
//! a shard of their own. Once the transaction is open, a statement routed
//! to another shard *joins* that shard: the transaction is opened there too
//! by replaying its *join script* (its BEGIN, then every `SET LOCAL`,
//! SAVEPOINT, RELEASE and ROLLBACK TO so far, in order, so a savepoint set
//! before the join rolls the new shard's work back too), and statements for
//! several shards run on all of them inside it (`spanning.rs`). A
//! transaction the server opened itself (a BEGIN sent while replies were
//! due, session mode) has no join script: a statement routed elsewhere is
//! refused, the transaction is rolled back on its server, and the client
//! sees an aborted transaction until it ends it, as Postgres shows after an
//! error. `SET LOCAL` and the like sent while the transaction is deferred
//! travel with its BEGIN; `SET pgdog.*` overrides made inside a transaction
//! end with it.

use crate::protocol::backend::TransactionStatus;
use bytes::{Bytes, BytesMut};

/// Where the transaction is, beyond what the attached server (if any)
/// reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Txn {
    /// Nothing pending here: the attached server's status is the truth.
    #[default]
    None,
    /// BEGIN was answered by pgshard; the text to open it with.
    Deferred(Bytes),
    /// pgshard refused a statement inside the transaction (and rolled it
    /// back on its server), or a statement run before it opened failed:
    /// everything but COMMIT/ROLLBACK is refused.
    Failed,
}

/// The attached server, as far as the transaction is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerView {
    pub shard: usize,
    /// Its last ReadyForQuery status.
    pub status: TransactionStatus,
    /// It is in COPY IN.
    pub copy_in: bool,
}

impl ServerView {
    /// A transaction (or a COPY) is open on it.
    fn busy(&self) -> bool {
        self.status != TransactionStatus::Idle || self.copy_in
    }
}

/// What a statement means for the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control<'a> {
    /// `BEGIN` / `START TRANSACTION`, with its text (isolation options).
    Begin(&'a [u8]),
    Commit,
    Rollback,
    /// `SET LOCAL`, `SET TRANSACTION`, `SET CONSTRAINTS`: its text and tag.
    Scoped(&'a [u8], &'static str),
    /// Anything else (several statements in one string included).
    Other,
}

/// What to do with a statement before it is routed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Answered here with this command tag; `ends`: the transaction ended
    /// (overrides scoped to it go).
    Answer { tag: &'static str, ends: bool },
    /// Refused with 25P02: the transaction is aborted.
    Aborted,
    /// BEGIN inside the deferred transaction: answered `BEGIN` with
    /// Postgres's warning (25001, "there is already a transaction in
    /// progress").
    NestedBegin,
    /// Route it.
    Route,
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

/// Where a routed statement goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Send(Target),
    /// To several shards at once, outside any transaction.
    FanOut,
    /// To several shards inside the transaction, which they join.
    FanOutInTxn,
    /// Several shards inside a transaction that cannot span shards:
    /// refused with [`CROSS_SHARD_TXN`].
    Refuse,
}

/// Whether the attached server suits a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    Keep,
    /// Give it back (it is idle) and check out another.
    Detach,
    /// The transaction holds it: refused with [`CROSS_SHARD_TXN`].
    Refuse,
    /// The transaction holds it and may span shards: keep it, and make the
    /// target shard's server (joining the transaction) the main one.
    Switch,
}

pub const CROSS_SHARD_TXN: &str = "this transaction was opened on its server directly (a BEGIN sent behind statements still running, or session mode), so it cannot span shards: every statement must route to the shard of its first statement (send BEGIN on its own to let pgshard open it on each shard it touches)";

/// The client's transaction.
#[derive(Debug, Default)]
pub struct Transaction {
    txn: Txn,
    /// `SET pgdog.*` overrides were made inside the transaction: they end
    /// with it.
    scoped_overrides: bool,
    /// The open transaction's join script (see the module comment); `None`
    /// when none is open, or the server opened it.
    join: Option<BytesMut>,
    /// Savepoint statements that open a deferred transaction: they join
    /// its script once it is open.
    after_open: Vec<u8>,
    /// The join script's length before the savepoint statement or setting
    /// just sent to the transaction's one server: if that statement fails,
    /// the script is cut back, so a shard joining later does not replay it.
    tentative: Option<usize>,
}

impl Transaction {
    /// The transaction status the client sees, given its server's.
    pub fn status(&self, server_status: TransactionStatus) -> TransactionStatus {
        match self.txn {
            Txn::None => server_status,
            Txn::Deferred(_) => TransactionStatus::InBlock,
            Txn::Failed => TransactionStatus::Failed,
        }
    }

    /// pgshard holds a transaction state the server does not know of: the
    /// server's ReadyForQuery status is replaced by [`Transaction::status`].
    pub fn overrides_server(&self) -> bool {
        self.txn != Txn::None
    }

    pub fn failed(&self) -> bool {
        self.txn == Txn::Failed
    }

    pub fn deferred(&self) -> bool {
        matches!(self.txn, Txn::Deferred(_))
    }

    /// A transaction is open or deferred.
    pub fn active(&self, server: Option<ServerView>) -> bool {
        self.txn != Txn::None || server.is_some_and(|s| s.status != TransactionStatus::Idle)
    }

    /// A statement, before routing. `busy`: replies to earlier statements
    /// are still due (a BEGIN then goes to the server, in order).
    pub fn on_statement(
        &mut self,
        control: Control<'_>,
        server: Option<ServerView>,
        busy: bool,
    ) -> Verdict {
        let ended = |tag| Verdict::Answer { tag, ends: true };
        match (&self.txn, control) {
            // A failed transaction was rolled back on its server already.
            (Txn::Failed, Control::Commit | Control::Rollback) => {
                self.txn = Txn::None;
                ended("ROLLBACK")
            }
            (Txn::Failed, _) => Verdict::Aborted,
            (Txn::None, Control::Begin(text)) if !self.active(server) && !busy => {
                self.txn = Txn::Deferred(Bytes::copy_from_slice(text));
                Verdict::Answer {
                    tag: "BEGIN",
                    ends: false,
                }
            }
            (Txn::Deferred(_), Control::Begin(_)) => Verdict::NestedBegin,
            (Txn::Deferred(_), Control::Commit) => {
                self.txn = Txn::None;
                ended("COMMIT")
            }
            (Txn::Deferred(_), Control::Rollback) => {
                self.txn = Txn::None;
                ended("ROLLBACK")
            }
            (Txn::Deferred(begin), Control::Scoped(text, tag)) => {
                // They belong to the transaction, which opens later: they
                // travel with its BEGIN (their errors reach the client then).
                // A newline ends a trailing `--` comment.
                let mut joined = BytesMut::from(&begin[..]);
                joined.extend_from_slice(b"\n;");
                joined.extend_from_slice(text);
                self.txn = Txn::Deferred(joined.freeze());
                Verdict::Answer { tag, ends: false }
            }
            _ => Verdict::Route,
        }
    }

    /// Where a routed statement goes: `shards` is `None` when any shard
    /// may run it; `needs_block` when it fails outside a transaction block
    /// or must last as long as it (DECLARE, SAVEPOINT, a named portal).
    /// `any_shard` picks a shard when one must be chosen.
    pub fn place(
        &self,
        shards: Option<&[usize]>,
        needs_block: bool,
        server: Option<ServerView>,
        any_shard: impl FnOnce() -> usize,
    ) -> Placement {
        match shards {
            None if needs_block && self.deferred() => {
                Placement::Send(Target::Shard(server.map_or_else(any_shard, |s| s.shard)))
            }
            None => Placement::Send(Target::Any),
            Some([shard]) => Placement::Send(Target::Shard(*shard)),
            Some(_) if self.spans() => Placement::FanOutInTxn,
            Some(_) if self.active(server) => Placement::Refuse,
            Some(_) => Placement::FanOut,
        }
    }

    /// Whether the attached server can run a statement bound for `target`.
    pub fn fit(&self, target: Target, server: ServerView) -> Fit {
        let keep = match target {
            Target::Any => true,
            // A deferred transaction opens on a server of its own.
            Target::Shard(shard) => shard == server.shard && !self.deferred(),
            // A transaction's server is the one to ask, whatever its shard.
            Target::Near(shard) => shard == server.shard || server.busy(),
        };
        if keep {
            Fit::Keep
        } else if self.join.is_some() && server.status == TransactionStatus::Failed {
            // Its server answers 25P02, as Postgres would.
            Fit::Keep
        } else if self.join.is_some()
            && server.status == TransactionStatus::InBlock
            && !server.copy_in
        {
            Fit::Switch
        } else if server.busy() {
            Fit::Refuse
        } else {
            Fit::Detach
        }
    }

    /// pgshard refuses a statement: inside a transaction, the transaction
    /// is over. Returns whether it must be rolled back on the server.
    pub fn refuse(&mut self, server: Option<ServerView>) -> bool {
        let open_on_server = server.is_some_and(|s| s.status != TransactionStatus::Idle);
        if open_on_server || self.txn != Txn::None {
            self.txn = Txn::Failed;
        }
        open_on_server
    }

    /// A server attached for [`Target::Shard`]: the text that opens the
    /// deferred transaction there (its BEGIN and any `SET LOCAL`).
    pub fn open(&mut self) -> Option<Bytes> {
        match std::mem::take(&mut self.txn) {
            Txn::Deferred(begin) => {
                let mut join = BytesMut::from(&begin[..]);
                join.extend_from_slice(&std::mem::take(&mut self.after_open));
                self.join = Some(join);
                Some(begin)
            }
            other => {
                self.txn = other;
                None
            }
        }
    }

    /// The client saw an error from its server. One before the transaction
    /// opened (a statement run outside it) aborts it all the same; a
    /// statement recorded tentatively leaves the join script.
    pub fn on_error(&mut self) {
        if self.deferred() {
            self.txn = Txn::Failed;
        }
        if let (Some(len), Some(join)) = (self.tentative.take(), self.join.as_mut()) {
            join.truncate(len);
        }
    }

    /// A savepoint statement or setting goes to the transaction's one
    /// server: recorded, and taken back if it fails there
    /// ([`Transaction::on_error`]) before its ReadyForQuery
    /// ([`Transaction::settled`]).
    pub fn record_tentative(&mut self, text: &[u8]) {
        self.tentative = self.join.as_ref().map(BytesMut::len);
        self.record(text);
    }

    /// The server's ReadyForQuery: what was recorded tentatively stays.
    pub fn settled(&mut self) {
        self.tentative = None;
    }

    /// `SET pgdog.*` changed the session's overrides.
    pub fn on_override(&mut self, server: Option<ServerView>) {
        self.scoped_overrides = self.active(server);
    }

    /// The transaction ended here or on the server (its ReadyForQuery
    /// status, `None` when pgshard answered): whether overrides made inside
    /// it must go.
    pub fn on_end(&mut self, server_status: Option<TransactionStatus>) -> bool {
        let ended =
            self.txn == Txn::None && server_status.is_none_or(|s| s == TransactionStatus::Idle);
        if ended {
            self.join = None;
            self.after_open.clear();
        }
        ended && std::mem::take(&mut self.scoped_overrides)
    }

    /// The transaction may span shards: pgshard opens (or opened) it.
    pub fn spans(&self) -> bool {
        self.deferred() || self.join.is_some()
    }

    /// The open transaction's join script, if it can span shards.
    pub fn join_script(&self) -> Option<&[u8]> {
        self.join.as_deref()
    }

    /// A deferred transaction opens now on several shards at once: its
    /// join script (`None` if it cannot span shards).
    pub fn open_spanning(&mut self) -> Option<Bytes> {
        self.open();
        self.join.as_ref().map(|join| Bytes::copy_from_slice(join))
    }

    /// A `SET LOCAL`, SAVEPOINT, RELEASE or ROLLBACK TO succeeded on every
    /// shard the transaction holds: shards joining later replay it.
    pub fn record(&mut self, text: &[u8]) {
        // A newline ends a trailing `--` comment.
        let line = b"\n;".iter().chain(text).copied();
        match (&mut self.join, &self.txn) {
            (Some(join), _) => join.extend(line),
            (None, Txn::Deferred(_)) => self.after_open.extend(line),
            _ => {}
        }
    }

    /// A part of the transaction on some shard is lost (or could not
    /// open): it is aborted, everything but its end refused.
    pub fn fail(&mut self) {
        self.txn = Txn::Failed;
        self.join = None;
        self.after_open.clear();
    }

    /// pgshard opens a transaction of its own for one statement that
    /// writes on several shards (see `dispatch::atomic_across_shards`).
    pub fn begin_implicit(&mut self) {
        self.txn = Txn::Deferred(Bytes::from_static(b"BEGIN"));
    }

    /// The transaction ended on every server (pgshard committed or rolled
    /// back a spanning one).
    pub fn ended(&mut self) {
        self.txn = Txn::None;
        self.join = None;
        self.after_open.clear();
    }
}

#[cfg(test)]
mod tests;
