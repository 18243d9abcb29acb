//! [`ParseTree`]: a C parse tree and the memory context that owns it.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr};
use std::marker::PhantomData;
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
        // SAFETY: the glue's parse entry point: `sql` is NUL-terminated and
        // valid for the call; the glue catches every Postgres error and never
        // longjmps out.
        let (context, stmts) = parse_with(sql, |sql| unsafe { raw::pgshard_parse(sql, 0) })?;
        match stmts {
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
        view::raw_statements(self.statement_list())
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

/// Run one of the glue's parse entry points (`parse`) on `sql` and read its
/// result: the tree's context and statement list (`None` for empty input),
/// or the error (whose message the glue malloc'd; freed here).
fn parse_with(
    sql: &str,
    parse: impl FnOnce(*const c_char) -> raw::PgshardParseResult,
) -> Result<(NonNull<raw::MemoryContextData>, Option<NonNull<raw::List>>), ParseError> {
    let result = with_c_string(sql, parse)?;
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
    Ok((context, NonNull::new(result.tree)))
}

/// Run `f` on a NUL-terminated copy of `sql` kept in a per-thread buffer: the
/// parser copies its input anyway, so this saves an allocation per parse.
/// Refuses `sql` containing NUL, found by the C `strlen` of the copy (which
/// stops at the first NUL) rather than a byte loop over the text.
fn with_c_string<T>(sql: &str, f: impl FnOnce(*const c_char) -> T) -> Result<T, ParseError> {
    thread_local! {
        static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    let run = |buffer: &mut Vec<u8>| {
        buffer.clear();
        buffer.extend_from_slice(sql.as_bytes());
        buffer.push(0);
        // SAFETY: the buffer ends with the NUL pushed above.
        let c_sql = unsafe { CStr::from_ptr(buffer.as_ptr().cast()) };
        if c_sql.count_bytes() != sql.len() {
            return Err(ParseError::NulByte);
        }
        Ok(f(c_sql.as_ptr()))
    };
    BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => {
            let result = run(&mut buffer);
            // Keep a huge statement's buffer from staying around.
            if buffer.capacity() > 64 * 1024 {
                *buffer = Vec::new();
            }
            result
        }
        // Re-entered (cannot happen today): fall back to a fresh buffer.
        Err(_) => run(&mut Vec::with_capacity(sql.len() + 1)),
    })
}

/// A tree parsed into this thread's scratch context (`pgshard_parse_scratch`):
/// for `parse_raw`, which converts it and drops it at once. The context is
/// kept and reset rather than created and deleted per parse. Not `Send`: the
/// context is this thread's, and the next scratch parse on this thread would
/// reuse it, so at most one lives per thread (`SCRATCH_IN_USE`).
pub(crate) struct ScratchTree {
    stmts: NonNull<raw::List>,
    _this_thread: PhantomData<*const ()>,
}

thread_local! {
    static SCRATCH_IN_USE: Cell<bool> = const { Cell::new(false) };
}

/// A parse for a tree read once and dropped on this thread: the scratch
/// context when it is free, a tree of its own otherwise.
pub(crate) enum ShortLived {
    Scratch(ScratchTree),
    Owned(ParseTree),
}

impl ShortLived {
    pub(crate) fn parse(sql: &str) -> Result<ShortLived, ParseError> {
        if SCRATCH_IN_USE.with(|in_use| in_use.replace(true)) {
            return ParseTree::parse(sql).map(ShortLived::Owned);
        }
        // SAFETY: the glue's scratch entry point: `sql` is NUL-terminated and
        // valid for the call, errors are caught in C; no other scratch tree
        // lives on this thread (SCRATCH_IN_USE was false), so resetting the
        // context at the next parse frees nothing still in use.
        let parsed = parse_with(sql, |sql| unsafe { raw::pgshard_parse_scratch(sql, 0) });
        match parsed {
            Ok((_, Some(stmts))) => Ok(ShortLived::Scratch(ScratchTree {
                stmts,
                _this_thread: PhantomData,
            })),
            Ok((_, None)) => {
                release_scratch();
                Err(ParseError::Empty)
            }
            Err(err) => {
                release_scratch();
                Err(err)
            }
        }
    }

    /// The raw statement list.
    pub(crate) fn statement_list(&self) -> view::List<'_> {
        match self {
            // SAFETY: `stmts` is the list raw_parser returned into the scratch
            // context, which is reset only when `self` is dropped.
            ShortLived::Scratch(tree) => unsafe { view::List::from_raw(tree.stmts.as_ptr()) },
            ShortLived::Owned(tree) => tree.statement_list(),
        }
    }
}

/// Reset the scratch context and mark it free.
fn release_scratch() {
    // SAFETY: no scratch tree is alive on this thread any more (called when
    // one is dropped, or when the parse made none).
    unsafe { raw::pgshard_reset_scratch() };
    SCRATCH_IN_USE.with(|in_use| in_use.set(false));
}

impl Drop for ScratchTree {
    fn drop(&mut self) {
        release_scratch();
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{parse_protobuf, parse_raw};

    fn first_table(tree: &ShortLived) -> Option<String> {
        let stmt = view::raw_statements(tree.statement_list()).next()?;
        let mut name = None;
        view::walk(stmt.stmt()?, |kind| {
            if let view::NodeRef::RangeVar(rv) = kind {
                name = rv.relname().map(str::to_owned);
                return view::Walk::Stop;
            }
            view::Walk::Continue
        });
        name
    }

    #[test]
    fn a_second_short_lived_parse_on_the_thread_gets_a_tree_of_its_own() {
        let outer = ShortLived::parse("SELECT * FROM outer_table").unwrap();
        assert!(matches!(outer, ShortLived::Scratch(_)));
        let inner = ShortLived::parse("SELECT * FROM inner_table").unwrap();
        assert!(matches!(inner, ShortLived::Owned(_)));
        // The inner parse did not reuse (or reset) the outer tree's memory.
        assert_eq!(first_table(&outer).as_deref(), Some("outer_table"));
        assert_eq!(first_table(&inner).as_deref(), Some("inner_table"));
        drop(inner);
        drop(outer);
        let again = ShortLived::parse("SELECT * FROM again").unwrap();
        assert!(matches!(again, ShortLived::Scratch(_)));
    }

    #[test]
    fn parse_raw_reuses_the_scratch_context_after_errors_and_large_statements() {
        let big = format!(
            "SELECT {}",
            (0..20_000)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let sql = "SELECT a FROM t WHERE b = 'x'";
        let check = move || {
            for _ in 0..3 {
                assert!(matches!(
                    parse_raw("SELEC 1"),
                    Err(ParseError::Syntax { .. })
                ));
                assert_eq!(parse_raw("").unwrap_err(), ParseError::Empty);
                assert_eq!(parse_raw("SELECT 1\0").unwrap_err(), ParseError::NulByte);
                assert_eq!(parse_raw(sql).unwrap(), parse_protobuf(sql).unwrap());
                // Larger than the context's first block: more blocks, freed
                // at the reset.
                assert_eq!(parse_raw(&big).unwrap(), parse_protobuf(&big).unwrap());
            }
        };
        let other = std::thread::spawn(check.clone());
        check();
        other.join().unwrap();
    }
}
