//! One run: for each target, start what it needs (servers, pgshard), run
//! each workload for the timed window (clients connected first, progress
//! lines meanwhile), let the readers drain, check, and collect the results.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use integration::PgServer;
use tokio::task::JoinHandle;

use super::check::{self, Check};
use super::cluster::{start_servers, Deployment, Endpoint};
use super::cpu::{CpuProbe, CLIENT_THREAD};
use super::options::{Options, Target, Workload};
use super::report::{self, CpuReport, Machine, Report, WorkloadResult};
use super::stats::{self, Latencies, Live, Percentiles, TaskOutcome};
use super::{pubsub, queue};

/// Run every target and workload `options` asks for; prints as it goes.
pub fn run_all(options: &Options) -> Result<Report> {
    options.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(CLIENT_THREAD)
        .enable_all()
        .build()
        .context("build the client runtime")?;
    let mut results = Vec::new();
    if let Some(address) = &options.target {
        let deployment = Deployment::external(Endpoint::external(options, address)?);
        results.extend(run_target(&runtime, &deployment, options)?);
    } else {
        // direct and proxy share one server, as the comparison needs.
        let mut single: Option<Vec<PgServer>> = None;
        for target in &options.targets {
            let owned;
            let servers: &[PgServer] = match target {
                Target::Direct | Target::Proxy => {
                    if single.is_none() {
                        single = Some(start_servers(1, options)?);
                    }
                    single.as_deref().context("no server")?
                }
                Target::Shards2 | Target::Shards4 => {
                    let n = if *target == Target::Shards2 { 2 } else { 4 };
                    owned = start_servers(n, options)?;
                    &owned
                }
            };
            let deployment = Deployment::start(*target, servers, clients(options) + 2)?;
            results.extend(run_target(&runtime, &deployment, options)?);
        }
    }
    Ok(Report {
        machine: Machine::this(),
        options: options.clone(),
        results,
    })
}

/// Client connections a workload opens (the largest of the two).
fn clients(options: &Options) -> usize {
    let writers = options.writers as usize;
    let partitions = options.partitions as usize;
    writers + partitions * (options.groups.max(options.queue_readers) as usize)
}

fn run_target(
    runtime: &tokio::runtime::Runtime,
    deployment: &Deployment<'_>,
    options: &Options,
) -> Result<Vec<WorkloadResult>> {
    let mut results = Vec::new();
    for workload in options.workload.workloads() {
        println!(
            "\n{} / {}: {} s, {} partitions, {} writers, payload {} B{}",
            deployment.label,
            workload.name(),
            options.duration,
            options.partitions,
            options.writers,
            options.payload,
            match workload {
                Workload::Pubsub => format!(
                    ", {} groups, write batch {}, read batch {}",
                    options.groups, options.write_batch, options.read_batch
                ),
                Workload::Queue => format!(", {} readers per partition", options.queue_readers),
            }
        );
        let result = runtime.block_on(run_workload(deployment, workload, options))?;
        print!("{}", report::block(&result));
        results.push(result);
    }
    Ok(results)
}

/// The running tasks of one workload.
struct Tasks {
    writers: Vec<(String, JoinHandle<Result<TaskOutcome>>)>,
    readers: Vec<(String, JoinHandle<Result<TaskOutcome>>)>,
}

/// Create the tables, connect every client, then start them all.
async fn start_tasks(
    deployment: &Deployment<'_>,
    workload: Workload,
    options: &Options,
) -> Result<(Arc<Live>, Tasks)> {
    let endpoint = &deployment.endpoint;
    let partitions: Vec<i64> = options.partition_ids().collect();
    let write_every = options.throttle.map(|rate| {
        let per_writer = rate as f64 / f64::from(options.writers);
        let batch = match workload {
            Workload::Pubsub => options.write_batch as f64,
            Workload::Queue => 1.0,
        };
        Duration::from_secs_f64(batch / per_writer)
    });
    let mut writer_clients = Vec::new();
    for w in 0..options.writers {
        writer_clients.push((w, endpoint.connect().await?));
    }
    let mut reader_clients = Vec::new();
    let per_partition = match workload {
        Workload::Pubsub => options.groups,
        Workload::Queue => options.queue_readers,
    };
    for i in 0..per_partition {
        for p in &partitions {
            reader_clients.push((i, *p, endpoint.connect().await?));
        }
    }
    let live = Live::new(partitions.len());
    let mut tasks = Tasks {
        writers: Vec::new(),
        readers: Vec::new(),
    };
    for (w, client) in writer_clients {
        let mine = pubsub::assign(w, options.writers, options.partitions);
        let live = Arc::clone(&live);
        let handle = match workload {
            Workload::Pubsub => {
                let params = pubsub::Params {
                    payload: options.payload,
                    write_batch: options.write_batch,
                    read_batch: options.read_batch,
                    write_every,
                };
                tokio::spawn(pubsub::writer(client, live, params, (w, mine)))
            }
            Workload::Queue => tokio::spawn(queue::writer(
                client,
                live,
                (options.payload, write_every),
                (w, mine),
            )),
        };
        tasks.writers.push((format!("writer {w}"), handle));
    }
    for (i, p, client) in reader_clients {
        let live = Arc::clone(&live);
        let handle = match workload {
            Workload::Pubsub => {
                let group = i32::try_from(i)?;
                tokio::spawn(pubsub::reader(client, live, options.read_batch, (group, p)))
            }
            Workload::Queue => tokio::spawn(queue::reader(client, live, (i, p))),
        };
        tasks.readers.push((format!("reader {i}/p{p}"), handle));
    }
    Ok((live, tasks))
}

/// Wait for tasks; one that failed to start or panicked becomes an outcome
/// with a failure. With a `deadline`, tasks still running then are told to
/// stop (`stop_readers`) and waited for.
async fn join(
    live: &Live,
    handles: Vec<(String, JoinHandle<Result<TaskOutcome>>)>,
    deadline: Option<Instant>,
) -> Result<Vec<TaskOutcome>> {
    let mut outcomes = Vec::new();
    for (name, mut handle) in handles {
        let joined = match deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                match tokio::time::timeout(left, &mut handle).await {
                    Ok(joined) => joined,
                    Err(_) => {
                        live.stop_readers.store(true, Ordering::Relaxed);
                        handle.await
                    }
                }
            }
            None => handle.await,
        };
        let outcome = match joined {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(err)) => failed(name, format!("{err:#}"))?,
            Err(err) => failed(name, format!("task ended: {err}"))?,
        };
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

fn failed(name: String, why: String) -> Result<TaskOutcome> {
    let mut outcome = TaskOutcome::new(name)?;
    outcome.failure = Some(format!("{}: {why}", outcome.name));
    Ok(outcome)
}

/// One workload on one deployment: set up, run the timed window, drain, check.
async fn run_workload(
    deployment: &Deployment<'_>,
    workload: Workload,
    options: &Options,
) -> Result<WorkloadResult> {
    let setup = deployment.endpoint.connect().await?;
    match workload {
        Workload::Pubsub => super::schema::create_pubsub(&setup, options).await?,
        Workload::Queue => super::schema::create_queue(&setup, options).await?,
    }
    deployment.checkpoint()?;
    let version: String = setup
        .query_one("SHOW server_version", &[])
        .await
        .context("SHOW server_version")?
        .try_get(0)?;
    let probe = CpuProbe::new(deployment.postmasters()?)?;
    let (live, tasks) = start_tasks(deployment, workload, options).await?;
    let done = Arc::new(AtomicBool::new(false));
    let label = format!("{} {}", deployment.label, workload.name());
    let every = Duration::from_secs(options.progress);
    tokio::spawn(stats::progress(
        label,
        Arc::clone(&live),
        every,
        Arc::clone(&done),
    ));
    let before = probe.sample()?;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(options.duration)).await;
    let cpu = probe.sample()?.since(&before);
    let seconds = started.elapsed().as_secs_f64();
    let (written, read) = (Live::count(&live.written), Live::count(&live.read));
    live.measuring.store(false, Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    live.stop_writers.store(true, Ordering::Relaxed);
    let mut outcomes = join(&live, tasks.writers, None).await?;
    live.writers_done.store(true, Ordering::Relaxed);
    let drain = Instant::now() + Duration::from_secs(options.drain);
    outcomes.extend(join(&live, tasks.readers, Some(drain)).await?);
    let counts: Vec<u64> = live.per_partition.iter().map(Live::count).collect();
    let check = match workload {
        Workload::Pubsub => check::pubsub(&setup, options, &outcomes, &counts).await?,
        Workload::Queue => check::queue(&setup, options, &outcomes, &counts).await?,
    };
    let measured = Measured {
        seconds,
        written,
        read,
        cpu: (!deployment.servers.is_empty() || deployment.in_process_proxy())
            .then(|| CpuReport::new(cpu, written)),
    };
    result(
        deployment,
        workload,
        options,
        (version, measured),
        &outcomes,
        check,
    )
}

/// What the timed window counted.
struct Measured {
    seconds: f64,
    written: u64,
    read: u64,
    cpu: Option<CpuReport>,
}

fn result(
    deployment: &Deployment<'_>,
    workload: Workload,
    options: &Options,
    (server_version, measured): (String, Measured),
    outcomes: &[TaskOutcome],
    check: Check,
) -> Result<WorkloadResult> {
    let mut latencies = Latencies::new()?;
    for outcome in outcomes {
        latencies.merge(&outcome.latencies)?;
    }
    let mib = options.payload as f64 / (1024.0 * 1024.0);
    let per_s = |n: u64| n as f64 / measured.seconds;
    Ok(WorkloadResult {
        target: deployment.label.clone(),
        workload,
        server_version,
        seconds: measured.seconds,
        written: measured.written,
        read: measured.read,
        written_per_s: per_s(measured.written),
        read_per_s: per_s(measured.read),
        written_mib_per_s: per_s(measured.written) * mib,
        read_mib_per_s: per_s(measured.read) * mib,
        write_latency: Percentiles::of(&latencies.write),
        read_latency: Percentiles::of(&latencies.read),
        e2e_latency: Percentiles::of(&latencies.e2e),
        errors: outcomes.iter().map(|o| o.errors).sum(),
        first_errors: outcomes
            .iter()
            .filter_map(|o| o.first_error.as_ref().map(|e| format!("{}: {e}", o.name)))
            .take(5)
            .collect(),
        cpu: measured.cpu,
        check,
    })
}
