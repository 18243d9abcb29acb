//! The admin console's `SHOW FDS`: the sockets pgshard holds (clients,
//! idle and checked-out server connections), in PgBouncer's columns. The
//! columns PgBouncer fills for its online restart (encodings, settings,
//! password and SCRAM keys) are left empty: pgshard hands no socket over,
//! and secrets are not shown.

use bytes::BytesMut;

use super::Rows;
use crate::conn::server::ServerAddr;
use crate::state::State;

const COLUMNS: [&str; 15] = [
    "fd",
    "task",
    "user",
    "database",
    "addr",
    "port",
    "cancel",
    "link",
    "client_encoding",
    "std_strings",
    "datestyle",
    "timezone",
    "password",
    "scram_client_key",
    "scram_server_key",
];

/// One row: the first eight columns, the rest empty.
fn row(values: [String; 8]) -> Vec<String> {
    let mut row = values.to_vec();
    row.resize(COLUMNS.len(), String::new());
    row
}

pub(super) fn show_fds(state: &State, out: &mut BytesMut) {
    let mut rows = Rows::new(out, &COLUMNS);
    for client in state.clients() {
        let Some(fd) = client.fd else { continue };
        rows.row(&row([
            fd.to_string(),
            "client".to_owned(),
            client.user.clone(),
            client.database.clone(),
            client.addr.host_text(),
            client
                .addr
                .port()
                .map(|port| port.to_string())
                .unwrap_or_default(),
            client.process_id.to_string(),
            "0".to_owned(),
        ]));
    }
    for pool in state.all_pools() {
        let server = |fd: i32, addr: &ServerAddr, pid: u32| {
            row([
                fd.to_string(),
                "server".to_owned(),
                pool.target.user.clone(),
                pool.target.database.clone(),
                addr.host_text(),
                addr.port().to_string(),
                pid.to_string(),
                "0".to_owned(),
            ])
        };
        for idle in pool.idle_servers() {
            rows.row(&server(idle.fd, &idle.addr, idle.process_id));
        }
        for (_, used) in pool.checked_out() {
            rows.row(&server(used.fd, &used.addr, used.process_id));
        }
    }
    rows.done("SHOW");
}
