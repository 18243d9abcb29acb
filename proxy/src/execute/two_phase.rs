//! Two-phase commit across shards: transaction ids, the decision record
//! kept on a shard, and the local decision log (`two_phase/log.rs`);
//! `two_phase/recovery.rs` resolves what a pgshard that died left behind.
//!
//! A transaction that wrote on several shards commits like this (the
//! session's part is `session/commit.rs`):
//! 1. one writer is the *decider*; inside the client's transaction there,
//!    `INSERT INTO pgshard.decisions (txn, outcome) VALUES (<txn>, 'commit')`
//!    (uncommitted: the row is locked until step 2), while
//!    `PREPARE TRANSACTION '<gid>'` runs on every other writer, all at once;
//! 2. the decider's `COMMIT`: the commit point, the client's writes there
//!    and the decision in one transaction (so the decision costs no write
//!    of its own on the decider: concurrent commits' WAL flushes there are
//!    shared by Postgres itself). If a prepare or the record failed, the
//!    decider rolls back instead and the prepared ones are rolled back;
//! 3. `COMMIT PREPARED` on every prepared shard, then the client's COMMIT
//!    is answered. With a local log (`two_phase_commit_wal_dir`), its
//!    `commit` record is written meanwhile (the decider's committed row
//!    is already the durable decision: the log need not come first), then
//!    a `done` record.
//!
//! Each of the three steps waits for a WAL flush on a shard (PREPARE's,
//! the decider's COMMIT's, COMMIT PREPARED's, which Postgres always
//! flushes, whatever `synchronous_commit` says): one more than a
//! one-phase COMMIT on each of two shards in turn.
//!
//! Recovery needs no local state (Citus's model): a prepared transaction's
//! gid names its transaction and its decider, and any pgshard resolves it
//! by `INSERT ... (txn, 'abort') ON CONFLICT DO NOTHING` on the decider,
//! then reading the row: the insert waits while the decider's transaction
//! is in flight (its uncommitted row holds the key), so it can never race
//! a commit; a decider that committed left `commit`, one that died left
//! nothing and gets `abort`. Either way every shard ends the same.

pub mod log;
pub mod recovery;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::conn::settings::quote_literal;

/// The schema and table holding decisions on each shard.
pub const DECISIONS: &str = "pgshard.decisions";

/// Makes [`DECISIONS`] where it is missing, and grants writing it to
/// `roles` (the cluster's server logins: the decider's record is written
/// by the client's own login, inside its transaction) where the login
/// running it may (the schema's or the table's owner, or a superuser);
/// with `check_login`, fails with 42501 and what to grant when the login
/// running it may not write the table.
///
/// `CREATE SCHEMA IF NOT EXISTS` and `CREATE TABLE IF NOT EXISTS` are not
/// safe against a concurrent twin (the loser fails with 23505 on
/// `pg_namespace` or `pg_type`), and pgshard makes its schema from several
/// places at once (this table, its recovery, shard moves' tables): every
/// such string starts by taking the transaction-scoped advisory lock
/// [`SCHEMA_LOCK`] (held until the string's implicit transaction ends).
/// Both also check privileges before existence (a login without CREATE
/// on the database fails even when the schema is there), so what exists
/// is looked up first.
pub fn create_decisions(roles: &[String], check_login: bool) -> String {
    let roles: Vec<String> = roles.iter().map(|r| quote_literal(r)).collect();
    let check = if check_login {
        own_check()
    } else {
        String::new()
    };
    format!(
        "SELECT pg_advisory_xact_lock({SCHEMA_LOCK}); \
         DO $pgshard$ DECLARE r text; BEGIN \
         IF to_regnamespace('pgshard') IS NULL THEN CREATE SCHEMA pgshard; END IF; \
         IF {TABLE_OID} IS NULL THEN CREATE TABLE pgshard.decisions (\
         txn text PRIMARY KEY, outcome text NOT NULL, \
         decided_at timestamptz NOT NULL DEFAULT now()); END IF; \
         FOREACH r IN ARRAY ARRAY[{}]::text[] LOOP \
         CONTINUE WHEN NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r); \
         IF pg_has_role((SELECT nspowner FROM pg_namespace WHERE nspname = 'pgshard'), 'USAGE') \
         THEN EXECUTE format('GRANT USAGE ON SCHEMA pgshard TO %I', r); END IF; \
         IF pg_has_role((SELECT relowner FROM pg_class WHERE oid = {TABLE_OID}), 'USAGE') \
         THEN EXECUTE format('GRANT SELECT, INSERT ON pgshard.decisions TO %I', r); END IF; \
         END LOOP; {check}END $pgshard$",
        roles.join(", ")
    )
}

/// [`DECISIONS`]'s oid, looked up without the schema's USAGE privilege.
const TABLE_OID: &str = "(SELECT c.oid FROM pg_class c JOIN pg_namespace n \
     ON n.oid = c.relnamespace WHERE n.nspname = 'pgshard' AND c.relname = 'decisions')";

/// The end of [`create_decisions`]'s block for a client's login.
fn own_check() -> String {
    format!(
        "IF NOT (has_schema_privilege('pgshard', 'USAGE') \
         AND has_table_privilege({TABLE_OID}, 'SELECT, INSERT')) THEN \
         RAISE EXCEPTION USING ERRCODE = '42501', MESSAGE = format(\
         'two-phase commit records its decisions in pgshard.decisions on each shard, which \
         role %I may not write: as the table''s owner (or a superuser) run GRANT USAGE ON \
         SCHEMA pgshard TO %I; GRANT SELECT, INSERT ON pgshard.decisions TO %I (pgshard grants \
         the server logins users.toml lists when it makes the table), or turn two_phase_commit \
         off', current_user, current_user, current_user); END IF; "
    )
}

/// The advisory lock key that serializes the creation of pgshard's schema
/// and tables on a database ("pgshard" in ASCII).
pub const SCHEMA_LOCK: i64 = 31_638_942_761_710_180;

/// Every gid pgshard prepares starts with this.
pub const GID_PREFIX: &str = "pgshard_";

/// One process's two-phase commit state.
#[derive(Debug)]
pub struct Coordinator {
    /// Random per process start: transaction ids of different instances
    /// (or of one instance before and after a restart) never collide.
    pub instance: String,
    next: AtomicU64,
    /// (database, shard, server login) where [`DECISIONS`] is known to
    /// exist and be writable by that login.
    ensured: Mutex<HashSet<(String, usize, String)>>,
    pub log: log::DecisionLog,
    /// Fault injection for crash tests: a [`Fault`] as its number, 0 none.
    fault: AtomicU8,
}

/// Where a commit stops for ever (until the process is killed), for crash
/// tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// After every other writer prepared, before the decider's COMMIT.
    Prepared = 1,
    /// After the decider's COMMIT, before the local log and COMMIT PREPARED.
    Decided = 2,
    /// After the first PREPARE of several.
    BetweenPrepares = 3,
    /// After the decider's COMMIT and the local log's record, before
    /// COMMIT PREPARED.
    Logged = 4,
}

impl Coordinator {
    pub fn new(log: log::DecisionLog) -> Coordinator {
        Coordinator {
            instance: format!("{:016x}", rand::random::<u64>()),
            next: AtomicU64::new(1),
            ensured: Mutex::new(HashSet::new()),
            log,
            fault: AtomicU8::new(0),
        }
    }

    /// A fresh transaction id: `<instance>_<sequence>`.
    pub fn next_txn(&self) -> String {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}_{seq}", self.instance)
    }

    /// Make every later commit stop at `fault` (tests only).
    pub fn inject(&self, fault: Option<Fault>) {
        self.fault
            .store(fault.map_or(0, |f| f as u8), Ordering::Relaxed);
    }

    /// Whether `fault` is injected.
    pub fn injected(&self, fault: Fault) -> bool {
        self.fault.load(Ordering::Relaxed) == fault as u8
    }

    /// A commit reached `point`: it stops there for ever if that fault is
    /// injected.
    pub async fn checkpoint(&self, point: Fault) {
        if self.injected(point) {
            tracing::warn!(?point, "two-phase commit stopped by fault injection");
            std::future::pending::<()>().await;
        }
    }

    pub fn ensured(&self, database: &str, shard: usize, login: &str) -> bool {
        let key = (database.to_owned(), shard, login.to_owned());
        crate::lock::lock(&self.ensured).contains(&key)
    }

    pub fn set_ensured(&self, database: &str, shard: usize, login: &str) {
        let key = (database.to_owned(), shard, login.to_owned());
        crate::lock::lock(&self.ensured).insert(key);
    }
}

/// The gid of transaction `txn`'s part on `shard`, decided on `decider`.
pub fn gid(txn: &str, decider: usize, shard: usize) -> String {
    format!("{GID_PREFIX}{txn}_{decider}_{shard}")
}

/// A gid pgshard made: (transaction id, decider shard, shard).
pub fn parse_gid(gid: &str) -> Option<(&str, usize, usize)> {
    let rest = gid.strip_prefix(GID_PREFIX)?;
    let mut parts = rest.rsplitn(3, '_');
    let shard = parts.next()?.parse().ok()?;
    let decider = parts.next()?.parse().ok()?;
    let txn = parts.next()?;
    let (instance, seq) = txn.split_once('_')?;
    let valid = instance.len() == 16
        && instance.bytes().all(|b| b.is_ascii_hexdigit())
        && seq.bytes().all(|b| b.is_ascii_digit());
    valid.then_some((txn, decider, shard))
}

/// The decider's record of a commit, inside the client's transaction.
pub fn record_commit(txn: &str) -> String {
    format!("INSERT INTO {DECISIONS} (txn, outcome) VALUES ('{txn}', 'commit')")
}

/// Recovery's question to a decider: records `abort` unless a decision is
/// there (waiting for a decider still deciding), then reads the decision.
pub fn ask_decision(txn: &str) -> String {
    format!(
        "INSERT INTO {DECISIONS} (txn, outcome) VALUES ('{txn}', 'abort') \
         ON CONFLICT (txn) DO NOTHING; \
         SELECT outcome FROM {DECISIONS} WHERE txn = '{txn}'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_name_their_transaction_and_decider() {
        let txn = "00ff00ff00ff00ff_42";
        let gid = gid(txn, 3, 1);
        assert_eq!(gid, "pgshard_00ff00ff00ff00ff_42_3_1");
        assert_eq!(parse_gid(&gid), Some((txn, 3, 1)));
        for other in [
            "pgshard_zz_1_0_1",
            "pgshard_00ff00ff00ff00ff_x_0_1",
            "other_00ff00ff00ff00ff_1_0_1",
            "pgshard_00ff00ff00ff00ff_1_0",
            "pgshard_00ff00ff00ff00ff_1_0_1'; DROP TABLE t; --",
        ] {
            assert_eq!(parse_gid(other), None, "{other}");
        }
    }

    #[test]
    fn transaction_ids_are_fresh() {
        let dir = std::env::temp_dir().join(format!("pgshard-2pc-{}", rand::random::<u32>()));
        let coordinator = Coordinator::new(log::DecisionLog::open(&dir, 1 << 20, true));
        let a = coordinator.next_txn();
        let b = coordinator.next_txn();
        assert_ne!(a, b);
        assert!(parse_gid(&gid(&a, 0, 1)).is_some());
        let _ = std::fs::remove_dir_all(dir);
    }
}
