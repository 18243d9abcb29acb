//! Finding the Postgres server binaries and running them as a user Postgres
//! accepts (never root).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::HarnessError;

/// Environment variable that points the harness at a Postgres `bin` directory.
pub const BINDIR_ENV: &str = "PGSHARD_PG_BINDIR";

/// How to install what is missing; part of every "not found" error.
pub(crate) const INSTALL_HINT: &str =
    "install the PostgreSQL server with `apt-get install -y postgresql` \
     (or run `scripts/setup.sh`), or set PGSHARD_PG_BINDIR to the directory holding initdb";

/// The Postgres server programs of one installation, and who runs them.
#[derive(Debug, Clone)]
pub struct PgBinaries {
    bindir: PathBuf,
    /// Postgres refuses to run as root: when we are root, run as `postgres`.
    run_as_postgres: bool,
}

impl PgBinaries {
    /// Find initdb, pg_ctl, postgres and psql: `$PGSHARD_PG_BINDIR`, then the
    /// newest `/usr/lib/postgresql/<major>/bin` (Debian), then `$PATH`.
    pub fn find() -> Result<PgBinaries, HarnessError> {
        let mut searched = Vec::new();
        let mut candidates = Vec::new();
        if let Some(dir) = std::env::var_os(BINDIR_ENV) {
            candidates.push(PathBuf::from(dir));
        }
        candidates.extend(debian_bindirs());
        if let Some(path) = std::env::var_os("PATH") {
            candidates.extend(std::env::split_paths(&path));
        }
        for dir in candidates {
            if ["initdb", "pg_ctl", "postgres", "psql"]
                .iter()
                .all(|bin| dir.join(bin).is_file())
            {
                let run_as_postgres = nix::unistd::geteuid().is_root();
                if run_as_postgres
                    && nix::unistd::User::from_name("postgres")
                        .ok()
                        .flatten()
                        .is_none()
                {
                    return Err(HarnessError::RootWithoutPostgres);
                }
                return Ok(PgBinaries {
                    bindir: dir,
                    run_as_postgres,
                });
            }
            searched.push(dir.display().to_string());
        }
        Err(HarnessError::NoBinaries {
            searched: searched.join(", "),
        })
    }

    /// The directory holding the programs.
    pub fn bindir(&self) -> &Path {
        &self.bindir
    }

    /// Whether server programs run as the `postgres` user (we are root).
    pub fn runs_as_postgres(&self) -> bool {
        self.run_as_postgres
    }

    /// A command for program `bin` of this installation, as the server's user.
    pub fn command(&self, bin: &str) -> Command {
        self.as_server_user(self.bindir.join(bin))
    }

    /// A command for any `program`, run as the user the server runs as.
    pub fn as_server_user(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        if self.run_as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        }
    }

    /// Give `path` to the user the server runs as (no-op when not root).
    pub fn hand_over(&self, path: &Path) -> Result<(), HarnessError> {
        if !self.run_as_postgres {
            return Ok(());
        }
        let user = nix::unistd::User::from_name("postgres")
            .ok()
            .flatten()
            .ok_or(HarnessError::NoPostgresUser)?;
        std::os::unix::fs::chown(path, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
            .map_err(|err| HarnessError::Io(format!("chown {}", path.display()), err))
    }
}

/// `/usr/lib/postgresql/<major>/bin`, newest major first.
fn debian_bindirs() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") else {
        return Vec::new();
    };
    let mut majors: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse().ok()?;
            Some((major, entry.path().join("bin")))
        })
        .collect();
    majors.sort_by_key(|(major, _)| std::cmp::Reverse(*major));
    majors.into_iter().map(|(_, dir)| dir).collect()
}

/// Run `cmd` to completion; a non-zero exit becomes an error carrying its output.
pub(crate) fn run(mut cmd: Command, what: &str) -> Result<Output, HarnessError> {
    let output = cmd
        .output()
        .map_err(|err| HarnessError::Io(what.to_owned(), err))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(HarnessError::Command {
            what: what.to_owned(),
            status: output.status.to_string(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        })
    }
}
