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

/// A list field. Most list fields of a tree are NIL (no typmods, no array
/// bounds, no options...): that case is decided here, inlined at the call,
/// without a call into the loop below.
#[inline(always)]
fn list(list: view::List<'_>, depth: u32) -> Result<Vec<pb::Node>, ConvertError> {
    if list.is_nil() {
        return Ok(Vec::new());
    }
    list_items(list, depth)
}

#[inline(never)]
fn list_items(list: view::List<'_>, depth: u32) -> Result<Vec<pb::Node>, ConvertError> {
    if !list.is_node_list() {
        return Err(ConvertError::Unsupported("IntList"));
    }
    let mut out: Vec<pb::Node> = Vec::with_capacity(list.len());
    for element in list.iter() {
        // libpg_query writes a NULL element as an empty Node message.
        out.push(pb::Node { node: None });
        if let (Some(element), Some(slot)) = (element, out.last_mut()) {
            child_into(element, depth, &mut slot.node)?;
        }
    }
    Ok(out)
}

/// A node pointer field; `None` (the common case for most fields) decided
/// inline at the call.
#[inline(always)]
fn opt_node(n: Option<view::Node<'_>>, depth: u32) -> Result<Option<Box<pb::Node>>, ConvertError> {
    match n {
        Some(n) => boxed_node(n, depth).map(Some),
        None => Ok(None),
    }
}

#[inline(never)]
fn boxed_node(n: view::Node<'_>, depth: u32) -> Result<Box<pb::Node>, ConvertError> {
    let mut boxed = Box::new(pb::Node { node: None });
    child_into(n, depth, &mut boxed.node)?;
    Ok(boxed)
}

/// Convert a child of a node at `depth` into `slot`. The leaf kinds that make
/// up most of a tree (names, constants, column references) are built here
/// directly; the rest go through the generated dispatch (`node_into`). The
/// result is the same either way, and so is the depth limit; leaves skip only
/// the stack check, which they do not need (they do not recurse, apart from
/// a column reference's list of names).
#[inline(always)]
fn child_into(
    n: view::Node<'_>,
    depth: u32,
    slot: &mut Option<pb::node::Node>,
) -> Result<(), ConvertError> {
    use pb::node::Node as N;
    match n.kind() {
        view::NodeRef::String(x) => {
            deeper(depth)?;
            *slot = Some(N::String(pb::String {
                sval: text(x.sval()),
            }));
        }
        view::NodeRef::Integer(x) => {
            deeper(depth)?;
            *slot = Some(N::Integer(pb::Integer { ival: x.ival() }));
        }
        view::NodeRef::AConst(x) => {
            deeper(depth)?;
            *slot = Some(N::AConst(conv_AConst(x)?));
        }
        view::NodeRef::ColumnRef(x) => {
            let depth = deeper(depth)?;
            *slot = Some(N::ColumnRef(pb::ColumnRef {
                fields: list(x.fields(), depth)?,
                location: x.location(),
            }));
        }
        _ => node_into(n, depth, slot)?,
    }
    Ok(())
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

/// Inlined, with a plain match (a closure here was left out of line):
/// constants are most of a long VALUES or IN list.
#[allow(non_snake_case)]
#[inline]
fn conv_AConst(v: view::AConst<'_>) -> Result<pb::AConst, ConvertError> {
    use pb::a_const::Val;
    let val = match v.val() {
        None => None,
        Some(view::ConstValue::Integer(ival)) => Some(Val::Ival(pb::Integer { ival })),
        Some(view::ConstValue::Float(fval)) => Some(Val::Fval(pb::Float {
            fval: fval.to_owned(),
        })),
        Some(view::ConstValue::Boolean(boolval)) => Some(Val::Boolval(pb::Boolean { boolval })),
        Some(view::ConstValue::String(sval)) => Some(Val::Sval(pb::String {
            sval: sval.to_owned(),
        })),
        Some(view::ConstValue::BitString(bsval)) => Some(Val::Bsval(pb::BitString {
            bsval: bsval.to_owned(),
        })),
    };
    Ok(pb::AConst {
        isnull: v.isnull(),
        location: v.location(),
        val,
    })
}

include!(concat!(env!("OUT_DIR"), "/convert_generated.rs"));
