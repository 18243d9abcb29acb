//! What each table a statement names is, for routing: a member of a table
//! family, a configured sharded table, an omnisharded (reference) table, a
//! system catalog, or a table the sharding config does not mention.

use smallvec::SmallVec;

use crate::sharding::{KeySpace, ShardedTable, Sharding, TableFamily};
use crate::summary::{StatementSummary, TableRef};

/// How a table is routed. Checked in this order: an explicit
/// `[[sharded_tables]]` entry naming the table wins over a family pattern,
/// which wins over `[[omnisharded_tables]]`, then the catalogs; a table
/// none of them names is omnisharded or unknown (`unlisted_tables`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableClass<'s> {
    /// `<prefix><N>`: the table itself is the key `N`.
    Family { family: &'s TableFamily, key: i64 },
    /// Named by at least one `[[sharded_tables]]` entry.
    Sharded,
    /// A copy on every database.
    Omnisharded,
    /// `pg_catalog.*`, `information_schema.*`, unqualified `pg_*`: the same
    /// on every database, read like omnisharded tables.
    Catalog,
    /// Not in the sharding config, on a cluster whose unlisted tables are
    /// not omnisharded (`unlisted_tables = "sharded"`, or column-only
    /// entries). Treated as sharded by a key pgshard does not know
    /// (column-only `[[sharded_tables]]` entries may give one): keyless
    /// reads read every database, so no row is silently missed.
    Unknown,
}

/// A statement's tables classified once per plan, for every rule that
/// asks what they are: `tables[i]` is the class of the statement's
/// `tables[i]`, `target` that of its target (the same table's when the
/// statement also lists it, as it does but for hand-built summaries).
pub(crate) struct Classes<'s> {
    pub(crate) tables: SmallVec<[TableClass<'s>; 4]>,
    pub(crate) target: Option<TableClass<'s>>,
}

impl<'s> Classes<'s> {
    pub(crate) fn of(stmt: &StatementSummary, sharding: &'s Sharding) -> Classes<'s> {
        // Pushed, not collected: SmallVec's `extend` costs a plan of one
        // table more than classifying it (`bench/route_instructions.sh`).
        let mut tables = SmallVec::new();
        for table in &stmt.tables {
            tables.push(classify(table, sharding));
        }
        let target = stmt.target.as_ref().map(|target| {
            let listed = stmt
                .tables
                .iter()
                .position(|t| t.name == target.name && t.schema == target.schema);
            match listed {
                Some(index) => tables[index],
                None => classify(target, sharding),
            }
        });
        Classes { tables, target }
    }

    /// The statement's tables with their classes.
    pub(crate) fn zip<'t>(
        &'t self,
        stmt: &'t StatementSummary,
    ) -> impl Iterator<Item = (&'t TableRef, TableClass<'s>)> + 't {
        stmt.tables.iter().zip(self.tables.iter().copied())
    }
}

/// An unqualified name matches any schema (we cannot see the client's
/// `search_path`); a qualified one must equal the configured schema, if any.
pub(crate) fn schema_matches(configured: Option<&str>, written: Option<&str>) -> bool {
    match (configured, written) {
        (Some(configured), Some(written)) => configured == written,
        _ => true,
    }
}

/// A `[[sharded_tables]]` entry with a table name that names `table`.
pub(crate) fn entry_names(entry: &ShardedTable, table: &TableRef) -> bool {
    entry.name.as_deref() == Some(table.name.as_str())
        && schema_matches(entry.schema.as_deref(), table.schema.as_deref())
}

/// A write's target table (`relation`) as the router names it, and
/// whether a `[[sharded_tables]]` entry names it (`Some(false)`: no entry
/// names it and it may be sharded by a column-only entry); `None` when it
/// is no sharded table at all (omnisharded, a family).
pub(crate) fn target_table(
    relation: &parser_ffi::protobuf::RangeVar,
    sharding: &Sharding,
) -> (TableRef, Option<bool>) {
    let table = TableRef {
        schema: (!relation.schemaname.is_empty()).then(|| relation.schemaname.clone()),
        name: relation.relname.clone(),
        alias: None,
    };
    let named = match classify(&table, sharding) {
        TableClass::Sharded => Some(true),
        TableClass::Unknown => Some(false),
        _ => None,
    };
    (table, named)
}

pub(crate) fn classify<'s>(table: &TableRef, sharding: &'s Sharding) -> TableClass<'s> {
    if sharding
        .tables
        .iter()
        .any(|entry| entry_names(entry, table))
    {
        return TableClass::Sharded;
    }
    if let Some((family, key)) = family_member(table, sharding) {
        return TableClass::Family { family, key };
    }
    let omnisharded = sharding.omnisharded.iter().any(|(schema, name)| {
        *name == table.name && schema_matches(schema.as_deref(), table.schema.as_deref())
    });
    if omnisharded {
        return TableClass::Omnisharded;
    }
    let catalog = match table.schema.as_deref() {
        Some(schema) => schema == "pg_catalog" || schema == "information_schema",
        None => table.name.starts_with("pg_"),
    };
    if catalog {
        TableClass::Catalog
    } else if sharding.unlisted_omnisharded
        || sharding
            .keyless
            .as_ref()
            .is_some_and(|k| k.contains(table.schema.as_deref(), &table.name))
    {
        TableClass::Omnisharded
    } else {
        TableClass::Unknown
    }
}

/// The family `table` belongs to and its key: the name is the prefix
/// followed by decimal digits only. A number too large for a bigint is not
/// a member (the table is then routed as unknown: keyless, every database).
fn family_member<'s>(table: &TableRef, sharding: &'s Sharding) -> Option<(&'s TableFamily, i64)> {
    sharding.families.iter().find_map(|family| {
        if !schema_matches(family.schema.as_deref(), table.schema.as_deref()) {
            return None;
        }
        let digits = table.name.strip_prefix(family.prefix.as_str())?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<i64>().ok().map(|key| (family, key))
    })
}

/// Whether a column qualified with `qualifier` can name `table`: by its
/// alias, or by its name when it has none.
pub(super) fn named(table: &TableRef, qualifier: &str) -> bool {
    match &table.alias {
        Some(alias) => alias == qualifier,
        None => table.name == qualifier,
    }
}

/// The key spaces in which `column` is `table`'s sharding key: its own
/// entries' for a configured table, column-only entries' for an unknown
/// one, none for other tables.
pub(super) fn key_spaces<'s>(
    table: &TableRef,
    column: &str,
    sharding: &'s Sharding,
) -> Vec<&'s KeySpace> {
    let class = classify(table, sharding);
    sharding
        .tables
        .iter()
        .filter_map(|entry| {
            let keys_table = match class {
                TableClass::Sharded => entry_names(entry, table),
                TableClass::Unknown => entry.name.is_none(),
                _ => false,
            };
            (keys_table && entry.column == column).then_some(&entry.keys)
        })
        .collect()
}
