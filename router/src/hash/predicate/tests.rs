//! The predicates' SQL text, one line per case. That the text computes
//! what `logical_shard` computes is checked on a live Postgres by
//! `integration/tests/hashing.rs`.

use super::*;
use crate::sharding::Key;

fn keys(data_type: DataType, hasher: Hasher, shard_count: usize) -> KeySpace {
    KeySpace {
        data_type,
        function: ShardFunction::Hash {
            hasher,
            shard_count,
        },
        placement: vec![0; shard_count],
        moving: None,
    }
}

#[track_caller]
fn check(data_type: DataType, hasher: Hasher, n: usize, shards: &[usize], expected: &str) {
    let sql = predicate(&keys(data_type, hasher, n), "\"k\"", shards);
    assert_eq!(sql.as_deref(), Ok(expected));
}

#[track_caller]
fn refused(keys: &KeySpace, shards: &[usize], expected: PredicateError) {
    assert_eq!(predicate(keys, "\"k\"", shards), Err(expected));
}

#[test]
fn postgres_hasher() {
    use DataType::*;
    use Hasher::Postgres;
    let seed = "8816678312871386365";
    check(BigInt, Postgres, 12, &[3], &format!("(((hashint8extended((\"k\")::int8, {seed}))::numeric + 23752253665144318179) % 18446744073709551616 % 12) IN (3)"));
    check(Integer, Postgres, 5, &[4, 0, 4], &format!("(((hashint8extended((\"k\")::int8, {seed}))::numeric + 23752253665144318179) % 18446744073709551616 % 5) IN (0, 4)"));
    check(Text, Postgres, 3, &[2], &format!("(((hashtextextended((\"k\")::text COLLATE \"C\", {seed}))::numeric + 23752253665144318179) % 18446744073709551616 % 3) IN (2)"));
    check(Varchar, Postgres, 3, &[0, 1], &format!("(((hashtextextended((\"k\")::text COLLATE \"C\", {seed}))::numeric + 23752253665144318179) % 18446744073709551616 % 3) IN (0, 1)"));
    check(Uuid, Postgres, 7, &[6], &format!("(((uuid_hash_extended((\"k\")::uuid, {seed}))::numeric + 23752253665144318179) % 18446744073709551616 % 7) IN (6)"));
    // Powers of two keep to int8: 0x49a0f4dd15e5a8e3 & 31 = 3.
    check(
        SmallInt,
        Postgres,
        32,
        &[31],
        &format!("(((hashint8extended((\"k\")::int8, {seed}) & 31) + 3) & 31) IN (31)"),
    );
    check(
        BigInt,
        Postgres,
        1,
        &[0],
        &format!("(((hashint8extended((\"k\")::int8, {seed}) & 0) + 0) & 0) IN (0)"),
    );
}

#[test]
fn citus_hasher() {
    use DataType::*;
    use Hasher::Citus;
    check(
        BigInt,
        Citus,
        32,
        &[13],
        "hashint8((\"k\")::int8) BETWEEN -402653184 AND -268435457",
    );
    check(SmallInt, Citus, 12, &[11, 0], "(hashint8((\"k\")::int8) BETWEEN -2147483648 AND -1789569708 OR hashint8((\"k\")::int8) BETWEEN 1789569703 AND 2147483647)");
    // Consecutive shards are one range.
    check(
        BigInt,
        Citus,
        4,
        &[2, 1],
        "hashint8((\"k\")::int8) BETWEEN -1073741824 AND 1073741823",
    );
    check(
        Text,
        Citus,
        3,
        &[1],
        "hashtext((\"k\")::text COLLATE \"C\") BETWEEN -715827883 AND 715827881",
    );
    check(
        Uuid,
        Citus,
        1,
        &[0],
        "uuid_hash((\"k\")::uuid) BETWEEN -2147483648 AND 2147483647",
    );
}

#[test]
fn the_column_is_any_expression() {
    let sql = predicate(
        &keys(DataType::Integer, Hasher::Citus, 2),
        "NEW.\"Tenant\"\"s\"",
        &[1],
    );
    assert_eq!(
        sql.as_deref(),
        Ok("hashint8((NEW.\"Tenant\"\"s\")::int8) BETWEEN 0 AND 2147483647")
    );
}

#[test]
fn refusals() {
    let hashed = keys(DataType::BigInt, Hasher::Postgres, 4);
    refused(&hashed, &[], PredicateError::NoShards);
    refused(
        &hashed,
        &[1, 4],
        PredicateError::NoSuchShard {
            shard: 4,
            shard_count: 4,
        },
    );
    let list = KeySpace {
        function: ShardFunction::List(vec![(Key::Int(1), 0)]),
        ..hashed.clone()
    };
    refused(&list, &[0], PredicateError::Mapping);
    let range = KeySpace {
        function: ShardFunction::Range(vec![(None, None, 0)]),
        ..hashed
    };
    refused(&range, &[0], PredicateError::Mapping);
}
