//! A smoke run of the messaging bench: both workloads for a few seconds
//! through pgshard on 2 shards (servers started by the harness). Checks
//! that messages were written and read and that the bench's checks pass
//! (pub/sub gapless and in order per group and partition, queue accounting),
//! not speed.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bench::messaging::{run_all, Options, Workload};
use clap::Parser;

#[test]
fn two_shards_read_everything_gapless_and_in_order() {
    let options = Options::parse_from([
        "messaging",
        "--targets",
        "shards2",
        "--workload",
        "both",
        "--duration",
        "3",
        "--partitions",
        "4",
        "--progress",
        "1",
        "--drain",
        "30",
    ]);
    let report = run_all(&options).unwrap();
    assert_eq!(report.results.len(), 2);
    for result in &report.results {
        let what = format!("{} / {}", result.target, result.workload.name());
        assert!(
            result.check.passed,
            "{what}: {} {:?}",
            result.check.checked, result.check.problems
        );
        assert!(result.written > 0, "{what}: nothing written");
        assert!(result.read > 0, "{what}: nothing read");
        assert!(
            result.e2e_latency.samples > 0,
            "{what}: no end-to-end latency"
        );
        let cpu = result.cpu.as_ref().expect("CPU measured");
        assert_eq!(cpu.measured_seconds.servers.len(), 2, "{what}");
        assert!(
            cpu.measured_seconds.servers.iter().all(|s| *s > 0.0),
            "{what}: {cpu:?}"
        );
    }
    let pubsub = &report.results[0];
    assert_eq!(pubsub.workload, Workload::Pubsub);
    assert!(pubsub.check.problems.is_empty());
}
