//! The admin commands that change what pgshard does: RELOAD, PAUSE [db],
//! RESUME [db], KILL db, RECONNECT [db], WAIT_CLOSE [db] (PgBouncer's),
//! MAINTENANCE ON|OFF and RESET QUERY_CACHE (PgDog's), and SHUTDOWN.
//!
//! PAUSE and WAIT_CLOSE wait (watching the admin client, so a client that
//! leaves ends the wait); the others act and return at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tracing::{info, warn};

use super::{ClientGone, Console, Failure};
use crate::errors::ClientError;
use crate::pool::Pool;
use crate::protocol::messages;
use crate::protocol::sqlstate;
use crate::state::State;

/// How often a waiting command looks again.
const POLL: Duration = Duration::from_millis(10);

/// The pools of `database` (every pool when `None`).
fn pools_of(state: &State, database: Option<&str>) -> Vec<Arc<Pool>> {
    let mut pools = state.all_pools();
    if let Some(database) = database {
        pools.retain(|pool| pool.cluster == database);
    }
    pools
}

impl Console<'_> {
    /// Wait until `done` holds (checked every [`POLL`]), or `deadline`
    /// passes, while watching the client.
    async fn wait_until(
        &mut self,
        done: impl Fn() -> bool,
        deadline: Option<Instant>,
    ) -> Result<(), Failure> {
        let wait = async {
            while !done() && deadline.is_none_or(|d| Instant::now() < d) {
                tokio::time::sleep(POLL).await;
            }
        };
        self.client
            .watch(wait)
            .await
            .map_err(|_| Failure::Gone(ClientGone))
    }

    /// PAUSE [db]: sessions of the database (of every one) check no server
    /// out until RESUME; returns once its servers are all back in their
    /// pools, as PgBouncer does (or after `shutdown_timeout`).
    pub(super) async fn pause(&mut self, database: Option<&str>) -> Result<(), Failure> {
        let state = self.state;
        state.gate.paused.send_modify(|paused| match database {
            Some(database) => {
                paused.databases.insert(database.to_owned());
            }
            None => paused.all = true,
        });
        let deadline = Instant::now() + state.config().general.shutdown_timeout();
        let pools = pools_of(state, database);
        self.wait_until(|| pools.iter().all(|p| p.active() == 0), Some(deadline))
            .await?;
        info!(database = database.unwrap_or("*"), "paused");
        messages::command_complete(self.client.out(), "PAUSE");
        Ok(())
    }

    /// WAIT_CLOSE [db]: returns once no server connection of the database
    /// (of any) opened before the last RECONNECT or KILL is still in use.
    pub(super) async fn wait_close(&mut self, database: Option<&str>) -> Result<(), Failure> {
        let pools = pools_of(self.state, database);
        self.wait_until(|| pools.iter().all(|p| p.closes_pending() == 0), None)
            .await?;
        messages::command_complete(self.client.out(), "WAIT_CLOSE");
        Ok(())
    }
}

/// RESUME [db]: let sessions held by PAUSE (or KILL) of the database go on;
/// without a database, every PAUSE and KILL ends.
pub(super) fn resume(state: &State, database: Option<&str>, out: &mut BytesMut) {
    state.gate.paused.send_modify(|paused| match database {
        Some(database) => {
            paused.databases.remove(database);
        }
        None => {
            paused.all = false;
            paused.databases.clear();
        }
    });
    info!(database = database.unwrap_or("*"), "resumed");
    messages::command_complete(out, "RESUME");
}

/// KILL db: the database is paused (new sessions wait for RESUME, as in
/// PgBouncer), its clients' sessions end at once with 57P01 and their
/// servers are closed, and so are its pools' idle connections.
pub(super) fn kill(state: &State, database: &str, out: &mut BytesMut) {
    state.gate.paused.send_modify(|paused| {
        paused.databases.insert(database.to_owned());
    });
    let mut killed = 0;
    for client in state.clients() {
        if client.database == database {
            client.interrupt.kill();
            killed += 1;
        }
    }
    for pool in pools_of(state, Some(database)) {
        pool.reconnect();
    }
    warn!(database, clients = killed, "KILL from the admin console");
    messages::command_complete(out, "KILL");
}

/// RECONNECT [db]: idle server connections are closed now and the others
/// when their client gives them back, so that every later checkout gets a
/// connection opened after this command.
pub(super) fn reconnect(state: &State, database: Option<&str>, out: &mut BytesMut) {
    for pool in pools_of(state, database) {
        pool.reconnect();
    }
    info!(database = database.unwrap_or("*"), "reconnecting servers");
    messages::command_complete(out, "RECONNECT");
}

/// MAINTENANCE ON|OFF [db] (PgDog's): hold every session's (of `db`'s
/// sessions') next server checkout (transactions under way finish) without
/// waiting, until OFF. OFF without a database ends every maintenance.
pub(super) fn maintenance(state: &State, on: bool, database: Option<&str>, out: &mut BytesMut) {
    state
        .gate
        .paused
        .send_modify(|paused| match (on, database) {
            (true, None) => paused.maintenance = true,
            (true, Some(database)) => {
                paused.maintenance_databases.insert(database.to_owned());
            }
            (false, Some(database)) => {
                paused.maintenance_databases.remove(database);
            }
            (false, None) => {
                paused.maintenance = false;
                paused.maintenance_databases.clear();
            }
        });
    info!(on, database = database.unwrap_or("*"), "maintenance mode");
    messages::command_complete(out, "MAINTENANCE");
}

/// RESET QUERY_CACHE (PgDog's): every parsed statement is dropped; later
/// statements are parsed again.
pub(super) fn reset_query_cache(state: &State, out: &mut BytesMut) {
    state.cache.clear();
    info!("query cache reset");
    messages::command_complete(out, "RESET");
}

pub(super) fn shutdown(state: &State, out: &mut BytesMut) {
    info!("SHUTDOWN from the admin console");
    state.shut_down();
    messages::command_complete(out, "SHUTDOWN");
}

pub(super) fn reload_command(state: &State, out: &mut BytesMut) -> Result<(), ClientError> {
    reload(state)
        .map_err(|error| ClientError::new(sqlstate::CONFIG_FILE_ERROR, error.to_string()))?;
    messages::command_complete(out, "RELOAD");
    Ok(())
}

/// Why RELOAD kept the running configuration.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("no config files to reload (config was given in memory)")]
    NoFiles,
    #[error("reload failed: {0}")]
    Load(#[from] crate::config_files::LoadError),
}

/// Re-read the config files and apply them; the old config stays on error,
/// and when the new one would move logical shards placed by default
/// without their rows (`router::config::Config::check_reload`).
pub fn reload(state: &State) -> Result<(), ReloadError> {
    let Some((pgdog, users)) = &state.config_paths else {
        return Err(ReloadError::NoFiles);
    };
    let loaded = crate::config_files::load(pgdog, users).and_then(|config| {
        state.config().check_reload(&config)?;
        Ok(config)
    });
    match loaded {
        Ok(config) => {
            state.apply_config(config);
            state.catalog.request();
            info!("configuration reloaded");
            Ok(())
        }
        Err(err) => {
            warn!(%err, "reload failed; keeping the running configuration");
            Err(ReloadError::Load(err))
        }
    }
}
