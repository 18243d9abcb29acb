//! Whether every database holds the same rows of what a statement names:
//! omnisharded and catalog tables (one database's reply stands for all),
//! tables the catalog has not shown yet, and statements that run
//! everywhere because what they call writes such copies (rule 15).

use crate::sharding::Sharding;
use crate::summary::{StatementSummary, Summary, TableRef};

use super::behind;
use super::tables::{self, TableClass};

/// Every table the statement string names is omnisharded (or a catalog):
/// each database it runs on holds the same rows, so one database's reply
/// (its rows and row count) stands for all, where several databases'
/// concatenated would repeat every row (a write to an omnisharded table
/// runs on every database).
///
/// A statement that names no table but runs everywhere because the
/// functions it calls (or its DO block) write omnisharded tables (rule 15)
/// holds copies too.
pub fn holds_copies(summary: &Summary, sharding: &Sharding) -> bool {
    let mut tables = summary
        .statements
        .iter()
        .flat_map(|s| s.tables.iter().chain(s.target.as_ref()))
        .peekable();
    if tables.peek().is_none() {
        return summary
            .statements
            .iter()
            .any(|stmt| writes_everywhere(stmt, sharding));
    }
    tables.all(|table| {
        matches!(
            tables::classify(table, sharding),
            TableClass::Omnisharded | TableClass::Catalog
        )
    })
}

/// A table of `summary` that the shards' catalog has not shown yet, on a
/// cluster where the catalog decides whether a table is sharded (a
/// column-only `[[sharded_tables]]` entry): one made behind pgshard's back
/// since the last read, which would be taken for one sharded by a key
/// pgshard does not know. `None` before the catalog was first read.
pub fn unseen_table<'s>(summary: &'s Summary, sharding: &Sharding) -> Option<&'s TableRef> {
    if !sharding.unlisted_by_columns {
        return None;
    }
    let keyless = sharding.keyless.as_deref()?;
    summary
        .statements
        .iter()
        .flat_map(|s| s.tables.iter().chain(s.target.as_ref()))
        .find(|table| {
            tables::classify(table, sharding) == TableClass::Unknown
                && !keyless.keyed_names.contains(&table.name)
                && !keyless.contains(table.schema.as_deref(), &table.name)
        })
}

/// The statement runs on every database because what it calls (or its DO
/// block) writes omnisharded tables (rule 15): a write, to be made atomic
/// across the databases like any other.
pub fn writes_everywhere(stmt: &StatementSummary, sharding: &Sharding) -> bool {
    behind::Behind::plan(stmt, sharding).is_some_and(|behind| behind.everywhere())
}

/// Whether every database holds the whole of `table` (an omnisharded
/// table, unlisted or `[[omnisharded_tables]]`, or a catalog), so that its
/// copies must hold the same rows.
pub fn is_copied(table: &TableRef, sharding: &Sharding) -> bool {
    matches!(
        tables::classify(table, sharding),
        TableClass::Omnisharded | TableClass::Catalog
    )
}
