//! The SQL predicate that is true exactly for the rows of some logical
//! shards of a key space: `WHERE` of a shard move's snapshot COPY, the row
//! filter of its publication, the `WHEN` of a fence trigger.
//!
//! It uses only built-in immutable functions and operators (what a PG15
//! publication row filter allows), and computes the key's logical shard as
//! [`super::logical_shard`] does, bit for bit (`integration/tests/hashing.rs`
//! proves it on a live Postgres):
//! - `postgres`: the type's seeded 64-bit hash (`hashint8extended` over the
//!   key as int8, which agrees with `hashint2extended`/`hashint4extended`;
//!   `hashtextextended`; `uuid_hash_extended`), plus `hash_combine64`'s
//!   constant modulo 2^64 (in `numeric`: int8 arithmetic would overflow),
//!   modulo `shard_count`. A power-of-two `shard_count` needs only the low
//!   bits, which int8 `&` keeps: no `numeric`.
//! - `citus`: the 32-bit `hashint8`/`hashtext`/`uuid_hash` within the
//!   shards' ranges of the int32 space (cut into `shard_count` equal ones).
//!
//! Text keys are hashed under `COLLATE "C"`, so a column with a
//! nondeterministic collation still hashes its bytes, as pgshard does.
//!
//! A NULL key is in no logical shard: the predicate is NULL, which `WHERE`,
//! row filters and trigger `WHEN`s treat as false. List and range mappings
//! have no predicate yet (a refusal, not a guess).

use crate::sharding::{DataType, Hasher, KeySpace, ShardFunction};

use super::{HASH_COMBINE64, PARTITION_SEED};

/// Why there is no predicate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PredicateError {
    #[error("the logical shards of a list or range mapping cannot be selected by a predicate yet")]
    Mapping,
    #[error("no logical shard to select")]
    NoShards,
    #[error("logical shard {shard} does not exist: shard_count is {shard_count}")]
    NoSuchShard { shard: usize, shard_count: usize },
}

/// `2^64`, the modulus of the wrapping addition in `hash_combine64`.
const TWO_TO_64: u128 = 1 << 64;

/// The predicate over `column_sql` (an SQL expression of the key column's
/// type, already quoted: `"tenant_id"`, `NEW."tenant_id"`) that is true for
/// keys in one of `shards`.
pub fn predicate(
    keys: &KeySpace,
    column_sql: &str,
    shards: &[usize],
) -> Result<String, PredicateError> {
    let ShardFunction::Hash {
        hasher,
        shard_count,
    } = keys.function
    else {
        return Err(PredicateError::Mapping);
    };
    let mut shards = shards.to_vec();
    shards.sort_unstable();
    shards.dedup();
    if let Some(&shard) = shards.iter().find(|&&s| s >= shard_count) {
        return Err(PredicateError::NoSuchShard { shard, shard_count });
    }
    if shards.is_empty() {
        return Err(PredicateError::NoShards);
    }
    Ok(match hasher {
        Hasher::Postgres => {
            let list: Vec<String> = shards.iter().map(usize::to_string).collect();
            let index = postgres_index(keys.data_type, column_sql, shard_count);
            format!("({index}) IN ({})", list.join(", "))
        }
        Hasher::Citus => citus_ranges(keys.data_type, column_sql, shard_count, &shards),
    })
}

/// The key as the argument its hash functions take.
fn argument(data_type: DataType, column_sql: &str) -> String {
    match data_type {
        DataType::BigInt | DataType::Integer | DataType::SmallInt => {
            format!("({column_sql})::int8")
        }
        DataType::Text | DataType::Varchar => format!("({column_sql})::text COLLATE \"C\""),
        DataType::Uuid => format!("({column_sql})::uuid"),
    }
}

/// The `postgres` hasher's logical shard of the key, in SQL.
fn postgres_index(data_type: DataType, column_sql: &str, shard_count: usize) -> String {
    let function = match data_type {
        DataType::BigInt | DataType::Integer | DataType::SmallInt => "hashint8extended",
        DataType::Text | DataType::Varchar => "hashtextextended",
        DataType::Uuid => "uuid_hash_extended",
    };
    // The seed is below 2^63: an int8 literal.
    let hash = format!(
        "{function}({}, {})",
        argument(data_type, column_sql),
        PARTITION_SEED
    );
    let count = shard_count as u64;
    if count.is_power_of_two() {
        // Modulo 2^k, the wrap at 2^64 and the sign do not matter: the low
        // k bits of the sum are those of the low bits' sum.
        let mask = count - 1;
        return format!("(({hash} & {mask}) + {}) & {mask}", HASH_COMBINE64 & mask);
    }
    // The int8 hash read as unsigned (+ 2^64 when negative) plus the
    // constant, modulo 2^64: adding 2^64 to both cases keeps it positive.
    format!(
        "(({hash})::numeric + {}) % {TWO_TO_64} % {shard_count}",
        TWO_TO_64 + u128::from(HASH_COMBINE64)
    )
}

/// The `citus` hasher's hash of the key within the ranges of `shards`
/// (sorted), in SQL: one `BETWEEN` per run of consecutive shards. Ranges,
/// not an index computed with `LEAST`, which ignores a NULL argument and
/// would put NULL keys in the last shard.
fn citus_ranges(
    data_type: DataType,
    column_sql: &str,
    shard_count: usize,
    shards: &[usize],
) -> String {
    let function = match data_type {
        DataType::BigInt | DataType::Integer | DataType::SmallInt => "hashint8",
        DataType::Text | DataType::Varchar => "hashtext",
        DataType::Uuid => "uuid_hash",
    };
    let hash = format!("{function}({})", argument(data_type, column_sql));
    // `super::citus_range_index`: shard `i` holds `INT32_MIN + i * inc` up
    // to the next one's start, the last one up to `INT32_MAX`.
    // shard_count is at most MAX_SHARD_COUNT, so `inc` is at least 1.
    let increment = (1i64 << 32) / (shard_count as i64).max(1);
    let start = |shard: usize| i64::from(i32::MIN) + shard as i64 * increment;
    let end = |shard: usize| {
        if shard + 1 < shard_count {
            start(shard + 1) - 1
        } else {
            i64::from(i32::MAX)
        }
    };
    let mut ranges: Vec<String> = Vec::new();
    let mut runs = shards.iter().copied().peekable();
    while let Some(first) = runs.next() {
        let mut last = first;
        while runs.next_if_eq(&(last + 1)).is_some() {
            last += 1;
        }
        ranges.push(format!("{hash} BETWEEN {} AND {}", start(first), end(last)));
    }
    match ranges.as_slice() {
        [one] => one.clone(),
        _ => format!("({})", ranges.join(" OR ")),
    }
}

#[cfg(test)]
mod tests;
