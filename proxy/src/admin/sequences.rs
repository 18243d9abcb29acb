//! `SETUP SHARDED SEQUENCES [<db> [<table>]]`: the sequences of a sharded
//! cluster's sharded tables (serial and identity columns: owned sequences)
//! stepped so that no two shards ever give the same value: on shard `i` of
//! `n`, `INCREMENT BY n START WITH i+1`, restarted at the first such value
//! above every value any shard's sequence gave or its column holds. All
//! shards change in one transaction each, with the tables locked against
//! writes (SHARE ROW EXCLUSIVE) while the values are read and the sequences
//! altered, and commit together; run again it changes nothing. One row per
//! shard and sequence says what was done.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::BytesMut;
use router::sharding::Sharding;

use super::Rows;
use crate::conn::server::ServerConn;
use crate::errors::ClientError;
use crate::pool::roles::RoleNow;
use crate::protocol::sqlstate;
use crate::state::State;

/// One owned sequence on one shard.
#[derive(Debug, Clone)]
struct Found {
    table: String,
    increment: i64,
    start: i64,
    /// The largest value it gave or its column holds (0 when none).
    high: i64,
}

fn error(code: &'static str, message: String) -> ClientError {
    ClientError::new(code, message)
}

/// Whether `name` is a plain table name (letters, digits, `_`, `$`, `.`).
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
}

/// The value shard `shard` of `n` restarts at: the first above `high` that
/// is `shard + 1` modulo `n`.
pub fn restart_at(high: i64, shard: usize, n: usize) -> i64 {
    let (n, residue) = (n as i64, (shard as i64 + 1) % n as i64);
    let from = high + 1;
    from + (residue - from % n + n) % n
}

/// Run the command for `database` (or every sharded cluster) and `table`.
pub async fn setup(state: &Arc<State>, args: &str, out: &mut BytesMut) -> Result<(), ClientError> {
    let mut words = args.split_whitespace();
    let (database, table) = (words.next(), words.next());
    if words.next().is_some() || table.is_some_and(|t| !plain(t)) {
        return Err(error(
            sqlstate::SYNTAX_ERROR,
            "usage: SETUP SHARDED SEQUENCES [<db> [<table>]] (a plain table name)".to_owned(),
        ));
    }
    let config = state.config();
    let clusters: Vec<_> = config
        .clusters
        .values()
        .filter(|c| database.is_none_or(|d| c.name == d))
        .filter(|c| c.shards.len() > 1)
        .collect();
    if clusters.is_empty() {
        let what = database.unwrap_or("any database");
        return Err(error(
            sqlstate::INVALID_CATALOG_NAME,
            format!("no sharded cluster named {what}"),
        ));
    }
    let mut rows = Rows::new(
        out,
        &[
            "database",
            "shard",
            "sequence",
            "table",
            "increment",
            "restart",
            "action",
        ],
    );
    for cluster in clusters {
        let found = cluster_setup(state, &cluster.name, &cluster.sharding, table).await?;
        for row in found {
            rows.row(&row);
        }
    }
    rows.done("SETUP");
    Ok(())
}

/// One connection per shard of `cluster`, each in a transaction.
async fn connect_all(
    state: &State,
    cluster: &str,
    n: usize,
) -> Result<Vec<Box<ServerConn>>, ClientError> {
    let pools = state.all_pools();
    let mut conns = Vec::with_capacity(n);
    for shard in 0..n {
        let pool = pools
            .iter()
            .find(|p| p.cluster == cluster && p.shard == shard && p.serves() == RoleNow::Primary)
            .ok_or_else(|| {
                error(
                    sqlstate::CONNECTION_FAILURE,
                    format!("no pool for shard {shard} of {cluster}"),
                )
            })?;
        let mut conn = ServerConn::connect(&pool.target, pool.settings.connect_timeout, u64::MAX)
            .await
            .map_err(|e| {
                error(
                    sqlstate::CONNECTION_FAILURE,
                    format!("shard {shard} of {cluster}: {e}"),
                )
            })?;
        run(&mut conn, shard, "BEGIN").await?;
        conns.push(conn);
    }
    Ok(conns)
}

/// `sql` on `shard`; its rows, or its error as the command's.
async fn run(
    conn: &mut ServerConn,
    shard: usize,
    sql: &str,
) -> Result<Vec<Vec<Option<String>>>, ClientError> {
    let answer = conn
        .query(sql)
        .await
        .map_err(|e| error(sqlstate::CONNECTION_FAILURE, format!("shard {shard}: {e}")))?;
    match answer.error {
        Some((_, message)) => Err(error(
            sqlstate::INTERNAL_ERROR,
            format!("shard {shard}: {message}"),
        )),
        None => Ok(answer.rows),
    }
}

/// The owned sequences of the sharded tables (named, or having a
/// column-only entry's column), optionally of one table.
fn listing(sharding: &Sharding, table: Option<&str>) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let names: Vec<String> = sharding
        .tables
        .iter()
        .filter_map(|t| t.name.as_deref())
        .map(quote)
        .collect();
    let columns: Vec<String> = sharding
        .tables
        .iter()
        .filter(|t| t.name.is_none())
        .map(|t| quote(&t.column))
        .collect();
    let only = table.map_or(String::new(), |t| {
        let name = t.rsplit('.').next().unwrap_or(t);
        format!(" AND tbl.relname = {}", quote(name))
    });
    format!(
        "SELECT quote_ident(sn.nspname) || '.' || quote_ident(seq.relname), tbl.oid::regclass::text, \
         quote_ident(a.attname), s.seqincrement, s.seqstart, \
         coalesce((SELECT last_value FROM pg_sequences ps WHERE ps.schemaname = sn.nspname \
           AND ps.sequencename = seq.relname), 0) \
         FROM pg_class seq JOIN pg_namespace sn ON sn.oid = seq.relnamespace \
         JOIN pg_sequence s ON s.seqrelid = seq.oid \
         JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = seq.oid \
           AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') \
         JOIN pg_class tbl ON tbl.oid = d.refobjid \
         JOIN pg_attribute a ON a.attrelid = tbl.oid AND a.attnum = d.refobjsubid \
         WHERE seq.relkind = 'S' AND (tbl.relname = ANY(ARRAY[{}]::text[]) OR a.attname = ANY(ARRAY[{}]::text[])){only} \
         ORDER BY 1",
        names.join(", "),
        columns.join(", ")
    )
}

/// Each shard's owned sequences by name, with the tables locked first.
async fn read_shard(
    conn: &mut ServerConn,
    shard: usize,
    listing: &str,
) -> Result<BTreeMap<String, Found>, ClientError> {
    let first = run(conn, shard, listing).await?;
    for row in &first {
        let table = row.get(1).cloned().flatten().unwrap_or_default();
        run(
            conn,
            shard,
            &format!("LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE"),
        )
        .await?;
    }
    let mut found = BTreeMap::new();
    for row in run(conn, shard, listing).await? {
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let number = |i: usize| text(i).parse::<i64>().unwrap_or(0);
        let (table, column) = (text(1), text(2));
        let max = run(
            conn,
            shard,
            &format!("SELECT coalesce(max({column})::bigint, 0) FROM {table}"),
        )
        .await?;
        let max = max
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        found.insert(
            text(0),
            Found {
                table,
                increment: number(3),
                start: number(4),
                high: number(5).max(max),
            },
        );
    }
    Ok(found)
}

async fn cluster_setup(
    state: &State,
    cluster: &str,
    sharding: &Sharding,
    table: Option<&str>,
) -> Result<Vec<Vec<String>>, ClientError> {
    let n = sharding.databases;
    let mut conns = connect_all(state, cluster, n).await?;
    let result = step_all(&mut conns, cluster, sharding, table).await;
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    for (shard, conn) in conns.iter_mut().enumerate() {
        run(conn, shard, end).await?;
    }
    result
}

async fn step_all(
    conns: &mut [Box<ServerConn>],
    cluster: &str,
    sharding: &Sharding,
    table: Option<&str>,
) -> Result<Vec<Vec<String>>, ClientError> {
    let n = conns.len();
    let listing = listing(sharding, table);
    let mut shards = Vec::with_capacity(n);
    for (shard, conn) in conns.iter_mut().enumerate() {
        shards.push(read_shard(conn, shard, &listing).await?);
    }
    let names: std::collections::BTreeSet<&String> = shards.iter().flat_map(|s| s.keys()).collect();
    let mut rows = Vec::new();
    for name in names {
        let each: Vec<Option<&Found>> = shards.iter().map(|s| s.get(name)).collect();
        let high = each.iter().flatten().map(|f| f.high).max().unwrap_or(0);
        let stepped = each.iter().enumerate().all(|(shard, f)| {
            f.is_some_and(|f| {
                f.increment == n as i64
                    && f.start.rem_euclid(n as i64) == (shard as i64 + 1) % n as i64
            })
        });
        for (shard, found) in each.iter().enumerate() {
            let row = |table: &str, restart: String, action: &str| {
                vec![
                    cluster.to_owned(),
                    shard.to_string(),
                    name.clone(),
                    table.to_owned(),
                    n.to_string(),
                    restart,
                    action.to_owned(),
                ]
            };
            let Some(found) = found else {
                rows.push(row(
                    "",
                    String::new(),
                    "missing on this shard: create it, then run again",
                ));
                continue;
            };
            if stepped {
                rows.push(row(&found.table, String::new(), "already stepped"));
                continue;
            }
            let restart = restart_at(high, shard, n);
            let sql = format!(
                "ALTER SEQUENCE {name} INCREMENT BY {n} START WITH {} RESTART WITH {restart}",
                shard + 1
            );
            run(&mut conns[shard], shard, &sql).await?;
            rows.push(row(&found.table, restart.to_string(), "stepped"));
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_values_are_above_and_on_the_shards_residue() {
        assert_eq!(restart_at(0, 0, 2), 1);
        assert_eq!(restart_at(0, 1, 2), 2);
        assert_eq!(restart_at(100, 0, 2), 101);
        assert_eq!(restart_at(100, 1, 2), 102);
        assert_eq!(restart_at(101, 0, 3), 103);
        assert_eq!(restart_at(101, 1, 3), 104);
        assert_eq!(restart_at(101, 2, 3), 102);
        assert!(plain("public.orders") && !plain("t; DROP TABLE x") && !plain(""));
    }
}
