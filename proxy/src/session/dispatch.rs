//! What routing decides for a statement, as the code that carries it out
//! sees it: where a simple query goes (`Dispatch`: answered here, sent to a
//! target, sent rewritten), the shards a statement goes to (`Shards`), and
//! whether a write on several shards runs atomically there.

use router::summary::{StatementKind, Summary};

use super::transaction::Target;

/// The shards a statement goes to: inline, so routing to one or a few
/// allocates nothing.
pub type Shards = smallvec::SmallVec<[usize; 4]>;

/// What became of a simple query.
pub enum Dispatch {
    /// Answered or refused locally, or already executed (fan-out).
    Done,
    Send(Target),
    /// Send this text instead of the client's (an INSERT given the
    /// table's column list).
    Rewritten(Target, String),
}

/// A statement outside a transaction that writes on several shards runs
/// inside a transaction on each (so that one shard's error rolls every
/// shard back, and two-phase commit applies when on), unless Postgres
/// refuses it inside a transaction block (VACUUM, `CREATE INDEX
/// CONCURRENTLY`, `CREATE DATABASE` ...) or it may end transactions itself
/// (CALL, DO: kind Other).
pub fn atomic_across_shards(
    summary: &Summary,
    sql: &str,
    sharding: &router::sharding::Sharding,
) -> bool {
    let [only] = summary.statements.as_slice() else {
        return false;
    };
    let writes = match only.kind {
        StatementKind::Insert
        | StatementKind::Update
        | StatementKind::Delete
        | StatementKind::Merge
        | StatementKind::Ddl => true,
        // What it calls (or its DO block) writes omnisharded tables.
        StatementKind::Select | StatementKind::Do(_) => {
            only.write && only.kind == StatementKind::Select
                || router::route::writes_everywhere(only, sharding)
        }
        _ => false,
    };
    let words = super::session_effects::leading_words::<6>(sql);
    let outside_only = words.iter().any(|w| {
        [
            "CONCURRENTLY",
            "DATABASE",
            "TABLESPACE",
            "SYSTEM",
            "SUBSCRIPTION",
        ]
        .iter()
        .any(|k| w.eq_ignore_ascii_case(k))
    });
    writes && !outside_only
}
