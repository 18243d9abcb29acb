//! pgbench through pgshard in transaction mode with a pool of 4 server
//! connections for 32 clients: `-M simple`, `-M extended` and `-M prepared`
//! each finish with zero failed transactions.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::Cluster;

fn pgbench(cluster: &Cluster, args: &[&str]) -> String {
    let bins = integration::PgBinaries::find().unwrap();
    let output = Command::new(bins.bindir().join("pgbench"))
        .args(["-h", "127.0.0.1", "-p"])
        .arg(cluster.port().to_string())
        .args(["-U", "app"])
        .args(args)
        .arg("prod")
        .env("PGPASSWORD", "app-pw")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "pgbench {args:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

/// The number after `label` in pgbench's report.
fn figure(report: &str, label: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{report}"));
    line[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("cannot read {line:?}"))
}

#[test]
fn pgbench_32_clients_over_4_server_connections_in_every_query_mode() {
    let cluster = Cluster::start("default_pool_size = 4");
    pgbench(&cluster, &["-i", "-s", "2", "-q"]);
    for mode in ["simple", "extended", "prepared"] {
        let report = pgbench(&cluster, &["-c", "32", "-j", "2", "-T", "15", "-M", mode]);
        let processed = figure(&report, "number of transactions actually processed:");
        let failed = figure(&report, "number of failed transactions:");
        assert!(
            processed > 100,
            "-M {mode}: only {processed} transactions\n{report}"
        );
        assert_eq!(failed, 0, "-M {mode}\n{report}");
        println!("-M {mode}: {processed} transactions, 0 failed");
    }
}
