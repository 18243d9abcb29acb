//! The statement's tables as the router will read them: which qualifier
//! the router resolves to which table, so that a resolved column is
//! written to name the same table among the statement's (indexed only for
//! statements with many tables).

use super::Name;
use crate::summary::TableRef;

/// The statement's tables (the summary's `tables`), to tell which
/// qualifier the router will resolve to which table. Indexed only for
/// statements with many tables.
pub(in crate::extract) struct StatementTables<'t> {
    tables: &'t [TableRef],
    index: Option<Index<'t>>,
}

/// Sorted views of many tables.
struct Index<'t> {
    /// (alias, schema, name) of the aliased tables, sorted.
    by_alias: Vec<(&'t str, Option<&'t str>, &'t str)>,
    /// (name, schema) of every table, sorted.
    by_name: Vec<(&'t str, Option<&'t str>)>,
    /// (schema, name) of every table, sorted, deduplicated.
    set: Vec<(Option<&'t str>, &'t str)>,
}

/// Statements with at most this many tables are looked up by scanning.
const SCANNED_TABLES: usize = 8;

impl<'t> Index<'t> {
    fn new(tables: &'t [TableRef]) -> Index<'t> {
        let mut by_alias: Vec<_> = tables
            .iter()
            .filter_map(|t| Some((t.alias.as_deref()?, t.schema.as_deref(), t.name.as_str())))
            .collect();
        by_alias.sort_unstable();
        let mut by_name: Vec<_> = tables
            .iter()
            .map(|t| (t.name.as_str(), t.schema.as_deref()))
            .collect();
        by_name.sort_unstable();
        let mut set: Vec<_> = by_name
            .iter()
            .map(|&(name, schema)| (schema, name))
            .collect();
        set.sort_unstable();
        set.dedup();
        Index {
            by_alias,
            by_name,
            set,
        }
    }
}

impl<'t> StatementTables<'t> {
    pub fn new(tables: &'t [TableRef]) -> StatementTables<'t> {
        StatementTables {
            tables,
            index: (tables.len() > SCANNED_TABLES).then(|| Index::new(tables)),
        }
    }

    /// The qualifier that makes the router (which looks a qualifier up
    /// among the statement's tables by alias first, then by name) find a
    /// table with `table`'s schema and name: its alias, else its name;
    /// `None` when that finds another table too (or none).
    pub(super) fn qualifier<'n>(&self, table: Name<'n>) -> Option<&'n str> {
        let q = table.qualifier();
        let wanted = (table.schema, table.name);
        // The tables the router may find: those aliased `q`, else those
        // named `q`; all must be `table`'s.
        let all_wanted = |found: &mut dyn Iterator<Item = (Option<&str>, &str)>| {
            let mut any = false;
            for candidate in found {
                if candidate != wanted {
                    return Some(false);
                }
                any = true;
            }
            any.then_some(true)
        };
        let verdict = match &self.index {
            None => {
                let mut aliased = self
                    .tables
                    .iter()
                    .filter(|t| t.alias.as_deref() == Some(q))
                    .map(|t| (t.schema.as_deref(), t.name.as_str()));
                all_wanted(&mut aliased).or_else(|| {
                    let mut named = self
                        .tables
                        .iter()
                        .filter(|t| t.name == q)
                        .map(|t| (t.schema.as_deref(), t.name.as_str()));
                    all_wanted(&mut named)
                })
            }
            Some(index) => {
                let from = index.by_alias.partition_point(|&(alias, ..)| alias < q);
                let mut aliased = index.by_alias[from..]
                    .iter()
                    .take_while(|&&(alias, ..)| alias == q)
                    .map(|&(_, schema, name)| (schema, name));
                all_wanted(&mut aliased).or_else(|| {
                    let from = index.by_name.partition_point(|&(name, _)| name < q);
                    let mut named = index.by_name[from..]
                        .iter()
                        .take_while(|&&(name, _)| name == q)
                        .map(|&(name, schema)| (schema, name));
                    all_wanted(&mut named)
                })
            }
        };
        (verdict == Some(true)).then_some(q)
    }

    /// [`StatementTables::covered_by`] of a level's tables given in any
    /// order (without allocating for statements of few tables); false for
    /// none.
    pub(super) fn covers<'l>(
        &self,
        tables: &mut dyn Iterator<Item = (Option<&'l str>, &'l str)>,
    ) -> bool {
        if self.index.is_some() {
            let mut set: Vec<_> = tables.collect();
            set.sort_unstable();
            set.dedup();
            return !set.is_empty() && self.covered_by(&set);
        }
        let mut any = false;
        let mut seen = 0u64;
        for table in tables {
            any = true;
            let position = self
                .tables
                .iter()
                .position(|t| (t.schema.as_deref(), t.name.as_str()) == table);
            match position {
                Some(i) => seen |= 1 << i,
                None => return false,
            }
        }
        // Every statement table (a duplicate counts with its twin) seen.
        any && self.tables.iter().enumerate().all(|(i, t)| {
            seen & (1 << i) != 0
                || self.tables[..i].iter().enumerate().any(|(j, u)| {
                    seen & (1 << j) != 0
                        && (u.schema.as_deref(), u.name.as_str())
                            == (t.schema.as_deref(), t.name.as_str())
                })
        })
    }

    /// Whether the statement names one table, `(schema, name)`, and only
    /// once (no alias of it beside another).
    pub fn is_only(&self, schema: Option<&str>, name: &str) -> bool {
        matches!(self.tables, [only] if only.schema.as_deref() == schema && only.name == name)
    }

    /// Whether `tables` (sorted, deduplicated) are every table of the
    /// statement: an unqualified column of theirs resolves, among any of
    /// the router's lists that holds them, to the same tables.
    pub(super) fn covered_by(&self, tables: &[(Option<&str>, &str)]) -> bool {
        if let Some(index) = &self.index {
            return index.set.as_slice() == tables;
        }
        fn of(t: &TableRef) -> (Option<&str>, &str) {
            (t.schema.as_deref(), t.name.as_str())
        }
        self.tables
            .iter()
            .all(|t| tables.binary_search(&of(t)).is_ok())
            && tables
                .iter()
                .all(|&wanted| self.tables.iter().any(|t| of(t) == wanted))
    }
}
