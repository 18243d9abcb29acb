//! `parser-memcheck`: drives every entry point of parser-ffi over the corpus and
//! hostile inputs, on two threads, so that valgrind (tests/memcheck.rs) can
//! check for leaks and invalid reads. Usage: `parser-memcheck CORPUS_DIR`.

use std::path::Path;

use parser_ffi::{
    deparse, deparse_protobuf, fingerprint, normalize, parse_raw, scan, to_protobuf, view,
    ParseTree,
};

fn exercise(sql: &str) -> usize {
    let mut work = 0;
    if let Ok(tree) = ParseTree::parse(sql) {
        for stmt in tree.statements() {
            if let Some(root) = stmt.stmt() {
                view::walk(root, |kind| {
                    work += 1;
                    if let view::NodeRef::RangeVar(rv) = kind {
                        work += rv.relname().map_or(0, str::len);
                    }
                    view::Walk::Continue
                });
            }
        }
        if let Ok(protobuf) = to_protobuf(&tree) {
            work += protobuf.stmts.len();
            work += deparse_protobuf(&protobuf).map_or(0, |s| s.len());
        }
        work += deparse(&tree).map_or(0, |s| s.len());
    }
    work += parse_raw(sql).map_or(0, |t| t.stmts.len());
    work += fingerprint(sql).map_or(0, |f| (f & 1) as usize);
    work += normalize(sql).map_or(0, |s| s.len());
    work += scan(sql).map_or(0, |t| t.len());
    work
}

fn hostile() -> Vec<String> {
    vec![
        String::new(),
        ";".to_owned(),
        "SELECT '\0'".to_owned(),
        "SELEC 1".to_owned(),
        "SELECT * FROM t WHERE".to_owned(),
        r"SELECT E'\xff'".to_owned(),
        format!("SELECT {}1{}", "(".repeat(20_000), ")".repeat(20_000)),
        format!("SELECT {}", vec!["a"; 20_000].join("+")),
        "GRANT SET ON PARAMETER work_mem TO x".to_owned(),
    ]
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: parser-memcheck CORPUS_DIR");
        std::process::exit(2);
    };
    let mut entries = Vec::new();
    let Ok(files) = std::fs::read_dir(Path::new(&dir)) else {
        eprintln!("cannot read {dir}");
        std::process::exit(2);
    };
    for file in files.flatten() {
        if let Ok(text) = std::fs::read_to_string(file.path()) {
            entries.extend(
                text.split("\n----\n")
                    .map(|e| e.trim_matches('\n').to_owned()),
            );
        }
    }
    entries.extend(hostile());
    let half = entries.len() / 2;
    let second: Vec<String> = entries.split_off(half);
    // A second thread: its libpg_query state is freed when it exits; a tree it
    // parses is dropped here, on the main thread.
    let worker = std::thread::spawn(move || {
        let work: usize = second.iter().map(|sql| exercise(sql)).sum();
        (work, ParseTree::parse("SELECT 1 FROM moved").ok())
    });
    let work: usize = entries.iter().map(|sql| exercise(sql)).sum();
    let Ok((other, moved)) = worker.join() else {
        eprintln!("worker thread panicked");
        std::process::exit(1);
    };
    // A thread that never parses, only drops a tree: its libpg_query state
    // (which the context lands in) must be released when it exits.
    if std::thread::spawn(move || drop(moved)).join().is_err() {
        eprintln!("dropping thread panicked");
        std::process::exit(1);
    }
    println!(
        "exercised {} entries (work {})",
        entries.len() + half,
        work + other
    );
}
