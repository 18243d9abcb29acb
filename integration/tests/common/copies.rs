//! The copies of omnisharded tables, read from each shard's database
//! directly: every table pgshard treats as held whole by every shard
//! (unlisted with the default rule, or `[[omnisharded_tables]]`) must hold
//! the same rows on each (issue 38: no omnisharded table whose copies
//! differ after the suite). Compared by row count and an order-independent
//! digest (md5 of the rows' text, sorted).

use router::route::is_copied;
use router::sharding::Sharding;
use router::summary::TableRef;

/// Tables left out on purpose: `whoami` holds its shard's number on each
/// shard (tests read it to see which shard answered), and pgshard's own
/// schema records each shard's two-phase decisions.
const DIFFERENT_BY_DESIGN: &[(&str, &str)] = &[("public", "whoami")];
const OWN_SCHEMAS: &[&str] = &["pgshard"];

/// One shard's database: its port and name.
pub type ShardDb = (u16, String);

/// The omnisharded tables of cluster `prod` (under `sharding`) whose copies
/// on `shards` differ, each with what differs; empty when they agree, or
/// when a shard cannot be read (a test that stopped one).
pub async fn differences(shards: &[ShardDb], sharding: &Sharding) -> Vec<String> {
    let mut clients = Vec::new();
    for (port, database) in shards {
        match super::connect(*port, "app", "app-pw", database).await {
            Ok(client) => clients.push(client),
            Err(_) => return Vec::new(),
        }
    }
    // Every ordinary table, partitioned parent and populated materialized
    // view outside the catalogs, on any shard.
    let mut tables = std::collections::BTreeSet::new();
    let list = "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p', 'm') AND NOT c.relispartition AND c.relpersistence <> 't' \
         AND (c.relkind <> 'm' OR c.relispopulated) \
         AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')";
    for client in &clients {
        let Ok(rows) = client.query(list, &[]).await else {
            return Vec::new();
        };
        for row in rows {
            tables.insert((row.get::<_, String>(0), row.get::<_, String>(1)));
        }
    }
    let mut different = Vec::new();
    for (schema, name) in tables {
        if OWN_SCHEMAS.contains(&schema.as_str())
            || DIFFERENT_BY_DESIGN.contains(&(schema.as_str(), name.as_str()))
        {
            continue;
        }
        let table = TableRef {
            schema: Some(schema.clone()),
            name: name.clone(),
            alias: None,
        };
        if !is_copied(&table, sharding) {
            continue;
        }
        let digest = format!(
            "SELECT count(*)::text, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) \
             FROM \"{schema}\".\"{name}\" AS t"
        );
        let mut seen: Vec<String> = Vec::new();
        for client in &clients {
            let found = match client.query_one(&digest, &[]).await {
                Ok(row) => format!(
                    "{} rows, md5 {}",
                    row.get::<_, String>(0),
                    row.get::<_, String>(1)
                ),
                Err(_) => "missing".to_owned(),
            };
            seen.push(found);
        }
        if seen.iter().any(|s| *s != seen[0]) {
            let shards: Vec<String> = seen
                .iter()
                .enumerate()
                .map(|(i, s)| format!("shard {i}: {s}"))
                .collect();
            different.push(format!("{schema}.{name} ({})", shards.join("; ")));
        }
    }
    different
}

/// [`differences`] from a synchronous context (a `Drop`), on a thread with
/// a runtime of its own.
pub fn differences_blocking(shards: Vec<ShardDb>, sharding: Sharding) -> Vec<String> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(differences(&shards, &sharding))
    })
    .join()
    .unwrap_or_default()
}

/// The shard databases and sharding model of cluster `prod` behind
/// `proxy` (`None` when it is not sharded over several databases).
pub fn prod_shards(
    proxy: &integration::TestProxy,
    servers: &[integration::PgServer],
) -> Option<(Vec<ShardDb>, Sharding)> {
    let config = proxy.state().config();
    let sharding = Sharding::clone(&config.clusters.get("prod")?.sharding);
    if sharding.databases < 2 || servers.len() < sharding.databases {
        return None;
    }
    let shards = (0..sharding.databases)
        .map(|i| (servers[i].port(), format!("shard_{i}")))
        .collect();
    Some((shards, sharding))
}

/// Fail when an omnisharded table of cluster `prod` behind `proxy` (over
/// `servers`, shard `i` in database `shard_<i>` of `servers[i]`) has copies
/// that differ.
pub async fn assert_equal(proxy: &integration::TestProxy, servers: &[integration::PgServer]) {
    let Some((shards, sharding)) = prod_shards(proxy, servers) else {
        return;
    };
    let different = differences(&shards, &sharding).await;
    assert!(
        different.is_empty(),
        "omnisharded tables whose copies differ across shards: {}",
        different.join(", ")
    );
}
