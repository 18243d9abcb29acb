//! One-dimensional arrays in Postgres's text (`array_out`) and binary
//! (`array_send`) forms, for the merge of `array_agg` / `string_agg`: read
//! into their elements (each in the element type's own text or binary
//! form, NULL as `None`) and written back as Postgres writes them.

use super::ValueError;
use crate::protocol::binary;

const UNREADABLE: ValueError = ValueError::Unreadable("array");

/// An array's elements, in the form (text or binary) it was read in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Array {
    pub elements: Vec<Option<Vec<u8>>>,
}

/// The element type of a built-in array type (`None`: not one the merge
/// reads, e.g. `box[]`, whose text form is `;`-separated).
pub fn element_type(array_oid: u32) -> Option<u32> {
    Some(match array_oid {
        1000 => 16,   // bool
        1001 => 17,   // bytea
        1002 => 18,   // char
        1003 => 19,   // name
        1005 => 21,   // int2
        1007 => 23,   // int4
        1009 => 25,   // text
        1014 => 1042, // bpchar
        1015 => 1043, // varchar
        1016 => 20,   // int8
        1021 => 700,  // float4
        1022 => 701,  // float8
        1028 => 26,   // oid
        1115 => 1114, // timestamp
        1182 => 1082, // date
        1183 => 1083, // time
        1185 => 1184, // timestamptz
        1231 => 1700, // numeric
        2951 => 2950, // uuid
        199 => 114,   // json
        3807 => 3802, // jsonb
        _ => return None,
    })
}

impl Array {
    pub fn read(value: &[u8], binary: bool) -> Result<Array, ValueError> {
        match binary {
            true => Array::from_binary(value),
            false => Array::from_text(value),
        }
    }

    pub fn write(&self, binary: bool, element_oid: u32) -> Vec<u8> {
        match binary {
            true => self.to_binary(element_oid),
            false => self.to_text(),
        }
    }

    /// `{a,"b c",NULL}`: one dimension, lower bound 1 (as `array_agg`
    /// makes them); anything else is refused.
    fn from_text(text: &[u8]) -> Result<Array, ValueError> {
        let inner = text
            .strip_prefix(b"{")
            .and_then(|t| t.strip_suffix(b"}"))
            .ok_or(UNREADABLE)?;
        let mut elements = Vec::new();
        if inner.is_empty() {
            return Ok(Array { elements });
        }
        let mut at = 0;
        loop {
            let (element, next) = text_element(inner, at)?;
            elements.push(element);
            match inner.get(next) {
                None => return Ok(Array { elements }),
                Some(b',') => at = next + 1,
                Some(_) => return Err(UNREADABLE),
            }
        }
    }

    fn to_text(&self) -> Vec<u8> {
        let mut out = vec![b'{'];
        for (i, element) in self.elements.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match element {
                None => out.extend_from_slice(b"NULL"),
                Some(value) if needs_quotes(value) => {
                    out.push(b'"');
                    for &b in value {
                        if b == b'"' || b == b'\\' {
                            out.push(b'\\');
                        }
                        out.push(b);
                    }
                    out.push(b'"');
                }
                Some(value) => out.extend_from_slice(value),
            }
        }
        out.push(b'}');
        out
    }

    /// `array_send`: ndim, has-nulls, element oid, (size, lower bound) per
    /// dimension, then each element as length (-1: NULL) and bytes.
    fn from_binary(value: &[u8]) -> Result<Array, ValueError> {
        let word = |at: usize| binary::int4_at(value, at).ok_or(UNREADABLE);
        let dimensions = word(0)?;
        if dimensions == 0 {
            return Ok(Array::default());
        }
        if dimensions != 1 {
            return Err(UNREADABLE);
        }
        let count = usize::try_from(word(12)?).map_err(|_| UNREADABLE)?;
        let mut at = 20;
        let mut elements = Vec::with_capacity(count.min(value.len() / 4));
        for _ in 0..count {
            let length = word(at)?;
            at += 4;
            match usize::try_from(length) {
                Err(_) => elements.push(None),
                Ok(length) => {
                    let bytes = value.get(at..at + length).ok_or(UNREADABLE)?;
                    elements.push(Some(bytes.to_vec()));
                    at += length;
                }
            }
        }
        Ok(Array { elements })
    }

    fn to_binary(&self, element_oid: u32) -> Vec<u8> {
        let nulls = self.elements.iter().any(Option::is_none);
        let mut out = Vec::new();
        let put = |v: i32, out: &mut Vec<u8>| out.extend_from_slice(&v.to_be_bytes());
        if self.elements.is_empty() {
            put(0, &mut out);
            put(0, &mut out);
            out.extend_from_slice(&element_oid.to_be_bytes());
            return out;
        }
        put(1, &mut out);
        put(i32::from(nulls), &mut out);
        out.extend_from_slice(&element_oid.to_be_bytes());
        put(self.elements.len() as i32, &mut out);
        put(1, &mut out);
        for element in &self.elements {
            match element {
                None => put(-1, &mut out),
                Some(value) => {
                    put(value.len() as i32, &mut out);
                    out.extend_from_slice(value);
                }
            }
        }
        out
    }
}

/// The element starting at `at` and where it ends. A nested `{` (a
/// multi-dimensional array) is refused.
fn text_element(inner: &[u8], at: usize) -> Result<(Option<Vec<u8>>, usize), ValueError> {
    let mut value = Vec::new();
    let mut i = at;
    if inner.get(i) == Some(&b'"') {
        i += 1;
        loop {
            match inner.get(i) {
                None => return Err(UNREADABLE),
                Some(b'"') => return Ok((Some(value), i + 1)),
                Some(b'\\') => {
                    value.push(*inner.get(i + 1).ok_or(UNREADABLE)?);
                    i += 2;
                }
                Some(&b) => {
                    value.push(b);
                    i += 1;
                }
            }
        }
    }
    while let Some(&b) = inner.get(i) {
        match b {
            b',' => break,
            b'{' | b'}' | b'"' => return Err(UNREADABLE),
            b'\\' => {
                value.push(*inner.get(i + 1).ok_or(UNREADABLE)?);
                i += 2;
                continue;
            }
            _ => value.push(b),
        }
        i += 1;
    }
    if value.eq_ignore_ascii_case(b"NULL") {
        return Ok((None, i));
    }
    Ok((Some(value), i))
}

/// `array_out`'s rule: quote empty strings, `NULL`, and values holding a
/// delimiter, brace, quote, backslash or white space.
fn needs_quotes(value: &[u8]) -> bool {
    value.is_empty()
        || value.eq_ignore_ascii_case(b"NULL")
        || value.iter().any(|&b| {
            matches!(
                b,
                b'{' | b'}' | b',' | b'"' | b'\\' | b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(elements: &[Option<&str>]) -> Array {
        Array {
            elements: elements
                .iter()
                .map(|e| e.map(|s| s.as_bytes().to_vec()))
                .collect(),
        }
    }

    /// Each text form here is what Postgres 15's `array_out` writes for it.
    #[test]
    fn text_forms_round_trip_as_postgres_writes_them() {
        for (form, elements) in [
            ("{1,2,3}", text(&[Some("1"), Some("2"), Some("3")])),
            (
                r#"{a,"b c","",NULL,"NULL","x\"y","back\\slash","{}",é}"#,
                text(&[
                    Some("a"),
                    Some("b c"),
                    Some(""),
                    None,
                    Some("NULL"),
                    Some("x\"y"),
                    Some("back\\slash"),
                    Some("{}"),
                    Some("é"),
                ]),
            ),
            ("{}", text(&[])),
        ] {
            assert_eq!(Array::read(form.as_bytes(), false).unwrap(), elements);
            assert_eq!(elements.write(false, 25), form.as_bytes());
        }
        for bad in ["{{1,2},{3,4}}", "[0:1]={1,2}", "{1,2", "{\"a}"] {
            assert!(Array::read(bad.as_bytes(), false).is_err(), "{bad}");
        }
    }

    #[test]
    fn binary_forms_round_trip() {
        let array = Array {
            elements: vec![Some(vec![0, 0, 0, 7]), None, Some(vec![0, 0, 0, 9])],
        };
        let bytes = array.write(true, 23);
        assert_eq!(&bytes[..12], &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23]);
        assert_eq!(Array::read(&bytes, true).unwrap(), array);
        assert!(Array::read(&bytes[..bytes.len() - 1], true).is_err());
        let huge = [
            0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1,
        ];
        assert!(Array::read(&huge, true).is_err());
    }
}
