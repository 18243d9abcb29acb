//! Rule 12: subqueries inside expressions (sublinks). Postgres runs a
//! sublink on the database that evaluates the expression around it, over
//! that database's rows only, so a sublink that reads sharded tables is
//! exact in one of two ways: it is correlated with an enclosing query on a
//! co-located sharding key (each database meets the partners of its own
//! rows), or its rows all live on one database and the whole statement runs
//! there. [`plan`] sorts the sublinks once per statement and config;
//! [`database`] says, per execution, which database the placed ones need.

use crate::sharding::{KeySpace, Sharding};
use crate::summary::{ColumnRef, StatementSummary, Sublink, Sublinks, TableRef};

use super::facts::table_facts;
use super::keys::{restrict, Compiled, Keys, Restriction};
use super::shard_set::ShardSet;
use super::tables::{key_spaces, named};
use super::{join, ParamValue, RouteError};

/// A sublink whose rows must all live on one database, which the statement
/// then runs on alone.
#[derive(Debug, Clone)]
pub(super) struct Placed {
    /// One per level of it that restricts its rows.
    conditions: Vec<Compiled>,
    /// The databases of the family tables it reads.
    families: Option<ShardSet>,
    /// For errors: a table it reads, and what that table is.
    table: String,
    what: &'static str,
}

impl Placed {
    /// A table it reads, and what that table is.
    pub(super) fn read(&self) -> (&str, &'static str) {
        (&self.table, self.what)
    }

    pub(super) fn is_fixed(&self) -> bool {
        self.conditions.iter().all(Compiled::is_fixed)
    }

    /// The error for a sublink on `databases` when the rest of the
    /// statement runs on `rest`.
    pub(super) fn elsewhere(&self, databases: String, rest: String) -> RouteError {
        RouteError::SubqueryOnOtherShards {
            table: self.table.clone(),
            what: self.what,
            subquery: databases,
            rest,
        }
    }
}

/// The sublinks of `stmt` that must be placed: those that read sharded,
/// unknown or family tables and are not correlated on a co-located key. A
/// sublink read as reading every table (see [`Sublink::reads_every_table`])
/// is refused when the statement reads such a table anywhere.
pub(super) fn plan(
    stmt: &StatementSummary,
    sublinks: &Sublinks,
    sharding: &Sharding,
    first_sharded: Option<(&str, &'static str)>,
) -> Result<Vec<Placed>, RouteError> {
    let mut placed = Vec::new();
    for sublink in &sublinks.subqueries {
        if sublink.reads_every_table {
            match first_sharded {
                Some((table, what)) => {
                    return Err(RouteError::SubqueryWithoutKey {
                        table: table.to_owned(),
                        what,
                    })
                }
                None => continue,
            }
        }
        let facts = table_facts(None, &sublink.tables, sharding)?;
        let Some((table, what)) = facts.first_read else {
            continue;
        };
        if facts.families.is_none() && correlated(sublink, sublinks, stmt, sharding) {
            continue;
        }
        let keys = Keys {
            tables: &sublink.tables,
            sharding,
            only: None,
        };
        placed.push(Placed {
            conditions: sublink
                .conditions
                .iter()
                .map(|condition| keys.compile(condition, 0))
                .collect(),
            families: facts.families,
            table: table.to_owned(),
            what,
        });
    }
    Ok(placed)
}

/// The one database the placed sublinks need with these parameters, and
/// the first sublink that needs it; `None` when none can match a row (it
/// reads nothing wherever it runs). An error when one is unrestricted or
/// restricted to several databases, or two need different ones.
pub(super) fn database<'p>(
    placed: &'p [Placed],
    params: &[ParamValue<'_>],
    sharding: &Sharding,
) -> Result<Option<(usize, &'p Placed)>, RouteError> {
    let mut need: Option<(usize, &Placed)> = None;
    for sublink in placed {
        let set = match restrict(
            &sublink.conditions,
            params,
            sharding,
            sublink.families.clone(),
        )? {
            Restriction::Nothing(_) => continue,
            Restriction::Free => {
                return Err(RouteError::SubqueryWithoutKey {
                    table: sublink.table.clone(),
                    what: sublink.what,
                })
            }
            Restriction::Set(set) => set,
        };
        let first = set.first().unwrap_or(0);
        if set.len() > 1 {
            return Err(sublink.elsewhere(
                format!("shards {}", join(set.iter())),
                "each shard separately".to_owned(),
            ));
        }
        match need {
            Some((database, _)) if database != first => {
                return Err(sublink.elsewhere(
                    format!("shard {first}"),
                    format!("shard {database}, which another subquery reads"),
                ));
            }
            Some(_) => {}
            None => need = Some((first, sublink)),
        }
    }
    Ok(need)
}

/// Whether some equality of `sublink`'s own level correlates it with an
/// enclosing query on a co-located sharding key (either way round), or its
/// IN does ([`Sublink::in_key`]).
fn correlated(
    sublink: &Sublink,
    sublinks: &Sublinks,
    stmt: &StatementSummary,
    sharding: &Sharding,
) -> bool {
    let around = Around {
        sublink,
        sublinks,
        stmt,
        sharding,
    };
    !sublinks.unnamed_item
        && (sublink.equalities.iter().any(|(a, b)| {
            around.correlates(a, b, Read::Inside) || around.correlates(b, a, Read::Inside)
        }) || sublink
            .in_key
            .as_ref()
            .is_some_and(|(inner, outer)| around.correlates(inner, outer, Read::Around)))
}

/// A sublink and what is around it.
struct Around<'a> {
    sublink: &'a Sublink,
    sublinks: &'a Sublinks,
    stmt: &'a StatementSummary,
    sharding: &'a Sharding,
}

/// Where an outer column is written: inside the sublink (an equality of
/// its own level) or at the level around it (the left side of its IN).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    Inside,
    Around,
}

impl<'a> Around<'a> {
    /// `inner = outer` where `inner` is the sharding key of a table of the
    /// sublink's own FROM and `outer` the sharding key, in the same key
    /// space, of every table outside it that `outer` can mean
    /// ([`Around::outer_tables`]).
    fn correlates(&self, inner: &ColumnRef, outer: &ColumnRef, read: Read) -> bool {
        // The inner column: of the table its qualifier names in the
        // sublink's own FROM, or, unqualified, of any table there keyed by
        // it (a table has its key column, so Postgres resolves the name at
        // this level).
        let inner_tables = self
            .sublink
            .from_tables
            .iter()
            .filter(|t| inner.table.as_deref().is_none_or(|q| named(t, q)));
        let spaces: Vec<&KeySpace> = inner_tables
            .flat_map(|t| key_spaces(t, &inner.column, self.sharding))
            .collect();
        if spaces.is_empty() {
            return false;
        }
        let Some(outer_tables) = self.outer_tables(outer, read) else {
            return false;
        };
        !outer_tables.is_empty()
            && outer_tables.iter().all(|t| {
                key_spaces(t, &outer.column, self.sharding)
                    .iter()
                    .any(|space| spaces.contains(space))
            })
    }

    /// The tables of the statement an outer column can mean, or `None` when
    /// that cannot be told. Qualified: the tables its qualifier names,
    /// which must name no FROM item other than a table anywhere in the
    /// statement, nor, read inside, an item of the sublink's own FROM (then
    /// whatever Postgres resolves it to is one of those tables).
    /// Unqualified: Postgres takes the innermost level with an item that has
    /// the column, so when every FROM item of the statement is a table and
    /// the catalog knows every table it names, the tables that have the
    /// column, provided, read inside, that none of the sublink's own FROM
    /// does. Read around, tables named only inside the sublink are left out.
    fn outer_tables(&self, outer: &ColumnRef, read: Read) -> Option<Vec<&'a TableRef>> {
        let (sublink, sublinks) = (self.sublink, self.sublinks);
        let candidates = self
            .stmt
            .tables
            .iter()
            .filter(move |t| read == Read::Inside || self.outside(t));
        let Some(qualifier) = outer.table.as_deref() else {
            let catalog = self.sharding.catalog.as_deref()?;
            if !sublinks.other_names.is_empty() {
                return None;
            }
            let has_column = |table: &TableRef| {
                catalog
                    .columns(table.schema.as_deref(), &table.name)
                    .map(|columns| columns.contains(&outer.column))
            };
            for table in &self.stmt.tables {
                has_column(table)?;
            }
            if read == Read::Inside {
                for table in &sublink.from_tables {
                    if has_column(table)? {
                        return None;
                    }
                }
            }
            return Some(candidates.filter(|t| has_column(t) == Some(true)).collect());
        };
        if (read == Read::Inside && sublink.from_tables.iter().any(|t| named(t, qualifier)))
            || sublinks
                .other_names
                .binary_search_by(|name| name.as_str().cmp(qualifier))
                .is_ok()
        {
            return None;
        }
        Some(candidates.filter(|t| named(t, qualifier)).collect())
    }

    /// Whether `table` is named somewhere outside the sublink's own region:
    /// outside sublinks or in another sublink.
    fn outside(&self, table: &TableRef) -> bool {
        self.sublinks.tables_outside.contains(table)
            || self
                .sublinks
                .subqueries
                .iter()
                .any(|other| !std::ptr::eq(other, self.sublink) && other.tables.contains(table))
    }
}
