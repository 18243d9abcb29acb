//! The values of one text's literals, packed into one small buffer: a
//! routed statement's few short key values (an id or two) are kept without
//! allocating, where a `Vec<String>` made one allocation per value and one
//! for the list on every lookup. The struct stays small (it is moved with
//! every cache lookup).

use std::fmt;

use smallvec::SmallVec;

/// Literal values in text order, each as the router reads it (text
/// format, UTF-8; a negated number keeps its `-`). Each value is stored
/// after its length (LEB128: one byte under 128).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Literals {
    packed: SmallVec<[u8; 24]>,
}

impl Literals {
    /// Append `value`, with a leading `-` when `negate`.
    pub fn push(&mut self, value: &str, negate: bool) {
        let mut len = value.len() + usize::from(negate);
        while len >= 0x80 {
            self.packed.push(0x80 | (len & 0x7f) as u8);
            len >>= 7;
        }
        self.packed.push(len as u8);
        if negate {
            self.packed.push(b'-');
        }
        self.packed.extend_from_slice(value.as_bytes());
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// The values, in text order.
    pub fn iter(&self) -> Values<'_> {
        Values { rest: &self.packed }
    }

    /// Bytes kept beyond the struct itself (for the cache's size estimate).
    pub fn heap_bytes(&self) -> usize {
        if self.packed.spilled() {
            self.packed.capacity()
        } else {
            0
        }
    }
}

/// The values of [`Literals`], in order.
pub struct Values<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Values<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (mut len, mut shift) = (0usize, 0);
        loop {
            let (&byte, rest) = self.rest.split_first()?;
            self.rest = rest;
            len |= usize::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                break;
            }
        }
        let (value, rest) = self.rest.split_at_checked(len)?;
        self.rest = rest;
        Some(value)
    }
}

impl fmt::Debug for Literals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

/// For tests and callers comparing with expected values.
impl<const N: usize> PartialEq<[&str; N]> for Literals {
    fn eq(&self, other: &[&str; N]) -> bool {
        self.len() == N && self.iter().zip(other).all(|(a, b)| a == b.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_in_order_with_their_sign() {
        let mut literals = Literals::default();
        assert!(literals.is_empty());
        literals.push("42", false);
        literals.push("7", true);
        literals.push("", false);
        literals.push("a'b", false);
        assert_eq!(literals.len(), 4);
        let values: Vec<&[u8]> = literals.iter().collect();
        assert_eq!(values, [&b"42"[..], b"-7", b"", b"a'b"]);
        assert_eq!(literals, ["42", "-7", "", "a'b"]);
        assert_ne!(literals, ["42", "-7", ""]);
        assert_eq!(format!("{literals:?}"), r#"["42", "-7", "", "a'b"]"#);
        assert_eq!(literals.heap_bytes(), 0);
    }

    #[test]
    fn long_values_spill_and_stay_whole() {
        let mut literals = Literals::default();
        // Lengths around the one- and two-byte length prefixes.
        let values: Vec<String> = [0, 1, 127, 128, 129, 300, 20_000]
            .iter()
            .map(|&n| "x".repeat(n))
            .collect();
        for value in &values {
            literals.push(value, false);
        }
        literals.push(&values[3], true);
        assert_eq!(literals.len(), values.len() + 1);
        let read: Vec<&[u8]> = literals.iter().collect();
        for (value, read) in values.iter().zip(&read) {
            assert_eq!(value.as_bytes(), *read);
        }
        assert_eq!(read[values.len()], format!("-{}", values[3]).as_bytes());
        assert!(literals.heap_bytes() >= 20_000);
    }
}
