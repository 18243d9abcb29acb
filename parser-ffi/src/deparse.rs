//! Deparse: a C parse tree back to SQL through libpg_query's C deparser.

use std::ffi::CStr;

use pg_query::protobuf;

use crate::error::ParseError;
use crate::raw;
use crate::to_c;
use crate::view;
use crate::ParseTree;

/// SQL for every statement of `tree`, joined by `"; "` (as `pg_query::deparse`).
pub fn deparse(tree: &ParseTree) -> Result<String, ParseError> {
    refuse_unsupported(tree.statement_list())?;
    deparse_list(tree.raw_statement_list())
}

/// Deparse pg_query's protobuf structs: they are rebuilt as C nodes in an arena
/// (no protobuf encoding, no decoding in C) and handed to the C deparser.
pub fn deparse_protobuf(tree: &protobuf::ParseResult) -> Result<String, ParseError> {
    to_c::Arena::with(|arena| {
        let stmts = to_c::statements(arena, tree)?;
        refuse_unsupported(to_c::view_of(stmts, arena))?;
        deparse_list(stmts)
    })
}

fn deparse_list(stmts: *const raw::List) -> Result<String, ParseError> {
    // SAFETY: `stmts` is a valid List of RawStmt (or NULL) kept alive by the
    // caller for the call; the glue only reads it and catches every Postgres
    // error.
    let result = unsafe { raw::pgshard_deparse(stmts) };
    // SAFETY: each pointer is null or a NUL-terminated malloc'd string that
    // we own; `take` copies and frees it once.
    let (sql, error) = unsafe { (take(result.sql), take(result.error_message)) };
    match (sql, error) {
        (Some(sql), None) => Ok(sql),
        (_, Some(error)) => Err(ParseError::Deparse(error)),
        (None, None) => Err(ParseError::Deparse("deparser returned nothing".to_owned())),
    }
}

/// Statements libpg_query's deparser cannot write: it reaches an `Assert(false)`
/// (an abort in builds with assertions, wrong SQL without). GRANT and REVOKE
/// stand at the top level or inside CREATE SCHEMA, so only those are looked at.
fn refuse_unsupported(stmts: view::List<'_>) -> Result<(), ParseError> {
    fn check(node: Option<view::Node<'_>>) -> Result<(), ParseError> {
        match node.map(view::Node::kind) {
            Some(view::NodeRef::GrantStmt(grant))
                if grant.objtype() == protobuf::ObjectType::ObjectParameterAcl =>
            {
                Err(ParseError::Deparse(
                    "GRANT/REVOKE ON PARAMETER is not supported by the deparser".to_owned(),
                ))
            }
            Some(view::NodeRef::CreateSchemaStmt(schema)) => {
                schema.schema_elts().iter().try_for_each(check)
            }
            _ => Ok(()),
        }
    }
    stmts
        .iter()
        .flatten()
        .try_for_each(|stmt| match stmt.kind() {
            view::NodeRef::RawStmt(stmt) => check(stmt.stmt()),
            _ => Ok(()),
        })
}

/// # Safety
/// `ptr` is null or a NUL-terminated string from malloc that the caller owns.
pub(crate) unsafe fn take(ptr: *mut std::ffi::c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated (caller's contract).
    let text = unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: malloc'd and owned by us; freed exactly once here.
    unsafe { raw::pgshard_free_string(ptr) };
    Some(text)
}
