//! pgshard in a process of its own (`pgshard-child`, this crate's binary),
//! for tests that kill it with SIGKILL: nothing of it runs afterwards, as
//! after `kill -9` in production. The config files go to a temporary
//! directory; [`free_port`] gives the port to write into them.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::HarnessError;

/// A running `pgshard-child` process.
#[derive(Debug)]
pub struct ChildProxy {
    child: Child,
    _dir: tempfile::TempDir,
}

/// A loopback port free now (for a child's `port = ...`).
pub fn free_port() -> Result<u16, HarnessError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| HarnessError::Io("bind 127.0.0.1:0".into(), e))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| HarnessError::Io("local address".into(), e))
}

impl ChildProxy {
    /// Run `binary` (the path of `pgshard-child`) on the config texts, with
    /// `fault` in `PGSHARD_TEST_FAULT` when given. It serves once its port
    /// answers (the caller waits for that).
    pub fn start(
        binary: &Path,
        pgdog_toml: &str,
        users_toml: &str,
        fault: Option<&str>,
    ) -> Result<ChildProxy, HarnessError> {
        let dir = tempfile::tempdir().map_err(|e| HarnessError::Io("config dir".into(), e))?;
        let paths = (dir.path().join("pgdog.toml"), dir.path().join("users.toml"));
        for (path, text) in [(&paths.0, pgdog_toml), (&paths.1, users_toml)] {
            std::fs::write(path, text)
                .map_err(|e| HarnessError::Io(path.display().to_string(), e))?;
        }
        let mut command = Command::new(binary);
        command
            .arg(&paths.0)
            .arg(&paths.1)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let Some(fault) = fault {
            command.env("PGSHARD_TEST_FAULT", fault);
        }
        let child = command
            .spawn()
            .map_err(|e| HarnessError::Io(binary.display().to_string(), e))?;
        Ok(ChildProxy { child, _dir: dir })
    }

    /// SIGKILL, then reap it (what dropping it does).
    pub fn kill(self) {
        drop(self);
    }
}

impl Drop for ChildProxy {
    /// `Child::kill` sends SIGKILL.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
