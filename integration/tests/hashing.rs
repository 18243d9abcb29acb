//! Our key parsing and hashing against a live Postgres: random int2, int4,
//! int8, text, varchar and uuid keys, each checked against the partition
//! `PARTITION BY HASH` puts it in, `satisfies_hash_partition`, the extended
//! hash functions, Citus's `hashint*`/`hashtext`/`uuid_hash` with its range
//! formula, and the text and binary forms of arrays holding the keys; and
//! `hash::predicate`'s SQL, evaluated by Postgres, against `logical_shard`
//! (DESIGN.md §2's test vectors and random keys of every type).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use integration::PgServer;
use router::hash::{
    citus_hash, decode_binary_array, logical_shard, parse_text, parse_text_array, postgres_hash,
    predicate, PARTITION_SEED,
};
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};
use tokio_postgres::Client;

/// Random keys per type.
const KEYS: usize = 10_000;
/// `PARTITION BY HASH` moduli checked for every type.
const MODULI: [usize; 3] = [3, 5, 8];
/// Citus shard counts checked for every type (32 is Citus's default).
const CITUS_SHARDS: [i64; 3] = [32, 7, 1];
/// What `hash_combine64(0, h)` adds.
const HASH_COMBINE64: u64 = 0x49a0_f4dd_15e5_a8e3;

/// xorshift64*: tiny, seeded, good enough to spread keys.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// One column type under test: the keys' text forms as sent to Postgres, and
/// the keys we read from the same text.
struct KeySet {
    sql_type: &'static str,
    data_type: DataType,
    texts: Vec<String>,
    keys: Vec<Key>,
}

impl KeySet {
    fn new(sql_type: &'static str, data_type: DataType, texts: Vec<String>) -> KeySet {
        let keys = texts
            .iter()
            .map(|text| parse_text(data_type, text).unwrap_or_else(|err| panic!("{text:?}: {err}")))
            .collect();
        KeySet {
            sql_type,
            data_type,
            texts,
            keys,
        }
    }

    /// The keys as a SQL array of the column type, from parameter `$1`:
    /// Postgres reads each element with the type's own input function.
    fn param(&self) -> String {
        format!("$1::text[]::{}[]", self.sql_type)
    }
}

/// Integers spread over the type's whole range, small values and the
/// extremes, written as Postgres's input accepts them (spaces, signs,
/// leading zeros).
fn int_texts(rng: &mut Rng, min: i64, max: i64) -> Vec<String> {
    let span = (max as i128 - min as i128 + 1) as u128;
    let mut values = vec![min, max, 0, -1, 1, min + 1, max - 1];
    while values.len() < KEYS {
        let value = match rng.below(4) {
            0 => rng.below(2001) as i64 - 1000,
            1 => *rng.pick(&[min, max, min + 1, max - 1, i32::MAX.into(), i32::MIN.into()]),
            _ => (min as i128 + (rng.next() as u128 % span) as i128) as i64,
        };
        values.push(value.clamp(min, max));
    }
    values
        .into_iter()
        .map(|value| match rng.below(6) {
            0 => format!("  {value}\t"),
            1 if value >= 0 => format!("+{value}"),
            2 if value >= 0 => format!("000{value}"),
            _ => value.to_string(),
        })
        .collect()
}

/// Strings of 0 to 60 characters (1 in 10 empty, a few of ~1000 bytes) over
/// ASCII, array syntax characters and 2-, 3- and 4-byte UTF-8 characters.
fn text_texts(rng: &mut Rng) -> Vec<String> {
    const POOL: &[&str] = &[
        "a", "b", "z", "A", "Q", "0", "7", " ", "\t", "\n", "\"", "\\", ",", "{", "}", "'", "NULL",
        "é", "ß", "ü", "ё", "中", "文", "😀", "🦀", "ℝ", "\u{7f}", "\u{a0}",
    ];
    let mut texts = vec![String::new(), "NULL".to_owned(), " ".to_owned()];
    while texts.len() < KEYS {
        let len = match rng.below(100) {
            0..=9 => 0,
            10..=11 => 300 + rng.below(50),
            _ => rng.below(61),
        };
        texts.push((0..len).map(|_| *rng.pick(POOL)).collect());
    }
    texts
}

/// Random uuids in every form `uuid_in` accepts.
fn uuid_texts(rng: &mut Rng) -> Vec<String> {
    (0..KEYS)
        .map(|_| {
            let hex: String = (0..2)
                .map(|_| format!("{:016x}", rng.next()))
                .collect::<String>();
            let dashed = |groups: &[usize]| {
                let mut out = String::new();
                let mut at = 0;
                for (i, len) in groups.iter().enumerate() {
                    if i > 0 {
                        out.push('-');
                    }
                    out.push_str(&hex[at..at + len]);
                    at += len;
                }
                out
            };
            let standard = dashed(&[8, 4, 4, 4, 12]);
            match rng.below(6) {
                0 => standard.to_uppercase(),
                1 => format!("{{{standard}}}"),
                2 => hex.clone(),
                3 => dashed(&[4; 8]),
                4 => format!("{{{}}}", dashed(&[8, 8, 8, 8]).to_uppercase()),
                _ => standard,
            }
        })
        .collect()
}

async fn connect(server: &PgServer) -> Client {
    let conninfo = server.conninfo("postgres", None, "postgres");
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Our 64-bit hash before `hash_combine64`, as the `*extended` SQL functions
/// return it.
fn seeded_hash(key: &Key) -> i64 {
    postgres_hash(key).wrapping_sub(HASH_COMBINE64) as i64
}

/// `PARTITION BY HASH (k)` with `modulus` partitions: every key lands in the
/// partition our `postgres` hasher names, and `satisfies_hash_partition`
/// agrees with our remainders.
async fn check_partitions(client: &Client, set: &KeySet, modulus: usize) {
    let parent = format!("p_{}_{modulus}", set.sql_type);
    let mut ddl = format!(
        "CREATE TABLE {parent} (i int8, k {}) PARTITION BY HASH (k);",
        set.sql_type
    );
    for r in 0..modulus {
        ddl.push_str(&format!(
            "CREATE TABLE {parent}_{r} PARTITION OF {parent} \
             FOR VALUES WITH (MODULUS {modulus}, REMAINDER {r});"
        ));
    }
    client.batch_execute(&ddl).await.unwrap();
    client
        .execute(
            &format!(
                "INSERT INTO {parent} SELECT i, k FROM unnest({}) WITH ORDINALITY AS u(k, i)",
                set.param()
            ),
            &[&set.texts],
        )
        .await
        .unwrap();
    let keys = KeySpace {
        data_type: set.data_type,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: modulus,
        },
        placement: (0..modulus).collect(),
        moving: None,
    };
    let ours: Vec<i32> = set
        .keys
        .iter()
        .map(|key| logical_shard(&keys, key).unwrap() as i32)
        .collect();
    let rows = client
        .query(
            &format!("SELECT i, tableoid::regclass::text FROM {parent}"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), set.keys.len());
    for row in rows {
        let index = row.get::<_, i64>(0) as usize - 1;
        let partition: String = row.get(1);
        let remainder: i32 = partition.rsplit('_').next().unwrap().parse().unwrap();
        assert_eq!(
            ours[index], remainder,
            "{} key {:?} modulus {modulus}",
            set.sql_type, set.texts[index]
        );
    }
    let agreed: bool = client
        .query_one(
            &format!(
                "SELECT bool_and(satisfies_hash_partition('{parent}'::regclass, {modulus}, r, k)) \
                 FROM unnest({}, $2::int4[]) AS u(k, r)",
                set.param()
            ),
            &[&set.texts, &ours],
        )
        .await
        .unwrap()
        .get(0);
    assert!(agreed, "{} modulus {modulus}", set.sql_type);
}

/// The full 64-bit seeded hash (`hashint8extended`, `hashtextextended`,
/// `uuid_hash_extended`...) of every key.
async fn check_extended_hash(client: &Client, set: &KeySet, function: &str) {
    let rows = client
        .query(
            &format!(
                "SELECT {function}(k, $2) FROM unnest({}) WITH ORDINALITY AS u(k, i) ORDER BY i",
                set.param()
            ),
            &[&set.texts, &(PARTITION_SEED as i64)],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), set.keys.len());
    for ((row, key), text) in rows.iter().zip(&set.keys).zip(&set.texts) {
        assert_eq!(
            row.get::<_, i64>(0),
            seeded_hash(key),
            "{function}({text:?})"
        );
    }
}

/// Citus: the 32-bit hash of every key and the shard index of the range
/// formula, computed in SQL, for several shard counts.
async fn check_citus(client: &Client, set: &KeySet, function: &str) {
    let indexes: Vec<String> = (0..CITUS_SHARDS.len())
        .map(|n| {
            let count = n + 2;
            format!(", least((h::int8 + 2147483648) / (4294967296 / ${count}), ${count} - 1)")
        })
        .collect();
    let sql = format!(
        "SELECT h{} FROM (SELECT i, {function}(k) AS h FROM unnest({}) WITH ORDINALITY AS u(k, i)) s \
         ORDER BY i",
        indexes.concat(),
        set.param()
    );
    let rows = client
        .query(
            &sql,
            &[
                &set.texts,
                &CITUS_SHARDS[0],
                &CITUS_SHARDS[1],
                &CITUS_SHARDS[2],
            ],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), set.keys.len());
    for ((row, key), text) in rows.iter().zip(&set.keys).zip(&set.texts) {
        assert_eq!(
            row.get::<_, i32>(0),
            citus_hash(key),
            "{function}({text:?})"
        );
        for (n, &shard_count) in CITUS_SHARDS.iter().enumerate() {
            let keys = KeySpace {
                data_type: set.data_type,
                function: ShardFunction::Hash {
                    hasher: Hasher::Citus,
                    shard_count: shard_count as usize,
                },
                placement: Vec::new(),
                moving: None,
            };
            assert_eq!(
                logical_shard(&keys, key).map(|s| s as i64),
                Some(row.get::<_, i64>(n + 1)),
                "{function}({text:?}) over {shard_count} shards"
            );
        }
    }
}

/// Postgres prints the keys as an array (text) and sends it (binary), with a
/// NULL in front; we read both back to the same keys.
async fn check_arrays(client: &Client, set: &KeySet) {
    let row = client
        .query_one(
            &format!(
                "SELECT a::text, array_send(a) FROM (SELECT array_prepend(NULL, {}) AS a) s",
                set.param()
            ),
            &[&set.texts],
        )
        .await
        .unwrap();
    let text: String = row.get(0);
    let binary: Vec<u8> = row.get(1);
    assert_eq!(
        parse_text_array(set.data_type, &text).unwrap(),
        set.keys,
        "{} array text",
        set.sql_type
    );
    assert_eq!(
        decode_binary_array(set.data_type, &binary).unwrap(),
        set.keys,
        "{} array binary",
        set.sql_type
    );
}

#[tokio::test]
async fn hashes_match_postgres() {
    let server = PgServer::start().unwrap();
    let client = connect(&server).await;
    let mut rng = Rng(0x5EED_F9A5_4A2D_0001);
    let ints = |rng: &mut Rng, min: i64, max: i64| int_texts(rng, min, max);
    let int2 = ints(&mut rng, i16::MIN.into(), i16::MAX.into());
    let int4 = ints(&mut rng, i32::MIN.into(), i32::MAX.into());
    let int8 = ints(&mut rng, i64::MIN, i64::MAX);
    let text = text_texts(&mut rng);
    let uuid = uuid_texts(&mut rng);
    // (keys, extended hash function, Citus hash function)
    let sets = [
        (
            KeySet::new("int2", DataType::SmallInt, int2),
            "hashint2extended",
            "hashint2",
        ),
        (
            KeySet::new("int4", DataType::Integer, int4),
            "hashint4extended",
            "hashint4",
        ),
        (
            KeySet::new("int8", DataType::BigInt, int8),
            "hashint8extended",
            "hashint8",
        ),
        (
            KeySet::new("text", DataType::Text, text.clone()),
            "hashtextextended",
            "hashtext",
        ),
        (
            KeySet::new("varchar", DataType::Varchar, text),
            "hashtextextended",
            "hashtext",
        ),
        (
            KeySet::new("uuid", DataType::Uuid, uuid),
            "uuid_hash_extended",
            "uuid_hash",
        ),
    ];
    for (set, extended, citus) in &sets {
        check_extended_hash(&client, set, extended).await;
        check_citus(&client, set, citus).await;
        for modulus in MODULI {
            check_partitions(&client, set, modulus).await;
        }
        check_arrays(&client, set).await;
        println!(
            "{}: {} keys agree with Postgres ({extended}, {citus} over {CITUS_SHARDS:?} shards, \
             PARTITION BY HASH with moduli {MODULI:?}, array text and binary forms)",
            set.sql_type,
            set.keys.len()
        );
    }
    // Citus's int hashes agree across types: an int8 key's hashint8 is the
    // hashint4/hashint2 of the same value in their range.
    let agree: bool = client
        .query_one(
            "SELECT bool_and(hashint8(v) = hashint4(v::int4) AND \
             (v NOT BETWEEN -32768 AND 32767 OR hashint8(v) = hashint2(v::int2))) \
             FROM unnest($1::int8[]) AS u(v)",
            &[&vec![
                0i64,
                -1,
                1,
                42,
                -32768,
                32767,
                i32::MIN.into(),
                i32::MAX.into(),
            ]],
        )
        .await
        .unwrap()
        .get(0);
    assert!(agree);
}

/// Shard counts whose predicates are checked (powers of two take int8
/// arithmetic, the others `numeric`).
const PREDICATE_COUNTS: [usize; 5] = [1, 3, 5, 12, 32];
/// Keys per type whose predicates are evaluated (each against every shard).
const PREDICATE_KEYS: usize = 2_000;

/// `hash::predicate` evaluated by Postgres: for every key and every logical
/// shard `s`, the predicate for `[s]` is true exactly when `logical_shard`
/// names `s`, and the predicate for all even shards exactly when it names
/// an even one.
async fn check_predicates(client: &Client, set: &KeySet, hasher: Hasher, count: usize) {
    let keys = KeySpace {
        data_type: set.data_type,
        function: ShardFunction::Hash {
            hasher,
            shard_count: count,
        },
        placement: vec![0; count],
        moving: None,
    };
    let even: Vec<usize> = (0..count).step_by(2).collect();
    let mut columns: Vec<String> = (0..count)
        .map(|s| predicate(&keys, "k", &[s]).unwrap())
        .collect();
    columns.push(predicate(&keys, "k", &even).unwrap());
    let sql = format!(
        "SELECT ARRAY[{}] FROM unnest({}) WITH ORDINALITY AS u(k, i) ORDER BY i",
        columns.join(", "),
        set.param()
    );
    let texts = &set.texts[..PREDICATE_KEYS];
    let rows = client.query(&sql, &[&texts]).await.unwrap();
    assert_eq!(rows.len(), texts.len());
    for ((row, key), text) in rows.iter().zip(&set.keys).zip(texts) {
        let selected: Vec<bool> = row.get(0);
        let ours = logical_shard(&keys, key).unwrap();
        let mut expected = vec![false; count];
        expected[ours] = true;
        expected.push(ours.is_multiple_of(2));
        assert_eq!(
            selected, expected,
            "{} {hasher:?}/{count} key {text:?}: ours is {ours}",
            set.sql_type
        );
    }
    // NULL is in no logical shard: the predicate is NULL (false in a WHERE).
    let null = predicate(&keys, &format!("NULL::{}", set.sql_type), &[0]).unwrap();
    let value: Option<bool> = client
        .query_one(&format!("SELECT {null}"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(value, None, "{} {hasher:?}/{count}", set.sql_type);
    // Postgres accepts it as a publication's row filter (built-in,
    // immutable functions only).
    let table = format!("rf_{}", set.sql_type);
    client
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {table} (k {}); \
             CREATE PUBLICATION {table}_{hasher:?}_{count} FOR TABLE {table} WHERE ({});",
            set.sql_type,
            predicate(&keys, "\"k\"", &even).unwrap()
        ))
        .await
        .unwrap_or_else(|err| panic!("{table} {hasher:?}/{count}: {err}"));
}

/// DESIGN.md §2's test vectors, through the predicates: (key literal,
/// postgres shard of 3, of 5, citus shard of 32).
const DESIGN_VECTORS: [(&str, DataType, usize, usize, usize); 7] = [
    ("0::int8", DataType::BigInt, 2, 3, 13),
    ("1::int8", DataType::BigInt, 2, 0, 1),
    ("(-1)::int8", DataType::BigInt, 2, 4, 18),
    ("42::int8", DataType::BigInt, 0, 4, 27),
    ("9223372036854775807::int8", DataType::BigInt, 0, 1, 4),
    ("'foo'::text", DataType::Text, 2, 1, 30),
    ("''::text", DataType::Text, 2, 1, 4),
];

async fn check_design_vectors(client: &Client) {
    for (literal, data_type, mod3, mod5, citus32) in DESIGN_VECTORS {
        for (hasher, count, shard) in [
            (Hasher::Postgres, 3, mod3),
            (Hasher::Postgres, 5, mod5),
            (Hasher::Citus, 32, citus32),
        ] {
            let keys = KeySpace {
                data_type,
                function: ShardFunction::Hash {
                    hasher,
                    shard_count: count,
                },
                placement: vec![0; count],
                moving: None,
            };
            let others: Vec<usize> = (0..count).filter(|&s| s != shard).collect();
            let sql = format!(
                "SELECT {}, {}",
                predicate(&keys, literal, &[shard]).unwrap(),
                predicate(&keys, literal, &others).unwrap()
            );
            let row = client.query_one(&sql, &[]).await.unwrap();
            assert_eq!(
                (row.get::<_, bool>(0), row.get::<_, bool>(1)),
                (true, false),
                "{literal} {hasher:?}/{count} should be in shard {shard}"
            );
        }
    }
}

#[tokio::test]
async fn predicates_select_what_logical_shard_names() {
    let server = PgServer::start().unwrap();
    let client = connect(&server).await;
    check_design_vectors(&client).await;
    let mut rng = Rng(0x5EED_F9A5_4A2D_0033);
    let sets = [
        KeySet::new(
            "int2",
            DataType::SmallInt,
            int_texts(&mut rng, i16::MIN.into(), i16::MAX.into()),
        ),
        KeySet::new(
            "int4",
            DataType::Integer,
            int_texts(&mut rng, i32::MIN.into(), i32::MAX.into()),
        ),
        KeySet::new(
            "int8",
            DataType::BigInt,
            int_texts(&mut rng, i64::MIN, i64::MAX),
        ),
        KeySet::new("text", DataType::Text, text_texts(&mut rng)),
        KeySet::new("varchar", DataType::Varchar, text_texts(&mut rng)),
        KeySet::new("uuid", DataType::Uuid, uuid_texts(&mut rng)),
    ];
    for set in &sets {
        for hasher in [Hasher::Postgres, Hasher::Citus] {
            for count in PREDICATE_COUNTS {
                check_predicates(&client, set, hasher, count).await;
            }
        }
        println!(
            "{}: the predicates of {PREDICATE_KEYS} keys agree with logical_shard \
             (postgres and citus, shard counts {PREDICATE_COUNTS:?}), NULL selects none, \
             and each is accepted as a publication row filter",
            set.sql_type
        );
    }
}
