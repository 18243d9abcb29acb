//! COPY plans and row splitting.

use super::*;
use crate::sharding::{DataType, Key, KeySpace, ShardFunction};

/// `orders` by bigint `user_id` (1, 3 -> 0; 2, 4 -> 1); `names` by text
/// `name` ('a' -> 0, 'b,c' -> 1); `r` omnisharded.
pub(super) fn sharding() -> Sharding {
    let entry = |name: &str, column: &str, data_type, entries| ShardedTable {
        name: Some(name.to_owned()),
        schema: None,
        column: column.to_owned(),
        keys: KeySpace {
            data_type,
            function: ShardFunction::List(entries),
            placement: vec![0, 1],
            moving: None,
        },
    };
    let ints = [(1, 0), (2, 1), (3, 0), (4, 1)]
        .map(|(k, s)| (Key::Int(k), s))
        .to_vec();
    Sharding {
        databases: 2,
        tables: vec![
            entry("orders", "user_id", DataType::BigInt, ints),
            entry(
                "names",
                "name",
                DataType::Text,
                vec![(Key::Text("a".into()), 0), (Key::Text("b,c\n".into()), 1)],
            ),
        ],
        families: Vec::new(),
        omnisharded: vec![(None, "r".into())],
        cross_shard_disabled: false,
        unlisted_omnisharded: false,
        unlisted_by_columns: false,
        keyless: None,
        catalog: None,
        functions: Vec::new(),
    }
}

fn splitter(sql: &str, table_columns: &[&str]) -> RowSplitter {
    let plan = plan_copy(sql, &sharding()).unwrap();
    let columns: Vec<String> = table_columns.iter().map(|c| c.to_string()).collect();
    RowSplitter::new(plan, &columns).unwrap()
}

/// Feed `data` in pieces of `chunk` bytes; the rows placed, as text.
fn split(splitter: &mut RowSplitter, data: &str, chunk: usize) -> Vec<(Option<usize>, String)> {
    let mut placed = Vec::new();
    for piece in data.as_bytes().chunks(chunk) {
        placed.extend(splitter.push(piece).unwrap());
    }
    placed.extend(splitter.finish().unwrap());
    placed
        .into_iter()
        .map(|(db, row)| (db, String::from_utf8(row).unwrap()))
        .collect()
}

#[test]
fn text_rows_go_to_their_shards_whatever_the_chunks() {
    for chunk in [1, 3, 1000] {
        let mut s = splitter("COPY orders (note, user_id) FROM STDIN", &[]);
        let rows = split(&mut s, "a\\tb\t1\nx\\\ny\t2\n\\N\t3\nlast\t4", chunk);
        assert_eq!(
            rows,
            vec![
                (Some(0), "a\\tb\t1\n".to_owned()),
                (Some(1), "x\\\ny\t2\n".to_owned()),
                (Some(0), "\\N\t3\n".to_owned()),
                (Some(1), "last\t4\n".to_owned()),
            ],
            "chunks of {chunk}"
        );
    }
    // The table's own columns when the COPY names none; `\.` ends the data.
    let mut s = splitter("COPY orders FROM STDIN", &["id", "user_id"]);
    assert_eq!(
        split(&mut s, "7\t2\r\n\\.\n8\t1\n", 4),
        vec![(Some(1), "7\t2\r\n".to_owned())]
    );
}

#[test]
fn csv_rows_keep_quoted_delimiters_and_newlines() {
    let mut s = splitter(
        "COPY names (name, n) FROM STDIN WITH (FORMAT csv, HEADER true)",
        &[],
    );
    let data = "name,n\n\"b,c\n\",1\na,\"x\"\"y\"\n\"a\",3";
    assert_eq!(
        split(&mut s, data, 2),
        vec![
            (None, "name,n\n".to_owned()),
            (Some(1), "\"b,c\n\",1\n".to_owned()),
            (Some(0), "a,\"x\"\"y\"\n".to_owned()),
            (Some(0), "\"a\",3\n".to_owned()),
        ]
    );
    let mut s = splitter(
        "COPY orders (user_id, note) FROM STDIN (FORMAT csv, DELIMITER ';')",
        &[],
    );
    assert_eq!(
        split(&mut s, "4;x\n", 10),
        vec![(Some(1), "4;x\n".to_owned())]
    );
}

#[test]
fn rows_without_a_usable_key_fail_the_copy_with_their_line() {
    for (sql, data, says) in [
        (
            "COPY orders (user_id) FROM STDIN",
            "1\n\\N\n",
            "line 2: its sharding key user_id is NULL",
        ),
        (
            "COPY orders (user_id) FROM STDIN",
            "x\n",
            "line 1: its sharding key user_id",
        ),
        (
            "COPY orders (user_id) FROM STDIN",
            "9\n",
            "no shard is configured",
        ),
        (
            "COPY orders (user_id) FROM STDIN (FORMAT csv)",
            "1\n,\n",
            "line 2: its sharding key user_id is NULL",
        ),
        (
            "COPY orders (note, user_id) FROM STDIN",
            "only\n",
            "fewer fields",
        ),
    ] {
        let mut s = splitter(sql, &[]);
        let err = s
            .push(data.as_bytes())
            .and_then(|_| s.finish())
            .unwrap_err();
        assert!(err.to_string().contains(says), "{sql} {data:?}: {err}");
    }
}

#[test]
fn what_is_not_split_is_refused() {
    for (sql, says) in [
        ("COPY orders FROM STDIN (FORMAT binary, HEADER)", "binary"),
        ("COPY orders TO STDOUT", "FROM STDIN"),
        ("COPY orders FROM '/tmp/x'", "FROM STDIN"),
        ("COPY pg_class FROM STDIN", "not sharded"),
        ("COPY orders FROM STDIN WHERE user_id > 1", "WHERE"),
    ] {
        let err = plan_copy(sql, &sharding()).unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
    let plan = plan_copy("COPY orders (note) FROM STDIN", &sharding()).unwrap();
    let err = RowSplitter::new(plan, &[]).unwrap_err().to_string();
    assert!(err.contains("does not include the sharding key"), "{err}");
}

#[test]
fn an_omnisharded_tables_rows_go_to_every_database() {
    let mut s = splitter("COPY r FROM STDIN", &[]);
    let placed = split(&mut s, "1\tx\n\\N\ty\n\\.\nignored\n", 2);
    assert_eq!(placed, [(None, "1\tx\n".into()), (None, "\\N\ty\n".into())]);
    let mut s = splitter("COPY r FROM STDIN (FORMAT csv, HEADER)", &[]);
    let placed = split(&mut s, "a,b\n1,\"x\ny\"\n", 5);
    assert_eq!(
        placed,
        [(None, "a,b\n".into()), (None, "1,\"x\ny\"\n".into())]
    );
    let plan = plan_copy("COPY r FROM STDIN (FORMAT binary)", &sharding()).unwrap();
    let mut s = RowSplitter::new(plan, &[]).unwrap();
    let data = binary_copy(&[vec![None, Some(b"x")], vec![Some(b"\x00\x01")]]);
    let placed = s.push(&data).unwrap();
    assert_eq!(placed.len(), 4, "header, 2 tuples, trailer");
    assert!(placed.iter().all(|(database, _)| database.is_none()));
    assert!(s.finish().unwrap().is_empty());
}

/// A binary COPY: header, one tuple per `rows` entry (fields as given,
/// `None` NULL), trailer.
pub(super) fn binary_copy(rows: &[Vec<Option<&[u8]>>]) -> Vec<u8> {
    let mut out = binary::SIGNATURE.to_vec();
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2, b'x', b'y']);
    for row in rows {
        out.extend_from_slice(&(row.len() as u16).to_be_bytes());
        for field in row {
            match field {
                Some(bytes) => {
                    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
                    out.extend_from_slice(bytes);
                }
                None => out.extend_from_slice(&[0xff; 4]),
            }
        }
    }
    out.extend_from_slice(binary::TRAILER);
    out
}

#[test]
fn binary_tuples_go_to_their_shards_whatever_the_chunks() {
    let data = binary_copy(&[
        vec![Some(b"note"), Some(&4i64.to_be_bytes())],
        vec![None, Some(&3i32.to_be_bytes())],
        vec![Some(b""), Some(&2i16.to_be_bytes())],
    ]);
    for chunk in [1, 5, 19, 4096] {
        let mut s = splitter(
            "COPY orders (note, user_id) FROM STDIN (FORMAT binary)",
            &[],
        );
        let mut placed = Vec::new();
        for piece in data.chunks(chunk) {
            placed.extend(s.push(piece).unwrap());
        }
        placed.extend(s.finish().unwrap());
        let places: Vec<Option<usize>> = placed.iter().map(|(db, _)| *db).collect();
        assert_eq!(
            places,
            [None, Some(1), Some(0), Some(1), None],
            "chunks of {chunk}"
        );
        // Every byte placed once, in order.
        assert_eq!(placed.concat_rows(), data, "chunks of {chunk}");
    }
    // Text keys, from the table's columns.
    let mut s = splitter("COPY names FROM STDIN (FORMAT binary)", &["name"]);
    let rows = s.push(&binary_copy(&[vec![Some(b"b,c\n")]])).unwrap();
    assert_eq!(rows[1].0, Some(1));
}

trait ConcatRows {
    fn concat_rows(&self) -> Vec<u8>;
}

impl ConcatRows for Vec<Placed> {
    fn concat_rows(&self) -> Vec<u8> {
        self.iter().flat_map(|(_, row)| row.clone()).collect()
    }
}

#[test]
fn malformed_binary_fails_with_postgres_words() {
    let sql = "COPY orders (user_id, note) FROM STDIN (FORMAT binary)";
    let good = binary_copy(&[vec![Some(&1i64.to_be_bytes()), None]]);
    let mut after_trailer = good.clone();
    after_trailer.push(0);
    let mut null_key = good[..21].to_vec();
    null_key.extend_from_slice(b"\x00\x01\xff\xff\xff\xff");
    for (data, says) in [
        (b"1\t2\n".to_vec(), "signature not recognized"),
        (Vec::new(), "signature not recognized"),
        (good[..14].to_vec(), "missing flags"),
        (good[..25].to_vec(), "line 1: unexpected EOF"),
        (after_trailer, "after EOF marker"),
        (null_key, "line 1: its sharding key user_id is NULL"),
    ] {
        let mut s = splitter(sql, &[]);
        let err = s.push(&data).and_then(|_| s.finish()).unwrap_err();
        assert!(err.to_string().contains(says), "{data:?}: {err}");
    }
    // A key of the wrong width.
    let mut s = splitter(sql, &[]);
    let data = binary_copy(&[vec![Some(b"abc"), None]]);
    let err = s.push(&data).unwrap_err().to_string();
    assert!(err.contains("must be 2, 4 or 8 bytes"), "{err}");
}

#[test]
fn copy_out_joins_or_is_refused() {
    let plan = |sql| plan_copy_out(sql, &sharding());
    let out = |format, header| {
        Ok(Some(CopyOut {
            format,
            header,
            merge: None,
        }))
    };
    assert_eq!(plan("COPY orders TO STDOUT"), out(Format::Text, false));
    assert_eq!(
        plan("COPY orders TO STDOUT (FORMAT csv, HEADER)"),
        out(Format::Csv, true)
    );
    assert_eq!(
        plan("COPY orders TO STDOUT WITH (FORMAT binary)"),
        out(Format::Binary, false)
    );
    assert_eq!(
        plan("COPY (SELECT * FROM orders WHERE note = 'x') TO STDOUT (HEADER false)"),
        out(Format::Text, false)
    );
    assert_eq!(plan("COPY orders TO '/tmp/x'"), Ok(None));
    // Rows that need a merge: the shards run the SELECT.
    let merged = |sql| plan(sql).unwrap().unwrap().merge.unwrap();
    let m = merged("COPY (SELECT * FROM orders ORDER BY user_id) TO STDOUT");
    // The merge adds its sort column, stripped from the rows.
    assert_eq!(m.sql, "SELECT *, user_id FROM orders ORDER BY user_id");
    assert_eq!(m.plan.hidden, 1);
    assert_eq!(m.text.delimiter, b'\t');
    assert_eq!(m.text.null, "\\N");
    let m = merged(
        "COPY (SELECT count(*) FROM orders) TO STDOUT (FORMAT csv, DELIMITER ';', NULL 'x', FORCE_QUOTE *)",
    );
    assert_eq!((m.text.delimiter, m.text.null.as_str()), (b';', "x"));
    assert_eq!(m.text.force_quote, ForceQuote::All);
    let m =
        merged("COPY (SELECT note FROM orders LIMIT 3) TO STDOUT CSV QUOTE '''' FORCE QUOTE note");
    assert_eq!((m.text.quote, m.text.escape), (b'\'', b'\''));
    assert_eq!(m.text.force_quote, ForceQuote::Columns(vec!["note".into()]));
    for (sql, says) in [
        (
            "COPY (SELECT json_agg(note) FROM orders) TO STDOUT",
            "json_agg",
        ),
        ("COPY orders TO STDOUT (FORMAT xml)", "unknown FORMAT"),
        (
            "COPY (SELECT * FROM orders ORDER BY user_id) TO STDOUT (ENCODING 'latin1')",
            "encoding is not supported",
        ),
        (
            "COPY (SELECT * FROM orders ORDER BY user_id) TO STDOUT (QUOTE '\"')",
            "requires CSV mode",
        ),
        (
            "COPY (SELECT * FROM orders ORDER BY user_id) TO STDOUT (DELIMITER 'ab')",
            "single one-byte",
        ),
        (
            "COPY (SELECT * FROM orders ORDER BY user_id) TO STDOUT (DELIMITER 'a')",
            "cannot be \"a\"",
        ),
        (
            "COPY (SELECT * FROM orders ORDER BY user_id) TO STDOUT (FORMAT binary, HEADER)",
            "BINARY mode",
        ),
    ] {
        let err = plan(sql).unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
}
