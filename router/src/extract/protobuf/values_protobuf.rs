//! The operands of a key comparison (protobuf structs): a column reference, and
//! a constant or parameter through casts as a [`Value`].

use parser_ffi::protobuf::{self as pb, a_const::Val, node::Node as NodeEnum};

use super::inner;
use crate::summary::{ColumnRef, Value, ValueSource};

/// A ColumnRef whose last field is a name.
pub(super) fn column(expr: &pb::Node) -> Option<ColumnRef> {
    let Some(NodeEnum::ColumnRef(column_ref)) = expr.node.as_ref() else {
        return None;
    };
    let (last, rest) = column_ref.fields.split_last()?;
    let Some(NodeEnum::String(name)) = last.node.as_ref() else {
        return None;
    };
    let table = match rest.last().and_then(|field| field.node.as_ref()) {
        Some(NodeEnum::String(table)) => Some(table.sval.clone()),
        _ => None,
    };
    Some(ColumnRef {
        table,
        column: name.sval.clone(),
    })
}

/// A literal or parameter, possibly cast (the outermost cast names the type).
pub(super) fn value(expr: &pb::Node) -> Option<Value> {
    let mut cast: Option<Option<String>> = None;
    let mut expr = expr.node.as_ref()?;
    // A loop: casts of casts need no recursion.
    while let NodeEnum::TypeCast(type_cast) = expr {
        if cast.is_none() {
            cast = Some(type_cast.type_name.as_ref().and_then(type_name));
        }
        expr = inner(&type_cast.arg)?;
    }
    let source = match expr {
        // `$0` and numbers past the protocol's 65535 name no parameter.
        NodeEnum::ParamRef(param) => {
            ValueSource::Param(u16::try_from(param.number).ok().filter(|&n| n > 0)?)
        }
        NodeEnum::AConst(constant) if constant.isnull => ValueSource::Null,
        NodeEnum::AConst(constant) => {
            let location = constant.location;
            match constant.val.as_ref()? {
                Val::Ival(int) => ValueSource::Integer {
                    value: i64::from(int.ival),
                    location,
                },
                Val::Fval(float) => ValueSource::Text {
                    text: float.fval.clone(),
                    location,
                },
                Val::Sval(text) => ValueSource::Text {
                    text: text.sval.clone(),
                    location,
                },
                Val::Boolval(_) | Val::Bsval(_) => return None,
            }
        }
        _ => return None,
    };
    Some(Value {
        source,
        cast: cast.flatten(),
    })
}

/// A type's last name part, lower-cased (`pg_catalog.int4` -> `int4`).
pub(super) fn type_name(type_name: &pb::TypeName) -> Option<String> {
    match type_name.names.last()?.node.as_ref()? {
        NodeEnum::String(name) => Some(name.sval.to_ascii_lowercase()),
        _ => None,
    }
}
