//! What a statement does to session state (zero-copy view): SET / RESET /
//! DISCARD / DEALLOCATE / PREPARE / cursor statements read into a
//! [`SessionEffect`] (see the rules in [`crate::extract`]).

use parser_ffi::protobuf::{DiscardMode, FetchDirection, VariableSetKind};
use parser_ffi::view::{ConstValue, Node, NodeRef};

use super::values_view::type_name;
use crate::summary::{
    Argument, CursorEffect, CursorOptions, FetchDirection as Direction, SessionEffect, ValueSource,
};

/// What a top-level statement does to tracked session state (see the
/// rules in [`super`]); `location` and `len` are its RawStmt's.
pub(super) fn session_effect(stmt: Node<'_>, location: i32, len: i32) -> Option<SessionEffect> {
    match stmt.kind() {
        NodeRef::VariableSetStmt(set) => {
            let kind = set.kind();
            let transaction = kind == VariableSetKind::VarSetMulti
                && set
                    .name()
                    .is_some_and(|n| n.eq_ignore_ascii_case("TRANSACTION"));
            if set.is_local() || transaction {
                return Some(SessionEffect::TransactionScoped("SET"));
            }
            let name = || set.name().map(str::to_ascii_lowercase);
            Some(match kind {
                VariableSetKind::VarResetAll => SessionEffect::ResetAll,
                VariableSetKind::VarSetValue | VariableSetKind::VarSetCurrent => {
                    match (name(), usize::try_from(location), usize::try_from(len)) {
                        (Some(name), Ok(start), Ok(len)) => SessionEffect::Set { name, start, len },
                        _ => SessionEffect::Untracked,
                    }
                }
                VariableSetKind::VarSetDefault | VariableSetKind::VarReset => match name() {
                    Some(name) => SessionEffect::Reset { name },
                    None => SessionEffect::Untracked,
                },
                _ => SessionEffect::Untracked,
            })
        }
        NodeRef::ConstraintsSetStmt(_) => Some(SessionEffect::TransactionScoped("SET CONSTRAINTS")),
        NodeRef::DeallocateStmt(stmt) if stmt.isall() => Some(SessionEffect::Deallocate(None)),
        NodeRef::DeallocateStmt(stmt) => {
            Some(SessionEffect::Deallocate(Some(stmt.name()?.to_owned())))
        }
        NodeRef::DiscardStmt(discard) if discard.target() == DiscardMode::DiscardAll => {
            Some(SessionEffect::DiscardAll)
        }
        NodeRef::PrepareStmt(prepare) => Some(SessionEffect::Prepare {
            name: prepare.name()?.to_owned(),
            types: prepare
                .argtypes()
                .iter()
                .map(|node| match node.map(Node::kind) {
                    Some(NodeRef::TypeName(name)) => type_name(name),
                    _ => None,
                })
                .collect(),
            start: usize::try_from(location).ok()?,
            len: usize::try_from(len).ok()?,
        }),
        _ => {
            let execute = match stmt.kind() {
                NodeRef::ExecuteStmt(execute) => execute,
                NodeRef::ExplainStmt(explain) => match explain.query()?.kind() {
                    NodeRef::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                NodeRef::CreateTableAsStmt(create) => match create.query()?.kind() {
                    NodeRef::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                _ => return cursor_effect(stmt).map(SessionEffect::Cursor),
            };
            Some(SessionEffect::Execute {
                name: execute.name()?.to_owned(),
                args: execute.params().iter().map(argument).collect(),
                start: usize::try_from(location).ok()?,
                len: usize::try_from(len).ok()?,
            })
        }
    }
}

/// An EXECUTE's argument (see [`Argument`]).
fn argument(node: Option<Node<'_>>) -> Argument {
    let Some(node) = node else {
        return Argument::Expression;
    };
    match node.kind() {
        NodeRef::AConst(constant) if constant.isnull() => Argument::Value(ValueSource::Null),
        NodeRef::AConst(constant) => {
            let location = constant.location();
            match constant.val() {
                Some(ConstValue::Integer(value)) => Argument::Value(ValueSource::Integer {
                    value: i64::from(value),
                    location,
                }),
                Some(ConstValue::String(text)) => Argument::Value(ValueSource::Text {
                    text: text.to_owned(),
                    location,
                }),
                Some(ConstValue::Float(text)) => Argument::Number(text.to_owned()),
                _ => Argument::Expression,
            }
        }
        NodeRef::ParamRef(param) => match u16::try_from(param.number()) {
            Ok(number) if number > 0 => Argument::Value(ValueSource::Param(number)),
            _ => Argument::Expression,
        },
        _ => Argument::Expression,
    }
}

/// What a top-level statement does with a cursor (see the rules in
/// [`super`]).
fn cursor_effect(stmt: Node<'_>) -> Option<CursorEffect> {
    let current_of = |clause: Option<Node<'_>>| match clause.map(Node::kind) {
        Some(NodeRef::CurrentOfExpr(current)) => current.cursor_name().map(str::to_owned),
        _ => None,
    };
    Some(match stmt.kind() {
        NodeRef::DeclareCursorStmt(declare) => CursorEffect::Declare {
            name: declare.portalname()?.to_owned(),
            options: CursorOptions::from_bits(declare.options()),
        },
        NodeRef::FetchStmt(fetch) => CursorEffect::Fetch {
            name: fetch.portalname()?.to_owned(),
            direction: match fetch.direction() {
                FetchDirection::FetchBackward => Direction::Backward,
                FetchDirection::FetchAbsolute => Direction::Absolute,
                FetchDirection::FetchRelative => Direction::Relative,
                _ => Direction::Forward,
            },
            count: fetch.how_many(),
            moves: fetch.ismove(),
        },
        NodeRef::ClosePortalStmt(close) => {
            CursorEffect::Close(close.portalname().map(str::to_owned))
        }
        NodeRef::UpdateStmt(update) => CursorEffect::CurrentOf(current_of(update.where_clause())?),
        NodeRef::DeleteStmt(delete) => CursorEffect::CurrentOf(current_of(delete.where_clause())?),
        _ => return None,
    })
}
