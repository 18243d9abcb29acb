//! `pgshard-cluster MODE`: starts one of the driver suite's clusters
//! (`transaction`, `session`, `sharded` or `columns`; see `integration::driver_cluster`),
//! prints the environment a driver check reads (`export NAME=value` lines),
//! and serves until stdin closes or Ctrl-C. For working on driver checks by
//! hand: `eval "$(pgshard-cluster sharded | head -11)"` in one shell, or run
//! it in the background with a fifo on stdin.

use std::io::{Read, Write};

use anyhow::Context;
use integration::driver_cluster::{DriverCluster, Mode};

fn main() -> anyhow::Result<()> {
    let mode: Mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "transaction".to_owned())
        .parse()
        .map_err(anyhow::Error::msg)?;
    let cluster = DriverCluster::start(mode).context("starting the cluster")?;
    let mut out = std::io::stdout().lock();
    for (name, value) in cluster.env() {
        writeln!(out, "export {name}={value}")?;
    }
    writeln!(out, "# serving until stdin closes")?;
    out.flush()?;
    drop(out);
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(cluster);
    Ok(())
}
