//! The bench's results: one [`WorkloadResult`] per (target, workload) with
//! throughput, latency percentiles, errors, CPU measured and projected, and
//! the check; printed as text blocks and a ratio table, written as JSON.

use std::fmt::Write as _;

use serde::Serialize;

use super::check::Check;
use super::cpu::CpuSample;
use super::options::{Options, Workload};
use super::stats::Percentiles;

/// The machine the run was made on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu_model: String,
}

impl Machine {
    pub fn this() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split_once(':'))
                    .map(|(_, model)| model.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        Machine {
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
        }
    }
}

/// CPU over the timed window, measured, and what it projects.
#[derive(Debug, Clone, Serialize)]
pub struct CpuReport {
    /// Measured CPU seconds over the timed window.
    pub measured_seconds: CpuSample,
    /// Measured: each server's CPU microseconds per message written.
    pub server_us_per_message: Vec<f64>,
    /// Measured: the in-process pgshard's CPU microseconds per message
    /// written (0 when the target has no pgshard).
    pub pgshard_us_per_message: f64,
    /// Projected: messages written per second if each shard server had a
    /// core (host) of its own, bound by the busiest one:
    /// messages written / the busiest server's CPU seconds.
    pub projected_msgs_per_s: f64,
}

impl CpuReport {
    pub fn new(measured: CpuSample, written: u64) -> CpuReport {
        let per_message = |seconds: f64| {
            if written == 0 {
                0.0
            } else {
                seconds * 1e6 / written as f64
            }
        };
        let busiest = measured.servers.iter().copied().fold(0.0, f64::max);
        CpuReport {
            server_us_per_message: measured.servers.iter().map(|s| per_message(*s)).collect(),
            pgshard_us_per_message: per_message(measured.pgshard),
            projected_msgs_per_s: if busiest > 0.0 {
                written as f64 / busiest
            } else {
                0.0
            },
            measured_seconds: measured,
        }
    }
}

/// One workload on one target.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadResult {
    pub target: String,
    pub workload: Workload,
    pub server_version: String,
    /// The timed window; throughput and latencies are over it.
    pub seconds: f64,
    pub written: u64,
    pub read: u64,
    pub written_per_s: f64,
    pub read_per_s: f64,
    pub written_mib_per_s: f64,
    pub read_mib_per_s: f64,
    /// A write transaction (pub/sub: one batch) or statement (queue: one message).
    pub write_latency: Percentiles,
    /// A read transaction that got messages (pub/sub: one poll; queue: one message).
    pub read_latency: Percentiles,
    /// From the writer making a message to a reader committing its read.
    pub e2e_latency: Percentiles,
    pub errors: u64,
    pub first_errors: Vec<String>,
    /// `None` for an external endpoint.
    pub cpu: Option<CpuReport>,
    pub check: Check,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub machine: Machine,
    pub options: Options,
    pub results: Vec<WorkloadResult>,
}

impl Report {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.check.passed)
    }
}

fn latency_line(name: &str, p: &Percentiles) -> String {
    format!(
        "    {name:<12} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9}\n",
        p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms, p.samples
    )
}

/// A result as a text block.
pub fn block(r: &WorkloadResult) -> String {
    let mut text = format!(
        "== {} / {} ({:.1} s, PostgreSQL {}) ==\n",
        r.target,
        r.workload.name(),
        r.seconds,
        r.server_version
    );
    let _ = writeln!(
        text,
        "  written {:>9.0} msg/s {:>7.1} MiB/s  ({} messages)\n  read    {:>9.0} msg/s {:>7.1} MiB/s  ({} messages)",
        r.written_per_s, r.written_mib_per_s, r.written, r.read_per_s, r.read_mib_per_s, r.read
    );
    text.push_str("    latency ms         p50       p95       p99       max   samples\n");
    text.push_str(&latency_line("write", &r.write_latency));
    text.push_str(&latency_line("read", &r.read_latency));
    text.push_str(&latency_line("end-to-end", &r.e2e_latency));
    let _ = writeln!(text, "  errors {}", r.errors);
    for error in &r.first_errors {
        let _ = writeln!(text, "    {error}");
    }
    if let Some(cpu) = &r.cpu {
        text.push_str(&cpu_lines(cpu, r.seconds));
    }
    let verdict = if r.check.passed { "passed" } else { "FAILED" };
    let _ = writeln!(text, "  check {verdict}: {}", r.check.checked);
    for problem in &r.check.problems {
        let _ = writeln!(text, "    {problem}");
    }
    if r.check.problem_count > r.check.problems.len() as u64 {
        let _ = writeln!(text, "    ... {} problems in all", r.check.problem_count);
    }
    text
}

fn cpu_lines(cpu: &CpuReport, seconds: f64) -> String {
    let m = &cpu.measured_seconds;
    let list = |values: &[f64], unit: &str| {
        values
            .iter()
            .map(|v| format!("{v:.1}{unit}"))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    format!(
        "  CPU measured over the window (core-seconds): Postgres servers {}, pgshard {:.1}, \
         bench clients {:.1}; machine busy {:.1} of {:.1}\n  \
         CPU per message written (measured): servers {}, pgshard {:.1} us\n  \
         projected, each server on a host of its own (messages written / busiest server's CPU s): {:.0} msg/s per server core\n",
        list(&m.servers, " s"),
        m.pgshard,
        m.client,
        m.machine_busy,
        seconds * Machine::this().cores as f64,
        list(&cpu.server_us_per_message, " us"),
        cpu.pgshard_us_per_message,
        cpu.projected_msgs_per_s,
    )
}

/// The final table: per workload, each target's throughput and its ratio
/// to `direct` (when the run had it).
pub fn table(results: &[WorkloadResult]) -> String {
    let mut text = String::new();
    for workload in [Workload::Pubsub, Workload::Queue] {
        let rows: Vec<&WorkloadResult> =
            results.iter().filter(|r| r.workload == workload).collect();
        if rows.is_empty() {
            continue;
        }
        let direct = rows
            .iter()
            .find(|r| r.target == "direct")
            .map(|r| r.written_per_s);
        let _ = writeln!(
            text,
            "\n{:<8} {:<10} {:>10} {:>10} {:>8} {:>8} {:>9} {:>9} {:>12} {:>7}",
            workload.name(),
            "target",
            "written/s",
            "read/s",
            "MiB/s w",
            "vs direct",
            "e2e p50",
            "e2e p99",
            "projected/s",
            "check"
        );
        for r in rows {
            let ratio = direct
                .filter(|d| *d > 0.0)
                .map_or("-".to_owned(), |d| format!("{:.2}x", r.written_per_s / d));
            let projected = r
                .cpu
                .as_ref()
                .map_or("-".to_owned(), |c| format!("{:.0}", c.projected_msgs_per_s));
            let _ = writeln!(
                text,
                "{:<8} {:<10} {:>10.0} {:>10.0} {:>8.1} {:>8} {:>7.1}ms {:>7.1}ms {:>12} {:>7}",
                "",
                r.target,
                r.written_per_s,
                r.read_per_s,
                r.written_mib_per_s,
                ratio,
                r.e2e_latency.p50_ms,
                r.e2e_latency.p99_ms,
                projected,
                if r.check.passed { "ok" } else { "FAILED" }
            );
        }
    }
    text
}
