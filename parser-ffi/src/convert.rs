//! Conversion of a C parse tree into pg_query's protobuf structs, reading the
//! tree through the zero-copy view: the result equals `pg_query::parse`'s, with
//! no protobuf encoding or decoding in between. The per-node functions are
//! generated from the same field tables libpg_query's protobuf output uses.

// The generated part casts and converts uniformly, whatever the C and prost
// types of a field happen to be; some of those are identities. It writes
// `match`es where a closure would capture the conversion state.
#![allow(
    clippy::unnecessary_cast,
    clippy::useless_conversion,
    clippy::manual_map
)]

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
pub fn parse_result(list: view::List<'_>) -> Result<pb::ParseResult, ConvertError> {
    let mut cx = Cx { error: None };
    let mut stmts = Vec::with_capacity(list.len());
    for stmt in view::raw_statements(list) {
        stmts.push(conv_RawStmt(&mut cx, stmt, 0));
    }
    match cx.error {
        Some(error) => Err(error),
        None => Ok(pb::ParseResult {
            version: crate::raw::PG_VERSION_NUM as i32,
            stmts,
        }),
    }
}

pub(crate) fn deeper(depth: u32) -> Result<u32, ConvertError> {
    if depth >= MAX_DEPTH {
        Err(ConvertError::TooDeep)
    } else {
        Ok(depth + 1)
    }
}

/// The state of one conversion: the first error met. The conversion
/// functions do not return `Result`s: on an error they record it here, leave
/// the value they were building empty and do not descend further, and
/// [`parse_result`] returns the error instead of the tree.
pub(crate) struct Cx {
    error: Option<ConvertError>,
}

impl Cx {
    /// The depth of a child of a node at `depth`; `None` (and the error
    /// recorded) past [`MAX_DEPTH`].
    #[inline(always)]
    fn deeper(&mut self, depth: u32) -> Option<u32> {
        if depth >= MAX_DEPTH {
            self.fail(ConvertError::TooDeep);
            None
        } else {
            Some(depth + 1)
        }
    }

    #[cold]
    #[inline(never)]
    fn fail(&mut self, error: ConvertError) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    /// A C enum value's protobuf number, or 0 with the error recorded.
    #[inline(always)]
    fn enum_value(&mut self, number: Option<i32>, name: &'static str, value: i64) -> i32 {
        match number {
            Some(number) => number,
            None => {
                self.fail(ConvertError::UnknownEnum(name, value));
                0
            }
        }
    }
}

/// Run `convert` (the conversion of a node `depth` levels down) on enough
/// stack: every level recurses, so near the end of the stack it continues on
/// a new segment. Checked at the first level and every `STACK_CHECK_EVERY`
/// levels after it: the check costs a thread-local read, and the red zone
/// covers the levels between. Every recursion of the conversion passes here:
/// node pointers and lists through `node_into`, typed pointers (a set
/// operation's `larg`, ...) at their field.
#[inline(always)]
fn on_stack<T>(depth: u32, convert: impl FnOnce() -> T) -> T {
    if !depth.wrapping_sub(1).is_multiple_of(STACK_CHECK_EVERY) {
        return convert();
    }
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, convert)
}

/// A list field. Most list fields of a tree are NIL (no typmods, no array
/// bounds, no options...): that case is decided here, inlined at the call,
/// without a call into the loop below.
#[inline(always)]
fn list(cx: &mut Cx, list: view::List<'_>, depth: u32) -> Vec<pb::Node> {
    if list.is_nil() {
        return Vec::new();
    }
    list_items(cx, list, depth)
}

#[inline(never)]
fn list_items(cx: &mut Cx, list: view::List<'_>, depth: u32) -> Vec<pb::Node> {
    if !list.is_node_list() {
        cx.fail(ConvertError::Unsupported("IntList"));
        return Vec::new();
    }
    let elements = list.iter();
    let len = elements.len();
    let mut out: Vec<pb::Node> = Vec::with_capacity(len);
    // Each element is converted in its slot of the vector (no push, no move
    // of a large `pb::Node`).
    for (slot, element) in out.spare_capacity_mut().iter_mut().zip(elements) {
        // libpg_query writes a NULL element as an empty Node message.
        let slot = slot.write(pb::Node { node: None });
        if let Some(element) = element {
            child_into(cx, element, depth, &mut slot.node);
        }
    }
    // SAFETY: the capacity is `len` (`with_capacity`), and the loop wrote all
    // `len` slots: `elements` is an exact-size iterator of `len` items.
    unsafe { out.set_len(len) };
    out
}

/// A node pointer field; `None` (the common case for most fields) decided
/// inline at the call.
#[inline(always)]
fn opt_node(cx: &mut Cx, n: Option<view::Node<'_>>, depth: u32) -> Option<Box<pb::Node>> {
    n.map(|n| boxed_node(cx, n, depth))
}

#[inline(never)]
fn boxed_node(cx: &mut Cx, n: view::Node<'_>, depth: u32) -> Box<pb::Node> {
    // Not `Box::new(pb::Node { node: None })`, which may build the 608-byte
    // value on the stack and copy all of it: an empty slot is one tag.
    let mut boxed = Box::<pb::Node>::new_uninit();
    let node = boxed.write(pb::Node { node: None });
    child_into(cx, n, depth, &mut node.node);
    // SAFETY: written two lines above.
    unsafe { boxed.assume_init() }
}

/// Store `node` into an empty slot. Not `*slot = Some(node)`: that drops
/// the slot's old value first, which the compiler does not always see is
/// `None`, and then keeps `node` aside (a whole `pb::Node`) around the call.
#[inline(always)]
fn put(slot: &mut Option<pb::node::Node>, node: pb::node::Node) {
    debug_assert!(slot.is_none(), "slot filled twice");
    // SAFETY: `slot` is a valid, aligned, exclusive reference; writing over
    // it without dropping the old value is sound (at worst a leak), and every
    // caller passes an empty slot, so nothing leaks.
    unsafe { std::ptr::write(slot, Some(node)) }
}

/// Convert a child of a node at `depth` into `slot`. The leaf kinds that make
/// up most of a tree (names, constants, column references) are built here
/// directly; the rest go through the generated dispatch (`node_into`). The
/// result is the same either way, and so is the depth limit; leaves skip only
/// the stack check, which they do not need (they do not recurse, apart from
/// a column reference's list of names).
#[inline(always)]
fn child_into(cx: &mut Cx, n: view::Node<'_>, depth: u32, slot: &mut Option<pb::node::Node>) {
    use pb::node::Node as N;
    let kind = n.kind();
    match kind {
        view::NodeRef::String(x) => {
            if cx.deeper(depth).is_some() {
                put(slot, N::String(conv_String(x)));
            }
        }
        view::NodeRef::Integer(x) => {
            if cx.deeper(depth).is_some() {
                put(slot, N::Integer(conv_Integer(x)));
            }
        }
        view::NodeRef::AConst(x) => {
            if cx.deeper(depth).is_some() {
                put(slot, N::AConst(conv_AConst(x)));
            }
        }
        view::NodeRef::ColumnRef(x) => {
            if let Some(depth) = cx.deeper(depth) {
                let fields = list(cx, x.fields(), depth);
                put(
                    slot,
                    N::ColumnRef(pb::ColumnRef {
                        fields,
                        location: x.location(),
                    }),
                );
            }
        }
        _ => node_into(cx, kind, depth, slot),
    }
}

/// A C `char` field: libpg_query writes a one-character string, or nothing for 0.
fn char_string(c: u8) -> String {
    if c == 0 {
        String::new()
    } else {
        String::from(char::from(c))
    }
}

#[inline]
fn text(s: Option<&str>) -> String {
    s.map(str::to_owned).unwrap_or_default()
}

#[allow(non_snake_case)]
#[inline]
fn conv_Integer(v: view::Integer<'_>) -> pb::Integer {
    pb::Integer { ival: v.ival() }
}

#[allow(non_snake_case)]
fn conv_Float(v: view::Float<'_>) -> pb::Float {
    pb::Float {
        fval: text(v.fval()),
    }
}

#[allow(non_snake_case)]
fn conv_Boolean(v: view::Boolean<'_>) -> pb::Boolean {
    pb::Boolean {
        boolval: v.boolval(),
    }
}

#[allow(non_snake_case)]
#[inline]
fn conv_String(v: view::String<'_>) -> pb::String {
    pb::String {
        sval: text(v.sval()),
    }
}

#[allow(non_snake_case)]
fn conv_BitString(v: view::BitString<'_>) -> pb::BitString {
    pb::BitString {
        bsval: text(v.bsval()),
    }
}

/// Inlined, with a plain match (a closure here was left out of line):
/// constants are most of a long VALUES or IN list.
#[allow(non_snake_case)]
#[inline]
fn conv_AConst(v: view::AConst<'_>) -> pb::AConst {
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
    pb::AConst {
        isnull: v.isnull(),
        location: v.location(),
        val,
    }
}

include!(concat!(env!("OUT_DIR"), "/convert_generated.rs"));
