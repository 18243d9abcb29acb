//! Conversion of a C parse tree into pg_query's protobuf structs, reading the
//! tree through the zero-copy view: the result equals `pg_query::parse`'s, with
//! no protobuf encoding or decoding in between. The per-node functions are
//! generated from the same field tables libpg_query's protobuf output uses.

// The generated part casts and converts uniformly, whatever the C and prost
// types of a field happen to be; some of those are identities.
#![allow(clippy::unnecessary_cast, clippy::useless_conversion)]

use pg_query::protobuf as pb;

use crate::view;

/// Deepest nesting converted. Deeper trees are refused with an error rather
/// than risking the stack: the conversion and the drop of the resulting
/// structs both recurse once per level.
pub const MAX_DEPTH: u32 = 1_000;

/// When less stack than this is left, conversion continues on a new segment
/// of `STACK_SEGMENT` bytes. Checked every `STACK_CHECK_EVERY` levels: the
/// zone holds that many levels with room to spare. Release builds use a few
/// KiB per level; debug builds tens of KiB (every arm of the dispatch keeps
/// its own stack slots), so they check every level.
pub(crate) const STACK_RED_ZONE: usize = 256 * 1024;
pub(crate) const STACK_CHECK_EVERY: u32 = if cfg!(debug_assertions) { 1 } else { 4 };
pub(crate) const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// Why a tree could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("statement is nested more than {MAX_DEPTH} levels deep")]
    TooDeep,
    #[error("node tag {0} is unknown to the protobuf conversion")]
    UnknownNode(u32),
    #[error("value {1} of enum {0} is unknown to the protobuf conversion")]
    UnknownEnum(&'static str, i64),
    #[error("{0} nodes are not converted (the raw parser does not produce them)")]
    Unsupported(&'static str),
}

/// Convert a whole parse into pg_query's `ParseResult`.
pub fn parse_result(tree: &crate::ParseTree) -> Result<pb::ParseResult, ConvertError> {
    let stmts = tree
        .statements()
        .map(|stmt| conv_RawStmt(stmt, 0))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(pb::ParseResult {
        version: crate::raw::PG_VERSION_NUM as i32,
        stmts,
    })
}

pub(crate) fn deeper(depth: u32) -> Result<u32, ConvertError> {
    if depth >= MAX_DEPTH {
        Err(ConvertError::TooDeep)
    } else {
        Ok(depth + 1)
    }
}

fn list(list: view::List<'_>, depth: u32) -> Result<Vec<pb::Node>, ConvertError> {
    if !list.is_node_list() {
        return Err(ConvertError::Unsupported("IntList"));
    }
    let mut out: Vec<pb::Node> = Vec::with_capacity(list.len());
    for element in list.iter() {
        // libpg_query writes a NULL element as an empty Node message.
        out.push(pb::Node { node: None });
        if let (Some(element), Some(slot)) = (element, out.last_mut()) {
            node_into(element, depth, &mut slot.node)?;
        }
    }
    Ok(out)
}

fn opt_node(n: Option<view::Node<'_>>, depth: u32) -> Result<Option<Box<pb::Node>>, ConvertError> {
    match n {
        Some(n) => {
            let mut boxed = Box::new(pb::Node { node: None });
            node_into(n, depth, &mut boxed.node)?;
            Ok(Some(boxed))
        }
        None => Ok(None),
    }
}

/// A C `char` field: libpg_query writes a one-character string, or nothing for 0.
fn char_string(c: u8) -> String {
    if c == 0 {
        String::new()
    } else {
        char::from(c).to_string()
    }
}

fn text(s: Option<&str>) -> String {
    s.map(str::to_owned).unwrap_or_default()
}

#[allow(non_snake_case)]
fn conv_Integer(v: view::Integer<'_>) -> Result<pb::Integer, ConvertError> {
    Ok(pb::Integer { ival: v.ival() })
}

#[allow(non_snake_case)]
fn conv_Float(v: view::Float<'_>) -> Result<pb::Float, ConvertError> {
    Ok(pb::Float {
        fval: text(v.fval()),
    })
}

#[allow(non_snake_case)]
fn conv_Boolean(v: view::Boolean<'_>) -> Result<pb::Boolean, ConvertError> {
    Ok(pb::Boolean {
        boolval: v.boolval(),
    })
}

#[allow(non_snake_case)]
fn conv_String(v: view::String<'_>) -> Result<pb::String, ConvertError> {
    Ok(pb::String {
        sval: text(v.sval()),
    })
}

#[allow(non_snake_case)]
fn conv_BitString(v: view::BitString<'_>) -> Result<pb::BitString, ConvertError> {
    Ok(pb::BitString {
        bsval: text(v.bsval()),
    })
}

#[allow(non_snake_case)]
fn conv_AConst(v: view::AConst<'_>) -> Result<pb::AConst, ConvertError> {
    use pb::a_const::Val;
    let val = v.val().map(|val| match val {
        view::ConstValue::Integer(ival) => Val::Ival(pb::Integer { ival }),
        view::ConstValue::Float(fval) => Val::Fval(pb::Float {
            fval: fval.to_owned(),
        }),
        view::ConstValue::Boolean(boolval) => Val::Boolval(pb::Boolean { boolval }),
        view::ConstValue::String(sval) => Val::Sval(pb::String {
            sval: sval.to_owned(),
        }),
        view::ConstValue::BitString(bsval) => Val::Bsval(pb::BitString {
            bsval: bsval.to_owned(),
        }),
    });
    Ok(pb::AConst {
        isnull: v.isnull(),
        location: v.location(),
        val,
    })
}

include!(concat!(env!("OUT_DIR"), "/convert_generated.rs"));
