//! Merge bench: what pgshard's cross-shard row merge
//! (`proxy::execute::merge::RowMerge`) costs per row, next to plain concatenation
//! of the same rows (what a fan-out with no plan does: copy each DataRow
//! into the client's buffer). Over 2 and 4 shards, 10k pre-built DataRows
//! per shard, text format, plans from `router::merge::plan`:
//! - `order_int8`: `SELECT id, name FROM t ORDER BY id LIMIT 100`, each
//!   shard's rows sorted by `id` (int8), the ids interleaved across shards;
//! - `order_text`: the same rows, `ORDER BY name LIMIT 100` (text, compared
//!   bytewise as under a C collation), each shard's rows sorted by name;
//! - `group`: `SELECT g, count(*), sum(v) FROM t GROUP BY g`, partial
//!   groups as the shards would send them (int4 key, int8 count, numeric
//!   sum, as Postgres types `sum(bigint)`), 1k keys, each key 10 times per
//!   shard;
//! - `concat`: the baseline, the same rows copied as they come.
//!
//! The rows are fed the way `proxy/src/session/fan_out.rs` does: the merge
//! has `shards + 1` slots, the first shard to answer (here shard 0) is
//! slot 0 and shard `i` is slot `i + 1`; shards are read round-robin, only
//! those the merge `wants` while there are any, else any shard still
//! sending; the output buffer is cleared at 64 KiB (where the session
//! flushes to the client). One iteration is one whole statement: describe,
//! every row, every shard's end, finish.
//!
//! The slot the first shard would have had is skipped, as the session
//! does (before that fix it was never fed and never ended, so an ordered
//! merge sent nothing before `finish` and held every row). The closing
//! table also times `dense`: the same merge with `shards` slots, shard `i`
//! in slot `i`; and it says how many rows each had sent before `finish`.
//!
//! Criterion reports `merge` and `concat` (throughput in input rows); the
//! closing table times concat, merge and dense interleaved, with ns per
//! input row and the ratios to concat measured in the same rounds.
//!
//! `cargo bench -p bench --bench merge` (criterion's flags work too, e.g.
//! `-- --warm-up-time 1 --measurement-time 3`).

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use bytes::{BufMut, BytesMut};
use criterion::{black_box, Criterion, Throughput};
use proxy::execute::merge::{RowMerge, Window};
use proxy::protocol::rows::{parse_row, write_row};
use router::merge::{Bound, MergePlan, Shape};

/// Rows each shard sends.
const ROWS_PER_SHARD: usize = 10_000;
/// Distinct GROUP BY keys.
const GROUPS: usize = 1_000;
/// Where the session flushes its client buffer (`CLIENT_FLUSH_AT`).
const FLUSH_AT: usize = 64 * 1024;

const INT4: u32 = 23;
const INT8: u32 = 20;
const TEXT: u32 = 25;
const NUMERIC: u32 = 1700;

/// One statement's replies: the RowDescription body every shard sends and
/// each shard's DataRow messages, in the order the shard sends them.
struct Input {
    description: Vec<u8>,
    shards: Vec<Vec<Vec<u8>>>,
}

impl Input {
    fn rows(&self) -> usize {
        self.shards.iter().map(Vec::len).sum()
    }
}

/// One benchmarked statement.
struct Case {
    name: &'static str,
    sql: &'static str,
    plan: Arc<MergePlan>,
    window: Window,
    input: Input,
}

/// A RowDescription body: text-format fields of the given names and types.
fn description(fields: &[(&str, u32)]) -> Vec<u8> {
    let mut body = (fields.len() as u16).to_be_bytes().to_vec();
    for (name, oid) in fields {
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        // table oid, column number
        body.extend_from_slice(&[0; 6]);
        body.extend_from_slice(&oid.to_be_bytes());
        // type size, type modifier, format (text)
        body.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    }
    body
}

fn data_row(values: &[&[u8]]) -> Vec<u8> {
    let mut out = BytesMut::new();
    let values: Vec<Option<&[u8]>> = values.iter().copied().map(Some).collect();
    write_row(&mut out, &values);
    out.to_vec()
}

/// A name that sorts unlike the id (a 64-bit mix of it, in hex).
fn name_of(id: u64) -> String {
    let mut x = id.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    format!("name-{:016x}", x ^ (x >> 31))
}

/// `(id int8, name text)` rows: shard `s` of `n` holds ids `s, s + n, ...`,
/// sorted by id or by name.
fn ordered_input(shards: usize, by_name: bool) -> Input {
    let shards = (0..shards)
        .map(|s| {
            let mut rows: Vec<(u64, String)> = (0..ROWS_PER_SHARD)
                .map(|k| {
                    let id = (k * shards + s) as u64;
                    (id, name_of(id))
                })
                .collect();
            if by_name {
                rows.sort_by(|a, b| a.1.cmp(&b.1));
            }
            rows.iter()
                .map(|(id, name)| data_row(&[id.to_string().as_bytes(), name.as_bytes()]))
                .collect()
        })
        .collect();
    Input {
        description: description(&[("id", INT8), ("name", TEXT)]),
        shards,
    }
}

/// Partial groups `(g int4, count int8, sum numeric)`: key `k % GROUPS`.
fn group_input(shards: usize) -> Input {
    let shards = (0..shards)
        .map(|s| {
            (0..ROWS_PER_SHARD)
                .map(|k| {
                    let g = (k % GROUPS) as u64;
                    let count = 1 + (k + s) % 50;
                    let sum = (k as i64 * 7919 + s as i64 * 104_729) % 1_000_003 - 500_000;
                    data_row(&[
                        g.to_string().as_bytes(),
                        count.to_string().as_bytes(),
                        sum.to_string().as_bytes(),
                    ])
                })
                .collect()
        })
        .collect();
    Input {
        description: description(&[("g", INT4), ("count", INT8), ("sum", NUMERIC)]),
        shards,
    }
}

/// The statement's plan and window, as the session makes them.
fn plan(sql: &str) -> Result<(Arc<MergePlan>, Window)> {
    // No sharding keys configured: every GROUP BY merges.
    let sharding = router::sharding::Sharding::default();
    let plan = match router::merge::plan(sql, &sharding).shape {
        Shape::Merge(plan) => plan,
        other => bail!("{sql}: planned {other:?}, not a merge"),
    };
    let bound = |bound: Option<Bound>| match bound {
        None => Ok(None),
        Some(Bound::Value(n)) => Ok(Some(u64::try_from(n).unwrap_or(0))),
        Some(Bound::Param(n)) => bail!("{sql}: parameter ${n}"),
    };
    let window = Window {
        offset: bound(plan.limit.offset)?.unwrap_or(0),
        count: bound(plan.limit.count)?,
    };
    Ok((Arc::new(plan), window))
}

fn cases(shards: usize) -> Result<Vec<Case>> {
    let statements: [(&'static str, &'static str, Input); 3] = [
        (
            "order_int8",
            "SELECT id, name FROM t ORDER BY id LIMIT 100",
            ordered_input(shards, false),
        ),
        (
            "order_text",
            "SELECT id, name FROM t ORDER BY name LIMIT 100",
            ordered_input(shards, true),
        ),
        (
            "group",
            "SELECT g, count(*), sum(v) FROM t GROUP BY g",
            group_input(shards),
        ),
    ];
    statements
        .into_iter()
        .map(|(name, sql, input)| {
            let (plan, window) = plan(sql)?;
            Ok(Case {
                name,
                sql,
                plan,
                window,
                input,
            })
        })
        .collect()
}

/// What the fan-out feeds: a row merge, or plain concatenation.
trait Sink {
    fn describe(&mut self, body: &[u8], out: &mut BytesMut) -> Result<()>;
    fn wants(&self, slot: usize) -> bool;
    fn row(&mut self, slot: usize, message: &[u8], out: &mut BytesMut) -> Result<()>;
    fn shard_done(&mut self, slot: usize, out: &mut BytesMut) -> Result<()>;
    /// Rows sent so far.
    fn sent(&self) -> u64;
    fn finish(&mut self, out: &mut BytesMut) -> Result<()>;
}

impl Sink for RowMerge {
    fn describe(&mut self, body: &[u8], out: &mut BytesMut) -> Result<()> {
        Ok(RowMerge::describe(self, body, out)?)
    }
    fn wants(&self, slot: usize) -> bool {
        RowMerge::wants(self, slot)
    }
    fn row(&mut self, slot: usize, message: &[u8], out: &mut BytesMut) -> Result<()> {
        Ok(RowMerge::row(self, slot, message, out)?)
    }
    fn shard_done(&mut self, slot: usize, out: &mut BytesMut) -> Result<()> {
        Ok(RowMerge::shard_done(self, slot, out)?)
    }
    fn sent(&self) -> u64 {
        RowMerge::sent(self)
    }
    fn finish(&mut self, out: &mut BytesMut) -> Result<()> {
        Ok(RowMerge::finish(self, out)?)
    }
}

/// No plan: every DataRow goes out as it comes.
#[derive(Default)]
struct Concat {
    sent: u64,
}

impl Sink for Concat {
    fn describe(&mut self, body: &[u8], out: &mut BytesMut) -> Result<()> {
        out.put_u8(b'T');
        out.put_u32(body.len() as u32 + 4);
        out.extend_from_slice(body);
        Ok(())
    }
    fn wants(&self, _: usize) -> bool {
        true
    }
    fn row(&mut self, _: usize, message: &[u8], out: &mut BytesMut) -> Result<()> {
        self.sent += 1;
        out.extend_from_slice(message);
        Ok(())
    }
    fn shard_done(&mut self, _: usize, _: &mut BytesMut) -> Result<()> {
        Ok(())
    }
    fn sent(&self) -> u64 {
        self.sent
    }
    fn finish(&mut self, _: &mut BytesMut) -> Result<()> {
        Ok(())
    }
}

/// How shards map to the merge's slots.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slots {
    /// As the session does: `shards + 1` slots, the first shard to answer
    /// in slot 0, shard `i` in slot `i + 1`, so one slot is never fed.
    FanOut,
    /// `shards` slots, shard `i` in slot `i`: every slot is fed and ends.
    Dense,
}

/// What one statement through a sink gave: rows sent before `finish` and
/// rows sent in all.
struct Outcome {
    before_finish: u64,
    sent: u64,
}

/// Feed `input` to `sink` as the fan-out does (see the module doc). With
/// `keep`, the output is not cleared at [`FLUSH_AT`], for checking.
fn feed(
    sink: &mut dyn Sink,
    input: &Input,
    out: &mut BytesMut,
    keep: bool,
    slots: Slots,
) -> Result<Outcome> {
    let shards = input.shards.len();
    // Fan-out: shard 0 answers first, slot 0; shard i > 0: slot i + 1.
    let slot = |shard: usize| match slots {
        Slots::FanOut if shard > 0 => shard + 1,
        _ => shard,
    };
    let mut next = vec![0usize; shards];
    let mut open = vec![true; shards];
    let mut cursor = 0;
    out.clear();
    sink.describe(&input.description, out)?;
    loop {
        let from = |wanted: bool| {
            (0..shards)
                .map(|k| (cursor + k) % shards)
                .find(|&i| open[i] && (!wanted || sink.wants(slot(i))))
        };
        let Some(shard) = from(true).or_else(|| from(false)) else {
            break;
        };
        let rows = &input.shards[shard];
        match rows.get(next[shard]) {
            Some(message) => {
                sink.row(slot(shard), message, out)?;
                next[shard] += 1;
            }
            None => {
                sink.shard_done(slot(shard), out)?;
                open[shard] = false;
            }
        }
        if !keep && out.len() >= FLUSH_AT {
            out.clear();
        }
        cursor = shard + 1;
    }
    let before_finish = sink.sent();
    sink.finish(out)?;
    Ok(Outcome {
        before_finish,
        sent: sink.sent(),
    })
}

fn merge_once(case: &Case, out: &mut BytesMut, keep: bool, slots: Slots) -> Result<Outcome> {
    let shards = case.input.shards.len();
    let count = match slots {
        Slots::FanOut => shards + 1,
        Slots::Dense => shards,
    };
    let mut merge = RowMerge::new(Arc::clone(&case.plan), case.window, count, true);
    if let Slots::FanOut = slots {
        // As the session does: shard 0 answered first, its own number
        // (slot 1) will send nothing.
        merge.skip(1);
    }
    feed(&mut merge, &case.input, out, keep, slots)
}

fn concat_once(case: &Case, out: &mut BytesMut) -> Result<Outcome> {
    feed(
        &mut Concat::default(),
        &case.input,
        out,
        false,
        Slots::FanOut,
    )
}

/// The merged output's rows, as text.
fn rows_of(out: &[u8]) -> Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    let mut at = 0;
    while at < out.len() {
        let len = out
            .get(at + 1..at + 5)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)
            .context("truncated output")? as usize;
        let message = out.get(at..at + 1 + len).context("truncated output")?;
        if message[0] == b'D' {
            let row = parse_row(message).context("bad DataRow")?;
            rows.push(
                (0..row.values.len())
                    .map(|c| String::from_utf8_lossy(row.value(c).unwrap_or_default()).into_owned())
                    .collect(),
            );
        }
        at += 1 + len;
    }
    Ok(rows)
}

/// The merge gives what one Postgres would: checked once per case.
fn check(case: &Case, slots: Slots) -> Result<()> {
    let mut out = BytesMut::new();
    merge_once(case, &mut out, true, slots)?;
    let rows = rows_of(&out)?;
    let shards = case.input.shards.len();
    let ids = (0..(ROWS_PER_SHARD * shards) as u64).collect::<Vec<_>>();
    let expected: Vec<Vec<String>> = match case.name {
        "order_int8" => ids
            .iter()
            .take(100)
            .map(|&id| vec![id.to_string(), name_of(id)])
            .collect(),
        "order_text" => {
            let mut all: Vec<(String, u64)> = ids.iter().map(|&id| (name_of(id), id)).collect();
            all.sort();
            all.into_iter()
                .take(100)
                .map(|(name, id)| vec![id.to_string(), name])
                .collect()
        }
        _ => {
            let mut groups = vec![(0u64, 0i64); GROUPS];
            for (s, shard) in case.input.shards.iter().enumerate() {
                for (k, _) in shard.iter().enumerate() {
                    let g = &mut groups[k % GROUPS];
                    g.0 += (1 + (k + s) % 50) as u64;
                    g.1 += (k as i64 * 7919 + s as i64 * 104_729) % 1_000_003 - 500_000;
                }
            }
            groups
                .iter()
                .enumerate()
                .map(|(g, (count, sum))| vec![g.to_string(), count.to_string(), sum.to_string()])
                .collect()
        }
    };
    if rows != expected {
        bail!(
            "{} over {shards} shards: merged rows differ from the expected ones (first: {:?}, expected {:?})",
            case.name,
            rows.first(),
            expected.first()
        );
    }
    Ok(())
}

fn criterion_benches(c: &mut Criterion, all: &[Case]) {
    for case in all {
        let shards = case.input.shards.len();
        let mut group = c.benchmark_group(format!("merge/{}/{shards}_shards", case.name));
        group.throughput(Throughput::Elements(case.input.rows() as u64));
        let mut out = BytesMut::with_capacity(2 * FLUSH_AT);
        group.bench_function("merge", |b| {
            b.iter(|| merge_once(black_box(case), &mut out, false, Slots::FanOut).map(|o| o.sent))
        });
        group.bench_function("concat", |b| {
            b.iter(|| concat_once(black_box(case), &mut out).map(|o| o.sent))
        });
        group.finish();
    }
}

fn print_table(all: &[Case]) -> Result<()> {
    println!();
    println!("Table: concat, merge (fed as the session feeds it) and merge with every slot fed,");
    println!("timed interleaved (41 rounds of ~4 ms batches, rotating order): ns per input row");
    println!("are medians, the ratios medians of per-round ratios to concat. `early`: rows the");
    println!("merge had sent before finish(), of `sent`.");
    println!();
    println!(
        "{:<11} {:>6} {:>6} {:>8} {:>8} {:>8} {:>8} {:>10} {:>6} {:>6} {:>6}",
        "case",
        "shards",
        "rows",
        "concat",
        "merge",
        "/concat",
        "dense",
        "/concat",
        "early",
        "dense",
        "sent"
    );
    for case in all {
        let rows = case.input.rows() as f64;
        let shards = case.input.shards.len();
        let mut out = BytesMut::with_capacity(2 * FLUSH_AT);
        let fan_out = merge_once(case, &mut out, false, Slots::FanOut)?;
        let dense = merge_once(case, &mut out, false, Slots::Dense)?;
        let out = std::cell::RefCell::new(out);
        let (ns, vs_concat) = bench::timing::interleaved(&[
            &|| {
                black_box(concat_once(black_box(case), &mut out.borrow_mut()).is_ok());
            },
            &|| {
                let merged =
                    merge_once(black_box(case), &mut out.borrow_mut(), false, Slots::FanOut);
                black_box(merged.is_ok());
            },
            &|| {
                let merged =
                    merge_once(black_box(case), &mut out.borrow_mut(), false, Slots::Dense);
                black_box(merged.is_ok());
            },
        ]);
        println!(
            "{:<11} {:>6} {:>6} {:>8.1} {:>8.1} {:>7.1}x {:>8.1} {:>9.1}x {:>6} {:>6} {:>6}",
            case.name,
            shards,
            rows,
            ns[0] / rows,
            ns[1] / rows,
            1.0 / vs_concat[1],
            ns[2] / rows,
            1.0 / vs_concat[2],
            fan_out.before_finish,
            dense.before_finish,
            fan_out.sent,
        );
    }
    println!();
    println!("ns per input row; merge: `shards + 1` slots as in session/fan_out.rs; dense:");
    println!("`shards` slots, shard i in slot i; early / dense: rows sent before finish()");
    for case in all.iter().take(3) {
        println!("{}: {}", case.name, case.sql);
    }
    Ok(())
}

fn main() -> Result<()> {
    let mut all = cases(2)?;
    all.extend(cases(4)?);
    for case in &all {
        check(case, Slots::FanOut)?;
        check(case, Slots::Dense)?;
    }
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .configure_from_args();
    criterion_benches(&mut criterion, &all);
    criterion.final_summary();
    // `--profile-time N` (criterion's mode for profilers) runs the selected
    // benches only: the table would drown them in the profile.
    if !std::env::args().any(|arg| arg == "--profile-time") {
        print_table(&all)?;
    }
    Ok(())
}
