//! Numbers in Postgres's binary formats (what `int2send`, `float8send`,
//! `date_send`, `numeric_send` and `array_send` write): big-endian, each
//! read only when the bytes it needs are there (`None` otherwise).

/// An `int2`, `int4` or `int8`, by its length.
pub fn integer(value: &[u8]) -> Option<i64> {
    match *value {
        [a, b] => Some(i64::from(i16::from_be_bytes([a, b]))),
        [a, b, c, d] => Some(i64::from(i32::from_be_bytes([a, b, c, d]))),
        [..] => <[u8; 8]>::try_from(value).ok().map(i64::from_be_bytes),
    }
}

/// A `float4` or `float8`, by its length.
pub fn float(value: &[u8]) -> Option<f64> {
    match *value {
        [a, b, c, d] => Some(f64::from(f32::from_be_bytes([a, b, c, d]))),
        [..] => <[u8; 8]>::try_from(value).ok().map(f64::from_be_bytes),
    }
}

/// A date (`int4` days, when `date` and 4 bytes long) or a timestamp or
/// time (`int8` microseconds, 8 bytes long).
pub fn instant(value: &[u8], date: bool) -> Option<i128> {
    match *value {
        [a, b, c, d] if date => Some(i128::from(i32::from_be_bytes([a, b, c, d]))),
        [..] => <[u8; 8]>::try_from(value)
            .ok()
            .map(|b| i128::from(i64::from_be_bytes(b))),
    }
}

/// The 16-bit word `index` of `value` (numeric's header and digits).
pub fn word(value: &[u8], index: usize) -> Option<u16> {
    let at = index.checked_mul(2)?;
    match *value.get(at..at.checked_add(2)?)? {
        [a, b] => Some(u16::from_be_bytes([a, b])),
        _ => None,
    }
}

/// The 32-bit signed number at byte `at` of `value` (an array's header
/// fields and element lengths).
pub fn int4_at(value: &[u8], at: usize) -> Option<i32> {
    match *value.get(at..at.checked_add(4)?)? {
        [a, b, c, d] => Some(i32::from_be_bytes([a, b, c, d])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_by_length_or_not_at_all() {
        assert_eq!(integer(&[0xff, 0xfe]), Some(-2));
        assert_eq!(integer(&7i32.to_be_bytes()), Some(7));
        assert_eq!(integer(&(-9i64).to_be_bytes()), Some(-9));
        assert_eq!(integer(&[1, 2, 3]), None);
        assert_eq!(float(&1.5f32.to_be_bytes()), Some(1.5));
        assert_eq!(float(&[0; 3]), None);
        assert_eq!(instant(&3i32.to_be_bytes(), true), Some(3));
        assert_eq!(instant(&3i32.to_be_bytes(), false), None);
        assert_eq!(word(&[0, 1, 0, 2], 1), Some(2));
        assert_eq!(word(&[0, 1, 0], 1), None);
        assert_eq!(int4_at(&[9, 0, 0, 0, 5], 1), Some(5));
        assert_eq!(int4_at(&[0, 0, 0], 0), None);
        assert_eq!(int4_at(&[0; 4], usize::MAX), None);
    }
}
