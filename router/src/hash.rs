//! Sharding keys: typed from text or binary values, hashed exactly as
//! Postgres (`PARTITION BY HASH`) or Citus do, and mapped to databases.
//! (in progress: API fixed, bodies being written)

use crate::sharding::{DataType, Key, KeySpace};

/// Why a value is not a key of the column's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("{0}")]
    Invalid(String),
}

/// A key from its text form (a literal, a text-format parameter).
pub fn parse_text(data_type: DataType, _text: &str) -> Result<Key, KeyError> {
    Err(KeyError::Invalid(format!("{data_type:?}: not built yet")))
}

/// A key from a binary-format parameter.
pub fn decode_binary(data_type: DataType, _bytes: &[u8]) -> Result<Key, KeyError> {
    Err(KeyError::Invalid(format!("{data_type:?}: not built yet")))
}

/// Keys from an array's text form (`{1,2,3}`); NULL elements are skipped.
pub fn parse_text_array(data_type: DataType, _text: &str) -> Result<Vec<Key>, KeyError> {
    Err(KeyError::Invalid(format!("{data_type:?}: not built yet")))
}

/// Keys from an array's binary form; NULL elements are skipped.
pub fn decode_binary_array(data_type: DataType, _bytes: &[u8]) -> Result<Vec<Key>, KeyError> {
    Err(KeyError::Invalid(format!("{data_type:?}: not built yet")))
}

/// The `postgres` hash of a key, after `hash_combine64(0, h)`.
pub fn postgres_hash(_key: &Key) -> u64 {
    0
}

/// The `citus` hash of a key: `hashint8` / `hashtext` / `uuid_hash`.
pub fn citus_hash(_key: &Key) -> i32 {
    0
}

/// The logical shard holding `key`, or `None` when a list/range mapping has
/// no entry for it.
pub fn logical_shard(_keys: &KeySpace, _key: &Key) -> Option<usize> {
    None
}

/// The database holding `key`: its logical shard through the placement.
pub fn database(keys: &KeySpace, key: &Key) -> Option<usize> {
    logical_shard(keys, key).and_then(|s| keys.placement.get(s).copied())
}
