//! What stands behind names, in a session (router rule 15): the shards'
//! catalog is read again after a schema change before the next statement
//! is routed (`catalog_epoch.rs`), and a statement that reads views is
//! routed and merged as the views' queries (`router::catalog::expand`)
//! while the shards run the client's own text wherever that is exact.

use std::sync::Arc;

use router::catalog::expand::expand;
use router::sharding::Sharding;
use router::summary::{StatementKind, Summary};
use tracing::warn;

use super::Session;
use crate::errors::ClientError;
use crate::protocol::backend::TransactionStatus;
use crate::protocol::sqlstate;

impl Session {
    /// Before a statement is routed. Outside a transaction: a schema change
    /// this session made asks for a catalog read (other sessions could not
    /// see it before), and what its transaction saw is dropped. Inside
    /// one that changed the schema: the catalog is read on the
    /// transaction's own server, so its next statements look behind the
    /// names it made. Then every read asked for, by anyone, is waited for.
    pub(super) async fn catalog_current(&mut self) {
        if self.status() == TransactionStatus::Idle {
            if self.routing.own_schema_mut().take_overlay() {
                let config = super::attach::sharding_of(&self.shared, &self.info.database);
                self.cluster.own_catalog_dropped(config);
            }
            if self.routing.own_schema_mut().take_changes() {
                self.shared.catalog.request();
            }
        } else {
            self.own_catalog_current().await;
        }
        if !self.shared.catalog.current() && !self.shared.catalog.wait().await {
            warn!(parent: &self.span, "the shards' catalog was not read in time: routing with what was known");
        }
    }

    /// Inside a transaction that changed the schema since the session last
    /// read its catalog, with nothing in flight: read it on the
    /// transaction's own server. Before a Parse too, as its Bind finds the
    /// Parse in flight (clients send Parse, Bind, Execute, Sync at once).
    pub(super) async fn own_catalog_current(&mut self) {
        if self.status() != TransactionStatus::Idle
            && self.routing.own_schema().unread()
            && self.idle()
        {
            self.routing.own_schema_mut().reading();
            self.read_own_catalog().await;
        }
    }

    /// A table made behind pgshard's back since the catalog was last
    /// read, on a cluster where the catalog says which tables are sharded:
    /// read it now (once per table and session) rather than take the table
    /// for one sharded by a key pgshard does not know.
    pub(super) async fn look_up_unseen(&mut self, summary: &Summary) {
        let Some(table) = router::route::unseen_table(summary, self.cluster.sharding()) else {
            return;
        };
        if !self.routing.own_schema_mut().first_look(&table.name) {
            return;
        }
        self.shared.catalog.request();
        if self.shared.catalog.wait().await {
            self.follow_config();
        }
    }

    /// [`Session::look_up_unseen`] for a prepared statement being bound
    /// (`bind`; a Describe needs none).
    pub(super) async fn look_up_unseen_of(
        &mut self,
        statement: &super::statements::Statement,
        bind: bool,
    ) {
        if !bind || !self.sharded() {
            return;
        }
        if let Some(info) = self.route_info(statement) {
            if router::route::unseen_table(&info.entry.summary, self.cluster.sharding()).is_some() {
                self.look_up_unseen(&info.entry.summary).await;
            }
        }
    }

    /// Nothing is in flight: a query of pgshard's own may run on a held
    /// server.
    fn idle(&self) -> bool {
        !self.plan.awaiting_server() && !self.pipeline.unsynced() && !self.phase.holds_batch()
    }

    /// Read the catalog on a server the transaction holds (shard 0's when
    /// it holds one) and route by it until the transaction ends.
    async fn read_own_catalog(&mut self) {
        let shards = self.attached.shards();
        let Some(&shard) = shards.iter().find(|&&s| s == 0).or(shards.first()) else {
            return;
        };
        let sharding = Arc::clone(self.cluster.sharding());
        let Some(server) = self.attached.get_mut(shard) else {
            return;
        };
        // A Query ends the unnamed statement on its server.
        self.pipeline.unnamed_dropped_on(server.conn.id);
        if let Some(own) = crate::execute::catalog::sharding_on(&mut server.conn, &sharding).await {
            self.cluster.own_catalog_read(own);
            self.routing.own_schema_mut().read_in_transaction();
        }
    }

    /// The transaction that changed the schema committed: the catalog is
    /// read again before any session routes its next statement (asked
    /// for before the client learns of the COMMIT).
    pub(super) fn schema_committed(&mut self) {
        if self.routing.own_schema_mut().take_changes() {
            self.shared.catalog.request();
        }
    }

    /// Note a statement that changes the schema (DDL, `SELECT ... INTO`):
    /// its effect on what names stand for is read in its transaction and
    /// once it commits.
    pub(super) fn note_schema_change(&mut self, summary: &Summary) {
        let changes = summary.statements.iter().any(|stmt| {
            stmt.kind == StatementKind::Ddl || (stmt.kind == StatementKind::Select && stmt.write)
        });
        if changes {
            self.routing.own_schema_mut().changed_schema();
        }
    }

    /// The text to route in `sql`'s place when it reads (or writes
    /// through) views: `None` when it names none; an error when it cannot
    /// be read that way.
    pub(super) fn expanded(
        &self,
        summary: &Summary,
        sql: &str,
    ) -> Result<Option<String>, ClientError> {
        if !names_view(summary, self.cluster.sharding()) {
            return Ok(None);
        }
        expand(sql, self.cluster.sharding())
            .map_err(|err| ClientError::new(sqlstate::FEATURE_NOT_SUPPORTED, err.to_string()))
    }
}

impl Session {
    /// The text a prepared statement is analysed as (merged, split):
    /// `query` itself, or its views' expansion (the text its route came
    /// from: see `routing.rs`'s `route_info`).
    pub(super) fn analysed_text(&self, query: &[u8]) -> String {
        let sql = String::from_utf8_lossy(query).into_owned();
        if !self
            .cluster
            .sharding()
            .catalog
            .as_deref()
            .is_some_and(|c| c.has_views())
        {
            return sql;
        }
        match expand(&sql, self.cluster.sharding()) {
            Ok(Some(text)) => text,
            _ => sql,
        }
    }
}

/// Whether a statement of `summary` names a plain view of the cluster's
/// catalog (the expansion leaves schema changes alone).
pub(super) fn names_view(summary: &Summary, sharding: &Sharding) -> bool {
    let Some(catalog) = sharding.catalog.as_deref().filter(|c| c.has_views()) else {
        return false;
    };
    summary
        .statements
        .iter()
        .flat_map(|stmt| stmt.tables.iter())
        .any(|table| catalog.view(table.schema.as_deref(), &table.name).is_some())
}
