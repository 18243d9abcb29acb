//! A level's WHERE / ON / VALUES read down its boolean skeleton into key
//! conditions (zero-copy view): `k = v`, `k IN (...)`, `k = ANY(...)`, row
//! comparisons, AND / OR / NOT, capped in size; and the column equalities
//! AND-ed into an expression.

use parser_ffi::protobuf::{AExprKind, BoolExprType};
use parser_ffi::view::{self, List, Node, NodeRef};

use super::values_view::{column_of, value_of, Column};
use crate::extract::{ExtractError, MAX_DEPTH};
use crate::summary::{ColumnRef, Condition};

/// How many Eq, Any, And and Or nodes `conditions` hold (without recursion).
pub(super) fn count_nodes(conditions: &[Condition]) -> usize {
    let mut count = 0;
    let mut stack: Vec<&[Condition]> = vec![conditions];
    while let Some(list) = stack.pop() {
        count += list.len();
        for condition in list {
            if let Condition::And(children) | Condition::Or(children) = condition {
                stack.push(children);
            }
        }
    }
    count
}

/// One VALUES row: the `Eq`s of the plain columns given a value.
pub(super) fn row_condition(table: &str, columns: List<'_>, row: List<'_>) -> Option<Condition> {
    let mut all = Gathered::default();
    for (column, value) in columns.iter().zip(row.iter()) {
        let Some(NodeRef::ResTarget(target)) = column.map(Node::kind) else {
            continue;
        };
        // `(arr[1])`, `(composite.field)` assign a part of the column.
        if !target.indirection().is_empty() {
            continue;
        }
        let (Some(name), Some(value)) = (target.name(), value.and_then(value_of)) else {
            continue;
        };
        let eq = Condition::Eq {
            column: ColumnRef {
                table: Some(table.to_owned()),
                column: name.to_owned(),
            },
            value: value.to_value(),
        };
        all.push(eq, columns.len());
    }
    all.into_and()
}

/// The condition a level's expression gives, if any.
///
/// The common shapes, a comparison or one AND/OR of comparisons, are read
/// directly; nested AND/OR/NOT below the top go to [`nested_condition`].
pub(super) fn condition<'a>(
    expr: Node<'a>,
    booleans: &mut Booleans<'a>,
) -> Result<Option<Condition>, ExtractError> {
    match expr.kind() {
        NodeRef::BoolExpr(bool_expr) => {
            let args = bool_expr.args();
            let mut frame = Frame::new(bool_op(bool_expr), args.len());
            for arg in args.iter().flatten() {
                let found = match arg.kind() {
                    NodeRef::BoolExpr(_) => nested_condition(arg, 2, booleans)?,
                    NodeRef::AExpr(a_expr) => comparison(a_expr),
                    _ => None,
                };
                frame.fold(found);
            }
            Ok(frame.finish())
        }
        NodeRef::AExpr(a_expr) => Ok(comparison(a_expr)),
        _ => Ok(None),
    }
}

fn bool_op(bool_expr: view::BoolExpr<'_>) -> BoolOp {
    match bool_expr.boolop() {
        BoolExprType::AndExpr => BoolOp::And,
        BoolExprType::OrExpr => BoolOp::Or,
        _ => BoolOp::Not,
    }
}

/// The condition of an expression at `depth` (a level's expression is at
/// depth 1, a boolean node's arguments one deeper).
///
/// AND/OR/NOT are evaluated with explicit stacks (one [`Frame`] per open
/// boolean node, its arguments waiting on `pending`) rather than recursion, so
/// no input can exhaust the thread's stack. Meeting any node deeper than
/// [`MAX_DEPTH`] is [`ExtractError::TooDeep`]. Every argument is looked at,
/// even after an OR branch without a condition, so whether a tree is too deep
/// does not depend on what its other branches hold.
fn nested_condition<'a>(
    expr: Node<'a>,
    depth: usize,
    booleans: &mut Booleans<'a>,
) -> Result<Option<Condition>, ExtractError> {
    let Booleans { frames, pending } = booleans;
    frames.clear();
    pending.clear();
    let mut next = expr;
    loop {
        if depth + frames.len() > MAX_DEPTH {
            return Err(ExtractError::TooDeep);
        }
        let mut result = match next.kind() {
            NodeRef::BoolExpr(bool_expr) => {
                let args = bool_expr.args();
                let before = pending.len();
                args.push_nodes(pending);
                let mut frame = Frame::new(bool_op(bool_expr), args.len());
                frame.remaining = pending.len() - before;
                frames.push(frame);
                None
            }
            NodeRef::AExpr(a_expr) => Some(comparison(a_expr)),
            _ => Some(None),
        };
        // Fold the result into the open frames, closing those that are done,
        // until one has another argument to look at.
        loop {
            let Some(frame) = frames.last_mut() else {
                return Ok(result.flatten());
            };
            if let Some(found) = result.take() {
                frame.fold(found);
            }
            if frame.remaining > 0 {
                frame.remaining -= 1;
                if let Some(arg) = pending.pop() {
                    next = arg;
                    break;
                }
            }
            let done = frames.pop().and_then(Frame::finish);
            result = Some(done);
        }
    }
}

/// The stacks [`nested_condition`] works on, reused from one expression to the next.
#[derive(Default)]
pub(super) struct Booleans<'a> {
    frames: Vec<Frame>,
    /// Arguments of the open frames not looked at yet (each frame's on top of
    /// its parent's).
    pending: Vec<Node<'a>>,
}

/// An AND, OR or NOT being evaluated.
struct Frame {
    op: BoolOp,
    /// Number of arguments (to size the result).
    capacity: usize,
    /// Arguments still on the pending stack.
    remaining: usize,
    gathered: Gathered,
    /// For OR: every branch so far gave a condition.
    keyed: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BoolOp {
    And,
    Or,
    Not,
}

impl Frame {
    fn new(op: BoolOp, capacity: usize) -> Frame {
        Frame {
            op,
            capacity,
            remaining: 0,
            gathered: Gathered::Empty,
            keyed: true,
        }
    }

    /// Take in the condition (or none) of one argument.
    fn fold(&mut self, found: Option<Condition>) {
        match (self.op, found) {
            (BoolOp::And, Some(found)) => self.gathered.push(found, self.capacity),
            (BoolOp::Or, Some(found)) if self.keyed => self.gathered.push(found, self.capacity),
            (BoolOp::Or, None) => {
                self.keyed = false;
                self.gathered = Gathered::Empty;
            }
            _ => {}
        }
    }

    fn finish(self) -> Option<Condition> {
        match self.op {
            BoolOp::And => self.gathered.into_and(),
            BoolOp::Or => self.gathered.into_or(),
            // NOT restricts nothing we can use.
            BoolOp::Not => None,
        }
    }
}

/// `col = v`, `v = col`, `col IN (...)`, `col = ANY(...)`.
fn comparison(a_expr: view::AExpr<'_>) -> Option<Condition> {
    let kind = a_expr.kind();
    if !matches!(
        kind,
        AExprKind::AexprOp | AExprKind::AexprOpAny | AExprKind::AexprIn
    ) || !is_equals(a_expr.name())
    {
        return None;
    }
    let left = a_expr.lexpr()?;
    let right = a_expr.rexpr()?;
    match kind {
        AExprKind::AexprOp => {
            let (column, value) = match column_of(left) {
                Some(column) => (column, value_of(right)?),
                None => (column_of(right)?, value_of(left)?),
            };
            Some(Condition::Eq {
                column: column.to_column(),
                value: value.to_value(),
            })
        }
        AExprKind::AexprOpAny => {
            let column = column_of(left)?;
            match right.kind() {
                NodeRef::AArrayExpr(array) => one_of(column, array.elements()),
                _ => Some(Condition::Any {
                    column: column.to_column(),
                    value: value_of(right)?.to_value(),
                }),
            }
        }
        // AexprIn (`NOT IN` is named `<>`, refused above).
        _ => match right.kind() {
            NodeRef::List(values) => one_of(column_of(left)?, values),
            _ => None,
        },
    }
}

/// `col IN (v1, ...)`: one `Eq`, or an `Or` of them; every element a value.
fn one_of(column: Column<'_>, values: List<'_>) -> Option<Condition> {
    // Check every element before copying anything out.
    if !values
        .iter()
        .all(|value| value.and_then(value_of).is_some())
    {
        return None;
    }
    let mut any = Gathered::default();
    for value in values.iter().flatten().filter_map(value_of) {
        let eq = Condition::Eq {
            column: column.to_column(),
            value: value.to_value(),
        };
        any.push(eq, values.len());
    }
    any.into_or()
}

/// Whether an operator name's last part is `=`.
fn is_equals(name: List<'_>) -> bool {
    let count = name.len();
    match count.checked_sub(1).and_then(|last| name.get(last)) {
        Some(last) => matches!(last.kind(), NodeRef::String(op) if op.sval() == Some("=")),
        None => false,
    }
}

/// Conditions gathered for an AND or an OR; allocates only for a second one.
#[derive(Default)]
pub(super) enum Gathered {
    #[default]
    Empty,
    One(Condition),
    Many(Vec<Condition>),
}

impl Gathered {
    /// Add one; `capacity` is how many are expected in all.
    pub(super) fn push(&mut self, condition: Condition, capacity: usize) {
        match self {
            Gathered::Many(all) => all.push(condition),
            Gathered::Empty => *self = Gathered::One(condition),
            Gathered::One(_) => {
                if let Gathered::One(first) = std::mem::take(self) {
                    let mut all = Vec::with_capacity(capacity.max(2));
                    all.push(first);
                    all.push(condition);
                    *self = Gathered::Many(all);
                }
            }
        }
    }

    /// AND rule: conditions without a use were never added; one stays as is.
    pub(super) fn into_and(self) -> Option<Condition> {
        match self {
            Gathered::Empty => None,
            Gathered::One(condition) => Some(condition),
            Gathered::Many(all) => Some(Condition::And(all)),
        }
    }

    /// OR rule (the caller drops the whole OR if a branch gave nothing).
    pub(super) fn into_or(self) -> Option<Condition> {
        match self {
            Gathered::Empty => None,
            Gathered::One(condition) => Some(condition),
            Gathered::Many(all) => Some(Condition::Or(all)),
        }
    }
}

/// Call `found` on each `a = b` between two columns met through ANDs only.
pub(super) fn equalities(expr: Node<'_>, mut found: impl FnMut(ColumnRef, ColumnRef)) {
    let mut exprs = vec![expr];
    while let Some(expr) = exprs.pop() {
        match expr.kind() {
            NodeRef::BoolExpr(bool_expr) if bool_expr.boolop() == BoolExprType::AndExpr => {
                exprs.extend(bool_expr.args().iter().flatten());
            }
            NodeRef::AExpr(a_expr)
                if a_expr.kind() == AExprKind::AexprOp && is_equals(a_expr.name()) =>
            {
                let left = a_expr.lexpr().and_then(column_of);
                let right = a_expr.rexpr().and_then(column_of);
                if let (Some(left), Some(right)) = (left, right) {
                    found(left.to_column(), right.to_column());
                }
            }
            _ => {}
        }
    }
}
