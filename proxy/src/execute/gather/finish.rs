//! The finish's replies as the client's: relayed untouched but for a
//! RowDescription's table OID and column number, zeroed (the columns come
//! from temp tables dropped at the end of the statement, and Postgres
//! sends 0 for computed columns too), and the error the client gets when
//! a statement would gather past `cross_shard_gather_limit` (54000); and
//! the lines pgshard puts before the coordinator's plan in an EXPLAIN of a
//! gathered statement.

use bytes::BytesMut;
use router::gather::GatherPlan;

use super::sink::{Exceeded, GatherSink};
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

/// An EXPLAIN's lines before the coordinator's plan: where it finishes
/// (`host`), what each gather reads from which shards (`routes`, one per
/// gather), what was gathered (with ANALYZE) or that nothing was, and the
/// statement the coordinator runs.
pub fn explain_lines(
    plan: &GatherPlan,
    routes: &[Vec<usize>],
    coordinator: usize,
    host: &str,
    sink: &GatherSink,
) -> Vec<String> {
    let mut lines = vec![format!(
        "pgshard: finished on the coordinator (database {coordinator}, {host})"
    )];
    for (gather, shards) in plan.gathers.iter().zip(routes) {
        let list: Vec<String> = shards.iter().map(usize::to_string).collect();
        let noun = if shards.len() == 1 { "shard" } else { "shards" };
        lines.push(format!(
            "pgshard: gather {} from {noun} {}: {}",
            gather.temp,
            list.join(", "),
            gather.shard_sql
        ));
    }
    match plan.explain.as_ref().is_some_and(|e| e.analyze) {
        true => {
            let (rows, bytes) = sink.counted();
            lines.push(format!(
                "pgshard: gathered {rows} row(s), {bytes} byte(s) through pgshard"
            ));
        }
        false => lines.push(
            "pgshard: nothing gathered without ANALYZE: the coordinator plans over empty temp tables"
                .to_owned(),
        ),
    }
    if let Some(explain) = &plan.explain {
        lines.push(format!("pgshard: coordinator runs: {}", explain.query));
    }
    lines.push("pgshard: the coordinator's plan follows".to_owned());
    lines
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
    fn explain_lines_name_shards_and_the_finish() {
        let mut plan = GatherPlan {
            gathers: vec![router::gather::Gather {
                temp: "pgshard_g1".into(),
                table: router::summary::TableRef {
                    schema: None,
                    name: "t".into(),
                    alias: None,
                },
                create_sql: String::new(),
                shard_sql: "SELECT x FROM t".into(),
                write: None,
                key_sql: None,
            }],
            finish_sql: String::new(),
            finish_params: false,
            lines: Vec::new(),
            cursor: None,
            explain: Some(router::gather::Explain {
                analyze: false,
                text: true,
                query: "SELECT count(DISTINCT x) FROM pg_temp.pgshard_g1 t".into(),
            }),
        };
        let sink = GatherSink::new(router::config::GatherLimit {
            rows: 10,
            bytes: 10,
        });
        let lines = explain_lines(&plan, &[vec![0, 1]], 0, "a session of its own", &sink);
        assert_eq!(
            lines,
            [
                "pgshard: finished on the coordinator (database 0, a session of its own)",
                "pgshard: gather pgshard_g1 from shards 0, 1: SELECT x FROM t",
                "pgshard: nothing gathered without ANALYZE: the coordinator plans over empty temp tables",
                "pgshard: coordinator runs: SELECT count(DISTINCT x) FROM pg_temp.pgshard_g1 t",
                "pgshard: the coordinator's plan follows",
            ]
        );
        plan.explain.as_mut().unwrap().analyze = true;
        let lines = explain_lines(&plan, &[vec![1]], 0, "the transaction's server", &sink);
        assert_eq!(
            lines[1],
            "pgshard: gather pgshard_g1 from shard 1: SELECT x FROM t"
        );
        assert_eq!(
            lines[2],
            "pgshard: gathered 0 row(s), 0 byte(s) through pgshard"
        );
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
