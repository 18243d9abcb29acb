//! A logical shard of pgbench's tables moves while pgbench's TPC-B-like
//! script runs through pgshard (issue 33's acceptance run, step 8's
//! plain layout): `pgbench -i` through pgshard onto two Postgres 15
//! servers (`wal_level = logical`), the four tables sharded by their
//! first key column over `shard_count = 12` logical shards placed
//! explicitly, two-phase commit on; then `pgbench -c 8 -j 2` runs for
//! 18 s and `MOVE SHARD` moves a logical shard holding a branch to the
//! other database 3 s in (the cluster's first move: it waits 3.5 s for
//! other instances to look at the newly pinned cluster before copying). pgbench reports no failed transaction and
//! exits cleanly; afterwards each row is on the database the new
//! placement names, the balances of accounts, tellers, branches and
//! history add up to the same total, history has a row per transaction,
//! and no slot, publication, subscription or prepared transaction is
//! left. The longest statement wait (the cutover's hold, and pgbench's
//! slowest transaction) is printed.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Cluster, USERS};
use integration::{PgServer, ServerOptions, TestProxy};
use router::hash::logical_shard;
use router::sharding::{DataType, Hasher, Key, KeySpace, ShardFunction};

const SHARD_COUNT: usize = 12;
const PLACEMENT: [usize; SHARD_COUNT] = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1];

fn sharding() -> String {
    let placement: Vec<String> = PLACEMENT.iter().map(ToString::to_string).collect();
    [
        ("pgbench_accounts", "aid"),
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_history", "aid"),
    ]
    .iter()
    .map(|(table, column)| {
        format!(
            "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"{table}\"\ncolumn = \"{column}\"\n\
             data_type = \"integer\"\nshard_count = {SHARD_COUNT}\nplacement = [{}]\n",
            placement.join(", ")
        )
    })
    .collect()
}

fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"mover\"\ndatabase = \"prod\"\npassword = \"mover-pw\"\n\
         server_user = \"postgres\"\n"
    )
}

fn logical_servers(n: usize) -> Vec<PgServer> {
    let settings = [
        ("wal_level", "logical"),
        ("max_replication_slots", "8"),
        ("max_wal_senders", "8"),
        ("max_logical_replication_workers", "4"),
        ("max_worker_processes", "16"),
        ("max_prepared_transactions", "100"),
    ];
    let options = ServerOptions {
        settings: settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ServerOptions::default()
    };
    common::servers_with(n, &options)
}

fn shard_of(key: i64) -> usize {
    let keys = KeySpace {
        data_type: DataType::Integer,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count: SHARD_COUNT,
        },
        placement: PLACEMENT.to_vec(),
        moving: None,
    };
    logical_shard(&keys, &Key::Int(key)).unwrap()
}

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

async fn one(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

/// The slowest transactions in pgbench's `-l` logs under `dir` that ended
/// within `during` (ms since the epoch): (latency in ms, when it ended),
/// slowest first.
fn slowest(dir: &std::path::Path, during: std::ops::Range<u64>) -> Vec<(f64, u64)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            // client_id transaction_no time script_no time_epoch time_us
            let fields: Vec<u64> = line
                .split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            if let [_, _, latency, _, epoch, us] = fields.as_slice() {
                let end = epoch * 1000 + us / 1000;
                if during.contains(&end) {
                    all.push((*latency as f64 / 1000.0, end));
                }
            }
        }
    }
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    all.truncate(5);
    all
}

fn epoch_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    u64::try_from(now.unwrap().as_millis()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shard_moves_while_pgbench_runs_tpcb_with_two_phase_commit() {
    common::watch_proxy_panics();
    let servers = logical_servers(2);
    let general = "two_phase_commit = true\ncutover_timeout = 5000\n\
                   resharding_replication_retry_min_delay = 200\n\
                   resharding_replica_identity_full = true";
    let config = common::moves_config(&servers, general, &sharding());
    let proxy = TestProxy::start(&config, &users()).unwrap();
    proxy
        .state()
        .moves
        .set_cleanup_delay(Duration::from_secs(1));
    let cluster = Cluster {
        proxy,
        databases: common::databases(&servers),
        general: String::new(),
        servers,
        copies_differ: None,
    };
    let port = cluster.port();
    tokio::task::spawn_blocking(move || pgbench(port, &["-i", "-s", "2"]))
        .await
        .unwrap();
    // The logical shard of branch 1 moves to the other database.
    let moving = shard_of(1);
    let (source, target) = (PLACEMENT[moving], 1 - PLACEMENT[moving]);
    let logs = tempfile::tempdir().unwrap();
    let prefix = logs.path().join("tx").display().to_string();
    let run = tokio::task::spawn_blocking(move || {
        let prefix = format!("--log-prefix={prefix}");
        let args = [
            "-n",
            "-c",
            "8",
            "-j",
            "2",
            "-T",
            "18",
            "-l",
            prefix.as_str(),
        ];
        pgbench(port, &args)
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let admin = cluster.admin().await;
    common::rows(&admin, &format!("MOVE SHARD {moving} TO {target}")).await;
    let begun = Instant::now();
    let mut steps: Vec<(String, u64)> = Vec::new();
    let status = loop {
        let rows = common::rows(&admin, "SHOW MOVES").await;
        let status = rows[0].clone();
        if steps.last().is_none_or(|(step, _)| *step != status["step"]) {
            steps.push((status["step"].clone(), epoch_ms()));
        }
        if status["step"] == "done" || status["step"] == "failed" {
            break status;
        }
        assert!(begun.elapsed() < Duration::from_secs(120), "{status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let moved_in = begun.elapsed();
    let report = run.await.unwrap();
    println!("SHOW MOVES: {status:?}");
    assert_eq!(status["step"], "done", "{status:?}");
    assert!(
        moved_in < Duration::from_secs(14),
        "the move ended {moved_in:?} after it started: pgbench had stopped"
    );
    let processed = figure(&report, "number of transactions actually processed:");
    let failed = figure(&report, "number of failed transactions:");
    let (held, waited) = cluster.proxy.state().metrics.move_holds();
    // The slowest transactions from the move's start on, and when they
    // ended, against the move's steps (ms after it began).
    let start = steps.first().map_or(0, |s| s.1);
    let slow = slowest(logs.path(), start..u64::MAX);
    let before = slowest(logs.path(), start - 2000..start);
    println!(
        "pgbench: {processed} transactions, {failed} failed; the cutover held {held} statements \
         ({waited:?} in all), the longest {} ms; pgbench's slowest transaction during the move \
         {:.1} ms",
        status["max_wait_ms"],
        slow.first().map_or(0.0, |s| s.0)
    );
    let at = |t: u64| i64::try_from(t).unwrap() - i64::try_from(start).unwrap();
    let steps: Vec<String> = steps
        .iter()
        .map(|(s, t)| format!("{s} at {}", at(*t)))
        .collect();
    let slow: Vec<String> = slow
        .iter()
        .map(|(ms, end)| format!("{ms:.0} ms ending at {}", at(*end)))
        .collect();
    println!(
        "move steps: {}; slowest: {}",
        steps.join(", "),
        slow.join(", ")
    );
    println!(
        "for comparison, the slowest in the 2 s before the move: {:.1} ms",
        before.first().map_or(0.0, |s| s.0)
    );
    assert_eq!(failed, 0, "{report}");
    assert!(processed > 100, "{report}");
    assert_eq!(common::proxy_panics(), 0);
    check(&cluster, moving, (source, target), processed).await;
}

/// Rows where the new placement puts them, balances that add up, a
/// history row per transaction, nothing of the move left.
async fn check(cluster: &Cluster, moving: usize, (source, target): (usize, usize), processed: i64) {
    let shards = cluster.shards().await;
    let placed = |key: i64| match shard_of(key) {
        s if s == moving => target,
        s => PLACEMENT[s],
    };
    let tables = [
        ("pgbench_accounts", "aid", 200_000),
        ("pgbench_branches", "bid", 2),
        ("pgbench_tellers", "tid", 20),
        ("pgbench_history", "aid", processed),
    ];
    for (table, column, total) in tables {
        let mut all = 0;
        for (database, shard) in shards.iter().enumerate() {
            let keys: Vec<i32> = shard
                .query(&format!("SELECT {column} FROM {table}"), &[])
                .await
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            let misplaced = keys
                .iter()
                .filter(|&&k| placed(i64::from(k)) != database)
                .count();
            assert_eq!(
                misplaced, 0,
                "{table} rows misplaced on database {database}"
            );
            all += keys.len() as i64;
        }
        assert_eq!(all, total, "{table}");
    }
    let mut sums = [0i64; 4];
    for shard in &shards {
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
        assert_eq!(
            one(shard, "SELECT count(*) FROM pg_prepared_xacts").await,
            0
        );
    }
    println!("balances: {sums:?}");
    assert!(sums.iter().all(|&s| s == sums[0]), "{sums:?}");
    let a = common::connect_str(&cluster.servers[source].conninfo(
        "postgres",
        None,
        &format!("shard_{source}"),
    ))
    .await
    .unwrap();
    let b = common::connect_str(&cluster.servers[target].conninfo(
        "postgres",
        None,
        &format!("shard_{target}"),
    ))
    .await
    .unwrap();
    assert_eq!(
        one(&a, "SELECT count(*) FROM pg_replication_slots").await,
        0
    );
    assert_eq!(one(&a, "SELECT count(*) FROM pg_publication").await, 0);
    assert_eq!(one(&b, "SELECT count(*) FROM pg_subscription").await, 0);
}
