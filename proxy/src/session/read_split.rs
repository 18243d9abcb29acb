//! The read/write split inside a session: whether the statement about to
//! run may be served by a replica of its shard (`pool/balancer.rs` picks which).
//! Only a statement known to be a read qualifies: every statement of the
//! string a SELECT that reads a table, writes nothing (no data-modifying
//! CTE, no `SELECT ... INTO`), locks no row (`FOR UPDATE` and the like) and
//! changes no session state, in transaction mode, outside any transaction.
//! Anything else, unclear cases included (`SELECT nextval(...)` reads no
//! table), runs on the primary, and a replica server still attached from a
//! read before it is given back first.

use router::summary::{StatementKind, Summary};

use super::statements::Statement;
use super::{End, Session};
use crate::pool::roles::RoleNow;

impl Session {
    /// Whether some shard of the cluster has replicas.
    pub(super) fn has_replicas(&self) -> bool {
        self.cluster.has_replicas()
    }

    /// Decide whether the next statement (of `summary`, `None` when it
    /// could not be parsed) may go to a replica; if it may not, give back
    /// an attached replica server.
    pub(super) async fn split_reads(&mut self, summary: Option<&Summary>) -> Result<(), End> {
        let replica_ok = self.has_replicas()
            && self.cluster.transaction_mode()
            && !self.txn.overrides_server()
            && summary.is_some_and(is_read);
        self.routing.judged_read(replica_ok);
        let on_replica = self
            .attached
            .main()
            .is_some_and(|server| server.serves() != RoleNow::Primary);
        if !replica_ok && on_replica {
            self.detach().await?;
        }
        Ok(())
    }

    /// [`Session::split_reads`] for a prepared statement's Bind or Describe.
    pub(super) async fn split_statement(&mut self, statement: &Statement) -> Result<(), End> {
        if self.has_replicas() {
            let lookup = self.route_info(statement);
            self.split_reads(lookup.map(|l| &l.entry.summary)).await?;
        }
        Ok(())
    }

    /// The main server's connection broke: it goes, and its database is
    /// banned if it is a replica.
    pub(super) fn lose_main(&mut self) {
        if let Some(server) = self.attached.take_main() {
            server.pool().ban("server connection lost mid-query");
        }
    }
}

/// Every statement of the string is a plain read of tables.
pub(crate) fn is_read(summary: &Summary) -> bool {
    !summary.statements.is_empty()
        && summary.statements.iter().all(|s| {
            s.kind == StatementKind::Select
                && !s.write
                && !s.locking
                && !s.tables.is_empty()
                && s.session.is_none()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> bool {
        let cache = router::cache::AstCache::new(100, 1 << 20);
        match cache.lookup(sql, router::sharding::ParserEngine::ZeroCopy) {
            Ok(lookup) => is_read(&lookup.entry.summary),
            Err(_) => panic!("parse {sql}"),
        }
    }

    #[test]
    fn only_plain_table_reads_are_reads() {
        for sql in [
            "SELECT * FROM t WHERE id = 1",
            "SELECT count(*) FROM a JOIN b ON a.id = b.id",
            "WITH x AS (SELECT * FROM t) SELECT * FROM x",
            "SELECT 1 FROM t; SELECT 2 FROM u",
        ] {
            assert!(read(sql), "{sql}");
        }
        for sql in [
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET a = 1",
            "DELETE FROM t",
            "SELECT * FROM t FOR UPDATE",
            "SELECT * FROM t FOR SHARE",
            "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
            "SELECT * INTO u FROM t",
            "SELECT 1",
            "SELECT nextval('s')",
            "BEGIN",
            "SET x = 1",
            "COPY t TO STDOUT",
            "SELECT 1 FROM t; INSERT INTO t VALUES (1)",
            "CREATE TABLE t (a int)",
        ] {
            assert!(!read(sql), "{sql}");
        }
    }
}
