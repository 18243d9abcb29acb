//! `merge_memory`: whether pgshard's memory stays bounded while it merges a
//! big cross-shard SELECT. Starts 2 Postgres servers (integration harness),
//! loads table `t (id bigint, payload text)` with `--rows` rows in all
//! (shard 0 the odd ids, shard 1 the even ones; payload 96 bytes, and all
//! of them again in database `reference` on server 0, for the baseline),
//! then runs each query (ORDER BY merges, and a `GROUP BY payload` over as
//! many distinct values as rows: sorted groups combined as they stream, and
//! a top-N by count) twice, each time in a fresh child process of this
//! binary: `direct` (the client reads the rows from `reference`, one
//! Postgres holding them all) and `pgshard` (the same client through
//! pgshard, in the child's process, over the 2 shards). The client reads
//! every row as it comes (tokio-postgres, simple protocol, nothing kept) and
//! checks the count and order.
//!
//! Memory is the child process's RSS (`/proc/self/status`): the peak
//! high-water mark (`VmHWM`, reset through `/proc/self/clear_refs` after a
//! warm-up query, cross-checked by sampling `VmRSS` every 5 ms) minus
//! `VmRSS` just before the query. Through pgshard the process holds both the
//! client and pgshard, so `pgshard - direct` is pgshard's share.
//!
//! `cargo run --release -p bench --bin merge_memory` (`--rows N`).

#![forbid(unsafe_code)]

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use futures_util::StreamExt;
use integration::{PasswordEncryption, PgServer, ServerOptions, TestProxy};
use serde::{Deserialize, Serialize};
use tokio_postgres::{NoTls, SimpleQueryMessage};

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

const USER: &str = "app";
const PASSWORD: &str = "app-pw";

#[derive(Parser, Debug)]
#[command(about = "pgshard's memory while it merges a big cross-shard SELECT")]
struct Options {
    /// Rows in all (split over the 2 shards).
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Internal: measure one query in this process, against these ports.
    #[arg(long, hide = true, value_delimiter = ',')]
    child_ports: Vec<u16>,
    #[arg(long, hide = true, value_enum)]
    child_target: Option<Target>,
    #[arg(long, hide = true)]
    child_sql: Option<String>,
    #[arg(long, hide = true, value_enum)]
    child_order: Option<Order>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Target {
    Direct,
    Pgshard,
}

/// The order the client checks the rows are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Order {
    None,
    IdAsc,
    PayloadDesc,
}

/// One measured query, as the child reports it.
#[derive(Debug, Serialize, Deserialize)]
struct Measurement {
    rows: u64,
    wall_ms: f64,
    first_row_ms: f64,
    rss_before_kib: u64,
    /// `VmHWM` after the query (reset before it), or 0 if it cannot be reset.
    hwm_kib: u64,
    /// The largest sampled `VmRSS` during the query.
    sampled_max_kib: u64,
}

impl Measurement {
    fn peak_delta_mib(&self) -> f64 {
        let peak = self.hwm_kib.max(self.sampled_max_kib);
        peak.saturating_sub(self.rss_before_kib) as f64 / 1024.0
    }
}

/// The queries: (label, SQL, rows expected, order).
fn queries(total: u64) -> Vec<(&'static str, String, u64, Order)> {
    let quarter = total / 4;
    vec![
        (
            "merge, LIMIT 10",
            "SELECT id, payload FROM t ORDER BY id LIMIT 10".to_owned(),
            10.min(total),
            Order::IdAsc,
        ),
        (
            "concatenate (control)",
            "SELECT id, payload FROM t".to_owned(),
            total,
            Order::None,
        ),
        (
            "merge, 1/4 of the rows",
            format!("SELECT id, payload FROM t WHERE id <= {quarter} ORDER BY payload DESC"),
            quarter,
            Order::PayloadDesc,
        ),
        (
            "merge, all rows",
            "SELECT id, payload FROM t ORDER BY payload DESC".to_owned(),
            total,
            Order::PayloadDesc,
        ),
        (
            "GROUP BY, every value distinct",
            "SELECT payload, count(*) FROM t GROUP BY payload".to_owned(),
            total,
            Order::None,
        ),
        (
            "GROUP BY, top 10 by count",
            "SELECT payload, count(*) FROM t GROUP BY payload ORDER BY count(*) DESC, payload LIMIT 10"
                .to_owned(),
            10.min(total),
            Order::None,
        ),
    ]
}

fn main() -> Result<()> {
    let options = Options::parse();
    if let Some(target) = options.child_target {
        let sql = options.child_sql.as_deref().context("--child-sql")?;
        let order = options.child_order.unwrap_or(Order::None);
        let measurement = child(target, &options.child_ports, sql, order)?;
        println!("{}", serde_json::to_string(&measurement)?);
        return Ok(());
    }
    let started = Instant::now();
    let servers = start_servers()?;
    load(&servers, options.rows)?;
    let ports: Vec<String> = servers.iter().map(|s| s.port().to_string()).collect();
    eprintln!(
        "2 servers up, {} rows loaded in {:.1} s",
        options.rows,
        started.elapsed().as_secs_f64()
    );
    let mut lines = Vec::new();
    for (label, sql, expected, order) in queries(options.rows) {
        let mut measured = Vec::new();
        for target in [Target::Direct, Target::Pgshard] {
            let m = run_child(&ports.join(","), target, &sql, order)?;
            if m.rows != expected {
                bail!("{sql} ({target:?}): {} rows, expected {expected}", m.rows);
            }
            eprintln!(
                "{label:<24} {target:<8?} {:>8} rows {:>8.0} ms  first row {:>7.0} ms  RSS {:>7.1} MiB before, peak +{:.1} MiB (HWM {} KiB, sampled {} KiB)",
                m.rows,
                m.wall_ms,
                m.first_row_ms,
                m.rss_before_kib as f64 / 1024.0,
                m.peak_delta_mib(),
                m.hwm_kib,
                m.sampled_max_kib,
            );
            measured.push(m);
        }
        lines.push((label, sql, measured));
    }
    println!();
    println!(
        "{:<24} {:>9} | {:>9} {:>10} {:>11} | {:>9} {:>10} {:>11} | {:>14}",
        "query",
        "rows",
        "direct ms",
        "1st row ms",
        "peak +MiB",
        "pgshard ms",
        "1st row ms",
        "peak +MiB",
        "pgshard-direct"
    );
    for (label, _, m) in &lines {
        let (d, p) = (&m[0], &m[1]);
        println!(
            "{:<24} {:>9} | {:>9.0} {:>10.0} {:>11.1} | {:>9.0} {:>10.0} {:>11.1} | {:>10.1} MiB",
            label,
            p.rows,
            d.wall_ms,
            d.first_row_ms,
            d.peak_delta_mib(),
            p.wall_ms,
            p.first_row_ms,
            p.peak_delta_mib(),
            p.peak_delta_mib() - d.peak_delta_mib(),
        );
    }
    println!();
    for (label, sql, _) in &lines {
        println!("{label}: {sql}");
    }
    Ok(())
}

/// Measure one query in a fresh process of this binary.
fn run_child(ports: &str, target: Target, sql: &str, order: Order) -> Result<Measurement> {
    let exe = std::env::current_exe().context("this binary's path")?;
    let output = Command::new(exe)
        .arg("--child-ports")
        .arg(ports)
        .arg("--child-target")
        .arg(target.name())
        .arg("--child-sql")
        .arg(sql)
        .arg("--child-order")
        .arg(order.name())
        .output()
        .context("run the measuring child")?;
    if !output.status.success() {
        bail!(
            "child for {sql} ({target:?}) failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().context("child printed nothing")?;
    serde_json::from_str(line).with_context(|| format!("child's report {line:?}"))
}

/// A clap value's command-line spelling.
trait ValueEnumName {
    fn name(&self) -> String;
}

impl<T: ValueEnum> ValueEnumName for T {
    fn name(&self) -> String {
        self.to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }
}

fn start_servers() -> Result<Vec<PgServer>> {
    let options = ServerOptions {
        settings: vec![("shared_buffers".to_owned(), "128MB".to_owned())],
        ..ServerOptions::default()
    };
    let servers = PgServer::start_many(2, &options).context("start Postgres servers")?;
    for (i, server) in servers.iter().enumerate() {
        server.create_user(USER, PASSWORD, PasswordEncryption::ScramSha256)?;
        server.create_database(&format!("shard_{i}"), Some(USER))?;
    }
    if let Some(first) = servers.first() {
        first.create_database("reference", Some(USER))?;
    }
    Ok(servers)
}

/// Shard `i` holds the ids `i + 1, i + 3, ...`; `reference` all of them.
fn load(servers: &[PgServer], total: u64) -> Result<()> {
    let table = "CREATE TABLE t (id bigint NOT NULL, payload text NOT NULL)";
    let payload = "repeat(md5(g::text), 3)";
    let mut loads: Vec<(&PgServer, String, String)> = servers
        .iter()
        .enumerate()
        .map(|(i, server)| {
            let sql = format!(
                "SET ROLE {USER}; {table}; INSERT INTO t SELECT g, {payload} \
                 FROM generate_series({}, {total}, {}) g; ANALYZE t",
                i + 1,
                servers.len()
            );
            (server, format!("shard_{i}"), sql)
        })
        .collect();
    if let Some(first) = servers.first() {
        let sql = format!(
            "SET ROLE {USER}; {table}; INSERT INTO t SELECT g, {payload} \
             FROM generate_series(1, {total}) g; ANALYZE t"
        );
        loads.push((first, "reference".to_owned(), sql));
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = loads
            .iter()
            .map(|(server, db, sql)| scope.spawn(move || server.psql(db, sql)))
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(result) => {
                    result.context("load rows")?;
                }
                Err(_) => bail!("a load thread panicked"),
            }
        }
        Ok(())
    })
}

fn pgdog_toml(ports: &[u16]) -> String {
    let mut text = "[general]\nshutdown_timeout = 1000\ndefault_pool_size = 4\n\n\
                    [admin]\npassword = \"admin-pw\"\n\n"
        .to_owned();
    for (i, port) in ports.iter().enumerate() {
        text.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {port}\n\
             database_name = \"shard_{i}\"\nshard = {i}\n\n"
        ));
    }
    text.push_str(
        "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"t\"\ncolumn = \"id\"\n\
         data_type = \"bigint\"\nhasher = \"postgres\"\n",
    );
    text
}

fn users_toml() -> String {
    format!("[[users]]\nname = \"{USER}\"\ndatabase = \"prod\"\npassword = \"{PASSWORD}\"\n")
}

/// A field of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Reset `VmHWM` to the current RSS (Linux 4.0+); whether it worked.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// In the child: start pgshard if asked, connect, warm up, then read every
/// row of `sql` while watching this process's RSS.
fn child(target: Target, ports: &[u16], sql: &str, order: Order) -> Result<Measurement> {
    let Some(&first_port) = ports.first() else {
        bail!("no server ports");
    };
    let proxy = match target {
        Target::Direct => None,
        Target::Pgshard => {
            Some(TestProxy::start(&pgdog_toml(ports), &users_toml()).context("start pgshard")?)
        }
    };
    let (port, dbname) = match &proxy {
        Some(proxy) => (proxy.port(), "prod"),
        None => (first_port, "reference"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let measurement = runtime.block_on(async {
        let conninfo = format!(
            "host=127.0.0.1 port={port} user={USER} password={PASSWORD} dbname={dbname} \
             application_name=pgshard-merge-memory"
        );
        let (client, connection) = tokio_postgres::connect(&conninfo, NoTls)
            .await
            .with_context(|| format!("connect to 127.0.0.1:{port}"))?;
        tokio::spawn(connection);
        // pgshard opens its server connections and learns the collation.
        client
            .simple_query("SELECT id, payload FROM t ORDER BY id LIMIT 1")
            .await
            .context("warm-up query")?;
        tokio::time::sleep(Duration::from_millis(200)).await;

        let reset = reset_peak();
        let before = status_kib("VmRSS:").context("read VmRSS")?;
        let stop = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicU64::new(before));
        let sampler = {
            let (stop, max) = (Arc::clone(&stop), Arc::clone(&max));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(rss) = status_kib("VmRSS:") {
                        max.fetch_max(rss, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };

        let start = Instant::now();
        let mut first_row = None;
        let mut rows = 0u64;
        let mut last: Option<(i64, String)> = None;
        let stream = client.simple_query_raw(sql).await.context("send query")?;
        let mut stream = std::pin::pin!(stream);
        while let Some(message) = stream.next().await {
            let SimpleQueryMessage::Row(row) = message.context("read rows")? else {
                continue;
            };
            first_row.get_or_insert_with(|| start.elapsed());
            rows += 1;
            let id: i64 = row.get(0).unwrap_or_default().parse().unwrap_or(-1);
            let payload = row.get(1).unwrap_or_default();
            if let Some((last_id, last_payload)) = &last {
                let in_order = match order {
                    Order::None => true,
                    Order::IdAsc => *last_id <= id,
                    Order::PayloadDesc => last_payload.as_str() >= payload,
                };
                if !in_order {
                    bail!("row {rows} out of order ({order:?})");
                }
            }
            if order != Order::None {
                last = Some((id, payload.to_owned()));
            }
        }
        let wall = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        let _ = sampler.join();
        let hwm = if reset {
            status_kib("VmHWM:").unwrap_or(0)
        } else {
            0
        };
        Ok::<_, anyhow::Error>(Measurement {
            rows,
            wall_ms: wall.as_secs_f64() * 1e3,
            first_row_ms: first_row.unwrap_or(wall).as_secs_f64() * 1e3,
            rss_before_kib: before,
            hwm_kib: hwm,
            sampled_max_kib: max.load(Ordering::Relaxed),
        })
    })?;
    drop(proxy);
    Ok(measurement)
}
