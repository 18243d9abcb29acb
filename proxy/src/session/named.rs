//! The client's named statements, both kinds: protocol-level (Parse) and
//! SQL-level (`PREPARE name AS ...`). One state because Postgres gives them
//! one name space: a name prepared one way cannot be prepared the other,
//! DEALLOCATE and DISCARD ALL reach both, and a server's error names either
//! by pgshard's name.

use super::sql_prepared::SqlNames;
use super::statements::ClientStatements;

/// The client's statement names.
#[derive(Debug, Default)]
pub(super) struct Named {
    /// Statements named by Parse.
    pub protocol: ClientStatements,
    /// Statements named by SQL `PREPARE`.
    pub sql: SqlNames,
}

impl Named {
    /// Whether `name` is prepared either way (a new one by that name is
    /// Postgres's 42P05).
    pub fn taken(&self, name: &str) -> bool {
        self.sql.get(name).is_some() || self.protocol.find(name.as_bytes()).is_some()
    }

    /// DEALLOCATE `name`: forgotten, whichever way it was prepared;
    /// whether it was.
    pub fn deallocate(&mut self, name: &[u8]) -> bool {
        self.protocol.remove(name).is_some() || self.sql.remove(name).is_some()
    }

    /// DEALLOCATE ALL, DISCARD ALL: every name forgotten.
    pub fn clear(&mut self) {
        self.protocol.clear();
        self.sql.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use router::cache::AstCache;
    use router::sharding::ParserEngine;

    use super::*;
    use crate::session::sql_prepared::SqlStatement;
    use crate::session::statements::Registry;

    fn named() -> Named {
        let (registry, cache) = (Registry::default(), AstCache::new(10, 1 << 16));
        let text = Bytes::from_static(b"SELECT 1");
        let parsed = registry.get_or_insert(&text, &[], &cache, ParserEngine::default());
        let mut named = Named::default();
        named
            .protocol
            .insert(Bytes::from_static(b"p"), parsed)
            .unwrap();
        let prepared = Arc::new(SqlStatement::new(2, "", "SELECT 2", Vec::new()));
        named.sql.insert("s", prepared).unwrap();
        named
    }

    #[test]
    fn a_name_is_taken_by_either_kind() {
        let named = named();
        assert!(named.taken("p"));
        assert!(named.taken("s"));
        assert!(!named.taken("q"));
    }

    #[test]
    fn deallocate_forgets_either_kind_once() {
        let mut named = named();
        assert!(named.deallocate(b"p"));
        assert!(!named.taken("p"));
        assert!(named.deallocate(b"s"));
        assert!(!named.taken("s"));
        assert!(!named.deallocate(b"s"), "gone already");
        assert!(!named.deallocate(b"q"));
    }

    #[test]
    fn clear_forgets_both_kinds() {
        let mut named = named();
        named.clear();
        assert!(named.protocol.is_empty());
        assert!(named.sql.is_empty());
    }
}
