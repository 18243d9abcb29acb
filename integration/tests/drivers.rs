//! The driver suite: real client drivers from their registries (psycopg 3,
//! asyncpg, node-postgres, postgres.js, pgx v5, pgjdbc; tokio-postgres in
//! `drivers/tokio_postgres.rs`) run their checks against pgshard on one
//! Postgres in transaction and in session mode and on two shards; in mode
//! `columns` (two empty shards, only a column-only entry on `id`) each runs
//! only its checks of tables it creates and writes at once (the other
//! checks need `drv_items` and the `sharded` mode's adaptations). The
//! checks live in `integration/drivers/<language>/` (installed by
//! `scripts/setup.sh --drivers`); each prints `ok <check>` or
//! `FAIL <check>: why` and closes with `<driver> <mode>: N passed, M failed`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod drivers {
    pub mod tokio_postgres;
    pub mod tokio_postgres_columns;
}

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use integration::driver_cluster::{DriverCluster, Mode};

/// How long one driver's checks may take on one cluster.
const RUN_LIMIT: Duration = Duration::from_secs(240);

fn drivers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("drivers")
}

/// One driver at a time: two drivers' clusters and clients at once on a
/// 2-core machine made timing-sensitive checks (cancel) flaky.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run `<language>/run <driver>` against every mode's cluster; fail with
/// every failing check listed.
fn run_driver(language: &str, driver: &str) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let run = drivers_dir().join(language).join("run");
    let mut summary = Vec::new();
    let mut failures = Vec::new();
    for mode in Mode::ALL {
        let cluster = DriverCluster::start(mode).unwrap();
        let started = Instant::now();
        let (status, output) = run_with_limit(
            Command::new(&run).arg(driver).envs(cluster.env()),
            RUN_LIMIT,
        );
        println!(
            "---- {driver} on {mode} ({:?}):\n{output}",
            started.elapsed()
        );
        let last = output
            .lines()
            .rev()
            .find(|l| l.contains(" passed, "))
            .unwrap_or("(no summary line)")
            .to_owned();
        summary.push(format!("{mode}: {last}"));
        failures.extend(
            output
                .lines()
                .filter(|l| l.starts_with("FAIL"))
                .map(|l| format!("{mode}: {l}")),
        );
        if !status || !last.ends_with(" 0 failed") {
            failures.push(format!("{mode}: run failed or incomplete: {last}"));
        }
    }
    println!("{driver}: {}", summary.join("; "));
    assert!(failures.is_empty(), "{driver}:\n{}", failures.join("\n"));
}

/// Run `command` (stdout and stderr together) for at most `limit`; returns
/// whether it exited 0, and what it printed.
fn run_with_limit(command: &mut Command, limit: Duration) -> (bool, String) {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {command:?}: {e} (install the drivers: scripts/setup.sh --drivers)")
        });
    // The pipe's writers live in `command` and the child: drop ours so the
    // reader sees EOF once the child (and anything it spawned) is done.
    let reader_thread = std::thread::spawn(move || {
        let mut output = String::new();
        let _ = reader.read_to_string(&mut output);
        output
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Our copies of the pipe's write end live in `command`: replace them.
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut output = reader_thread.join().unwrap();
    if status.is_none() {
        output.push_str(&format!(
            "\nFAIL run: still running after {limit:?}, killed\n"
        ));
    }
    (status.is_some_and(|s| s.success()), output)
}

#[test]
fn psycopg() {
    run_driver("python", "psycopg");
}

#[test]
fn asyncpg() {
    run_driver("python", "asyncpg");
}

#[test]
fn node_postgres() {
    run_driver("node", "node-postgres");
}

#[test]
fn postgres_js() {
    run_driver("node", "postgres.js");
}

#[test]
fn pgx() {
    run_driver("go", "pgx");
}

#[test]
fn pgjdbc() {
    run_driver("java", "pgjdbc");
}

#[test]
fn tokio_postgres() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut failures = Vec::new();
    for mode in Mode::ALL {
        let cluster = DriverCluster::start(mode).unwrap();
        let report = match mode {
            Mode::Columns => runtime.block_on(drivers::tokio_postgres_columns::run(&cluster)),
            _ => runtime.block_on(drivers::tokio_postgres::run(&cluster)),
        };
        println!("---- tokio-postgres on {mode}:\n{report}");
        failures.extend(
            report
                .lines()
                .filter(|l| l.starts_with("FAIL"))
                .map(|l| format!("{mode}: {l}")),
        );
    }
    assert!(
        failures.is_empty(),
        "tokio-postgres:\n{}",
        failures.join("\n")
    );
}
