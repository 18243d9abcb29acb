//! What a carried subquery is replaced by in the write (rules 2 and 6 of
//! [`super`]): a typed constant for a scalar, EXISTS or IN/ANY/ALL
//! subquery, the constant SELECT of its rows ([`super::rows`]) for the
//! rest.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::{literal, rows, Answer, Carry, Kind, NotCarried, Value};

/// Put `answer`, the result of `carry`, in the place of the subquery at
/// `node`.
pub(super) fn replace(
    node: &mut pb::Node,
    carry: &Carry,
    answer: &Answer,
) -> Result<(), NotCarried> {
    match (carry.kind, answer) {
        (Kind::Rows, Answer::Rows(rows)) => {
            let select = Box::new(rows::constant(rows, &carry.subquery)?);
            match node.node.as_mut() {
                Some(NodeEnum::SubLink(sublink)) => sublink.subselect = Some(select),
                Some(NodeEnum::RangeSubselect(from)) => from.subquery = Some(select),
                Some(NodeEnum::CommonTableExpr(cte)) => cte.ctequery = Some(select),
                _ => return Err(NotCarried::Mismatch),
            }
            Ok(())
        }
        (Kind::Rows, Answer::Value(_)) | (_, Answer::Rows(_)) => Err(NotCarried::Mismatch),
        (_, Answer::Value(value)) => {
            *node = replacement(node, carry, value)?;
            Ok(())
        }
    }
}

/// What replaces the subquery `node` given its result (rule 2).
fn replacement(node: &mut pb::Node, carry: &Carry, value: &Value) -> Result<pb::Node, NotCarried> {
    let Some(NodeEnum::SubLink(sublink)) = node.node.as_mut() else {
        return Err(NotCarried::Mismatch);
    };
    let record = value.type_name == "record" || value.type_name == "record[]";
    if record {
        return Err(NotCarried::Record(carry.subquery.clone()));
    }
    let typed = |text: &str| constant(text, &value.type_name);
    match carry.kind {
        Kind::Rows => Err(NotCarried::Mismatch),
        Kind::Exists => typed(if value.text.as_deref() == Some("true") {
            "true"
        } else {
            "false"
        }),
        Kind::Scalar => match &value.text {
            Some(text) => typed(&literal(text)),
            None => typed("NULL"),
        },
        Kind::Array => {
            if value.dimensions.as_deref().is_some_and(|d| d != "1") {
                return Err(NotCarried::ArrayOfArrays(carry.subquery.clone()));
            }
            let array = typed(&literal(value.text.as_deref().unwrap_or("{}")))?;
            let kind = match pb::SubLinkType::try_from(sublink.sub_link_type) {
                Ok(pb::SubLinkType::AllSublink) => pb::AExprKind::AexprOpAll,
                _ => pb::AExprKind::AexprOpAny,
            };
            let name = match sublink.oper_name.is_empty() {
                true => vec![string("=")],
                false => std::mem::take(&mut sublink.oper_name),
            };
            Ok(pb::Node {
                node: Some(NodeEnum::AExpr(Box::new(pb::AExpr {
                    kind: kind as i32,
                    name,
                    lexpr: sublink.testexpr.take(),
                    rexpr: Some(Box::new(array)),
                    rexpr_list_start: -1,
                    rexpr_list_end: -1,
                    location: sublink.location,
                }))),
            })
        }
    }
}

/// A String node.
fn string(value: &str) -> pb::Node {
    pb::Node {
        node: Some(NodeEnum::String(pb::String {
            sval: value.to_owned(),
        })),
    }
}

/// The expression `<value>::<type_name>`, parsed.
fn constant(value: &str, type_name: &str) -> Result<pb::Node, NotCarried> {
    let sql = format!("SELECT ({value})::{type_name}");
    let tree = parser_ffi::parse_protobuf(&sql).map_err(NotCarried::Parse)?;
    let target = tree
        .stmts
        .into_iter()
        .next()
        .and_then(|raw| match raw.stmt?.node? {
            NodeEnum::SelectStmt(select) => select.target_list.into_iter().next(),
            _ => None,
        })
        .and_then(|target| match target.node? {
            NodeEnum::ResTarget(target) => target.val,
            _ => None,
        });
    // A type name is Postgres's own (`format_type`); anything but one cast
    // is not taken.
    match target.map(|t| *t) {
        Some(
            cast @ pb::Node {
                node: Some(NodeEnum::TypeCast(_)),
            },
        ) => Ok(cast),
        _ => Err(NotCarried::Mismatch),
    }
}
