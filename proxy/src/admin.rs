//! The admin console (database `admin` by default): PgBouncer's SHOW
//! commands with its column names where they overlap (POOLS, CLIENTS,
//! SERVERS, STATS, CONFIG, QUERY_CACHE, VERSION; DATABASES, USERS and LISTS
//! in `admin/lists.rs`), and RELOAD, PAUSE, RESUME, SHUTDOWN.

mod lists;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tracing::{info, warn};

use crate::errors::ClientError;
use crate::protocol::backend::sqlstate;
use crate::protocol::frame::{decode_frontend_frame, SMALL_MESSAGE_LIMIT};
use crate::protocol::messages;
use crate::session::params::leading_words;
use crate::state::{ClientInfo, State, CLIENT_ACTIVE, CLIENT_WAITING};

/// Serve admin commands until the client leaves.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut client: S,
    mut buf: BytesMut,
    state: Arc<State>,
    info: Arc<ClientInfo>,
) {
    let mut out = BytesMut::with_capacity(4096);
    messages::authentication(&mut out, 0, &[]);
    for (name, value) in [
        ("server_version", env!("CARGO_PKG_VERSION")),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("standard_conforming_strings", "on"),
        ("integer_datetimes", "on"),
        ("application_name", "pgshard admin"),
    ] {
        messages::parameter_status(&mut out, name, value);
    }
    messages::backend_key_data(&mut out, info.process_id, info.secret);
    messages::ready_for_query(&mut out, b'I');
    loop {
        if !out.is_empty() {
            if client.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        let frame = match decode_frontend_frame(&mut buf, 1 << 20) {
            Ok(Some(frame)) => frame,
            Ok(None) => match client.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            },
            Err(e) => {
                ClientError::new(sqlstate::PROTOCOL_VIOLATION, e.to_string())
                    .encode_fatal(&mut out);
                let _ = client.write_all(&out).await;
                return;
            }
        };
        match frame.tag {
            b'Q' => {
                let sql =
                    String::from_utf8_lossy(frame.body.strip_suffix(&[0]).unwrap_or(&frame.body));
                let mut any = false;
                for command in sql.split(';').map(str::trim).filter(|c| !c.is_empty()) {
                    any = true;
                    if let Err(error) = execute(command, &state, &mut out).await {
                        error.encode(&mut out);
                        break;
                    }
                }
                if !any {
                    messages::empty_query_response(&mut out);
                }
                messages::ready_for_query(&mut out, b'I');
            }
            b'X' => return,
            b'S' => messages::ready_for_query(&mut out, b'I'),
            _ if frame.body.len() > SMALL_MESSAGE_LIMIT => return,
            _ => ClientError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "the admin console accepts simple queries only",
            )
            .encode(&mut out),
        }
    }
}

/// A result set being built.
struct Rows<'a> {
    out: &'a mut BytesMut,
    count: usize,
}

impl<'a> Rows<'a> {
    fn new(out: &'a mut BytesMut, columns: &[&str]) -> Rows<'a> {
        messages::row_description(out, columns);
        Rows { out, count: 0 }
    }

    fn row(&mut self, values: &[String]) {
        let values: Vec<Option<&str>> = values.iter().map(|v| Some(v.as_str())).collect();
        messages::data_row(self.out, &values);
        self.count += 1;
    }

    fn done(self, command: &str) {
        messages::command_complete(self.out, command);
    }
}

/// Run one admin command, appending its reply.
async fn execute(command: &str, state: &Arc<State>, out: &mut BytesMut) -> Result<(), ClientError> {
    let [verb, what] = leading_words::<2>(command);
    let verb = verb.to_ascii_uppercase();
    let what = what.to_ascii_uppercase();
    match (verb.as_str(), what.as_str()) {
        ("SHOW", "POOLS") => show_pools(state, out),
        ("SHOW", "CLIENTS") => show_clients(state, out),
        ("SHOW", "SERVERS") => show_servers(state, out),
        ("SHOW", "STATS") => show_stats(state, out),
        ("SHOW", "CONFIG") => show_config(state, out),
        ("SHOW", "QUERY_CACHE") => show_query_cache(state, out),
        ("SHOW", "DATABASES") => lists::show_databases(state, out),
        ("SHOW", "USERS") => lists::show_users(state, out),
        ("SHOW", "LISTS") => lists::show_lists(state, out),
        ("SHOW", "VERSION") => {
            let mut rows = Rows::new(out, &["version"]);
            rows.row(&[format!("pgshard {}", env!("CARGO_PKG_VERSION"))]);
            rows.done("SHOW");
        }
        ("RELOAD", "") => {
            reload(state)
                .map_err(|message| ClientError::new(sqlstate::CONFIG_FILE_ERROR, message))?;
            messages::command_complete(out, "RELOAD");
        }
        ("PAUSE", "") => {
            state.paused.send_replace(true);
            // Like PgBouncer: return once every server connection is back.
            let deadline = Instant::now() + state.config().general.shutdown_timeout();
            while state.all_pools().iter().any(|p| p.active() > 0) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            info!("paused");
            messages::command_complete(out, "PAUSE");
        }
        ("RESUME", "") => {
            state.paused.send_replace(false);
            info!("resumed");
            messages::command_complete(out, "RESUME");
        }
        // Session settings drivers send at login (pgjdbc: `SET
        // extra_float_digits = 2` to servers it takes for old ones) mean
        // nothing here: accepted, as no-ops, so such drivers can connect.
        ("SET", _) => messages::command_complete(out, "SET"),
        ("RESET", _) => messages::command_complete(out, "RESET"),
        ("SHUTDOWN", "") => {
            info!("SHUTDOWN from the admin console");
            state.shutdown.send_replace(true);
            messages::command_complete(out, "SHUTDOWN");
        }
        _ => {
            return Err(ClientError::new(
                sqlstate::SYNTAX_ERROR,
                format!("unsupported admin command: {command}"),
            ))
        }
    }
    Ok(())
}

/// Re-read the config files and apply them; the old config stays on error.
pub fn reload(state: &State) -> Result<(), String> {
    let Some((pgdog, users)) = &state.config_paths else {
        return Err("no config files to reload (config was given in memory)".into());
    };
    match crate::config_files::load(pgdog, users) {
        Ok(config) => {
            state.apply_config(config);
            info!("configuration reloaded");
            Ok(())
        }
        Err(err) => {
            warn!(%err, "reload failed; keeping the running configuration");
            Err(format!("reload failed: {err}"))
        }
    }
}

fn show_pools(state: &State, out: &mut BytesMut) {
    let columns = [
        "database",
        "user",
        "cl_active",
        "cl_waiting",
        "sv_active",
        "sv_idle",
        "sv_used",
        "sv_tested",
        "sv_login",
        "maxwait",
        "maxwait_us",
        "pool_mode",
        "shard",
        "pool_size",
    ];
    let mut rows = Rows::new(out, &columns);
    for pool in state.all_pools() {
        let max_wait = pool.stats.max_wait_us.load(Ordering::Relaxed);
        rows.row(&[
            pool.cluster.clone(),
            pool.user.clone(),
            pool.stats
                .active_clients
                .load(Ordering::Relaxed)
                .to_string(),
            pool.stats.waiting.load(Ordering::Relaxed).to_string(),
            pool.active().to_string(),
            pool.idle_count().to_string(),
            "0".into(),
            "0".into(),
            "0".into(),
            (max_wait / 1_000_000).to_string(),
            (max_wait % 1_000_000).to_string(),
            pool.settings.pooler_mode.as_str().to_owned(),
            pool.shard.to_string(),
            pool.settings.pool_size.to_string(),
        ]);
    }
    rows.done("SHOW");
}

fn unix_time(t: SystemTime) -> String {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs().to_string())
        .unwrap_or_default()
}

fn show_clients(state: &State, out: &mut BytesMut) {
    let columns = [
        "type",
        "user",
        "database",
        "state",
        "addr",
        "port",
        "connect_time",
        "application_name",
        "id",
    ];
    let mut rows = Rows::new(out, &columns);
    for client in state.clients() {
        let client_state = match client.state.load(Ordering::Relaxed) {
            CLIENT_ACTIVE => "active",
            CLIENT_WAITING => "waiting",
            _ => "idle",
        };
        rows.row(&[
            "C".into(),
            client.user.clone(),
            client.database.clone(),
            client_state.into(),
            client.addr.map(|a| a.ip().to_string()).unwrap_or_default(),
            client
                .addr
                .map(|a| a.port().to_string())
                .unwrap_or_default(),
            unix_time(client.connected_at),
            client.application_name.clone(),
            client.process_id.to_string(),
        ]);
    }
    rows.done("SHOW");
}

fn show_servers(state: &State, out: &mut BytesMut) {
    let columns = [
        "type",
        "user",
        "database",
        "state",
        "addr",
        "port",
        "connect_time",
        "request_time",
        "remote_pid",
        "shard",
        "id",
    ];
    let mut rows = Rows::new(out, &columns);
    let now = Instant::now();
    let at = |t: Instant| unix_time(SystemTime::now() - now.duration_since(t));
    for pool in state.all_pools() {
        for (id, pid, created, last_used, addr) in pool.idle_servers() {
            rows.row(&[
                "S".into(),
                pool.target.user.clone(),
                pool.target.database.clone(),
                "idle".into(),
                addr.ip().to_string(),
                addr.port().to_string(),
                at(created),
                at(last_used),
                pid.to_string(),
                pool.shard.to_string(),
                id.to_string(),
            ]);
        }
    }
    for client in state.clients() {
        let Ok(target) = client.cancel.try_lock() else {
            continue;
        };
        for target in target.iter() {
            rows.row(&[
                "S".into(),
                client.user.clone(),
                client.database.clone(),
                "active".into(),
                target.addr.ip().to_string(),
                target.addr.port().to_string(),
                String::new(),
                String::new(),
                target.process_id.to_string(),
                String::new(),
                String::new(),
            ]);
        }
    }
    rows.done("SHOW");
}

/// The AST cache: size, limits and hit/miss/eviction counts.
fn show_query_cache(state: &State, out: &mut BytesMut) {
    let stats = state.cache.stats();
    let lookups = stats.hits + stats.misses;
    let mut rows = Rows::new(
        out,
        &[
            "entries",
            "bytes",
            "max_entries",
            "max_bytes",
            "hits",
            "misses",
            "evictions",
            "hit_ratio",
            "engine",
        ],
    );
    rows.row(&[
        stats.entries.to_string(),
        stats.bytes.to_string(),
        stats.max_entries.to_string(),
        stats.max_bytes.to_string(),
        stats.hits.to_string(),
        stats.misses.to_string(),
        stats.evictions.to_string(),
        format!("{:.3}", stats.hits as f64 / lookups.max(1) as f64),
        match state.config().general.query_parser_engine {
            router::sharding::ParserEngine::ZeroCopy => "zero_copy".to_owned(),
            router::sharding::ParserEngine::PgQueryProtobuf => "pg_query_protobuf".to_owned(),
        },
    ]);
    rows.done("SHOW");
}

fn show_stats(state: &State, out: &mut BytesMut) {
    let columns = [
        "database",
        "user",
        "shard",
        "total_xact_count",
        "total_query_count",
        "total_received",
        "total_sent",
        "total_xact_time",
        "total_wait_time",
        "avg_xact_time",
        "avg_wait_time",
        "total_errors",
        // The AST cache is shared by every pool: its counters are
        // process-wide, the same on each row (per entry: SHOW QUERY_CACHE).
        "query_cache_hits",
        "query_cache_misses",
        "query_cache_evictions",
    ];
    let cache = state.cache.stats();
    let mut rows = Rows::new(out, &columns);
    for pool in state.all_pools() {
        let s = &pool.stats;
        let xacts = s.xact_count.load(Ordering::Relaxed);
        let xact_time = s.xact_time_us.load(Ordering::Relaxed);
        let wait_time = s.wait_time_us.load(Ordering::Relaxed);
        rows.row(&[
            pool.cluster.clone(),
            pool.user.clone(),
            pool.shard.to_string(),
            xacts.to_string(),
            s.query_count.load(Ordering::Relaxed).to_string(),
            s.bytes_received.load(Ordering::Relaxed).to_string(),
            s.bytes_sent.load(Ordering::Relaxed).to_string(),
            xact_time.to_string(),
            wait_time.to_string(),
            (xact_time / xacts.max(1)).to_string(),
            (wait_time / xacts.max(1)).to_string(),
            s.errors.load(Ordering::Relaxed).to_string(),
            cache.hits.to_string(),
            cache.misses.to_string(),
            cache.evictions.to_string(),
        ]);
    }
    rows.done("SHOW");
}

fn show_config(state: &State, out: &mut BytesMut) {
    let config = state.config();
    let g = &config.general;
    let opt = |d: Option<Duration>| d.map_or(0, |d| d.as_millis()).to_string();
    let settings: Vec<(&str, String)> = vec![
        ("host", g.host.clone()),
        ("port", g.port.to_string()),
        ("workers", g.workers.to_string()),
        ("default_pool_size", g.default_pool_size.to_string()),
        ("min_pool_size", g.min_pool_size.to_string()),
        ("pooler_mode", g.pooler_mode.as_str().to_owned()),
        ("auth_type", g.auth_type.as_str().to_owned()),
        (
            "connect_timeout",
            g.connect_timeout().as_millis().to_string(),
        ),
        (
            "checkout_timeout",
            g.checkout_timeout().as_millis().to_string(),
        ),
        ("idle_timeout", opt(g.idle_timeout())),
        ("query_timeout", opt(g.query_timeout())),
        ("server_lifetime", opt(g.server_lifetime())),
        (
            "shutdown_timeout",
            g.shutdown_timeout().as_millis().to_string(),
        ),
        ("max_client_conn", g.max_client_conn.to_string()),
        ("max_message_size", g.max_message_size.to_string()),
        (
            "prepared_statements_limit",
            g.prepared_statements_limit.to_string(),
        ),
        ("tls", g.tls().is_some().to_string()),
    ];
    let mut rows = Rows::new(out, &["key", "value", "changeable"]);
    for (key, value) in settings {
        let changeable = !matches!(key, "host" | "port" | "workers" | "tls");
        rows.row(&[
            key.to_owned(),
            value,
            if changeable { "yes" } else { "no" }.into(),
        ]);
    }
    rows.done("SHOW");
}
