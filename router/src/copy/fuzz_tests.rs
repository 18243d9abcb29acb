//! Property tests of COPY splitting (issue 35): valid text, CSV and binary
//! streams cut into random CopyData pieces place every row on its key's
//! database, byte for byte, whatever the cut; mutated streams give rows or
//! an error, the same whatever the cut, and never a panic.

use proptest::prelude::*;

use super::tests::{binary_copy, sharding};
use super::*;
use crate::fuzz::{chunks, config, cut, mutated};

/// `orders (user_id, note)`: keys 1 and 3 live on database 0, 2 and 4 on 1.
fn database(key: i64) -> usize {
    usize::from(key % 2 == 0)
}

/// Rows of `orders`: a key and a note (NULL, or any text).
fn rows() -> impl Strategy<Value = Vec<(i64, Option<String>)>> {
    let note = prop::option::of("[a-z\\t\\n\\r\\\\\",;N. ]{0,12}");
    prop::collection::vec((1..=4i64, note), 0..8)
}

fn text_row(key: i64, note: &Option<String>) -> String {
    let note = match note {
        None => "\\N".to_owned(),
        Some(note) => note
            .replace('\\', "\\\\")
            .replace('\t', "\\t")
            .replace('\n', "\\n")
            .replace('\r', "\\r"),
    };
    format!("{key}\t{note}\n")
}

fn csv_row(key: i64, note: &Option<String>) -> String {
    let note = match note {
        None => String::new(),
        Some(note) => format!("\"{}\"", note.replace('"', "\"\"")),
    };
    format!("{key},{note}\n")
}

fn binary_rows(rows: &[(i64, Option<String>)]) -> Vec<u8> {
    let keys: Vec<[u8; 8]> = rows.iter().map(|(k, _)| k.to_be_bytes()).collect();
    let tuples: Vec<Vec<Option<&[u8]>>> = rows
        .iter()
        .zip(&keys)
        .map(|((_, note), key)| vec![Some(&key[..]), note.as_deref().map(str::as_bytes)])
        .collect();
    binary_copy(&tuples)
}

const TEXT: &str = "COPY orders (user_id, note) FROM STDIN";
const CSV: &str = "COPY orders (user_id, note) FROM STDIN (FORMAT csv)";
const BINARY: &str = "COPY orders (user_id, note) FROM STDIN (FORMAT binary)";

/// Split `data` as `sql` fed in pieces of `sizes`: every row placed, or
/// the first error.
fn split(sql: &str, data: &[u8], sizes: &[usize]) -> Result<Vec<Placed>, CopyError> {
    let plan = plan_copy(sql, &sharding())?;
    let mut splitter = RowSplitter::new(plan, &[])?;
    let mut placed = Vec::new();
    for piece in cut(data, sizes) {
        placed.extend(splitter.push(piece)?);
    }
    placed.extend(splitter.finish()?);
    Ok(placed)
}

fn concat(placed: &[Placed]) -> Vec<u8> {
    placed.iter().flat_map(|(_, row)| row.clone()).collect()
}

/// Text and CSV: every row on its key's database, all bytes in order.
fn check_lines(
    sql: &str,
    rows: &[(i64, Option<String>)],
    line: fn(i64, &Option<String>) -> String,
    sizes: &[usize],
) -> Result<(), TestCaseError> {
    let data: String = rows.iter().map(|(k, n)| line(*k, n)).collect();
    let placed =
        split(sql, data.as_bytes(), sizes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let places: Vec<Option<usize>> = placed.iter().map(|(db, _)| *db).collect();
    let expected: Vec<Option<usize>> = rows.iter().map(|(k, _)| Some(database(*k))).collect();
    prop_assert_eq!(places, expected);
    prop_assert_eq!(concat(&placed), data.into_bytes());
    Ok(())
}

fn format_sql() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        TEXT,
        CSV,
        BINARY,
        "COPY r FROM STDIN (FORMAT csv, HEADER)",
        "COPY orders (user_id, note) FROM STDIN (FORMAT csv, ESCAPE '\\')",
    ])
}

/// Streams of each format, valid, for the mutations to start from.
fn streams() -> impl Strategy<Value = Vec<u8>> {
    rows().prop_flat_map(|rows| {
        let text: String = rows.iter().map(|(k, n)| text_row(*k, n)).collect();
        let csv: String = rows.iter().map(|(k, n)| csv_row(*k, n)).collect();
        prop::sample::select(vec![
            text.into_bytes(),
            csv.into_bytes(),
            binary_rows(&rows),
        ])
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn text_rows_split_whatever_the_cut(rows in rows(), sizes in chunks()) {
        check_lines(TEXT, &rows, text_row, &sizes)?;
    }

    #[test]
    fn csv_rows_split_whatever_the_cut(rows in rows(), sizes in chunks()) {
        check_lines(CSV, &rows, csv_row, &sizes)?;
    }

    #[test]
    fn binary_tuples_split_whatever_the_cut(rows in rows(), sizes in chunks()) {
        let data = binary_rows(&rows);
        let placed = split(BINARY, &data, &sizes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let places: Vec<Option<usize>> = placed.iter().map(|(db, _)| *db).collect();
        let mut expected = vec![None];
        expected.extend(rows.iter().map(|(k, _)| Some(database(*k))));
        expected.push(None);
        prop_assert_eq!(places, expected);
        prop_assert_eq!(concat(&placed), data);
    }

    /// Mutated streams in any format: rows or an error, never a panic, and
    /// the same answer for two different cuts.
    #[test]
    fn mutated_streams_split_the_same_whatever_the_cut(
        sql in format_sql(),
        data in mutated(streams(), 4),
        a in chunks(),
        b in chunks(),
    ) {
        let one = split(sql, &data, &a);
        let other = split(sql, &data, &b);
        match (&one, &other) {
            (Ok(one), Ok(other)) => prop_assert_eq!(one, other),
            (Err(_), Err(_)) => {}
            _ => prop_assert!(false, "cuts {a:?} and {b:?} disagree: {one:?} vs {other:?}"),
        }
    }
}

/// Regression (issue 35): a row whose end never comes (no newline, an
/// open CSV quote, a binary field longer than what follows) was kept
/// whole, growing without bound; past the cap it fails the COPY.
#[test]
fn a_row_that_never_ends_is_refused_at_the_cap() {
    let mut open_binary = binary_copy(&[]);
    open_binary.truncate(open_binary.len() - 2);
    open_binary.extend_from_slice(b"\x00\x01\x00\x00\x10\x00");
    let tail = vec![b'x'; 4096];
    for (sql, start) in [
        (TEXT, b"1\tno newline ".to_vec()),
        (CSV, b"1,\"open quote\n".to_vec()),
        (BINARY, open_binary),
    ] {
        let plan = plan_copy(sql, &sharding()).unwrap();
        let mut splitter = RowSplitter::new(plan, &[]).unwrap().with_max_row(1000);
        let mut result = splitter.push(&start);
        for piece in tail.chunks(100) {
            if result.is_err() {
                break;
            }
            result = splitter.push(piece);
        }
        let err = result.unwrap_err().to_string();
        assert!(err.contains("longer than 1000 bytes"), "{sql}: {err}");
    }
}

/// Regression (issue 35): a long row arriving in many pieces was read
/// from its start for its end at every piece (quadratic: a 100 MB row in
/// 64 KiB CopyData messages read about 80 GB); each byte is read once.
#[test]
fn a_long_row_is_read_once_whatever_the_pieces() {
    for (sql, first, piece, last) in [
        (TEXT, &b"1\t"[..], &b"ab\\\\cd\\"[..], &b"x\n"[..]),
        (CSV, b"1,\"", b"a,b\n\"\"", b"\"\n"),
        (
            "COPY orders (user_id, note) FROM STDIN (FORMAT csv, ESCAPE '\\')",
            b"1,\"",
            b"a\\",
            b"\"\"\n",
        ),
    ] {
        let plan = plan_copy(sql, &sharding()).unwrap();
        let mut splitter = RowSplitter::new(plan, &[]).unwrap();
        assert!(splitter.push(first).unwrap().is_empty());
        let mut fed = first.len();
        for _ in 0..1000 {
            assert!(splitter.push(piece).unwrap().is_empty(), "{sql}");
            fed += piece.len();
            // All but a trailing escape (read with the byte after it).
            assert!(
                splitter.scanned() >= fed - 1,
                "{sql}: read to {} of {fed}",
                splitter.scanned()
            );
        }
        let rows = splitter.push(last).unwrap();
        assert_eq!(rows.len(), 1, "{sql}");
        assert_eq!(rows[0].1.len(), fed + last.len(), "{sql}");
    }
}
