//! The mover's connections: its own logins to the cluster's databases
//! (outside the pools), as the first `[[users]]` entry (by name) whose
//! server login is a superuser on the source and the target
//! (`CREATE SUBSCRIPTION` needs one); simple queries with errors that name
//! the database and the step; and `pg_dump` of the moving tables' schema.

use std::time::Duration;

use crate::conn::server::{ServerConn, ServerTarget};
use crate::session::Shared;

use super::plan::{MoveError, Plan};

/// The logins a move uses: one per database of the cluster, all of one
/// user.
#[derive(Debug, Clone)]
pub struct Link {
    pub targets: Vec<ServerTarget>,
    pub timeout: Duration,
}

/// A connection to database `index` of the cluster.
pub struct Db {
    pub conn: Box<ServerConn>,
    pub index: usize,
}

impl Link {
    /// The logins of each `[[users]]` entry of `cluster` (by name).
    pub fn all(shared: &Shared, cluster: &str) -> Vec<Link> {
        let users = shared
            .sharded_pools()
            .into_iter()
            .find(|(name, _)| name == cluster)
            .map(|(_, users)| users)
            .unwrap_or_default();
        users
            .into_iter()
            .map(|(_, pools)| Link {
                targets: pools.iter().map(|p| p.preferred().target.clone()).collect(),
                timeout: pools.first().map_or(Duration::from_secs(5), |p| {
                    p.first().settings.connect_timeout
                }),
            })
            .collect()
    }

    /// The logins of the first user that is a superuser on both of
    /// `plan`'s databases.
    pub async fn find(shared: &Shared, plan: &Plan) -> Result<Link, MoveError> {
        Link::superuser(shared, &plan.cluster, &[plan.source, plan.target]).await
    }

    /// The logins of the first user of `cluster` that is a superuser on
    /// `databases`.
    pub async fn superuser(
        shared: &Shared,
        cluster: &str,
        databases: &[usize],
    ) -> Result<Link, MoveError> {
        for link in Link::all(shared, cluster) {
            let mut superuser = true;
            for &database in databases {
                let Ok(mut db) = link.connect(database).await else {
                    superuser = false;
                    break;
                };
                let sql = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user";
                let rows = db.rows("check the login", sql).await?;
                superuser &= rows
                    .first()
                    .and_then(|r| r.first().cloned().flatten())
                    .as_deref()
                    == Some("t");
            }
            if superuser {
                return Ok(link);
            }
        }
        Err(MoveError::NoSuperuser(cluster.to_owned()))
    }

    /// A new connection to database `index`.
    pub async fn connect(&self, index: usize) -> Result<Db, MoveError> {
        self.login(index, false).await
    }

    /// A new connection to database `index`, as a replication connection
    /// when `replication`.
    pub async fn login(&self, index: usize, replication: bool) -> Result<Db, MoveError> {
        let mut target = self.target(index)?.clone();
        target.replication = replication;
        let conn = ServerConn::connect(&target, self.timeout, 0)
            .await
            .map_err(|e| server(index, "connect", e.to_string()))?;
        Ok(Db { conn, index })
    }

    pub fn target(&self, index: usize) -> Result<&ServerTarget, MoveError> {
        self.targets
            .get(index)
            .ok_or_else(|| MoveError::Check(format!("database {index} has no login")))
    }
}

impl Db {
    /// Run `sql` (the step `what`); its rows.
    pub async fn rows(
        &mut self,
        what: &str,
        sql: &str,
    ) -> Result<Vec<Vec<Option<String>>>, MoveError> {
        let answer = self
            .conn
            .query(sql)
            .await
            .map_err(|e| server(self.index, what, e.to_string()))?;
        match answer.error {
            Some((code, message)) => Err(server(self.index, what, format!("{message} ({code})"))),
            None => Ok(answer.rows),
        }
    }

    /// Run `sql` (the step `what`) for its effect.
    pub async fn run(&mut self, what: &str, sql: &str) -> Result<(), MoveError> {
        self.rows(what, sql).await.map(drop)
    }

    /// The first column of the first row of `sql`'s answer.
    pub async fn value(&mut self, what: &str, sql: &str) -> Result<Option<String>, MoveError> {
        let rows = self.rows(what, sql).await?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten()))
    }
}

pub fn server(database: usize, what: &str, message: String) -> MoveError {
    MoveError::Server {
        database,
        what: what.to_owned(),
        message,
    }
}

/// `pg_dump --schema-only --section=<section>` of `tables` (quoted,
/// qualified names) on `target`, without psql's meta-commands: the text
/// to run on another database.
pub async fn dump(
    target: &ServerTarget,
    tables: &[String],
    section: &str,
) -> Result<String, MoveError> {
    if tables.is_empty() {
        return Ok(String::new());
    }
    let mut command = std::process::Command::new("pg_dump");
    command
        .args(["--schema-only", "--no-publications", "--no-subscriptions"])
        .arg(format!("--section={section}"))
        .args(["-h", &target.host, "-p", &target.port.to_string()])
        .args(["-U", &target.user, "-d", &target.database]);
    for table in tables {
        command.args(["-t", table]);
    }
    if let Some(password) = &target.password {
        command.env("PGPASSWORD", password);
    }
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .map_err(|e| MoveError::Dump(e.to_string()))?
        .map_err(|e| MoveError::Dump(format!("cannot run pg_dump: {e}")))?;
    if !output.status.success() {
        return Err(MoveError::Dump(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text
        .lines()
        .filter(|line| !line.starts_with('\\'))
        .collect::<Vec<_>>()
        .join("\n"))
}
