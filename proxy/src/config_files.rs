//! Reading `pgdog.toml` and `users.toml` from disk into a validated config
//! snapshot, logging a warning for each PgDog key pgshard accepted without
//! supporting it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use router::config::{Config, ConfigError};

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
}

/// Read and validate both files.
pub fn load(pgdog_toml: &Path, users_toml: &Path) -> Result<Arc<Config>, LoadError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let config = Config::from_toml(&read(pgdog_toml)?, &read(users_toml)?)?;
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    Ok(Arc::new(config))
}
