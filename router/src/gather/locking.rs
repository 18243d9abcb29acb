//! FOR UPDATE / FOR SHARE finished on the coordinator (rule 14 of
//! [`crate::gather`]): the statement's own locking clauses are pushed into
//! the gathers of the tables they cover, so each shard locks the rows it
//! gathers (and re-checks them against the pushed conditions when another
//! transaction changed them, as Postgres does); the finish keeps its
//! clauses (over temp tables they lock nothing, and Postgres's own
//! refusals, aggregates or an outer join's nullable side, stay its own).

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::leaves::qualifier;
use super::scope::{TableUse, Walked};
use super::NotGathered;

/// The lock a gather takes on the rows it reads: a
/// [`pb::LockClauseStrength`] and a [`pb::LockWaitPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Lock {
    pub strength: i32,
    pub wait: i32,
}

impl Lock {
    /// `FOR UPDATE [NOWAIT | SKIP LOCKED]`, as a SELECT's locking clause.
    pub(super) fn clause(self) -> pb::Node {
        pb::Node {
            node: Some(NodeEnum::LockingClause(pb::LockingClause {
                locked_rels: Vec::new(),
                strength: self.strength,
                wait_policy: self.wait,
            })),
        }
    }
}

/// The statement's own locking clauses.
fn clauses<'a>(walked: &Walked<'a>) -> impl Iterator<Item = &'a pb::LockingClause> {
    walked
        .locking
        .iter()
        .filter_map(|node| match node.node.as_ref() {
            Some(NodeEnum::LockingClause(clause)) => Some(clause),
            _ => None,
        })
}

/// Refuse locking clauses no gather can take exactly: in a cursor (read
/// ahead, it would lock more than it fetches), NOWAIT or SKIP LOCKED with
/// LIMIT or OFFSET (each shard would fail on, or skip, rows the limit may
/// not reach, so other rows would fill it), over a FROM subquery, or `OF` a
/// name that is no table of the statement's own FROM.
pub(super) fn check(walked: &Walked<'_>, cursor: bool) -> Result<(), NotGathered> {
    if walked.locking.is_empty() {
        return Ok(());
    }
    if cursor {
        return Err(NotGathered::Locking("in a cursor"));
    }
    let block = pb::LockWaitPolicy::LockWaitBlock as i32;
    if walked.limited && clauses(walked).any(|c| c.wait_policy != block) {
        return Err(NotGathered::Locking(
            "with NOWAIT or SKIP LOCKED and LIMIT or OFFSET",
        ));
    }
    let subqueries = walked
        .levels
        .get(walked.top)
        .is_some_and(|level| level.subqueries);
    for clause in clauses(walked) {
        if clause.locked_rels.is_empty() && subqueries {
            return Err(NotGathered::Locking("over a FROM subquery"));
        }
        for rel in &clause.locked_rels {
            let named = match rel.node.as_ref() {
                Some(NodeEnum::RangeVar(rel)) => walked
                    .tables
                    .iter()
                    .any(|t| t.level == walked.top && qualifier(t.range_var) == rel.relname),
                _ => false,
            };
            if !named {
                return Err(NotGathered::Locking(
                    "OF a name that is not a table of the statement's own FROM",
                ));
            }
        }
    }
    Ok(())
}

/// The lock `table`'s gather takes: the strongest strength and wait policy
/// of the clauses that cover it (Postgres combines them so), if any does.
pub(super) fn lock_of(walked: &Walked<'_>, table: &TableUse<'_>) -> Option<Lock> {
    if table.level != walked.top {
        return None;
    }
    let name = qualifier(table.range_var);
    let covers = |clause: &pb::LockingClause| {
        clause.locked_rels.is_empty()
            || clause.locked_rels.iter().any(
                |r| matches!(r.node.as_ref(), Some(NodeEnum::RangeVar(r)) if r.relname == name),
            )
    };
    clauses(walked)
        .filter(|clause| covers(clause))
        .map(|clause| Lock {
            strength: clause.strength,
            wait: clause.wait_policy,
        })
        .reduce(|a, b| Lock {
            strength: a.strength.max(b.strength),
            wait: a.wait.max(b.wait),
        })
}
