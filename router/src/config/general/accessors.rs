//! `[general]`'s values as the code uses them: durations from the
//! millisecond keys (0 meaning off where it does), the Unix socket and TLS
//! paths, and every key listed for SHOW CONFIG.

use std::path::Path;
use std::time::Duration;

use super::General;

/// How the servers of shards with `role = "auto"` entries are checked: a
/// promotion is noticed within `interval + timeout` (a check that does not
/// answer in `timeout` counts the server down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LsnChecks {
    pub interval: Duration,
    pub timeout: Duration,
    pub delay: Duration,
}

/// `0` means "off" for the optional timeouts.
fn optional(ms: u64) -> Option<Duration> {
    (ms != 0).then(|| Duration::from_millis(ms))
}

impl General {
    /// `connect_timeout`.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// `checkout_timeout`.
    pub fn checkout_timeout(&self) -> Duration {
        Duration::from_millis(self.checkout_timeout_ms)
    }

    /// `idle_timeout`; `None` when 0 (idle connections are kept).
    pub fn idle_timeout(&self) -> Option<Duration> {
        optional(self.idle_timeout_ms)
    }

    /// `query_timeout`; `None` when 0 (no limit).
    pub fn query_timeout(&self) -> Option<Duration> {
        optional(self.query_timeout_ms)
    }

    /// `server_lifetime`; `None` when 0 (connections live forever).
    pub fn server_lifetime(&self) -> Option<Duration> {
        optional(self.server_lifetime_ms)
    }

    /// `two_phase_commit_recovery_interval`; `None` when 0 (only at start).
    pub fn two_phase_commit_recovery_interval(&self) -> Option<Duration> {
        optional(self.two_phase_commit_recovery_interval_ms)
    }

    /// `shutdown_timeout`.
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }

    /// `healthcheck_interval`.
    pub fn healthcheck_interval(&self) -> Duration {
        Duration::from_millis(self.healthcheck_interval_ms)
    }

    /// `idle_healthcheck_interval`; `None` when 0 (no background checks).
    pub fn idle_healthcheck_interval(&self) -> Option<Duration> {
        optional(self.idle_healthcheck_interval_ms)
    }

    /// `idle_healthcheck_delay`.
    pub fn idle_healthcheck_delay(&self) -> Duration {
        Duration::from_millis(self.idle_healthcheck_delay_ms)
    }

    /// `healthcheck_timeout`.
    pub fn healthcheck_timeout(&self) -> Duration {
        Duration::from_millis(self.healthcheck_timeout_ms)
    }

    /// `ban_timeout`.
    pub fn ban_timeout(&self) -> Duration {
        Duration::from_millis(self.ban_timeout_ms)
    }

    /// `client_login_timeout`; `None` when 0 (never).
    pub fn client_login_timeout(&self) -> Option<Duration> {
        (self.client_login_timeout_ms > 0)
            .then(|| Duration::from_millis(self.client_login_timeout_ms))
    }

    /// `lsn_check_interval`, `lsn_check_timeout` and `lsn_check_delay`.
    pub fn lsn_checks(&self) -> LsnChecks {
        LsnChecks {
            interval: Duration::from_millis(self.lsn_check_interval_ms),
            timeout: Duration::from_millis(self.lsn_check_timeout_ms),
            delay: Duration::from_millis(self.lsn_check_delay_ms),
        }
    }

    /// `log_min_duration_statement`; `None` when negative (off).
    pub fn slow_query_threshold(&self) -> Option<Duration> {
        u64::try_from(self.log_min_duration_statement)
            .ok()
            .map(Duration::from_millis)
    }

    /// Every key of `[general]` with its effective value, sorted by name
    /// (SHOW CONFIG): read through serde, so a key added to the struct is
    /// listed without more code. Unset optional keys have an empty value.
    pub fn effective_keys(&self) -> Vec<(String, String)> {
        let Ok(serde_json::Value::Object(keys)) = serde_json::to_value(self) else {
            return Vec::new();
        };
        keys.into_iter()
            .map(|(key, value)| {
                let value = match value {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                };
                (key, value)
            })
            .collect()
    }

    /// The worker threads to run on a machine with `cores` cores: `workers`
    /// if set, else half the cores (at least one). A proxy mostly shares
    /// its machine with its clients or its database, and a worker costs
    /// less per transaction than two on a core others need
    /// (`bench/README.md`, pgbench section).
    pub fn workers_for(&self, cores: usize) -> usize {
        self.workers.unwrap_or(cores / 2).max(1)
    }

    /// The directory of the Unix socket to listen on, if any (an empty
    /// `unix_socket_dir` turns it off, as in PgBouncer).
    pub fn unix_socket_dir(&self) -> Option<&Path> {
        self.unix_socket_dir
            .as_deref()
            .filter(|dir| !dir.as_os_str().is_empty())
    }

    /// The certificate and key paths when client TLS is configured. Validation
    /// guarantees both or neither are set.
    pub fn tls(&self) -> Option<(&Path, &Path)> {
        match (&self.tls_certificate, &self.tls_private_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            _ => None,
        }
    }
}
