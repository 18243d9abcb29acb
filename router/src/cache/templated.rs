//! Templating an entry's summary: the literal-valued keys it reads
//! rewritten to parameters numbered after the statement's own, each tied
//! to the literal of the text it sits on ([`LiteralUse`]), and a text's
//! values of those literals read back; statements whose summary holds
//! values as text (SET, PREPARE, EXECUTE, DO, FETCH counts) are never
//! templated.

use super::literals::Literals;
use crate::summary::{
    Condition, CursorEffect, SessionEffect, StatementKind, Summary, Value, ValueSource,
};
use crate::template::{self, Literal, LiteralKind, Template};

/// A literal a templated entry reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiteralUse {
    /// Index into the text's [`Template::literals`].
    pub index: usize,
    /// A `-` precedes the number, and the parser folded it into the value.
    pub negate: bool,
}

/// The values of the literals `uses` names, in `core` as lexed to
/// `literals`.
pub(super) fn values_of(uses: &[LiteralUse], core: &str, literals: &[Literal]) -> Option<Literals> {
    let mut values = Literals::default();
    for used in uses {
        push_value(&mut values, literals.get(used.index)?, used, core);
    }
    Some(values)
}

/// Append the value of `literal` in `core`, as `used` reads it.
pub(super) fn push_value(values: &mut Literals, literal: &Literal, used: &LiteralUse, core: &str) {
    values.push(&literal.value(core), used.negate);
}

/// Rewrite the literal-valued keys of `summary` to parameters after the
/// statement's own (`template.max_param`); `None` if some value does not sit
/// on a literal of `template` or the summary holds literal values elsewhere.
/// The summary holds values as text (the pgdog settings' values, a SET's,
/// PREPARE's or EXECUTE's text span, EXECUTE's arguments): they belong to the text they were read from, so the
/// statement is never templated, and is cached (by its exact text) only
/// when it has no literal.
pub(super) fn valued(summary: &Summary) -> bool {
    summary.statements.iter().any(|stmt| {
        matches!(
            stmt.kind,
            StatementKind::SetShard(Some(_)) | StatementKind::SetShardingKey(Some(_))
        ) || matches!(
            stmt.session,
            Some(
                SessionEffect::Set { .. }
                    | SessionEffect::Prepare { .. }
                    | SessionEffect::Execute { .. }
            )
        ) || matches!(stmt.kind, StatementKind::Do(_))
    })
}

/// A FETCH or MOVE holds its count in its summary: it belongs to the text
/// it was read from, so the statement is never templated (it is cached by
/// its exact text: a client fetches with the same count over and over).
fn counted(summary: &Summary) -> bool {
    summary.statements.iter().any(|stmt| {
        matches!(
            stmt.session,
            Some(SessionEffect::Cursor(CursorEffect::Fetch { .. }))
        )
    })
}

pub(super) fn parameterize(
    summary: &mut Summary,
    core: &str,
    template: &Template,
) -> Option<(u16, Vec<LiteralUse>)> {
    if valued(summary) || counted(summary) {
        return None;
    }
    let base = u16::try_from(template.max_param).ok()?;
    // First pass: the literal each value reads, in walk order.
    let mut reads: Vec<LiteralUse> = Vec::new();
    let all_mapped = for_each_value(summary, &mut |value| {
        let used = match &value.source {
            ValueSource::Integer { value: v, location } => {
                locate(core, template, *location, |text, negate| {
                    let n: i64 = text.parse().ok()?;
                    let n = if negate { n.checked_neg()? } else { n };
                    (n == *v).then_some(())
                })
            }
            ValueSource::Text { text: t, location } => {
                locate(core, template, *location, |text, negate| {
                    let expected = if negate { t.strip_prefix('-')? } else { t };
                    (expected == text).then_some(())
                })
            }
            ValueSource::Param(_) | ValueSource::Null => return true,
        };
        match used {
            Some(used) => {
                reads.push(used);
                true
            }
            None => false,
        }
    });
    if !all_mapped {
        return None;
    }
    // Parameters follow the literals' order in the text.
    let mut uses = reads.clone();
    uses.sort_by_key(|used| (used.index, used.negate));
    uses.dedup();
    // Second pass: the same walk, rewriting.
    let mut reads = reads.into_iter();
    for_each_value(summary, &mut |value| {
        if !matches!(
            value.source,
            ValueSource::Integer { .. } | ValueSource::Text { .. }
        ) {
            return true;
        }
        let number = reads.next().and_then(|used| {
            let j = uses
                .binary_search_by_key(&(used.index, used.negate), |u| (u.index, u.negate))
                .ok()?;
            base.checked_add(1)?.checked_add(u16::try_from(j).ok()?)
        });
        match number {
            Some(number) => {
                value.source = ValueSource::Param(number);
                true
            }
            None => false,
        }
    })
    .then_some((base, uses))
}

/// The literal a value at `location` reads, if `check(value, negate)` agrees
/// with the value the parser saw.
fn locate(
    core: &str,
    template: &Template,
    location: i32,
    check: impl Fn(&str, bool) -> Option<()>,
) -> Option<LiteralUse> {
    let location = usize::try_from(location).ok()?;
    let by_start = |at: usize| {
        template
            .literals
            .binary_search_by_key(&at, |literal| literal.start)
            .ok()
    };
    let used = match by_start(location) {
        Some(index) => LiteralUse {
            index,
            negate: false,
        },
        None => {
            // `-7`: the parser puts the constant's location on the sign.
            let b = core.as_bytes();
            if b.get(location) != Some(&b'-') {
                return None;
            }
            let mut at = location + 1;
            while b.get(at).is_some_and(|&c| template::is_space(c)) {
                at += 1;
            }
            let index = by_start(at)?;
            if template.literals.get(index)?.kind != LiteralKind::Number {
                return None;
            }
            LiteralUse {
                index,
                negate: true,
            }
        }
    };
    let literal = template.literals.get(used.index)?;
    check(&literal.value(core), used.negate)?;
    Some(used)
}

/// Call `f` on every value of every call's arguments and every condition
/// (the sublinks' too) until it returns false; whether all returned true.
fn for_each_value(summary: &mut Summary, f: &mut impl FnMut(&mut Value) -> bool) -> bool {
    let mut stack: Vec<&mut Condition> = Vec::new();
    for stmt in &mut summary.statements {
        let values = stmt
            .calls
            .iter_mut()
            .flat_map(|call| call.args.iter_mut().flatten());
        for value in values {
            if !f(value) {
                return false;
            }
        }
        stack.extend(stmt.all_conditions_mut());
    }
    while let Some(condition) = stack.pop() {
        match condition {
            Condition::Eq { value, .. } | Condition::Any { value, .. } => {
                if !f(value) {
                    return false;
                }
            }
            Condition::And(children) | Condition::Or(children) => stack.extend(children.iter_mut()),
        }
    }
    true
}
