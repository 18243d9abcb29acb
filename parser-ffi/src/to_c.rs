//! pg_query's protobuf structs back to C parse nodes, built in an arena owned
//! by Rust, so a protobuf tree can be deparsed by the C deparser without being
//! encoded to protobuf bytes and decoded again in C. The per-node builders are
//! generated from the same field tables as the forward conversion.
//!
//! The C deparser only reads the nodes it is given (see `deparse.rs`), so they
//! may live in memory Postgres did not allocate.

// The generated part casts and converts uniformly, whatever the C and prost
// types of a field happen to be; some of those are identities.
#![allow(clippy::unnecessary_cast, clippy::useless_conversion)]

use std::alloc::Layout;
use std::ffi::c_char;

use pg_query::protobuf as pb;

use crate::convert::{deeper, ConvertError, STACK_RED_ZONE, STACK_SEGMENT};
use crate::raw;
use crate::view::{self, NodeStruct};

/// Memory for one C tree; freed all at once when dropped.
#[derive(Default)]
pub(crate) struct Arena {
    bump: bumpalo::Bump,
}

impl Arena {
    /// A zeroed node of type `T` with its tag set. (A bump arena hands out
    /// disjoint `&mut` from `&self`, as bumpalo's own `alloc` does.)
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn node<T: NodeStruct>(&self, tag: u32) -> &mut T {
        let ptr = self.bump.alloc_layout(Layout::new::<T>()).cast::<T>();
        // SAFETY: `ptr` is a fresh allocation sized and aligned for T. Node
        // structs are plain C data (integers, bools, pointers, unions of those)
        // for which all-zero bytes are a valid value (NULL, 0, false).
        let node = unsafe {
            ptr.as_ptr().write_bytes(0, 1);
            &mut *ptr.as_ptr()
        };
        // SAFETY: T is a node struct (NodeStruct's contract): it starts with
        // the NodeTag, which raw::Node consists of.
        unsafe { (*(node as *mut T).cast::<raw::Node>()).type_ = tag };
        node
    }

    /// A C copy of `text` for a string field: NULL when empty, as libpg_query's
    /// readfuncs do.
    pub(crate) fn string(&self, text: &str) -> Result<*mut c_char, ConvertError> {
        if text.is_empty() {
            Ok(std::ptr::null_mut())
        } else {
            self.cstring(text)
        }
    }

    /// A NUL-terminated C copy of `text` (also when empty).
    pub(crate) fn cstring(&self, text: &str) -> Result<*mut c_char, ConvertError> {
        if text.as_bytes().contains(&0) {
            return Err(ConvertError::Unsupported("string with a NUL byte"));
        }
        let bytes = self.bump.alloc_slice_fill_copy(text.len() + 1, 0u8);
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Ok(bytes.as_mut_ptr().cast())
    }

    /// A C `List` of the nodes (NULL for none, as `NIL`).
    pub(crate) fn list(
        &self,
        items: &[pb::Node],
        depth: u32,
    ) -> Result<*mut raw::List, ConvertError> {
        self.build_list(items, |item| node_ptr(self, item, depth))
    }

    /// A C `List` whose cells point to what `build` makes of each item (NULL
    /// for no items, as `NIL`). Cells are allocated first and filled in place.
    pub(crate) fn build_list<I, T>(
        &self,
        items: &[I],
        mut build: impl FnMut(&I) -> Result<*mut T, ConvertError>,
    ) -> Result<*mut raw::List, ConvertError> {
        if items.is_empty() {
            return Ok(std::ptr::null_mut());
        }
        let cells = self.bump.alloc_slice_fill_copy(
            items.len(),
            raw::ListCell {
                ptr_value: std::ptr::null_mut(),
            },
        );
        for (cell, item) in cells.iter_mut().zip(items) {
            cell.ptr_value = build(item)?.cast();
        }
        let list = self.node::<raw::List>(raw::NodeTag::T_List);
        list.length = cells.len() as i32;
        list.max_length = cells.len() as i32;
        list.elements = cells.as_mut_ptr();
        Ok(list)
    }

    /// Run `f` with this thread's arena, emptied afterwards but keeping its
    /// memory, so that deparsing allocates nothing in steady state.
    pub(crate) fn with<T>(f: impl FnOnce(&Arena) -> T) -> T {
        thread_local! {
            static ARENA: std::cell::RefCell<Arena> = std::cell::RefCell::new(Arena::default());
        }
        ARENA.with(|arena| match arena.try_borrow_mut() {
            Ok(mut arena) => {
                let result = f(&arena);
                // Do not keep the memory of an unusually large tree around.
                if arena.bump.allocated_bytes() > 1 << 20 {
                    *arena = Arena::default();
                } else {
                    arena.bump.reset();
                }
                result
            }
            // Re-entered (cannot happen today): use a fresh arena.
            Err(_) => f(&Arena::default()),
        })
    }
}

/// Build the statement list of `tree` as a C `List` of `RawStmt`.
pub(crate) fn statements(
    arena: &Arena,
    tree: &pb::ParseResult,
) -> Result<*mut raw::List, ConvertError> {
    arena.build_list(&tree.stmts, |stmt| build_RawStmt(arena, stmt, 0))
}

#[allow(non_snake_case)]
fn build_Integer(a: &Arena, m: &pb::Integer) -> Result<*mut raw::Integer, ConvertError> {
    let n = a.node::<raw::Integer>(raw::NodeTag::T_Integer);
    n.ival = m.ival;
    Ok(n)
}

#[allow(non_snake_case)]
fn build_Float(a: &Arena, m: &pb::Float) -> Result<*mut raw::Float, ConvertError> {
    let n = a.node::<raw::Float>(raw::NodeTag::T_Float);
    n.fval = a.cstring(&m.fval)?;
    Ok(n)
}

#[allow(non_snake_case)]
fn build_Boolean(a: &Arena, m: &pb::Boolean) -> Result<*mut raw::Boolean, ConvertError> {
    let n = a.node::<raw::Boolean>(raw::NodeTag::T_Boolean);
    n.boolval = m.boolval;
    Ok(n)
}

#[allow(non_snake_case)]
fn build_String(a: &Arena, m: &pb::String) -> Result<*mut raw::String, ConvertError> {
    let n = a.node::<raw::String>(raw::NodeTag::T_String);
    n.sval = a.cstring(&m.sval)?;
    Ok(n)
}

#[allow(non_snake_case)]
fn build_BitString(a: &Arena, m: &pb::BitString) -> Result<*mut raw::BitString, ConvertError> {
    let n = a.node::<raw::BitString>(raw::NodeTag::T_BitString);
    n.bsval = a.cstring(&m.bsval)?;
    Ok(n)
}

#[allow(non_snake_case)]
fn build_AConst(a: &Arena, m: &pb::AConst) -> Result<*mut raw::A_Const, ConvertError> {
    use pb::a_const::Val;
    let n = a.node::<raw::A_Const>(raw::NodeTag::T_A_Const);
    n.location = m.location;
    if m.isnull {
        n.isnull = true;
        return Ok(n);
    }
    // Writing a union member is safe; the tag written with it says which one.
    match &m.val {
        Some(Val::Ival(v)) => {
            n.val.ival = raw::Integer {
                type_: raw::NodeTag::T_Integer,
                ival: v.ival,
            };
        }
        Some(Val::Fval(v)) => {
            n.val.fval = raw::Float {
                type_: raw::NodeTag::T_Float,
                fval: a.cstring(&v.fval)?,
            };
        }
        Some(Val::Boolval(v)) => {
            n.val.boolval = raw::Boolean {
                type_: raw::NodeTag::T_Boolean,
                boolval: v.boolval,
            };
        }
        Some(Val::Sval(v)) => {
            n.val.sval = raw::String {
                type_: raw::NodeTag::T_String,
                sval: a.cstring(&v.sval)?,
            };
        }
        Some(Val::Bsval(v)) => {
            n.val.bsval = raw::BitString {
                type_: raw::NodeTag::T_BitString,
                bsval: a.cstring(&v.bsval)?,
            };
        }
        None => return Err(ConvertError::Unsupported("A_Const without a value")),
    }
    Ok(n)
}

/// The statement list as a view, to check it before deparsing.
pub(crate) fn view_of(list: *mut raw::List, _arena: &Arena) -> view::List<'_> {
    // SAFETY: `list` is null or a List built in `_arena`, which outlives the
    // returned view (its lifetime is tied to the arena borrow); nothing
    // changes the nodes while the view lives. Its strings are copies of Rust
    // strings (UTF-8, no NUL: `Arena::cstring`), as the view's `cstr` needs.
    unsafe { view::List::from_raw(list) }
}

include!(concat!(env!("OUT_DIR"), "/to_c_generated.rs"));
