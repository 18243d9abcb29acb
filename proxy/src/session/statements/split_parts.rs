//! The per-shard statements of a prepared split INSERT, kept on the
//! client's statement by the part's shape (`router::split::PartShape`: its
//! row count when the rows follow one template, else its rows): a Bind
//! whose part has a shape seen before binds the statement registered then,
//! with no text written and no registration, and each server keeps it
//! prepared through the pool's shared prepared statements. At most
//! [`PARTS_PER_STATEMENT`] shapes per statement, least recently used
//! forgotten first; an entry whose statement the registry retired (DDL
//! through pgshard, a Bind that found its server copy stale) is not used.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use router::split::PartShape;

use super::Statement;

/// Shapes kept per client statement: driver-shaped parts go in chunks of
/// at most 8 sizes; parts of rows that differ are a shape each.
pub const PARTS_PER_STATEMENT: usize = 256;

/// One client statement's parts' statements, most recently used last.
#[derive(Debug, Default)]
pub struct PartStatements {
    entries: Vec<(PartShape, Arc<Statement>, Arc<[usize]>)>,
}

impl PartStatements {
    /// The statement of a part of `shape`, and the client's parameter
    /// indexes it was written with.
    pub fn get(&mut self, shape: &PartShape) -> Option<(Arc<Statement>, Arc<[usize]>)> {
        let at = self.entries.iter().rposition(|(s, _, _)| s == shape)?;
        let entry = self.entries.remove(at);
        if entry.1.retired.load(Ordering::Acquire) {
            return None;
        }
        let found = (Arc::clone(&entry.1), Arc::clone(&entry.2));
        self.entries.push(entry);
        Some(found)
    }

    pub fn insert(&mut self, shape: PartShape, statement: Arc<Statement>, params: Arc<[usize]>) {
        self.entries.retain(|(s, _, _)| *s != shape);
        if self.entries.len() >= PARTS_PER_STATEMENT {
            self.entries.remove(0);
        }
        self.entries.push((shape, statement, params));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::statements::Registry;
    use bytes::Bytes;
    use router::cache::AstCache;
    use router::sharding::ParserEngine;

    #[test]
    fn shapes_are_kept_up_to_the_bound_least_recently_used_first_out() {
        let registry = Registry::default();
        let cache = AstCache::new(100, 1 << 20);
        let statement = |n: usize| {
            let text = Bytes::from(format!("INSERT INTO t (k) VALUES ($1) -- {n}"));
            registry.get_or_insert(&text, &[], &cache, ParserEngine::default())
        };
        let params: Arc<[usize]> = Arc::from(vec![0]);
        let mut parts = PartStatements::default();
        for n in 0..PARTS_PER_STATEMENT {
            parts.insert(PartShape::Rows(n), statement(n), Arc::clone(&params));
        }
        assert_eq!(parts.len(), PARTS_PER_STATEMENT);
        // Shape 0 used: shape 1 is now the least recently used, and goes.
        assert!(parts.get(&PartShape::Rows(0)).is_some());
        let extra = PartShape::Exact(vec![1, 2]);
        parts.insert(extra.clone(), statement(9_999), Arc::clone(&params));
        assert_eq!(parts.len(), PARTS_PER_STATEMENT);
        assert!(parts.get(&PartShape::Rows(1)).is_none());
        assert!(parts.get(&PartShape::Rows(0)).is_some());
        assert!(parts.get(&extra).is_some());
        // A retired statement is not handed out, and is dropped.
        let kept = parts.get(&PartShape::Rows(2)).unwrap().0;
        registry.retire(kept.id);
        assert!(parts.get(&PartShape::Rows(2)).is_none());
        assert_eq!(parts.len(), PARTS_PER_STATEMENT - 1);
        registry.retire_all();
        assert!(parts.get(&PartShape::Rows(3)).is_none());
        assert!(!parts.is_empty());
    }
}
