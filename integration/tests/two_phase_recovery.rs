//! Two-phase commit under crashes: pgshard stopped dead (every socket
//! closed, nothing rolled back, as `kill -9` looks to the shards) at each
//! phase of a commit, a shard's Postgres killed and restarted, a client
//! that leaves mid-commit, and transfers between accounts on different
//! shards while a shard restarts. After another pgshard's recovery (with
//! no local state of the first) every transaction is all-or-nothing on
//! every shard, no prepared transaction is left and no lock is held. And
//! pgshard's own schema made by many connections at once.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{column, connect};
use integration::{PgServer, TestProxy};
use proxy::execute::two_phase::{recovery, Fault};

/// Shards with the common schema, and a pgdog.toml for pgshard over them
/// with two-phase commit, its log in `wal`, recovery every 200 ms.
fn setup(n: usize, wal: &std::path::Path) -> (Vec<PgServer>, String) {
    setup_with(n, &Log::InDir(wal, false))
}

/// The local decision log's settings.
enum Log<'a> {
    /// No `two_phase_commit_wal_dir` (the default).
    Off,
    /// The log in this directory, fsynced on each commit or not.
    InDir(&'a std::path::Path, bool),
}

/// As [`setup`], with the local log as `log` says.
fn setup_with(n: usize, log: &Log) -> (Vec<PgServer>, String) {
    common::watch_proxy_panics();
    let servers = common::servers(n);
    common::create_sharded_schema(&servers);
    let log = match log {
        Log::Off => String::new(),
        Log::InDir(dir, fsync) => format!(
            "two_phase_commit_wal_dir = \"{}\"\ntwo_phase_commit_wal_fsync = {fsync}\n",
            dir.display()
        ),
    };
    let general = format!("two_phase_commit = true\n{log}two_phase_commit_recovery_interval = 200");
    let config = common::sharded_config(&servers, &general, common::SHARDING);
    (servers, config)
}

/// `config` with recovery at start only: the pgshard that crashes leaves
/// the prepared parts to the next one.
fn only_at_start(config: &str) -> String {
    config.replace(
        "two_phase_commit_recovery_interval = 200",
        "two_phase_commit_recovery_interval = 0",
    )
}

async fn direct(server: &PgServer, i: usize) -> tokio_postgres::Client {
    connect(server.port(), "app", "app-pw", &format!("shard_{i}"))
        .await
        .unwrap()
}

/// Keys of `orders` on each of `n` shards.
async fn keys(server: &PgServer, n: usize) -> Vec<i64> {
    let client = direct(server, 0).await;
    let mut keys = vec![None; n];
    for key in 1..500i64 {
        let shard = common::postgres_hash_shard(&client, key, n).await;
        keys[shard].get_or_insert(key);
    }
    keys.into_iter().map(Option::unwrap).collect()
}

async fn count(servers: &[PgServer], sql: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let client = direct(server, i).await;
        out.push(column(&client, sql, "n").await[0].parse().unwrap());
    }
    out
}

async fn prepared(servers: &[PgServer]) -> i64 {
    let counts = count(servers, "SELECT count(*) AS n FROM pg_prepared_xacts").await;
    counts.iter().sum()
}

/// Wait until a restarted shard answers queries.
async fn until_up(server: &PgServer, i: usize) {
    let port = server.port();
    eventually("the shard back up", || async move {
        let conninfo =
            format!("host=127.0.0.1 port={port} user=app password=app-pw dbname=shard_{i}");
        match common::connect_str(&conninfo).await {
            Ok(client) => client.simple_query("SELECT 1").await.is_ok(),
            Err(_) => false,
        }
    })
    .await;
}

/// Wait until `check` holds (or fail after 20 s).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// BEGIN and one row per shard (`keys`), then COMMIT in a task of its own
/// (it may never return: the proxy is stopped under it).
async fn start_commit(proxy: &TestProxy, keys: &[i64]) -> tokio::task::JoinHandle<bool> {
    let client = common::connect(proxy.port(), "app", "app-pw", "prod")
        .await
        .unwrap();
    client.simple_query("BEGIN").await.unwrap();
    for key in keys {
        let sql = format!("INSERT INTO orders (tenant_id, id, item) VALUES ({key}, 1, 'x')");
        client.simple_query(&sql).await.unwrap();
    }
    tokio::spawn(async move { client.simple_query("COMMIT").await.is_ok() })
}

/// Stop pgshard dead at `fault`, start another (new instance, `wal2` for
/// its log) and wait for its recovery; returns the rows per shard.
async fn crash_and_recover(n: usize, fault: Fault, same_log: bool) -> Vec<i64> {
    let wal = tempfile::tempdir().unwrap();
    let (servers, config) = setup(n, wal.path());
    let keys = keys(&servers[0], n).await;
    let first = TestProxy::start(&only_at_start(&config), &common::raw_users()).unwrap();
    first.state().two_phase.inject(Some(fault));
    let commit = start_commit(&first, &keys).await;
    // Wait for the commit to reach the fault: every phase leaves a
    // prepared part behind.
    eventually("a prepared part", || async { prepared(&servers).await > 0 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.crash();
    assert!(!commit.await.unwrap(), "the client saw its COMMIT succeed");
    assert!(prepared(&servers).await > 0);
    let wal2 = tempfile::tempdir().unwrap();
    let config = match same_log {
        true => config,
        false => config.replace(
            &wal.path().display().to_string(),
            &wal2.path().display().to_string(),
        ),
    };
    let second = TestProxy::start(&config, &common::raw_users()).unwrap();
    eventually("recovery", || async { prepared(&servers).await == 0 }).await;
    let rows = count(&servers, "SELECT count(*) AS n FROM orders").await;
    // No lock is left: every row can be updated at once.
    for (i, server) in servers.iter().enumerate() {
        let client = direct(server, i).await;
        client
            .batch_execute("SET lock_timeout = '2s'; UPDATE orders SET item = 'y'")
            .await
            .unwrap();
    }
    common::copies::assert_equal(&second, &servers).await;
    drop(second);
    rows
}

#[tokio::test]
async fn a_crash_after_the_prepares_rolls_back_every_shard() {
    let rows = crash_and_recover(2, Fault::Prepared, true).await;
    assert_eq!(rows, vec![0, 0]);
    assert_eq!(common::proxy_panics(), 0);
}

#[tokio::test]
async fn a_crash_between_the_prepares_rolls_back_every_shard() {
    let rows = crash_and_recover(3, Fault::BetweenPrepares, true).await;
    assert_eq!(rows, vec![0, 0, 0]);
}

#[tokio::test]
async fn a_crash_after_the_decision_commits_every_shard_without_the_log() {
    // The second pgshard has a log of its own (empty): the decider's
    // record is what it goes by.
    let rows = crash_and_recover(2, Fault::Decided, false).await;
    assert_eq!(rows, vec![1, 1]);
}

#[tokio::test]
async fn without_a_local_log_a_crash_resolves_by_the_deciders_record() {
    for (fault, expected) in [(Fault::Prepared, vec![0, 0]), (Fault::Decided, vec![1, 1])] {
        let (servers, config) = setup_with(2, &Log::Off);
        let keys = keys(&servers[0], 2).await;
        let first = TestProxy::start(&only_at_start(&config), &common::raw_users()).unwrap();
        assert!(!first.state().two_phase.log.is_on());
        first.state().two_phase.inject(Some(fault));
        let commit = start_commit(&first, &keys).await;
        eventually("a prepared part", || async { prepared(&servers).await > 0 }).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        first.crash();
        assert!(!commit.await.unwrap(), "the client saw its COMMIT succeed");
        let second = TestProxy::start(&config, &common::raw_users()).unwrap();
        eventually("recovery", || async { prepared(&servers).await == 0 }).await;
        let rows = count(&servers, "SELECT count(*) AS n FROM orders").await;
        assert_eq!(rows, expected, "{fault:?}");
        drop(second);
    }
}

/// pgshard stops dead after its log recorded a decided commit and before
/// COMMIT PREPARED, and the decider shard goes down with it. A pgshard
/// started on the same log commits the prepared part from the log while
/// the decider is still down (fsynced or not: the record was written to
/// the system before the crash); without a log the part waits, prepared,
/// for the decider. Either way every shard ends committed.
#[tokio::test]
async fn the_local_log_commits_its_own_decisions_while_the_decider_is_down() {
    let (wal, synced) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let logs = [
        Log::Off,
        Log::InDir(wal.path(), false),
        Log::InDir(synced.path(), true),
    ];
    for log in &logs {
        let (mut servers, config) = setup_with(2, log);
        let keys = keys(&servers[0], 2).await;
        let first = TestProxy::start(&only_at_start(&config), &common::raw_users()).unwrap();
        first.state().two_phase.inject(Some(Fault::Logged));
        let commit = start_commit(&first, &keys).await;
        eventually("a prepared part", || async { prepared(&servers).await > 0 }).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        first.crash();
        assert!(!commit.await.unwrap(), "the client saw its COMMIT succeed");
        let on = count(&servers, "SELECT count(*) AS n FROM pg_prepared_xacts").await;
        let decider = on.iter().position(|n| *n == 0).unwrap();
        let part = 1 - decider;
        servers[decider].kill().unwrap();
        let second = TestProxy::start(&config, &common::raw_users()).unwrap();
        let left = || async {
            let client = direct(&servers[part], part).await;
            column(&client, "SELECT count(*) AS n FROM pg_prepared_xacts", "n").await[0]
                .parse::<i64>()
                .unwrap()
        };
        if matches!(log, Log::Off) {
            // Past the grace and several recovery passes: still waiting.
            tokio::time::sleep(recovery::GRACE + Duration::from_secs(1)).await;
            assert_eq!(left().await, 1, "resolved without the decider or a log");
        } else {
            eventually("recovery from the log", || async { left().await == 0 }).await;
        }
        servers[decider].start_again().unwrap();
        until_up(&servers[decider], decider).await;
        eventually("recovery", || async { prepared(&servers).await == 0 }).await;
        let rows = count(&servers, "SELECT count(*) AS n FROM orders").await;
        assert_eq!(rows, vec![1, 1]);
        drop(second);
    }
}

/// Sixteen clients commit transactions over two shards at once while the
/// decider shard is killed and restarted: after recovery each transaction
/// is on both shards or on neither, and every one whose COMMIT succeeded
/// is on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_with_the_decider_killed_resolve_each_exactly() {
    let (mut servers, config) = setup_with(2, &Log::Off);
    let keys = keys(&servers[0], 2).await;
    let proxy = TestProxy::start(&config, &common::raw_users()).unwrap();
    let port = proxy.port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let commits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = Vec::new();
    for worker in 0..16i64 {
        let (stop, keys) = (std::sync::Arc::clone(&stop), keys.clone());
        let commits = std::sync::Arc::clone(&commits);
        workers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let mut id = worker * 1_000_000;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok(client) = common::connect(port, "app", "app-pw", "prod").await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                loop {
                    id += 1;
                    // Shard 0's row first: the writer used last, shard 1,
                    // decides.
                    let commit = async {
                        client.simple_query("BEGIN").await?;
                        for key in &keys {
                            let sql = format!(
                                "INSERT INTO orders (tenant_id, id, item) VALUES ({key}, {id}, 'x')"
                            );
                            client.simple_query(&sql).await?;
                        }
                        client.simple_query("COMMIT").await
                    };
                    match commit.await {
                        Ok(_) => {
                            acked.push(id);
                            commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(_) => break,
                    }
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                }
            }
            acked
        }));
    }
    // Commits in every phase when the decider dies: kill it once some
    // went through (a slow machine commits few per second).
    eventually("commits", || async {
        commits.load(std::sync::atomic::Ordering::Relaxed) >= 32
    })
    .await;
    servers[1].kill().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    servers[1].start_again().unwrap();
    until_up(&servers[1], 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut acked = Vec::new();
    for worker in workers {
        acked.extend(worker.await.unwrap());
    }
    assert!(acked.len() >= 32, "{} commits", acked.len());
    eventually("recovery", || async { prepared(&servers).await == 0 }).await;
    let mut ids = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let client = direct(server, i).await;
        let mut on: Vec<i64> = column(&client, "SELECT id AS n FROM orders ORDER BY id", "n")
            .await
            .iter()
            .map(|id| id.parse().unwrap())
            .collect();
        on.sort_unstable();
        ids.push(on);
    }
    assert_eq!(ids[0], ids[1], "a transaction is on one shard only");
    let missing: Vec<&i64> = acked
        .iter()
        .filter(|id| ids[0].binary_search(id).is_err())
        .collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    drop(proxy);
}

#[tokio::test]
async fn a_shard_restarted_while_its_part_is_prepared_commits_with_the_others() {
    let wal = tempfile::tempdir().unwrap();
    let (mut servers, config) = setup(2, wal.path());
    let keys = keys(&servers[0], 2).await;
    let first = TestProxy::start(&only_at_start(&config), &common::raw_users()).unwrap();
    first.state().two_phase.inject(Some(Fault::Decided));
    let commit = start_commit(&first, &keys).await;
    eventually("a decision", || async {
        count(&servers, "SELECT count(*) AS n FROM pg_prepared_xacts")
            .await
            .iter()
            .sum::<i64>()
            > 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Both shards die and come back: the prepared part survives on disk.
    for (i, server) in servers.iter_mut().enumerate() {
        server.kill().unwrap();
        server.start_again().unwrap();
        until_up(server, i).await;
    }
    first.crash();
    let _ = commit.await;
    let second = TestProxy::start(&config, &common::raw_users()).unwrap();
    eventually("recovery", || async { prepared(&servers).await == 0 }).await;
    assert_eq!(
        count(&servers, "SELECT count(*) AS n FROM orders").await,
        vec![1, 1]
    );
    common::copies::assert_equal(&second, &servers).await;
    drop(second);
}

#[tokio::test]
async fn a_shard_killed_before_commit_rolls_back_the_others() {
    let wal = tempfile::tempdir().unwrap();
    let (mut servers, config) = setup(2, wal.path());
    let keys = keys(&servers[0], 2).await;
    let proxy = TestProxy::start(&config, &common::raw_users()).unwrap();
    // The shard used last holds the main server: its loss ends the
    // session (as a server crash ends a direct connection); the other's
    // loss fails the COMMIT with an error and the session goes on.
    for (killed, order) in [(1usize, [1usize, 0]), (0, [1, 0])] {
        let client = common::connect(proxy.port(), "app", "app-pw", "prod")
            .await
            .unwrap();
        client.simple_query("BEGIN").await.unwrap();
        for shard in order {
            let key = keys[shard];
            let sql = format!("INSERT INTO orders (tenant_id, id, item) VALUES ({key}, 1, 'x')");
            client.simple_query(&sql).await.unwrap();
        }
        servers[killed].kill().unwrap();
        servers[killed].start_again().unwrap();
        until_up(&servers[killed], killed).await;
        let err = client.simple_query("COMMIT").await.unwrap_err();
        if killed == 1 {
            assert_eq!(
                err.code().map(|c| c.code()),
                Some("08006"),
                "{}",
                common::describe(&err)
            );
            // The session goes on.
            assert_eq!(column(&client, "SELECT 1 AS n", "n").await, vec!["1"]);
        }
        eventually("no transaction left", || async {
            let idle = "SELECT count(*) AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'";
            prepared(&servers).await == 0 && count(&servers, idle).await.iter().all(|n| *n == 0)
        })
        .await;
        assert_eq!(
            count(&servers, "SELECT count(*) AS n FROM orders").await,
            vec![0, 0]
        );
    }
}

#[tokio::test]
async fn a_client_that_leaves_mid_commit_leaves_all_or_nothing() {
    let wal = tempfile::tempdir().unwrap();
    let (servers, config) = setup(2, wal.path());
    let keys = keys(&servers[0], 2).await;
    let proxy = TestProxy::start(&config, &common::raw_users()).unwrap();
    for round in 0..5 {
        let mut wire = common::wire::Wire::login(proxy.port(), "raw", "prod").await;
        for sql in ["BEGIN".to_owned()].into_iter().chain(keys.iter().map(|k| {
            format!("INSERT INTO orders (tenant_id, id, item) VALUES ({k}, {round}, 'x')")
        })) {
            wire.send(&common::wire::query(&sql)).await;
            wire.until_ready().await;
        }
        wire.send(&common::wire::query("COMMIT")).await;
        drop(wire);
    }
    eventually("every commit ended", || async {
        prepared(&servers).await == 0
            && count(
                &servers,
                "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'idle in transaction'",
            )
            .await
            .iter()
            .all(|n| *n == 0)
    })
    .await;
    let rows = count(&servers, "SELECT count(*) AS n FROM orders").await;
    assert_eq!(
        rows[0], rows[1],
        "a transaction committed on one shard only"
    );
}

/// N clients move money between accounts on different shards while one
/// shard restarts: failed transfers are retried, and at the end the total
/// is what it was.
#[tokio::test]
async fn transfers_keep_the_total_while_a_shard_restarts() {
    let wal = tempfile::tempdir().unwrap();
    let (mut servers, config) = setup(2, wal.path());
    let keys = keys(&servers[0], 2).await;
    let proxy = TestProxy::start(&config, &common::raw_users()).unwrap();
    let port = proxy.port();
    let admin = common::connect(port, "app", "app-pw", "prod")
        .await
        .unwrap();
    for key in &keys {
        let sql = format!("INSERT INTO counters (partition_id, next) VALUES ({key}, 1000)");
        admin.simple_query(&sql).await.unwrap();
    }
    let (a, b) = (keys[0], keys[1]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for worker in 0..6i64 {
        let stop = std::sync::Arc::clone(&stop);
        workers.push(tokio::spawn(async move {
            let (from, to) = if worker % 2 == 0 { (a, b) } else { (b, a) };
            let mut done = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok(client) = common::connect(port, "app", "app-pw", "prod").await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                for _ in 0..20 {
                    // Accounts are locked in key order: a cross-shard
                    // deadlock is one no single Postgres can detect.
                    let mut moves = [(from, -1), (to, 1)];
                    moves.sort();
                    let transfer = async {
                        client.simple_query("BEGIN").await?;
                        for (key, by) in moves {
                            let sql = format!(
                                "UPDATE counters SET next = next + {by} WHERE partition_id = {key}"
                            );
                            client.simple_query(&sql).await?;
                        }
                        client.simple_query("COMMIT").await
                    };
                    match transfer.await {
                        Ok(_) => done += 1,
                        Err(_) => {
                            let _ = client.simple_query("ROLLBACK").await;
                            break;
                        }
                    }
                }
            }
            done
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    servers[1].kill().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    servers[1].start_again().unwrap();
    until_up(&servers[1], 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut transfers = 0;
    for worker in workers {
        transfers += worker.await.unwrap();
    }
    assert!(transfers > 0);
    eventually("recovery", || async { prepared(&servers).await == 0 }).await;
    let total: i64 = count(&servers, "SELECT coalesce(sum(next), 0) AS n FROM counters")
        .await
        .iter()
        .sum();
    assert_eq!(total, 2000, "after {transfers} transfers");
    drop(proxy);
}

/// pgshard makes its schema and tables (`pgshard.decisions`, the move
/// store) from several connections at once, at start-up and on first use:
/// each creation takes an advisory lock first, since a `CREATE SCHEMA IF
/// NOT EXISTS` that runs while another session's is uncommitted fails with
/// 23505 once that one commits (found by bench/soak.sh: `pgbench -i`'s
/// first DROP TABLE failed with "two-phase commit needs pgshard.decisions
/// on shard 0: duplicate key value violates unique constraint
/// pg_namespace_nspname_index"). Here one creation is held open in a
/// transaction while the other starts: the second waits, then succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creators_of_pgshards_schema_all_succeed() {
    use proxy::execute::two_phase::create_decisions;
    use proxy::reshard::store::CREATE;
    let server = common::servers(1).remove(0);
    let decisions = create_decisions(&["postgres".to_owned()], true);
    let decisions = decisions.as_str();
    let pairs = [
        (decisions, decisions),
        (decisions, CREATE),
        (CREATE, decisions),
        (CREATE, CREATE),
    ];
    for (first, second) in pairs {
        let (a, b) = (direct(&server, 0).await, direct(&server, 0).await);
        a.batch_execute("DROP SCHEMA IF EXISTS pgshard CASCADE; BEGIN")
            .await
            .unwrap();
        a.batch_execute(first).await.unwrap();
        let second = second.to_owned();
        let racing = tokio::spawn(async move {
            b.batch_execute(&second)
                .await
                .map_err(|e| common::describe(&e))
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        a.batch_execute("COMMIT").await.unwrap();
        let made = racing.await.unwrap();
        assert!(made.is_ok(), "{made:?}");
    }
}
