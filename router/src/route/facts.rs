//! What the tables of a statement (or of a part of it) are, gathered in
//! one pass: whether it reads or touches sharded tables, the first one (to
//! name in errors), and the one database its family tables allow.

use crate::sharding::{Key, Sharding};
use crate::summary::TableRef;

use super::key_values::{database, intersect};
use super::shard_set::ShardSet;
use super::tables::{classify, TableClass};
use super::RouteError;

/// What the tables of a statement (or of a part of it) are, gathered in
/// one pass.
#[derive(Default)]
pub(super) struct TableFacts<'a> {
    /// A configured-sharded or unknown table other than the target (for an
    /// INSERT or MERGE: its rows come from a query over sharded tables).
    pub(super) reads_sharded: bool,
    /// Any sharded, unknown or family table.
    pub(super) touches_sharded: bool,
    /// The target is a configured-sharded or unknown table.
    pub(super) target_sharded: bool,
    /// The first configured-sharded or unknown table, and whether unknown:
    /// the target if it is one.
    pub(super) first_sharded: Option<(&'a str, bool)>,
    /// The first sharded, unknown or family table other than the target, and
    /// how to say what it is.
    pub(super) first_read: Option<(&'a str, &'static str)>,
    /// The intersection of the family tables' databases.
    pub(super) families: Option<ShardSet>,
}

/// The facts of `tables`, of a statement writing `target` (if any).
pub(super) fn table_facts<'a>(
    target: Option<&'a TableRef>,
    tables: &'a [TableRef],
    sharding: &Sharding,
) -> Result<TableFacts<'a>, RouteError> {
    let target = target.map(|target| (target, classify(target, sharding)));
    let tables = tables
        .iter()
        .map(|table| (table, classify(table, sharding)));
    classified_facts(target, tables, sharding)
}

/// [`table_facts`] of tables already classified (the statement's own,
/// classified once per plan: [`super::tables::Classes`]).
pub(super) fn classified_facts<'a, 's>(
    target: Option<(&'a TableRef, TableClass<'s>)>,
    tables: impl Iterator<Item = (&'a TableRef, TableClass<'s>)>,
    sharding: &Sharding,
) -> Result<TableFacts<'a>, RouteError> {
    let mut facts = TableFacts::default();
    if let Some((target, class)) = target {
        if matches!(class, TableClass::Sharded | TableClass::Unknown) {
            facts.target_sharded = true;
            facts.first_sharded = Some((&target.name, class == TableClass::Unknown));
        }
    }
    let target = target.map(|(target, _)| target);
    for (table, class) in tables {
        let other = target != Some(table);
        match class {
            TableClass::Family { family, key } => {
                facts.touches_sharded = true;
                if other && facts.first_read.is_none() {
                    facts.first_read = Some((&table.name, "is a sharded table family"));
                }
                let database = database(sharding, &family.keys, &Key::Int(key), || {
                    format!("table {}", table.name)
                })?;
                let set = ShardSet::single(sharding.databases, database);
                facts.families = Some(intersect(facts.families.take(), set)?);
            }
            class @ (TableClass::Sharded | TableClass::Unknown) => {
                let unknown = class == TableClass::Unknown;
                facts.touches_sharded = true;
                facts.reads_sharded |= other;
                if facts.first_sharded.is_none() {
                    facts.first_sharded = Some((&table.name, unknown));
                }
                if other && facts.first_read.is_none() {
                    let what = if unknown {
                        "is not in the sharding config (so is treated as sharded)"
                    } else {
                        "is sharded"
                    };
                    facts.first_read = Some((&table.name, what));
                }
            }
            TableClass::Omnisharded | TableClass::Catalog => {}
        }
    }
    Ok(facts)
}
