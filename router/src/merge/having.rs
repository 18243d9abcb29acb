//! HAVING across shards: the shards return every group (their HAVING
//! removed), with the aggregates and group keys HAVING reads as columns
//! (hidden when not selected), and the merge keeps the merged groups the
//! predicate holds for. The predicate is what pgshard can evaluate exactly:
//! AND / OR / NOT of comparisons (`<`, `<=`, `=`, `<>`, `>=`, `>`) and
//! `IS [NOT] NULL` between columns, literals and parameters; anything else
//! is refused.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::{aggregates, Unmergeable};

/// A HAVING predicate over the shards' columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
    Not(Box<Predicate>),
    Compare {
        left: Operand,
        op: Comparison,
        right: Operand,
    },
    IsNull {
        operand: Operand,
        negated: bool,
    },
}

/// A value a HAVING comparison reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// A column of the shards' rows (plan numbering, as sort keys).
    Column(usize),
    /// A literal, as its text (`5`, `2.5`, `'abc'`).
    Literal(String),
    /// `$n`, 1-based.
    Param(u16),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
}

const REFUSED: Unmergeable = Unmergeable::Construct(
    "a HAVING condition other than comparisons of aggregates, group keys, literals and parameters",
);

/// Read `node`; `column` turns an expression into a column of the shards'
/// rows (an existing one or a new hidden one).
pub(super) fn predicate(
    node: &pb::Node,
    column: &mut dyn FnMut(&pb::Node) -> Result<usize, Unmergeable>,
) -> Result<Predicate, Unmergeable> {
    match node.node.as_ref().ok_or(REFUSED)? {
        N::BoolExpr(e) => {
            let args = e
                .args
                .iter()
                .map(|a| predicate(a, column))
                .collect::<Result<Vec<_>, _>>()?;
            match pb::BoolExprType::try_from(e.boolop) {
                Ok(pb::BoolExprType::AndExpr) => Ok(Predicate::And(args)),
                Ok(pb::BoolExprType::OrExpr) => Ok(Predicate::Or(args)),
                Ok(pb::BoolExprType::NotExpr) => match <[Predicate; 1]>::try_from(args) {
                    Ok([arg]) => Ok(Predicate::Not(Box::new(arg))),
                    Err(_) => Err(REFUSED),
                },
                _ => Err(REFUSED),
            }
        }
        N::NullTest(test) => Ok(Predicate::IsNull {
            operand: operand(test.arg.as_deref().ok_or(REFUSED)?, column)?,
            negated: test.nulltesttype == pb::NullTestType::IsNotNull as i32,
        }),
        N::AExpr(e) if e.kind == pb::AExprKind::AexprOp as i32 => {
            let op = match operator(&e.name).ok_or(REFUSED)? {
                "<" => Comparison::Lt,
                "<=" => Comparison::Le,
                "=" => Comparison::Eq,
                "<>" | "!=" => Comparison::Ne,
                ">=" => Comparison::Ge,
                ">" => Comparison::Gt,
                _ => return Err(REFUSED),
            };
            let left = operand(e.lexpr.as_deref().ok_or(REFUSED)?, column)?;
            let right = operand(e.rexpr.as_deref().ok_or(REFUSED)?, column)?;
            Ok(Predicate::Compare { left, op, right })
        }
        _ => Err(REFUSED),
    }
}

/// An operator's name (`pg_catalog.>` counts as `>`).
fn operator(name: &[pb::Node]) -> Option<&str> {
    match name.last()?.node.as_ref()? {
        N::String(s) => Some(&s.sval),
        _ => None,
    }
}

fn operand(
    node: &pb::Node,
    column: &mut dyn FnMut(&pb::Node) -> Result<usize, Unmergeable>,
) -> Result<Operand, Unmergeable> {
    match node.node.as_ref().ok_or(REFUSED)? {
        N::AConst(constant) => match &constant.val {
            None => Err(REFUSED),
            Some(pb::a_const::Val::Ival(i)) => Ok(Operand::Literal(i.ival.to_string())),
            Some(pb::a_const::Val::Fval(f)) => Ok(Operand::Literal(f.fval.clone())),
            Some(pb::a_const::Val::Sval(s)) => Ok(Operand::Literal(s.sval.clone())),
            Some(_) => Err(REFUSED),
        },
        N::ParamRef(p) => u16::try_from(p.number)
            .map(Operand::Param)
            .map_err(|_| REFUSED),
        // A constant with a cast (`'5'::int`) compares by its text.
        N::TypeCast(cast)
            if matches!(
                cast.arg.as_deref().and_then(|a| a.node.as_ref()),
                Some(N::AConst(_))
            ) =>
        {
            operand(cast.arg.as_deref().ok_or(REFUSED)?, column)
        }
        _ if aggregates::column_kind(Some(node)).is_ok() => Ok(Operand::Column(column(node)?)),
        _ => Err(REFUSED),
    }
}
