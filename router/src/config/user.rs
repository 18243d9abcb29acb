//! Who may log in: `[[users]]` of `users.toml`, and `[admin]` of `pgdog.toml`
//! for the admin console.

use std::fmt;

use serde::Deserialize;

use super::{AuthType, PoolerMode, Redacted};

/// One `[[users]]` entry of `users.toml`: who may connect to which cluster, and
/// how pgshard logs into the servers on their behalf.
///
/// `Debug` prints `password` and `server_password` as `<redacted>`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    /// The cluster (`databases.name`) this user may connect to.
    pub database: String,
    /// The password pgshard checks when the client logs in. Required unless the
    /// effective `auth_type` is `trust`.
    pub password: Option<String>,
    /// Overrides the database's `pool_size` and `general.default_pool_size`.
    pub pool_size: Option<usize>,
    /// Overrides the database's and `general`'s `min_pool_size`.
    pub min_pool_size: Option<usize>,
    /// Overrides the database's and `general`'s `pooler_mode`.
    pub pooler_mode: Option<PoolerMode>,
    /// The login pgshard uses on the servers; else the database's `user`, else `name`.
    pub server_user: Option<String>,
    /// The password for that login; else the database's `password`, else `password`.
    pub server_password: Option<String>,
    /// Overrides `general.auth_type` for this user.
    pub auth_type: Option<AuthType>,
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured so that a new field cannot be forgotten here.
        let User {
            name,
            database,
            password,
            pool_size,
            min_pool_size,
            pooler_mode,
            server_user,
            server_password,
            auth_type,
        } = self;
        f.debug_struct("User")
            .field("name", name)
            .field("database", database)
            .field("password", &Redacted(password))
            .field("pool_size", pool_size)
            .field("min_pool_size", min_pool_size)
            .field("pooler_mode", pooler_mode)
            .field("server_user", server_user)
            .field("server_password", &Redacted(server_password))
            .field("auth_type", auth_type)
            .finish()
    }
}

/// `[admin]`: the admin console, reached by connecting to database `name`.
///
/// `Debug` prints `password` as `<redacted>`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Admin {
    /// The database name clients connect to for the console. Must not be a
    /// cluster name.
    pub name: String,
    /// The only user the console admits.
    pub user: String,
    /// The console's password; `None` refuses every login.
    pub password: Option<String>,
}

impl Default for Admin {
    fn default() -> Self {
        Admin {
            name: "admin".to_owned(),
            user: "admin".to_owned(),
            password: None,
        }
    }
}

impl fmt::Debug for Admin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Admin {
            name,
            user,
            password,
        } = self;
        f.debug_struct("Admin")
            .field("name", name)
            .field("user", user)
            .field("password", &Redacted(password))
            .finish()
    }
}
