//! The Unix-socket listener (`unix_socket_dir`, PgBouncer's key): the socket
//! file `<dir>/.s.PGSQL.<port>` where `psql -h <dir>` and libpq look, its
//! mode and group, a stale file left by a crash replaced, a live one (another
//! server on the same port) refused, and the file removed when pgshard
//! stops. Clients accepted here are served as TCP ones are, without TLS.

use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use router::config::{socket_file_name, General};
use tracing::{info, warn};

use crate::state::State;

/// Why the Unix socket could not be set up (pgshard does not start).
#[derive(Debug, thiserror::Error)]
pub enum UnixSocketError {
    #[error("{path}: another server is listening on this socket (a pgshard, PgBouncer or Postgres on port {port}?)")]
    InUse { path: String, port: u16 },
    #[error("{path}: {what}: {source}")]
    Io {
        path: String,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("unix_socket_group: no group named {0:?} on this machine")]
    NoSuchGroup(String),
    #[error("unix_socket_group: cannot look up group {group:?}: {source}")]
    GroupLookup { group: String, source: nix::Error },
}

/// A bound Unix socket; its file is removed when this is dropped.
#[derive(Debug)]
pub struct UnixSocket {
    listener: std::os::unix::net::UnixListener,
    path: PathBuf,
    port: u16,
    /// The file's (device, inode) as bound: what is removed at the end.
    file: Option<(u64, u64)>,
}

impl UnixSocket {
    /// Bind the socket `general` asks for, for TCP `port`; `None` when
    /// `unix_socket_dir` is off. Outside any runtime (the binary binds
    /// before its workers start).
    pub fn bind(general: &General, port: u16) -> Result<Option<UnixSocket>, UnixSocketError> {
        let Some(dir) = general.unix_socket_dir() else {
            return Ok(None);
        };
        let path = dir.join(socket_file_name(port));
        let shown = path.display().to_string();
        let io = |what: &'static str| {
            let path = shown.clone();
            move |source| UnixSocketError::Io { path, what, source }
        };
        remove_stale(&path, port)?;
        let listener = std::os::unix::net::UnixListener::bind(&path).map_err(io("bind"))?;
        // Owned from here: an error below removes the file again.
        let file = inode(&path);
        let socket = UnixSocket {
            listener,
            path,
            port,
            file,
        };
        let path = &socket.path;
        if let Some(group) = &general.unix_socket_group {
            let gid = group_id(group)?;
            std::os::unix::fs::chown(path, None, Some(gid)).map_err(io("chown"))?;
        }
        let mode = std::fs::Permissions::from_mode(general.unix_socket_mode.0);
        std::fs::set_permissions(path, mode).map_err(io("chmod"))?;
        socket
            .listener
            .set_nonblocking(true)
            .map_err(io("set_nonblocking"))?;
        Ok(Some(socket))
    }

    /// The socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        // Only our own file: a successor may have replaced it already
        // (it found ours stale), and then it is not ours to remove.
        if self.file.is_some() && inode(&self.path) == self.file {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn inode(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.dev(), meta.ino()))
}

/// A socket file left by a process that is gone is removed; one that
/// answers is another server's.
fn remove_stale(path: &Path, port: u16) -> Result<(), UnixSocketError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(UnixSocketError::InUse {
            path: path.display().to_string(),
            port,
        });
    }
    info!(path = %path.display(), "removing a stale Unix socket");
    std::fs::remove_file(path).map_err(|source| UnixSocketError::Io {
        path: path.display().to_string(),
        what: "remove the stale socket",
        source,
    })
}

fn group_id(group: &str) -> Result<u32, UnixSocketError> {
    match nix::unistd::Group::from_name(group) {
        Ok(Some(found)) => Ok(found.gid.as_raw()),
        Ok(None) => Err(UnixSocketError::NoSuchGroup(group.to_owned())),
        Err(source) => Err(UnixSocketError::GroupLookup {
            group: group.to_owned(),
            source,
        }),
    }
}

/// Accept clients on `socket`, a task each on this runtime, until `stop`
/// completes or pgshard shuts down; the socket file goes with the loop.
pub(crate) async fn accept(socket: UnixSocket, state: Arc<State>, stop: impl Future<Output = ()>) {
    let listener = match socket
        .listener
        .try_clone()
        .and_then(tokio::net::UnixListener::from_std)
    {
        Ok(listener) => listener,
        Err(err) => {
            warn!(%err, path = %socket.path.display(), "cannot serve the Unix socket");
            return;
        }
    };
    info!(path = %socket.path.display(), "listening");
    tokio::pin!(stop);
    let mut admin_shutdown = state.gate.shutdown.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let span = tracing::info_span!(
                        "client",
                        peer = "unix",
                        user = tracing::field::Empty,
                        database = tracing::field::Empty,
                        application_name = tracing::field::Empty,
                    );
                    let state = Arc::clone(&state);
                    tokio::spawn(super::arrival::serve_unix(stream, socket.port, state, span));
                }
                Err(err) => warn!(%err, "accept failed on the Unix socket"),
            },
            () = &mut stop => break,
            _ = admin_shutdown.wait_for(|s| *s) => break,
        }
    }
}
