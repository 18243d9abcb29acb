//! Statements pgshard answers itself on a sharded cluster, in the simple
//! protocol or at a Bind: `SET pgdog.shard` / `SET pgdog.sharding_key`
//! (the session's overrides), and the transaction control the transaction
//! state machine takes (a deferred BEGIN, its end, a `SET LOCAL` joining
//! it, anything in an aborted transaction).

use bytes::BytesMut;
use router::summary::{SessionEffect, StatementKind, StatementSummary, Summary};

use super::reply_plan::Step;
use super::transaction::{Control, Verdict};
use super::Session;
use crate::errors::ClientError;
use crate::protocol::frontend::FrontendKind;
use crate::protocol::messages;
use crate::protocol::messages::{error_response, Severity};
use crate::protocol::sqlstate;

/// A portal pgshard answers itself (transaction control bound in the
/// extended protocol): its Execute gets `tag`, after the nested-BEGIN
/// warning when `nested`.
#[derive(Debug, Clone, Copy)]
pub struct LocalPortal {
    pub tag: &'static str,
    pub nested: bool,
}

impl Session {
    /// The error for a statement inside a transaction pgshard refused.
    pub(super) fn aborted(&mut self, simple: bool) {
        self.local_error(
            ClientError::new(
                sqlstate::IN_FAILED_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ),
            simple,
        );
    }

    /// `SET pgdog.shard` (`None`: RESET): its command tag, or why the value
    /// is refused.
    fn apply_shard_override(&mut self, value: Option<&str>) -> Result<&'static str, ClientError> {
        match value.map(|v| v.trim().parse::<usize>()) {
            None => {
                self.routing.shard_set(None);
                Ok("RESET")
            }
            Some(Ok(shard)) if shard < self.cluster.shards() => {
                self.routing.shard_set(Some(shard));
                self.txn.on_override(self.server_view());
                Ok("SET")
            }
            Some(_) => Err(ClientError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!(
                    "invalid value for pgdog.shard: {:?} (this cluster has shards 0 to {})",
                    value.unwrap_or_default(),
                    self.cluster.shards().saturating_sub(1)
                ),
            )),
        }
    }

    /// `SET pgdog.sharding_key` (`None`: RESET): its command tag.
    fn apply_sharding_key_override(&mut self, value: Option<String>) -> &'static str {
        let tag = if value.is_some() { "SET" } else { "RESET" };
        self.routing.sharding_key_set(value);
        self.txn.on_override(self.server_view());
        tag
    }

    /// Overrides set inside a transaction last until it ends.
    pub(super) fn end_txn_overrides(&mut self) {
        if self.txn.on_end(None) {
            self.routing.overrides_ended();
        }
    }

    pub(super) fn local_tag(&mut self, tag: &str, simple: bool) {
        let mut reply = BytesMut::new();
        messages::command_complete(&mut reply, tag);
        self.plan.push(Step::Local {
            bytes: reply.freeze(),
            ready: simple,
        });
    }

    /// Statements pgshard answers itself, as a simple query or as a Bind
    /// (whose portal `Session::on_local_portal` then answers): `SET
    /// pgdog.shard` / `SET pgdog.sharding_key` set the session's overrides,
    /// and transaction control the transaction answers (a deferred BEGIN,
    /// its end, `SET LOCAL` joining it, anything in an aborted one).
    /// Returns whether the statement was answered.
    pub(super) fn answer_locally(&mut self, summary: &Summary, query: &[u8], simple: bool) -> bool {
        let only = match summary.statements.as_slice() {
            [only] => Some(only),
            _ => None,
        };
        let overridden = match only.map(|only| &only.kind) {
            _ if self.txn.failed() => None,
            Some(StatementKind::SetShard(value)) => {
                Some(self.apply_shard_override(value.as_deref()))
            }
            Some(StatementKind::SetShardingKey(value)) => {
                Some(Ok(self.apply_sharding_key_override(value.clone())))
            }
            _ => None,
        };
        let mut nested = false;
        let tag = match overridden {
            Some(Ok(tag)) => tag,
            Some(Err(error)) => {
                self.local_error(error, simple);
                return true;
            }
            None => {
                let control = Self::control(only, query);
                let busy = self.plan.awaiting_server();
                match self.txn.on_statement(control, self.server_view(), busy) {
                    Verdict::Route => return false,
                    Verdict::Aborted => {
                        self.aborted(simple);
                        return true;
                    }
                    Verdict::NestedBegin => {
                        nested = true;
                        "BEGIN"
                    }
                    Verdict::Answer { tag, ends } => {
                        if ends {
                            self.end_txn_overrides();
                            // (A failed one's servers were rolled back.)
                            self.portals.cursors.txn_end(tag == "COMMIT");
                            self.listen_txn_end(tag == "COMMIT");
                        }
                        tag
                    }
                }
            }
        };
        if simple {
            if nested {
                self.warn_nested_begin();
            }
            self.local_tag(tag, true);
        } else {
            // BindComplete now, the rest of the portal's messages until
            // Sync by `Session::on_local_portal`.
            self.local_reply(messages::bind_complete);
            self.phase.bind_local(LocalPortal { tag, nested });
        }
        true
    }

    /// A message for the portal pgshard answers itself (transaction
    /// control bound in the extended protocol): answered here, or (any
    /// other message) the portal is done. Returns whether it was answered.
    pub(super) fn on_local_portal(&mut self, kind: FrontendKind) -> bool {
        let Some(portal) = self.phase.local_portal() else {
            return false;
        };
        match kind {
            FrontendKind::Execute => {
                if portal.nested {
                    self.warn_nested_begin();
                }
                self.local_tag(portal.tag, false);
            }
            FrontendKind::Describe => self.local_reply(messages::no_data),
            FrontendKind::Close => self.local_reply(messages::close_complete),
            FrontendKind::Flush => {}
            _ => {
                self.phase.end_portal();
                return false;
            }
        }
        true
    }

    /// Postgres's warning for a BEGIN inside a transaction, sent as its
    /// statement runs.
    pub(super) fn warn_nested_begin(&mut self) {
        let mut warning = BytesMut::new();
        error_response(
            &mut warning,
            Severity::Warning,
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "there is already a transaction in progress",
        );
        self.plan.push(Step::Local {
            bytes: warning.freeze(),
            ready: false,
        });
    }

    /// A reply pgshard makes itself, in its place among the server's.
    pub(super) fn local_reply(&mut self, encode: fn(&mut BytesMut)) {
        let mut reply = BytesMut::new();
        encode(&mut reply);
        self.plan.push(Step::Local {
            bytes: reply.freeze(),
            ready: false,
        });
    }

    /// An error pgshard raises itself. In the extended protocol the rest up
    /// to Sync is skipped, as Postgres does; a simple query gets its
    /// ReadyForQuery right away.
    pub(super) fn local_error(&mut self, error: ClientError, simple: bool) {
        self.shared.metrics.error(error.code.as_bytes());
        let mut reply = BytesMut::new();
        error.encode(&mut reply);
        self.plan.push(Step::Local {
            bytes: reply.freeze(),
            ready: simple,
        });
        if !simple {
            self.phase.skip();
        }
    }

    /// What the only statement of a string (`None`: several) means for
    /// the transaction.
    fn control<'q>(only: Option<&StatementSummary>, query: &'q [u8]) -> Control<'q> {
        let Some(only) = only else {
            return Control::Other;
        };
        match (&only.kind, &only.session) {
            (StatementKind::Begin, _) => Control::Begin(query),
            (StatementKind::Commit, _) => Control::Commit,
            (StatementKind::Rollback, _) => Control::Rollback,
            (_, Some(SessionEffect::TransactionScoped(tag))) => Control::Scoped(query, tag),
            _ => Control::Other,
        }
    }
}
