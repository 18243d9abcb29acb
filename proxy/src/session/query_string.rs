//! A simple-protocol query string whose statements go to different shards
//! (or one of them to several), run as Postgres runs such a string: one
//! statement at a time, each answered as if sent alone (its rows, its
//! command tag), one ReadyForQuery at the end. Statements outside a block
//! run in one implicit transaction that pgshard opens on every shard they
//! reach (`Transaction::begin_implicit`, as for one statement that writes
//! on several shards) and commits at the end (two-phase with
//! `two_phase_commit` and `two_phase_commit_auto`); the first error skips
//! the rest and rolls it back. BEGIN, COMMIT and ROLLBACK in the string
//! open and end blocks as they do when sent alone. Which strings can run
//! this way is the router's to say (`router::query_string`); the others
//! are refused whole with 0A000, naming the statement, before anything
//! runs.

use router::cache::Lookup;
use router::route::Route;
use router::summary::{StatementKind, Summary};

use super::dispatch::Dispatch;
use super::{End, Session};
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::frontend::Frame;
use crate::protocol::messages;
use crate::protocol::sqlstate;

impl Session {
    /// Run `sql` (summarized in `summary`) one statement at a time, or
    /// refuse it.
    pub(super) async fn query_string(
        &mut self,
        summary: &Summary,
        sql: &str,
    ) -> Result<Dispatch, End> {
        let Ok(pieces) = router::query_string::pieces(sql) else {
            // It parsed before: it cannot fail now. Refused all the same.
            let error = "this query string's statements could not be told apart";
            return Ok(self.refused(ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, error)));
        };
        // What ran before is answered first, its ReadyForQuery included:
        // then the transaction's state is known.
        self.settle_main().await?;
        self.flush().await?;
        let in_block = self.txn.active(self.server_view());
        if let Err(refusal) = router::query_string::check(summary, &pieces, in_block) {
            let error = ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, refusal.to_string());
            return Ok(self.refused(error));
        }
        if let Some(error) = self.unmergeable_piece(&pieces) {
            return Ok(self.refused(error));
        }
        let kinds: Vec<StatementKind> = summary.statements.iter().map(|s| s.kind.clone()).collect();
        self.run_pieces(&pieces, &kinds).await?;
        Ok(Dispatch::Done)
    }

    /// The statements in turn, with the client's ReadyForQuery held back
    /// to the end; an error stops them.
    async fn run_pieces(&mut self, pieces: &[&str], kinds: &[StatementKind]) -> Result<(), End> {
        self.client.hold_ready();
        let ran = self.run_held(pieces, kinds).await;
        self.client.release_ready();
        ran?;
        let status = self.status();
        messages::ready_for_query(self.client.out(), status);
        Ok(self.client.flush().await?)
    }

    /// [`run_pieces`](Self::run_pieces) while ReadyForQuery is held: each
    /// statement as a Query of its own, its replies relayed before the
    /// next; the string's implicit transaction, if one is still open at
    /// the end, committed (or rolled back after an error).
    async fn run_held(&mut self, pieces: &[&str], kinds: &[StatementKind]) -> Result<(), End> {
        let mut implicit = false;
        let mut failed = false;
        for (piece, kind) in pieces.iter().zip(kinds) {
            if !implicit && *kind != StatementKind::Begin && !self.txn.active(self.server_view()) {
                self.txn.begin_implicit();
                implicit = true;
            }
            let errors = self.pipeline.error_mark();
            Box::pin(self.on_query(Frame::query(piece))).await?;
            self.settle_main().await?;
            self.flush().await?;
            if self.pipeline.errors_since(errors) || self.status() == TransactionStatus::Failed {
                failed = true;
                break;
            }
        }
        if implicit && self.txn.active(self.server_view()) {
            let auto = self.shared.config().general.two_phase_commit_auto;
            let commit = !failed && !self.txn.failed();
            if let Err(error) = self.end_spanning(commit, auto).await? {
                error.encode(self.client.out());
                self.pipeline.error_relayed();
            }
        }
        Ok(())
    }

    /// The first statement that reads from several shards rows the
    /// streaming merge cannot combine, refused before anything runs
    /// (naming it) rather than after the statements before it did.
    fn unmergeable_piece(&mut self, pieces: &[&str]) -> Option<ClientError> {
        for (i, piece) in pieces.iter().enumerate() {
            let Ok(lookup) = self.lookup(piece) else {
                continue;
            };
            if !self.fans_out(&lookup) {
                continue;
            }
            let sharding = self.cluster.sharding();
            if let Err(error) = super::merge::simple_query_rows(&lookup.entry, piece, sharding) {
                return Some(ClientError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!(
                        "statement {} of this query string: {}",
                        i + 1,
                        error.message
                    ),
                ));
            }
        }
        None
    }

    /// Whether a statement is a SELECT that goes to several shards.
    fn fans_out(&self, lookup: &Lookup) -> bool {
        let [statement] = lookup.entry.summary.statements.as_slice() else {
            return false;
        };
        if statement.kind != StatementKind::Select {
            return false;
        }
        let params = lookup.params(&[]);
        let overrides = self.overrides(&lookup.overrides);
        match lookup
            .entry
            .route(&params, &overrides, self.cluster.sharding())
        {
            Ok(routed) => match routed.route {
                Route::All => self.cluster.shards() > 1,
                Route::Shards(set) => set.len() > 1,
                Route::Any | Route::Shard(_) => false,
            },
            Err(_) => false,
        }
    }
}
