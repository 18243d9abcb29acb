//! pgbench through pgshard in transaction mode with a pool of 4 server
//! connections for 32 clients: `-M simple`, `-M extended` and `-M prepared`
//! each finish with zero failed transactions. And pgbench's select-only
//! script on 2 shards sharded by `aid`, where the AST cache must serve
//! nearly every statement, in simple mode too (literals differ per run).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::Cluster;

fn pgbench(cluster: &Cluster, args: &[&str]) -> String {
    pgbench_on(cluster.port(), "prod", args)
}

fn pgbench_on(port: u16, database: &str, args: &[&str]) -> String {
    let bins = integration::PgBinaries::find().unwrap();
    let output = Command::new(bins.bindir().join("pgbench"))
        .args(["-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .args(["-U", "app"])
        .args(args)
        .arg(database)
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

#[tokio::test(flavor = "multi_thread")]
async fn pgbench_select_only_on_two_shards_is_served_from_the_cache() {
    let servers = common::servers(2);
    for (i, server) in servers.iter().enumerate() {
        // Each shard gets pgbench's tables; -S reads one account by `aid`,
        // which routes to one shard (every shard holds all rows here, so
        // the check is the cache and the routing path, not placement).
        pgbench_on(
            server.port(),
            &format!("shard_{i}"),
            &["-i", "-s", "1", "-q"],
        );
    }
    let sharding = "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"pgbench_accounts\"\ncolumn = \"aid\"\ndata_type = \"integer\"\n";
    let cluster = Cluster::start_sharded(servers, "default_pool_size = 4", sharding);
    let mut simple_processed = 0;
    for mode in ["simple", "prepared"] {
        let report = pgbench(
            &cluster,
            &["-S", "-c", "8", "-j", "2", "-T", "4", "-M", mode],
        );
        let processed = figure(&report, "number of transactions actually processed:");
        let failed = figure(&report, "number of failed transactions:");
        assert!(processed > 100, "-M {mode}: only {processed}\n{report}");
        assert_eq!(failed, 0, "-M {mode}\n{report}");
        if mode == "simple" {
            simple_processed = processed;
        }
        println!("sharded -S -M {mode}: {processed} transactions, 0 failed");
    }
    let admin = cluster.admin().await;
    let rows = common::rows(&admin, "SHOW STATS").await;
    let hits: u64 = rows[0]["query_cache_hits"].parse().unwrap();
    let misses: u64 = rows[0]["query_cache_misses"].parse().unwrap();
    println!("query cache: {hits} hits, {misses} misses");
    // Simple mode sends a new aid literal every time: only the first of
    // each statement text shape may miss. Prepared statements look up once.
    assert!(misses < 20, "{misses} misses");
    assert!(
        hits + 20 >= simple_processed,
        "{hits} hits for {simple_processed} simple-protocol transactions"
    );
}
