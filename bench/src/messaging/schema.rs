//! The messaging tables, created through the endpoint under test, and how
//! pgshard shards them: `msg_counters` and `msg_consumers` by
//! `partition_id`, the table families `msg_log_p<N>`, `msg_jobs_p<N>` and
//! `msg_archive_p<N>` by `N`, all with the `postgres` hasher, so every
//! partition's tables and rows live on one shard.

use anyhow::{Context, Result};
use tokio_postgres::Client;

use super::options::Options;

pub const COUNTERS: &str = "msg_counters";
pub const CONSUMERS: &str = "msg_consumers";

/// The log table of partition `p`.
pub fn log_table(p: i64) -> String {
    format!("msg_log_p{p}")
}

/// The queue table of partition `p`.
pub fn jobs_table(p: i64) -> String {
    format!("msg_jobs_p{p}")
}

/// The archive of partition `p`'s queue.
pub fn archive_table(p: i64) -> String {
    format!("msg_archive_p{p}")
}

/// pgshard's `[[sharded_tables]]` sections for cluster `database`.
pub fn sharding_toml(database: &str) -> String {
    let mut text = String::new();
    for table in [COUNTERS, CONSUMERS] {
        text.push_str(&format!(
            "[[sharded_tables]]\ndatabase = \"{database}\"\nname = \"{table}\"\ncolumn = \"partition_id\"\n\
             data_type = \"bigint\"\nhasher = \"postgres\"\n\n"
        ));
    }
    for prefix in ["msg_log_p", "msg_jobs_p", "msg_archive_p"] {
        text.push_str(&format!(
            "[[sharded_tables]]\ndatabase = \"{database}\"\nname_prefix = \"{prefix}\"\n\
             data_type = \"bigint\"\nhasher = \"postgres\"\n\n"
        ));
    }
    text
}

async fn run(client: &Client, sql: &str) -> Result<()> {
    client
        .batch_execute(sql)
        .await
        .with_context(|| format!("setup: {sql}"))
}

/// Fresh pub/sub tables: a log table per partition, a counter row per
/// partition at 0, a consumer row per (group, partition) at 0.
pub async fn create_pubsub(client: &Client, options: &Options) -> Result<()> {
    run(
        client,
        &format!("DROP TABLE IF EXISTS {COUNTERS}, {CONSUMERS}"),
    )
    .await?;
    run(
        client,
        &format!("CREATE TABLE {COUNTERS} (partition_id bigint PRIMARY KEY, next bigint NOT NULL)"),
    )
    .await?;
    run(
        client,
        &format!(
            "CREATE TABLE {CONSUMERS} (group_id int NOT NULL, partition_id bigint NOT NULL, \
             off bigint NOT NULL, PRIMARY KEY (group_id, partition_id))"
        ),
    )
    .await?;
    let counter = format!("INSERT INTO {COUNTERS} (partition_id, next) VALUES ($1, 0)");
    let consumer =
        format!("INSERT INTO {CONSUMERS} (group_id, partition_id, off) VALUES ($1, $2, 0)");
    for p in options.partition_ids() {
        let log = log_table(p);
        run(client, &format!("DROP TABLE IF EXISTS {log}")).await?;
        run(
            client,
            &format!(
                "CREATE TABLE {log} (off bigint PRIMARY KEY, payload bytea NOT NULL, \
                 created_at timestamptz NOT NULL DEFAULT now())"
            ),
        )
        .await?;
        client
            .execute(&counter, &[&p])
            .await
            .with_context(|| format!("setup: counter row of partition {p}"))?;
        for group in 0..i32::try_from(options.groups)? {
            client
                .execute(&consumer, &[&group, &p])
                .await
                .with_context(|| format!("setup: consumer row of group {group}, partition {p}"))?;
        }
    }
    Ok(())
}

/// Fresh queue tables: a queue and an archive per partition.
pub async fn create_queue(client: &Client, options: &Options) -> Result<()> {
    for p in options.partition_ids() {
        let (jobs, archive) = (jobs_table(p), archive_table(p));
        run(client, &format!("DROP TABLE IF EXISTS {jobs}")).await?;
        run(client, &format!("DROP TABLE IF EXISTS {archive}")).await?;
        run(
            client,
            &format!(
                "CREATE TABLE {jobs} (id bigserial PRIMARY KEY, payload bytea NOT NULL, \
                 created_at timestamptz NOT NULL DEFAULT now())"
            ),
        )
        .await?;
        run(
            client,
            &format!(
                "CREATE TABLE {archive} (id bigint PRIMARY KEY, payload bytea NOT NULL, \
                 archived_at timestamptz NOT NULL DEFAULT now())"
            ),
        )
        .await?;
    }
    Ok(())
}
