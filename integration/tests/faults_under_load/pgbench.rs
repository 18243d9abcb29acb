//! pgbench through pgshard for the fault test: `pgbench -i` once, then
//! TPC-B runs of a few seconds one after another until told to stop (a
//! client that gets an error gives up, so a run ends early under a fault
//! and the next one starts), with what each run reports kept for the
//! accounting: processed transactions, clients that gave up, and whether
//! each one's error was a server's (ERROR/FATAL, with a SQLSTATE) rather
//! than a connection closed without a word. (pgshard's own 08006 after a
//! server vanished reads "FATAL:  server closed the connection
//! unexpectedly": a server's word, unlike libpq's message of the same text.)

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::workload::Stop;

const CLIENTS: usize = 3;

fn pgbench(port: u16, args: &[&str]) -> (bool, String) {
    let bins = integration::PgBinaries::find().unwrap();
    let output = Command::new(bins.bindir().join("pgbench"))
        .args(["-h", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .args(["-U", "app"])
        .args(args)
        .arg("prod")
        .env("PGPASSWORD", "app-pw")
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// `pgbench -i -s 1` (tables sharded by their first key).
pub async fn initialise(port: u16) {
    let (ok, text) = tokio::task::spawn_blocking(move || pgbench(port, &["-i", "-s", "1"]))
        .await
        .unwrap();
    assert!(ok, "pgbench -i failed:\n{text}");
}

/// What one run reported.
#[derive(Debug, Default)]
pub struct Run {
    processed: i64,
    gave_up: i64,
    /// Error lines that did not come from a server's ErrorResponse.
    unclean: Vec<String>,
}

/// Whether a line carries a server's (pgshard's) error: libpq prints an
/// ErrorResponse as `ERROR:` or `FATAL:` and its message.
fn from_server(line: &str) -> bool {
    line.contains("ERROR:") || line.contains("FATAL:")
}

fn parse(text: &str) -> Run {
    let mut run = Run::default();
    let mut before = "";
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("number of transactions actually processed:") {
            let n = rest.split_whitespace().next().unwrap_or("0");
            run.processed = n.split('/').next().unwrap().parse().unwrap();
        }
        if line.contains("aborted in command") {
            run.gave_up += 1;
            // The error is on the line itself, or (when the connection
            // ended with it) on the line before.
            if !from_server(line) && !from_server(before) {
                run.unclean.push(format!("{before}\n{line}"));
            }
        } else if (line.contains("server closed the connection")
            || line.contains("could not receive data"))
            && !from_server(line)
        {
            run.unclean.push(line.to_owned());
        }
        before = line;
    }
    run
}

/// TPC-B runs of 2 s until `stop`.
pub async fn run_until(port: u16, stop: Stop) -> Vec<Run> {
    let mut runs = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let clients = CLIENTS.to_string();
        let (_, text) = tokio::task::spawn_blocking(move || {
            pgbench(
                port,
                &["-n", "-c", &clients, "-j", "1", "-T", "2", "-M", "extended"],
            )
        })
        .await
        .unwrap();
        let run = parse(&text);
        if run.processed == 0 && run.gave_up == 0 {
            // It could not start (no connection): try again shortly.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        runs.push(run);
    }
    runs
}

/// Every run so far.
#[derive(Debug, Default)]
pub struct PgbenchRuns {
    processed: i64,
    gave_up: i64,
    runs: usize,
    unclean: Vec<String>,
}

impl PgbenchRuns {
    pub fn add(&mut self, runs: Vec<Run>) {
        for run in runs {
            self.runs += 1;
            self.processed += run.processed;
            self.gave_up += run.gave_up;
            self.unclean.extend(run.unclean);
        }
    }

    /// pgbench's history rows: one per processed transaction, plus at most
    /// one per client that gave up (its COMMIT may have landed).
    pub fn account(&self, history_rows: i64) {
        assert!(
            (self.processed..=self.processed + self.gave_up).contains(&history_rows),
            "pgbench: {history_rows} history rows for {} transactions processed and {} clients that gave up",
            self.processed,
            self.gave_up
        );
    }

    pub fn assert_clean(&self, phase: &str) {
        assert!(
            self.unclean.is_empty(),
            "{phase}: pgbench errors without a server's word: {:#?}",
            self.unclean
        );
    }
}

impl std::fmt::Display for PgbenchRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} runs, {} transactions, {} clients gave up",
            self.runs, self.processed, self.gave_up
        )
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn an_abort_is_clean_with_a_server_error_on_its_line_or_the_one_before() {
        let run = parse(
            "pgbench: error: client 0 script 0 aborted in command 4 query 0: ERROR:  canceling statement\n\
             FATAL:  server closed the connection unexpectedly\n\
             pgbench: error: client 2 aborted in command 9 (SQL) of script 0; perhaps the backend died while processing\n\
             number of transactions actually processed: 12\n",
        );
        assert_eq!((run.processed, run.gave_up), (12, 2));
        assert!(run.unclean.is_empty(), "{:?}", run.unclean);
        let run = parse(
            "server closed the connection unexpectedly\n\
             pgbench: error: client 1 aborted in command 9 (SQL) of script 0; perhaps the backend died while processing\n",
        );
        assert_eq!(run.unclean.len(), 2, "{:?}", run.unclean);
    }
}
