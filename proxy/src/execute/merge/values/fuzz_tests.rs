//! Property tests of the merge's value codecs (issue 35): numerics and
//! arrays in text and binary, and every kind's order and group key, from
//! valid, random and mutated values. Never a panic; a value read is one
//! Postgres could have sent (decimal digits only); what is written reads
//! back; sums and orders agree with exact integer arithmetic.

use std::cmp::Ordering;

use proptest::prelude::*;

use super::arrays::Array;
use super::numeric::{Decimal, Spread};
use super::*;
use crate::protocol::fuzz::{config, mutated};

/// A decimal as text and as an exact integer count of 10^-scale.
fn decimal() -> impl Strategy<Value = (String, i128, usize)> {
    (any::<i64>(), 0..8usize).prop_map(|(units, scale)| {
        let magnitude = units.unsigned_abs().to_string();
        let padded = format!("{magnitude:0>width$}", width = scale + 1);
        let (whole, fraction) = padded.split_at(padded.len() - scale);
        let sign = if units < 0 { "-" } else { "" };
        let text = match scale {
            0 => format!("{sign}{whole}"),
            _ => format!("{sign}{whole}.{fraction}"),
        };
        (text, i128::from(units), scale)
    })
}

/// `value` (a count of 10^-`scale`) at scale `to` (`to` >= `scale`).
fn rescaled(value: i128, scale: usize, to: usize) -> i128 {
    value * 10i128.pow((to - scale) as u32)
}

fn digits_are_decimal(value: &Decimal) -> bool {
    match value {
        Decimal::Finite { digits, .. } => digits.iter().all(|&d| d < 10),
        _ => true,
    }
}

/// `numeric_send`'s form: header words, then base-10000 digits.
fn numeric_wire() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(0..10_000u16, 0..5),
        -4..4i16,
        prop::sample::select(vec![0u16, 0x4000, 0xC000, 0xD000, 0xF000]),
        0..12u16,
    )
        .prop_map(|(digits, weight, sign, dscale)| {
            let mut out = Vec::new();
            for word in [digits.len() as u16, weight as u16, sign, dscale] {
                out.extend_from_slice(&word.to_be_bytes());
            }
            for d in digits {
                out.extend_from_slice(&d.to_be_bytes());
            }
            out
        })
}

const KINDS: [Kind; 10] = [
    Kind::Integer,
    Kind::Float,
    Kind::Numeric,
    Kind::Bool,
    Kind::Bytes,
    Kind::Padded,
    Kind::Date,
    Kind::Timestamp,
    Kind::TimestampTz,
    Kind::Time,
];

/// Texts and bytes of every kind's shape, some valid, some not.
fn any_value() -> impl Strategy<Value = Vec<u8>> {
    let texts = prop_oneof![
        decimal().prop_map(|(t, _, _)| t),
        Just("NaN".to_owned()),
        Just("-Infinity".to_owned()),
        "[0-9]{1,40}-[0-9]{1,3}-[0-9]{1,3}( [0-9]{1,40}:[0-9]{1,3}:[0-9]{1,3}(\\.[0-9]{0,7})?([+-][0-9]{1,30}(:[0-9]{1,3})?)?)?( BC)?",
        "[0-9]{1,40}:[0-9]{1,40}:[0-9]{1,40}(\\.[0-9]{1,6})?",
        "[tf]|infinity|-infinity|[ -~]{0,12}",
    ];
    prop_oneof![
        texts.prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..12),
        numeric_wire(),
    ]
}

/// Text arrays as `array_out` writes them, and their elements.
fn text_array() -> impl Strategy<Value = Vec<Option<Vec<u8>>>> {
    let element = prop::option::of(prop::collection::vec(
        prop::sample::select(b"ab ,\"\\{}NUL1".to_vec()),
        0..6,
    ));
    prop::collection::vec(element, 0..6)
}

proptest! {
    #![proptest_config(config(512))]

    /// Numeric text reads back and adds and orders as integers do.
    #[test]
    fn numerics_add_and_order_exactly(a in decimal(), b in decimal()) {
        let (x, y) = (Decimal::from_text(a.0.as_bytes()).unwrap(), Decimal::from_text(b.0.as_bytes()).unwrap());
        prop_assert_eq!(x.to_text(a.2), a.0.clone());
        let scale = a.2.max(b.2);
        let (ax, by) = (rescaled(a.1, a.2, scale), rescaled(b.1, b.2, scale));
        let sum = x.add(&y);
        let expected = decimal_text(ax + by, scale);
        prop_assert_eq!(sum.to_text(scale), expected);
        prop_assert_eq!(x.cmp(&y), ax.cmp(&by));
        prop_assert_eq!(x.canonical() == y.canonical(), ax == by);
        // The binary form reads back at every display scale at or above its own.
        for shown in [a.2, a.2 + 3] {
            let back = Decimal::from_binary(&x.to_binary(shown)).unwrap();
            prop_assert_eq!(back.to_text(shown), x.to_text(shown));
        }
    }

    /// Averages and spreads of any sum never panic; an exact multiple
    /// averages to its quotient.
    #[test]
    fn averages_and_spreads_never_panic(a in decimal(), count in 1..1000u64, squares in decimal()) {
        let x = Decimal::from_text(a.0.as_bytes()).unwrap();
        let (average, scale) = x.average(count);
        prop_assert!(digits_are_decimal(&average));
        let _ = average.to_text(scale);
        let multiple = decimal_text(a.1 * i128::from(count), a.2);
        let (back, scale) = Decimal::from_text(multiple.as_bytes()).unwrap().average(count);
        prop_assert_eq!(back.cmp(&x), Ordering::Equal, "{} / {} at {}", multiple, count, scale);
        let squares = Decimal::from_text(squares.0.as_bytes()).unwrap();
        for (sample, root) in [(false, false), (true, false), (false, true), (true, true)] {
            if let Some((value, scale)) = (Spread { sample, root }).of(count, &x, &squares) {
                prop_assert!(digits_are_decimal(&value));
                let _ = (value.to_text(scale), value.to_binary(scale));
            }
        }
    }

    /// Any numeric wire bytes: a value of decimal digits, or an error.
    #[test]
    fn numeric_wire_reads_decimal_digits_or_errs(wire in mutated(numeric_wire(), 3)) {
        if let Ok(value) = Decimal::from_binary(&wire) {
            prop_assert!(digits_are_decimal(&value), "{wire:?} read as {value:?}");
            let scale = value.scale();
            let back = Decimal::from_binary(&value.to_binary(scale)).unwrap();
            prop_assert_eq!(back.to_text(scale), value.to_text(scale));
        }
    }

    /// Arrays written read back, in either form; any mutation of them
    /// reads or errs.
    #[test]
    fn arrays_read_back(elements in text_array(), oid in prop::sample::select(vec![25u32, 23, 1700])) {
        let array = Array { elements };
        for binary in [false, true] {
            let written = array.write(binary, oid);
            prop_assert_eq!(Array::read(&written, binary), Ok(array.clone()));
        }
    }

    #[test]
    fn mutated_arrays_never_panic(
        bytes in mutated(text_array().prop_flat_map(|elements| {
            let array = Array { elements };
            prop::sample::select(vec![array.write(false, 25), array.write(true, 25)])
        }), 4),
    ) {
        for binary in [false, true] {
            if let Ok(array) = Array::read(&bytes, binary) {
                prop_assert!(array.elements.len() <= bytes.len());
                let _ = array.write(binary, 25);
            }
        }
    }

    /// Every kind's order and group key, from any two values: an order
    /// that reverses when the values swap, a group key for each readable
    /// value, never a panic.
    #[test]
    fn orders_and_group_keys_never_panic(
        kind in prop::sample::select(&KINDS[..]),
        binary in any::<bool>(),
        a in any_value(),
        b in any_value(),
    ) {
        if let (Ok(ab), Ok(ba)) = (compare(kind, binary, &a, &b), compare(kind, binary, &b, &a)) {
            prop_assert_eq!(ab, ba.reverse());
        }
        let _ = compare_mixed(kind, (&a, binary), (&b, !binary));
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        let keyed = canonical(kind, binary, &a, &mut ka).is_ok() && canonical(kind, binary, &b, &mut kb).is_ok();
        if keyed && kind == Kind::Numeric {
            prop_assert_eq!(ka == kb, compare(kind, binary, &a, &b) == Ok(Ordering::Equal));
        }
        let _ = canonical_any(25, &a, &mut ka);
    }
}

/// `value` 10^-`scale` as Postgres prints it.
fn decimal_text(value: i128, scale: usize) -> String {
    let magnitude = value.unsigned_abs().to_string();
    let padded = format!("{magnitude:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    let sign = if value < 0 { "-" } else { "" };
    match scale {
        0 => format!("{sign}{whole}"),
        _ => format!("{sign}{whole}.{fraction}"),
    }
}

/// Regression (issue 35): a base-10000 digit of 10000 or more (which
/// `numeric_recv` refuses) was read as decimal "digits" above 9, and the
/// merge wrote them back as text with `:` and letters in it.
#[test]
fn a_numeric_digit_past_9999_is_unreadable() {
    let wire = [0, 2, 0, 1, 0, 0, 0, 0, 0x27, 0x10, 0, 39];
    assert_eq!(
        Decimal::from_binary(&wire),
        Err(ValueError::Unreadable("numeric"))
    );
    let wire = [0, 2, 0, 1, 0, 0, 0, 0, 0x27, 0x0f, 0, 39];
    assert_eq!(Decimal::from_binary(&wire).unwrap().to_text(0), "99990039");
}

/// Regression (issue 35): date/time text with fields past 32 bits
/// overflowed the arithmetic (a panic in debug builds, a wrapped and so
/// wrong order in release); it is unreadable, as Postgres would never
/// send it.
#[test]
fn huge_date_time_fields_are_unreadable() {
    for (kind, text) in [
        (Kind::Time, "99999999999999999999999:00:00"),
        (Kind::Date, "99999999999999999999999999-01-01"),
        (Kind::Timestamp, "2000-01-01 99999999999999999999:00:00"),
        (
            Kind::TimestampTz,
            "2000-01-01 00:00:00+99999999999999999999",
        ),
    ] {
        assert_eq!(
            compare(kind, false, text.as_bytes(), b"2000-01-01 00:00:00"),
            Err(ValueError::Unreadable("date/time")),
            "{text}"
        );
    }
    assert_eq!(
        compare(Kind::Time, false, b"25:00:00", b"24:59:59.999999"),
        Ok(Ordering::Greater)
    );
}
