//! `pgshard-demo` (what `scripts/demo.sh` runs), on free ports and a temp
//! data dir: it starts, moves the logical shard of its tenant to the other
//! database (SHOW MOVES until done, the keyed read answered by the other
//! database after), keeps serving (a tour of what its hints suggest:
//! a write across shards, a table made, pgbench on the sharded cluster),
//! and stops on Ctrl-C (SIGINT). Run again on the data it kept, it moves
//! the shard back.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use integration::child_proxy::free_port;

/// Two consecutive free ports (the demo's two servers).
fn two_ports() -> u16 {
    loop {
        let first = free_port().unwrap();
        let both = TcpListener::bind(("127.0.0.1", first))
            .and_then(|_a| TcpListener::bind(("127.0.0.1", first + 1)).map(|_| ()));
        if both.is_ok() {
            return first;
        }
    }
}

/// Run the demo on `dir` until its move is shown, then `tour` with its
/// port; its stdout lines and the process, stopped with Ctrl-C.
fn run_demo(dir: &Path, tour: impl Fn(u16)) -> (Vec<String>, Child) {
    let port = free_port().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgshard-demo"))
        .env("PGSHARD_DEMO_DIR", dir)
        .env("PGSHARD_DEMO_SERVER_PORT", two_ports().to_string())
        .env("PGSHARD_DEMO_PORT", port.to_string())
        .env(
            "PGSHARD_DEMO_METRICS_PORT",
            free_port().unwrap().to_string(),
        )
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, seen) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let mut out = Vec::new();
    loop {
        match seen.recv_timeout(Duration::from_secs(120)) {
            Ok(line) => {
                let moved = line.starts_with("The shard moved while pgshard served");
                out.push(line);
                if moved {
                    break;
                }
            }
            Err(e) => {
                let _ = child.kill();
                panic!("{e}: the demo printed:\n{}", out.join("\n"));
            }
        }
    }
    // It keeps serving until Ctrl-C.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "{}", out.join("\n"));
    tour(port);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    for line in seen.iter() {
        out.push(line);
    }
    (out, child)
}

/// What the printed hints suggest, after the demo's move: a write across
/// shards (two-phase commit, on in the demo), a table made unqualified,
/// and pgbench's own tables initialized and run on the sharded cluster.
fn tour(port: u16) {
    let sql = |sql: &str| run(port, "psql", &["-X", "-A", "-t", "-c", sql]);
    sql("DELETE FROM orders WHERE tenant_id IN (1, 2, 3, 4)");
    sql("INSERT INTO orders (tenant_id, item) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')");
    let count = sql("SELECT count(*) FROM orders WHERE tenant_id IN (1, 2, 3, 4)");
    assert_eq!(count.trim(), "4");
    sql("CREATE TABLE tour_notes (id int); DROP TABLE tour_notes");
    run(port, "pgbench", &["-i", "-s", "1", "-q"]);
    run(port, "pgbench", &["-c", "2", "-t", "20", "-n"]);
}

/// Run a client program of the Postgres binaries against the demo's
/// sharded cluster as its user; its stdout (the test fails on its failure).
fn run(port: u16, program: &str, args: &[&str]) -> String {
    let bins = integration::PgBinaries::find().unwrap();
    let output = Command::new(bins.bindir().join(program))
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "app"])
        .args(args)
        .arg("pgshard")
        .env("PGPASSWORD", "app")
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// The database that answered the keyed reads, before and after the move.
fn answered_by(out: &[String]) -> Vec<String> {
    out.iter()
        .filter_map(|l| l.split("answered by ").nth(1))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_demo_moves_a_shard_and_moves_it_back_when_run_again() {
    let dir = tempfile::tempdir().unwrap();
    // The servers run as `postgres` when the test runs as root.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("demo");
    let mut moves = Vec::new();
    for run in 0..2 {
        let (out, mut child) = run_demo(&data, tour);
        let text = out.join("\n");
        assert!(child.wait().unwrap().success(), "{text}");
        assert!(text.contains("demo stopped"), "{text}");
        assert!(text.contains("admin> MOVE SHARD"), "{text}");
        assert!(text.contains("    done "), "SHOW MOVES until done:\n{text}");
        let by = answered_by(&out);
        assert_eq!(by.len(), 2, "{text}");
        assert_ne!(by[0], by[1], "run {run}: {text}");
        moves.push(by);
    }
    // The second run moved the shard back.
    assert_eq!(moves[0][0], moves[1][1]);
    assert_eq!(moves[0][1], moves[1][0]);
}
