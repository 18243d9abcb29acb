//! The `pgshard` binary: command line, config files, logging, runtime and
//! signals.

#![forbid(unsafe_code)]

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

/// mimalloc (through `parser_ffi::Allocator`, which calls its plain entry
/// points where the alignment allows): converted parse trees and per-message
/// buffers are many small, short-lived allocations; under callgrind
/// (bench/examples/parse_loop) their malloc/free cost about a third of the
/// instructions glibc's malloc takes. The benches run under the same allocator.
#[global_allocator]
static ALLOCATOR: parser_ffi::Allocator = parser_ffi::Allocator;

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
    // A current-thread runtime per worker thread, each with its own
    // listener on the port (workers.rs says why).
    let host = config.general.host.clone();
    let port = config.general.port;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let count = config.general.workers_for(cores);
    tracing::info!(workers = count, cores, "worker threads");
    let mut workers = proxy::workers::Workers::bind(count, &host, port)
        .with_context(|| format!("cannot listen on {host}:{port}"))?;
    workers
        .bind_unix(&config.general)
        .context("cannot listen on the Unix socket (unix_socket_dir)")?;
    let state = workers.in_first(|| {
        let state = proxy::state::State::new(config, Some((args.config, args.users)));
        tokio::spawn(reload_on_sighup(std::sync::Arc::clone(&state)));
        state
    });
    // A node id another running pgshard holds would make duplicate ids.
    if let Some(Err(err)) = workers.block_on_first(proxy::node_lock::acquire(&state)) {
        return Err(err).context("not starting");
    }
    workers.run(state, shutdown_signal());
    Ok(())
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
