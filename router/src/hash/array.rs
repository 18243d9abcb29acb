//! Arrays of keys (`= ANY($1)`, `IN` lists sent as one array): Postgres's
//! array text form (`array_in`) and binary form (`array_send`), flattened to
//! the keys they hold, NULLs skipped.

use super::{decode_binary, is_pg_space, parse_text, shown, sql_name, BinaryArrayError, KeyError};
use crate::sharding::{DataType, Key};

/// Arrays have at most this many dimensions (Postgres `MAXDIM`).
const MAX_DIMS: usize = 6;

/// Keys from an array's text form (`{1,2,3}`); NULL elements are skipped.
/// Multi-dimensional arrays (`{{1,2},{3,4}}`) are flattened; a dimension
/// decoration (`[0:2]={...}`) is accepted when it matches the elements.
pub fn parse_text_array(data_type: DataType, text: &str) -> Result<Vec<Key>, KeyError> {
    let mut reader = ArrayText {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        data_type,
        lengths: [None; MAX_DIMS + 1],
        leaf_depth: None,
        keys: Vec::new(),
    };
    reader.skip_space();
    let declared = if reader.peek() == Some(b'[') {
        Some(reader.read_dimensions()?)
    } else {
        None
    };
    if reader.peek() != Some(b'{') {
        return Err(reader.malformed("array value must start with \"{\" or dimension information"));
    }
    reader.pos += 1;
    reader.read_list(1)?;
    reader.skip_space();
    if reader.pos != reader.bytes.len() {
        return Err(reader.malformed("junk after closing right brace"));
    }
    if let (Some(declared), Some(ndim)) = (declared, reader.leaf_depth) {
        let matches = declared.len() == ndim
            && declared.iter().enumerate().all(|(i, (lower, upper))| {
                let length = reader.lengths[i + 1].and_then(|n| i64::try_from(n).ok());
                upper.checked_sub(*lower).and_then(|d| d.checked_add(1)) == length
            });
        if !matches {
            return Err(reader.malformed("array dimensions do not match array contents"));
        }
    }
    Ok(reader.keys)
}

/// A cursor over an array's text form, with what it has learnt of its shape.
struct ArrayText<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    data_type: DataType,
    /// `lengths[d]`: the number of items every list at depth `d` holds.
    lengths: [Option<usize>; MAX_DIMS + 1],
    /// The depth of the lists that hold elements (the number of dimensions).
    leaf_depth: Option<usize>,
    keys: Vec<Key>,
}

impl ArrayText<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(is_pg_space) {
            self.pos += 1;
        }
    }

    fn malformed(&self, detail: &'static str) -> KeyError {
        KeyError::MalformedArray {
            text: shown(self.text),
            detail,
        }
    }

    /// `[lower:upper]` or `[upper]` per dimension, then `=`.
    fn read_dimensions(&mut self) -> Result<Vec<(i64, i64)>, KeyError> {
        let mut dims = Vec::new();
        while self.peek() == Some(b'[') {
            if dims.len() == MAX_DIMS {
                return Err(self.malformed("more than 6 dimensions"));
            }
            self.pos += 1;
            self.skip_space();
            let first = self.read_bound()?;
            self.skip_space();
            let bounds = if self.peek() == Some(b':') {
                self.pos += 1;
                self.skip_space();
                let upper = self.read_bound()?;
                self.skip_space();
                (first, upper)
            } else {
                (1, first)
            };
            if self.peek() != Some(b']') {
                return Err(self.malformed("missing \"]\" in array dimensions"));
            }
            self.pos += 1;
            self.skip_space();
            dims.push(bounds);
        }
        if self.peek() != Some(b'=') {
            return Err(self.malformed("missing assignment operator"));
        }
        self.pos += 1;
        self.skip_space();
        Ok(dims)
    }

    fn read_bound(&mut self) -> Result<i64, KeyError> {
        let start = self.pos;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        self.text
            .get(start..self.pos)
            .and_then(|digits| digits.parse::<i32>().ok())
            .map(i64::from)
            .ok_or_else(|| self.malformed("invalid array dimensions"))
    }

    /// The items of one `{...}` list, after its opening brace, through its
    /// closing brace. Items are all elements or all sub-lists, and every list
    /// at one depth has as many items as the others.
    fn read_list(&mut self, depth: usize) -> Result<(), KeyError> {
        if depth > MAX_DIMS {
            return Err(self.malformed("more than 6 dimensions"));
        }
        self.skip_space();
        if self.peek() == Some(b'}') {
            if depth > 1 {
                return Err(self.malformed("empty sub-array"));
            }
            self.pos += 1;
            return Ok(());
        }
        let mut count = 0;
        let mut holds_lists = None;
        loop {
            self.skip_space();
            let is_list = self.peek() == Some(b'{');
            if holds_lists.is_some_and(|lists| lists != is_list) {
                return Err(self.malformed("mixed elements and sub-arrays"));
            }
            holds_lists = Some(is_list);
            if is_list {
                self.pos += 1;
                self.read_list(depth + 1)?;
            } else {
                if self.leaf_depth.is_some_and(|leaf| leaf != depth) {
                    return Err(self.malformed("sub-arrays must have matching dimensions"));
                }
                self.leaf_depth = Some(depth);
                if let Some(element) = self.read_element()? {
                    let key = parse_text(self.data_type, &element)?;
                    self.keys.push(key);
                }
            }
            count += 1;
            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => return Err(self.malformed("unexpected array element")),
                None => return Err(self.malformed("unexpected end of input")),
            }
        }
        match self.lengths[depth] {
            Some(length) if length != count => {
                Err(self.malformed("sub-arrays must have matching dimensions"))
            }
            _ => {
                self.lengths[depth] = Some(count);
                Ok(())
            }
        }
    }

    /// One element, up to (not including) the `,` or `}` after it; `None`
    /// for an unquoted `NULL`. An element is either one double-quoted string
    /// or unquoted text in which a backslash quotes the next character and
    /// unquoted whitespace at the end is dropped.
    fn read_element(&mut self) -> Result<Option<String>, KeyError> {
        let mut out = Vec::new();
        if self.peek() == Some(b'"') {
            self.pos += 1;
            loop {
                match self.peek() {
                    None => return Err(self.malformed("unexpected end of input")),
                    Some(b'"') => break,
                    Some(b'\\') => {
                        self.pos += 1;
                        let escaped = self
                            .peek()
                            .ok_or_else(|| self.malformed("unexpected end of input"))?;
                        out.push(escaped);
                    }
                    Some(byte) => out.push(byte),
                }
                self.pos += 1;
            }
            self.pos += 1;
            return self.element_text(out).map(Some);
        }
        let mut escaped = false;
        let mut keep = 0;
        loop {
            match self.peek() {
                None => return Err(self.malformed("unexpected end of input")),
                Some(b',' | b'}') => break,
                Some(b'"') => return Err(self.malformed("unexpected \"\"\" character")),
                Some(b'{') => return Err(self.malformed("unexpected \"{\" character")),
                Some(b'\\') => {
                    self.pos += 1;
                    let byte = self
                        .peek()
                        .ok_or_else(|| self.malformed("unexpected end of input"))?;
                    out.push(byte);
                    escaped = true;
                    keep = out.len();
                }
                Some(byte) => {
                    out.push(byte);
                    if !is_pg_space(byte) {
                        keep = out.len();
                    }
                }
            }
            self.pos += 1;
        }
        out.truncate(keep);
        if !escaped {
            if out.is_empty() {
                return Err(self.malformed("empty element"));
            }
            if out.eq_ignore_ascii_case(b"NULL") {
                return Ok(None);
            }
        }
        self.element_text(out).map(Some)
    }

    /// Only ASCII quoting bytes were dropped from valid UTF-8, so this holds.
    fn element_text(&self, bytes: Vec<u8>) -> Result<String, KeyError> {
        String::from_utf8(bytes).map_err(|_| self.malformed("invalid UTF-8"))
    }
}

/// Keys from an array's binary form; NULL elements are skipped.
/// Multi-dimensional arrays are flattened.
pub fn decode_binary_array(data_type: DataType, bytes: &[u8]) -> Result<Vec<Key>, KeyError> {
    let mut reader = ArrayBinary { bytes, pos: 0 };
    let ndim = reader.i32()?;
    let flags = reader.i32()?;
    let element_oid = reader.i32()? as u32;
    let ndim = usize::try_from(ndim)
        .ok()
        .filter(|&n| n <= MAX_DIMS)
        .ok_or(BinaryArrayError::Dimensions(ndim))?;
    if flags != 0 && flags != 1 {
        return Err(BinaryArrayError::Flags(flags).into());
    }
    let element_size = element_size(data_type, element_oid)?;
    let mut count: usize = usize::from(ndim > 0);
    for _ in 0..ndim {
        let length = reader.i32()?;
        let _lower_bound = reader.i32()?;
        let length =
            usize::try_from(length).map_err(|_| BinaryArrayError::NegativeDimension(length))?;
        count = count
            .checked_mul(length)
            .ok_or(BinaryArrayError::TooLarge)?;
    }
    // Each element takes at least its 4-byte length: never reserve more than
    // the message could hold.
    let mut keys = Vec::with_capacity(count.min(reader.remaining() / 4));
    for _ in 0..count {
        let length = reader.i32()?;
        if length == -1 {
            continue;
        }
        let length =
            usize::try_from(length).map_err(|_| BinaryArrayError::ElementLength(length))?;
        let element = reader.take(length)?;
        if element_size.is_some_and(|size| size != element.len()) {
            return Err(BinaryArrayError::ElementSize {
                oid: element_oid,
                len: element.len(),
            }
            .into());
        }
        keys.push(decode_binary(data_type, element)?);
    }
    if reader.remaining() != 0 {
        return Err(BinaryArrayError::Trailing.into());
    }
    Ok(keys)
}

/// Postgres type oids an array of keys of `data_type` may carry, and their
/// fixed element size. Postgres itself refuses an array whose element oid is
/// not the parameter's element type, so the oid says how to read elements;
/// 0 (not stated) is allowed and elements are then read by their length.
fn element_size(data_type: DataType, oid: u32) -> Result<Option<usize>, KeyError> {
    const INT8: u32 = 20;
    const INT2: u32 = 21;
    const INT4: u32 = 23;
    const NAME: u32 = 19;
    const TEXT: u32 = 25;
    const UNKNOWN: u32 = 705;
    const VARCHAR: u32 = 1043;
    const UUID: u32 = 2950;
    let size = match (data_type, oid) {
        (_, 0) => None,
        (DataType::BigInt | DataType::Integer | DataType::SmallInt, INT8) => Some(8),
        (DataType::BigInt | DataType::Integer | DataType::SmallInt, INT4) => Some(4),
        (DataType::BigInt | DataType::Integer | DataType::SmallInt, INT2) => Some(2),
        (DataType::Text | DataType::Varchar, NAME | TEXT | UNKNOWN | VARCHAR) => None,
        (DataType::Uuid, UUID) => Some(16),
        _ => {
            return Err(KeyError::ArrayElementType {
                oid,
                type_name: sql_name(data_type),
            })
        }
    };
    Ok(size)
}

/// A cursor over an array's binary form (`array_send`'s layout).
struct ArrayBinary<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> ArrayBinary<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], KeyError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(BinaryArrayError::Truncated)?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn i32(&mut self) -> Result<i32, KeyError> {
        match *self.take(4)? {
            [a, b, c, d] => Ok(i32::from_be_bytes([a, b, c, d])),
            _ => Err(BinaryArrayError::Truncated.into()),
        }
    }
}
