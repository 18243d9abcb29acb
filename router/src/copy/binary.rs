//! The binary COPY format (`PGCOPY`) read piece by piece, as Postgres's
//! `copyfromparse.c` reads it: the file header (signature, flags,
//! extension area), then tuples (a 16-bit field count, each field a 32-bit
//! length, -1 for NULL, and that many bytes), then the trailer (a field
//! count of -1). Pure and incremental: each reader is handed the bytes
//! received so far and says whether a whole piece is there (`Ok(None)`:
//! wait for more), how long it is, and where a tuple's key field lies.
//! Errors are the messages Postgres gives for the same input (SQLSTATE
//! 22P04, bad_copy_file_format, on the caller's side).

use std::ops::Range;

/// The 11 bytes every binary COPY starts with.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The fixed part of the header: signature, flags, extension length.
pub const HEADER_LEN: usize = 19;

/// The trailer: a field count of -1.
pub const TRAILER: &[u8; 2] = b"\xff\xff";

/// A field or header extension longer than Postgres's `MaxAllocSize` (1 GB
/// - 1, the largest buffer `CopyReadBinaryAttribute` can enlarge to) can
///   never be read by the server: refused before it is buffered.
const MAX_FIELD: usize = 0x3fff_ffff;

/// Why binary COPY data cannot be read: Postgres's words for the same
/// input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinaryError {
    #[error("COPY file signature not recognized")]
    Signature,
    #[error("invalid COPY file header (missing flags)")]
    MissingFlags,
    #[error("invalid COPY file header (WITH OIDS)")]
    WithOids,
    #[error("unrecognized critical flags in COPY file header")]
    CriticalFlags,
    #[error("invalid COPY file header (missing length)")]
    MissingLength,
    #[error("invalid COPY file header (wrong length)")]
    WrongLength,
    #[error("row field count is {0}")]
    FieldCount(i16),
    #[error("row field count is {fields}, but the sharding key is field {key}")]
    KeyBeyondFields { fields: usize, key: usize },
    #[error("invalid field size")]
    FieldSize,
    #[error("field size {0} exceeds 1 GB (MaxAllocSize)")]
    FieldTooLong(usize),
}

/// A whole piece at the start of the bytes given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A tuple of `len` bytes whose key field is at `key` (`None`: NULL).
    Row {
        len: usize,
        key: Option<Range<usize>>,
    },
    /// The trailer (2 bytes).
    Trailer,
}

/// The length of the file header at the start of `bytes` (with its
/// extension area), once it is all there.
pub fn header(bytes: &[u8]) -> Result<Option<usize>, BinaryError> {
    let seen = bytes.len().min(SIGNATURE.len());
    if bytes[..seen] != SIGNATURE[..seen] {
        return Err(BinaryError::Signature);
    }
    let (Some(flags), Some(extension)) = (int32(bytes, 11), int32(bytes, 15)) else {
        return Ok(None);
    };
    if flags & (1 << 16) != 0 {
        return Err(BinaryError::WithOids);
    }
    if (flags & !(1 << 16)) >> 16 != 0 {
        return Err(BinaryError::CriticalFlags);
    }
    let extension = usize::try_from(extension).map_err(|_| BinaryError::MissingLength)?;
    if extension > MAX_FIELD {
        return Err(BinaryError::WrongLength);
    }
    let len = HEADER_LEN + extension;
    Ok((bytes.len() >= len).then_some(len))
}

/// Why the data ended inside the file header (`bytes`: all of it).
pub fn header_cut_short(bytes: &[u8]) -> BinaryError {
    match bytes.len() {
        n if n < SIGNATURE.len() => BinaryError::Signature,
        n if n < 15 => BinaryError::MissingFlags,
        n if n < HEADER_LEN => BinaryError::MissingLength,
        _ => BinaryError::WrongLength,
    }
}

/// The tuple or trailer at the start of `bytes`, once it is all there; the
/// key is field `key` (0-based; `None`: no key is read).
pub fn piece(bytes: &[u8], key: Option<usize>) -> Result<Option<Piece>, BinaryError> {
    let Some(count) = int16(bytes, 0) else {
        return Ok(None);
    };
    if count == -1 {
        return Ok(Some(Piece::Trailer));
    }
    let fields = usize::try_from(count).map_err(|_| BinaryError::FieldCount(count))?;
    if let Some(key) = key.filter(|&key| fields <= key) {
        return Err(BinaryError::KeyBeyondFields {
            fields,
            key: key + 1,
        });
    }
    let mut at = 2;
    let mut key_field = None;
    for field in 0..fields {
        let Some(size) = int32(bytes, at) else {
            return Ok(None);
        };
        at += 4;
        let value = match size {
            -1 => None,
            size => {
                let size = usize::try_from(size).map_err(|_| BinaryError::FieldSize)?;
                if size > MAX_FIELD {
                    return Err(BinaryError::FieldTooLong(size));
                }
                at += size;
                Some(at - size..at)
            }
        };
        if Some(field) == key {
            key_field = Some(value);
        }
    }
    if bytes.len() < at {
        return Ok(None);
    }
    Ok(Some(Piece::Row {
        len: at,
        key: key_field.flatten(),
    }))
}

/// A network-order 16-bit integer at `at`, when the bytes reach that far.
fn int16(bytes: &[u8], at: usize) -> Option<i16> {
    let b = bytes.get(at..at + 2)?;
    Some(i16::from_be_bytes([b[0], b[1]]))
}

/// A network-order 32-bit integer at `at`, when the bytes reach that far.
fn int32(bytes: &[u8], at: usize) -> Option<i32> {
    let b = bytes.get(at..at + 4)?;
    Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header with an extension area of `extension` bytes.
    fn file_header(flags: u32, extension: &[u8]) -> Vec<u8> {
        let mut out = SIGNATURE.to_vec();
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&(extension.len() as u32).to_be_bytes());
        out.extend_from_slice(extension);
        out
    }

    #[test]
    fn headers_whole_cut_and_bad() {
        let plain = file_header(0, b"");
        assert_eq!(header(&plain), Ok(Some(19)));
        assert_eq!(header(&file_header(0, b"abc")), Ok(Some(22)));
        for cut in 0..plain.len() {
            assert_eq!(header(&plain[..cut]), Ok(None), "cut at {cut}");
        }
        assert_eq!(header(&file_header(0, b"abc")[..21]), Ok(None));
        // Low flag bits are not critical.
        assert_eq!(header(&file_header(1, b"")), Ok(Some(19)));
        for (bytes, says) in [
            (b"PGCOPX".to_vec(), "signature"),
            (b"1\t2\n".to_vec(), "signature"),
            (file_header(1 << 16, b""), "WITH OIDS"),
            (file_header(1 << 17, b""), "critical flags"),
            (
                [&SIGNATURE[..], &[0; 4], &[0xff; 4]].concat(),
                "missing length",
            ),
            (
                [&SIGNATURE[..], &[0; 4], &[0x7f, 0xff, 0xff, 0xff]].concat(),
                "wrong length",
            ),
        ] {
            let err = header(&bytes).unwrap_err().to_string();
            assert!(err.contains(says), "{bytes:?}: {err}");
        }
        assert!(header_cut_short(&plain[..12])
            .to_string()
            .contains("missing flags"));
    }

    #[test]
    fn tuples_whole_cut_null_and_bad() {
        // Two fields: int4 7, then NULL; then one of 3 bytes.
        let row = b"\x00\x02\x00\x00\x00\x04\x00\x00\x00\x07\xff\xff\xff\xff";
        assert_eq!(
            piece(row, Some(0)),
            Ok(Some(Piece::Row {
                len: 14,
                key: Some(6..10)
            }))
        );
        assert_eq!(
            piece(row, Some(1)),
            Ok(Some(Piece::Row { len: 14, key: None }))
        );
        for cut in 0..row.len() {
            assert_eq!(piece(&row[..cut], Some(0)), Ok(None), "cut at {cut}");
        }
        assert_eq!(piece(b"\xff\xffrest", None), Ok(Some(Piece::Trailer)));
        for (bytes, key, says) in [
            (&b"\xff\xfe"[..], 0, "row field count is -2"),
            (
                &b"\x00\x01\x00\x00\x00\x01x"[..],
                1,
                "sharding key is field 2",
            ),
            (&b"\x00\x01\xff\xff\xff\xfe"[..], 0, "invalid field size"),
            (&b"\x00\x01\x7f\xff\xff\xff"[..], 0, "exceeds 1 GB"),
        ] {
            let err = piece(bytes, Some(key)).unwrap_err().to_string();
            assert!(err.contains(says), "{bytes:?}: {err}");
        }
    }
}
