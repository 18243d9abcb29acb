//! The gather planner's leaves (rules 2-4 of [`crate::gather`]): which
//! tables a statement names are gathered (sharded, unknown and family
//! tables) and which are read in place on the coordinator (omnisharded and
//! catalog tables), and the columns each gathered table must bring: every
//! column a reference anywhere may mean, all of them when that cannot be
//! told.

use parser_ffi::protobuf as pb;

use super::scope::{ColumnUse, TableUse, Walked};
use super::NotGathered;
use crate::catalog::Catalog;
use crate::route::tables::{classify, TableClass};
use crate::sharding::Sharding;
use crate::summary::TableRef;

/// Columns Postgres adds to every table, which a temp table's copy does not
/// carry over.
const SYSTEM_COLUMNS: &[&str] = &["tableoid", "ctid", "xmin", "xmax", "cmin", "cmax", "oid"];

/// A table to gather, by its use in the walk.
#[derive(Debug)]
pub(super) struct Leaf {
    /// Its number in [`Walked::tables`].
    pub table: usize,
    /// Its columns to gather in table order, `None` for all (`*`).
    pub columns: Option<Vec<String>>,
    /// Its primary key, when every column of it is gathered and listed by
    /// a GROUP BY (Postgres then lets that GROUP BY select the table's
    /// other columns: the temp table needs the key too).
    pub primary_key: Option<Vec<String>>,
}

/// The name a column qualifier gives a table use: its alias, else its
/// name.
pub(super) fn qualifier(range_var: &pb::RangeVar) -> &str {
    match &range_var.alias {
        Some(alias) => &alias.aliasname,
        None => &range_var.relname,
    }
}

pub(super) fn table_ref(range_var: &pb::RangeVar) -> TableRef {
    TableRef {
        schema: (!range_var.schemaname.is_empty()).then(|| range_var.schemaname.clone()),
        name: range_var.relname.clone(),
        alias: range_var.alias.as_ref().map(|a| a.aliasname.clone()),
    }
}

/// Whether `table` is gathered: sharded, unknown and family tables are;
/// omnisharded ones too when `all` (the coordinator is a session of its own
/// inside the client's transaction block: its copy there is not the one the
/// block sees); catalog tables are read in place. A name the catalog
/// knows as a view, or an unknown one it does not know as a table (it may
/// be a view), is refused: its rows per shard are not its rows.
pub(super) fn gathered(
    table: &TableRef,
    sharding: &Sharding,
    all: bool,
) -> Result<bool, NotGathered> {
    let catalog = sharding.catalog.as_deref();
    let schema = table.schema.as_deref();
    if catalog.is_some_and(|c| c.relations(schema, &table.name).next().is_some()) {
        return Err(NotGathered::NotATable(table.name.clone()));
    }
    match classify(table, sharding) {
        TableClass::Omnisharded => Ok(all),
        TableClass::Catalog => Ok(false),
        TableClass::Sharded | TableClass::Family { .. } => Ok(true),
        TableClass::Unknown => match catalog.and_then(|c| c.table(schema, &table.name)) {
            Some(_) => Ok(true),
            None => Err(NotGathered::NotATable(table.name.clone())),
        },
    }
}

/// The leaves of `walked`: its gathered tables with their columns
/// (omnisharded ones too when `all`).
pub(super) fn leaves(
    walked: &Walked<'_>,
    sharding: &Sharding,
    all: bool,
) -> Result<Vec<Leaf>, NotGathered> {
    let catalog = sharding.catalog.as_deref();
    let mut leaves = Vec::new();
    for (number, table) in walked.tables.iter().enumerate() {
        let named = table_ref(table.range_var);
        if !gathered(&named, sharding, all)? {
            continue;
        }
        if table.sampled {
            return Err(NotGathered::TableSample(named.name));
        }
        let known = catalog.and_then(|c| c.columns(named.schema.as_deref(), &named.name));
        refuse_references(table, known, &walked.columns)?;
        let columns = match known {
            Some(known) if !table.all_columns => needed(table, known, walked),
            _ => None,
        };
        let key = catalog.and_then(|c| c.primary_key(named.schema.as_deref(), &named.name));
        let primary_key = key.filter(|key| {
            !key.is_empty()
                && key.iter().all(|k| {
                    walked.grouped.contains(&k.as_str())
                        && columns.as_ref().is_none_or(|c| c.contains(k))
                })
        });
        leaves.push(Leaf {
            table: number,
            primary_key: primary_key.map(<[String]>::to_vec),
            columns,
        });
    }
    Ok(leaves)
}

/// Refuse a whole-row reference to `table` (`SELECT o FROM orders o`), one
/// of its system columns, or a column written with its schema
/// (`public.orders.id`): the temp table would answer them otherwise.
fn refuse_references(
    table: &TableUse<'_>,
    known: Option<&[String]>,
    columns: &[ColumnUse<'_>],
) -> Result<(), NotGathered> {
    let name = qualifier(table.range_var);
    for column in columns {
        let own = |q: &Option<&str>| *q == Some(name);
        match column.fields.as_slice() {
            [Some(only)]
                if *only == name && !known.is_some_and(|k| k.iter().any(|c| c == only)) =>
            {
                return Err(NotGathered::WholeRow(name.to_owned()));
            }
            [Some(last)] if SYSTEM_COLUMNS.contains(last) => {
                return Err(NotGathered::SystemColumn(
                    name.to_owned(),
                    (*last).to_owned(),
                ));
            }
            [q, Some(last)] if own(q) && SYSTEM_COLUMNS.contains(last) => {
                return Err(NotGathered::SystemColumn(
                    name.to_owned(),
                    (*last).to_owned(),
                ));
            }
            [_, q, _] | [_, _, q, _] if own(q) => {
                return Err(NotGathered::SchemaQualified(name.to_owned()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The columns of `table` (whose columns are `known`) that some reference
/// may mean, in table order; `None` for all of them: a `*` at its level, a
/// `q.*` naming it, a column it does not have named through its qualifier.
/// A column named through any other qualifier counts as unqualified (a
/// join's alias passes the table's columns through).
/// At least one column, so that its rows are rows.
fn needed(table: &TableUse<'_>, known: &[String], walked: &Walked<'_>) -> Option<Vec<String>> {
    let name = qualifier(table.range_var);
    let mut wanted = vec![false; known.len()];
    let mut want = |column: &str| match known.iter().position(|c| c == column) {
        Some(at) => {
            wanted[at] = true;
            true
        }
        None => false,
    };
    for column in &walked.columns {
        match column.fields.as_slice() {
            [None] if column.level == table.level => return None,
            [Some(q), None] if *q == name => return None,
            [Some(q), Some(last)] if *q == name && !want(last) => return None,
            // Unqualified, or through another name (a join's alias, another
            // level's item): kept when it has the column.
            [Some(last)] | [Some(_), Some(last)] => {
                want(last);
            }
            _ => {}
        }
    }
    for name in &table.using {
        want(name);
    }
    if !wanted.iter().any(|w| *w) {
        wanted[0] = true;
    }
    let columns: Vec<String> = known
        .iter()
        .zip(&wanted)
        .filter(|(_, w)| **w)
        .map(|(c, _)| c.clone())
        .collect();
    Some(columns)
}

/// Whether the table `table` is known (by the catalog) to have `column`.
pub(super) fn has_column(catalog: Option<&Catalog>, table: &TableRef, column: &str) -> bool {
    catalog
        .and_then(|c| c.columns(table.schema.as_deref(), &table.name))
        .is_some_and(|columns| columns.iter().any(|c| c == column))
}
