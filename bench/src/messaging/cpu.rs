//! CPU time read from `/proc` (Linux): each Postgres server's (its
//! postmaster, every child process alive, and the children it has reaped),
//! this process's threads split into the bench's client threads (named
//! [`CLIENT_THREAD`], and the main thread) and the rest, which is the
//! in-process pgshard; and the whole machine's busy time.

use std::collections::HashMap;

use anyhow::{Context, Result};
use nix::unistd::{sysconf, SysconfVar};
use serde::Serialize;

/// The name of the bench client runtime's threads.
pub const CLIENT_THREAD: &str = "msg-client";

/// CPU seconds used so far.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpuSample {
    /// Per server, in shard order.
    pub servers: Vec<f64>,
    /// This process's threads other than the bench client's: pgshard when
    /// it runs in-process.
    pub pgshard: f64,
    /// The bench client's threads and the main thread.
    pub client: f64,
    /// Busy (non-idle, non-iowait) time of the whole machine, all cores.
    pub machine_busy: f64,
}

impl CpuSample {
    /// What was used between `earlier` and `self`.
    pub fn since(&self, earlier: &CpuSample) -> CpuSample {
        CpuSample {
            servers: self
                .servers
                .iter()
                .zip(&earlier.servers)
                .map(|(now, then)| (now - then).max(0.0))
                .collect(),
            pgshard: (self.pgshard - earlier.pgshard).max(0.0),
            client: (self.client - earlier.client).max(0.0),
            machine_busy: (self.machine_busy - earlier.machine_busy).max(0.0),
        }
    }
}

/// Reads CPU times for a set of Postgres servers and this process.
#[derive(Debug, Clone)]
pub struct CpuProbe {
    postmasters: Vec<i32>,
    ticks_per_second: f64,
}

/// A `/proc/<pid>/stat` line's fields of interest, in clock ticks.
struct Stat {
    comm: String,
    ppid: i32,
    /// utime + stime.
    own: u64,
    /// cutime + cstime: reaped children.
    reaped: u64,
}

fn parse_stat(text: &str) -> Option<Stat> {
    // The command name is in parentheses and may itself hold spaces or ')'.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
    let number = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
    let ticks = |i: usize| number(i).and_then(|n| u64::try_from(n).ok());
    Some(Stat {
        comm,
        ppid: i32::try_from(number(1)?).ok()?,
        own: ticks(11)? + ticks(12)?,
        reaped: ticks(13)? + ticks(14)?,
    })
}

fn read_stat(path: &str) -> Option<Stat> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| parse_stat(&text))
}

impl CpuProbe {
    pub fn new(postmasters: Vec<i32>) -> Result<CpuProbe> {
        let ticks = sysconf(SysconfVar::CLK_TCK)
            .context("sysconf(CLK_TCK)")?
            .context("no CLK_TCK")?;
        Ok(CpuProbe {
            postmasters,
            ticks_per_second: ticks as f64,
        })
    }

    pub fn sample(&self) -> Result<CpuSample> {
        let seconds = |ticks: u64| ticks as f64 / self.ticks_per_second;
        let processes = all_processes()?;
        let servers = self
            .postmasters
            .iter()
            .map(|pid| seconds(server_ticks(&processes, *pid)))
            .collect();
        let (client, pgshard) = own_threads()?;
        Ok(CpuSample {
            servers,
            pgshard: seconds(pgshard),
            client: seconds(client),
            machine_busy: machine_busy()? / self.ticks_per_second,
        })
    }
}

/// Every process's stat, by pid.
fn all_processes() -> Result<HashMap<i32, Stat>> {
    let mut processes = HashMap::new();
    for entry in std::fs::read_dir("/proc").context("read /proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // A process may exit between the listing and the read.
        if let Some(stat) = read_stat(&format!("/proc/{pid}/stat")) {
            processes.insert(pid, stat);
        }
    }
    Ok(processes)
}

/// A server's ticks: the postmaster's own and reaped children's, plus every
/// live child's (backends and background processes are its children).
fn server_ticks(processes: &HashMap<i32, Stat>, postmaster: i32) -> u64 {
    let own = processes
        .get(&postmaster)
        .map(|stat| stat.own + stat.reaped)
        .unwrap_or(0);
    own + processes
        .values()
        .filter(|stat| stat.ppid == postmaster)
        .map(|stat| stat.own + stat.reaped)
        .sum::<u64>()
}

/// This process's (client, other) thread ticks.
fn own_threads() -> Result<(u64, u64)> {
    let me = std::process::id().to_string();
    let (mut client, mut other) = (0, 0);
    for entry in std::fs::read_dir("/proc/self/task").context("read /proc/self/task")? {
        let Ok(entry) = entry else { continue };
        let tid = entry.file_name().to_string_lossy().into_owned();
        let Some(stat) = read_stat(&format!("/proc/self/task/{tid}/stat")) else {
            continue;
        };
        if tid == me || stat.comm.starts_with(CLIENT_THREAD) {
            client += stat.own;
        } else {
            other += stat.own;
        }
    }
    Ok((client, other))
}

/// Busy ticks of all cores together, from `/proc/stat`.
fn machine_busy() -> Result<f64> {
    let text = std::fs::read_to_string("/proc/stat").context("read /proc/stat")?;
    let line = text.lines().next().context("empty /proc/stat")?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let idle = ticks.get(3).copied().unwrap_or(0.0) + ticks.get(4).copied().unwrap_or(0.0);
    Ok(ticks.iter().take(8).sum::<f64>() - idle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_with_odd_names() {
        let line = "4242 (postgres: app (x) shard_0) S 4000 1 2 3 4 5 6 7 8 9 110 220 3 4 20 0";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.comm, "postgres: app (x) shard_0");
        assert_eq!((stat.ppid, stat.own, stat.reaped), (4000, 330, 7));
    }

    #[test]
    fn this_process_is_sampled() {
        let probe = CpuProbe::new(Vec::new()).unwrap();
        let sample = probe.sample().unwrap();
        assert!(sample.servers.is_empty());
        assert!(sample.machine_busy > 0.0);
    }
}
