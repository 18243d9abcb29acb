//! What stands behind names, in a session (router rule 14): the shards'
//! catalog is read again after a schema change before the next statement
//! is routed (`catalog_epoch.rs`), and a statement that reads views is
//! routed and merged as the views' queries (`router::catalog::expand`)
//! while the shards run the client's own text wherever that is exact.

use router::catalog::expand::expand;
use router::summary::{StatementKind, Summary};
use tracing::warn;

use super::Session;
use crate::errors::ClientError;
use crate::protocol::backend::sqlstate;
use crate::session::ClientIo;

impl<S: ClientIo> Session<S> {
    /// Before a statement is routed: a schema change this session made
    /// asks for a catalog read once its transaction is over (until then
    /// other sessions cannot see it), and every read asked for, by anyone,
    /// is waited for.
    pub(super) async fn catalog_current(&mut self) {
        if self.schema_changed && self.status() == b'I' {
            self.schema_changed = false;
            self.state.catalog.request();
        }
        if !self.state.catalog.current() && !self.state.catalog.wait().await {
            warn!(parent: &self.span, "the shards' catalog was not read in time: routing with what was known");
        }
    }

    /// The transaction that changed the schema committed: the catalog is
    /// read again before any session routes its next statement (asked
    /// for before the client learns of the COMMIT).
    pub(super) fn schema_committed(&mut self) {
        if std::mem::take(&mut self.schema_changed) {
            self.state.catalog.request();
        }
    }

    /// Note a statement that changes the schema (DDL, `SELECT ... INTO`):
    /// its effect on what names stand for is read once it commits.
    pub(super) fn note_schema_change(&mut self, summary: &Summary) {
        self.schema_changed |= summary.statements.iter().any(|stmt| {
            stmt.kind == StatementKind::Ddl || (stmt.kind == StatementKind::Select && stmt.write)
        });
    }

    /// The text to route in `sql`'s place when it reads (or writes
    /// through) views: `None` when it names none; an error when it cannot
    /// be read that way.
    pub(super) fn expanded(
        &self,
        summary: &Summary,
        sql: &str,
    ) -> Result<Option<String>, ClientError> {
        if !names_view(summary, &self.sharding) {
            return Ok(None);
        }
        expand(sql, &self.sharding)
            .map_err(|err| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string()))
    }
}

impl<S: ClientIo> Session<S> {
    /// The text a prepared statement is analysed as (merged, split):
    /// `query` itself, or its views' expansion (the text its route came
    /// from: see `routing.rs`'s `route_info`).
    pub(super) fn analysed_text(&self, query: &[u8]) -> String {
        let sql = String::from_utf8_lossy(query).into_owned();
        if !self
            .sharding
            .catalog
            .as_deref()
            .is_some_and(|c| c.has_views())
        {
            return sql;
        }
        match expand(&sql, &self.sharding) {
            Ok(Some(text)) => text,
            _ => sql,
        }
    }
}

/// Whether a statement of `summary` names a plain view of the cluster's
/// catalog (the expansion leaves schema changes alone).
pub(super) fn names_view(summary: &Summary, sharding: &router::sharding::Sharding) -> bool {
    let Some(catalog) = sharding.catalog.as_deref().filter(|c| c.has_views()) else {
        return false;
    };
    summary
        .statements
        .iter()
        .flat_map(|stmt| stmt.tables.iter())
        .any(|table| catalog.view(table.schema.as_deref(), &table.name).is_some())
}
