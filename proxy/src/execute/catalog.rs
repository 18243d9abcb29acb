//! Reading what stands behind names, for routing, through a server
//! connection: views, functions, triggers and sequences
//! (`router::catalog`, one query: `catalog/rows.rs`), and which unlisted
//! tables have no sharding key column (`router::sharding::KeylessTables`).
//! The task that keeps every cluster's read current is the top layer's
//! `schema.rs`; a session reads its own transaction's this way.

mod rows;

use std::sync::Arc;

use router::catalog::Catalog;
use router::sharding::{KeylessTables, Sharding};

use crate::conn::server::ServerConn;
use rows as catalog_rows;

/// What one cluster's catalog says.
pub struct Read {
    /// `None` when the cluster has no column-only entries.
    pub keyless: Option<KeylessTables>,
    pub catalog: Catalog,
}

/// `sharding` as the catalog `conn` sees says it is: inside a transaction,
/// with the schema changes the transaction made (a session reads its own
/// this way until they commit). `None` when it cannot be read.
pub async fn sharding_on(conn: &mut ServerConn, sharding: &Sharding) -> Option<Sharding> {
    let read = read_on(conn, sharding).await.ok()?;
    let mut sharding = sharding.clone();
    if read.keyless.is_some() {
        sharding.keyless = read.keyless.map(Arc::new);
    }
    sharding.catalog = Some(Arc::new(read.catalog));
    Some(sharding)
}

/// Why a read failed: what was read, and the server's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {what}: {message} ({code})")]
pub struct Failure {
    pub what: &'static str,
    pub code: String,
    pub message: String,
}

/// What `conn` shows of the cluster's catalog.
pub async fn read_on(conn: &mut ServerConn, sharding: &Sharding) -> Result<Read, Failure> {
    let keyless = if sharding.unlisted_by_columns {
        Some(read_keyless(conn, &sharding.key_columns()).await?)
    } else {
        None
    };
    let what = "the catalog (views, functions, triggers, sequences)";
    let rows = rows(conn, catalog_rows::QUERY, what).await?;
    let rows = rows.iter().filter_map(|values| catalog_rows::row(values));
    let catalog = Catalog::from_rows_reusing(rows, sharding.catalog.as_deref());
    Ok(Read { keyless, catalog })
}

/// Run `sql` on `conn`; its rows.
async fn rows(
    conn: &mut ServerConn,
    sql: &str,
    what: &'static str,
) -> Result<Vec<Vec<Option<String>>>, Failure> {
    let failure = |code: &str, message: String| Failure {
        what,
        code: code.to_owned(),
        message,
    };
    let answer = conn
        .query(sql)
        .await
        .map_err(|_| failure("08006", "connection lost".to_owned()))?;
    match answer.error {
        Some((code, message)) => Err(failure(&code, message)),
        None => Ok(answer.rows),
    }
}

/// The tables that have none of `columns`.
async fn read_keyless(conn: &mut ServerConn, columns: &[&str]) -> Result<KeylessTables, Failure> {
    let list = columns
        .iter()
        .map(|c| format!("'{}'", c.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT n.nspname, c.relname, EXISTS (SELECT 1 FROM pg_attribute a \
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
         AND a.attname IN ({list})) \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') \
         AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
         AND n.nspname NOT LIKE 'pg_toast%'"
    );
    let rows = rows(conn, &sql, "which tables have a sharding key column").await?;
    let mut keyless = KeylessTables::default();
    for row in rows {
        let (Some(Some(schema)), Some(Some(name)), Some(Some(keyed))) =
            (row.first(), row.get(1), row.get(2))
        else {
            continue;
        };
        if keyed == "t" {
            keyless.keyed_names.insert(name.clone());
        } else {
            keyless.tables.insert((schema.clone(), name.clone()));
        }
    }
    Ok(keyless)
}
