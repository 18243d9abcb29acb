//! [`ParseTree`]: a C parse tree and the memory context that owns it.

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::ptr::NonNull;

use crate::error::ParseError;
use crate::raw;
use crate::view;

/// A statement string parsed by Postgres's parser, kept as the C tree.
///
/// The tree lives in a memory context of its own, freed when this is dropped.
/// Read it through [`ParseTree::statements`] (the zero-copy view) or convert
/// it with [`crate::to_protobuf`].
pub struct ParseTree {
    context: NonNull<raw::MemoryContextData>,
    /// The `List` of `RawStmt`; never null (empty input is an error).
    stmts: NonNull<raw::List>,
}

// SAFETY: the tree is referenced by no thread-local state once `pgshard_parse`
// returns: its context has no parent (it is in no thread's context tree), and
// the glue switches CurrentMemoryContext back before returning. Deleting it
// touches only the context itself and the deleting thread's own (thread-local)
// aset.c freelist, which may keep the malloc'd block for reuse; the glue
// initialises libpg_query on that thread first, so the freelist is released at
// thread exit. It may therefore be dropped on any thread.
unsafe impl Send for ParseTree {}

// SAFETY: after parsing nothing writes to the tree. `&ParseTree` only allows
// reads: the view loads fields, and the deparser only reads the nodes it is
// given (postgres_deparse.c writes only its own state). Concurrent reads of
// immutable memory are safe.
unsafe impl Sync for ParseTree {}

impl ParseTree {
    /// Parse `sql` (one or more statements).
    pub fn parse(sql: &str) -> Result<ParseTree, ParseError> {
        if memchr_nul(sql) {
            return Err(ParseError::NulByte);
        }
        let result = with_c_string(sql, |sql| {
            // SAFETY: `sql` is NUL-terminated and valid for the call; the glue
            // catches every Postgres error and never longjmps out.
            unsafe { raw::pgshard_parse(sql, 0) }
        });
        if !result.error_message.is_null() {
            // SAFETY: a NUL-terminated string malloc'd by the glue; we free it
            // right after copying it.
            let message = unsafe { CStr::from_ptr(result.error_message) }
                .to_string_lossy()
                .into_owned();
            // SAFETY: malloc'd by the glue, freed once here.
            unsafe { raw::pgshard_free_string(result.error_message) };
            return Err(ParseError::Syntax {
                message,
                cursor: result.error_cursor.max(0) as usize,
            });
        }
        let Some(context) = NonNull::new(result.context) else {
            return Err(ParseError::Syntax {
                message: "parser returned no tree".to_owned(),
                cursor: 0,
            });
        };
        match NonNull::new(result.tree) {
            Some(stmts) => Ok(ParseTree { context, stmts }),
            None => {
                // SAFETY: the context the glue made for this parse, freed once.
                unsafe { raw::pgshard_free_tree(context.as_ptr()) };
                Err(ParseError::Empty)
            }
        }
    }

    /// The statements, as the parser's `RawStmt` nodes.
    pub fn statements(&self) -> impl Iterator<Item = view::RawStmt<'_>> + '_ {
        // raw_parser's result is a List of RawStmt and nothing else.
        self.statement_list()
            .iter()
            .filter_map(|stmt| match stmt?.kind() {
                view::NodeRef::RawStmt(stmt) => Some(stmt),
                _ => None,
            })
    }

    /// The raw statement list.
    pub fn statement_list(&self) -> view::List<'_> {
        // SAFETY: `stmts` points to the list raw_parser returned, which lives in
        // `context` until `self` is dropped; the borrow of self bounds 'a.
        unsafe { view::List::from_raw(self.stmts.as_ptr()) }
    }

    pub(crate) fn raw_statement_list(&self) -> *const raw::List {
        self.stmts.as_ptr()
    }
}

fn memchr_nul(sql: &str) -> bool {
    sql.as_bytes().contains(&0)
}

/// Run `f` on a NUL-terminated copy of `sql` kept in a per-thread buffer: the
/// parser copies its input anyway, so this saves an allocation per parse.
/// `sql` must not contain NUL (checked by the caller).
fn with_c_string<T>(sql: &str, f: impl FnOnce(*const c_char) -> T) -> T {
    thread_local! {
        static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => {
            buffer.clear();
            buffer.extend_from_slice(sql.as_bytes());
            buffer.push(0);
            let result = f(buffer.as_ptr().cast());
            // Keep a huge statement's buffer from staying around.
            if buffer.capacity() > 64 * 1024 {
                *buffer = Vec::new();
            }
            result
        }
        // Re-entered (cannot happen today): fall back to a fresh buffer.
        Err(_) => {
            let mut owned = Vec::with_capacity(sql.len() + 1);
            owned.extend_from_slice(sql.as_bytes());
            owned.push(0);
            f(owned.as_ptr().cast())
        }
    })
}

impl Drop for ParseTree {
    fn drop(&mut self) {
        // SAFETY: the context pgshard_parse created for this tree; deleted once.
        unsafe { raw::pgshard_free_tree(self.context.as_ptr()) };
    }
}

impl std::fmt::Debug for ParseTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParseTree")
            .field("statements", &self.statement_list().len())
            .finish()
    }
}
