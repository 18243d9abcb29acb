//! `tpch`: TPC-H's 22 queries direct on one Postgres holding every row vs
//! through pgshard over 2 shards (layout A of `integration::tpch`:
//! `lineitem` and `orders` sharded by order key, the rest omnisharded;
//! `cross_shard_finish = "coordinator"`), on our own generated data at
//! each scale factor given. Three servers: shard 0, shard 1, and the
//! reference. The reference is loaded directly and the shards through a
//! pgshard (COPY); the queries then run through a fresh pgshard in a child
//! process of this binary, so its memory is pgshard's alone: `VmHWM` of
//! `/proc/<pid>/status`, reset before each query through
//! `/proc/<pid>/clear_refs`, gives each query's peak RSS. Per query: the
//! median wall time of `--runs` runs (simple protocol, every row read),
//! direct and through pgshard (the answers compared: a difference fails
//! the bench), the path pgshard takes (EXPLAIN's first line), and for
//! queries finished on the coordinator the rows and bytes gathered
//! (EXPLAIN ANALYZE's line).
//!
//! Beside the spec's schema, `lineitem (l_partkey, l_suppkey)` is indexed
//! on the reference and the shards ([`LINEITEM_INDEX`]).
//!
//! Streaming vs coordinator for the same query is not measured: pgshard
//! has no per-query switch to send a query the streaming merge answers to
//! the coordinator (`cross_shard_finish` only decides what happens to
//! queries the merge refuses).
//!
//! `cargo run --release -p bench --bin tpch -- --scales 0.01,0.05 --runs 5`

#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::Parser;
use futures_util::SinkExt;
use integration::tpch::{self, Data, Layout};
use integration::{HostAuth, PgServer, ServerOptions, TestProxy};
use serde::Serialize;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

const USER: &str = "app";

/// On the reference and the shards (not in the spec's schema, as TPC-H
/// setups on Postgres add it): without it Q17's and Q20's subqueries,
/// correlated on part (and supplier), scan `lineitem` once per outer row.
/// The coordinator's temp tables have no index.
const LINEITEM_INDEX: &str = "CREATE INDEX lineitem_part_supp ON lineitem (l_partkey, l_suppkey)";

#[derive(Parser, Debug)]
#[command(about = "TPC-H's 22 queries direct vs through pgshard on 2 shards")]
struct Options {
    /// Scale factors (1 = the spec's SF 1).
    #[arg(long, value_delimiter = ',', default_value = "0.01,0.05")]
    scales: Vec<f64>,
    /// Runs per query and target (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The generator's seed.
    #[arg(long, default_value_t = 8)]
    seed: u64,
    /// Write the figures as JSON here too.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Internal: serve pgshard over these server ports until stdin closes.
    #[arg(long, hide = true, value_delimiter = ',')]
    serve: Vec<u16>,
}

/// One query's figures at one scale.
#[derive(Debug, Serialize)]
struct Line {
    scale: f64,
    query: u32,
    rows: usize,
    direct_ms: f64,
    /// `None`: refused.
    pgshard_ms: Option<f64>,
    path: String,
    /// Rows and bytes gathered (coordinator path only).
    gathered: Option<(u64, u64)>,
    /// pgshard's peak RSS during this query's runs, KiB.
    peak_kib: Option<u64>,
}

/// One scale's memory figures.
#[derive(Debug, Serialize)]
struct Memory {
    scale: f64,
    lineitem_rows: usize,
    /// pgshard's RSS after connecting, before the first query, KiB.
    rss_before_kib: Option<u64>,
    /// pgshard's peak RSS over every query of this scale, KiB.
    peak_kib: Option<u64>,
}

fn main() -> Result<()> {
    let options = Options::parse();
    if !options.serve.is_empty() {
        return serve(&options.serve);
    }
    let servers = start_servers()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut lines, mut memory) = (Vec::new(), Vec::new());
    for &scale in &options.scales {
        let started = Instant::now();
        let data = tpch::generate(scale, options.seed);
        reset_databases(&servers)?;
        runtime.block_on(load(&servers, &data))?;
        eprintln!(
            "SF {scale}: {} lines generated and loaded in {:.1} s",
            data.rows("lineitem"),
            started.elapsed().as_secs_f64()
        );
        let (scale_lines, scale_memory) = runtime.block_on(measure(&servers, &data, &options))?;
        lines.extend(scale_lines);
        memory.push(scale_memory);
    }
    print_tables(&lines, &memory, &options);
    if let Some(path) = &options.json {
        let json = serde_json::json!({ "lines": lines, "memory": memory });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    Ok(())
}

fn start_servers() -> Result<Vec<PgServer>> {
    let options = ServerOptions {
        host_auth: HostAuth::Trust,
        settings: vec![
            ("shared_buffers".to_owned(), "128MB".to_owned()),
            ("work_mem".to_owned(), "16MB".to_owned()),
        ],
        ..ServerOptions::default()
    };
    let servers = PgServer::start_many(3, &options).context("start Postgres servers")?;
    for server in &servers {
        server.psql("postgres", &format!("CREATE ROLE {USER} LOGIN"))?;
    }
    Ok(servers)
}

/// `shard_0`, `shard_1` and `reference` made again, empty, with the schema.
fn reset_databases(servers: &[PgServer]) -> Result<()> {
    let create = tpch::schema::create_all();
    for (server, database) in servers.iter().zip(["shard_0", "shard_1", "reference"]) {
        server.psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
        )?;
        server.create_database(database, Some(USER))?;
        server.psql(
            database,
            &format!("SET ROLE {USER}; {create}; {LINEITEM_INDEX}"),
        )?;
    }
    Ok(())
}

async fn connect(port: u16, database: &str) -> Result<Client> {
    let conninfo = format!("host=127.0.0.1 port={port} user={USER} dbname={database}");
    let (client, connection) = tokio_postgres::connect(&conninfo, NoTls)
        .await
        .with_context(|| format!("connect to {port}/{database}"))?;
    tokio::spawn(connection);
    Ok(client)
}

async fn copy(client: &Client, table: &str, text: &str) -> Result<()> {
    let sink = client
        .copy_in::<_, Bytes>(&format!("copy {table} from stdin"))
        .await?;
    let mut sink = std::pin::pin!(sink);
    for chunk in text.as_bytes().chunks(1 << 16) {
        sink.send(Bytes::copy_from_slice(chunk)).await?;
    }
    let rows = sink.finish().await?;
    if rows as usize != text.lines().count() {
        bail!("copy {table}: {rows} rows");
    }
    Ok(())
}

/// The reference directly, the shards through a pgshard of their own;
/// everything analyzed.
async fn load(servers: &[PgServer], data: &Data) -> Result<()> {
    let reference = connect(servers[2].port(), "reference").await?;
    let (mut child, port) = spawn_proxy(&[servers[0].port(), servers[1].port()])?;
    let through = connect(port, "prod").await?;
    for (table, text) in &data.tables {
        copy(&reference, table, text).await?;
        copy(&through, table, text).await?;
    }
    drop(through);
    stop(&mut child);
    reference.simple_query("analyze").await?;
    for (i, server) in servers[..2].iter().enumerate() {
        let shard = connect(server.port(), &format!("shard_{i}")).await?;
        shard.simple_query("analyze").await?;
    }
    Ok(())
}

/// Every row of `sql` as text (simple protocol).
async fn rows(
    client: &Client,
    sql: &str,
) -> Result<Vec<Vec<Option<String>>>, tokio_postgres::Error> {
    let mut rows = Vec::new();
    for message in client.simple_query(sql).await? {
        if let SimpleQueryMessage::Row(row) = message {
            rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            );
        }
    }
    Ok(rows)
}

/// The median wall time in ms of `runs` runs of `sql`, and its rows.
async fn timed(client: &Client, sql: &str, runs: usize) -> Result<(f64, Vec<Vec<Option<String>>>)> {
    let mut times = Vec::new();
    let mut last = Vec::new();
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        last = rows(client, sql).await.with_context(|| sql.to_owned())?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], last))
}

/// pgshard's path for `sql` (EXPLAIN's first line), and for the
/// coordinator path the rows and bytes EXPLAIN ANALYZE says it gathered.
async fn path(client: &Client, sql: &str) -> (String, Option<(u64, u64)>) {
    let first = match rows(client, &format!("explain {sql}")).await {
        Ok(rows) => rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .unwrap_or_default(),
        Err(e) => {
            let code = e.code().map(|c| c.code().to_owned()).unwrap_or_default();
            return (format!("refused ({code})"), None);
        }
    };
    if first.starts_with("pgshard: runs on") {
        return ("streamed".into(), None);
    }
    if !first.starts_with("pgshard: finished on the coordinator") {
        return ("one shard".into(), None);
    }
    let lines = rows(client, &format!("explain analyze {sql}"))
        .await
        .unwrap_or_default();
    let gathered = lines.iter().find_map(|row| {
        let line = row.first()?.as_deref()?;
        let rest = line.strip_prefix("pgshard: gathered ")?;
        let mut words = rest.split_whitespace();
        let rows = words.next()?.parse().ok()?;
        let bytes = words.nth(1)?.parse().ok()?;
        Some((rows, bytes))
    });
    ("coordinator".into(), gathered)
}

/// Each query direct and through a fresh pgshard child.
async fn measure(
    servers: &[PgServer],
    data: &Data,
    options: &Options,
) -> Result<(Vec<Line>, Memory)> {
    let reference = connect(servers[2].port(), "reference").await?;
    let (mut child, port) = spawn_proxy(&[servers[0].port(), servers[1].port()])?;
    let pid = child.id();
    let through = connect(port, "prod").await?;
    rows(&through, "select count(*) from lineitem").await?;
    let rss_before_kib = status_kib(pid, "VmRSS:");
    let mut lines = Vec::new();
    for query in tpch::queries(data.scale) {
        let (path, gathered) = path(&through, &query.sql).await;
        let (direct_ms, want) = timed(&reference, &query.sql, options.runs).await?;
        let reset = reset_peak(pid);
        let pgshard_ms = match path.starts_with("refused") {
            true => None,
            false => {
                let (ms, got) = timed(&through, &query.sql, options.runs).await?;
                if got != want {
                    bail!(
                        "Q{} at SF {}: pgshard's answer differs from the reference's",
                        query.number,
                        data.scale
                    );
                }
                Some(ms)
            }
        };
        let peak_kib = if reset {
            status_kib(pid, "VmHWM:")
        } else {
            None
        };
        eprintln!(
            "SF {} Q{:>2}: {path:<12} direct {direct_ms:>9.1} ms, pgshard {:>9.1} ms, peak {:?} KiB, gathered {gathered:?}",
            data.scale,
            query.number,
            pgshard_ms.unwrap_or(f64::NAN),
            peak_kib
        );
        lines.push(Line {
            scale: data.scale,
            query: query.number,
            rows: want.len(),
            direct_ms,
            pgshard_ms,
            path,
            gathered,
            peak_kib,
        });
    }
    let memory = Memory {
        scale: data.scale,
        lineitem_rows: data.rows("lineitem"),
        rss_before_kib,
        peak_kib: lines.iter().filter_map(|l| l.peak_kib).max(),
    };
    drop(through);
    stop(&mut child);
    Ok((lines, memory))
}

fn mib(kib: Option<u64>) -> String {
    kib.map(|k| format!("{:.1}", k as f64 / 1024.0))
        .unwrap_or_else(|| "-".into())
}

fn print_tables(lines: &[Line], memory: &[Memory], options: &Options) {
    println!(
        "\nmedian of {} runs, ms; pgshard's peak RSS per query (VmHWM reset before its runs)\n",
        options.runs
    );
    println!("| SF | Q | path | rows | direct ms | pgshard ms | pgshard / direct | gathered rows | gathered MB | pgshard peak RSS MiB |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for l in lines {
        let (ms, ratio) = match l.pgshard_ms {
            Some(ms) => (format!("{ms:.1}"), format!("{:.2}", ms / l.direct_ms)),
            None => ("-".into(), "-".into()),
        };
        let (rows, mb) = match l.gathered {
            Some((rows, bytes)) => (rows.to_string(), format!("{:.1}", bytes as f64 / 1e6)),
            None => ("".into(), "".into()),
        };
        println!(
            "| {} | {} | {} | {} | {:.1} | {ms} | {ratio} | {rows} | {mb} | {} |",
            l.scale,
            l.query,
            l.path,
            l.rows,
            l.direct_ms,
            mib(l.peak_kib)
        );
    }
    println!("\n| SF | lineitem rows | most rows one query gathered | pgshard RSS before the queries MiB | pgshard peak RSS over all queries MiB |");
    println!("|---|---:|---:|---:|---:|");
    for m in memory {
        let most = lines
            .iter()
            .filter(|l| l.scale == m.scale)
            .filter_map(|l| l.gathered.map(|g| g.0))
            .max()
            .unwrap_or(0);
        println!(
            "| {} | {} | {most} | {} | {} |",
            m.scale,
            m.lineitem_rows,
            mib(m.rss_before_kib),
            mib(m.peak_kib)
        );
    }
}

/// Start a child serving pgshard over `ports`; the child and its port.
fn spawn_proxy(ports: &[u16]) -> Result<(Child, u16)> {
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--serve")
        .arg(list.join(","))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("start the pgshard child")?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let port = line.trim().parse().context("the child's port")?;
    Ok((child, port))
}

/// Close the child's stdin (it stops pgshard) and reap it.
fn stop(child: &mut Child) {
    drop(child.stdin.take());
    let _ = child.wait();
}

/// In the child: pgshard over `ports` (layout A, finishing on the
/// coordinator, gathers bounded far above the bench's sizes) until stdin
/// closes.
fn serve(ports: &[u16]) -> Result<()> {
    let mut config = "[general]\nshutdown_timeout = 1000\ndefault_pool_size = 4\n\
                      cross_shard_finish = \"coordinator\"\n\
                      cross_shard_gather_limit = { rows = 100000000, bytes = 17179869184 }\n\n\
                      [admin]\npassword = \"admin-pw\"\n\n"
        .to_owned();
    for (i, port) in ports.iter().enumerate() {
        config.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {port}\n\
             database_name = \"shard_{i}\"\nshard = {i}\n\n"
        ));
    }
    config.push_str(&Layout::A.sharding_toml("prod"));
    let users = format!(
        "[[users]]\nname = \"{USER}\"\ndatabase = \"prod\"\nauth_type = \"trust\"\n\
         server_user = \"{USER}\"\n"
    );
    let proxy = TestProxy::start(&config, &users).context("start pgshard")?;
    println!("{}", proxy.port());
    std::io::stdout().flush()?;
    let mut rest = Vec::new();
    std::io::stdin().read_to_end(&mut rest)?;
    drop(proxy);
    Ok(())
}

/// A field of `/proc/<pid>/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Reset `VmHWM` of `pid` to its current RSS (Linux 4.0+); whether it worked.
fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}
