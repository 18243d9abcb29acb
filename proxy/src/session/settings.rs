//! The client's settings as a session tracks them: what RESET returns to,
//! what the client expects now, what its open transaction changed, what
//! extended-protocol statements changed since the last Sync, and whether
//! the server must be brought back in line.

use crate::conn::settings::{ParamChange, ParamSet};

/// A client's settings.
pub(super) struct Settings {
    /// Startup settings: what RESET returns to.
    pub(super) defaults: ParamSet,
    /// The settings the client expects now.
    pub(super) params: ParamSet,
    /// Settings changed inside the open transaction: kept on COMMIT.
    pub(super) pending: Vec<ParamChange>,
    /// Setting changes of extended-protocol statements bound since the last
    /// Sync: the client's once that Sync's ReadyForQuery comes without an
    /// error in between (an error rolls the implicit transaction back).
    pub(super) extended: Vec<ParamChange>,
    /// Session mode: the client's settings differ from the server's (a
    /// RESET returned the server to its own default, not the client's
    /// startup value); brought in line before the next statement.
    pub(super) resync: bool,
}

impl Settings {
    /// Settings of a client that logged in with `defaults`.
    pub(super) fn new(defaults: ParamSet) -> Settings {
        Settings {
            params: defaults.clone(),
            defaults,
            pending: Vec::new(),
            extended: Vec::new(),
            resync: false,
        }
    }
}
