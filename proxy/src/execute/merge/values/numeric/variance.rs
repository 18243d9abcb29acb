//! `stddev` / `variance` (sample and population) of a whole group, from its
//! row count, sum and sum of squares, computed as Postgres's
//! `numeric_stddev_internal` does so that the digits are the same: the
//! numerator `N * sumX2 - sumX * sumX` exactly at twice the sum's scale,
//! divided by `N * (N - 1)` (or `N * N`) at `select_div_scale`'s scale and
//! rounded half away from zero; the square root rounded at that scale too.
//! Big integers from `num-bigint` (the squares of sums outgrow u128).

use num_bigint::{BigInt, BigUint, Sign};

use super::{leading_group, Decimal};

/// Which of the four aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    /// `var_samp` / `stddev_samp` (divide by N - 1) rather than `_pop`.
    pub sample: bool,
    /// The standard deviation (square root of the variance).
    pub root: bool,
}

impl Spread {
    /// The aggregate of a group with `count` rows (not NULL), whose values
    /// sum to `sum` and their squares to `squares`; `None` is SQL NULL.
    /// Returns the value and its display scale.
    pub fn of(self, count: u64, sum: &Decimal, squares: &Decimal) -> Option<(Decimal, usize)> {
        if count == 0 || (self.sample && count <= 1) {
            return None;
        }
        let (Some(x), Some(x2)) = (exact(sum), exact(squares)) else {
            return Some((Decimal::NaN, 0));
        };
        let scale = sum.scale();
        let n = BigInt::from(count);
        let x = at_scale(x, sum.scale(), scale);
        let x2 = at_scale(x2, squares.scale(), scale * 2);
        let numerator = &n * x2 - &x * &x;
        if numerator.sign() != Sign::Plus {
            // Postgres guards against a negative numerator from round-off.
            return Some((Decimal::finite(false, Vec::new(), 0), 0));
        }
        let numerator = numerator.magnitude().clone();
        let denominator = match self.sample {
            true => BigUint::from(count) * BigUint::from(count - 1),
            false => BigUint::from(count) * BigUint::from(count),
        };
        let rscale = division_scale(&numerator, scale * 2, &denominator);
        let divisor = &denominator * ten(scale * 2);
        let variance = rounded_division(numerator * ten(rscale), &divisor);
        let value = match self.root {
            false => variance,
            true => rounded_sqrt(variance * ten(rscale)),
        };
        Some((
            Decimal::finite(false, value.to_radix_be(10), rscale),
            rscale,
        ))
    }
}

/// A finite decimal's digits as a signed integer (at its own scale).
fn exact(value: &Decimal) -> Option<BigInt> {
    match value {
        Decimal::Finite {
            negative, digits, ..
        } => {
            let magnitude = BigUint::from_radix_be(digits, 10).unwrap_or_default();
            let sign = if *negative { Sign::Minus } else { Sign::Plus };
            Some(BigInt::from_biguint(sign, magnitude))
        }
        _ => None,
    }
}

/// `value` at scale `from` rewritten at scale `to`, rounded half away
/// from zero when `to` is smaller.
fn at_scale(value: BigInt, from: usize, to: usize) -> BigInt {
    if to >= from {
        return value * BigInt::from(ten(to - from));
    }
    let (sign, magnitude) = value.into_parts();
    BigInt::from_biguint(sign, rounded_division(magnitude, &ten(from - to)))
}

fn ten(power: usize) -> BigUint {
    BigUint::from(10u8).pow(power as u32)
}

/// `a / b` rounded half away from zero.
fn rounded_division(a: BigUint, b: &BigUint) -> BigUint {
    let quotient = &a / b;
    let remainder = a - &quotient * b;
    match remainder * 2u8 >= *b {
        true => quotient + 1u8,
        false => quotient,
    }
}

/// The square root of `m`, rounded to the nearest integer (a half never
/// occurs: `(s + 1/2)^2` is not an integer).
fn rounded_sqrt(m: BigUint) -> BigUint {
    let s = m.sqrt();
    let twice = &s * 2u8 + 1u8;
    match m * 4u8 >= &twice * &twice {
        true => s + 1u8,
        false => s,
    }
}

/// `select_div_scale` for `numerator` (at `scale`) over an integer: at
/// least 16 significant digits, never below the numerator's scale.
fn division_scale(numerator: &BigUint, scale: usize, denominator: &BigUint) -> usize {
    let (weight1, first1) = leading_group(&numerator.to_radix_be(10), scale);
    let (weight2, first2) = leading_group(&denominator.to_radix_be(10), 0);
    let mut qweight = weight1 - weight2;
    if first1 <= first2 {
        qweight -= 1;
    }
    (16 - qweight * 4).max(scale as i64).clamp(0, 1000) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::from_text(s.as_bytes()).unwrap()
    }

    /// Sum, squares and the four aggregates over `values`, as text.
    fn all(values: &[&str]) -> [Option<String>; 4] {
        let scale = values.iter().map(|v| dec(v).scale()).max().unwrap_or(0);
        let mut sum = dec("0");
        let mut squares = dec("0");
        for v in values {
            let (x, s) = (exact(&dec(v)).unwrap(), dec(v).scale());
            let x = at_scale(x, s, scale);
            sum = sum.add(&Decimal::from_text(format_at(&x, scale).as_bytes()).unwrap());
            let sq = &x * &x;
            squares =
                squares.add(&Decimal::from_text(format_at(&sq, scale * 2).as_bytes()).unwrap());
        }
        let count = values.len() as u64;
        [(true, true), (true, false), (false, true), (false, false)].map(|(sample, root)| {
            Spread { sample, root }
                .of(count, &sum, &squares)
                .map(|(value, scale)| value.to_text(scale))
        })
    }

    fn format_at(value: &BigInt, scale: usize) -> String {
        let (sign, digits) = value.to_radix_be(10);
        let mut text: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
        while text.len() <= scale {
            text.insert(0, '0');
        }
        if scale > 0 {
            text.insert(text.len() - scale, '.');
        }
        match sign {
            Sign::Minus => format!("-{text}"),
            _ => text,
        }
    }

    /// Every expected value was read from Postgres 15 (`stddev`, `variance`,
    /// `stddev_pop`, `var_pop` over the same values).
    #[test]
    fn spreads_match_postgres() {
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(
            all(&["1", "2", "4"]),
            [
                s("1.5275252316519467"),
                s("2.3333333333333333"),
                s("1.2472191289246471"),
                s("1.5555555555555556")
            ]
        );
        assert_eq!(
            all(&["653.15", "644.78"]),
            [
                s("5.9184837585314028"),
                s("35.0284500000000000"),
                s("4.1850000000000000"),
                s("17.5142250000000000")
            ]
        );
        assert_eq!(
            all(&["863", "39", "-561", "-924", "-824", "-112"]),
            [
                s("666.595354519267"),
                s("444349.366666666667"),
                s("608.515520663926"),
                s("370291.138888888889")
            ]
        );
        assert_eq!(all(&["5"]), [None, None, s("0"), s("0")]);
        assert_eq!(all(&["7", "7"]), [s("0"), s("0"), s("0"), s("0")]);
        assert_eq!(all(&[]), [None, None, None, None]);
    }

    #[test]
    fn special_values_give_nan() {
        let spread = Spread {
            sample: true,
            root: true,
        };
        let (value, _) = spread.of(3, &Decimal::Infinity, &dec("1")).unwrap();
        assert_eq!(value, Decimal::NaN);
    }
}
