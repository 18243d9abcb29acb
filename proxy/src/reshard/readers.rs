//! The placement readers' connections (`overlay.rs`, `recover.rs`): per
//! cluster, one login to each database, kept while a move has pinned the
//! cluster; each statement bounded by `connect_timeout` (a database that
//! stops answering fails the read, it does not hang every cluster's
//! reads); and the last failure of each cluster's reads as a refused
//! client may be told it: the database and its error, never its host or
//! port.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::conn::server::{ServerConn, ServerError};
use crate::session::Shared;

use super::db::{self, Db, Link};
use super::instances;
use super::plan::MoveError;

/// The readers' connections, per cluster (its first user that logs in:
/// any login may read pgshard's tables), kept while the cluster is pinned
/// (a move has recorded where its shards are).
#[derive(Default)]
pub struct Readers {
    clusters: HashMap<String, Reader>,
}

#[derive(Default)]
struct Reader {
    link: Option<Link>,
    conns: Vec<Option<Db>>,
    /// Some database has `pgshard.shards`.
    pinned: bool,
    /// When to look at an unpinned cluster again.
    next: Option<Instant>,
    /// The moves acknowledged, and what newer marks wait for.
    acks: instances::Acks,
    /// The last failed statement: its database and error, for clients.
    missed: Option<String>,
}

/// Rows as the readers get them.
type Rows = Vec<Vec<Option<String>>>;

impl Readers {
    /// Whether `cluster` is due a read: pinned, or not looked at lately.
    pub(super) fn due(&self, cluster: &str) -> bool {
        self.clusters
            .get(cluster)
            .is_none_or(|r| r.pinned || r.next.is_none_or(|n| Instant::now() >= n))
    }

    /// Whether a move has recorded `cluster`'s placement.
    pub fn pinned(&self, cluster: &str) -> bool {
        self.clusters.get(cluster).is_some_and(|r| r.pinned)
    }

    /// After a read of `cluster`: keep its connections when pinned, else
    /// close them until the next look, `every` from now.
    pub(super) fn looked(&mut self, cluster: &str, pinned: bool, every: Duration) {
        let reader = self.clusters.entry(cluster.to_owned()).or_default();
        reader.pinned = pinned;
        if !pinned {
            reader.conns.clear();
            reader.next = Some(Instant::now() + every);
        }
    }

    /// The moves `cluster`'s reads acknowledged, and what newer marks
    /// wait for.
    pub(super) fn acks(&mut self, cluster: &str) -> &mut instances::Acks {
        &mut self.clusters.entry(cluster.to_owned()).or_default().acks
    }

    /// Why `cluster`'s last failed statement failed, as a refused client
    /// may be told (`None` when the failure was not a statement's).
    pub(super) fn missed(&mut self, cluster: &str) -> Option<String> {
        self.clusters.get_mut(cluster).and_then(|r| r.missed.take())
    }

    /// `sql`'s rows from database `index` of `cluster` (the connection
    /// dropped when it fails; the failure kept for [`Readers::missed`]).
    pub async fn rows(
        &mut self,
        shared: &Shared,
        (cluster, index): (&str, usize),
        sql: &str,
    ) -> Result<Rows, MoveError> {
        let rows = self.query(shared, (cluster, index), sql).await;
        rows.map_err(|(error, told)| {
            if let Some(reader) = self.clusters.get_mut(cluster) {
                if let Some(slot) = reader.conns.get_mut(index) {
                    *slot = None;
                }
                reader.missed = Some(format!("database {index}: {told}"));
            }
            error
        })
    }

    /// `sql` on database `index` of `cluster`, connecting first if need
    /// be; an error for the log, and what a client may be told of it.
    async fn query(
        &mut self,
        shared: &Shared,
        (cluster, index): (&str, usize),
        sql: &str,
    ) -> Result<Rows, (MoveError, String)> {
        let databases = shared
            .config()
            .clusters
            .get(cluster)
            .map_or(0, |c| c.shards.len());
        let reader = self.clusters.entry(cluster.to_owned()).or_default();
        if reader
            .link
            .as_ref()
            .is_none_or(|l| l.targets.len() != databases)
        {
            reader.link = Link::all(shared, cluster).into_iter().next();
            reader.conns.clear();
        }
        reader.conns.resize_with(databases, || None);
        let (Some(link), Some(slot)) = (&reader.link, reader.conns.get_mut(index)) else {
            let error = MoveError::Check(format!("database {index} of {cluster} has no login"));
            let told = "pgshard has no login to it".to_owned();
            return Err((error, told));
        };
        let timeout = link.timeout;
        let conn = match slot {
            Some(conn) => conn,
            None => {
                let target = link.target(index).map_err(|e| (e, "no login".to_owned()))?;
                let conn = ServerConn::connect(target, timeout, 0).await.map_err(|e| {
                    (
                        db::server(index, "connect", e.to_string()),
                        told(&e, timeout),
                    )
                })?;
                slot.insert(Db { conn, index })
            }
        };
        let what = "read pgshard's tables";
        match tokio::time::timeout(timeout, conn.rows(what, sql)).await {
            Ok(Ok(rows)) => Ok(rows),
            // A statement's error names no host: the server's words, or
            // the connection's end.
            Ok(Err(error)) => {
                let told = match &error {
                    MoveError::Server { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                Err((error, told))
            }
            Err(_) => {
                let told = format!(
                    "no answer within {} ms (connect_timeout)",
                    timeout.as_millis()
                );
                Err((db::server(index, what, told.clone()), told))
            }
        }
    }
}

/// A failed login as a client may be told it: which failure, without the
/// host or port.
fn told(error: &ServerError, timeout: Duration) -> String {
    match error {
        ServerError::Connect(_, io) => format!("cannot connect: {io}"),
        ServerError::ConnectTimeout(_) => format!(
            "no connection within {} ms (connect_timeout)",
            timeout.as_millis()
        ),
        // Postgres's own words (which user, which setting).
        ServerError::Refused { message, .. } => format!("it refused the login: {message}"),
        ServerError::NoPassword(_) | ServerError::UnsupportedAuth(_) | ServerError::Auth(_) => {
            "pgshard cannot log in to it".to_owned()
        }
        ServerError::Io(_) | ServerError::Closed | ServerError::Protocol(_) => {
            "the connection to it failed".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_logins_are_told_without_their_address() {
        let timeout = Duration::from_millis(1500);
        let refused = ServerError::Connect(
            "10.1.2.3:5432".into(),
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        );
        let told = |e: &ServerError| super::told(e, timeout);
        assert_eq!(told(&refused), "cannot connect: connection refused");
        let late = ServerError::ConnectTimeout("10.1.2.3:5432".into());
        assert_eq!(
            told(&late),
            "no connection within 1500 ms (connect_timeout)"
        );
        let login = ServerError::Refused {
            code: "28P01".into(),
            message: "password authentication failed for user \"app\"".into(),
        };
        assert_eq!(
            told(&login),
            "it refused the login: password authentication failed for user \"app\""
        );
        for error in [refused, late, login, ServerError::Closed] {
            assert!(!told(&error).contains("10.1.2.3"), "{error}");
        }
    }
}
