//! DataRow and RowDescription bodies for the cross-shard merge: the fields'
//! types, formats and names, a row's value ranges (every length checked
//! against the message), and rows written back; a ParameterDescription's
//! types.

use bytes::{BufMut, Bytes, BytesMut};

use super::frame;

/// A DataRow and where its values are.
#[derive(Debug, Clone)]
pub struct Row {
    pub message: Bytes,
    pub values: Vec<Option<(usize, usize)>>,
}

impl Row {
    pub fn value(&self, column: usize) -> Option<&[u8]> {
        let (start, end) = self.values.get(column).copied().flatten()?;
        self.message.get(start..end)
    }
}

/// A field's type oid and whether its values are in binary.
pub type WireField = (u32, bool);

/// A RowDescription's (type oid, binary) per field and where each field
/// starts (and, last, where the fields end).
pub fn read_fields(body: &[u8]) -> Option<(Vec<WireField>, Vec<usize>)> {
    let count = u16::from_be_bytes(body.get(..2)?.try_into().ok()?) as usize;
    // A field takes at least 19 bytes: a count the body cannot back
    // reserves nothing for the fields it claims.
    let backed = count.min(body.len() / 19);
    let mut fields = Vec::with_capacity(backed);
    let mut starts = Vec::with_capacity(backed + 1);
    let mut at = 2;
    for _ in 0..count {
        starts.push(at);
        let name_end = at + body.get(at..)?.iter().position(|&b| b == 0)?;
        let fixed = body.get(name_end + 1..name_end + 19)?;
        let oid = u32::from_be_bytes(fixed[6..10].try_into().ok()?);
        let format = u16::from_be_bytes(fixed[16..18].try_into().ok()?);
        fields.push((oid, format == 1));
        at = name_end + 19;
    }
    starts.push(at);
    Some((fields, starts))
}

/// The column names of a RowDescription body.
pub fn column_names(body: &[u8]) -> Option<Vec<String>> {
    let (fields, starts) = read_fields(body)?;
    let names = (0..fields.len()).map(|i| {
        let at = starts[i];
        let end = at + body.get(at..)?.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(&body[at..end]).into_owned())
    });
    names.collect()
}

/// A whole DataRow message's value ranges.
pub fn parse_row(message: &[u8]) -> Option<Row> {
    let count = u16::from_be_bytes(message.get(5..7)?.try_into().ok()?) as usize;
    // A value takes at least its 4-byte length (likewise).
    let mut values = Vec::with_capacity(count.min(message.len() / 4));
    let mut at = 7;
    for _ in 0..count {
        let len = i32::from_be_bytes(message.get(at..at + 4)?.try_into().ok()?);
        at += 4;
        if len < 0 {
            values.push(None);
            continue;
        }
        let end = at
            .checked_add(len as usize)
            .filter(|&end| end <= message.len())?;
        values.push(Some((at, end)));
        at = end;
    }
    Some(Row {
        message: Bytes::copy_from_slice(message),
        values,
    })
}

pub fn write_row(out: &mut BytesMut, values: &[Option<&[u8]>]) {
    let at = frame::begin(out, b'D');
    out.put_u16(values.len() as u16);
    for value in values {
        match value {
            None => out.put_i32(-1),
            Some(v) => {
                out.put_i32(v.len() as i32);
                out.extend_from_slice(v);
            }
        }
    }
    frame::finish(out, at);
}

/// A RowDescription of the first `visible` fields of the RowDescription
/// `body` (`starts`: where each field starts, as [`read_fields`] gives
/// them), with the type, length and modifier of some fields replaced:
/// `retyped` holds (the field's start, its new 10 bytes: type oid, type
/// length, type modifier).
pub fn write_description(
    out: &mut BytesMut,
    body: &[u8],
    starts: &[usize],
    visible: usize,
    retyped: &[(usize, [u8; 10])],
) {
    let end = starts.get(visible).copied().unwrap_or(2);
    let at = frame::begin(out, b'T');
    out.put_u16(visible as u16);
    let fields_at = out.len();
    out.extend_from_slice(body.get(2..end).unwrap_or_default());
    for &(start, field) in retyped.iter().filter(|&&(s, _)| s < end) {
        let at = fields_at + start - 2;
        let name = out[at..].iter().position(|&b| b == 0).unwrap_or(0);
        let fixed = at + name + 1;
        if let Some(slot) = out.get_mut(fixed + 6..fixed + 16) {
            slot.copy_from_slice(&field);
        }
    }
    frame::finish(out, at);
}

/// The type OIDs of a ParameterDescription's body (its count is an
/// Int16, so at most 65535, and each OID must be there).
pub fn parameter_types(body: &[u8]) -> Option<Vec<u32>> {
    let (count, mut rest) = body.split_first_chunk::<2>()?;
    let count = usize::from(u16::from_be_bytes(*count));
    let mut types = Vec::with_capacity(count.min(rest.len() / 4));
    for _ in 0..count {
        let (oid, tail) = rest.split_first_chunk::<4>()?;
        types.push(u32::from_be_bytes(*oid));
        rest = tail;
    }
    Some(types)
}

#[cfg(test)]
mod tests {
    use super::parameter_types;

    #[test]
    fn parameter_descriptions_are_read_whole_or_not_at_all() {
        assert_eq!(
            parameter_types(&[0, 2, 0, 0, 0, 20, 0, 0, 0, 25]),
            Some(vec![20, 25])
        );
        assert_eq!(parameter_types(&[0, 0]), Some(Vec::new()));
        assert_eq!(parameter_types(&[0, 2, 0, 0, 0, 20, 0]), None);
        assert_eq!(parameter_types(&[0]), None);
    }
}
