//! The bench's settings: command-line flags with DESIGN.md §5's defaults,
//! and the checks clap's value ranges cannot express.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use serde::Serialize;

use super::message::HEADER_LEN;

/// Which workloads a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadChoice {
    Pubsub,
    Queue,
    Both,
}

/// One workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// The partitioned log with consumer groups.
    Pubsub,
    /// `FOR UPDATE SKIP LOCKED` job queue with an archive.
    Queue,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Pubsub => "pubsub",
            Workload::Queue => "queue",
        }
    }
}

impl WorkloadChoice {
    pub fn workloads(self) -> Vec<Workload> {
        match self {
            WorkloadChoice::Pubsub => vec![Workload::Pubsub],
            WorkloadChoice::Queue => vec![Workload::Queue],
            WorkloadChoice::Both => vec![Workload::Pubsub, Workload::Queue],
        }
    }
}

/// A deployment the bench starts itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// One Postgres server, clients connected straight to it.
    Direct,
    /// pgshard (in-process) in front of that same server.
    Proxy,
    /// pgshard over 2 shard databases, each on its own server.
    Shards2,
    /// pgshard over 4 shard databases, each on its own server.
    Shards4,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Direct => "direct",
            Target::Proxy => "proxy",
            Target::Shards2 => "shards2",
            Target::Shards4 => "shards4",
        }
    }
}

/// `messaging`: Postgres as a Kafka-like log and a job queue (DESIGN.md §5),
/// direct vs through pgshard vs sharded. Starts its own Postgres servers and
/// pgshard (in this process) unless `--target` names an endpoint.
#[derive(Debug, Clone, Parser, Serialize)]
#[command(name = "messaging", version)]
pub struct Options {
    /// Bytes per message.
    #[arg(long, default_value_t = 1024)]
    pub payload: usize,
    /// Messages per pub/sub write transaction.
    #[arg(long, default_value_t = 100)]
    pub write_batch: usize,
    /// Most offsets a pub/sub reader claims per transaction.
    #[arg(long, default_value_t = 200)]
    pub read_batch: i64,
    /// Log (and queue) partitions.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(4..=30))]
    pub partitions: u32,
    /// Consumer groups; each reads every partition (one reader per group and partition).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=5))]
    pub groups: u32,
    /// Writer connections (each writes to its share of the partitions).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub writers: u32,
    /// Queue readers per partition (they compete with SKIP LOCKED).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub queue_readers: u32,
    /// Seconds each workload runs on each target.
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    /// Cap on messages written per second, over all writers (default: as fast as possible).
    #[arg(long)]
    pub throttle: Option<u64>,
    /// Which workloads to run.
    #[arg(long, value_enum, default_value_t = WorkloadChoice::Both)]
    pub workload: WorkloadChoice,
    /// Targets to run, in this order.
    #[arg(long, value_enum, value_delimiter = ',',
          default_values_t = [Target::Direct, Target::Proxy, Target::Shards2, Target::Shards4])]
    pub targets: Vec<Target>,
    /// An external endpoint (`host:port`) to run against instead of the targets.
    #[arg(long)]
    pub target: Option<String>,
    /// User for `--target`.
    #[arg(long, default_value = "app")]
    pub user: String,
    /// Password for `--target`.
    #[arg(long, default_value = "app-pw")]
    pub password: String,
    /// Database for `--target`.
    #[arg(long, default_value = "prod")]
    pub dbname: String,
    /// Start the bench's servers with `fsync = on` (the harness's default is off).
    #[arg(long)]
    pub fsync: bool,
    /// Seconds between progress lines.
    #[arg(long, default_value_t = 5)]
    pub progress: u64,
    /// Most seconds readers get after the writers stop to catch up for the checks.
    #[arg(long, default_value_t = 60)]
    pub drain: u64,
    /// Write every result to this file as JSON.
    #[arg(long, default_value = "target/messaging.json")]
    pub json: Option<PathBuf>,
    /// Draw the results (throughput and end-to-end latency by target) into
    /// this SVG file.
    #[arg(long, default_value = "target/messaging.svg")]
    pub svg: Option<PathBuf>,
    /// Run nothing: draw the results JSON of an earlier run into `--svg`.
    #[arg(long)]
    pub plot_from: Option<PathBuf>,
    /// Run nothing: print pgshard's `[[sharded_tables]]` sections for the
    /// bench's tables in database `--dbname` (for a pgshard of your own,
    /// as `bench/soak.sh` starts).
    #[arg(long)]
    pub print_sharding: bool,
}

impl Options {
    /// Checks across flags; call before running.
    pub fn validate(&self) -> Result<()> {
        if self.payload < HEADER_LEN {
            bail!(
                "--payload {} is too small: a message carries a {HEADER_LEN}-byte header",
                self.payload
            );
        }
        if self.write_batch == 0 || self.read_batch <= 0 {
            bail!("--write-batch and --read-batch must be at least 1");
        }
        if self.duration == 0 || self.progress == 0 {
            bail!("--duration and --progress must be at least 1 second");
        }
        if self.throttle == Some(0) {
            bail!("--throttle must be at least 1 msg/s");
        }
        if self.target.is_none() && self.targets.is_empty() {
            bail!("--targets names no target");
        }
        Ok(())
    }

    /// Partition ids, `0..partitions`.
    pub fn partition_ids(&self) -> impl Iterator<Item = i64> {
        0..i64::from(self.partitions)
    }
}
