//! The admin console's views of pools, clients, servers and the AST cache:
//! `SHOW POOLS`, `CLIENTS` and `SERVERS` (PgBouncer's columns in its
//! order, then `shard` and the server's `role` now: `primary`, `replica`,
//! or for `auto` servers also `unknown`, `down` or `fenced`), `QUERY_CACHE` and `PREPARED_STATEMENTS` (PgDog's;
//! the AST cache's statements, the shared statement registry). `SHOW STATS`
//! is `stats.rs`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;

use super::Rows;
use crate::session::{CLIENT_ACTIVE, CLIENT_WAITING};
use crate::state::State;

pub(super) fn show_pools(state: &State, out: &mut BytesMut) {
    let columns = [
        "database",
        "user",
        "cl_active",
        "cl_waiting",
        "cl_active_cancel_req",
        "cl_waiting_cancel_req",
        "sv_active",
        "sv_active_cancel",
        "sv_being_canceled",
        "sv_idle",
        "sv_used",
        "sv_tested",
        "sv_login",
        "maxwait",
        "maxwait_us",
        "pool_mode",
        "load_balance_hosts",
        "shard",
        "pool_size",
        "role",
    ];
    let mut rows = Rows::new(out, &columns);
    for pool in state.all_pools() {
        let max_wait = pool.stats.max_wait_us.load(Ordering::Relaxed);
        rows.row(&[
            pool.cluster.clone(),
            pool.user.clone(),
            pool.active_clients().to_string(),
            pool.stats.waiting.load(Ordering::Relaxed).to_string(),
            // Cancel requests are forwarded, not queued: none wait here.
            "0".into(),
            "0".into(),
            pool.active().to_string(),
            "0".into(),
            "0".into(),
            pool.idle_count().to_string(),
            "0".into(),
            "0".into(),
            "0".into(),
            (max_wait / 1_000_000).to_string(),
            (max_wait % 1_000_000).to_string(),
            pool.settings.pooler_mode.as_str().to_owned(),
            String::new(),
            pool.shard.to_string(),
            pool.settings.pool_size.to_string(),
            pool.serves().as_str().to_owned(),
        ]);
    }
    rows.done("SHOW");
}

pub(super) fn unix_time(t: SystemTime) -> String {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs().to_string())
        .unwrap_or_default()
}

/// The columns of PgBouncer's `SHOW CLIENTS` and `SHOW SERVERS`, in its
/// order, then pgshard's `shard` and `role` (a server's now; empty for
/// clients). Columns pgshard has no value for (replication, local
/// address, wait, ptr, link, tls, ...) are empty.
const CONNECTION_COLUMNS: [&str; 23] = [
    "type",
    "user",
    "database",
    "replication",
    "state",
    "addr",
    "port",
    "local_addr",
    "local_port",
    "connect_time",
    "request_time",
    "wait",
    "wait_us",
    "close_needed",
    "ptr",
    "link",
    "remote_pid",
    "tls",
    "application_name",
    "prepared_statements",
    "id",
    "shard",
    "role",
];

/// One row of [`CONNECTION_COLUMNS`].
#[derive(Default)]
struct Connection {
    kind: &'static str,
    user: String,
    database: String,
    state: &'static str,
    /// The peer's address and port as shown (a server's may be `unix`).
    addr: Option<(String, u16)>,
    connect_time: String,
    request_time: String,
    close_needed: Option<bool>,
    remote_pid: String,
    application_name: String,
    prepared_statements: String,
    id: String,
    shard: String,
    role: &'static str,
}

impl Connection {
    fn row(self) -> Vec<String> {
        let (host, port) = match &self.addr {
            Some((host, port)) => (host.clone(), port.to_string()),
            None => Default::default(),
        };
        vec![
            self.kind.to_owned(),
            self.user.clone(),
            self.database.clone(),
            "none".to_owned(),
            self.state.to_owned(),
            host,
            port,
            String::new(),
            String::new(),
            self.connect_time.clone(),
            self.request_time.clone(),
            "0".to_owned(),
            "0".to_owned(),
            self.close_needed
                .map(|c| u8::from(c).to_string())
                .unwrap_or_default(),
            String::new(),
            String::new(),
            self.remote_pid.clone(),
            String::new(),
            self.application_name.clone(),
            self.prepared_statements.clone(),
            self.id.clone(),
            self.shard.clone(),
            self.role.to_owned(),
        ]
    }
}

pub(super) fn show_clients(state: &State, out: &mut BytesMut) {
    let mut rows = Rows::new(out, &CONNECTION_COLUMNS);
    for client in state.clients() {
        let client_state = match client.state.load(Ordering::Relaxed) {
            CLIENT_ACTIVE => "active",
            CLIENT_WAITING => "waiting",
            _ => "idle",
        };
        rows.row(
            &Connection {
                kind: "C",
                user: client.user.clone(),
                database: client.database.clone(),
                state: client_state,
                addr: client
                    .addr
                    .port()
                    .map(|port| (client.addr.host_text(), port)),
                connect_time: unix_time(client.connected_at),
                application_name: client.application_name.clone(),
                id: client.process_id.to_string(),
                ..Connection::default()
            }
            .row(),
        );
    }
    rows.done("SHOW");
}

/// Every server connection of every pool: idle ones, and those checked out
/// (`active`), with PgBouncer's `close_needed` (opened before the last
/// RECONNECT or KILL: closed when given back).
pub(super) fn show_servers(state: &State, out: &mut BytesMut) {
    let mut rows = Rows::new(out, &CONNECTION_COLUMNS);
    let now = Instant::now();
    let at = |t: Instant| unix_time(SystemTime::now() - now.duration_since(t));
    for pool in state.all_pools() {
        let server = |state, created, id: u64, pid: u32| Connection {
            kind: "S",
            user: pool.target.user.clone(),
            database: pool.target.database.clone(),
            state,
            connect_time: at(created),
            close_needed: Some(pool.is_close_needed(created)),
            remote_pid: pid.to_string(),
            id: id.to_string(),
            shard: pool.shard.to_string(),
            role: pool.serves().as_str(),
            ..Connection::default()
        };
        for (id, used) in pool.checked_out() {
            let row = Connection {
                addr: Some((used.addr.host_text(), used.addr.port())),
                ..server("active", used.created, id, used.process_id)
            };
            rows.row(&row.row());
        }
        for idle in pool.idle_servers() {
            let row = Connection {
                addr: Some((idle.addr.host_text(), idle.addr.port())),
                request_time: at(idle.last_used),
                prepared_statements: idle.prepared.to_string(),
                ..server("idle", idle.created, idle.id, idle.process_id)
            };
            rows.row(&row.row());
        }
    }
    rows.done("SHOW");
}

/// The AST cache in PgDog's shape: one row per cached statement (its text,
/// literals shown as `?` when templated), most hits first, with how often
/// it was found (`hits`) and routed to one shard (`direct`) or several
/// (`multi`). `filter`: only statements containing it (case-insensitive),
/// as in PgDog. The cache's totals are in SHOW STATS and the metrics.
pub(super) fn show_query_cache(state: &State, filter: &str, out: &mut BytesMut) {
    let filter = filter.to_lowercase();
    let mut entries: Vec<_> = state
        .cache
        .entries()
        .into_iter()
        .map(|entry| (entry.shown_text(), entry.stats.counts()))
        .filter(|(text, _)| filter.is_empty() || text.to_lowercase().contains(&filter))
        .collect();
    entries.sort_by_key(|(_, (hits, _, _))| std::cmp::Reverse(*hits));
    let mut rows = Rows::new(out, &["query", "hits", "direct", "multi"]);
    for (text, (hits, direct, multi)) in entries {
        rows.row(&[
            text,
            hits.to_string(),
            direct.to_string(),
            multi.to_string(),
        ]);
    }
    rows.done("SHOW");
}

/// The statements of the process-wide registry in PgDog's shape (`SHOW
/// PREPARED STATEMENTS`): pgshard's name on servers, the text, `rewrite`
/// (empty: pgshard does not rewrite prepared statements), how many clients
/// hold it under a name of their own, the bytes it keeps; then the
/// parameter types the client's Parse gave.
pub(super) fn show_prepared_statements(state: &State, out: &mut BytesMut) {
    let mut rows = Rows::new(
        out,
        &[
            "name",
            "statement",
            "rewrite",
            "used_by",
            "memory_used",
            "parameter_types",
        ],
    );
    for statement in state.statements.statements() {
        let types: Vec<String> = statement.param_types.iter().map(u32::to_string).collect();
        rows.row(&[
            String::from_utf8_lossy(&statement.name).into_owned(),
            String::from_utf8_lossy(&statement.query).into_owned(),
            String::new(),
            // The registry and this list hold one reference each; the
            // others are clients'.
            Arc::strong_count(&statement).saturating_sub(2).to_string(),
            (statement.parse.len() + statement.query.len()).to_string(),
            types.join(","),
        ]);
    }
    rows.done("SHOW");
}
