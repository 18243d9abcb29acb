//! The finish's replies as the client's: relayed untouched but for a
//! RowDescription's table OID and column number, zeroed (the columns come
//! from temp tables dropped at the end of the statement, and Postgres
//! sends 0 for computed columns too), and the error the client gets when
//! a statement would gather past `cross_shard_gather_limit` (54000).

use bytes::BytesMut;

use super::sink::Exceeded;
use crate::errors::ClientError;
use crate::protocol::backend::{BackendFrame, BackendMessage};
use crate::protocol::{rows, sqlstate};

/// A finish's message for the client: a RowDescription with its columns'
/// origins zeroed; any other message as it came.
pub fn for_client(message: BackendFrame) -> BackendFrame {
    match message.message() {
        BackendMessage::RowDescription(_) => message.with_body(zero_origins).unwrap_or(message),
        _ => message,
    }
}

/// Write a RowDescription body with each column's table OID and attnum
/// zeroed (a body that does not read as one is written as it came).
fn zero_origins(body: &[u8], out: &mut BytesMut) {
    let start = out.len();
    out.extend_from_slice(body);
    let Some((_, starts)) = rows::read_fields(body) else {
        return;
    };
    // `starts` ends with where the fields end.
    for &at in starts.iter().take(starts.len().saturating_sub(1)) {
        let Some(name) = body
            .get(at..)
            .and_then(|rest| rest.iter().position(|&b| b == 0))
        else {
            return;
        };
        // After the name: table OID (4 bytes) and attnum (2).
        let origin = start + at + name + 1;
        if let Some(bytes) = out.get_mut(origin..origin + 6) {
            bytes.fill(0);
        }
    }
}

/// The client's error for a statement that would gather past `exceeded`.
pub fn limit_error(exceeded: Exceeded, coordinator: usize) -> ClientError {
    ClientError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!(
            "this query would gather more than {} ({}) from the shards to finish it on the \
             coordinator (database {coordinator}): add conditions the shards can apply, restrict \
             it with the sharding key, or raise {}",
            exceeded.bound(),
            exceeded.key(),
            exceeded.key()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    /// A RowDescription body of `columns` (name, table OID, attnum), for
    /// tests.
    fn description(columns: &[(&str, u32, u16)]) -> Vec<u8> {
        let mut out = BytesMut::new();
        out.put_u16(columns.len() as u16);
        for (name, table, attnum) in columns {
            out.extend_from_slice(name.as_bytes());
            out.put_u8(0);
            out.put_u32(*table);
            out.put_u16(*attnum);
            out.put_u32(23);
            out.put_i16(4);
            out.put_i32(-1);
            out.put_u16(0);
        }
        out.to_vec()
    }

    fn frame(tag: u8, body: &[u8]) -> BackendFrame {
        let mut out = BytesMut::new();
        out.put_u8(tag);
        out.put_u32(body.len() as u32 + 4);
        out.extend_from_slice(body);
        BackendFrame::copy_of(&out).unwrap()
    }

    #[test]
    fn row_description_origins_are_zeroed() {
        let body = description(&[("id", 16384, 1), ("name", 16384, 2)]);
        let out = for_client(frame(b'T', &body));
        let want = description(&[("id", 0, 0), ("name", 0, 0)]);
        assert_eq!(&out.bytes()[5..], &want[..]);
    }

    #[test]
    fn zeroed_bytes_are_exactly_the_origins() {
        let body = description(&[("x", 0x0102_0304, 0x0506)]);
        let mut out = BytesMut::new();
        zero_origins(&body, &mut out);
        assert_eq!(
            &out[..],
            b"\0\x01x\0\0\0\0\0\0\0\0\0\0\x17\0\x04\xff\xff\xff\xff\0\0"
        );
    }

    #[test]
    fn other_messages_pass_untouched() {
        let row = frame(b'D', b"\0\x01\0\0\0\x011");
        assert_eq!(for_client(row.clone()), row);
    }

    #[test]
    fn limit_error_names_the_key_and_code() {
        let error = limit_error(Exceeded::Rows(10), 0);
        let mut out = BytesMut::new();
        error.encode(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("54000"), "{text}");
        assert!(
            text.contains("more than 10 rows (cross_shard_gather_limit.rows)"),
            "{text}"
        );
        assert!(text.contains("database 0"), "{text}");
    }
}
