//! The route bench's cluster and statements, shared by `benches/route.rs`
//! (criterion, time) and `examples/route_loop.rs` (a loop for callgrind's
//! instruction counts, `bench/route_instructions.sh`).

use std::sync::Arc;

use router::config::Config;
use router::route::ParamValue;
use router::sharding::Sharding;

const CONFIG: &str = r#"
[[databases]]
name = "prod"
host = "127.0.0.1"
shard = 0
[[databases]]
name = "prod"
host = "127.0.0.1"
shard = 1

[[sharded_tables]]
database = "prod"
name = "pgbench_accounts"
column = "aid"
data_type = "integer"

[[sharded_tables]]
database = "prod"
column = "tenant_id"

[[sharded_tables]]
database = "prod"
column = "partition_id"

[[sharded_tables]]
database = "prod"
name_prefix = "events_p"
"#;

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";

/// (name, statement with parameters, its parameters as text)
pub fn prepared_set() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    vec![
        (
            "point_select",
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            vec!["4242"],
        ),
        (
            "pgbench_update",
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            vec!["-17", "4242"],
        ),
        (
            "join_group_order",
            "SELECT c.name, count(*) AS n, sum(o.amount) AS total FROM customers c \
             JOIN orders o ON o.customer_id = c.id AND o.tenant_id = c.tenant_id \
             WHERE c.tenant_id = $1 AND o.created_at > now() - interval '30 days' \
             GROUP BY c.name ORDER BY total DESC LIMIT 10",
            vec!["7"],
        ),
        (
            "msg_reserve",
            "UPDATE log_counters SET next_offset = next_offset + $2 \
             WHERE partition_id = $1 RETURNING next_offset - $2 AS first_offset",
            vec!["7", "100"],
        ),
        (
            "msg_read",
            "SELECT \"offset\", payload, created_at FROM events_p7 \
             WHERE \"offset\" BETWEEN $1 AND $2 ORDER BY \"offset\"",
            vec!["100", "199"],
        ),
        (
            "queue_take",
            "SELECT id, payload FROM queue WHERE partition_id = $1 ORDER BY id \
             FOR UPDATE SKIP LOCKED LIMIT 1",
            vec!["3"],
        ),
    ]
}

pub fn sharding() -> Arc<Sharding> {
    let config = match Config::from_toml(CONFIG, USERS) {
        Ok(config) => config,
        Err(err) => panic!("bench config: {err}"),
    };
    match config.clusters.get("prod") {
        Some(cluster) => Arc::clone(&cluster.sharding),
        None => panic!("bench config has no cluster prod"),
    }
}

pub fn text_params<'a>(params: &'a [&'a str]) -> Vec<ParamValue<'a>> {
    params
        .iter()
        .map(|p| ParamValue::Text(p.as_bytes()))
        .collect()
}
