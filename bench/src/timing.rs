//! Timing helpers shared by the benches' closing tables.

use std::time::{Duration, Instant};

/// Interleaved timing for the table: round after round, each variant runs a
/// short batch, in rotating order, so that all of them see the same machine
/// (this one is shared and noisy). Returns each variant's median ns/op and,
/// for each variant, the median over rounds of `first / variant`.
pub fn interleaved(variants: &[&dyn Fn()]) -> (Vec<f64>, Vec<f64>) {
    const ROUNDS: usize = 41;
    const BATCH: Duration = Duration::from_millis(4);
    // Calibrate: iterations per batch for each variant.
    let batch_sizes: Vec<u64> = variants
        .iter()
        .map(|run| {
            let start = Instant::now();
            let mut n = 0u64;
            while start.elapsed() < BATCH {
                run();
                n += 1;
            }
            n.max(1)
        })
        .collect();
    let mut per_op = vec![Vec::with_capacity(ROUNDS); variants.len()];
    for round in 0..ROUNDS {
        for k in 0..variants.len() {
            let i = (k + round) % variants.len();
            let start = Instant::now();
            for _ in 0..batch_sizes[i] {
                variants[i]();
            }
            per_op[i].push(start.elapsed().as_nanos() as f64 / batch_sizes[i] as f64);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let medians = per_op.iter().map(|v| median(v.clone())).collect();
    let ratios = (0..variants.len())
        .map(|i| median((0..ROUNDS).map(|r| per_op[0][r] / per_op[i][r]).collect()))
        .collect();
    (medians, ratios)
}

pub fn geomean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}
