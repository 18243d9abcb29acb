//! Key conditions to shard sets: which sharding key a column is, how a
//! literal or bind parameter types as that key, and how `=`, `= ANY`, AND and
//! OR combine into the databases a statement's rows can live on.

use crate::extract::MAX_DEPTH;
use crate::hash;
use crate::sharding::{DataType, Key, KeySpace, ShardedTable, Sharding};
use crate::summary::{ColumnRef, Condition, StatementSummary, TableRef, Value, ValueSource};

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

/// Everything condition evaluation reads.
pub(crate) struct Keys<'a, 'p> {
    pub stmt: &'a StatementSummary,
    pub params: &'a [ParamValue<'p>],
    pub sharding: &'a Sharding,
}

/// Which `[[sharded_tables]]` entries a column reference can be.
enum Owner<'a> {
    /// A table of the statement, through its alias or name.
    Table { table: &'a TableRef, unknown: bool },
    /// An unqualified column: any table of the statement.
    AnyTable,
}

impl Keys<'_, '_> {
    pub(crate) fn restriction(
        &self,
        condition: &Condition,
        depth: usize,
    ) -> Result<Restriction, RouteError> {
        if depth > MAX_DEPTH {
            // Extractors never nest this deep; not restricting is safe.
            return Ok(Restriction::Free);
        }
        match condition {
            Condition::Eq { column, value } => self.compare(column, value, false),
            Condition::Any { column, value } => self.compare(column, value, true),
            Condition::And(children) => {
                let mut set: Option<ShardSet> = None;
                let mut lowest: Option<usize> = None;
                let mut nothing = false;
                let mut clash: Option<(usize, usize)> = None;
                for child in children {
                    match self.restriction(child, depth + 1)? {
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
                                        clash =
                                            Some((before.unwrap_or(0), child.first().unwrap_or(0)));
                                    }
                                }
                            }
                        }
                    }
                }
                // `k = 1 AND k = 2` matches no row; `a.k = 1 AND b.k = 2`
                // joins rows that live on different databases.
                if let Some((first, second)) = clash {
                    if single_column(condition, 0).is_none() {
                        return Err(different_shards(first, second));
                    }
                }
                Ok(match set {
                    Some(set) if !nothing && !set.is_empty() => Restriction::Set(set),
                    None if !nothing => Restriction::Free,
                    _ => Restriction::Nothing(lowest),
                })
            }
            Condition::Or(children) => {
                let mut set: Option<ShardSet> = None;
                let mut lowest: Option<usize> = None;
                for child in children {
                    match self.restriction(child, depth + 1)? {
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
        }
    }

    /// `column = value` (`array: false`) or `column = ANY(value)`.
    fn compare(
        &self,
        column: &ColumnRef,
        value: &Value,
        array: bool,
    ) -> Result<Restriction, RouteError> {
        let owner = match &column.table {
            None => Owner::AnyTable,
            Some(qualifier) => match self.resolve(qualifier) {
                Some(table) => Owner::Table {
                    table,
                    unknown: classify(table, self.sharding) == TableClass::Unknown,
                },
                // A subquery's or CTE's alias: its columns may be renamed
                // or computed, so they say nothing about where rows live.
                None => return Ok(Restriction::Free),
            },
        };
        let databases = self.sharding.databases;
        let mut set = ShardSet::empty(databases);
        let mut found = false;
        let mut done: Option<&KeySpace> = None;
        for entry in &self.sharding.tables {
            if entry.column != column.column || !self.owns(&owner, entry) {
                continue;
            }
            // Co-located tables share a key space: type and hash once.
            if done.is_some_and(|keys| std::ptr::eq(keys, &entry.keys) || *keys == entry.keys) {
                continue;
            }
            done = Some(&entry.keys);
            found = true;
            let keyed = if array {
                self.array_databases(entry, value, &mut set)?
            } else {
                self.value_database(entry, value, &mut set)?
            };
            if !keyed {
                return Ok(Restriction::Free);
            }
        }
        Ok(if !found {
            Restriction::Free
        } else if set.is_empty() {
            Restriction::Nothing(None)
        } else {
            Restriction::Set(set)
        })
    }

    /// The statement's table that `qualifier` names: an alias first, then a
    /// table name.
    fn resolve(&self, qualifier: &str) -> Option<&TableRef> {
        let tables = &self.stmt.tables;
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
        match (owner, entry.name.is_some()) {
            (Owner::Table { table, .. }, true) => entry_names(entry, table),
            (Owner::Table { unknown, .. }, false) => *unknown,
            (Owner::AnyTable, true) => self.stmt.tables.iter().any(|t| entry_names(entry, t)),
            (Owner::AnyTable, false) => self
                .stmt
                .tables
                .iter()
                .any(|t| classify(t, self.sharding) == TableClass::Unknown),
        }
    }

    /// Add the database of one key value; `false` when the value restricts
    /// nothing (NULL, missing parameter, compared in a foreign type).
    fn value_database(
        &self,
        entry: &ShardedTable,
        value: &Value,
        set: &mut ShardSet,
    ) -> Result<bool, RouteError> {
        let Some(data_type) = effective_type(value.cast.as_deref(), entry.keys.data_type) else {
            return Ok(false);
        };
        let parsed = match &value.source {
            ValueSource::Null => return Ok(false),
            ValueSource::Integer { value, .. } => match data_type {
                // Any integer compares with any integer column; one that does
                // not fit the column's type matches no row, wherever it runs.
                DataType::BigInt | DataType::Integer | DataType::SmallInt => Ok(Key::Int(*value)),
                _ => hash::parse_text(data_type, &value.to_string()),
            },
            ValueSource::Text { text, .. } => hash::parse_text(data_type, text),
            ValueSource::Param(n) => match self.param(*n) {
                ParamValue::Null => return Ok(false),
                ParamValue::Text(bytes) => match std::str::from_utf8(bytes) {
                    Ok(text) => hash::parse_text(data_type, text),
                    Err(_) => return Err(not_utf8(entry, data_type)),
                },
                ParamValue::Binary(bytes) => hash::decode_binary(data_type, bytes),
            },
        };
        let key = parsed.map_err(|err| bad_key(entry, data_type, err))?;
        set.insert(self.database(&entry.keys, &key, || column_name(entry))?);
        Ok(true)
    }

    /// Add the databases of every element of an array value.
    fn array_databases(
        &self,
        entry: &ShardedTable,
        value: &Value,
        set: &mut ShardSet,
    ) -> Result<bool, RouteError> {
        let Some(data_type) = effective_type(value.cast.as_deref(), entry.keys.data_type) else {
            return Ok(false);
        };
        let parsed = match &value.source {
            // `k = ANY(5)` is not an array; Postgres will say so.
            ValueSource::Null | ValueSource::Integer { .. } => return Ok(false),
            ValueSource::Text { text, .. } => hash::parse_text_array(data_type, text),
            ValueSource::Param(n) => match self.param(*n) {
                ParamValue::Null => return Ok(false),
                ParamValue::Text(bytes) => match std::str::from_utf8(bytes) {
                    Ok(text) => hash::parse_text_array(data_type, text),
                    Err(_) => return Err(not_utf8(entry, data_type)),
                },
                ParamValue::Binary(bytes) => hash::decode_binary_array(data_type, bytes),
            },
        };
        let keys = parsed.map_err(|err| bad_key(entry, data_type, err))?;
        for key in &keys {
            set.insert(self.database(&entry.keys, key, || column_name(entry))?);
        }
        Ok(true)
    }

    /// Parameter `$n`; a missing one reads as NULL (not known yet, e.g. when
    /// a statement is described before its Bind).
    fn param(&self, n: u16) -> ParamValue<'_> {
        usize::from(n)
            .checked_sub(1)
            .and_then(|i| self.params.get(i))
            .copied()
            .unwrap_or(ParamValue::Null)
    }

    /// The database of `key`, checked against the cluster.
    pub(crate) fn database(
        &self,
        keys: &KeySpace,
        key: &Key,
        of: impl FnOnce() -> String,
    ) -> Result<usize, RouteError> {
        let databases = self.sharding.databases;
        match hash::database(keys, key) {
            None => Err(RouteError::NoShardForKey {
                key: key_text(key),
                of: of(),
            }),
            Some(database) if database >= databases => Err(RouteError::NoSuchShard {
                shard: database,
                databases,
            }),
            Some(database) => Ok(database),
        }
    }
}

/// Two databases a statement would need at once, named in ascending order
/// (the order conditions come in is canonical, not the statement's).
pub(crate) fn different_shards(a: usize, b: usize) -> RouteError {
    RouteError::KeysOnDifferentShards {
        first: a.min(b),
        second: a.max(b),
    }
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

fn min_hint(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The type a value is read as: its explicit cast when that is a key type of
/// the column's kind (`$1::int4` against a bigint column sends 4 binary
/// bytes), the column's type without a cast, `None` for a cast to any other
/// type (`::numeric`, `::text` against a bigint): the comparison then happens
/// in that type and the value restricts nothing.
pub(crate) fn effective_type(cast: Option<&str>, column: DataType) -> Option<DataType> {
    let Some(cast) = cast else {
        return Some(column);
    };
    let cast = match cast {
        "int2" => DataType::SmallInt,
        "int4" => DataType::Integer,
        "int8" => DataType::BigInt,
        "text" => DataType::Text,
        "varchar" => DataType::Varchar,
        "uuid" => DataType::Uuid,
        _ => return None,
    };
    (kind(cast) == kind(column)).then_some(cast)
}

/// Key types that compare with each other without a cast.
fn kind(data_type: DataType) -> u8 {
    match data_type {
        DataType::BigInt | DataType::Integer | DataType::SmallInt => 0,
        DataType::Text | DataType::Varchar => 1,
        DataType::Uuid => 2,
    }
}

/// The SQL name of a key type, for messages.
pub(crate) fn type_name(data_type: DataType) -> &'static str {
    match data_type {
        DataType::BigInt => "bigint",
        DataType::Integer => "integer",
        DataType::SmallInt => "smallint",
        DataType::Text => "text",
        DataType::Varchar => "varchar",
        DataType::Uuid => "uuid",
    }
}

/// `orders.tenant_id`, or just `customer_id` for a column-only entry.
pub(crate) fn column_name(entry: &ShardedTable) -> String {
    match &entry.name {
        Some(name) => format!("{name}.{}", entry.column),
        None => entry.column.clone(),
    }
}

fn bad_key(entry: &ShardedTable, data_type: DataType, err: hash::KeyError) -> RouteError {
    let hash::KeyError::Invalid(reason) = err;
    RouteError::BadKey {
        column: column_name(entry),
        data_type: type_name(data_type),
        reason,
    }
}

fn not_utf8(entry: &ShardedTable, data_type: DataType) -> RouteError {
    RouteError::BadKey {
        column: column_name(entry),
        data_type: type_name(data_type),
        reason: "the text-format parameter is not valid UTF-8".to_owned(),
    }
}

/// How much of a text key an error message repeats.
const SHOWN_CHARS: usize = 64;

/// A key as SQL would write it (long text cut short).
pub(crate) fn key_text(key: &Key) -> String {
    match key {
        Key::Int(value) => value.to_string(),
        Key::Text(text) => match text.char_indices().nth(SHOWN_CHARS) {
            Some((cut, _)) => format!("'{}'...", text[..cut].replace('\'', "''")),
            None => format!("'{}'", text.replace('\'', "''")),
        },
        Key::Uuid(bytes) => {
            let mut out = String::with_capacity(38);
            out.push('\'');
            for (i, byte) in bytes.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    out.push('-');
                }
                out.push_str(&format!("{byte:02x}"));
            }
            out.push('\'');
            out
        }
    }
}
