//! Exact decimal numbers for the cross-shard merge: Postgres `numeric` read
//! from its text or binary form, ordered, added, and written back with the
//! display scale Postgres would give. Own code rather than a bignum crate:
//! the merge needs only reading, ordering and addition of decimal digit
//! strings, and Postgres's wire forms, in about a hundred lines (the
//! variance's products and square roots, in `numeric/variance.rs`, use
//! `num-bigint`).

mod variance;

use std::cmp::Ordering;

use super::ValueError;
use crate::protocol::binary;

pub use variance::Spread;

/// A numeric value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decimal {
    NaN,
    Infinity,
    NegInfinity,
    /// `digits` (decimal, most significant first, no leading zeros; empty
    /// for zero) times 10^-`scale`.
    Finite {
        negative: bool,
        digits: Vec<u8>,
        scale: usize,
    },
}

const UNREADABLE: ValueError = ValueError::Unreadable("numeric");

impl Decimal {
    pub fn read(value: &[u8], binary: bool) -> Result<Decimal, ValueError> {
        if binary {
            Decimal::from_binary(value)
        } else {
            Decimal::from_text(value)
        }
    }

    pub fn from_text(text: &[u8]) -> Result<Decimal, ValueError> {
        match text {
            b"NaN" => return Ok(Decimal::NaN),
            b"Infinity" => return Ok(Decimal::Infinity),
            b"-Infinity" => return Ok(Decimal::NegInfinity),
            _ => {}
        }
        let (negative, body) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        let (whole, fraction) = match body.iter().position(|&b| b == b'.') {
            Some(at) => (&body[..at], &body[at + 1..]),
            None => (body, &[][..]),
        };
        let all = whole.iter().chain(fraction);
        if whole.is_empty() || !all.clone().all(u8::is_ascii_digit) {
            return Err(UNREADABLE);
        }
        let digits = all.map(|b| b - b'0').collect();
        Ok(Decimal::finite(negative, digits, fraction.len()))
    }

    /// Postgres's `numeric_send` form: ndigits, weight, sign, dscale, then
    /// base-10000 digits, all big-endian 16-bit.
    pub fn from_binary(value: &[u8]) -> Result<Decimal, ValueError> {
        let word = |i: usize| binary::word(value, i).ok_or(UNREADABLE);
        let (ndigits, weight, sign, dscale) = (word(0)?, word(1)? as i16, word(2)?, word(3)?);
        match sign {
            0xC000 => return Ok(Decimal::NaN),
            0xD000 => return Ok(Decimal::Infinity),
            0xF000 => return Ok(Decimal::NegInfinity),
            0x0000 | 0x4000 => {}
            _ => return Err(UNREADABLE),
        }
        // Digit i stands for 10000^(weight - i): lay them out as decimal
        // digits with the point after group `weight`.
        let mut digits = Vec::new();
        let leading = usize::try_from(-i32::from(weight) - 1).unwrap_or(0);
        digits.resize(leading * 4, 0);
        for i in 0..usize::from(ndigits) {
            let group = word(4 + i)?;
            // A base-10000 digit, as `numeric_recv` insists ("invalid
            // digit in external numeric value").
            if group >= 10_000 {
                return Err(UNREADABLE);
            }
            digits.extend(
                [group / 1000, group / 100 % 10, group / 10 % 10, group % 10].map(|d| d as u8),
            );
        }
        let whole_groups = usize::try_from(i32::from(weight) + 1).unwrap_or(0);
        digits.resize(digits.len().max(whole_groups * 4), 0);
        // Decimal digits after the point so far; dscale trims or pads them.
        let fraction = digits.len() - whole_groups * 4;
        let scale = usize::from(dscale);
        if fraction > scale {
            digits.truncate(digits.len() - (fraction - scale));
        } else {
            digits.resize(digits.len() + scale - fraction, 0);
        }
        Ok(Decimal::finite(sign == 0x4000, digits, scale))
    }

    fn finite(negative: bool, mut digits: Vec<u8>, scale: usize) -> Decimal {
        let zeros = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..zeros);
        let negative = negative && !digits.is_empty();
        Decimal::Finite {
            negative,
            digits,
            scale,
        }
    }

    /// The display scale (digits after the point).
    pub fn scale(&self) -> usize {
        match self {
            Decimal::Finite { scale, .. } => *scale,
            _ => 0,
        }
    }

    /// Text equal for equal values (trailing fraction zeros dropped).
    pub fn canonical(&self) -> String {
        match self {
            Decimal::Finite { digits, .. } if digits.is_empty() => "0".into(),
            Decimal::Finite {
                negative,
                digits,
                scale,
            } => {
                let trailing = digits
                    .iter()
                    .rev()
                    .take_while(|&&d| d == 0)
                    .count()
                    .min(*scale);
                let trimmed = Decimal::Finite {
                    negative: *negative,
                    digits: digits[..digits.len() - trailing].to_vec(),
                    scale: scale - trailing,
                };
                trimmed.to_text(scale - trailing)
            }
            other => other.to_text(0),
        }
    }

    /// Postgres's text form with `scale` digits after the point.
    pub fn to_text(&self, scale: usize) -> String {
        let (negative, digits, own) = match self {
            Decimal::NaN => return "NaN".into(),
            Decimal::Infinity => return "Infinity".into(),
            Decimal::NegInfinity => return "-Infinity".into(),
            Decimal::Finite {
                negative,
                digits,
                scale,
            } => (*negative, digits, *scale),
        };
        let mut all: Vec<u8> = digits.clone();
        all.resize(all.len() + scale.saturating_sub(own), 0);
        all.truncate(all.len() - own.saturating_sub(scale));
        if all.len() <= scale {
            let mut padded = vec![0; scale + 1 - all.len()];
            padded.extend(all);
            all = padded;
        }
        let point = all.len() - scale;
        let mut text = String::with_capacity(all.len() + 2);
        if negative {
            text.push('-');
        }
        for (i, d) in all.iter().enumerate() {
            if i == point {
                text.push('.');
            }
            text.push(char::from(b'0' + d));
        }
        text
    }

    /// `numeric_send`'s form of this value with display scale `scale`.
    pub fn to_binary(&self, scale: usize) -> Vec<u8> {
        let mut words: Vec<u16> = Vec::new();
        let (sign, mut weight) = match self {
            Decimal::NaN => (0xC000, 0),
            Decimal::Infinity => (0xD000, 0),
            Decimal::NegInfinity => (0xF000, 0),
            Decimal::Finite {
                negative,
                digits,
                scale: own,
            } => {
                // Whole digits padded left, fraction padded right, to groups of 4.
                let whole = digits.len().saturating_sub(*own);
                let mut padded = vec![0u8; (4 - whole % 4) % 4 + own.saturating_sub(digits.len())];
                padded.extend(digits);
                padded.resize(padded.len() + (4 - own % 4) % 4, 0);
                let whole_groups = whole.div_ceil(4) as i32;
                words = padded
                    .chunks(4)
                    .map(|c| c.iter().fold(0u16, |n, &d| n * 10 + u16::from(d)))
                    .collect();
                let mut weight = whole_groups - 1;
                while words.first() == Some(&0) {
                    words.remove(0);
                    weight -= 1;
                }
                while words.last() == Some(&0) {
                    words.pop();
                }
                (
                    if *negative { 0x4000 } else { 0 },
                    if words.is_empty() { 0 } else { weight },
                )
            }
        };
        if words.is_empty() {
            weight = 0;
        }
        let mut out = Vec::with_capacity(8 + words.len() * 2);
        for word in [words.len() as u16, weight as i16 as u16, sign, scale as u16] {
            out.extend_from_slice(&word.to_be_bytes());
        }
        for word in words {
            out.extend_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// This sum divided by a row count as `avg` finishes: Postgres's
    /// `numeric_div`, whose result scale `select_div_scale` picks (at least
    /// 16 significant digits, never below the sum's scale), rounded half
    /// away from zero. Returns the quotient and its display scale.
    pub fn average(&self, count: u64) -> (Decimal, usize) {
        let (negative, digits, scale) = match self {
            Decimal::Finite {
                negative,
                digits,
                scale,
            } => (*negative, digits, *scale),
            special => return (special.clone(), 0),
        };
        if count == 0 {
            return (Decimal::NaN, 0);
        }
        let (weight1, first1) = leading_group(digits, scale);
        let count_digits: Vec<u8> = count.to_string().bytes().map(|b| b - b'0').collect();
        let (weight2, first2) = leading_group(&count_digits, 0);
        let mut qweight = weight1 - weight2;
        if first1 <= first2 {
            qweight -= 1;
        }
        let rscale = (16 - qweight * 4).max(scale as i64).clamp(0, 1000) as usize;
        // digits * 10^(rscale - scale) / count, rounded.
        let mut numerator = digits.clone();
        numerator.resize(digits.len() + (rscale - scale), 0);
        let divisor = u128::from(count);
        let mut quotient = Vec::with_capacity(numerator.len());
        let mut remainder: u128 = 0;
        for d in numerator {
            let current = remainder * 10 + u128::from(d);
            quotient.push((current / divisor) as u8);
            remainder = current % divisor;
        }
        if remainder * 2 >= divisor {
            quotient = add_magnitudes(&quotient, &[1]);
        }
        (Decimal::finite(negative, quotient, rscale), rscale)
    }

    /// The exact sum, with Postgres's special-value rules.
    pub fn add(&self, other: &Decimal) -> Decimal {
        use Decimal::*;
        match (self, other) {
            (NaN, _) | (_, NaN) | (Infinity, NegInfinity) | (NegInfinity, Infinity) => NaN,
            (Infinity, _) | (_, Infinity) => Infinity,
            (NegInfinity, _) | (_, NegInfinity) => NegInfinity,
            (
                Finite {
                    negative: na,
                    digits: da,
                    scale: sa,
                },
                Finite {
                    negative: nb,
                    digits: db,
                    scale: sb,
                },
            ) => {
                let scale = (*sa).max(*sb);
                let a = aligned(da, *sa, scale);
                let b = aligned(db, *sb, scale);
                if na == nb {
                    return Decimal::finite(*na, add_magnitudes(&a, &b), scale);
                }
                match compare_magnitudes(&a, &b) {
                    Ordering::Less => Decimal::finite(*nb, subtract_magnitudes(&b, &a), scale),
                    _ => Decimal::finite(*na, subtract_magnitudes(&a, &b), scale),
                }
            }
        }
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        use Decimal::*;
        let rank = |d: &Decimal| match d {
            NegInfinity => 0,
            Finite { .. } => 1,
            Infinity => 2,
            NaN => 3,
        };
        match (self, other) {
            (
                Finite {
                    negative: na,
                    digits: da,
                    scale: sa,
                },
                Finite {
                    negative: nb,
                    digits: db,
                    scale: sb,
                },
            ) => {
                let scale = (*sa).max(*sb);
                let (a, b) = (aligned(da, *sa, scale), aligned(db, *sb, scale));
                match (na, nb) {
                    (false, true) => Ordering::Greater,
                    (true, false) => Ordering::Less,
                    (false, false) => compare_magnitudes(&a, &b),
                    (true, true) => compare_magnitudes(&b, &a),
                }
            }
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The base-10000 weight and first digit of the magnitude `digits` at
/// `scale` (Postgres's NumericVar layout; zero: weight 0, digit 0).
fn leading_group(digits: &[u8], scale: usize) -> (i64, u16) {
    let Some(first) = digits.iter().position(|&d| d != 0) else {
        return (0, 0);
    };
    // Decimal exponent of the leading digit: 10^e.
    let exponent = (digits.len() - first) as i64 - 1 - scale as i64;
    let weight = exponent.div_euclid(4);
    // The group holds the digits from 10^(4*weight+3) down to 10^(4*weight).
    let mut group = 0u16;
    for power in (0..4).rev() {
        let e = weight * 4 + power;
        // Index of the digit for 10^e: len - 1 - scale - e.
        let index = digits.len() as i64 - 1 - scale as i64 - e;
        let digit = usize::try_from(index)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0);
        group = group * 10 + u16::from(digit);
    }
    (weight, group)
}

/// `digits` at scale `from` rewritten at scale `to` (>= `from`).
fn aligned(digits: &[u8], from: usize, to: usize) -> Vec<u8> {
    let mut out = digits.to_vec();
    out.resize(digits.len() + (to - from), 0);
    out
}

fn compare_magnitudes(a: &[u8], b: &[u8]) -> Ordering {
    let strip = |d: &[u8]| d.iter().position(|&x| x != 0).map_or(0, |i| d.len() - i);
    let (la, lb) = (strip(a), strip(b));
    la.cmp(&lb)
        .then_with(|| a[a.len() - la..].cmp(&b[b.len() - lb..]))
}

fn add_magnitudes(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let (mut i, mut j, mut carry) = (a.len(), b.len(), 0u8);
    while i > 0 || j > 0 || carry > 0 {
        let x = if i > 0 {
            i -= 1;
            a[i]
        } else {
            0
        };
        let y = if j > 0 {
            j -= 1;
            b[j]
        } else {
            0
        };
        let s = x + y + carry;
        out.push(s % 10);
        carry = s / 10;
    }
    out.reverse();
    out
}

/// `a - b` for `a >= b`.
fn subtract_magnitudes(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len());
    let (mut j, mut borrow) = (b.len(), 0i8);
    for i in (0..a.len()).rev() {
        let y = if j > 0 {
            j -= 1;
            b[j] as i8
        } else {
            0
        };
        let mut d = a[i] as i8 - y - borrow;
        borrow = i8::from(d < 0);
        if d < 0 {
            d += 10;
        }
        out.push(d as u8);
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::from_text(s.as_bytes()).unwrap()
    }

    #[test]
    fn sums_keep_the_widest_scale() {
        for (a, b, sum) in [
            ("1.25", "2.5", "3.75"),
            ("-1.25", "2.5", "1.25"),
            ("1.25", "-2.5", "-1.25"),
            ("999", "1", "1000"),
            ("-5", "5", "0"),
            ("0.001", "0", "0.001"),
            (
                "123456789012345678901234567890",
                "1",
                "123456789012345678901234567891",
            ),
        ] {
            let total = dec(a).add(&dec(b));
            let scale = dec(a).scale().max(dec(b).scale());
            assert_eq!(total.to_text(scale), sum, "{a} + {b}");
        }
        assert_eq!(dec("NaN").add(&dec("1")), Decimal::NaN);
        assert_eq!(dec("5").add(&dec("-5")).to_text(2), "0.00");
    }

    #[test]
    fn binary_round_trips() {
        // numeric_send of 12345.678 (dscale 3): ndigits 3, weight 1, digits 1 2345 6780.
        let wire = [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c];
        let value = Decimal::from_binary(&wire).unwrap();
        assert_eq!(value.to_text(3), "12345.678");
        assert_eq!(value.to_binary(3), wire);
        for text in [
            "0",
            "0.00",
            "-0.0001",
            "10000",
            "1.5",
            "-98765.4321000",
            "0.00012",
        ] {
            let value = dec(text);
            let scale = value.scale();
            let back = Decimal::from_binary(&value.to_binary(scale)).unwrap();
            assert_eq!(back.to_text(scale), text, "{text}");
        }
    }

    #[test]
    fn averages_divide_as_postgres_does() {
        // Expected: Postgres 15's avg() of rows with this sum and count (psql).
        for (sum, count, expected) in [
            ("3", 2, "1.5000000000000000"),
            ("10", 3, "3.3333333333333333"),
            ("2", 3, "0.66666666666666666667"),
            ("-2", 3, "-0.66666666666666666667"),
            ("123456", 7, "17636.571428571429"),
            ("12.25", 4, "3.0625000000000000"),
            ("0", 5, "0.00000000000000000000"),
            ("99999999", 1, "99999999.000000000000"),
        ] {
            let (value, scale) = dec(sum).average(count);
            assert_eq!(value.to_text(scale), expected, "{sum} / {count}");
        }
    }

    #[test]
    fn canonical_text_ignores_trailing_zeros() {
        assert_eq!(dec("10.500").canonical(), dec("10.5").canonical());
        assert_eq!(dec("-0.0").canonical(), "0");
        assert!(dec("-3") < dec("2"));
        assert!(dec("Infinity") < dec("NaN"));
    }
}
