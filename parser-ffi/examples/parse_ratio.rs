//! The parser bench's parse table in small: for each bench statement, the
//! protobuf parse vs `parse_raw` vs libpg_query's raw parse alone, timed
//! interleaved in one run, without building the bench crate (which pulls in
//! the proxy and the integration harness). For quick iterations on the
//! conversion; `cargo bench -p bench --bench parser` stays the reference.
//!
//! `cargo run --profile bench -p parser-ffi --example parse_ratio [NAME...]`
//! prints ratios; `... -- --loop raw|protobuf|floor NAME N` parses one
//! statement N times, for callgrind or perf. `PARSE_RATIO_ALLOCATOR=mimalloc`
//! runs either under mimalloc's own `GlobalAlloc` instead of the benches'
//! `parser_ffi::Allocator`.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::CString;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The benches' allocator (`parser_ffi::Allocator`), or with
/// `PARSE_RATIO_ALLOCATOR=mimalloc` mimalloc's own `GlobalAlloc` (every
/// request through `mi_malloc_aligned`), to see what the allocator changes.
#[global_allocator]
static ALLOCATOR: Switch = Switch;

static MIMALLOC_CRATE: AtomicBool = AtomicBool::new(false);

struct Switch;

// SAFETY: forwards to one of two allocators, chosen once at start (before
// the first allocation of `main`'s work; anything allocated earlier is freed
// by mimalloc's `mi_free` either way, which frees blocks of both).
unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract, passed on.
        unsafe {
            if MIMALLOC_CRATE.load(Relaxed) {
                mimalloc::MiMalloc.alloc(layout)
            } else {
                parser_ffi::Allocator.alloc(layout)
            }
        }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract, passed on.
        unsafe {
            if MIMALLOC_CRATE.load(Relaxed) {
                mimalloc::MiMalloc.alloc_zeroed(layout)
            } else {
                parser_ffi::Allocator.alloc_zeroed(layout)
            }
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: GlobalAlloc's contract, passed on (both free with mi_free).
        unsafe { parser_ffi::Allocator.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract, passed on.
        unsafe {
            if MIMALLOC_CRATE.load(Relaxed) {
                mimalloc::MiMalloc.realloc(ptr, layout, new_size)
            } else {
                parser_ffi::Allocator.realloc(ptr, layout, new_size)
            }
        }
    }
}

#[path = "../../bench/src/queries.rs"]
mod queries;
#[path = "../../bench/src/timing.rs"]
mod timing;

fn main() {
    MIMALLOC_CRATE.store(
        std::env::var("PARSE_RATIO_ALLOCATOR").as_deref() == Ok("mimalloc"),
        Relaxed,
    );
    let args: Vec<String> = std::env::args().skip(1).collect();
    let queries = queries::parser_queries();
    if args.first().map(String::as_str) == Some("--loop") {
        let (Some(mode), Some(name), Some(n)) = (args.get(1), args.get(2), args.get(3)) else {
            eprintln!("usage: parse_ratio --loop raw|protobuf|floor NAME N");
            std::process::exit(2);
        };
        let Some((_, sql)) = queries.iter().find(|(q, _)| q == name) else {
            eprintln!("unknown statement {name}");
            std::process::exit(2);
        };
        let c_sql = CString::new(sql.as_str()).unwrap_or_default();
        let mut work = 0usize;
        for _ in 0..n.parse::<usize>().unwrap_or(1000) {
            work += match mode.as_str() {
                "raw" => parser_ffi::parse_raw(sql).map_or(0, |t| t.stmts.len()),
                "protobuf" => parser_ffi::parse_protobuf(sql).map_or(0, |t| t.stmts.len()),
                _ => parser_ffi::bench_floor_raw_parse(&c_sql).unwrap_or(0),
            };
        }
        println!("{work}");
        return;
    }
    println!(
        "{:<20} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "statement", "protobuf", "raw", "floor", "pb/raw", "raw/fl"
    );
    let mut ratios = Vec::new();
    for (name, sql) in &queries {
        if !args.is_empty() && !args.iter().any(|a| a == name) {
            continue;
        }
        let c_sql = CString::new(sql.as_str()).unwrap_or_default();
        let (ns, vs_protobuf) = timing::interleaved(&[
            &|| {
                black_box(parser_ffi::parse_protobuf(black_box(sql)).is_ok());
            },
            &|| {
                black_box(parser_ffi::parse_raw(black_box(sql)).is_ok());
            },
            &|| {
                black_box(parser_ffi::bench_floor_raw_parse(black_box(&c_sql)));
            },
        ]);
        ratios.push(vs_protobuf[1]);
        println!(
            "{name:<20} {:>10.0} {:>10.0} {:>10.0} {:>8.2}x {:>9.2}",
            ns[0],
            ns[1],
            ns[2],
            vs_protobuf[1],
            vs_protobuf[2] / vs_protobuf[1]
        );
    }
    println!(
        "geomean {:.2}x, min {:.2}x",
        timing::geomean(&ratios),
        ratios.iter().copied().fold(f64::INFINITY, f64::min)
    );
}
