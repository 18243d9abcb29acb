//! pgbench through a sharded cluster, as a new user would try it (issue
//! 12): `pgbench -i` (DROP and CREATE broadcast, then TRUNCATE, INSERTs and
//! `COPY ... FREEZE` in one transaction that spans the shards, VACUUM,
//! primary keys), then its TPC-B-like script, whose transactions update
//! rows on different shards and commit with two-phase commit, in every
//! query mode. Afterwards every row is on the shard its key hashes to, the
//! balances agree (every transaction applied all of its updates or none),
//! and no prepared transaction is left behind.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::Cluster;

/// pgbench's tables, each sharded by its first key column.
const SHARDING: &str = "\
[[sharded_tables]]\ndatabase = \"prod\"\nname = \"pgbench_accounts\"\ncolumn = \"aid\"\ndata_type = \"integer\"\n\
[[sharded_tables]]\ndatabase = \"prod\"\nname = \"pgbench_branches\"\ncolumn = \"bid\"\ndata_type = \"integer\"\n\
[[sharded_tables]]\ndatabase = \"prod\"\nname = \"pgbench_tellers\"\ncolumn = \"tid\"\ndata_type = \"integer\"\n\
[[sharded_tables]]\ndatabase = \"prod\"\nname = \"pgbench_history\"\ncolumn = \"aid\"\ndata_type = \"integer\"\n";

const SCALE: i64 = 2;

fn pgbench(port: u16, args: &[&str]) -> String {
    let bins = integration::PgBinaries::find().unwrap();
    let output = Command::new(bins.bindir().join("pgbench"))
        .args(["-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .args(["-U", "app"])
        .args(args)
        .arg("prod")
        .env("PGPASSWORD", "app-pw")
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "pgbench {args:?} failed:\n{text}");
    text
}

/// The number after `label` in pgbench's report.
fn figure(report: &str, label: &str) -> i64 {
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

/// One bigint from a direct query.
async fn one(client: &tokio_postgres::Client, sql: &str) -> i64 {
    let row = client.query_one(sql, &[]).await.unwrap();
    row.get(0)
}

/// The shard (of `n`) of an integer key column, computed by Postgres
/// (DESIGN.md §2; an int4 hashes as the same int8).
fn shard_of(column: &str, n: usize) -> String {
    format!(
        "(((hashint8extended({column}::bigint, 8816678312871386365)::numeric \
         + 18446744073709551616 + 5305509591434766563) % 18446744073709551616) % {n})::int"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn pgbench_initialises_and_runs_tpcb_across_shards_with_two_phase_commit() {
    let servers = common::servers(2);
    let cluster = Cluster::start_sharded(servers, "two_phase_commit = true", SHARDING);
    let port = cluster.port();
    let init = tokio::task::spawn_blocking(move || pgbench(port, &["-i", "-s", "2"]))
        .await
        .unwrap();
    assert!(init.contains("creating primary keys"), "{init}");

    let shards = cluster.shards().await;
    let n = shards.len();
    let tables = [
        ("pgbench_accounts", "aid", 100_000),
        ("pgbench_branches", "bid", 1),
        ("pgbench_tellers", "tid", 10),
    ];
    for (table, column, per_scale) in tables {
        let mut total = 0;
        for (i, shard) in shards.iter().enumerate() {
            let sql = format!("SELECT count(*) FROM {table}");
            let rows = one(shard, &sql).await;
            let sql = format!(
                "SELECT count(*) FROM {table} WHERE {} <> {i}",
                shard_of(column, n)
            );
            assert_eq!(
                one(shard, &sql).await,
                0,
                "{table} rows misplaced on shard {i}"
            );
            assert!(rows > 0 || per_scale < 2, "{table}: no rows on shard {i}");
            total += rows;
        }
        assert_eq!(total, per_scale * SCALE, "{table}");
    }
    for (i, shard) in shards.iter().enumerate() {
        // The primary keys exist on every shard.
        let sql = "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'pgbench_%_pkey'";
        assert_eq!(one(shard, sql).await, 3, "primary keys on shard {i}");
    }

    let mut processed = 0;
    for mode in ["simple", "extended", "prepared"] {
        let args = ["-n", "-c", "8", "-j", "2", "-T", "4", "-M", mode];
        let report = tokio::task::spawn_blocking(move || pgbench(port, &args))
            .await
            .unwrap();
        let done = figure(&report, "number of transactions actually processed:");
        let failed = figure(&report, "number of failed transactions:");
        assert!(done > 20, "-M {mode}: only {done} transactions\n{report}");
        assert_eq!(failed, 0, "-M {mode}\n{report}");
        println!("-M {mode}: {done} transactions, 0 failed");
        processed += done;
    }

    // Every transaction added its delta to one account, one teller, one
    // branch and one history row, on whichever shards they live: all or
    // nothing, so the sums agree and history has a row per transaction.
    let mut sums = [0i64; 4];
    let mut history = 0;
    let mut decisions = 0;
    for (i, shard) in shards.iter().enumerate() {
        for (k, sql) in [
            "SELECT coalesce(sum(abalance), 0)::bigint FROM pgbench_accounts",
            "SELECT coalesce(sum(bbalance), 0)::bigint FROM pgbench_branches",
            "SELECT coalesce(sum(tbalance), 0)::bigint FROM pgbench_tellers",
            "SELECT coalesce(sum(delta), 0)::bigint FROM pgbench_history",
        ]
        .iter()
        .enumerate()
        {
            sums[k] += one(shard, sql).await;
        }
        history += one(shard, "SELECT count(*) FROM pgbench_history").await;
        let sql = format!(
            "SELECT count(*) FROM pgbench_history WHERE {} <> {i}",
            shard_of("aid", n)
        );
        assert_eq!(one(shard, &sql).await, 0, "history misplaced on shard {i}");
        decisions += one(shard, "SELECT count(*) FROM pgshard.decisions").await;
        let prepared = one(shard, "SELECT count(*) FROM pg_prepared_xacts").await;
        assert_eq!(prepared, 0, "prepared transactions left on shard {i}");
    }
    assert_eq!(history, processed, "one history row per transaction");
    // Transactions that wrote on both shards committed in two phases.
    assert!(decisions > 0, "no two-phase commit was recorded");
    assert!(
        sums.iter().all(|&s| s == sums[0]),
        "account, branch, teller and history sums differ: {sums:?}"
    );
    // pgshard's own view agrees with the shards' (a merged aggregate).
    let client = cluster.connect().await;
    let row = client
        .query_one("SELECT sum(abalance)::bigint FROM pgbench_accounts", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), sums[0]);
}
