//! COPY plans and row splitting.

use super::*;
use crate::sharding::{DataType, KeySpace, ShardFunction};

/// `orders` by bigint `user_id` (1, 3 -> 0; 2, 4 -> 1); `names` by text
/// `name` ('a' -> 0, 'b,c' -> 1); `r` omnisharded.
fn sharding() -> Sharding {
    let entry = |name: &str, column: &str, data_type, entries| ShardedTable {
        name: Some(name.to_owned()),
        schema: None,
        column: column.to_owned(),
        keys: KeySpace {
            data_type,
            function: ShardFunction::List(entries),
            placement: vec![0, 1],
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
        ("COPY orders FROM STDIN (FORMAT binary)", "binary"),
        ("COPY orders TO STDOUT", "FROM STDIN"),
        ("COPY orders FROM '/tmp/x'", "FROM STDIN"),
        ("COPY r FROM STDIN", "not sharded"),
        ("COPY orders FROM STDIN WHERE user_id > 1", "WHERE"),
    ] {
        let err = plan_copy(sql, &sharding()).unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
    let plan = plan_copy("COPY orders (note) FROM STDIN", &sharding()).unwrap();
    let err = RowSplitter::new(plan, &[]).unwrap_err().to_string();
    assert!(err.contains("does not include the sharding key"), "{err}");
}
