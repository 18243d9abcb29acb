//! Key conditions to shard sets: which sharding key a column is
//! ([`Keys::compile`], once per statement and config), and how `=`, `= ANY`,
//! AND and OR combine into the databases a statement's rows can live on
//! ([`eval`] per Bind; [`restrict`] over a statement's levels). Typing and
//! placing one key value is `key_values.rs`'s.

use smallvec::SmallVec;

use crate::extract::MAX_DEPTH;

use crate::sharding::{DataType, KeySpace, ShardedTable, Sharding};
use crate::summary::{ColumnRef, Condition, TableRef, Value, ValueSource};

use super::key_values::{
    array_keys, column_name, database, different_shards, effective_type, intersect, param,
    value_key, Operand,
};
use super::shard_set::ShardSet;
use super::tables::{classify, entry_names, TableClass};
use super::{ParamValue, RouteError};

/// What one condition says about where matching rows live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Restriction {
    /// Rows may be anywhere (no key, a NULL or missing key, a key compared
    /// in another type).
    Free,
    /// Rows live on these databases (never empty).
    Set(ShardSet),
    /// No row can match (`k = 1 AND k = 2`, `k = ANY('{}')`). The database is
    /// the lowest one the operands named, if any: the statement reads nothing
    /// wherever it runs.
    Nothing(Option<usize>),
}

/// A condition with its columns resolved against the sharding config: what
/// is left to do once the bind parameters are known. Built once per
/// (statement, config) by [`Keys::compile`]; [`eval`] runs it per Bind.
#[derive(Debug, Clone)]
pub(crate) enum Compiled {
    /// Known without parameters: no key, a literal key, or an error (kept
    /// in place so that errors come in the order conditions are read).
    Fixed(Result<Restriction, RouteError>),
    /// `key = $n` (`array: false`) or `key = ANY($n)`: parameter `n` typed
    /// and hashed in the key space of each `[[sharded_tables]]` entry listed
    /// (by index, with the type the value is read as), then unrestricted if
    /// `then_free` (a later entry compares it in a foreign type). Inline:
    /// a key is almost always in one key space.
    Param {
        n: u16,
        array: bool,
        keys: KeyEntries,
        then_free: bool,
    },
    /// `one_column`: every leaf compares the same column, so an empty
    /// intersection matches no row instead of being a cross-shard join.
    And {
        children: Vec<Compiled>,
        one_column: bool,
    },
    Or(Vec<Compiled>),
}

impl Compiled {
    pub(crate) fn is_fixed(&self) -> bool {
        matches!(self, Compiled::Fixed(_))
    }
}

/// The `[[sharded_tables]]` entries (by index) a parameter is typed and
/// hashed with, and the type it is read as.
pub(crate) type KeyEntries = SmallVec<[(usize, DataType); 2]>;

/// What compiling conditions reads: the tables their columns may name
/// (a statement's, or a sublink's) and the config.
pub(crate) struct Keys<'a> {
    pub tables: &'a [TableRef],
    pub sharding: &'a Sharding,
    /// Only columns of these tables (some of `tables`) restrict anything:
    /// what a condition says about one part of a join (rule 13).
    pub only: Option<&'a [TableRef]>,
}

/// Which `[[sharded_tables]]` entries a column reference can be.
enum Owner<'a> {
    /// A table of the statement, through its alias or name.
    Table { table: &'a TableRef, unknown: bool },
    /// An unqualified column: any table of the statement.
    AnyTable,
}

impl Keys<'_> {
    pub(crate) fn compile(&self, condition: &Condition, depth: usize) -> Compiled {
        if depth > MAX_DEPTH {
            // Extractors never nest this deep; not restricting is safe.
            return Compiled::Fixed(Ok(Restriction::Free));
        }
        match condition {
            Condition::Eq { column, value } => self.compile_leaf(column, value, false),
            Condition::Any { column, value } => self.compile_leaf(column, value, true),
            Condition::And(children) => Compiled::And {
                children: children
                    .iter()
                    .map(|child| self.compile(child, depth + 1))
                    .collect(),
                one_column: single_column(condition, 0).is_some(),
            },
            Condition::Or(children) => Compiled::Or(
                children
                    .iter()
                    .map(|child| self.compile(child, depth + 1))
                    .collect(),
            ),
        }
    }

    /// `column = value` (`array: false`) or `column = ANY(value)`.
    fn compile_leaf(&self, column: &ColumnRef, value: &Value, array: bool) -> Compiled {
        let owner = match &column.table {
            None => Owner::AnyTable,
            Some(qualifier) => match self.resolve(qualifier) {
                Some(table) if self.only.is_some_and(|only| !only.contains(table)) => {
                    return Compiled::Fixed(Ok(Restriction::Free))
                }
                Some(table) => Owner::Table {
                    table,
                    unknown: classify(table, self.sharding) == TableClass::Unknown,
                },
                // A subquery's or CTE's alias: its columns may be renamed
                // or computed, so they say nothing about where rows live.
                None => return Compiled::Fixed(Ok(Restriction::Free)),
            },
        };
        let mut keys = KeyEntries::new();
        let mut then_free = false;
        let mut done: Option<&KeySpace> = None;
        for (index, entry) in self.sharding.tables.iter().enumerate() {
            if entry.column != column.column || !self.owns(&owner, entry) {
                continue;
            }
            // Co-located tables share a key space: type and hash once.
            if done.is_some_and(|keys| std::ptr::eq(keys, &entry.keys) || *keys == entry.keys) {
                continue;
            }
            done = Some(&entry.keys);
            match effective_type(value.cast.as_deref(), entry.keys.data_type) {
                Some(data_type) => keys.push((index, data_type)),
                None => {
                    then_free = true;
                    break;
                }
            }
        }
        if keys.is_empty() {
            return Compiled::Fixed(Ok(Restriction::Free));
        }
        let operand = match &value.source {
            ValueSource::Param(n) => {
                return Compiled::Param {
                    n: *n,
                    array,
                    keys,
                    then_free,
                }
            }
            ValueSource::Null => Operand::Null,
            ValueSource::Integer { value, .. } => Operand::Integer(*value),
            ValueSource::Text { text, .. } => Operand::Text(text),
        };
        Compiled::Fixed(leaf(&keys, then_free, operand, array, self.sharding))
    }

    /// The table that `qualifier` names: an alias first, then a table name.
    fn resolve(&self, qualifier: &str) -> Option<&TableRef> {
        let tables = self.tables;
        tables
            .iter()
            .find(|t| t.alias.as_deref() == Some(qualifier))
            .or_else(|| tables.iter().find(|t| t.name == qualifier))
    }

    /// Whether `entry` can be the key of a column owned by `owner`. A
    /// column-only entry (`name` absent) keys the tables the config does not
    /// otherwise describe: a qualified column of such a table, an unqualified
    /// one when the statement reads such a table (a configured table is
    /// sharded by its own entry's column only).
    fn owns(&self, owner: &Owner<'_>, entry: &ShardedTable) -> bool {
        let tables = self.only.unwrap_or(self.tables);
        match (owner, entry.name.is_some()) {
            (Owner::Table { table, .. }, true) => entry_names(entry, table),
            (Owner::Table { unknown, .. }, false) => *unknown,
            (Owner::AnyTable, true) => tables.iter().any(|t| entry_names(entry, t)),
            (Owner::AnyTable, false) => tables
                .iter()
                .any(|t| classify(t, self.sharding) == TableClass::Unknown),
        }
    }
}

/// Where the rows `condition` selects live, given the bind parameters.
pub(crate) fn eval(
    condition: &Compiled,
    params: &[ParamValue<'_>],
    sharding: &Sharding,
    depth: usize,
) -> Result<Restriction, RouteError> {
    match condition {
        Compiled::Fixed(result) => result.clone(),
        Compiled::Param {
            n,
            array,
            keys,
            then_free,
        } => {
            let value = param(params, *n);
            leaf(keys, *then_free, Operand::Param(value), *array, sharding)
        }
        // Compiled trees are as deep as the conditions, which the
        // extractors cap; the guard keeps a hand-built one from overflowing.
        Compiled::And { .. } | Compiled::Or(_) if depth > MAX_DEPTH => Ok(Restriction::Free),
        Compiled::And {
            children,
            one_column,
        } => eval_and(children, *one_column, params, sharding, depth),
        Compiled::Or(children) => eval_or(children, params, sharding, depth),
    }
}

/// An AND: the intersection of its children's databases; an empty one
/// matches no row when every leaf compares one column, else it joins rows
/// on different databases (an error).
fn eval_and(
    children: &[Compiled],
    one_column: bool,
    params: &[ParamValue<'_>],
    sharding: &Sharding,
    depth: usize,
) -> Result<Restriction, RouteError> {
    let mut set: Option<ShardSet> = None;
    let mut lowest: Option<usize> = None;
    let mut nothing = false;
    let mut clash: Option<(usize, usize)> = None;
    for child in children {
        match eval(child, params, sharding, depth + 1)? {
            Restriction::Free => {}
            Restriction::Nothing(hint) => {
                nothing = true;
                lowest = min_hint(lowest, hint);
            }
            Restriction::Set(child) => {
                lowest = min_hint(lowest, child.first());
                match &mut set {
                    None => set = Some(child),
                    Some(set) => {
                        let before = set.first();
                        set.intersect_with(&child);
                        if set.is_empty() && clash.is_none() {
                            clash = Some((before.unwrap_or(0), child.first().unwrap_or(0)));
                        }
                    }
                }
            }
        }
    }
    // `k = 1 AND k = 2` matches no row; `a.k = 1 AND b.k = 2` joins
    // rows that live on different databases.
    if let Some((first, second)) = clash {
        if !one_column {
            return Err(different_shards(first, second));
        }
    }
    Ok(match set {
        Some(set) if !nothing && !set.is_empty() => Restriction::Set(set),
        None if !nothing => Restriction::Free,
        _ => Restriction::Nothing(lowest),
    })
}

/// An OR: the union of its children's databases, free if any child is.
fn eval_or(
    children: &[Compiled],
    params: &[ParamValue<'_>],
    sharding: &Sharding,
    depth: usize,
) -> Result<Restriction, RouteError> {
    let mut set: Option<ShardSet> = None;
    let mut lowest: Option<usize> = None;
    for child in children {
        match eval(child, params, sharding, depth + 1)? {
            Restriction::Free => return Ok(Restriction::Free),
            Restriction::Nothing(hint) => lowest = min_hint(lowest, hint),
            Restriction::Set(child) => match &mut set {
                None => set = Some(child),
                Some(set) => set.union_with(&child),
            },
        }
    }
    Ok(match set {
        Some(set) => Restriction::Set(set),
        None => Restriction::Nothing(lowest),
    })
}

/// One leaf: the databases of `operand` in the key space of each entry of
/// `keys`; unrestricted when the value restricts nothing (NULL, missing,
/// compared in a foreign type).
fn leaf(
    keys: &[(usize, DataType)],
    then_free: bool,
    operand: Operand<'_>,
    array: bool,
    sharding: &Sharding,
) -> Result<Restriction, RouteError> {
    let mut set = ShardSet::empty(sharding.databases);
    for &(index, data_type) in keys {
        let Some(entry) = sharding.tables.get(index) else {
            // A plan used with another config; not restricting is safe.
            return Ok(Restriction::Free);
        };
        if array {
            let Some(keys) = array_keys(entry, data_type, operand)? else {
                return Ok(Restriction::Free);
            };
            for key in &keys {
                set.insert(database(sharding, &entry.keys, key, || column_name(entry))?);
            }
        } else {
            let Some(key) = value_key(entry, data_type, operand)? else {
                return Ok(Restriction::Free);
            };
            set.insert(database(sharding, &entry.keys, &key, || {
                column_name(entry)
            })?);
        }
    }
    Ok(if then_free {
        Restriction::Free
    } else if set.is_empty() {
        Restriction::Nothing(None)
    } else {
        Restriction::Set(set)
    })
}

/// The one column every leaf of `condition` compares, if there is one.
fn single_column(condition: &Condition, depth: usize) -> Option<&ColumnRef> {
    match condition {
        Condition::Eq { column, .. } | Condition::Any { column, .. } => Some(column),
        Condition::And(children) | Condition::Or(children) if depth < MAX_DEPTH => {
            let mut columns = children.iter().map(|c| single_column(c, depth + 1));
            let first = columns.next()??;
            columns.all(|c| c == Some(first)).then_some(first)
        }
        Condition::And(_) | Condition::Or(_) => None,
    }
}

/// Intersect the levels' restrictions with the family tables' databases.
pub(crate) fn restrict(
    conditions: &[Compiled],
    params: &[ParamValue<'_>],
    sharding: &Sharding,
    families: Option<ShardSet>,
) -> Result<Restriction, RouteError> {
    let mut set = families;
    let mut nothing = false;
    let mut lowest: Option<usize> = None;
    for condition in conditions {
        match eval(condition, params, sharding, 0)? {
            Restriction::Free => {}
            Restriction::Nothing(hint) => {
                nothing = true;
                lowest = match (lowest, hint) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            Restriction::Set(next) => set = Some(intersect(set, next)?),
        }
    }
    Ok(match set {
        Some(set) => Restriction::Set(set),
        None if nothing => Restriction::Nothing(lowest),
        None => Restriction::Free,
    })
}

fn min_hint(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
