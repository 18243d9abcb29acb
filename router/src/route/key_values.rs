//! Key values to databases: a literal or bind parameter typed as a key
//! space's key (through its cast), hashed and placed on a database of the
//! cluster, and the errors a value that cannot be a key gives.

use crate::hash;
use crate::sharding::{DataType, Key, KeySpace, ShardedTable, Sharding};
use crate::summary::{Value, ValueSource};

use super::shard_set::ShardSet;
use super::{ParamValue, RouteError};

/// A key value as evaluation sees it.
#[derive(Clone, Copy)]
pub(super) enum Operand<'a> {
    Null,
    Integer(i64),
    Text(&'a str),
    Param(ParamValue<'a>),
}

/// Parameter `$n`. A missing one is not known yet (a statement described
/// before its Bind): it reads as NULL, which restricts nothing.
pub(super) fn param<'p>(params: &[ParamValue<'p>], n: u16) -> ParamValue<'p> {
    usize::from(n)
        .checked_sub(1)
        .and_then(|i| params.get(i))
        .copied()
        .unwrap_or(ParamValue::Null)
}

/// The database of parameter `n` read as `data_type` in the key space of
/// `[[sharded_tables]]` entry `entry`; `None` when it restricts nothing (a
/// NULL or missing value, an entry the config does not have). The same as
/// [`leaf`] for one key space and a scalar, without the set.
#[inline]
pub(super) fn param_database(
    n: u16,
    entry: usize,
    data_type: DataType,
    params: &[ParamValue<'_>],
    sharding: &Sharding,
) -> Result<Option<usize>, RouteError> {
    let Some(entry) = sharding.tables.get(entry) else {
        return Ok(None);
    };
    match value_key(entry, data_type, Operand::Param(param(params, n)))? {
        Some(key) => database(sharding, &entry.keys, &key, || column_name(entry)).map(Some),
        None => Ok(None),
    }
}

/// The database of `value` (a literal or parameter) as a key of
/// `[[sharded_tables]]` entry `entry`, read as its type (or as its cast's,
/// when that is of the same kind); `None` when it restricts nothing.
pub(super) fn value_database(
    entry: usize,
    value: &Value,
    params: &[ParamValue<'_>],
    sharding: &Sharding,
) -> Result<Option<usize>, RouteError> {
    let Some(entry) = sharding.tables.get(entry) else {
        return Ok(None);
    };
    let Some(data_type) = effective_type(value.cast.as_deref(), entry.keys.data_type) else {
        return Ok(None);
    };
    let operand = match &value.source {
        ValueSource::Integer { value, .. } => Operand::Integer(*value),
        ValueSource::Text { text, .. } => Operand::Text(text),
        ValueSource::Param(n) => Operand::Param(param(params, *n)),
        ValueSource::Null => Operand::Null,
    };
    match value_key(entry, data_type, operand)? {
        Some(key) => database(sharding, &entry.keys, &key, || column_name(entry)).map(Some),
        None => Ok(None),
    }
}

/// One key value read as `data_type`; `None` for NULL.
#[inline]
pub(super) fn value_key(
    entry: &ShardedTable,
    data_type: DataType,
    operand: Operand<'_>,
) -> Result<Option<Key>, RouteError> {
    let parsed = match operand {
        Operand::Null | Operand::Param(ParamValue::Null) => return Ok(None),
        Operand::Integer(value) => match data_type {
            // Any integer compares with any integer column; one that does
            // not fit the column's type matches no row, wherever it runs.
            DataType::BigInt | DataType::Integer | DataType::SmallInt => Ok(Key::Int(value)),
            _ => hash::parse_text(data_type, &value.to_string()),
        },
        Operand::Text(text) => hash::parse_text(data_type, text),
        Operand::Param(ParamValue::Text(bytes)) => match hash::plain_int(data_type, bytes) {
            Some(parsed) => parsed,
            None => match std::str::from_utf8(bytes) {
                Ok(text) => hash::parse_text(data_type, text),
                Err(_) => return Err(not_utf8(entry, data_type)),
            },
        },
        Operand::Param(ParamValue::Binary(bytes)) => hash::decode_binary(data_type, bytes),
    };
    parsed
        .map(Some)
        .map_err(|err| bad_key(entry, data_type, err))
}

/// The elements of an array value read as `data_type`; `None` for NULL
/// (and for a scalar: `k = ANY(5)` is not an array; Postgres will say so).
pub(super) fn array_keys(
    entry: &ShardedTable,
    data_type: DataType,
    operand: Operand<'_>,
) -> Result<Option<Vec<Key>>, RouteError> {
    let parsed = match operand {
        Operand::Null | Operand::Integer(_) | Operand::Param(ParamValue::Null) => return Ok(None),
        Operand::Text(text) => hash::parse_text_array(data_type, text),
        Operand::Param(ParamValue::Text(bytes)) => match std::str::from_utf8(bytes) {
            Ok(text) => hash::parse_text_array(data_type, text),
            Err(_) => return Err(not_utf8(entry, data_type)),
        },
        Operand::Param(ParamValue::Binary(bytes)) => hash::decode_binary_array(data_type, bytes),
    };
    parsed
        .map(Some)
        .map_err(|err| bad_key(entry, data_type, err))
}

/// The database of `key`, checked against the cluster.
#[inline]
pub(super) fn database(
    sharding: &Sharding,
    keys: &KeySpace,
    key: &Key,
    of: impl FnOnce() -> String,
) -> Result<usize, RouteError> {
    let databases = sharding.databases;
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

/// Two databases a statement would need at once, named in ascending order
/// (the order conditions come in is canonical, not the statement's).
pub(super) fn different_shards(a: usize, b: usize) -> RouteError {
    RouteError::KeysOnDifferentShards {
        first: a.min(b),
        second: a.max(b),
    }
}

/// The type a value is read as: its explicit cast when that is a key type of
/// the column's kind (`$1::int4` against a bigint column sends 4 binary
/// bytes), the column's type without a cast, `None` for a cast to any other
/// type (`::numeric`, `::text` against a bigint): the comparison then happens
/// in that type and the value restricts nothing.
pub(super) fn effective_type(cast: Option<&str>, column: DataType) -> Option<DataType> {
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
pub(super) fn type_name(data_type: DataType) -> &'static str {
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
pub(super) fn column_name(entry: &ShardedTable) -> String {
    match &entry.name {
        Some(name) => format!("{name}.{}", entry.column),
        None => entry.column.clone(),
    }
}

fn bad_key(entry: &ShardedTable, data_type: DataType, reason: hash::KeyError) -> RouteError {
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
        reason: hash::KeyError::ParameterNotUtf8,
    }
}

/// How much of a text key an error message repeats.
const SHOWN_CHARS: usize = 64;

/// A key as SQL would write it (long text cut short).
pub(super) fn key_text(key: &Key) -> String {
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

/// Intersect the levels' restrictions with the family tables' databases.
pub(super) fn intersect(set: Option<ShardSet>, next: ShardSet) -> Result<ShardSet, RouteError> {
    let Some(mut set) = set else {
        return Ok(next);
    };
    let first = set.first().unwrap_or(0);
    set.intersect_with(&next);
    if set.is_empty() {
        return Err(different_shards(first, next.first().unwrap_or(0)));
    }
    Ok(set)
}
