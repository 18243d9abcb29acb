//! Faults under load (issue 35 point 1): two real shards, each behind a
//! [`FaultRelay`], pgshard with two-phase commit in front. While pgbench's
//! TPC-B runs through pgshard (restarted whenever its clients give up),
//! next to TPC-B-like transfers with client-side accounting and the
//! messaging bench's pub/sub workload (producers reserving ordered offsets
//! per partition, a consumer reading them), each fault is injected into
//! shard 1 for [`FAULT`], then healed: refused connections, resets, replies
//! cut mid-message, a black hole, latency, a throttled direction; then each
//! shard's Postgres killed with SIGKILL and restarted. After each:
//!
//! - balances agree (every transaction all or nothing) and the transfers'
//!   deltas sum to exactly those whose COMMIT succeeded plus in-doubt ones
//!   that landed; none that failed before COMMIT is there;
//! - each partition's offsets are gapless from 0 and the consumer read them
//!   in order; the producers' batches are exactly accounted for;
//! - no prepared transaction is left after the recovery interval;
//! - no server connection leaked: pools idle, and each shard's backends are
//!   exactly those SHOW SERVERS lists;
//! - no statement waited longer than [`LATENCY_BOUND`] (the timeouts plus a
//!   stated slack), every error carried a SQLSTATE;
//! - a statement on the faulted shard succeeds within [`SERVES_AGAIN`] of
//!   the heal (or restart).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod faults_under_load {
    pub mod checks;
    pub mod pgbench;
    pub mod workload;
}

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use faults_under_load::checks::{self, within};
use faults_under_load::pgbench::{self, PgbenchRuns};
use faults_under_load::workload::{self, Accounts, Seen};
use integration::{Direction, Fault, FaultRelay, PgServer, TestProxy};

const QUERY_TIMEOUT: Duration = Duration::from_millis(1_000);
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1_000);
const CHECKOUT_TIMEOUT: Duration = Duration::from_millis(2_000);
/// The shard the relay's faults hit (a SIGKILL hits each in turn).
const FAULTED: usize = 1;
/// Small, so that servers stuck behind a fault make other clients wait
/// for one (checkout_timeout).
const POOL_SIZE: usize = 5;
const RECOVERY_INTERVAL: Duration = Duration::from_millis(500);
/// How long each fault lasts.
const FAULT: Duration = Duration::from_secs(3);
/// Longest any one statement may take: a client may wait for a server
/// (checkout_timeout), which then gets query_timeout and the cancel's grace
/// (`min(query_timeout, 1 s)`), plus 500 ms of slack for a debug build on a
/// busy machine (measured: at most 3.6 s).
const LATENCY_BOUND: Duration = Duration::from_millis(
    CHECKOUT_TIMEOUT.as_millis() as u64 + 2 * QUERY_TIMEOUT.as_millis() as u64 + 500,
);
/// A healed shard serves again within this (pgshard's checks and reconnects,
/// and for a restarted Postgres, nothing more: it is up when healed).
const SERVES_AGAIN: Duration = Duration::from_secs(3);

/// What goes wrong in a phase.
#[derive(Debug, Clone, Copy)]
enum Injection {
    Relay(Fault),
    /// This shard's Postgres killed with SIGKILL, restarted after [`FAULT`].
    Kill(usize),
}

impl Injection {
    /// The shard it hits.
    fn shard(self) -> usize {
        match self {
            Injection::Relay(_) => FAULTED,
            Injection::Kill(shard) => shard,
        }
    }
}

struct Setup {
    proxy: TestProxy,
    relays: Vec<FaultRelay>,
    servers: Vec<PgServer>,
    _wal: tempfile::TempDir,
}

fn sharding() -> String {
    let mut text = String::new();
    for (table, column) in [
        ("pgbench_accounts", "aid"),
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_history", "aid"),
    ] {
        text.push_str(&format!(
            "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"{table}\"\ncolumn = \"{column}\"\ndata_type = \"integer\"\n"
        ));
    }
    // The messaging bench's tables (bench/src/messaging/schema.rs).
    text.push_str(
        "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"msg_counters\"\ncolumn = \"partition_id\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\n\
         [[sharded_tables]]\ndatabase = \"prod\"\nname_prefix = \"msg_log_p\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\n",
    );
    text
}

fn start() -> Setup {
    let servers = common::servers(2);
    let relays: Vec<FaultRelay> = servers
        .iter()
        .map(|s| FaultRelay::start(([127, 0, 0, 1], s.port()).into()).unwrap())
        .collect();
    let wal = tempfile::tempdir().unwrap();
    let mut databases = String::new();
    for (i, relay) in relays.iter().enumerate() {
        databases.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"shard_{i}\"\nshard = {i}\n",
            relay.port()
        ));
    }
    let config = format!(
        "[general]\nshutdown_timeout = 1000\ntwo_phase_commit = true\n\
         two_phase_commit_wal_dir = \"{}\"\ntwo_phase_commit_recovery_interval = {}\n\
         query_timeout = {}\nconnect_timeout = {}\ncheckout_timeout = {}\ndefault_pool_size = {POOL_SIZE}\n\
         {}{databases}{}",
        wal.path().display(),
        RECOVERY_INTERVAL.as_millis(),
        QUERY_TIMEOUT.as_millis(),
        CONNECT_TIMEOUT.as_millis(),
        CHECKOUT_TIMEOUT.as_millis(),
        common::ADMIN,
        sharding()
    );
    Setup {
        proxy: TestProxy::start(&config, common::USERS).unwrap(),
        relays,
        servers,
        _wal: wal,
    }
}

impl Setup {
    async fn shards(&self) -> Vec<tokio_postgres::Client> {
        let mut shards = Vec::new();
        for (i, server) in self.servers.iter().enumerate() {
            shards.push(checks::direct(server.port(), i).await);
        }
        shards
    }

    /// The messaging tables through pgshard, as the bench makes them.
    async fn create_messaging(&self) {
        let client = common::connect(self.proxy.port(), "app", "app-pw", "prod")
            .await
            .unwrap();
        client
            .batch_execute(
                "CREATE TABLE msg_counters (partition_id bigint PRIMARY KEY, next bigint NOT NULL)",
            )
            .await
            .unwrap();
        for p in 0..workload::PARTITIONS {
            client
                .batch_execute(&format!(
                    "CREATE TABLE msg_log_p{p} (off bigint PRIMARY KEY, payload bytea NOT NULL, \
                     created_at timestamptz NOT NULL DEFAULT now());\
                     INSERT INTO msg_counters (partition_id, next) VALUES ({p}, 0)"
                ))
                .await
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn faults_under_load_lose_nothing_and_hang_nothing() {
    common::watch_proxy_panics();
    let mut setup = start();
    let port = setup.proxy.port();
    pgbench::initialise(port).await;
    setup.create_messaging().await;
    let shards = setup.shards().await;
    let mut by_shard = [Vec::new(), Vec::new()];
    for (i, shard) in shards.iter().enumerate() {
        for row in shard
            .query(
                "SELECT aid FROM pgbench_accounts WHERE aid <= 200 ORDER BY aid",
                &[],
            )
            .await
            .unwrap()
        {
            by_shard[i].push(row.get::<_, i32>(0));
        }
    }
    let accounts = Arc::new(Accounts { by_shard });
    let seen = Arc::new(Seen::default());
    let mut runs = PgbenchRuns::default();
    let phases = [
        Injection::Relay(Fault::Refuse),
        Injection::Relay(Fault::Reset),
        Injection::Relay(Fault::CutMidMessage),
        Injection::Relay(Fault::BlackHole),
        Injection::Relay(Fault::Latency(Duration::from_millis(200))),
        Injection::Relay(Fault::Throttle {
            direction: Direction::ToClient,
            bytes_per_second: 8_192,
        }),
        Injection::Relay(Fault::Throttle {
            direction: Direction::ToServer,
            bytes_per_second: 8_192,
        }),
        Injection::Kill(1),
        // Shard 0 holds pgshard's node lock and catalog reader too.
        Injection::Kill(0),
    ];
    for (phase, injection) in (0u32..).zip(phases) {
        let started = Instant::now();
        seen.reset_phase();
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        // Tags stay unique across phases: task numbers are the phase's.
        for task in phase * 10..phase * 10 + 2 {
            let transfers = workload::transfers(
                port,
                task,
                Arc::clone(&accounts),
                Arc::clone(&seen),
                Arc::clone(&stop),
            );
            tasks.push(tokio::spawn(transfers));
            let producer = workload::producer(port, task, Arc::clone(&seen), Arc::clone(&stop));
            tasks.push(tokio::spawn(producer));
        }
        let shard = injection.shard();
        let aid = accounts.by_shard[shard][0];
        let bulk = workload::bulk(port, aid, Arc::clone(&seen), Arc::clone(&stop));
        tasks.push(tokio::spawn(bulk));
        // The consumer stops only once every producer has: a batch still
        // committing when `stop` is set would come after its last pass.
        let consumer_stop = Arc::new(AtomicBool::new(false));
        let consumer = tokio::spawn(workload::consumer(
            port,
            Arc::clone(&seen),
            Arc::clone(&consumer_stop),
        ));
        let bench = tokio::spawn(pgbench::run_until(port, Arc::clone(&stop)));

        tokio::time::sleep(Duration::from_millis(1_500)).await;
        match injection {
            Injection::Relay(fault) => {
                setup.relays[FAULTED].inject(fault);
                // A trickle lasts longer than a timeout plus its slack.
                let throttled = matches!(fault, Fault::Throttle { .. });
                tokio::time::sleep(if throttled { 2 * FAULT } else { FAULT }).await;
                setup.relays[FAULTED].heal();
            }
            Injection::Kill(shard) => {
                setup.servers[shard].kill().unwrap();
                tokio::time::sleep(FAULT).await;
                tokio::task::block_in_place(|| setup.servers[shard].start_again()).unwrap();
            }
        }
        let left = checks::prepared_count(setup.servers[shard].port(), shard).await;
        // A statement that needs the faulted shard.
        let probe = format!("SELECT abalance FROM pgbench_accounts WHERE aid = {aid}");
        let serves = workload::serves_again(port, &probe, Duration::from_secs(20)).await;
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        stop.store(true, Ordering::Relaxed);
        for task in tasks {
            task.await.unwrap();
        }
        consumer_stop.store(true, Ordering::Relaxed);
        runs.add(bench.await.unwrap());
        tokio::time::timeout(Duration::from_secs(20), consumer)
            .await
            .expect("the consumer did not catch up within 20 s")
            .unwrap();
        check_phase(&setup, &seen, &runs, injection, serves).await;
        println!("{injection:?}: {left} prepared transactions on shard {shard} as it healed");
        println!("{injection:?}: phase took {:?}", started.elapsed());
    }
}

/// Every promise of the module doc, after one phase.
async fn check_phase(
    setup: &Setup,
    seen: &Seen,
    runs: &PgbenchRuns,
    injection: Injection,
    serves: Result<Duration, String>,
) {
    let serves = serves
        .unwrap_or_else(|last| panic!("{injection:?}: the shard does not serve again: {last}"));
    let shards = setup.shards().await;
    let recovered = within(RECOVERY_INTERVAL + Duration::from_secs(3), || {
        checks::prepared(&shards)
    })
    .await
    .unwrap_or_else(|why| panic!("{injection:?}: {why}"));
    let pgbench_rows = checks::balances(&shards, seen).await;
    runs.account(pgbench_rows);
    let messages = checks::offsets(&shards, seen).await;
    let admin = common::connect(setup.proxy.port(), "admin", "admin-pw", "admin")
        .await
        .unwrap();
    let settled = within(Duration::from_secs(5), || {
        checks::pools_settled(&admin, &shards, POOL_SIZE)
    })
    .await
    .unwrap_or_else(|why| panic!("{injection:?}: {why}"));
    let slowest = seen.slowest.lock().unwrap().clone();
    let codes = seen.codes.lock().unwrap().clone();
    let unclean = seen.unclean.lock().unwrap().clone();
    let (transfers, in_doubt) = {
        let ledger = seen.transfers.lock().unwrap();
        (ledger.committed.len(), ledger.in_doubt.len())
    };
    println!(
        "{injection:?}: serves again after {serves:?}, prepared gone after {recovered:?}, pools settled after \
         {settled:?}; slowest statement {slowest:?}; errors {codes:?}; {transfers} transfers ({in_doubt} in doubt) and {messages} \
         messages so far; pgbench {runs}"
    );
    assert!(
        serves <= SERVES_AGAIN,
        "{injection:?}: served again only after {serves:?}"
    );
    assert!(
        unclean.is_empty(),
        "{injection:?}: errors without a SQLSTATE: {unclean:#?}"
    );
    runs.assert_clean(&format!("{injection:?}"));
    assert!(
        slowest.0 <= LATENCY_BOUND,
        "{injection:?}: a statement waited {:?} ({}), past {LATENCY_BOUND:?}",
        slowest.0,
        slowest.1
    );
    assert!(proxy_panics_none(), "pgshard panicked");
}

fn proxy_panics_none() -> bool {
    common::proxy_panics() == 0
}
