//! PgBouncer's Unix-socket keys (`unix_socket_dir`, `unix_socket_mode`,
//! `unix_socket_group`): the mode's two spellings and the checks a path
//! must pass before pgshard binds it. The proxy binds the socket
//! (`proxy/src/listener/unix.rs`); looking the group up is I/O, so it is
//! checked there, at startup.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::General;

/// The longest socket path Linux binds: `sun_path` holds 108 bytes, the
/// last of them the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;

/// The file name of the socket for `port` in its directory, as Postgres and
/// PgBouncer name it (what `psql -h <dir> -p <port>` looks for).
pub fn socket_file_name(port: u16) -> String {
    format!(".s.PGSQL.{port}")
}

/// `unix_socket_mode`: the socket file's permission bits. PgBouncer's
/// default, `0777`, lets every local user connect (authentication still
/// applies). Written as in PgBouncer's ini file (`"0777"`, a string of octal
/// digits) or as a TOML integer (`0o777`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixSocketMode(pub u32);

impl Default for UnixSocketMode {
    fn default() -> UnixSocketMode {
        UnixSocketMode(0o777)
    }
}

/// What is wrong with a Unix-socket key's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnixSocketError {
    #[error("{0:#o} has bits beyond the permission bits (at most 0777)")]
    BeyondPermissions(u32),
    #[error("{0:04o} does not let pgshard's own user read and write the socket (0600 at least)")]
    OwnerLockedOut(u32),
    #[error("{dir} is too long for a socket path ({len} bytes with the socket's name, at most {MAX_SOCKET_PATH}): choose a shorter directory")]
    PathTooLong { dir: String, len: usize },
    #[error("is empty: name a group, or leave the key out to keep pgshard's own")]
    EmptyGroup,
}

impl UnixSocketMode {
    /// The bits, or what is wrong with them.
    pub(super) fn check(self) -> Result<u32, UnixSocketError> {
        if self.0 > 0o777 {
            return Err(UnixSocketError::BeyondPermissions(self.0));
        }
        if self.0 & 0o600 != 0o600 {
            return Err(UnixSocketError::OwnerLockedOut(self.0));
        }
        Ok(self.0)
    }
}

impl Serialize for UnixSocketMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{:04o}", self.0))
    }
}

impl<'de> Deserialize<'de> for UnixSocketMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<UnixSocketMode, D::Error> {
        deserializer.deserialize_any(ModeVisitor)
    }
}

struct ModeVisitor;

impl Visitor<'_> for ModeVisitor {
    type Value = UnixSocketMode;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("permission bits: a string of octal digits (\"0777\") or an integer (0o777)")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<UnixSocketMode, E> {
        u32::try_from(value)
            .map(UnixSocketMode)
            .map_err(|_| E::custom(format!("{value} is not a file mode")))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<UnixSocketMode, E> {
        u32::try_from(value)
            .map(UnixSocketMode)
            .map_err(|_| E::custom(format!("{value} is not a file mode")))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<UnixSocketMode, E> {
        let digits = value.strip_prefix("0o").unwrap_or(value);
        if digits.is_empty() || digits.len() > 4 {
            return Err(E::custom(format!(
                "{value:?} is not a file mode (octal digits, as \"0777\")"
            )));
        }
        u32::from_str_radix(digits, 8)
            .map(UnixSocketMode)
            .map_err(|_| {
                E::custom(format!(
                    "{value:?} is not a file mode (octal digits, as \"0777\")"
                ))
            })
    }
}

/// The Unix-socket keys of `general`: the key and what is wrong with it.
pub(super) fn check(general: &General) -> Result<(), (&'static str, UnixSocketError)> {
    general
        .unix_socket_mode
        .check()
        .map_err(|error| ("unix_socket_mode", error))?;
    if let Some(dir) = general.unix_socket_dir() {
        check_dir(dir).map_err(|error| ("unix_socket_dir", error))?;
    }
    if general.unix_socket_group.as_deref() == Some("") {
        return Err(("unix_socket_group", UnixSocketError::EmptyGroup));
    }
    Ok(())
}

/// What is wrong with `dir` as `unix_socket_dir`, if anything: the socket
/// path must fit in `sun_path` whatever the port.
fn check_dir(dir: &Path) -> Result<(), UnixSocketError> {
    let longest = dir.join(socket_file_name(u16::MAX));
    let len = longest.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        let dir = dir.display().to_string();
        return Err(UnixSocketError::PathTooLong { dir, len });
    }
    Ok(())
}
