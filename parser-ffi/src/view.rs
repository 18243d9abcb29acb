//! The zero-copy, read-only view of a C parse tree: `Copy` wrappers around
//! references into the tree, with lifetimes tied to the [`ParseTree`] that owns
//! it. Reading a field is a load from the C struct; nothing is converted.
//!
//! One wrapper per node struct and one accessor per field are generated at build
//! time from libpg_query's field tables (accessors are named like pg_query's
//! protobuf fields: `SelectStmt::where_clause`). This file holds the hand-written
//! core: [`Node`], [`List`], the value nodes, [`walk`] and the statements of a
//! parse (`raw_statements`).
//!
//! [`ParseTree`]: crate::ParseTree

// The generated part casts and converts uniformly, whatever the C and prost
// types of a field happen to be; some of those are identities.
#![allow(clippy::unnecessary_cast, clippy::useless_conversion, clippy::ptr_arg)]

use std::ffi::{c_char, CStr};

use pg_query::protobuf;

use crate::raw;

/// Marks the C structs that are parse nodes: they start with a `NodeTag`, so a
/// reference to one may be read as a reference to `raw::Node`.
///
/// # Safety
/// Implement only for `#[repr(C)]` structs whose first member is `NodeTag type`.
pub(crate) unsafe trait NodeStruct {}

/// Any node of the tree.
#[derive(Clone, Copy)]
pub struct Node<'a>(&'a raw::Node);

impl<'a> Node<'a> {
    /// # Safety
    /// `ptr` is null or points to a node that stays valid and unchanged for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut raw::Node) -> Option<Node<'a>> {
        // SAFETY: the caller guarantees null or a valid node for 'a.
        unsafe { ptr.as_ref() }.map(Node)
    }

    pub(crate) fn from_struct<T: NodeStruct>(node: &'a T) -> Node<'a> {
        // SAFETY: T is a node struct (NodeStruct's contract), so it begins with
        // the NodeTag that raw::Node consists of.
        Node(unsafe { &*(node as *const T).cast::<raw::Node>() })
    }

    /// Whether `self` and `other` are the same node of the tree (not two
    /// equal ones).
    pub fn is(self, other: Node<'_>) -> bool {
        std::ptr::eq(self.0, other.0)
    }

    /// The node's tag (`T_SelectStmt`, ...), as libpg_query numbers it.
    pub fn tag(self) -> u32 {
        self.0.type_
    }

    /// Push this node's direct children (in no particular order). Reads the
    /// child pointers through a generated table of member offsets, without
    /// dispatching on the node type.
    pub fn push_children(self, stack: &mut Vec<Node<'a>>) {
        let tag = self.tag();
        if tag == raw::NodeTag::T_List {
            // SAFETY: the tag says this node is a List, valid for 'a.
            unsafe { List::from_raw((self.0 as *const raw::Node).cast_mut().cast()) }
                .push_nodes(stack);
            return;
        }
        let base = (self.0 as *const raw::Node).cast::<u8>();
        for &(offset, is_list) in child_fields(tag) {
            // SAFETY: `child_fields(tag)` lists, for the struct this tag names,
            // the offsets of members that are pointers to nodes or Lists; the
            // node is that struct, so the read is in bounds and aligned, and
            // the pointer it yields is NULL or points into the tree (valid for 'a).
            let child = unsafe { base.add(offset as usize).cast::<*mut raw::Node>().read() };
            if child.is_null() {
                continue;
            }
            if is_list {
                // SAFETY: as above; this member is a List pointer.
                unsafe { List::from_raw(child.cast()) }.push_nodes(stack);
            } else {
                // SAFETY: as above; non-null node pointer into the tree.
                stack.push(Node(unsafe { &*child }));
            }
        }
    }
}

/// A `List` of nodes (or of integers or OIDs, which the raw parser does not
/// produce in node positions). Empty (`NIL`) lists are null in C.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct List<'a>(Option<&'a raw::List>);

impl<'a> List<'a> {
    /// # Safety
    /// `ptr` is null or points to a list that stays valid and unchanged for `'a`.
    pub(crate) unsafe fn from_raw(ptr: *mut raw::List) -> List<'a> {
        // SAFETY: the caller guarantees null or a valid list for 'a.
        List(unsafe { ptr.as_ref() })
    }

    /// Whether this is NIL (the empty list, which is NULL in C).
    #[inline]
    pub fn is_nil(self) -> bool {
        self.0.is_none()
    }

    /// Number of elements.
    pub fn len(self) -> usize {
        self.0.map_or(0, |list| list.length.max(0) as usize)
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Whether the elements are node pointers (`T_List`), not integers or OIDs.
    pub fn is_node_list(self) -> bool {
        self.0.is_none_or(|list| list.type_ == raw::NodeTag::T_List)
    }

    fn cells(self) -> &'a [raw::ListCell] {
        match self.0 {
            Some(list) if list.length > 0 && !list.elements.is_null() => {
                // SAFETY: a List's `elements` holds `length` initialised cells,
                // allocated in the tree's context, valid for 'a.
                unsafe { std::slice::from_raw_parts(list.elements, list.length as usize) }
            }
            _ => &[],
        }
    }

    /// The elements of a node list: `None` for a NULL element (lists may hold
    /// them, e.g. an absent column definition list). Empty for integer lists.
    pub fn iter(self) -> impl ExactSizeIterator<Item = Option<Node<'a>>> + 'a {
        let cells = if self.is_node_list() {
            self.cells()
        } else {
            &[]
        };
        cells.iter().map(|cell| {
            // SAFETY: in a T_List every cell holds a node pointer (or NULL) into
            // the same tree.
            unsafe { Node::from_raw(cell.ptr_value.cast()) }
        })
    }

    /// Push the non-NULL elements of a node list onto `stack`.
    #[inline]
    pub fn push_nodes(self, stack: &mut Vec<Node<'a>>) {
        if !self.is_node_list() {
            return;
        }
        let cells = self.cells();
        stack.reserve(cells.len());
        for cell in cells {
            // SAFETY: in a T_List every cell holds a node pointer (or NULL) into
            // the same tree.
            if let Some(node) = unsafe { Node::from_raw(cell.ptr_value.cast()) } {
                stack.push(node);
            }
        }
    }

    /// The list as a node (`None` for the empty list, which is NULL in C).
    pub fn as_node(self) -> Option<Node<'a>> {
        self.0.map(Node::from_struct)
    }

    /// Element `index` of a node list.
    pub fn get(self, index: usize) -> Option<Node<'a>> {
        self.iter().nth(index).flatten()
    }
}

/// A string member of a parse tree, as `str`, without validating it again:
/// every string in a tree the parser built is UTF-8 (below). Debug builds
/// (the tests, the fuzzer) still check.
///
/// Why the parser's strings are UTF-8. The input is a Rust `&str` (valid
/// UTF-8, no NUL: `ParseTree::parse` refuses NUL), and the glue calls
/// `pg_query_init` before every parse, which sets the (thread-local) database
/// encoding to UTF8, so every encoding-aware step below is UTF-8-aware. A
/// string in a raw parse tree is then one of:
/// - text the grammar writes itself (type and function names such as
///   `pg_catalog.int4`, keywords, formatted numbers): ASCII;
/// - a slice of the input between token boundaries, which are ASCII bytes
///   (quotes, `$` of dollar quotes, operator characters, white space); every
///   byte >= 0x80 is an identifier character to the scanner, so no token ends
///   inside a multibyte character;
/// - an identifier lowercased (`downcase_identifier` changes only ASCII A-Z
///   under a multibyte encoding) and cut to 63 bytes by `truncate_identifier`,
///   which cuts with `pg_mbcliplen`, at a character boundary;
/// - a literal whose escapes were decoded: `\x`, octal and backslash escapes
///   that yield NUL or a byte >= 0x80 set `saw_non_ascii`, and the scanner then
///   runs `pg_verifymbstr` on the whole literal (an error if not UTF-8);
///   `\u`/`U&` escapes go through `pg_unicode_to_server`, which writes valid
///   UTF-8 and rejects invalid code points, and unpaired surrogates are errors
///   (scan.l's `addunicode`, parser.c's `str_udeescape`).
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string that the parser put in
/// a parse tree (or that is otherwise UTF-8), valid for `'a`.
pub(crate) unsafe fn cstr<'a>(ptr: *const c_char) -> Option<&'a str> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per the caller.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    debug_assert!(
        std::str::from_utf8(bytes).is_ok(),
        "parse tree string is not UTF-8: {bytes:?}"
    );
    // SAFETY: a string of a parse tree is UTF-8 (see above).
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// # Safety
/// `ptr` is null or points to a `T` valid for `'a`.
pub(crate) unsafe fn deref<'a, T>(ptr: *mut T) -> Option<&'a T> {
    // SAFETY: per the caller.
    unsafe { ptr.as_ref() }
}

/// An `Integer` value node.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Integer<'a>(pub(crate) &'a raw::Integer);

impl Integer<'_> {
    pub fn ival(self) -> i32 {
        self.0.ival
    }
}

/// A `Float` value node: the literal's text, as written.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Float<'a>(pub(crate) &'a raw::Float);

impl<'a> Float<'a> {
    pub fn fval(self) -> Option<&'a str> {
        // SAFETY: a string of the tree, valid for 'a.
        unsafe { cstr(self.0.fval) }
    }
}

/// A `Boolean` value node.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Boolean<'a>(pub(crate) &'a raw::Boolean);

impl Boolean<'_> {
    pub fn boolval(self) -> bool {
        self.0.boolval
    }
}

/// A `String` value node (identifiers in name lists, string constants).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct String<'a>(pub(crate) &'a raw::String);

impl<'a> String<'a> {
    pub fn sval(self) -> Option<&'a str> {
        // SAFETY: a string of the tree, valid for 'a.
        unsafe { cstr(self.0.sval) }
    }
}

/// A `BitString` value node (`B'101'`, `X'1F'`), text as the parser keeps it.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct BitString<'a>(pub(crate) &'a raw::BitString);

impl<'a> BitString<'a> {
    pub fn bsval(self) -> Option<&'a str> {
        // SAFETY: a string of the tree, valid for 'a.
        unsafe { cstr(self.0.bsval) }
    }
}

/// An integer list node (not produced by the raw parser in node positions).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct IntList<'a>(pub(crate) &'a raw::List);

/// An OID list node (not produced by the raw parser in node positions).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct OidList<'a>(pub(crate) &'a raw::List);

impl IntList<'_> {
    pub fn values(self) -> impl Iterator<Item = i32> {
        // SAFETY: `self.0` is a List (checked by the tag when the wrapper was made).
        unsafe { List::from_raw((self.0 as *const raw::List).cast_mut()) }
            .cells()
            .iter()
            // SAFETY: the cells of a T_IntList hold ints.
            .map(|cell| unsafe { cell.int_value })
    }
}

impl OidList<'_> {
    pub fn values(self) -> impl Iterator<Item = u32> {
        // SAFETY: `self.0` is a List (checked by the tag when the wrapper was made).
        unsafe { List::from_raw((self.0 as *const raw::List).cast_mut()) }
            .cells()
            .iter()
            // SAFETY: the cells of a T_OidList hold OIDs.
            .map(|cell| unsafe { cell.oid_value })
    }
}

/// The value of an `A_Const`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstValue<'a> {
    Integer(i32),
    /// Numeric literals that do not fit an int4, as written (`12.5`, `1e10`).
    Float(&'a str),
    Boolean(bool),
    String(&'a str),
    BitString(&'a str),
}

/// An `A_Const`: a literal constant.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct AConst<'a>(pub(crate) &'a raw::A_Const);

impl<'a> AConst<'a> {
    /// `NULL`.
    pub fn isnull(self) -> bool {
        self.0.isnull
    }

    /// Byte offset of the literal in the statement text, or -1.
    pub fn location(self) -> i32 {
        self.0.location
    }

    /// The value; `None` for `NULL`.
    #[inline]
    pub fn val(self) -> Option<ConstValue<'a>> {
        if self.0.isnull {
            return None;
        }
        let val = &self.0.val;
        // SAFETY: every member of ValUnion is a value node starting with its
        // NodeTag, so reading the tag through `node` is always valid; the tag
        // then says which member is live. Strings point into the tree ('a).
        unsafe {
            match val.node.type_ {
                raw::NodeTag::T_Integer => Some(ConstValue::Integer(val.ival.ival)),
                raw::NodeTag::T_Float => cstr(val.fval.fval).map(ConstValue::Float),
                raw::NodeTag::T_Boolean => Some(ConstValue::Boolean(val.boolval.boolval)),
                raw::NodeTag::T_String => cstr(val.sval.sval).map(ConstValue::String),
                raw::NodeTag::T_BitString => cstr(val.bsval.bsval).map(ConstValue::BitString),
                _ => None,
            }
        }
    }
}

macro_rules! value_node_as_node {
    ($($name:ident),*) => {$(
        impl<'a> $name<'a> {
            /// This node as a generic node.
            pub fn as_node(self) -> Node<'a> {
                Node::from_struct(self.0)
            }
        }
    )*};
}

value_node_as_node!(Integer, Float, Boolean, String, BitString, AConst);

/// What [`walk`] does after visiting a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// Visit this node's children too.
    Continue,
    /// Do not descend into this node.
    SkipChildren,
    /// Stop the walk.
    Stop,
}

/// Visit `root` and every node below it, depth first (siblings in no particular
/// order), each typed by its tag. Iterative: a tree nested a million levels deep
/// is walked without recursion, on a heap stack.
pub fn walk<'a>(root: Node<'a>, visit: impl FnMut(NodeRef<'a>) -> Walk) {
    walk_with(&mut Vec::with_capacity(16), root, visit)
}

/// [`walk`] with a caller-owned stack, reused across walks to save allocating.
pub fn walk_with<'a>(
    stack: &mut Vec<Node<'a>>,
    root: Node<'a>,
    mut visit: impl FnMut(NodeRef<'a>) -> Walk,
) {
    stack.clear();
    stack.push(root);
    while let Some(node) = stack.pop() {
        match visit(node.kind()) {
            Walk::Continue => node.push_children(stack),
            Walk::SkipChildren => {}
            Walk::Stop => break,
        }
    }
    stack.clear();
}

/// The `RawStmt`s of a statement list: raw_parser's result is a List of
/// RawStmt and nothing else.
pub(crate) fn raw_statements(list: List<'_>) -> impl Iterator<Item = RawStmt<'_>> {
    list.iter().filter_map(|stmt| match stmt?.kind() {
        NodeRef::RawStmt(stmt) => Some(stmt),
        _ => None,
    })
}

include!(concat!(env!("OUT_DIR"), "/view_generated.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    /// A zeroed node of `tag`, in a buffer larger than any node struct.
    fn fake(tag: u32) -> Box<[u64; 512]> {
        let mut buffer = Box::new([0u64; 512]);
        // SAFETY: the buffer is 4 KiB, 8-aligned; a node's tag is its first u32.
        unsafe { buffer.as_mut_ptr().cast::<u32>().write(tag) };
        buffer
    }

    fn node(buffer: &[u64; 512]) -> Node<'_> {
        // SAFETY: a zeroed struct with a valid tag: every pointer member is
        // NULL and every list NIL, which the view reads as absent.
        Node(unsafe { &*buffer.as_ptr().cast::<raw::Node>() })
    }

    #[test]
    fn kind_types_every_known_tag_as_that_node() {
        assert!(NODE_TYPES.len() > 200);
        for &(name, tag) in NODE_TYPES {
            let buffer = fake(tag);
            let node = node(&buffer);
            let kind = node.kind();
            assert!(!matches!(kind, NodeRef::Other(_)), "{name}");
            // The variant holds this node.
            let back = kind.as_node().map(|n| n.0 as *const raw::Node);
            if !matches!(name, "List" | "IntList" | "OidList") {
                assert_eq!(back, Some(node.0 as *const raw::Node), "{name}");
            }
        }
        type Is = fn(NodeRef<'_>) -> bool;
        let cases: [(u32, Is); 5] = [
            (raw::NodeTag::T_RangeVar, |k| {
                matches!(k, NodeRef::RangeVar(_))
            }),
            (raw::NodeTag::T_SelectStmt, |k| {
                matches!(k, NodeRef::SelectStmt(_))
            }),
            (raw::NodeTag::T_String, |k| matches!(k, NodeRef::String(_))),
            (raw::NodeTag::T_List, |k| matches!(k, NodeRef::List(_))),
            (raw::NodeTag::T_IntList, |k| {
                matches!(k, NodeRef::IntList(_))
            }),
        ];
        for (tag, is) in cases {
            let buffer = fake(tag);
            assert!(is(node(&buffer).kind()), "tag {tag}");
        }
        for tag in [0, 99_999, u32::MAX] {
            let buffer = fake(tag);
            assert!(matches!(node(&buffer).kind(), NodeRef::Other(t) if t == tag));
        }
    }
}
