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
    resync: bool,
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

    /// `change` takes effect for the client (RESET returns to its startup
    /// value). In session mode the server, which RESET returns to its own
    /// default, must then be brought in line before the next statement.
    pub(super) fn take_effect(&mut self, change: &ParamChange, session_mode: bool) {
        self.params.apply(change, &self.defaults);
        self.resync |= session_mode;
    }

    /// Session mode: the server's settings are to be brought in line with
    /// the client's before the next statement.
    pub(super) fn out_of_line(&self) -> bool {
        self.resync
    }

    /// The server's settings were brought in line with the client's.
    pub(super) fn brought_in_line(&mut self) {
        self.resync = false;
    }

    /// The changes the open transaction made, taken out (its COMMIT or
    /// ROLLBACK decides what becomes of them).
    pub(super) fn take_pending(&mut self) -> Vec<ParamChange> {
        std::mem::take(&mut self.pending)
    }

    /// DISCARD ALL: back to the startup settings, nothing pending.
    pub(super) fn discard_all(&mut self) {
        self.params = self.defaults.clone();
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn startup() -> ParamSet {
        let params = [("DateStyle".to_owned(), "ISO".to_owned())];
        ParamSet::from_startup(&params).unwrap_or_default()
    }

    fn set(name: &str, sql: &str) -> ParamChange {
        ParamChange::Set {
            name: name.to_owned(),
            sql: sql.to_owned(),
        }
    }

    #[test]
    fn a_change_takes_effect_and_reset_returns_to_startup() {
        let mut settings = Settings::new(startup());
        settings.take_effect(&set("datestyle", "SET datestyle TO 'German'"), false);
        assert_ne!(settings.params, settings.defaults);
        assert!(
            !settings.out_of_line(),
            "transaction mode: nothing to bring in line"
        );
        let reset = ParamChange::Reset {
            name: "datestyle".to_owned(),
        };
        settings.take_effect(&reset, true);
        assert_eq!(settings.params, settings.defaults);
        assert!(
            settings.out_of_line(),
            "session mode: the server is brought in line"
        );
        settings.brought_in_line();
        assert!(!settings.out_of_line());
    }

    #[test]
    fn pending_changes_wait_for_the_transaction() {
        let mut settings = Settings::new(startup());
        settings
            .pending
            .push(set("search_path", "SET search_path TO s"));
        assert_eq!(settings.params, settings.defaults);
        let pending = settings.take_pending();
        assert_eq!(pending.len(), 1);
        assert!(settings.pending.is_empty());
        settings.take_effect(&pending[0], false);
        settings
            .pending
            .push(set("work_mem", "SET work_mem TO '1MB'"));
        settings.discard_all();
        assert_eq!(settings.params, settings.defaults);
        assert!(settings.pending.is_empty());
    }
}
