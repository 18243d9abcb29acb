//! Property tests of key decoding (issue 35): bind parameters and literals
//! of every key type, text and binary, scalars and arrays, random and
//! mutated. Never a panic; a value read back is the value written; a
//! hostile array size reserves nothing the input does not back.

use proptest::prelude::*;

use super::*;
use crate::fuzz::{config, mutated};

const TYPES: [DataType; 6] = [
    DataType::BigInt,
    DataType::Integer,
    DataType::SmallInt,
    DataType::Text,
    DataType::Varchar,
    DataType::Uuid,
];

fn data_type() -> impl Strategy<Value = DataType> {
    prop::sample::select(&TYPES[..])
}

/// Text values of each type's shape, some valid, some almost.
fn text_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<i16>().prop_map(|v| format!("  {v}\n")),
        "[+-]?[0-9]{0,22}",
        "\\{?[0-9a-fA-F-]{28,40}\\}?",
        any::<[u8; 16]>().prop_map(|u| uuid_text(&u)),
        ".{0,40}",
    ]
}

fn uuid_text(uuid: &[u8; 16]) -> String {
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A binary array as `array_send` writes it: `dims` dimensions over
/// `elements`, element type `oid`.
fn binary_array(oid: u32, dims: &[i32], elements: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |v: i32| out.extend_from_slice(&v.to_be_bytes());
    put(dims.len() as i32);
    put(i32::from(elements.iter().any(Option::is_none)));
    put(oid as i32);
    for &d in dims {
        put(d);
        put(1);
    }
    for element in elements {
        match element {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(bytes) => {
                out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }
    out
}

/// Valid binary int8 arrays, 1-D or 2-D, some elements NULL.
fn int8_arrays() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::option::of(any::<i64>()), 0..12).prop_map(|values| {
        let elements: Vec<_> = values
            .iter()
            .map(|v| v.map(|v| v.to_be_bytes().to_vec()))
            .collect();
        let dims: Vec<i32> = match elements.len() {
            0 => Vec::new(),
            n if n % 2 == 0 => vec![2, n as i32 / 2],
            n => vec![n as i32],
        };
        binary_array(20, &dims, &elements)
    })
}

/// Text arrays of integers, quoted or not, NULLs, nested lists.
fn text_arrays() -> impl Strategy<Value = String> {
    let element = prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        any::<i32>().prop_map(|v| format!("\"{v}\"")),
        Just("NULL".to_owned()),
        Just(" 7 ".to_owned()),
    ];
    prop::collection::vec(element, 0..8).prop_map(|items| match items.len() {
        n if n >= 2 && n % 2 == 0 => {
            let (a, b) = items.split_at(n / 2);
            format!(
                "[1:2][0:{}]={{{{{}}},{{{}}}}}",
                n / 2 - 1,
                a.join(","),
                b.join(",")
            )
        }
        _ => format!("{{{}}}", items.join(",")),
    })
}

proptest! {
    #![proptest_config(config(512))]

    /// Any text, any type: a key or an error, never a panic; an integer
    /// read is in its type's range and reads back from its own text.
    #[test]
    fn text_keys_never_panic(data_type in data_type(), text in text_value()) {
        match parse_text(data_type, &text) {
            Ok(Key::Int(v)) => {
                prop_assert!(in_range(data_type, i128::from(v)));
                prop_assert_eq!(parse_text(data_type, &v.to_string()), Ok(Key::Int(v)));
            }
            Ok(Key::Uuid(u)) => {
                prop_assert_eq!(parse_text(data_type, &uuid_text(&u)), Ok(Key::Uuid(u)));
            }
            Ok(Key::Text(t)) => prop_assert_eq!(t, text.clone()),
            Err(_) => {}
        }
        // The drivers' fast path agrees with the full reader where it answers.
        if let Some(fast) = plain_int(data_type, text.as_bytes()) {
            prop_assert_eq!(fast, parse_text(data_type, &text));
        }
    }

    /// Any bytes as a binary parameter of any type.
    #[test]
    fn binary_keys_never_panic(
        data_type in data_type(),
        bytes in prop::collection::vec(any::<u8>(), 0..24),
    ) {
        if let Ok(key) = decode_binary(data_type, &bytes) {
            match (data_type, key) {
                (DataType::Uuid, Key::Uuid(u)) => prop_assert_eq!(&u[..], &bytes[..]),
                (DataType::Text | DataType::Varchar, Key::Text(t)) => {
                    prop_assert_eq!(t.as_bytes(), &bytes[..])
                }
                (_, Key::Int(v)) => prop_assert!(in_range(data_type, i128::from(v))),
                (data_type, key) => prop_assert!(false, "{data_type:?} gave {key:?}"),
            }
        }
    }

    /// Valid binary int8 arrays read back their non-NULL elements; their
    /// mutations (hostile counts included) are errors or keys, and never
    /// reserve more than the input backs.
    #[test]
    fn binary_arrays_never_panic(
        data_type in data_type(),
        bytes in mutated(int8_arrays(), 4),
    ) {
        if let Ok(keys) = decode_binary_array(data_type, &bytes) {
            prop_assert!(keys.capacity() <= bytes.len() / 4 + 1, "{} keys reserved", keys.capacity());
        }
    }

    #[test]
    fn binary_int8_arrays_read_back(values in prop::collection::vec(prop::option::of(any::<i64>()), 1..12)) {
        let elements: Vec<_> = values.iter().map(|v| v.map(|v| v.to_be_bytes().to_vec())).collect();
        let bytes = binary_array(20, &[elements.len() as i32], &elements);
        let expected: Vec<Key> = values.iter().flatten().map(|&v| Key::Int(v)).collect();
        prop_assert_eq!(decode_binary_array(DataType::BigInt, &bytes), Ok(expected));
    }

    /// Text arrays, valid and mutated, of every key type.
    #[test]
    fn text_arrays_never_panic(
        data_type in data_type(),
        bytes in mutated(text_arrays().prop_map(String::into_bytes), 4),
    ) {
        let text = String::from_utf8_lossy(&bytes);
        if let (Ok(keys), DataType::BigInt) = (parse_text_array(data_type, &text), data_type) {
            prop_assert!(keys.len() <= text.len());
        }
    }

    #[test]
    fn text_int_arrays_read_back(values in prop::collection::vec(prop::option::of(any::<i64>()), 0..12)) {
        let items: Vec<String> = values
            .iter()
            .map(|v| v.map_or("NULL".to_owned(), |v| v.to_string()))
            .collect();
        let text = format!("{{{}}}", items.join(","));
        let expected: Vec<Key> = values.iter().flatten().map(|&v| Key::Int(v)).collect();
        prop_assert_eq!(parse_text_array(DataType::BigInt, &text), Ok(expected));
    }
}

/// A 1-D array claiming 2^31 - 1 elements in a 24-byte message: an error,
/// with nothing reserved for the elements it claims.
#[test]
fn hostile_array_count_reserves_nothing() {
    let bytes = binary_array(20, &[i32::MAX], &[]);
    assert_eq!(
        decode_binary_array(DataType::BigInt, &bytes),
        Err(BinaryArrayError::Truncated.into())
    );
    // Six dimensions whose product overflows.
    let bytes = binary_array(20, &[i32::MAX; 6], &[]);
    assert_eq!(
        decode_binary_array(DataType::BigInt, &bytes),
        Err(BinaryArrayError::TooLarge.into())
    );
}
