//! Column values of the shards' rows as the cross-shard merge reads them:
//! ordered and compared as Postgres orders them, per type and wire format,
//! and partial aggregates combined in the result type. A type pgshard cannot
//! compare exactly is an error, never a guess.
//!
//! Text ordering is byte order, which is Postgres's only under a C-like
//! collation (`C`, `POSIX`, `C.UTF-8`, `ucs_basic`): the caller says whether
//! the shards' collation is one ([`Kind::of`]'s `bytewise_text`).

use std::cmp::Ordering;

pub mod arrays;
pub mod numeric;

#[cfg(test)]
mod fuzz_tests;

use numeric::Decimal;

use crate::protocol::binary;

/// How a column's values are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// int2, int4, int8, oid.
    Integer,
    Float,
    Numeric,
    Bool,
    /// text, varchar, name, and uuid (whose text is canonical lower-case
    /// hex): byte order.
    Bytes,
    /// bpchar: byte order with trailing spaces ignored.
    Padded,
    Date,
    Timestamp,
    TimestampTz,
    Time,
}

/// Why a value cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("cannot merge a column of type oid {0} across shards: cast it to text, a number or a date/time type, or add the sharding key to the WHERE clause")]
    Type(u32),
    #[error("cannot order text across shards under the database's collation: only C-like collations (C, POSIX, C.UTF-8) sort in byte order; add COLLATE \"C\" to the ORDER BY, or the sharding key to the WHERE clause")]
    Collation,
    #[error("cannot read a {0} value a shard sent (binary format, or a DateStyle other than ISO)")]
    Unreadable(&'static str),
    #[error("{0} out of range")]
    OutOfRange(&'static str),
    #[error("the cross-shard merge would hold more than {0} bytes of groups (cross_shard_merge_memory): order by the group keys (or not at all) so groups stream, add a LIMIT (LIMIT + OFFSET at most 10000 keeps only the best groups), name the columns instead of *, add the sharding key to the WHERE clause, or raise cross_shard_merge_memory")]
    Memory(u64),
}

impl Kind {
    /// The kind of type `oid`, if the merge can compare it.
    pub fn of(oid: u32, bytewise_text: bool) -> Result<Kind, ValueError> {
        Ok(match oid {
            20 | 21 | 23 | 26 => Kind::Integer,
            700 | 701 => Kind::Float,
            1700 => Kind::Numeric,
            16 => Kind::Bool,
            2950 => Kind::Bytes,
            25 | 1043 | 19 if bytewise_text => Kind::Bytes,
            1042 if bytewise_text => Kind::Padded,
            25 | 1043 | 19 | 1042 => return Err(ValueError::Collation),
            1082 => Kind::Date,
            1114 => Kind::Timestamp,
            1184 => Kind::TimestampTz,
            1083 => Kind::Time,
            _ => return Err(ValueError::Type(oid)),
        })
    }
}

/// Compare two non-NULL values of `kind` in wire format `binary`.
pub fn compare(kind: Kind, binary: bool, a: &[u8], b: &[u8]) -> Result<Ordering, ValueError> {
    Ok(match kind {
        Kind::Integer => integer(a, binary)?.cmp(&integer(b, binary)?),
        Kind::Float => float_order(float(a, binary)?, float(b, binary)?),
        Kind::Numeric => Decimal::read(a, binary)?.cmp(&Decimal::read(b, binary)?),
        Kind::Bool => boolean(a, binary)?.cmp(&boolean(b, binary)?),
        Kind::Bytes => a.cmp(b),
        Kind::Padded => trim_spaces(a).cmp(trim_spaces(b)),
        Kind::Date | Kind::Timestamp | Kind::TimestampTz | Kind::Time => {
            instant(kind, a, binary)?.cmp(&instant(kind, b, binary)?)
        }
    })
}

/// Compare a value of `kind` with one of another wire format or a
/// literal's text (`b` in text when `b_binary` is false), as Postgres
/// compares a number column with a numeric literal: integers and numerics
/// as exact decimals.
pub fn compare_mixed(
    kind: Kind,
    (a, a_binary): (&[u8], bool),
    (b, b_binary): (&[u8], bool),
) -> Result<Ordering, ValueError> {
    let decimal = |value: &[u8], binary: bool| -> Result<Decimal, ValueError> {
        match (kind, binary) {
            (Kind::Integer, true) => {
                Decimal::from_text(integer(value, true)?.to_string().as_bytes())
            }
            (Kind::Integer | Kind::Numeric, _) => Decimal::read(value, binary),
            _ => Err(ValueError::Unreadable("number")),
        }
    };
    Ok(match kind {
        Kind::Integer | Kind::Numeric => decimal(a, a_binary)?.cmp(&decimal(b, b_binary)?),
        Kind::Float => float_order(float(a, a_binary)?, float(b, b_binary)?),
        Kind::Bool => boolean(a, a_binary)?.cmp(&boolean(b, b_binary)?),
        Kind::Bytes => a.cmp(b),
        Kind::Padded => trim_spaces(a).cmp(trim_spaces(b)),
        Kind::Date | Kind::Timestamp | Kind::TimestampTz | Kind::Time => {
            instant(kind, a, a_binary)?.cmp(&instant(kind, b, b_binary)?)
        }
    })
}

/// Bytes equal exactly when the values are equal (a group key).
pub fn canonical(
    kind: Kind,
    binary: bool,
    value: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ValueError> {
    match kind {
        Kind::Float => {
            let f = float(value, binary)?;
            let f = if f == 0.0 {
                0.0
            } else if f.is_nan() {
                f64::NAN
            } else {
                f
            };
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        Kind::Numeric => {
            out.extend_from_slice(Decimal::read(value, binary)?.canonical().as_bytes())
        }
        Kind::Padded => out.extend_from_slice(trim_spaces(value)),
        _ => out.extend_from_slice(value),
    }
    Ok(())
}

/// A group key's bytes for a type the merge cannot order (grouping needs
/// equality only): the value as the shard sent it, when its type has one
/// text per value. Types whose equal values may print differently are
/// refused.
pub fn canonical_any(oid: u32, value: &[u8], out: &mut Vec<u8>) -> Result<(), ValueError> {
    match oid {
        // Text-like types compare equal exactly when their bytes do under
        // any deterministic collation.
        25 | 1043 | 19 => out.extend_from_slice(value),
        1042 => out.extend_from_slice(trim_spaces(value)),
        _ => return Err(ValueError::Type(oid)),
    }
    Ok(())
}

pub fn integer(value: &[u8], binary: bool) -> Result<i64, ValueError> {
    let read = if binary {
        binary::integer(value)
    } else {
        std::str::from_utf8(value).ok().and_then(|s| s.parse().ok())
    };
    read.ok_or(ValueError::Unreadable("integer"))
}

fn float(value: &[u8], binary: bool) -> Result<f64, ValueError> {
    let read = if binary {
        binary::float(value)
    } else {
        std::str::from_utf8(value).ok().and_then(|s| s.parse().ok())
    };
    read.ok_or(ValueError::Unreadable("float"))
}

/// Postgres's float order: NaN above everything and equal to itself.
fn float_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

pub fn boolean(value: &[u8], binary: bool) -> Result<bool, ValueError> {
    match (binary, value) {
        (true, [b]) => Ok(*b != 0),
        (false, b"t") => Ok(true),
        (false, b"f") => Ok(false),
        _ => Err(ValueError::Unreadable("boolean")),
    }
}

fn trim_spaces(value: &[u8]) -> &[u8] {
    let end = value.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    &value[..end]
}

/// A date (days), timestamp or time (microseconds) as one ordered number;
/// text in DateStyle ISO, the default. Infinities sort outside every value.
fn instant(kind: Kind, value: &[u8], binary: bool) -> Result<i128, ValueError> {
    let unreadable = ValueError::Unreadable("date/time");
    if binary {
        return binary::instant(value, kind == Kind::Date).ok_or(unreadable);
    }
    let text = std::str::from_utf8(value).map_err(|_| unreadable.clone())?;
    match text {
        "infinity" => return Ok(i128::MAX),
        "-infinity" => return Ok(i128::MIN),
        _ => {}
    }
    let parsed = match kind {
        Kind::Time => time_of_day(text),
        _ => date_time(kind, text),
    };
    parsed.ok_or(unreadable)
}

/// `HH:MM:SS[.ffffff]` in microseconds.
fn time_of_day(text: &str) -> Option<i128> {
    let (clock, fraction) = text.split_once('.').unwrap_or((text, ""));
    let mut parts = clock.split(':').map(field);
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() || fraction.len() > 6 || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let micros = format!("{fraction:0<6}").parse::<i128>().ok()?;
    Some(((h * 60 + m) * 60 + s) * 1_000_000 + micros)
}

/// `YYYY-MM-DD[ HH:MM:SS[.ffffff][+HH[:MM[:SS]]]][ BC]`: days for a date,
/// microseconds since 2000-01-01 (UTC for timestamptz) otherwise.
fn date_time(kind: Kind, text: &str) -> Option<i128> {
    let (text, bc) = match text.strip_suffix(" BC") {
        Some(rest) => (rest, true),
        None => (text, false),
    };
    let (date, rest) = text.split_once(' ').unwrap_or((text, ""));
    let mut parts = date.splitn(3, '-');
    let year = field(parts.next()?)?;
    let (month, day) = (field(parts.next()?)?, field(parts.next()?)?);
    let year = if bc { 1 - year } else { year };
    let days = days_from_civil(year, month, day);
    if kind == Kind::Date {
        return rest.is_empty().then_some(days);
    }
    let (clock, offset) = match kind {
        Kind::TimestampTz => {
            let at = rest.rfind(['+', '-'])?;
            (&rest[..at], zone_offset(&rest[at..])?)
        }
        _ => (rest, 0),
    };
    Some(days * 86_400_000_000 + time_of_day(clock)? - offset * 1_000_000)
}

/// `+HH[:MM[:SS]]` in seconds.
fn zone_offset(text: &str) -> Option<i128> {
    let sign = if text.starts_with('-') { -1 } else { 1 };
    let mut seconds = 0;
    let mut unit = 3600;
    for part in text.get(1..)?.split(':') {
        seconds += field(part)? * unit;
        unit /= 60;
    }
    Some(sign * seconds)
}

/// One number of a date, time or zone: at most 32 bits, as Postgres's
/// own fields are, so that the arithmetic on it cannot overflow.
fn field(text: &str) -> Option<i128> {
    text.parse::<i32>().ok().map(i128::from)
}

/// Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm); only the order matters here.
fn days_from_civil(year: i128, month: i128, day: i128) -> i128 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(kind: Kind, a: &str, b: &str) -> Ordering {
        compare(kind, false, a.as_bytes(), b.as_bytes()).unwrap()
    }

    #[test]
    fn text_orders_follow_postgres() {
        use Ordering::*;
        for (kind, a, b, expected) in [
            (Kind::Integer, "-5", "3", Less),
            (Kind::Integer, "10", "9", Greater),
            (Kind::Float, "NaN", "Infinity", Greater),
            (Kind::Float, "-0", "0", Equal),
            (Kind::Float, "1.5e+20", "2", Greater),
            (Kind::Numeric, "10.50", "10.5", Equal),
            (Kind::Numeric, "-2", "-10", Greater),
            (Kind::Numeric, "NaN", "1000000000", Greater),
            (Kind::Bool, "f", "t", Less),
            (Kind::Padded, "ab  ", "ab", Equal),
            (Kind::Date, "1999-12-31", "2000-01-01", Less),
            (Kind::Date, "0044-03-15 BC", "0001-01-01", Less),
            (Kind::Date, "infinity", "9999-01-01", Greater),
            (
                Kind::Timestamp,
                "2024-01-01 00:00:00.5",
                "2024-01-01 00:00:00.25",
                Greater,
            ),
            // Fall-back hour: the later instant prints the earlier clock.
            (
                Kind::TimestampTz,
                "2024-11-03 01:30:00-07",
                "2024-11-03 01:10:00-08",
                Less,
            ),
            (
                Kind::TimestampTz,
                "2024-01-01 05:30:00+05:30",
                "2024-01-01 00:00:00+00",
                Equal,
            ),
            (Kind::Time, "09:00:00", "10:00:00.000001", Less),
        ] {
            assert_eq!(order(kind, a, b), expected, "{kind:?} {a} {b}");
        }
    }

    #[test]
    fn types_that_do_not_compare_are_refused() {
        assert_eq!(Kind::of(25, false), Err(ValueError::Collation));
        assert_eq!(Kind::of(25, true), Ok(Kind::Bytes));
        assert_eq!(Kind::of(3802, true), Err(ValueError::Type(3802)));
        assert!(compare(Kind::Date, false, b"12/31/1999", b"2000-01-01").is_err());
    }
}
