//! Functions of the statement text that libpg_query computes in C: the
//! protobuf parse (the baseline), and, without any protobuf, fingerprint,
//! normalize and the scanner's token stream.

use std::ffi::{CStr, CString};

use crate::error::ParseError;
use crate::raw;

fn c_string(sql: &str) -> Result<CString, ParseError> {
    CString::new(sql).map_err(|_| ParseError::NulByte)
}

/// # Safety
/// `error` is null or a valid PgQueryError of a result not yet freed.
unsafe fn error(error: *const raw::PgQueryError) -> Option<ParseError> {
    // SAFETY: per the caller.
    let error = unsafe { error.as_ref() }?;
    let message = if error.message.is_null() {
        "unknown error".to_owned()
    } else {
        // SAFETY: libpg_query's error messages are NUL-terminated strings.
        unsafe { CStr::from_ptr(error.message) }
            .to_string_lossy()
            .into_owned()
    };
    Some(ParseError::Syntax {
        message,
        cursor: error.cursorpos.max(0) as usize,
    })
}

/// libpg_query's protobuf parse, decoded with prost.
pub(crate) fn parse_protobuf(sql: &str) -> Result<pg_query::protobuf::ParseResult, ParseError> {
    use prost::Message;
    let sql = c_string(sql)?;
    // SAFETY: NUL-terminated input; libpg_query catches its own errors.
    let result = unsafe { raw::pg_query_parse_protobuf(sql.as_ptr()) };
    // SAFETY: the result's pointers, before the result is freed.
    let outcome = match unsafe { error(result.error) } {
        Some(err) => Err(err),
        None => {
            let tree = result.parse_tree;
            let bytes: &[u8] = if tree.data.is_null() || tree.len == 0 {
                &[]
            } else {
                // SAFETY: `data` holds `len` bytes owned by the result.
                unsafe { std::slice::from_raw_parts(tree.data.cast::<u8>(), tree.len) }
            };
            pg_query::protobuf::ParseResult::decode(bytes)
                .map_err(|err| ParseError::Protobuf(err.to_string()))
        }
    };
    // SAFETY: frees this result once.
    unsafe { raw::pg_query_free_protobuf_parse_result(result) };
    outcome
}

/// libpg_query's fingerprint: equal for statements that differ only in
/// literal values, whitespace and comments (e.g. for cache keys).
pub fn fingerprint(sql: &str) -> Result<u64, ParseError> {
    let sql = c_string(sql)?;
    // SAFETY: NUL-terminated input; libpg_query catches its own errors.
    let result = unsafe { raw::pg_query_fingerprint(sql.as_ptr()) };
    // SAFETY: the result's error pointer, before the result is freed.
    let err = unsafe { error(result.error) };
    let value = result.fingerprint;
    // SAFETY: frees this result once.
    unsafe { raw::pg_query_free_fingerprint_result(result) };
    match err {
        Some(err) => Err(err),
        None => Ok(value),
    }
}

/// libpg_query's JSON rendering of the PL/pgSQL functions of a `CREATE
/// FUNCTION ... LANGUAGE plpgsql` statement, as text. Returned unparsed: the
/// rendering is not always valid JSON (trigger functions' record fields,
/// in libpg_query 17-6.1), and a reader that scans it for the embedded
/// statements' texts needs no more than their `PLpgSQL_expr` objects.
pub fn parse_plpgsql(sql: &str) -> Result<String, ParseError> {
    let sql = c_string(sql)?;
    // SAFETY: NUL-terminated input; libpg_query catches its own errors.
    let result = unsafe { raw::pg_query_parse_plpgsql(sql.as_ptr()) };
    // SAFETY: the result's pointers, before the result is freed.
    let outcome = match unsafe { error(result.error) } {
        Some(err) => Err(err),
        None if result.plpgsql_funcs.is_null() => Ok(String::new()),
        // SAFETY: a NUL-terminated string owned by the result.
        None => Ok(unsafe { CStr::from_ptr(result.plpgsql_funcs) }
            .to_string_lossy()
            .into_owned()),
    };
    // SAFETY: frees this result once.
    unsafe { raw::pg_query_free_plpgsql_parse_result(result) };
    outcome
}

/// The statement with literal constants replaced by `$n` placeholders.
pub fn normalize(sql: &str) -> Result<String, ParseError> {
    let sql = c_string(sql)?;
    // SAFETY: NUL-terminated input; libpg_query catches its own errors.
    let result = unsafe { raw::pg_query_normalize(sql.as_ptr()) };
    // SAFETY: the result's pointers, before the result is freed.
    let outcome = match unsafe { error(result.error) } {
        Some(err) => Err(err),
        None if result.normalized_query.is_null() => Err(ParseError::Empty),
        // SAFETY: a NUL-terminated string owned by the result.
        None => Ok(unsafe { CStr::from_ptr(result.normalized_query) }
            .to_string_lossy()
            .into_owned()),
    };
    // SAFETY: frees this result once.
    unsafe { raw::pg_query_free_normalize_result(result) };
    outcome
}

/// One token of the scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// Byte offsets of the token in the input.
    pub start: usize,
    pub end: usize,
    /// The grammar's token number (`PgQueryToken`: same numbering as
    /// pg_query's protobuf `Token` enum).
    pub token: i32,
    /// The keyword category: 0 none, 1 unreserved, 2 column name, 3 type or
    /// function name, 4 reserved (pg_query's `KeywordKind`).
    pub keyword_kind: i32,
}

/// The scanner's tokens for `sql`, comments included.
pub fn scan(sql: &str) -> Result<Vec<Token>, ParseError> {
    let c_sql = c_string(sql)?;
    // SAFETY: NUL-terminated input; libpg_query catches its own errors.
    let result = unsafe { raw::pg_query_scan_tokens(c_sql.as_ptr()) };
    // SAFETY: the result's pointers, before the result is freed.
    let outcome = match unsafe { error(result.error) } {
        Some(err) => Err(err),
        None if result.tokens.is_null() || result.n_tokens <= 0 => Ok(Vec::new()),
        None => {
            // SAFETY: `tokens` holds `n_tokens` initialised tokens.
            let tokens =
                unsafe { std::slice::from_raw_parts(result.tokens, result.n_tokens as usize) };
            Ok(tokens
                .iter()
                .map(|t| Token {
                    start: t.start.max(0) as usize,
                    end: t.end.max(0) as usize,
                    token: t.token as i32,
                    keyword_kind: t.keyword_kind as i32,
                })
                .collect())
        }
    };
    // SAFETY: frees this result once.
    unsafe { raw::pg_query_free_scan_tokens_result(result) };
    outcome
}
