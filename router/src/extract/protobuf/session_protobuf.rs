//! What a statement does to session state (protobuf structs): SET / RESET /
//! DISCARD / DEALLOCATE / PREPARE / cursor statements read into a
//! [`SessionEffect`] (see the rules in [`crate::extract`]).

use parser_ffi::protobuf::{self as pb, a_const::Val, node::Node as NodeEnum};

use super::values_protobuf::type_name;
use super::{inner, non_empty};
use crate::summary::{
    Argument, CursorEffect, CursorOptions, FetchDirection, SessionEffect, ValueSource,
};

/// What a top-level statement does to tracked session state (see the
/// rules in [`super`]); `location` and `len` are its RawStmt's.
pub(super) fn session_effect(root: &NodeEnum, location: i32, len: i32) -> Option<SessionEffect> {
    use pb::VariableSetKind as V;
    match root {
        NodeEnum::VariableSetStmt(set) => {
            let kind = set.kind();
            let transaction =
                kind == V::VarSetMulti && set.name.eq_ignore_ascii_case("TRANSACTION");
            if set.is_local || transaction {
                return Some(SessionEffect::TransactionScoped("SET"));
            }
            let name = || Some(set.name.to_ascii_lowercase()).filter(|n| !n.is_empty());
            Some(match kind {
                V::VarResetAll => SessionEffect::ResetAll,
                V::VarSetValue | V::VarSetCurrent => {
                    match (name(), usize::try_from(location), usize::try_from(len)) {
                        (Some(name), Ok(start), Ok(len)) => SessionEffect::Set { name, start, len },
                        _ => SessionEffect::Untracked,
                    }
                }
                V::VarSetDefault | V::VarReset => match name() {
                    Some(name) => SessionEffect::Reset { name },
                    None => SessionEffect::Untracked,
                },
                _ => SessionEffect::Untracked,
            })
        }
        NodeEnum::ConstraintsSetStmt(_) => {
            Some(SessionEffect::TransactionScoped("SET CONSTRAINTS"))
        }
        NodeEnum::DeallocateStmt(stmt) if stmt.isall => Some(SessionEffect::Deallocate(None)),
        NodeEnum::DeallocateStmt(stmt) if !stmt.name.is_empty() => {
            Some(SessionEffect::Deallocate(Some(stmt.name.clone())))
        }
        NodeEnum::DiscardStmt(discard) if discard.target() == pb::DiscardMode::DiscardAll => {
            Some(SessionEffect::DiscardAll)
        }
        NodeEnum::PrepareStmt(prepare) if !prepare.name.is_empty() => {
            Some(SessionEffect::Prepare {
                name: prepare.name.clone(),
                types: prepare
                    .argtypes
                    .iter()
                    .map(|node| match node.node.as_ref() {
                        Some(NodeEnum::TypeName(name)) => type_name(name),
                        _ => None,
                    })
                    .collect(),
                start: usize::try_from(location).ok()?,
                len: usize::try_from(len).ok()?,
            })
        }
        _ => {
            let execute = match root {
                NodeEnum::ExecuteStmt(execute) => execute,
                NodeEnum::ExplainStmt(explain) => match inner(&explain.query)? {
                    NodeEnum::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                NodeEnum::CreateTableAsStmt(create) => match inner(&create.query)? {
                    NodeEnum::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                _ => return cursor_effect(root).map(SessionEffect::Cursor),
            };
            if execute.name.is_empty() {
                return None;
            }
            Some(SessionEffect::Execute {
                name: execute.name.clone(),
                args: execute.params.iter().map(argument).collect(),
                start: usize::try_from(location).ok()?,
                len: usize::try_from(len).ok()?,
            })
        }
    }
}

/// An EXECUTE's argument (see [`Argument`]).
fn argument(node: &pb::Node) -> Argument {
    match node.node.as_ref() {
        Some(NodeEnum::AConst(constant)) if constant.isnull => Argument::Value(ValueSource::Null),
        Some(NodeEnum::AConst(constant)) => match constant.val.as_ref() {
            Some(Val::Ival(int)) => Argument::Value(ValueSource::Integer {
                value: i64::from(int.ival),
                location: constant.location,
            }),
            Some(Val::Sval(text)) => Argument::Value(ValueSource::Text {
                text: text.sval.clone(),
                location: constant.location,
            }),
            Some(Val::Fval(float)) => Argument::Number(float.fval.clone()),
            _ => Argument::Expression,
        },
        Some(NodeEnum::ParamRef(param)) => match u16::try_from(param.number) {
            Ok(number) if number > 0 => Argument::Value(ValueSource::Param(number)),
            _ => Argument::Expression,
        },
        _ => Argument::Expression,
    }
}

/// What a top-level statement does with a cursor (see the rules in
/// [`super`]).
fn cursor_effect(root: &NodeEnum) -> Option<CursorEffect> {
    let named = non_empty;
    let current_of = |clause: &Option<Box<pb::Node>>| match inner(clause) {
        Some(NodeEnum::CurrentOfExpr(current)) => named(&current.cursor_name),
        _ => None,
    };
    Some(match root {
        NodeEnum::DeclareCursorStmt(declare) => CursorEffect::Declare {
            name: named(&declare.portalname)?,
            options: CursorOptions::from_bits(declare.options),
        },
        NodeEnum::FetchStmt(fetch) => CursorEffect::Fetch {
            name: named(&fetch.portalname)?,
            direction: match fetch.direction() {
                pb::FetchDirection::FetchBackward => FetchDirection::Backward,
                pb::FetchDirection::FetchAbsolute => FetchDirection::Absolute,
                pb::FetchDirection::FetchRelative => FetchDirection::Relative,
                _ => FetchDirection::Forward,
            },
            count: fetch.how_many,
            moves: fetch.ismove,
        },
        NodeEnum::ClosePortalStmt(close) => CursorEffect::Close(named(&close.portalname)),
        NodeEnum::UpdateStmt(update) => CursorEffect::CurrentOf(current_of(&update.where_clause)?),
        NodeEnum::DeleteStmt(delete) => CursorEffect::CurrentOf(current_of(&delete.where_clause)?),
        _ => return None,
    })
}
