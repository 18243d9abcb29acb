//! Who may come in at all (pgshard shutting down, `max_client_conn`), and
//! what a startup packet may ask for before anything else happens: TLS
//! when `tls_client_required` is on, no replication (walsender) session,
//! and no change of the session's user through startup settings. Each
//! refusal is a FATAL with a SQLSTATE, sent before a password is asked for
//! and before any server sees the client.
//!
//! `role` in the startup settings is allowed on purpose: it is applied on
//! the server like `SET ROLE`, which checks it against the configured
//! server user's memberships exactly as a direct login would, and it never
//! outlives the client on a pooled server (the server is synced back to
//! the next client's settings). `session_authorization` is refused: on a
//! superuser server login it would make the session another user from its
//! first byte, under a name pgshard never authenticated.

use router::config::{Config, General};

use crate::conn::settings::ParamSet;
use crate::protocol::sqlstate;
use crate::protocol::startup::Startup;
use crate::state::State;

/// Why a startup packet is refused: a SQLSTATE and a message.
pub(super) type Refusal = (&'static str, String);

/// Why pgshard takes no new client now (shutting down, `max_client_conn`
/// reached), as a SQLSTATE and a message; `None` if it takes this one.
pub(super) fn turned_away(state: &State, config: &Config) -> Option<(&'static str, &'static str)> {
    if state.is_shutting_down() {
        return Some((sqlstate::CANNOT_CONNECT_NOW, "pgshard is shutting down"));
    }
    if state.client_count() >= config.general.max_client_conn {
        return Some((
            sqlstate::TOO_MANY_CONNECTIONS,
            "sorry, too many clients already (max_client_conn)",
        ));
    }
    None
}

/// The refusal for `startup`, if any; `plain_tcp` says whether the client
/// is on TCP without TLS.
pub(super) fn refusal(startup: &Startup, general: &General, plain_tcp: bool) -> Option<Refusal> {
    if general.tls_client_required && plain_tcp {
        return Some((
            sqlstate::INVALID_AUTHORIZATION,
            "pgshard requires TLS on TCP connections (tls_client_required): connect with \
             sslmode=require (or verify-full), or through the Unix socket"
                .to_owned(),
        ));
    }
    if let Some(value) = startup.param("replication").filter(|v| asks_replication(v)) {
        return Some((
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!(
                "pgshard does not proxy replication connections (replication={value}): \
                 connect to the server itself for streaming or logical replication"
            ),
        ));
    }
    if changes_session_user(startup) {
        return Some((
            sqlstate::INSUFFICIENT_PRIVILEGE,
            "pgshard refuses session_authorization in the startup packet: a pooled session \
             runs as the user that logged in (run SET SESSION AUTHORIZATION in the session \
             if the server login may)"
                .to_owned(),
        ));
    }
    None
}

/// `replication` values that ask for a walsender: `database` (logical)
/// and Postgres's true spellings (physical). Its false spellings are a
/// normal session; anything else Postgres refuses too.
fn asks_replication(value: &str) -> bool {
    !matches!(
        value.to_ascii_lowercase().as_str(),
        "false" | "off" | "no" | "0" | "n" | "f" | "of"
    )
}

/// Whether the startup settings (top-level or `options`) set
/// `session_authorization`. Unparsable `options` are refused later with
/// their own message.
fn changes_session_user(startup: &Startup) -> bool {
    ParamSet::from_startup(&startup.params)
        .is_ok_and(|settings| settings.contains("session_authorization"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn startup(params: &[(&str, &str)]) -> Startup {
        Startup {
            major: 3,
            minor: 0,
            params: params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn code(params: &[(&str, &str)], general: &General, plain: bool) -> Option<&'static str> {
        refusal(&startup(params), general, plain).map(|(code, _)| code)
    }

    #[test]
    fn refusals() {
        let config = General::default();
        let user = ("user", "app");
        for (param, expected) in [
            (("application_name", "x"), None),
            (("replication", "false"), None),
            (("replication", "OFF"), None),
            (("replication", "0"), None),
            (("replication", "database"), Some("0A000")),
            (("replication", "true"), Some("0A000")),
            (("replication", "yes"), Some("0A000")),
            (("role", "admin"), None),
            (("options", "-c role=admin"), None),
            (("session_authorization", "postgres"), Some("42501")),
            (("SESSION_AUTHORIZATION", "postgres"), Some("42501")),
            (
                ("options", "-c session_authorization=postgres"),
                Some("42501"),
            ),
            (
                ("options", "--session_authorization=postgres"),
                Some("42501"),
            ),
            (
                ("options", "-csession_authorization=postgres"),
                Some("42501"),
            ),
        ] {
            assert_eq!(code(&[user, param], &config, true), expected, "{param:?}");
        }
    }

    #[test]
    fn tls_required_refuses_plain_tcp_only() {
        let config = General {
            tls_client_required: true,
            ..General::default()
        };
        assert_eq!(code(&[("user", "app")], &config, true), Some("28000"));
        // TLS, or the Unix socket.
        assert_eq!(code(&[("user", "app")], &config, false), None);
    }
}
