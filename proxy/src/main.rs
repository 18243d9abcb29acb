//! The `pgshard` binary: command line, config files, logging, runtime and
//! signals.

#![forbid(unsafe_code)]

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use tokio::net::TcpListener;

/// mimalloc: converted parse trees and per-message buffers are many small,
/// short-lived allocations; under callgrind (bench/examples/parse_loop) their
/// malloc/free cost about a third of the instructions glibc's malloc takes.
/// The benches run under the same allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A sharding proxy for PostgreSQL.
#[derive(Debug, Parser)]
#[command(name = "pgshard", version, about)]
struct Args {
    /// Path to pgdog.toml (general settings and databases).
    #[arg(long, default_value = "pgdog.toml")]
    config: PathBuf,
    /// Path to users.toml (who may connect to which database).
    #[arg(long, default_value = "users.toml")]
    users: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // The config says how to log, so errors loading it go to stderr as
    // they are (anyhow's report).
    let config = proxy::config_files::load(&args.config, &args.users)?;
    proxy::logging::init(config.general.log_format).context("cannot set up logging")?;
    let runtime = match config.general.workers {
        0 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        workers => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()?,
    };
    runtime.block_on(async {
        let addr = (config.general.host.as_str(), config.general.port);
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {}:{}", addr.0, addr.1))?;
        let state = proxy::state::State::new(config, Some((args.config, args.users)));
        tokio::spawn(reload_on_sighup(std::sync::Arc::clone(&state)));
        proxy::server::run_with_state(listener, state, shutdown_signal()).await;
        Ok(())
    })
}

/// SIGHUP re-reads the config files, like RELOAD in the admin console.
async fn reload_on_sighup(state: std::sync::Arc<proxy::state::State>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        return;
    };
    while hup.recv().await.is_some() {
        // Errors are logged by reload; the running config stays.
        let _ = proxy::admin::reload(&state);
    }
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
