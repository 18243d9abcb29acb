//! HAVING evaluated on merged groups (the predicate is planned by
//! `router/src/merge/having.rs`): SQL's three-valued logic, comparisons by
//! the columns' types, literals and parameters read as the column's type
//! would read them.

use std::cmp::Ordering;

use router::merge::{Comparison, Operand, Predicate};

use crate::execute::merge::values::{self, Kind, ValueError};

/// A group's column values and how to read them.
pub struct GroupView<'a> {
    pub values: &'a [Option<Vec<u8>>],
    /// (kind, binary) per column.
    pub kinds: &'a [(Result<Kind, ValueError>, bool)],
    /// Bind parameters as text (`None`: NULL or absent).
    pub params: &'a [Option<String>],
}

/// `Some(true)` when the predicate holds, `None` when unknown.
pub fn holds(predicate: &Predicate, group: &GroupView<'_>) -> Result<Option<bool>, ValueError> {
    Ok(match predicate {
        Predicate::And(parts) => {
            let mut result = Some(true);
            for part in parts {
                match holds(part, group)? {
                    Some(false) => return Ok(Some(false)),
                    None => result = None,
                    Some(true) => {}
                }
            }
            result
        }
        Predicate::Or(parts) => {
            let mut result = Some(false);
            for part in parts {
                match holds(part, group)? {
                    Some(true) => return Ok(Some(true)),
                    None => result = None,
                    Some(false) => {}
                }
            }
            result
        }
        Predicate::Not(part) => holds(part, group)?.map(|b| !b),
        Predicate::IsNull { operand, negated } => {
            let null = value(operand, group)?.is_none();
            Some(null != *negated)
        }
        Predicate::Compare { left, op, right } => {
            let (Some(a), Some(b)) = (value(left, group)?, value(right, group)?) else {
                return Ok(None);
            };
            let kind = match (left, right) {
                (Operand::Column(c), _) | (_, Operand::Column(c)) => kind(*c, group)?,
                // Two constants: compared as numbers.
                _ => Kind::Numeric,
            };
            let order = values::compare_mixed(kind, a, b)?;
            Some(match op {
                Comparison::Lt => order == Ordering::Less,
                Comparison::Le => order != Ordering::Greater,
                Comparison::Eq => order == Ordering::Equal,
                Comparison::Ne => order != Ordering::Equal,
                Comparison::Ge => order != Ordering::Less,
                Comparison::Gt => order == Ordering::Greater,
            })
        }
    })
}

fn kind(column: usize, group: &GroupView<'_>) -> Result<Kind, ValueError> {
    match group.kinds.get(column) {
        Some((kind, _)) => kind.clone(),
        None => Err(ValueError::Unreadable("HAVING column")),
    }
}

/// An operand's value and whether it is in binary; `None` for NULL.
fn value<'a>(
    operand: &'a Operand,
    group: &'a GroupView<'_>,
) -> Result<Option<(&'a [u8], bool)>, ValueError> {
    Ok(match operand {
        Operand::Column(c) => {
            let binary = group.kinds.get(*c).is_some_and(|(_, b)| *b);
            group
                .values
                .get(*c)
                .and_then(|v| v.as_deref())
                .map(|v| (v, binary))
        }
        Operand::Literal(text) => Some((text.as_bytes(), false)),
        Operand::Param(n) => {
            let at = usize::from(*n).saturating_sub(1);
            group
                .params
                .get(at)
                .and_then(|p| p.as_deref())
                .map(|p| (p.as_bytes(), false))
        }
    })
}
