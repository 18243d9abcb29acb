//! What holds checkouts back: PAUSE (of every database or one), KILL of a
//! database and MAINTENANCE hold sessions of the databases they name until
//! they are let go; pgshard shutting down ends the waits.

use std::collections::BTreeSet;

use tokio::sync::watch;

/// What PAUSE, PAUSE db, KILL db and MAINTENANCE ON hold: sessions of a
/// held database check no server out until it is let go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paused {
    /// PAUSE (every database), until RESUME.
    pub all: bool,
    /// MAINTENANCE ON (every database), until MAINTENANCE OFF.
    pub maintenance: bool,
    /// MAINTENANCE ON db, until MAINTENANCE OFF db (or OFF).
    pub maintenance_databases: BTreeSet<String>,
    /// PAUSE db and KILL db, until RESUME db (or RESUME).
    pub databases: BTreeSet<String>,
}

impl Paused {
    /// Whether sessions of `database` must wait.
    pub fn holds(&self, database: &str) -> bool {
        self.all
            || self.maintenance
            || self.databases.contains(database)
            || self.maintenance_databases.contains(database)
    }
}

/// The switches checkouts look at.
#[derive(Debug)]
pub struct Gate {
    /// PAUSE, KILL, MAINTENANCE: no new server checkouts for the held
    /// databases until they are let go.
    pub paused: watch::Sender<Paused>,
    /// SHUTDOWN or SIGTERM: stop accepting, drain, exit.
    pub shutdown: watch::Sender<bool>,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            paused: watch::Sender::new(Paused::default()),
            shutdown: watch::Sender::new(false),
        }
    }
}

impl Gate {
    /// Whether sessions of `database` must wait now.
    pub fn holds(&self, database: &str) -> bool {
        self.paused.borrow().holds(database)
    }

    /// Wait while `database` is held (PAUSE, KILL, MAINTENANCE); `false`
    /// if pgshard started shutting down instead.
    pub async fn wait_resumed(&self, database: &str) -> bool {
        let mut paused = self.paused.subscribe();
        let mut shutdown = self.shutdown.subscribe();
        tokio::select! {
            _ = paused.wait_for(|p| !p.holds(database)) => !self.is_shutting_down(),
            _ = shutdown.wait_for(|s| *s) => false,
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}
