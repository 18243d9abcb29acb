//! The soak's sampler (issue 35 point 5, run by `bench/soak.sh`): every
//! interval, a running pgshard's resident memory and open descriptors
//! (from `/proc`), its server connections (the admin console's SHOW POOLS)
//! and the percentiles of the statements' server times in that interval
//! (the difference of two scrapes of `pool_query_seconds` at `/metrics`);
//! the samples as JSON and an SVG, and whether memory stayed flat.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

/// One sample.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sample {
    /// Seconds since the soak began.
    pub t: f64,
    pub rss_kib: u64,
    pub fds: u64,
    /// Server connections open (SHOW POOLS: active, idle, used, tested,
    /// logging in), over every pool.
    pub servers: u64,
    /// Clients connected (SHOW POOLS `cl_active` + `cl_waiting` is per
    /// pool; this is the `clients` gauge of /metrics).
    pub clients: u64,
    /// Requests answered in the interval, and their percentiles in ms
    /// (the upper bound of the histogram bucket the percentile falls in).
    pub requests: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
}

/// `pool_query_seconds`'s buckets summed over every pool: upper bound in
/// seconds (`+Inf` as infinity) -> cumulative count.
pub type Buckets = BTreeMap<OrderedBound, u64>;

/// A bucket's upper bound, ordered (NaN never occurs: bounds are parsed
/// from numbers or `+Inf`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrderedBound(pub f64);

impl Eq for OrderedBound {}

impl PartialOrd for OrderedBound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedBound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The query-time buckets and the `clients` gauge from an exposition text.
pub fn parse_metrics(text: &str) -> (Buckets, u64) {
    let mut buckets = Buckets::new();
    let mut clients = 0;
    for line in text.lines() {
        let Some((name_labels, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let name = name_labels.split('{').next().unwrap_or("");
        if name == "clients" || name.ends_with("_clients") {
            clients = value.parse::<f64>().map_or(0, |v| v as u64);
        }
        if !(name == "pool_query_seconds_bucket" || name.ends_with("_pool_query_seconds_bucket")) {
            continue;
        }
        let Some(le) = name_labels
            .split("le=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
        else {
            continue;
        };
        let bound = if le == "+Inf" {
            f64::INFINITY
        } else {
            match le.parse() {
                Ok(bound) => bound,
                Err(_) => continue,
            }
        };
        if let Ok(count) = value.parse::<u64>() {
            *buckets.entry(OrderedBound(bound)).or_default() += count;
        }
    }
    (buckets, clients)
}

/// The `q` quantile (0..1) of what was observed between `before` and
/// `after`, in ms: the upper bound of its bucket (`f64::INFINITY` past the
/// last finite one), and how many were observed.
pub fn quantile(before: &Buckets, after: &Buckets, q: f64) -> (f64, u64) {
    let count = |buckets: &Buckets, bound: &OrderedBound| buckets.get(bound).copied().unwrap_or(0);
    let delta = |bound: &OrderedBound| count(after, bound).saturating_sub(count(before, bound));
    let total = after.keys().last().map_or(0, delta);
    if total == 0 {
        return (0.0, 0);
    }
    let wanted = (q * total as f64).ceil().max(1.0) as u64;
    for bound in after.keys() {
        if delta(bound) >= wanted {
            return (bound.0 * 1000.0, total);
        }
    }
    (f64::INFINITY, total)
}

/// `GET /metrics` from `127.0.0.1:port` (HTTP/1.0: the body ends at close).
pub fn scrape(port: u16) -> Result<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))
        .with_context(|| format!("connect to the metrics port {port}"))?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no HTTP header end in the scrape"))?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        bail!("scrape answered {}", head.lines().next().unwrap_or(""));
    }
    Ok(body.to_owned())
}

/// Resident memory (KiB) and open descriptors of process `pid`.
pub fn process(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("no process {pid}"))?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("no VmRSS for {pid}"))?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64;
    Ok((rss, fds))
}

/// Server connections open over every pool, from SHOW POOLS's rows.
pub fn servers_open(rows: &[BTreeMap<String, String>]) -> u64 {
    const OPEN: [&str; 5] = ["sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"];
    rows.iter()
        .flat_map(|row| OPEN.iter().filter_map(|c| row.get(*c)))
        .filter_map(|v| v.parse::<u64>().ok())
        .sum()
}

/// How memory behaved over a run, after the first quarter (warm-up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    /// The mean of the last quarter against the mean of the second, as a
    /// fraction (0.05 = grew 5%).
    pub growth: f64,
    /// The highest sample after warm-up against the second quarter's
    /// mean, as a fraction (a spike that comes and goes shows here and not
    /// in the means).
    pub peak: f64,
}

impl Memory {
    /// Whether memory stayed flat: neither the means grew past
    /// `tolerance` nor any sample rose past `peak_tolerance`.
    pub fn flat(&self, tolerance: f64, peak_tolerance: f64) -> bool {
        self.growth <= tolerance && self.peak <= peak_tolerance
    }
}

/// How memory behaved (see [`Memory`]); too few samples to tell count as
/// flat.
pub fn memory(samples: &[Sample]) -> Memory {
    let n = samples.len();
    if n < 8 {
        return Memory {
            growth: 0.0,
            peak: 0.0,
        };
    }
    let mean = |s: &[Sample]| s.iter().map(|x| x.rss_kib as f64).sum::<f64>() / s.len() as f64;
    let early = mean(&samples[n / 4..n / 2]);
    let late = mean(&samples[n - n / 4..]);
    let highest = samples[n / 4..]
        .iter()
        .map(|s| s.rss_kib)
        .max()
        .unwrap_or(0) as f64;
    Memory {
        growth: (late - early) / early,
        peak: (highest - early) / early,
    }
}

/// The samples drawn: memory, descriptors and servers, and latency, over
/// time, one panel each.
pub fn svg(samples: &[Sample], path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (900, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let panels = root.split_evenly((3, 1));
    let end = samples.last().map_or(1.0, |s| s.t.max(1.0));
    let series: [Panel; 3] = [
        (
            "pgshard resident memory (MiB)",
            vec![("RSS", points(samples, |s| s.rss_kib as f64 / 1024.0))],
        ),
        (
            "open descriptors, server connections, clients",
            vec![
                ("fds", points(samples, |s| s.fds as f64)),
                ("servers", points(samples, |s| s.servers as f64)),
                ("clients", points(samples, |s| s.clients as f64)),
            ],
        ),
        (
            "server time per request in the interval (ms, bucket bound)",
            vec![
                ("p50", points(samples, |s| s.p50_ms)),
                ("p99", points(samples, |s| s.p99_ms)),
                ("p99.9", points(samples, |s| s.p999_ms)),
            ],
        ),
    ];
    for (panel, (title, lines)) in panels.iter().zip(series) {
        let top = lines
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
            .filter(|y| y.is_finite())
            .fold(1.0f64, f64::max)
            * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..end, 0.0..top)
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
        for (i, (name, points)) in lines.into_iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let finite: Vec<_> = points.into_iter().filter(|(_, y)| y.is_finite()).collect();
            chart
                .draw_series(std::iter::once(PathElement::new(finite, color)))
                .map_err(|e| anyhow!("{e}"))?
                .label(name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 15, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("{e}"))?;
    }
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

/// A panel's title and its named lines.
type Panel = (&'static str, Vec<(&'static str, Vec<(f64, f64)>)>);

fn points(samples: &[Sample], y: impl Fn(&Sample) -> f64) -> Vec<(f64, f64)> {
    samples.iter().map(|s| (s.t, y(s))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = "\
# TYPE pool_query_seconds histogram
pool_query_seconds_sum{database=\"a\",shard=\"0\"} 1.5
pool_query_seconds_bucket{database=\"a\",shard=\"0\",le=\"0.0001\"} 1
pool_query_seconds_bucket{database=\"a\",shard=\"0\",le=\"0.0002\"} 5
pool_query_seconds_bucket{database=\"a\",shard=\"0\",le=\"+Inf\"} 10
pool_query_seconds_bucket{database=\"a\",shard=\"1\",le=\"0.0001\"} 0
pool_query_seconds_bucket{database=\"a\",shard=\"1\",le=\"0.0002\"} 5
pool_query_seconds_bucket{database=\"a\",shard=\"1\",le=\"+Inf\"} 10
clients 7
";

    #[test]
    fn buckets_are_summed_over_pools_and_quantiles_read_from_their_difference() {
        let (after, clients) = parse_metrics(SCRAPE);
        assert_eq!(clients, 7);
        assert_eq!(after.get(&OrderedBound(0.0002)), Some(&10));
        assert_eq!(after.get(&OrderedBound(f64::INFINITY)), Some(&20));
        let none = Buckets::new();
        assert_eq!(quantile(&none, &after, 0.5), (0.2, 20));
        assert_eq!(quantile(&none, &after, 0.05), (0.1, 20));
        assert_eq!(quantile(&none, &after, 0.99).0, f64::INFINITY);
        // Only what came after the first scrape counts.
        assert_eq!(quantile(&after, &after, 0.5), (0.0, 0));
    }

    #[test]
    fn memory_is_flat_unless_the_last_quarter_grew_or_a_sample_spiked() {
        let at = |t: f64, rss: u64| Sample {
            t,
            rss_kib: rss,
            fds: 0,
            servers: 0,
            clients: 0,
            requests: 0,
            p50_ms: 0.0,
            p99_ms: 0.0,
            p999_ms: 0.0,
        };
        let steady: Vec<_> = (0..12).map(|i| at(i as f64, 1000 + (i % 2) * 10)).collect();
        assert!(memory(&steady).flat(0.05, 0.5));
        let growing: Vec<_> = (0..12).map(|i| at(i as f64, 1000 + i * 100)).collect();
        assert!(!memory(&growing).flat(0.05, 0.5));
        // A spike that comes and goes leaves the means alone, not the peak.
        let spiky: Vec<_> = (0..12)
            .map(|i| at(i as f64, if i == 7 { 3000 } else { 1000 }))
            .collect();
        let spike = memory(&spiky);
        assert_eq!(
            spike,
            Memory {
                growth: 0.0,
                peak: 2.0
            }
        );
        assert!(!spike.flat(0.05, 0.5));
        assert!(spike.flat(0.05, 2.0));
    }

    #[test]
    fn servers_are_counted_over_every_state_and_pool() {
        let row = |a: &str, i: &str| {
            BTreeMap::from([
                ("sv_active".to_owned(), a.to_owned()),
                ("sv_idle".to_owned(), i.to_owned()),
                ("sv_used".to_owned(), "0".to_owned()),
            ])
        };
        assert_eq!(servers_open(&[row("2", "3"), row("1", "0")]), 6);
    }
}
