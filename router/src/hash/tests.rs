//! Unit tests for key parsing, hashing and mappings. Golden values come from
//! DESIGN.md §2 and from PostgreSQL 15 (`hashint8`, `hashtextextended`,
//! `array_send`...); `integration/tests/hashing.rs` checks many more against
//! a live server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::sharding::{DataType::*, Hasher, Key, KeySpace, ShardFunction};

fn keys(function: ShardFunction) -> KeySpace {
    KeySpace {
        data_type: BigInt,
        function,
        placement: vec![0, 1, 0, 1, 2],
        moving: None,
    }
}

fn hashed(hasher: Hasher, shard_count: usize, key: &Key) -> usize {
    logical_shard(
        &keys(ShardFunction::Hash {
            hasher,
            shard_count,
        }),
        key,
    )
    .unwrap()
}

fn text(s: &str) -> Key {
    Key::Text(s.to_owned())
}

fn err(result: Result<impl std::fmt::Debug, KeyError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => error.to_string(),
    }
}

// --- hashes -----------------------------------------------------------------

#[test]
fn hash_design_vectors() {
    // (key, postgres mod 3, postgres mod 5, citus with 32 shards)
    let vectors = [
        (Key::Int(0), 2, 3, 13),
        (Key::Int(1), 2, 0, 1),
        (Key::Int(-1), 2, 4, 18),
        (Key::Int(42), 0, 4, 27),
        (Key::Int(i64::MAX), 0, 1, 4),
        (text("foo"), 2, 1, 30),
        (text(""), 2, 1, 4),
    ];
    for (key, mod3, mod5, citus32) in vectors {
        assert_eq!(hashed(Hasher::Postgres, 3, &key), mod3, "{key:?} mod 3");
        assert_eq!(hashed(Hasher::Postgres, 5, &key), mod5, "{key:?} mod 5");
        assert_eq!(hashed(Hasher::Citus, 32, &key), citus32, "{key:?} citus");
    }
}

#[test]
fn hash_citus_golden_values() {
    assert_eq!(citus_hash(&Key::Int(42)), 1_509_752_520);
    assert_eq!(citus_hash(&text("foo")), 1_955_559_433);
    // More from PostgreSQL 15: hashint8 folds the high half in, so values
    // outside int32 still differ; hashint4(-5) = hashint8(-5).
    let ints = [
        (0, -272_711_505),
        (-1, 385_747_274),
        (i64::MAX, -1_524_351_049),
        (i64::MIN, -96_758_253),
        (-5, 1_412_886_042),
        (-32768, 193_646_934),
        (1 << 32, -1_905_060_026),
    ];
    for (value, expected) in ints {
        assert_eq!(citus_hash(&Key::Int(value)), expected, "hashint8({value})");
    }
    let texts = [
        ("", -1_477_818_771),
        ("hello world!", 1_400_155_871),
        ("0123456789abcdefghijklmnopqrstuvwxyz", -933_383_701),
        ("ünïcødé 中文 😀", -2_072_166_515),
    ];
    for (value, expected) in texts {
        assert_eq!(citus_hash(&text(value)), expected, "hashtext({value:?})");
    }
    let uuid = parse_text(Uuid, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
    assert_eq!(citus_hash(&uuid), 1_154_666_245);
}

#[test]
fn hash_postgres_golden_values() {
    // hashint8extended(42, seed), then hash_combine64(0, h); the DESIGN.md
    // table-free check: (h + 2^64 + 5305509591434766563) % 2^64 % 5 = 4.
    let h42 = 7_363_975_540_656_877_951_u64;
    assert_eq!(
        postgres_hash(&Key::Int(42)),
        h42.wrapping_add(HASH_COMBINE64)
    );
    assert_eq!(postgres_hash(&Key::Int(42)) % 5, 4);
    let seeded = |value: &Key| postgres_hash(value).wrapping_sub(HASH_COMBINE64) as i64;
    assert_eq!(seeded(&Key::Int(-1)), -5_017_072_347_659_237_694);
    let texts = [
        ("foo", -2_078_475_414_626_967_447),
        ("", -5_700_645_584_453_517_373),
        ("hello world!", -1_886_269_529_411_655_687),
        (
            "0123456789abcdefghijklmnopqrstuvwxyz",
            -7_470_555_948_717_701_204,
        ),
        ("ünïcødé 中文 😀", 5_787_971_494_445_310_331),
    ];
    for (value, expected) in texts {
        assert_eq!(
            seeded(&text(value)),
            expected,
            "hashtextextended({value:?})"
        );
    }
    let uuid = parse_text(Uuid, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
    assert_eq!(seeded(&uuid), 424_513_190_990_560_493);
    // Unseeded and other seeds: hashint8extended(0, 0), (7, 1),
    // hashtextextended('abc', 0).
    assert_eq!(
        hash_bytes_uint32_extended(0, 0) as i64,
        4_154_612_158_245_552_303
    );
    assert_eq!(
        hash_bytes_uint32_extended(7, 1) as i64,
        -3_604_598_377_573_523_768
    );
    assert_eq!(
        hash_bytes_extended(b"abc", 0) as i64,
        -6_747_756_470_228_489_321
    );
}

#[test]
fn hash_uint32_variants_equal_hashing_the_bytes() {
    for value in [0u32, 1, 42, 0xdead_beef, u32::MAX] {
        assert_eq!(hash_bytes_uint32(value), hash_bytes(&value.to_le_bytes()));
        for seed in [0, 1, PARTITION_SEED] {
            assert_eq!(
                hash_bytes_uint32_extended(value, seed),
                hash_bytes_extended(&value.to_le_bytes(), seed)
            );
        }
    }
    // Unseeded extended hashes keep the 32-bit hash in their low half.
    for len in 0..40 {
        let key: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
        assert_eq!(hash_bytes_extended(&key, 0) as u32, hash_bytes(&key));
    }
}

#[test]
fn hash_int_types_agree_in_range() {
    // A smallint, integer and bigint key of the same value is one Key::Int:
    // parsed from any column type, it hashes the same.
    for value in ["-32768", "-1", "0", "7", "32767"] {
        let keys: Vec<Key> = [SmallInt, Integer, BigInt]
            .into_iter()
            .map(|t| parse_text(t, value).unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] == w[1]));
    }
}

#[test]
fn hash_citus_ranges() {
    assert_eq!(citus_range_index(i32::MIN, 32), Some(0));
    assert_eq!(citus_range_index(i32::MAX, 32), Some(31));
    assert_eq!(citus_range_index(-1, 2), Some(0));
    assert_eq!(citus_range_index(0, 2), Some(1));
    assert_eq!(citus_range_index(i32::MIN + 134_217_727, 32), Some(0));
    assert_eq!(citus_range_index(i32::MIN + 134_217_728, 32), Some(1));
    // 3 shards: inc = 1431655765; the last shard takes the leftover value.
    assert_eq!(citus_range_index(i32::MAX, 3), Some(2));
    assert_eq!(citus_range_index(i32::MAX - 1, 3), Some(2));
    assert_eq!(citus_range_index(5, 1), Some(0));
    assert_eq!(citus_range_index(5, 0), None);
    let none = keys(ShardFunction::Hash {
        hasher: Hasher::Postgres,
        shard_count: 0,
    });
    assert_eq!(logical_shard(&none, &Key::Int(1)), None);
}

// --- scalar keys ------------------------------------------------------------

#[test]
fn hash_parse_int_accepts_postgres_forms() {
    let ok = [
        (BigInt, "42", 42),
        (BigInt, "  42  ", 42),
        (BigInt, "\t-12\n", -12),
        (BigInt, "+7", 7),
        (BigInt, "-0", 0),
        (BigInt, "000000000000000000000000042", 42),
        (BigInt, "9223372036854775807", i64::MAX),
        (BigInt, "-9223372036854775808", i64::MIN),
        (Integer, "2147483647", i32::MAX.into()),
        (Integer, "-2147483648", i32::MIN.into()),
        (SmallInt, "32767", 32767),
        (SmallInt, " -32768", -32768),
    ];
    for (data_type, input, expected) in ok {
        assert_eq!(
            parse_text(data_type, input),
            Ok(Key::Int(expected)),
            "{input:?}"
        );
    }
}

#[test]
fn hash_parse_int_rejects_bad_input() {
    let out_of_range = [
        (BigInt, "9223372036854775808"),
        (BigInt, "-9223372036854775809"),
        (BigInt, "99999999999999999999999999999"),
        (Integer, "2147483648"),
        (Integer, "-2147483649"),
        (SmallInt, "32768"),
        (SmallInt, "-32769"),
    ];
    for (data_type, input) in out_of_range {
        let message = err(parse_text(data_type, input));
        assert!(message.contains("out of range for type"), "{message}");
    }
    for input in [
        "", " ", "-", "+", "1.0", "1e3", "0x10", "1 2", "- 1", "+-1", "abc", "1_000", "１",
    ] {
        let message = err(parse_text(BigInt, input));
        assert_eq!(
            message,
            format!("invalid input syntax for type bigint: \"{input}\"")
        );
    }
    assert!(err(parse_text(SmallInt, "x")).contains("type smallint"));
    assert!(err(parse_text(Integer, "x")).contains("type integer"));
    // Long values are cut in messages.
    let long = "7".repeat(500);
    assert!(err(parse_text(Integer, &long)).len() < 150);
}

#[test]
fn hash_decode_binary_ints() {
    assert_eq!(decode_binary(BigInt, &[0, 42]), Ok(Key::Int(42)));
    assert_eq!(decode_binary(BigInt, &[0xff, 0xff]), Ok(Key::Int(-1)));
    assert_eq!(
        decode_binary(SmallInt, &(-7i32).to_be_bytes()),
        Ok(Key::Int(-7))
    );
    assert_eq!(
        decode_binary(BigInt, &i64::MIN.to_be_bytes()),
        Ok(Key::Int(i64::MIN))
    );
    assert_eq!(
        decode_binary(Integer, &i64::from(i32::MAX).to_be_bytes()),
        Ok(Key::Int(i32::MAX.into()))
    );
    assert!(err(decode_binary(SmallInt, &70_000i64.to_be_bytes())).contains("out of range"));
    assert!(err(decode_binary(Integer, &i64::MAX.to_be_bytes())).contains("out of range"));
    for len in [0, 1, 3, 5, 16] {
        assert!(err(decode_binary(BigInt, &vec![0; len])).contains("2, 4 or 8 bytes"));
    }
}

#[test]
fn hash_text_keys() {
    assert_eq!(parse_text(Text, "héllo 中文"), Ok(text("héllo 中文")));
    assert_eq!(parse_text(Varchar, ""), Ok(text("")));
    assert_eq!(parse_text(Text, " 42 "), Ok(text(" 42 ")));
    assert_eq!(decode_binary(Varchar, "ß".as_bytes()), Ok(text("ß")));
    assert!(err(decode_binary(Text, &[0xff, 0xfe])).contains("UTF-8"));
    assert!(err(parse_text(Text, "a\0b")).contains("NUL"));
    assert!(err(decode_binary(Text, b"a\0b")).contains("NUL"));
}

#[test]
fn hash_uuid_forms() {
    let expected = Key::Uuid([
        0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a,
        0x11,
    ]);
    // Every form uuid_in documents, plus hyphens after any 4 digits.
    for input in [
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        "a0eebc999c0b4ef8bb6d6bb9bd380a11",
        "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
        "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        "{A0eeBC999c0b4ef8bb6d6bb9bd380a11}",
    ] {
        assert_eq!(parse_text(Uuid, input), Ok(expected.clone()), "{input}");
    }
    for input in [
        "",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
        "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
        " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 ",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380aé",
    ] {
        assert!(
            err(parse_text(Uuid, input)).starts_with("invalid input syntax for type uuid"),
            "{input}"
        );
    }
    let Key::Uuid(bytes) = expected.clone() else {
        unreachable!()
    };
    assert_eq!(decode_binary(Uuid, &bytes), Ok(expected));
    assert!(err(decode_binary(Uuid, &bytes[..15])).contains("16 bytes"));
}

// --- arrays -----------------------------------------------------------------

fn ints(values: &[i64]) -> Vec<Key> {
    values.iter().map(|&v| Key::Int(v)).collect()
}

fn texts(values: &[&str]) -> Vec<Key> {
    values.iter().map(|v| text(v)).collect()
}

#[test]
fn hash_text_arrays() {
    let cases = [
        ("{1,2,3}", ints(&[1, 2, 3])),
        (" { 1 , 2 , NULL , null, 3 } ", ints(&[1, 2, 3])),
        ("{}", vec![]),
        ("{ }", vec![]),
        ("{NULL}", vec![]),
        ("{{1,2},{3,4}}", ints(&[1, 2, 3, 4])),
        ("{{{1},{2}},{{3},{4}}}", ints(&[1, 2, 3, 4])),
        ("[1:2]={5,6}", ints(&[5, 6])),
        ("[2]={5,6}", ints(&[5, 6])),
        ("[0:1] [1:1] = {{5},{6}}", ints(&[5, 6])),
        ("{\"7\", -8 ,+9}", ints(&[7, -8, 9])),
    ];
    for (input, expected) in cases {
        assert_eq!(parse_text_array(BigInt, input), Ok(expected), "{input}");
    }
    // What Postgres 15 prints for
    // ARRAY['a,b','c"d','e\f','NULL',NULL,'  sp  ','x y','',' z ','é{}'].
    let printed = r#"{"a,b","c\"d","e\\f","NULL",NULL,"  sp  ","x y",""," z ","é{}"}"#;
    let expected = texts(&[
        "a,b", "c\"d", "e\\f", "NULL", "  sp  ", "x y", "", " z ", "é{}",
    ]);
    assert_eq!(parse_text_array(Text, printed), Ok(expected.clone()));
    // The same values written by hand with unquoted elements and escapes.
    let by_hand = r#"{"a,b",c\"d, e\\f ,"NULL",NULL,"  sp  ",  x y  ,"",\ z\ ,é\{\}}"#;
    assert_eq!(parse_text_array(Text, by_hand), Ok(expected));
    assert_eq!(
        parse_text_array(Text, "{\"\" , \"a\" }"),
        Ok(texts(&["", "a"]))
    );
    assert_eq!(
        parse_text_array(Varchar, "{中文,😀}"),
        Ok(texts(&["中文", "😀"]))
    );
    let uuids = parse_text_array(
        Uuid,
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,\"{A0EEBC999C0B4EF8BB6D6BB9BD380A11}\"}",
    )
    .unwrap();
    assert_eq!(uuids.len(), 2);
    assert_eq!(uuids[0], uuids[1]);
}

#[test]
fn hash_text_arrays_reject_what_postgres_rejects() {
    let malformed = [
        "",
        "1,2",
        " 1 ",
        "{1,2",
        "{1,,2}",
        "{,}",
        "{1,}",
        "{1}}",
        "{1} x",
        "{1 {2}}",
        "{{1},2}",
        "{1,{2}}",
        "{{1,2},{3}}",
        "{{},{}}",
        "{{{{{{{1}}}}}}}",
        "[1:2]{1,2}",
        "[1:2]={1}",
        "[1:x]={1}",
        "[1:2={1,2}",
        "{\"1}",
        "{\"1\" 2}",
        "{1\"2\"}",
        "{1\\",
    ];
    for input in malformed {
        let message = err(parse_text_array(BigInt, input));
        assert!(
            message.starts_with("malformed array literal"),
            "{input}: {message}"
        );
    }
    assert!(err(parse_text_array(BigInt, "{1 2}")).contains("type bigint"));
    assert!(err(parse_text_array(SmallInt, "{1,40000}")).contains("out of range"));
    assert!(err(parse_text_array(Uuid, "{abc}")).contains("type uuid"));
}

/// `array_send`'s layout: ndim, has-null flag, element oid, (length, lower
/// bound) per dimension, then length-prefixed elements (-1 for NULL).
fn binary_array(oid: u32, dims: &[i32], elements: &[Option<&[u8]>]) -> Vec<u8> {
    let has_null = elements.iter().any(Option::is_none);
    let mut out = Vec::new();
    out.extend_from_slice(&(dims.len() as i32).to_be_bytes());
    out.extend_from_slice(&i32::from(has_null).to_be_bytes());
    out.extend_from_slice(&oid.to_be_bytes());
    for &dim in dims {
        out.extend_from_slice(&dim.to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
    }
    for element in elements {
        match element {
            Some(bytes) => {
                out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                out.extend_from_slice(bytes);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    out
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn hash_binary_arrays() {
    // Bytes from PostgreSQL 15's array_send.
    let int8 = hex("0000000100000001000000140000000300000001000000080000000000000001ffffffff00000008fffffffffffffffb");
    assert_eq!(decode_binary_array(BigInt, &int8), Ok(ints(&[1, -5])));
    let int2_2d = hex("00000002000000000000001500000002000000000000000200000001000000020001000000020002000000020003000000020004");
    assert_eq!(
        decode_binary_array(Integer, &int2_2d),
        Ok(ints(&[1, 2, 3, 4]))
    );
    let text = hex("00000001000000010000001900000003000000010000000161ffffffff00000003622063");
    assert_eq!(decode_binary_array(Text, &text), Ok(texts(&["a", "b c"])));
    let empty = hex("000000000000000000000017");
    assert_eq!(decode_binary_array(BigInt, &empty), Ok(vec![]));

    // Built by hand: an int4[] parameter for a bigint column, uuid[],
    // varchar[], a 2x2 with a NULL, element oid 0.
    let four = |v: i32| v.to_be_bytes();
    let (a, b) = (four(7), four(-9));
    let array = binary_array(23, &[2], &[Some(&a), Some(&b)]);
    assert_eq!(decode_binary_array(BigInt, &array), Ok(ints(&[7, -9])));
    let uuid = [0x11u8; 16];
    let array = binary_array(2950, &[1], &[Some(&uuid)]);
    assert_eq!(decode_binary_array(Uuid, &array), Ok(vec![Key::Uuid(uuid)]));
    let array = binary_array(1043, &[3], &[Some("é".as_bytes()), None, Some(b"")]);
    assert_eq!(decode_binary_array(Varchar, &array), Ok(texts(&["é", ""])));
    let array = binary_array(0, &[2, 2], &[Some(&a), None, None, Some(&b)]);
    assert_eq!(decode_binary_array(Integer, &array), Ok(ints(&[7, -9])));
}

#[test]
fn hash_binary_arrays_reject_bad_input() {
    let seven = 7i64.to_be_bytes();
    let good = binary_array(20, &[1], &[Some(&seven)]);
    // Every truncation fails, and so does a trailing byte.
    for cut in 0..good.len() {
        assert!(
            decode_binary_array(BigInt, &good[..cut]).is_err(),
            "cut {cut}"
        );
    }
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(err(decode_binary_array(BigInt, &trailing)).contains("trailing"));
    // An int8 element that is 4 bytes long, an element oid that cannot hold
    // the column's keys, an int8[] for a smallint column with a big value.
    let short = binary_array(20, &[1], &[Some(&[0, 0, 0, 7])]);
    assert!(err(decode_binary_array(BigInt, &short)).contains("has 4 bytes"));
    let numeric = binary_array(1700, &[1], &[Some(&seven)]);
    assert!(err(decode_binary_array(BigInt, &numeric)).contains("oid 1700"));
    let text_for_uuid = binary_array(25, &[1], &[Some(b"x")]);
    assert!(err(decode_binary_array(Uuid, &text_for_uuid)).contains("oid 25"));
    let big = 70_000i64.to_be_bytes();
    let array = binary_array(20, &[1], &[Some(&big)]);
    assert!(err(decode_binary_array(SmallInt, &array)).contains("out of range"));
    // Hostile headers: 7 dimensions, bad flags, negative length, a huge
    // element count with no data behind it, element length -2.
    let seven_dims = binary_array(20, &[1; 7], &[Some(&seven)]);
    assert!(err(decode_binary_array(BigInt, &seven_dims)).contains("dimensions"));
    let mut flags = good.clone();
    flags[7] = 2;
    assert!(err(decode_binary_array(BigInt, &flags)).contains("flags"));
    let negative = binary_array(20, &[-1], &[]);
    assert!(err(decode_binary_array(BigInt, &negative)).contains("negative"));
    let huge = binary_array(20, &[i32::MAX, i32::MAX, i32::MAX], &[]);
    assert!(decode_binary_array(BigInt, &huge).is_err());
    let mut minus_two = binary_array(20, &[1], &[]);
    minus_two.extend_from_slice(&(-2i32).to_be_bytes());
    assert!(err(decode_binary_array(BigInt, &minus_two)).contains("element length"));
}

// --- list and range mappings ------------------------------------------------

#[test]
fn hash_list_mapping() {
    let list = keys(ShardFunction::List(vec![
        (Key::Int(1), 0),
        (Key::Int(2), 3),
        (text("eu"), 4),
    ]));
    assert_eq!(logical_shard(&list, &Key::Int(1)), Some(0));
    assert_eq!(logical_shard(&list, &Key::Int(2)), Some(3));
    assert_eq!(logical_shard(&list, &Key::Int(3)), None);
    assert_eq!(logical_shard(&list, &text("eu")), Some(4));
    assert_eq!(logical_shard(&list, &text("EU")), None);
    // Through the placement: logical shard 3 lives on database 1.
    assert_eq!(database(&list, &Key::Int(2)), Some(1));
    assert_eq!(database(&list, &text("eu")), Some(2));
    assert_eq!(database(&list, &Key::Int(3)), None);
}

#[test]
fn hash_range_mapping() {
    let range = keys(ShardFunction::Range(vec![
        (None, Some(Key::Int(10)), 0),
        (Some(Key::Int(10)), Some(Key::Int(20)), 1),
        (Some(Key::Int(30)), None, 2),
    ]));
    let cases = [
        (i64::MIN, Some(0)),
        (9, Some(0)),
        (10, Some(1)),
        (19, Some(1)),
        (20, None),
        (29, None),
        (30, Some(2)),
        (i64::MAX, Some(2)),
    ];
    for (value, expected) in cases {
        assert_eq!(logical_shard(&range, &Key::Int(value)), expected, "{value}");
    }
    let text_range = keys(ShardFunction::Range(vec![
        (Some(text("a")), Some(text("m")), 0),
        (Some(text("m")), None, 1),
    ]));
    assert_eq!(logical_shard(&text_range, &text("")), None);
    assert_eq!(logical_shard(&text_range, &text("apple")), Some(0));
    assert_eq!(logical_shard(&text_range, &text("m")), Some(1));
    assert_eq!(logical_shard(&text_range, &text("é")), Some(1));
    assert_eq!(database(&text_range, &text("zebra")), Some(1));
}

/// `plain_int` (the fast path for digits as drivers send them) reads what
/// `parse_text` reads, and leaves every other spelling to it.
#[test]
fn plain_int_agrees_with_parse_text() {
    let spellings = [
        "0",
        "7",
        "42",
        "007",
        "32767",
        "32768",
        "2147483647",
        "2147483648",
        "999999999999999999",
        "9223372036854775807",
        "",
        " 1",
        "1 ",
        "-1",
        "+1",
        "1a",
        "a1",
        "1.0",
        "/1",
        ":1",
    ];
    for data_type in [BigInt, Integer, SmallInt] {
        for text in spellings {
            match plain_int(data_type, text.as_bytes()) {
                Some(fast) => assert_eq!(
                    fast.map_err(|e| e.to_string()),
                    parse_text(data_type, text).map_err(|e| e.to_string()),
                    "{data_type:?} {text:?}"
                ),
                None => {
                    let digits_only = !text.is_empty()
                        && text.len() <= 18
                        && text.bytes().all(|b| b.is_ascii_digit());
                    assert!(!digits_only, "{data_type:?} {text:?} left to parse_text");
                }
            }
        }
    }
    assert!(plain_int(Text, b"12").is_none());
}
