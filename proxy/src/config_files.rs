//! Reading `pgdog.toml` and `users.toml` from disk into a validated config
//! snapshot, logging a warning for each PgDog key pgshard accepted without
//! supporting it; `NODE_ID` from the environment when `node_id` is unset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use router::config::{Config, ConfigError};

use crate::unique_ids::{node_id, NodeIdError};

/// Why the config files could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("pgdog.toml: general.node_id is unset and {0}")]
    NodeId(#[from] NodeIdError),
}

/// Read and validate both files.
pub fn load(pgdog_toml: &Path, users_toml: &Path) -> Result<Arc<Config>, LoadError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let mut config = Config::from_toml(&read(pgdog_toml)?, &read(users_toml)?)?;
    // PgDog's way to give each instance its node id: NODE_ID=name-<number>.
    if config.general.node_id.is_none() {
        if let Ok(env) = std::env::var("NODE_ID") {
            config.general.node_id = Some(node_id(&config.general, Some(&env))?);
        }
    }
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    Ok(Arc::new(config))
}
