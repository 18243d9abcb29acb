//! `soak`: samples a running pgshard every interval for a while (see
//! `bench::soak` and `bench/soak.sh`), writes the samples as JSON lines as
//! it goes, then as an SVG, and exits non-zero when memory did not stay
//! flat.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use bench::soak::{self, Buckets, Sample};

#[derive(Debug, Parser)]
#[command(name = "soak")]
struct Options {
    /// pgshard's process id.
    #[arg(long)]
    pid: u32,
    /// pgshard's port (its admin console is database `admin` there).
    #[arg(long)]
    port: u16,
    /// The admin console's password.
    #[arg(long, default_value = "admin")]
    admin_password: String,
    /// pgshard's `openmetrics_port`.
    #[arg(long)]
    metrics_port: u16,
    /// Seconds between samples.
    #[arg(long, default_value_t = 10)]
    interval: u64,
    /// Seconds to sample for.
    #[arg(long)]
    duration: u64,
    /// Where the samples go: `<out>.jsonl` and `<out>.svg`.
    #[arg(long, default_value = "target/soak")]
    out: PathBuf,
    /// Memory growth allowed from the second quarter to the last (a fraction).
    #[arg(long, default_value_t = 0.05)]
    tolerance: f64,
    /// How far any sample after warm-up may rise above the second
    /// quarter's mean (a fraction).
    #[arg(long, default_value_t = 1.0)]
    peak_tolerance: f64,
}

fn main() -> Result<()> {
    let options = Options::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let admin = runtime.block_on(admin(&options))?;
    let jsonl = options.out.with_extension("jsonl");
    if let Some(dir) = jsonl.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file =
        std::fs::File::create(&jsonl).with_context(|| format!("create {}", jsonl.display()))?;
    let started = Instant::now();
    let mut before: Buckets = soak::parse_metrics(&soak::scrape(options.metrics_port)?).0;
    let mut samples = Vec::new();
    while started.elapsed() < Duration::from_secs(options.duration) {
        std::thread::sleep(Duration::from_secs(options.interval));
        let sample = runtime.block_on(sample(&options, &admin, started, &mut before))?;
        writeln!(file, "{}", serde_json::to_string(&sample)?)?;
        println!(
            "t={:>5.0}s rss={} KiB fds={} servers={} clients={} requests={} p50={}ms p99={}ms p99.9={}ms",
            sample.t, sample.rss_kib, sample.fds, sample.servers, sample.clients, sample.requests,
            sample.p50_ms, sample.p99_ms, sample.p999_ms
        );
        samples.push(sample);
    }
    let svg = options.out.with_extension("svg");
    soak::svg(&samples, &svg)?;
    let memory = soak::memory(&samples);
    let rss: Vec<u64> = samples.iter().map(|s| s.rss_kib).collect();
    println!(
        "{} samples in {}; RSS first {} KiB, last {} KiB, peak {} KiB; second quarter to last: {:+.1}%; peak over the second quarter: {:+.1}%",
        samples.len(),
        jsonl.display(),
        rss.first().unwrap_or(&0),
        rss.last().unwrap_or(&0),
        rss.iter().max().unwrap_or(&0),
        memory.growth * 100.0,
        memory.peak * 100.0
    );
    println!("chart written to {}", svg.display());
    if !memory.flat(options.tolerance, options.peak_tolerance) {
        eprintln!(
            "soak: memory not flat: means grew {:.1}% (allowed {:.1}%), peak {:.1}% over the second quarter's mean (allowed {:.1}%)",
            memory.growth * 100.0,
            options.tolerance * 100.0,
            memory.peak * 100.0,
            options.peak_tolerance * 100.0
        );
        std::process::exit(1);
    }
    Ok(())
}

async fn admin(options: &Options) -> Result<tokio_postgres::Client> {
    let conninfo = format!(
        "host=127.0.0.1 port={} user=admin password={} dbname=admin",
        options.port, options.admin_password
    );
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .context("connect to the admin console")?;
    tokio::spawn(connection);
    Ok(client)
}

async fn sample(
    options: &Options,
    admin: &tokio_postgres::Client,
    started: Instant,
    before: &mut Buckets,
) -> Result<Sample> {
    let (rss_kib, fds) = soak::process(options.pid)?;
    let mut rows = Vec::new();
    for message in admin.simple_query("SHOW POOLS").await? {
        if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
            let fields: BTreeMap<String, String> = row
                .columns()
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name().to_owned(), row.get(i).unwrap_or("").to_owned()))
                .collect();
            rows.push(fields);
        }
    }
    let (after, clients) = soak::parse_metrics(&soak::scrape(options.metrics_port)?);
    let (p50_ms, requests) = soak::quantile(before, &after, 0.5);
    let (p99_ms, _) = soak::quantile(before, &after, 0.99);
    let (p999_ms, _) = soak::quantile(before, &after, 0.999);
    *before = after;
    Ok(Sample {
        t: started.elapsed().as_secs_f64(),
        rss_kib,
        fds,
        servers: soak::servers_open(&rows),
        clients,
        requests,
        p50_ms,
        p99_ms,
        p999_ms,
    })
}
