//! A condition rewritten with its columns mapped ([`Mapped`]): dropped,
//! kept, or repeated for each table they resolve to; iterative, as deep as
//! conditions nest.

use crate::summary::{ColumnRef, Condition};

/// What one condition column becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::extract) enum Mapped {
    /// The column as written.
    Same,
    /// No table's key: the comparison restricts nothing.
    Drop,
    /// These columns, each of which restricts (the comparison is repeated
    /// for each, AND-ed).
    Columns(Vec<ColumnRef>),
}

/// `condition` with each column mapped by `map`: a dropped one gives no
/// condition (an AND goes on without it, an OR gives none), a column that
/// becomes several repeats its comparison for each, AND-ed. Unchanged (and
/// not copied) when every column stays as written. Iterative: conditions
/// nest as deep as [`MAX_DEPTH`].
pub(super) fn rewrite(
    condition: Condition,
    map: &mut impl FnMut(&ColumnRef) -> Mapped,
) -> Option<Condition> {
    // The common shape, one comparison: no stacks.
    if let Condition::Eq { column, .. } | Condition::Any { column, .. } = &condition {
        let m = map(column);
        return map_leaf(condition, m);
    }
    let mut mapped: Vec<Mapped> = Vec::new();
    let mut changed = false;
    let mut stack: Vec<&Condition> = vec![&condition];
    // The last column mapped (a long OR or IN list names one many times).
    let mut last: Option<&ColumnRef> = None;
    while let Some(node) = stack.pop() {
        match node {
            Condition::Eq { column, .. } | Condition::Any { column, .. } => {
                let m = match (last, mapped.last()) {
                    (Some(previous), Some(m)) if previous == column => m.clone(),
                    _ => map(column),
                };
                last = Some(column);
                changed |= m != Mapped::Same;
                mapped.push(m);
            }
            Condition::And(children) | Condition::Or(children) => {
                stack.extend(children.iter().rev());
            }
        }
    }
    if !changed {
        return Some(condition);
    }
    enum Task {
        Node(Condition),
        And(usize),
        Or(usize),
    }
    let mut mapped = mapped.into_iter();
    let mut tasks = vec![Task::Node(condition)];
    let mut results: Vec<Option<Condition>> = Vec::new();
    while let Some(task) = tasks.pop() {
        match task {
            Task::Node(Condition::And(children)) => {
                tasks.push(Task::And(children.len()));
                tasks.extend(children.into_iter().rev().map(Task::Node));
            }
            Task::Node(Condition::Or(children)) => {
                tasks.push(Task::Or(children.len()));
                tasks.extend(children.into_iter().rev().map(Task::Node));
            }
            Task::Node(leaf) => {
                let m = mapped.next().unwrap_or(Mapped::Drop);
                results.push(map_leaf(leaf, m));
            }
            Task::And(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                results.push(and(children.into_iter().flatten().collect()));
            }
            Task::Or(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                let children: Option<Vec<Condition>> = children.into_iter().collect();
                results.push(children.and_then(or));
            }
        }
    }
    results.pop().flatten()
}

/// A comparison with its column mapped.
fn map_leaf(leaf: Condition, mapped: Mapped) -> Option<Condition> {
    match mapped {
        Mapped::Same => Some(leaf),
        Mapped::Drop => None,
        Mapped::Columns(columns) => {
            let with = |column: ColumnRef| match &leaf {
                Condition::Eq { value, .. } => Condition::Eq {
                    column,
                    value: value.clone(),
                },
                Condition::Any { value, .. } => Condition::Any {
                    column,
                    value: value.clone(),
                },
                other => other.clone(),
            };
            and(columns.into_iter().map(with).collect())
        }
    }
}

fn and(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 | 1 => parts.pop(),
        _ => Some(Condition::And(parts)),
    }
}

fn or(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 | 1 => parts.pop(),
        _ => Some(Condition::Or(parts)),
    }
}
