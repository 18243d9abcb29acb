//! `pgshard-child PGDOG_TOML USERS_TOML`: pgshard in a process of its own,
//! started as the `pgshard` binary starts (two worker threads), for tests
//! that kill it with SIGKILL (`shard_move_ops`). `PGSHARD_TEST_FAULT`
//! (`after_slot`, `mid_copy`, `mid_catchup`,
//! `while_holding`, `after_switch`: `Fault::name`) parks every shard move at
//! that point, so the test can kill the process there. Serves until
//! killed.

use std::path::PathBuf;

use anyhow::Context;
use proxy::reshard::fault::Fault;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let (Some(pgdog), Some(users)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: pgshard-child PGDOG_TOML USERS_TOML");
    };
    let config = proxy::config_files::load(&pgdog, &users)?;
    let port = config.general.port;
    let workers = proxy::workers::Workers::bind(2, "127.0.0.1", port)
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let state = workers.in_first(|| proxy::state::State::new(config, Some((pgdog, users))));
    let fault = std::env::var("PGSHARD_TEST_FAULT").unwrap_or_default();
    let fault = match fault.as_str() {
        "" => None,
        name => match Fault::parse(name) {
            Some(fault) => Some(fault),
            None => anyhow::bail!("PGSHARD_TEST_FAULT: no fault {name}"),
        },
    };
    if let Some(fault) = fault {
        state.moves.inject(fault);
    }
    workers.run(state, std::future::pending());
    Ok(())
}
