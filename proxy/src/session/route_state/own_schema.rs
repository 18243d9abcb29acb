//! What a session's own schema changes mean for routing: a catalog read
//! owed once they commit, one owed inside their transaction, the catalog
//! as the transaction sees it routed by until it ends, and the tables
//! made behind pgshard's back that the session asked a read for.
//!
//! "Changed", "unread" and "routing by its own catalog" are independent
//! facts (a commit ends the first but not the others; a read inside the
//! transaction ends the second and starts the third), so they are three
//! private flags, each changed by the event that names it.

use std::collections::HashSet;
use std::sync::Arc;

use router::sharding::Sharding;

/// How many unseen tables a session asks catalog reads for.
const UNSEEN: usize = 64;

/// A session's own schema changes, as far as routing goes.
#[derive(Debug, Default)]
pub(in crate::session) struct OwnSchema {
    /// A statement changed the schema: the catalog is read again once its
    /// transaction commits.
    changed: bool,
    /// Changed since the session last read the catalog inside its
    /// transaction.
    unread: bool,
    /// The session routes by the catalog as its own transaction sees it,
    /// until the transaction ends.
    overlay: bool,
    /// Tables the catalog had not shown that this session asked a read
    /// for (each once; at most [`UNSEEN`]).
    unseen: HashSet<String>,
}

impl OwnSchema {
    /// A statement changed the schema (DDL, `SELECT ... INTO`).
    pub(in crate::session) fn changed_schema(&mut self) {
        self.changed = true;
        self.unread = true;
    }

    /// The transaction's changes are everyone's now (it committed, or the
    /// session is outside any transaction): whether a catalog read is
    /// owed for them (it is asked for once).
    pub(in crate::session) fn take_changes(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// The schema changed since the session last read the catalog inside
    /// its transaction.
    pub(in crate::session) fn unread(&self) -> bool {
        self.unread
    }

    /// The session reads the catalog inside its transaction.
    pub(in crate::session) fn reading(&mut self) {
        self.unread = false;
    }

    /// The session read the catalog inside its transaction: it routes by
    /// it until the transaction ends.
    pub(in crate::session) fn read_in_transaction(&mut self) {
        self.overlay = true;
    }

    /// The session is outside any transaction: whether it was routing by
    /// its own catalog (it stops).
    pub(in crate::session) fn take_overlay(&mut self) -> bool {
        std::mem::take(&mut self.overlay)
    }

    /// `table`, which the catalog has not shown, is looked up: whether to
    /// ask a catalog read for it (once per table, for a few tables).
    pub(in crate::session) fn first_look(&mut self, table: &str) -> bool {
        self.unseen.len() < UNSEEN && self.unseen.insert(table.to_owned())
    }

    /// A new config's `sharding` for a session that routed by `current`:
    /// with what its transaction saw of the catalog while it lasts.
    pub(in crate::session) fn over(
        &self,
        sharding: Arc<Sharding>,
        current: &Sharding,
    ) -> Arc<Sharding> {
        if !self.overlay {
            return sharding;
        }
        let mut own = (*sharding).clone();
        own.catalog.clone_from(&current.catalog);
        own.keyless.clone_from(&current.keyless);
        Arc::new(own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events: `change`, `commit` (take_changes), `read` (reading, then
    /// read_in_transaction), `idle` (take_overlay); then what holds
    /// (`changed`, `unread`, `overlay`, `-`) and what the takes returned.
    fn run(events: &str) -> (String, Vec<bool>) {
        let mut own = OwnSchema::default();
        let mut taken = Vec::new();
        for event in events.split_whitespace() {
            match event {
                "change" => own.changed_schema(),
                "commit" => taken.push(own.take_changes()),
                "read" => {
                    own.reading();
                    own.read_in_transaction();
                }
                "idle" => taken.push(own.take_overlay()),
                other => panic!("unknown event {other}"),
            }
        }
        let facts: Vec<&str> = [
            (own.changed, "changed"),
            (own.unread(), "unread"),
            (own.overlay, "overlay"),
        ]
        .into_iter()
        .filter_map(|(holds, name)| holds.then_some(name))
        .collect();
        let facts = if facts.is_empty() {
            "-".to_owned()
        } else {
            facts.join(" ")
        };
        (facts, taken)
    }

    #[test]
    fn flags_follow_their_events() {
        let cases = [
            ("", "-", vec![]),
            ("change", "changed unread", vec![]),
            ("change read", "changed overlay", vec![]),
            ("change read commit", "overlay", vec![true]),
            ("change read commit idle", "-", vec![true, true]),
            ("change commit commit", "unread", vec![true, false]),
            ("idle", "-", vec![false]),
            ("change read change", "changed unread overlay", vec![]),
        ];
        for (events, facts, taken) in cases {
            assert_eq!(run(events), (facts.to_owned(), taken), "{events}");
        }
    }

    #[test]
    fn each_unseen_table_is_looked_up_once_and_only_a_few() {
        let mut own = OwnSchema::default();
        assert!(own.first_look("t"));
        assert!(!own.first_look("t"));
        for n in 1..UNSEEN {
            assert!(own.first_look(&format!("t{n}")));
        }
        assert!(!own.first_look("one_too_many"));
    }

    #[test]
    fn the_own_catalog_outlives_a_reload_only_while_it_is_routed_by() {
        let current = Sharding::default();
        let reloaded = Arc::new(Sharding::default());
        let mut own = OwnSchema::default();
        let same = own.over(Arc::clone(&reloaded), &current);
        assert!(Arc::ptr_eq(&same, &reloaded), "no overlay: the new config");
        own.read_in_transaction();
        let kept = own.over(Arc::clone(&reloaded), &current);
        assert!(
            !Arc::ptr_eq(&kept, &reloaded),
            "overlay: the catalog is kept"
        );
    }
}
