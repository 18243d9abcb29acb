//! `bulk_load`: bulk writes direct to one Postgres and through pgshard into
//! 1, 2 and 4 shards, side by side. Starts 4 Postgres servers (integration
//! harness, trust auth), each with `pgbench_accounts` (pgbench's shape:
//! `aid int, bid int, abalance int, filler char(84)`) in database `shard_<i>`
//! and, on server 0, in database `reference` for the direct runs. pgshard
//! runs in a child process of this binary (so its peak RSS, `VmHWM` from
//! `/proc/<pid>/status`, is pgshard's alone), sharding `pgbench_accounts`
//! by `aid`.
//!
//! Per target: `COPY pgbench_accounts FROM STDIN` of `--rows` rows (text,
//! sent as 64 KiB CopyData messages by a minimal simple-protocol client, as
//! psql's `\copy` does), then `--inserts` statements of one multi-row
//! INSERT of `--insert-rows` rows each (literal values, simple protocol),
//! then as many executions of one prepared multi-row INSERT of
//! `--insert-rows` rows with bind parameters (4 per row, text; Parse once,
//! then Bind, Execute, Sync each, as drivers send a prepared statement).
//! Then as many JDBC-shaped batches of `--insert-rows` rows (pgjdbc's
//! `executeBatch` with `reWriteBatchedInserts=true`: prepared multi-row
//! INSERTs of 128, 64, 32, ... rows, Bind and Execute each, one Sync).
//! Tables are truncated before each run; row counts are checked after.
//! For each shard count above 1, the floor: `direct, N databases in
//! parallel` cuts each statement's rows in N slices sent at once straight
//! to N databases on their own servers (each slice committing on its own),
//! what the parts in parallel cost on this machine without pgshard.
//!
//! `cargo run --release -p bench --bin bulk_load` (`--rows N`, `--shards
//! 2,4`, `--no-copy`, `--baseline <another bulk_load>` to run that build's
//! pgshard beside this one's, ...).

#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Parser;
use integration::{HostAuth, PgServer, ServerOptions, TestProxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[global_allocator]
static ALLOCATOR: bench::Allocator = parser_ffi::Allocator;

const USER: &str = "app";
const TABLE: &str = "CREATE TABLE pgbench_accounts (aid int NOT NULL, bid int, abalance int, \
                     filler char(84))";

#[derive(Parser, Debug)]
#[command(about = "COPY and multi-row INSERT direct vs through pgshard into 1, 2 and 4 shards")]
struct Options {
    /// Rows per COPY.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Rows per multi-row INSERT.
    #[arg(long, default_value_t = 1_000)]
    insert_rows: u64,
    /// Multi-row INSERT statements per target.
    #[arg(long, default_value_t = 50)]
    inserts: u64,
    /// Shard counts to run pgshard with.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    shards: Vec<usize>,
    /// Skip the COPY runs (the INSERTs only).
    #[arg(long)]
    no_copy: bool,
    /// Another `bulk_load` binary whose pgshard (its `--serve`) runs beside
    /// this one's, labelled `baseline`: before/after in one run.
    #[arg(long)]
    baseline: Option<std::path::PathBuf>,
    /// Internal: serve pgshard over these server ports until stdin closes.
    #[arg(long, hide = true, value_delimiter = ',')]
    serve: Vec<u16>,
}

/// One target's figures.
struct Run {
    label: String,
    copy_secs: f64,
    insert_secs: f64,
    bind_secs: f64,
    batch_secs: f64,
    /// pgshard's peak RSS in KiB after the COPY and after the INSERTs
    /// (`None`: direct).
    peak_kib: Option<(u64, u64)>,
}

/// What one target measured: COPY, INSERT, prepared-INSERT and JDBC-batch
/// seconds, and pgshard's peak RSS after the COPY.
type Measured = (f64, f64, f64, f64, Option<u64>);

fn main() -> Result<()> {
    let options = Options::parse();
    if !options.serve.is_empty() {
        return serve(&options.serve);
    }
    let servers = start_servers()?;
    let data = copy_data(options.rows);
    let inserts: Vec<String> = (0..options.inserts)
        .map(|i| insert_sql(i * options.insert_rows, options.insert_rows))
        .collect();
    eprintln!(
        "4 servers up; COPY data {:.1} MB; INSERTs of {} rows",
        data.len() as f64 / 1e6,
        options.insert_rows
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut runs = Vec::new();
    let direct_port = servers[0].port();
    let (copy_secs, insert_secs, bind_secs, batch_secs, _) = runtime.block_on(measure(
        direct_port,
        "reference",
        &[(direct_port, "reference")],
        (&data, &inserts),
        &options,
        None,
    ))?;
    runs.push(Run {
        label: "direct".into(),
        copy_secs,
        insert_secs,
        bind_secs,
        batch_secs,
        peak_kib: None,
    });
    for &n in options.shards.iter().filter(|&&n| n > 1) {
        let targets: Vec<(u16, String)> = (0..n)
            .map(|i| (servers[i].port(), format!("shard_{i}")))
            .collect();
        let targets: Vec<(u16, &str)> = targets.iter().map(|(p, d)| (*p, d.as_str())).collect();
        let (insert_secs, bind_secs, batch_secs) =
            runtime.block_on(parallel_direct(&targets, &options))?;
        runs.push(Run {
            label: format!("direct, {n} databases in parallel"),
            copy_secs: f64::NAN,
            insert_secs,
            bind_secs,
            batch_secs,
            peak_kib: None,
        });
    }
    let mut proxies = vec![("pgshard", std::env::current_exe()?)];
    if let Some(baseline) = &options.baseline {
        proxies.push(("baseline", baseline.clone()));
    }
    let combos: Vec<(usize, &(&str, std::path::PathBuf))> = options
        .shards
        .iter()
        .flat_map(|&n| proxies.iter().map(move |p| (n, p)))
        .collect();
    for (shards, (name, binary)) in combos {
        let ports: Vec<u16> = servers[..shards].iter().map(PgServer::port).collect();
        let targets: Vec<(u16, String)> = ports
            .iter()
            .enumerate()
            .map(|(i, port)| (*port, format!("shard_{i}")))
            .collect();
        let targets: Vec<(u16, &str)> = targets.iter().map(|(p, d)| (*p, d.as_str())).collect();
        let (mut child, port) = spawn_proxy(binary, &ports)?;
        let measured = runtime.block_on(measure(
            port,
            "prod",
            &targets,
            (&data, &inserts),
            &options,
            Some(child.id()),
        ));
        let peak = peak_rss_kib(child.id());
        drop(child.stdin.take());
        let _ = child.wait();
        let (copy_secs, insert_secs, bind_secs, batch_secs, copy_peak) = measured?;
        runs.push(Run {
            label: format!(
                "{name}, {shards} shard{}",
                if shards > 1 { "s" } else { "" }
            ),
            copy_secs,
            insert_secs,
            bind_secs,
            batch_secs,
            peak_kib: copy_peak.zip(peak),
        });
    }
    report(&runs, &options, data.len());
    Ok(())
}

/// Print the table.
fn report(runs: &[Run], options: &Options, bytes: usize) {
    let direct = &runs[0];
    let insert_rows = (options.inserts * options.insert_rows) as f64;
    println!(
        "\n| target | COPY MB/s | COPY rows/s | vs direct | INSERT rows/s | vs direct | INSERT $n rows/s | vs direct | JDBC batch rows/s | vs direct | pgshard peak RSS after COPY / after INSERTs |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for run in runs {
        // With --no-copy there is no COPY to report (not NaN).
        let copy = match options.no_copy || run.copy_secs.is_nan() {
            true => "- | - | -".to_owned(),
            false => format!(
                "{:.1} | {:.0} | {:.2}x",
                bytes as f64 / 1e6 / run.copy_secs,
                options.rows as f64 / run.copy_secs,
                direct.copy_secs / run.copy_secs
            ),
        };
        println!(
            "| {} | {copy} | {:.0} | {:.2}x | {:.0} | {:.2}x | {:.0} | {:.2}x | {} |",
            run.label,
            insert_rows / run.insert_secs,
            direct.insert_secs / run.insert_secs,
            insert_rows / run.bind_secs,
            direct.bind_secs / run.bind_secs,
            insert_rows / run.batch_secs,
            direct.batch_secs / run.batch_secs,
            run.peak_kib.map_or("-".to_owned(), |(copy, all)| format!(
                "{:.1} / {:.1} MiB",
                copy as f64 / 1024.0,
                all as f64 / 1024.0
            )),
        );
    }
    println!(
        "\nCOPY: {} rows, {:.1} MB of text; INSERT and INSERT $n: {} statements of {} rows.",
        options.rows,
        bytes as f64 / 1e6,
        options.inserts,
        options.insert_rows
    );
}

/// COPY then the INSERTs through `port`/`database`, after truncating every
/// database in `targets`; rows counted there after each. `proxy`: the
/// pgshard child, whose peak RSS is read after the COPY.
async fn measure(
    port: u16,
    database: &str,
    targets: &[(u16, &str)],
    (data, inserts): (&[u8], &[String]),
    options: &Options,
    proxy: Option<u32>,
) -> Result<Measured> {
    truncate(targets).await?;
    let mut client = Wire::login(port, database).await?;
    let (copy_secs, copy_peak) = match options.no_copy {
        true => (f64::NAN, None),
        false => {
            let start = Instant::now();
            let tag = client
                .copy_in("COPY pgbench_accounts FROM STDIN", data)
                .await?;
            let copy_secs = start.elapsed().as_secs_f64();
            if tag != format!("COPY {}", options.rows) || count(targets).await? != options.rows {
                bail!("COPY through {port}/{database}: {tag}");
            }
            (copy_secs, proxy.and_then(peak_rss_kib))
        }
    };
    truncate(targets).await?;
    let start = Instant::now();
    for sql in inserts {
        let tag = client.query(sql).await?;
        if tag != format!("INSERT 0 {}", options.insert_rows) {
            bail!("INSERT through {port}/{database}: {tag}");
        }
    }
    let insert_secs = start.elapsed().as_secs_f64();
    if count(targets).await? != options.inserts * options.insert_rows {
        bail!("INSERT through {port}/{database}: rows missing");
    }
    truncate(targets).await?;
    let bind_secs = prepared_inserts(&mut client, options).await?;
    if count(targets).await? != options.inserts * options.insert_rows {
        bail!("INSERT $n through {port}/{database}: rows missing");
    }
    truncate(targets).await?;
    let batch_secs = jdbc_batches(&mut client, options).await?;
    if count(targets).await? != options.inserts * options.insert_rows {
        bail!("JDBC batches through {port}/{database}: rows missing");
    }
    Ok((copy_secs, insert_secs, bind_secs, batch_secs, copy_peak))
}

/// `--inserts` executions of one prepared INSERT of `--insert-rows` rows
/// with bind parameters (text); their seconds.
async fn prepared_inserts(client: &mut Wire, options: &Options) -> Result<f64> {
    let rows = options.insert_rows;
    let sql = prepared_sql(rows);
    client.prepare("bulk", &sql).await?;
    let start = Instant::now();
    for i in 0..options.inserts {
        let tag = client.execute("bulk", &text_params(i * rows, rows)).await?;
        if tag != format!("INSERT 0 {rows}") {
            bail!("INSERT $n: {tag}");
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// A prepared INSERT of `rows` rows of 4 parameters each.
fn prepared_sql(rows: u64) -> String {
    let values: Vec<String> = (0..rows)
        .map(|r| {
            format!(
                "(${}, ${}, ${}, ${})",
                4 * r + 1,
                4 * r + 2,
                4 * r + 3,
                4 * r + 4
            )
        })
        .collect();
    format!(
        "INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES {}",
        values.join(", ")
    )
}

/// `--inserts` batches of `--insert-rows` rows as pgjdbc sends an
/// `executeBatch` with `reWriteBatchedInserts=true` once its statements are
/// server-prepared: multi-row INSERTs of 128, then 64, 32, ... rows (the
/// highest power of two left, at most 128), each a Bind and Execute of its
/// prepared statement, one Sync for the batch; their seconds.
async fn jdbc_batches(client: &mut Wire, options: &Options) -> Result<f64> {
    let rows = options.insert_rows;
    prepare_jdbc(client, rows).await?;
    let start = Instant::now();
    for i in 0..options.inserts {
        jdbc_batch(client, i * rows, rows).await?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The sizes pgjdbc cuts a batch of `rows` rows in (128, 64, ... 1).
fn jdbc_sizes(rows: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut left = rows;
    while left > 0 {
        let size = 1u64 << (63 - left.min(128).leading_zeros());
        sizes.push(size);
        left -= size;
    }
    sizes
}

/// Prepare the statements of [`jdbc_batch`]es of `rows` rows.
async fn prepare_jdbc(client: &mut Wire, rows: u64) -> Result<()> {
    let mut distinct = jdbc_sizes(rows);
    distinct.dedup();
    for size in &distinct {
        client
            .prepare(&format!("jdbc_{size}"), &prepared_sql(*size))
            .await?;
    }
    Ok(())
}

/// One JDBC-shaped batch of `rows` rows from `aid` `first + 1`.
async fn jdbc_batch(client: &mut Wire, first: u64, rows: u64) -> Result<()> {
    let sizes = jdbc_sizes(rows);
    let mut aid = first;
    let mut batch = Vec::new();
    for size in &sizes {
        batch.push((format!("jdbc_{size}"), text_params(aid, *size)));
        aid += size;
    }
    let tags = client.execute_batch(&batch).await?;
    let total: u64 = tags
        .iter()
        .filter_map(|t| t.strip_prefix("INSERT 0 ")?.parse::<u64>().ok())
        .sum();
    if total != rows || tags.len() != sizes.len() {
        bail!("JDBC batch: {tags:?}");
    }
    Ok(())
}

/// The text parameters of `rows` rows from `aid` `first + 1`.
fn text_params(first: u64, rows: u64) -> Vec<Vec<u8>> {
    (first + 1..=first + rows)
        .flat_map(|aid| [aid.to_string(), "1".into(), "0".into(), "x".into()])
        .map(String::into_bytes)
        .collect()
}

/// The floor for `targets.len()` shards: each statement's rows cut in as
/// many slices, sent at once straight to the databases of `targets` (each
/// on a server of its own, as pgshard's shards are), all waited for; each
/// slice commits on its own. The INSERT, INSERT $n and JDBC batch seconds.
async fn parallel_direct(targets: &[(u16, &str)], options: &Options) -> Result<(f64, f64, f64)> {
    let (n, rows, total) = (
        targets.len() as u64,
        options.insert_rows,
        options.inserts * options.insert_rows,
    );
    // Slice k of a statement: its first row (offset) and row count.
    let slices: Vec<(u64, u64)> = (0..n)
        .map(|k| (k * rows / n, (k + 1) * rows / n - k * rows / n))
        .collect();
    let mut clients = Vec::new();
    for (port, database) in targets {
        clients.push(Wire::login(*port, database).await?);
    }
    truncate(targets).await?;
    let start = Instant::now();
    for i in 0..options.inserts {
        let runs = clients
            .iter_mut()
            .zip(&slices)
            .map(|(client, &(at, size))| {
                let sql = insert_sql(i * rows + at, size);
                async move {
                    let tag = client.query(&sql).await?;
                    match tag == format!("INSERT 0 {size}") {
                        true => Ok(()),
                        false => bail!("INSERT in parallel: {tag}"),
                    }
                }
            });
        futures_util::future::try_join_all(runs).await?;
    }
    let insert_secs = start.elapsed().as_secs_f64();
    if count(targets).await? != total {
        bail!("INSERT in parallel: rows missing");
    }
    truncate(targets).await?;
    for (client, &(_, size)) in clients.iter_mut().zip(&slices) {
        client.prepare("bulk", &prepared_sql(size)).await?;
    }
    let start = Instant::now();
    for i in 0..options.inserts {
        let runs = clients
            .iter_mut()
            .zip(&slices)
            .map(|(client, &(at, size))| {
                let params = text_params(i * rows + at, size);
                async move { client.execute("bulk", &params).await }
            });
        futures_util::future::try_join_all(runs).await?;
    }
    let bind_secs = start.elapsed().as_secs_f64();
    if count(targets).await? != total {
        bail!("INSERT $n in parallel: rows missing");
    }
    truncate(targets).await?;
    for (client, &(_, size)) in clients.iter_mut().zip(&slices) {
        prepare_jdbc(client, size).await?;
    }
    let start = Instant::now();
    for i in 0..options.inserts {
        let runs = (clients.iter_mut().zip(&slices))
            .map(|(client, &(at, size))| jdbc_batch(client, i * rows + at, size));
        futures_util::future::try_join_all(runs).await?;
    }
    let batch_secs = start.elapsed().as_secs_f64();
    if count(targets).await? != total {
        bail!("JDBC batches in parallel: rows missing");
    }
    Ok((insert_secs, bind_secs, batch_secs))
}

async fn truncate(targets: &[(u16, &str)]) -> Result<()> {
    for (port, database) in targets {
        let mut client = Wire::login(*port, database).await?;
        client.query("TRUNCATE pgbench_accounts").await?;
    }
    Ok(())
}

async fn count(targets: &[(u16, &str)]) -> Result<u64> {
    let mut total = 0;
    for (port, database) in targets {
        let mut client = Wire::login(*port, database).await?;
        let value = client
            .value("SELECT count(*) FROM pgbench_accounts")
            .await?;
        total += value.parse::<u64>().context("count")?;
    }
    Ok(total)
}

/// pgbench_accounts rows `1..=rows` as COPY text.
fn copy_data(rows: u64) -> Vec<u8> {
    let filler = " ".repeat(84);
    let mut out = Vec::with_capacity(rows as usize * 100);
    for aid in 1..=rows {
        let _ = writeln!(out, "{aid}\t{}\t0\t{filler}", (aid - 1) / 100_000 + 1);
    }
    out
}

/// One INSERT of `rows` pgbench_accounts rows from `aid` `first + 1`.
fn insert_sql(first: u64, rows: u64) -> String {
    let values: Vec<String> = (first + 1..=first + rows)
        .map(|aid| format!("({aid}, 1, 0, 'x')"))
        .collect();
    format!(
        "INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES {}",
        values.join(", ")
    )
}

fn start_servers() -> Result<Vec<PgServer>> {
    let options = ServerOptions {
        host_auth: HostAuth::Trust,
        settings: vec![("shared_buffers".to_owned(), "128MB".to_owned())],
        ..ServerOptions::default()
    };
    let servers = PgServer::start_many(4, &options).context("start Postgres servers")?;
    for (i, server) in servers.iter().enumerate() {
        server.psql("postgres", &format!("CREATE ROLE {USER} LOGIN"))?;
        let database = format!("shard_{i}");
        server.create_database(&database, Some(USER))?;
        server.psql(&database, &format!("SET ROLE {USER}; {TABLE}"))?;
    }
    servers[0].create_database("reference", Some(USER))?;
    servers[0].psql("reference", &format!("SET ROLE {USER}; {TABLE}"))?;
    Ok(servers)
}

/// Start a child (`binary`, this one or a baseline) serving pgshard over
/// `ports`; the child and its port.
fn spawn_proxy(binary: &std::path::Path, ports: &[u16]) -> Result<(Child, u16)> {
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    let mut child = Command::new(binary)
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

/// In the child: pgshard over `ports` until stdin closes.
fn serve(ports: &[u16]) -> Result<()> {
    let mut config = "[general]\nshutdown_timeout = 1000\ndefault_pool_size = 4\n\n\
                      [admin]\npassword = \"admin-pw\"\n\n"
        .to_owned();
    for (i, port) in ports.iter().enumerate() {
        config.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"127.0.0.1\"\nport = {port}\n\
             database_name = \"shard_{i}\"\nshard = {i}\n\n"
        ));
    }
    config.push_str(
        "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"pgbench_accounts\"\ncolumn = \"aid\"\n\
         data_type = \"integer\"\n",
    );
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

/// `VmHWM` of process `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Append message `tag` with `body` to `out`.
fn frame(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
}

/// A minimal simple-protocol client (trust auth): enough for COPY FROM
/// STDIN and queries, as psql sends them.
struct Wire {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Wire {
    async fn login(port: u16, database: &str) -> Result<Wire> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        let mut wire = Wire {
            stream,
            buf: Vec::new(),
        };
        let mut body = 196608u32.to_be_bytes().to_vec();
        for (key, value) in [("user", USER), ("database", database)] {
            body.extend_from_slice(key.as_bytes());
            body.push(0);
            body.extend_from_slice(value.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut startup = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        startup.extend_from_slice(&body);
        wire.stream.write_all(&startup).await?;
        wire.until_ready().await?;
        Ok(wire)
    }

    async fn send(&mut self, tag: u8, body: &[u8]) -> Result<()> {
        let mut out = Vec::with_capacity(body.len() + 5);
        out.push(tag);
        out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(body);
        self.stream.write_all(&out).await?;
        Ok(())
    }

    async fn recv(&mut self) -> Result<(u8, Vec<u8>)> {
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
                let end = 1 + len as usize;
                if self.buf.len() >= end {
                    let tag = self.buf[0];
                    let body = self.buf[5..end].to_vec();
                    self.buf.drain(..end);
                    return Ok((tag, body));
                }
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                bail!("connection closed");
            }
        }
    }

    /// Messages up to ReadyForQuery: the last CommandComplete tag and the
    /// first DataRow's first value; an ErrorResponse fails.
    async fn until_ready(&mut self) -> Result<(String, String)> {
        let (mut tag, mut value, mut error) = (String::new(), String::new(), None);
        loop {
            let (kind, body) = self.recv().await?;
            match kind {
                b'C' => tag = String::from_utf8_lossy(&body[..body.len() - 1]).into_owned(),
                b'D' if value.is_empty() && body.len() > 6 => {
                    value = String::from_utf8_lossy(&body[6..]).into_owned();
                }
                b'E' => {
                    error.get_or_insert_with(|| String::from_utf8_lossy(&body).into_owned());
                }
                b'Z' => break,
                _ => {}
            }
        }
        match error {
            Some(error) => bail!("server error: {error}"),
            None => Ok((tag, value)),
        }
    }

    async fn query(&mut self, sql: &str) -> Result<String> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body).await?;
        Ok(self.until_ready().await?.0)
    }

    async fn value(&mut self, sql: &str) -> Result<String> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body).await?;
        Ok(self.until_ready().await?.1)
    }

    /// Parse `sql` as statement `name` (no parameter types) and Sync.
    async fn prepare(&mut self, name: &str, sql: &str) -> Result<()> {
        let mut body = name.as_bytes().to_vec();
        body.push(0);
        body.extend_from_slice(sql.as_bytes());
        body.extend_from_slice(&[0, 0, 0]);
        self.send(b'P', &body).await?;
        self.send(b'S', b"").await?;
        self.until_ready().await?;
        Ok(())
    }

    /// Bind statement `name` with text `params`, Execute, Sync; the tag.
    async fn execute(&mut self, name: &str, params: &[Vec<u8>]) -> Result<String> {
        let mut body = vec![0];
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(&[0, 0, 0]);
        body.extend_from_slice(&(params.len() as u16).to_be_bytes());
        for param in params {
            body.extend_from_slice(&(param.len() as u32).to_be_bytes());
            body.extend_from_slice(param);
        }
        body.extend_from_slice(&[0, 0]);
        self.send(b'B', &body).await?;
        self.send(b'E', &[0, 0, 0, 0, 0]).await?;
        self.send(b'S', b"").await?;
        Ok(self.until_ready().await?.0)
    }

    /// Bind and Execute each `(statement, text params)` of `batch`, then
    /// one Sync; the tags.
    async fn execute_batch(&mut self, batch: &[(String, Vec<Vec<u8>>)]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for (name, params) in batch {
            let mut body = vec![0];
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(&[0, 0, 0]);
            body.extend_from_slice(&(params.len() as u16).to_be_bytes());
            for param in params {
                body.extend_from_slice(&(param.len() as u32).to_be_bytes());
                body.extend_from_slice(param);
            }
            body.extend_from_slice(&[0, 0]);
            frame(&mut out, b'B', &body);
            frame(&mut out, b'E', &[0, 0, 0, 0, 0]);
        }
        frame(&mut out, b'S', b"");
        self.stream.write_all(&out).await?;
        let (mut tags, mut error) = (Vec::new(), None);
        loop {
            let (kind, body) = self.recv().await?;
            match kind {
                b'C' => tags.push(String::from_utf8_lossy(&body[..body.len() - 1]).into_owned()),
                b'E' => {
                    error.get_or_insert_with(|| String::from_utf8_lossy(&body).into_owned());
                }
                b'Z' => break,
                _ => {}
            }
        }
        match error {
            Some(error) => bail!("server error: {error}"),
            None => Ok(tags),
        }
    }

    /// COPY `data` in 64 KiB CopyData messages; the tag.
    async fn copy_in(&mut self, sql: &str, data: &[u8]) -> Result<String> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body).await?;
        loop {
            match self.recv().await? {
                (b'G', _) => break,
                (b'E', body) => bail!("COPY refused: {}", String::from_utf8_lossy(&body)),
                _ => {}
            }
        }
        for chunk in data.chunks(64 * 1024) {
            self.send(b'd', chunk).await?;
        }
        self.send(b'c', b"").await?;
        Ok(self.until_ready().await?.0)
    }
}
