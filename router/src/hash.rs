//! Sharding keys: typed from text or binary values (scalars here, arrays in
//! `hash/array.rs`), hashed exactly as Postgres (`PARTITION BY HASH`) or Citus
//! do (through `hash/lookup3.rs`, our own implementation of the hashes in
//! Postgres's `hashfn.c`), and mapped to logical shards and databases;
//! `hash/predicate.rs` writes the same mapping as SQL.

mod array;
mod lookup3;
mod predicate;

pub use array::{decode_binary_array, parse_text_array};
pub use lookup3::{hash_bytes, hash_bytes_extended, hash_bytes_uint32, hash_bytes_uint32_extended};
pub use predicate::{predicate, PredicateError};

use crate::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};

/// Why a value is not a key of the column's type (Postgres's words where
/// it says the same).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("invalid input syntax for type {type_name}: {text}")]
    Syntax {
        type_name: &'static str,
        /// The value as shown (quoted, long ones cut short).
        text: String,
    },
    #[error("value {text} is out of range for type {type_name}")]
    OutOfRange {
        type_name: &'static str,
        text: String,
    },
    #[error("{0} key contains a NUL byte, which Postgres does not accept")]
    Nul(&'static str),
    #[error("binary {type_name} key must be 2, 4 or 8 bytes, got {len}")]
    BinaryIntLength { type_name: &'static str, len: usize },
    #[error("binary {0} key is not valid UTF-8")]
    BinaryNotUtf8(&'static str),
    #[error("binary uuid key must be 16 bytes, got {0}")]
    BinaryUuidLength(usize),
    #[error("a text value that is not UTF-8")]
    TextNotUtf8,
    #[error("the text-format parameter is not valid UTF-8")]
    ParameterNotUtf8,
    #[error("malformed array literal: {text}: {detail}")]
    MalformedArray { text: String, detail: &'static str },
    #[error("malformed binary array: {0}")]
    MalformedBinaryArray(#[from] BinaryArrayError),
    #[error("an array of type oid {oid} cannot hold {type_name} keys")]
    ArrayElementType { oid: u32, type_name: &'static str },
}

/// What is wrong with an array's binary form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinaryArrayError {
    #[error("invalid number of dimensions {0}")]
    Dimensions(i32),
    #[error("invalid array flags {0}")]
    Flags(i32),
    #[error("negative dimension {0}")]
    NegativeDimension(i32),
    #[error("array size exceeds the maximum allowed")]
    TooLarge,
    #[error("invalid element length {0}")]
    ElementLength(i32),
    #[error("element of type oid {oid} has {len} bytes")]
    ElementSize { oid: u32, len: usize },
    #[error("trailing bytes after the last element")]
    Trailing,
    #[error("truncated")]
    Truncated,
}

/// `HASH_PARTITION_SEED` (Postgres `partition.h`): the seed every
/// `PARTITION BY HASH` key hash uses.
pub const PARTITION_SEED: u64 = 0x7A5B_2236_7996_DCFD;

/// What `hash_combine64(0, h)` adds to `h` (Postgres `hashfn.h`).
const HASH_COMBINE64: u64 = 0x49a0_f4dd_15e5_a8e3;

/// How much of a bad value an error message repeats.
const SHOWN_CHARS: usize = 64;

// ---------------------------------------------------------------------------
// Keys from text and binary values

/// A key from its text form (a literal, a text-format parameter).
pub fn parse_text(data_type: DataType, text: &str) -> Result<Key, KeyError> {
    match data_type {
        DataType::BigInt | DataType::Integer | DataType::SmallInt => {
            parse_int(data_type, text).map(Key::Int)
        }
        DataType::Text | DataType::Varchar => {
            if text.contains('\0') {
                return Err(no_nul(data_type));
            }
            Ok(Key::Text(text.to_owned()))
        }
        DataType::Uuid => parse_uuid(text).map(Key::Uuid),
    }
}

/// A key from a binary-format parameter.
pub fn decode_binary(data_type: DataType, bytes: &[u8]) -> Result<Key, KeyError> {
    match data_type {
        DataType::BigInt | DataType::Integer | DataType::SmallInt => {
            // The parameter's own type may be narrower or wider than the
            // column's (an int4 parameter compared with a bigint column).
            let value = match *bytes {
                [a, b] => i64::from(i16::from_be_bytes([a, b])),
                [a, b, c, d] => i64::from(i32::from_be_bytes([a, b, c, d])),
                [a, b, c, d, e, f, g, h] => i64::from_be_bytes([a, b, c, d, e, f, g, h]),
                _ => {
                    return Err(KeyError::BinaryIntLength {
                        type_name: sql_name(data_type),
                        len: bytes.len(),
                    })
                }
            };
            if !in_range(data_type, i128::from(value)) {
                return Err(out_of_range(data_type, &value.to_string()));
            }
            Ok(Key::Int(value))
        }
        DataType::Text | DataType::Varchar => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| KeyError::BinaryNotUtf8(sql_name(data_type)))?;
            parse_text(data_type, text)
        }
        DataType::Uuid => <[u8; 16]>::try_from(bytes)
            .map(Key::Uuid)
            .map_err(|_| KeyError::BinaryUuidLength(bytes.len())),
    }
}

/// Postgres's name for the type, as its error messages spell it.
fn sql_name(data_type: DataType) -> &'static str {
    match data_type {
        DataType::BigInt => "bigint",
        DataType::Integer => "integer",
        DataType::SmallInt => "smallint",
        DataType::Text => "text",
        DataType::Varchar => "character varying",
        DataType::Uuid => "uuid",
    }
}

/// The start of `text`, quoted, for error messages.
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("\"{}...\"", &text[..cut]),
        None => format!("\"{text}\""),
    }
}

fn invalid_syntax(data_type: DataType, text: &str) -> KeyError {
    KeyError::Syntax {
        type_name: sql_name(data_type),
        text: shown(text),
    }
}

fn no_nul(data_type: DataType) -> KeyError {
    KeyError::Nul(sql_name(data_type))
}

/// Whitespace as C's `isspace` in the "C" locale, which Postgres's integer and
/// array input functions skip.
fn is_pg_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// An integer as `int2in`/`int4in`/`int8in` read it (Postgres 15): optional
/// whitespace, an optional sign, decimal digits, optional whitespace.
/// An integer key written as plain digits (what drivers send), read without
/// UTF-8 validation or trimming: `None` for other types and other spellings,
/// which [`parse_text`] reads. Always inlined: it is the prepared path's
/// key read, and left to LLVM it became a call of its own (67 of a
/// prepared `point_select`'s 535 instructions, `bench/route_instructions.sh`).
#[inline(always)]
pub fn plain_int(data_type: DataType, bytes: &[u8]) -> Option<Result<Key, KeyError>> {
    let integer = matches!(
        data_type,
        DataType::BigInt | DataType::Integer | DataType::SmallInt
    );
    // Up to 18 digits cannot overflow an i64.
    if !integer || !(1..=18).contains(&bytes.len()) {
        return None;
    }
    // Checked and summed in one pass.
    let mut value = 0i64;
    for &byte in bytes {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value * 10 + i64::from(digit);
    }
    Some(if in_range(data_type, i128::from(value)) {
        Ok(Key::Int(value))
    } else {
        Err(plain_out_of_range(data_type, bytes))
    })
}

/// [`plain_int`]'s rare error, out of its inlined body.
#[cold]
fn plain_out_of_range(data_type: DataType, bytes: &[u8]) -> KeyError {
    // Digits only: the bytes are ASCII.
    out_of_range(data_type, &String::from_utf8_lossy(bytes))
}

fn parse_int(data_type: DataType, text: &str) -> Result<i64, KeyError> {
    let bytes = text.as_bytes();
    let start = bytes
        .iter()
        .position(|&b| !is_pg_space(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| !is_pg_space(b))
        .map_or(start, |last| last + 1);
    let trimmed = bytes.get(start..end).unwrap_or_default();
    let (negative, digits) = match trimmed {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, trimmed),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid_syntax(data_type, text));
    }
    let mut magnitude: u64 = 0;
    for digit in digits {
        magnitude = magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(digit - b'0')))
            .ok_or_else(|| out_of_range(data_type, text))?;
    }
    let value = if negative {
        -i128::from(magnitude)
    } else {
        i128::from(magnitude)
    };
    if !in_range(data_type, value) {
        return Err(out_of_range(data_type, text));
    }
    i64::try_from(value).map_err(|_| out_of_range(data_type, text))
}

/// Whether `value` fits the integer column type.
fn in_range(data_type: DataType, value: i128) -> bool {
    let (min, max) = match data_type {
        DataType::SmallInt => (i128::from(i16::MIN), i128::from(i16::MAX)),
        DataType::Integer => (i128::from(i32::MIN), i128::from(i32::MAX)),
        _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
    };
    (min..=max).contains(&value)
}

fn out_of_range(data_type: DataType, text: &str) -> KeyError {
    KeyError::OutOfRange {
        type_name: sql_name(data_type),
        text: shown(text),
    }
}

/// A uuid as `uuid_in` reads it: 32 hex digits in either case, a hyphen
/// allowed (not required) after any group of four, optionally in braces.
fn parse_uuid(text: &str) -> Result<[u8; 16], KeyError> {
    let bad = || invalid_syntax(DataType::Uuid, text);
    let bytes = text.as_bytes();
    let braces = bytes.first() == Some(&b'{');
    let mut pos = usize::from(braces);
    let mut uuid = [0u8; 16];
    for (i, byte) in uuid.iter_mut().enumerate() {
        let high = bytes.get(pos).and_then(|&b| hex_value(b)).ok_or_else(bad)?;
        let low = bytes
            .get(pos + 1)
            .and_then(|&b| hex_value(b))
            .ok_or_else(bad)?;
        *byte = (high << 4) | low;
        pos += 2;
        if i % 2 == 1 && i < 15 && bytes.get(pos) == Some(&b'-') {
            pos += 1;
        }
    }
    if braces {
        if bytes.get(pos) != Some(&b'}') {
            return Err(bad());
        }
        pos += 1;
    }
    if pos != bytes.len() {
        return Err(bad());
    }
    Ok(uuid)
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// Hashes

/// The `postgres` hash of a key, after `hash_combine64(0, h)`: what
/// `PARTITION BY HASH` takes modulo the partition count.
#[inline]
pub fn postgres_hash(key: &Key) -> u64 {
    let hash = match key {
        // hashint2extended/hashint4extended/hashint8extended agree on every
        // value all three can hold.
        Key::Int(value) => hash_bytes_uint32_extended(fold_int8(*value), PARTITION_SEED),
        // hashtextextended (deterministic collations) and uuid_hash_extended.
        Key::Text(text) => hash_bytes_extended(text.as_bytes(), PARTITION_SEED),
        Key::Uuid(bytes) => hash_bytes_extended(bytes, PARTITION_SEED),
    };
    hash.wrapping_add(HASH_COMBINE64)
}

/// The `citus` hash of a key: `hashint8` / `hashtext` / `uuid_hash`.
pub fn citus_hash(key: &Key) -> i32 {
    let hash = match key {
        Key::Int(value) => hash_bytes_uint32(fold_int8(*value)),
        Key::Text(text) => hash_bytes(text.as_bytes()),
        Key::Uuid(bytes) => hash_bytes(bytes),
    };
    // A Datum holding the uint32, read back as int4 by Postgres.
    hash as i32
}

/// `hashint8`'s fold of a 64-bit value into 32 bits, chosen so that values in
/// the int32 range hash as `hashint4` hashes them.
fn fold_int8(value: i64) -> u32 {
    let low = value as u32;
    let high = (value >> 32) as u32;
    if value >= 0 {
        low ^ high
    } else {
        low ^ !high
    }
}

/// The index of the Citus shard whose hash range holds `hash`, with the
/// int32 space cut into `shard_count` equal ranges (the last one takes the
/// remainder up to `INT32_MAX`).
fn citus_range_index(hash: i32, shard_count: usize) -> Option<usize> {
    let count = u64::try_from(shard_count).ok().filter(|&n| n > 0)?;
    let increment = (1u64 << 32) / count;
    if increment == 0 {
        return None;
    }
    let offset = u64::try_from(i64::from(hash) - i64::from(i32::MIN)).ok()?;
    let index = (offset / increment).min(count - 1);
    usize::try_from(index).ok()
}

/// The logical shard holding `key`, or `None` when a list/range mapping has
/// no entry for it.
#[inline]
pub fn logical_shard(keys: &KeySpace, key: &Key) -> Option<usize> {
    match &keys.function {
        ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count,
        } => {
            let count = u64::try_from(*shard_count).ok().filter(|&n| n > 0)?;
            let hash = postgres_hash(key);
            // A 64-bit division is the slowest step of routing a cached
            // statement; shard counts are mostly powers of two.
            let index = if count.is_power_of_two() {
                hash & (count - 1)
            } else {
                hash % count
            };
            usize::try_from(index).ok()
        }
        ShardFunction::Hash {
            hasher: Hasher::Citus,
            shard_count,
        } => citus_range_index(citus_hash(key), *shard_count),
        ShardFunction::List(entries) => entries
            .iter()
            .find(|(value, _)| value == key)
            .map(|(_, shard)| *shard),
        ShardFunction::Range(entries) => entries
            .iter()
            .find(|(start, end, _)| {
                start.as_ref().is_none_or(|start| start <= key)
                    && end.as_ref().is_none_or(|end| key < end)
            })
            .map(|(_, _, shard)| *shard),
    }
}

/// The database holding `key`: its logical shard through the placement.
#[inline]
pub fn database(keys: &KeySpace, key: &Key) -> Option<usize> {
    logical_shard(keys, key).and_then(|s| keys.placement.get(s).copied())
}

/// Whether `key`'s logical shard is moving to another database
/// ([`crate::sharding::Moving`]); `false` at once when nothing moves.
#[inline]
pub fn moving(keys: &KeySpace, key: &Key) -> bool {
    match &keys.moving {
        None => false,
        Some(moving) => logical_shard(keys, key).is_some_and(|s| moving.holds(s)),
    }
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
