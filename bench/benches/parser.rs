//! Parser bench: cost of parsing each statement of the shared query set.
//!
//! Today it measures the protobuf baseline (`pg_query::parse`); the direct FFI
//! paths are added beside it, in the same run, as they land.

use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for (name, sql) in bench::PARSER_QUERIES {
        group.bench_function(format!("protobuf/{name}"), |b| {
            b.iter(|| parser_ffi::parse_protobuf(black_box(sql)))
        });
    }
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
