//! `SHOW REPLICATION` (PgDog's command): one row per server of every shard
//! of `role = "auto"` servers, as the monitor last found it: its role, in
//! recovery or not, its WAL position and timeline, a replica's lag behind
//! the primary in bytes of WAL, how long ago it was checked, the shard's
//! failovers, and why its last check failed.

use bytes::BytesMut;

use super::Rows;
use crate::pool::roles::{lsn_text, RoleNow};
use crate::state::State;

pub(super) fn show_replication(state: &State, out: &mut BytesMut) {
    let mut rows = Rows::new(
        out,
        &[
            "database",
            "shard",
            "addr",
            "port",
            "role",
            "pg_is_in_recovery",
            "pg_lsn",
            "timeline",
            "replica_lag_bytes",
            "checked_ms_ago",
            "failovers",
            "error",
        ],
    );
    let text = |value: Option<String>| value.unwrap_or_default();
    for shard in state.all_roles() {
        for server in shard.report() {
            let in_recovery = match server.found {
                RoleNow::Replica => "t",
                RoleNow::Primary | RoleNow::Fenced => "f",
                RoleNow::Unknown | RoleNow::Down => "",
            };
            rows.row(&[
                shard.cluster.clone(),
                shard.shard.to_string(),
                server.host.clone(),
                server.port.to_string(),
                server.found.as_str().to_owned(),
                in_recovery.to_owned(),
                text(server.lsn.map(lsn_text)),
                text(server.timeline.map(|t| t.to_string())),
                text(server.lag_bytes.map(|l| l.to_string())),
                text(server.checked_ago.map(|t| t.as_millis().to_string())),
                shard.failovers().to_string(),
                text(server.error),
            ]);
        }
    }
    rows.done("SHOW");
}
