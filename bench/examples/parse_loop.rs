//! Runs one parse mode over one bench query in a loop, for profilers
//! (`valgrind --tool=callgrind`, `perf`): `parse_loop MODE QUERY ITERATIONS`,
//! MODE one of floor, tree, walk, raw, protobuf (parse), deparse_tree,
//! deparse_protobuf, deparse_pg_query (deparse of a tree parsed once).

use std::ffi::CString;

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(name), Some(iterations)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: parse_loop MODE QUERY ITERATIONS");
        std::process::exit(2);
    };
    let iterations: usize = iterations.parse().unwrap_or(1000);
    let queries = bench::parser_queries();
    let Some((_, sql)) = queries.iter().find(|(n, _)| n == name) else {
        eprintln!("unknown query {name}");
        std::process::exit(2);
    };
    let c_sql = CString::new(sql.as_str()).unwrap_or_default();
    let tree = parser_ffi::ParseTree::parse(sql).ok();
    let protobuf = parser_ffi::parse_protobuf(sql).ok();
    let mut work = 0usize;
    for _ in 0..iterations {
        work += match mode.as_str() {
            "floor" => parser_ffi::bench_floor_raw_parse(&c_sql).unwrap_or(0),
            "tree" => parser_ffi::ParseTree::parse(sql).map_or(0, |t| t.statements().count()),
            "walk" => parser_ffi::ParseTree::parse(sql)
                .map_or(0, |t| bench::walk::tables_and_predicates(&t).tables.len()),
            "raw" => parser_ffi::parse_raw(sql).map_or(0, |t| t.stmts.len()),
            "protobuf" => parser_ffi::parse_protobuf(sql).map_or(0, |t| t.stmts.len()),
            "deparse_tree" => tree
                .as_ref()
                .and_then(|t| parser_ffi::deparse(t).ok())
                .map_or(0, |s| s.len()),
            "deparse_protobuf" => protobuf
                .as_ref()
                .and_then(|t| parser_ffi::deparse_protobuf(t).ok())
                .map_or(0, |s| s.len()),
            "deparse_pg_query" => protobuf
                .as_ref()
                .and_then(|t| parser_ffi::deparse_pg_query(t).ok())
                .map_or(0, |s| s.len()),
            other => {
                eprintln!("unknown mode {other}");
                std::process::exit(2);
            }
        };
    }
    println!("{work}");
}
