//! The admin console's `SHOW DATABASES`, `SHOW USERS` and `SHOW LISTS`, in
//! PgBouncer's columns and order (then `shard` for databases, as `SHOW
//! POOLS` has, and `database` for users, whose pools are per cluster).
//! Limits pgshard does not have read 0 (none).

use bytes::BytesMut;

use super::Rows;
use crate::pool::roles::ShardRoles;
use crate::state::State;

/// One row per shard database of every cluster: its primary (for a shard
/// of `auto` servers, the one that is the primary now, else the first).
pub(super) fn show_databases(state: &State, out: &mut BytesMut) {
    let config = state.config();
    let general = &config.general;
    let paused = state.gate.paused.borrow().clone();
    let pools = state.all_pools();
    let mut rows = Rows::new(
        out,
        &[
            "name",
            "host",
            "port",
            "database",
            "force_user",
            "pool_size",
            "min_pool_size",
            "reserve_pool",
            "server_lifetime",
            "pool_mode",
            "load_balance_hosts",
            "max_connections",
            "current_connections",
            "max_client_connections",
            "current_client_connections",
            "paused",
            "disabled",
            "shard",
        ],
    );
    let clients = state.clients();
    let roles = state.all_roles();
    for (name, cluster) in &config.clusters {
        for (shard, database) in cluster.shards.iter().enumerate() {
            let database = primary_now(&roles, cluster, shard).unwrap_or(database);
            let connections: usize = pools
                .iter()
                .filter(|p| p.cluster == *name && p.shard == shard)
                .map(|p| p.servers())
                .sum();
            rows.row(&[
                name.clone(),
                database.host.clone(),
                database.port.to_string(),
                database
                    .database_name
                    .clone()
                    .unwrap_or_else(|| name.clone()),
                database.user.clone().unwrap_or_default(),
                database
                    .pool_size
                    .unwrap_or(general.default_pool_size)
                    .to_string(),
                database
                    .min_pool_size
                    .unwrap_or(general.min_pool_size)
                    .to_string(),
                "0".into(),
                (general.server_lifetime_ms / 1000).to_string(),
                database
                    .pooler_mode
                    .unwrap_or(general.pooler_mode)
                    .as_str()
                    .to_owned(),
                String::new(),
                "0".into(),
                connections.to_string(),
                "0".into(),
                clients
                    .iter()
                    .filter(|c| c.database == *name)
                    .count()
                    .to_string(),
                u8::from(paused.holds(name)).to_string(),
                "0".into(),
                shard.to_string(),
            ]);
        }
    }
    rows.done("SHOW");
}

/// The entry of `cluster`'s `shard` that is its primary now, when the
/// shard's roles are found at run time and it is not the first entry.
fn primary_now<'a>(
    roles: &[std::sync::Arc<ShardRoles>],
    cluster: &'a router::config::Cluster,
    shard: usize,
) -> Option<&'a router::config::Database> {
    let roles = roles
        .iter()
        .find(|r| r.cluster == cluster.name && r.shard == shard)?;
    let replica = roles.primary()?.checked_sub(1)?;
    cluster.replicas.get(shard)?.get(replica)
}

/// One row per configured user (a user of several clusters has a row for
/// each), with its resolved pool size and mode.
pub(super) fn show_users(state: &State, out: &mut BytesMut) {
    let config = state.config();
    let clients = state.clients();
    let mut rows = Rows::new(
        out,
        &[
            "name",
            "pool_size",
            "reserve_pool_size",
            "pool_mode",
            "max_user_connections",
            "current_connections",
            "max_user_client_connections",
            "current_client_connections",
            "database",
        ],
    );
    for user in &config.users {
        let pools = state.pools(&user.database, &user.name).unwrap_or_default();
        let (pool_size, mode) = match pools.first() {
            Some(pool) => (
                pool.first().settings.pool_size,
                pool.first().settings.pooler_mode,
            ),
            None => (
                user.pool_size.unwrap_or(config.general.default_pool_size),
                user.pooler_mode.unwrap_or(config.general.pooler_mode),
            ),
        };
        let servers: usize = pools
            .iter()
            .flat_map(|p| p.all())
            .map(|p| p.servers())
            .sum();
        let connected = clients
            .iter()
            .filter(|c| c.user == user.name && c.database == user.database)
            .count();
        rows.row(&[
            user.name.clone(),
            pool_size.to_string(),
            "0".into(),
            mode.as_str().to_owned(),
            "0".into(),
            servers.to_string(),
            "0".into(),
            connected.to_string(),
            user.database.clone(),
        ]);
    }
    rows.done("SHOW");
}

/// The sizes of pgshard's lists, as PgBouncer names them (no DNS cache:
/// those rows are 0).
pub(super) fn show_lists(state: &State, out: &mut BytesMut) {
    let config = state.config();
    let pools = state.all_pools();
    let databases: usize = config.clusters.values().map(|c| c.shards.len()).sum();
    let used_servers: usize = pools.iter().map(|p| p.active()).sum();
    let free_servers: usize = pools.iter().map(|p| p.idle_count()).sum();
    let (split_written, split_reused) = state.metrics.split_parts();
    let mut rows = Rows::new(out, &["list", "items"]);
    for (list, items) in [
        ("databases", databases as u64),
        ("users", config.users.len() as u64),
        ("pools", pools.len() as u64),
        ("free_clients", 0),
        ("used_clients", state.client_count() as u64),
        ("login_clients", 0),
        ("free_servers", free_servers as u64),
        ("used_servers", used_servers as u64),
        ("dns_names", 0),
        ("dns_zones", 0),
        ("dns_queries", 0),
        ("dns_pending", 0),
        // pgshard's own: the statement registry, and prepared split
        // INSERTs' parts (`session/statements/split_parts.rs`).
        ("prepared_statements", state.statements.len() as u64),
        ("registered_statements", state.statements.registered()),
        ("split_part_statements_written", split_written),
        ("split_part_statements_reused", split_reused),
    ] {
        rows.row(&[list.to_owned(), items.to_string()]);
    }
    rows.done("SHOW");
}
