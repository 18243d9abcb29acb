//! The OpenMetrics endpoint: at each scrape, what pgshard counted as it ran
//! (`metrics.rs`) and what the pools, the clients and the AST cache report
//! now, exposed at `GET /metrics` on `openmetrics_port`.
//!
//! The exposition is `prometheus-client`'s; the HTTP side is a few lines of
//! our own over tokio (one route, one method, `Connection: close`), which
//! costs less than an HTTP framework's dependency tree.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::{text, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, info};

use crate::metrics::PoolLabels;
use crate::pool::roles::RoleNow;
use crate::state::State;

/// The exposition text of every metric now.
pub fn render(state: &State) -> String {
    let config = state.config();
    let mut registry = match &config.general.openmetrics_namespace {
        Some(namespace) => Registry::with_prefix(namespace.as_str()),
        None => Registry::default(),
    };
    register_pools(&mut registry, state);
    register_roles(&mut registry, state);
    register_cache(&mut registry, state);
    register_moves(&mut registry, state);
    let clients = Gauge::<i64>::default();
    clients.set(gauge(state.client_count()));
    registry.register("clients", "Client connections", clients);
    state.metrics.register(&mut registry);
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = text::encode(&mut out, &registry);
    out
}

fn gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn register_pools(registry: &mut Registry, state: &State) {
    let gauges = [
        ("pool_clients_active", "Clients holding a server"),
        ("pool_clients_waiting", "Clients waiting for a server"),
        ("pool_servers_active", "Server connections checked out"),
        ("pool_servers_idle", "Server connections idle in the pool"),
        (
            "pool_banned",
            "1 while the database is banned from serving reads",
        ),
    ]
    .map(|(name, help)| (name, help, Family::<PoolLabels, Gauge>::default()));
    let counters = [
        ("pool_transactions", "Transactions run"),
        ("pool_queries", "Queries run"),
        ("pool_received_bytes", "Bytes received from clients"),
        ("pool_sent_bytes", "Bytes sent to clients"),
        (
            "pool_bans",
            "Times the database was banned from serving reads",
        ),
    ]
    .map(|(name, help)| (name, help, Family::<PoolLabels, Counter>::default()));
    for pool in state.all_pools() {
        let labels = pool.labels();
        let stats = &pool.stats;
        let now = [
            pool.active_clients(),
            stats.waiting.load(Ordering::Relaxed),
            pool.active(),
            pool.idle_count(),
            usize::from(pool.is_banned()),
        ];
        for ((_, _, family), value) in gauges.iter().zip(now) {
            family.get_or_create(&labels).set(gauge(value));
        }
        let totals = [
            &stats.xact_count,
            &stats.query_count,
            &stats.bytes_received,
            &stats.bytes_sent,
            &stats.bans,
        ];
        for ((_, _, family), total) in counters.iter().zip(totals) {
            family
                .get_or_create(&labels)
                .inc_by(total.load(Ordering::Relaxed));
        }
    }
    for (name, help, family) in gauges {
        registry.register(name, help, family);
    }
    for (name, help, family) in counters {
        registry.register(name, help, family);
    }
}

/// The shard moves of this process: how many are in each step, rows
/// copied, the lag of those catching up, and how the finished ended.
fn register_moves(registry: &mut Registry, state: &State) {
    #[derive(Debug, Clone, PartialEq, Eq, Hash, prometheus_client::encoding::EncodeLabelSet)]
    struct Step {
        step: &'static str,
    }
    let moves = state.moves.list();
    let steps = Family::<Step, Gauge>::default();
    for phase in crate::reshard::state::Phase::ALL {
        let n = moves.iter().filter(|m| m.phase == phase).count();
        steps
            .get_or_create(&Step {
                step: phase.as_str(),
            })
            .set(gauge(n));
    }
    registry.register("moves", "Shard moves of this process, by step", steps);
    let rows = Counter::<u64>::default();
    rows.inc_by(moves.iter().map(|m| m.rows_copied).sum());
    registry.register("move_rows_copied", "Rows copied by shard moves", rows);
    let lag = Gauge::<i64>::default();
    let bytes: u64 = moves.iter().filter_map(|m| m.lag_bytes).sum();
    lag.set(i64::try_from(bytes).unwrap_or(i64::MAX));
    registry.register(
        "move_lag_bytes",
        "Replication lag of the moves catching up",
        lag,
    );
    let taken = Gauge::<i64>::default();
    taken.set(gauge(moves.iter().filter(|m| m.taken_over).count()));
    registry.register(
        "moves_taken_over",
        "Moves a stopped pgshard left, finished or rolled back by this one",
        taken,
    );
    let placed = Gauge::<i64>::default();
    placed.set(gauge(moved_shards(state)));
    registry.register(
        "placement_moved_shards",
        "Logical shards served where a move put them, not where the config file says",
        placed,
    );
}

/// How many logical shards of the running config are placed by a move.
fn moved_shards(state: &State) -> usize {
    let config = state.config();
    let overlay = state.clusters.overlay();
    let mut n = 0;
    for (name, cluster) in &config.clusters {
        for group in cluster.sharding.groups() {
            let Some(known) = overlay.get(name, group.id) else {
                continue;
            };
            n += known
                .iter()
                .zip(group.placement)
                .filter(|(k, d)| {
                    k.as_ref()
                        .is_some_and(|p| p.database == **d && p.by_move().is_some())
                })
                .count();
        }
    }
    n
}

/// A server of a shard of `auto` servers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServerLabels {
    cluster: String,
    shard: String,
    host: String,
    role: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ShardLabels {
    cluster: String,
    shard: String,
}

/// The roles of `auto` servers: a gauge per (server, role), 1 for the role
/// it has now and 0 for the others; the failovers per shard.
fn register_roles(registry: &mut Registry, state: &State) {
    let roles = Family::<ServerLabels, Gauge>::default();
    let failovers = Family::<ShardLabels, Counter>::default();
    for shard in state.all_roles() {
        let (cluster, number) = (shard.cluster.clone(), shard.shard.to_string());
        for server in shard.report() {
            for role in RoleNow::ALL {
                let labels = ServerLabels {
                    cluster: cluster.clone(),
                    shard: number.clone(),
                    host: format!("{}:{}", server.host, server.port),
                    role: role.as_str(),
                };
                roles
                    .get_or_create(&labels)
                    .set(i64::from(role == server.found));
            }
        }
        let labels = ShardLabels {
            cluster,
            shard: number,
        };
        failovers.get_or_create(&labels).inc_by(shard.failovers());
    }
    registry.register(
        "server_role",
        "1 for the role a server of a shard of role = \"auto\" servers has now (primary, replica, unknown, down, fenced), 0 for the others",
        roles,
    );
    registry.register(
        "failovers",
        "Times a shard's primary moved to another server (role = \"auto\")",
        failovers,
    );
}

fn register_cache(registry: &mut Registry, state: &State) {
    let stats = state.cache.stats();
    for (name, help, total) in [
        (
            "query_cache_hits",
            "AST cache lookups served without parsing",
            stats.hits,
        ),
        (
            "query_cache_misses",
            "AST cache lookups that parsed",
            stats.misses,
        ),
        (
            "query_cache_evictions",
            "AST cache entries evicted",
            stats.evictions,
        ),
    ] {
        let counter = Counter::<u64>::default();
        counter.inc_by(total);
        registry.register(name, help, counter);
    }
    for (name, help, value) in [
        ("query_cache_entries", "AST cache entries", stats.entries),
        (
            "query_cache_bytes",
            "AST cache size, estimated bytes",
            stats.bytes,
        ),
    ] {
        let now = Gauge::<i64>::default();
        now.set(gauge(value));
        registry.register(name, help, now);
    }
}

/// Serve `GET /metrics` on `listener` until `state` shuts down.
pub async fn serve(listener: TcpListener, state: Arc<State>) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "metrics at http://{addr}/metrics");
    }
    let mut shutdown = state.gate.shutdown.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => if let Ok((stream, _)) = accepted {
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    if let Err(err) = answer(stream, &state).await {
                        debug!(%err, "metrics request failed");
                    }
                });
            },
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// Most bytes of a request head read; scrapers send a few hundred.
const MAX_REQUEST_HEAD: usize = 8 * 1024;

async fn answer(mut stream: TcpStream, state: &State) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_HEAD {
            if stream.read_buf(&mut head).await? == 0 {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let request_line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = request_line.split(|&b| b == b' ');
    let (method, path) = (parts.next(), parts.next());
    let path = path.map(|p| p.split(|&b| b == b'?').next().unwrap_or_default());
    let (status, content_type, body) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            render(state),
        ),
        (Some(b"GET"), _) => ("404 Not Found", "text/plain", "try /metrics\n".to_owned()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_owned(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
