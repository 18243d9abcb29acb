//! parser-ffi: PostgreSQL's parser (libpg_query) through direct FFI, behind a
//! small safe API. The only crate of the workspace with `unsafe`.
//!
//! - [`ParseTree::parse`] keeps the C tree; [`view`] reads it in place (what the
//!   router walks).
//! - [`parse_raw`] builds pg_query's protobuf structs straight from the C tree;
//!   [`parse_protobuf`] is pg_query's own protobuf round trip, the baseline and
//!   oracle.
//! - [`deparse`] turns a tree back into SQL with the C deparser, and
//!   [`deparse_protobuf`] does the same for protobuf structs (rebuilt as C
//!   nodes in Rust, with no protobuf encoding);
//!   [`fingerprint`], [`normalize`] and [`scan`] work on the text in C.
//!
//! libpg_query arrives through the `pg_query` crate (pinned exactly: we rely on
//! internals of that release). Postgres errors are `longjmp`s; every call that
//! can raise one goes through C that catches it (`src/glue.c` or libpg_query's
//! public entry points), so none crosses a Rust frame.

mod allocator;
mod convert;
mod deparse;
pub mod error;
mod raw;
mod text;
mod to_c;
mod tree;
pub mod view;

pub use allocator::Allocator;
pub use convert::{ConvertError, MAX_DEPTH};
pub use deparse::{deparse, deparse_protobuf};
pub use error::ParseError;
pub use pg_query::protobuf;
pub use text::{fingerprint, normalize, parse_plpgsql, scan, Token};
pub use tree::ParseTree;

/// Parse `sql` the protobuf way: libpg_query encodes the C tree to protobuf in
/// C, prost decodes it. This is the baseline and the oracle for [`parse_raw`].
/// (`pg_query::parse` does this too, and then walks the tree for its table and
/// function lists; that walk is left out here, so the baseline is the protobuf
/// round trip alone.)
pub fn parse_protobuf(sql: &str) -> Result<protobuf::ParseResult, ParseError> {
    text::parse_protobuf(sql)
}

/// Parse `sql` into the same `ParseResult` as [`parse_protobuf`], built directly
/// from the C tree.
/// The C tree lives only during the conversion, in a memory context this
/// thread keeps and resets rather than one made and deleted per parse.
pub fn parse_raw(sql: &str) -> Result<protobuf::ParseResult, ParseError> {
    let tree = tree::ShortLived::parse(sql)?;
    Ok(convert::parse_result(tree.statement_list())?)
}

/// Convert a parsed tree into pg_query's protobuf structs.
pub fn to_protobuf(tree: &ParseTree) -> Result<protobuf::ParseResult, ConvertError> {
    convert::parse_result(tree.statement_list())
}

/// Deparse pg_query protobuf structs with pg_query's own path (encode to
/// protobuf, decode in C, deparse): the baseline for [`deparse_protobuf`].
pub fn deparse_pg_query(tree: &protobuf::ParseResult) -> Result<String, ParseError> {
    pg_query::deparse(tree, Default::default()).map_err(|err| ParseError::Deparse(err.to_string()))
}

/// For benches: libpg_query's raw parse alone, exactly as its own entry points
/// run it (memory context, stack check, raw_parser), without touching the tree.
/// Returns the number of statements, or `None` on a parse error.
#[doc(hidden)]
pub fn bench_floor_raw_parse(sql: &std::ffi::CStr) -> Option<usize> {
    // SAFETY: NUL-terminated input; libpg_query catches its own errors.
    let count = unsafe { raw::pgshard_floor_raw_parse(sql.as_ptr()) };
    usize::try_from(count).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_select_into_one_statement() {
        let tree = parse_protobuf("SELECT 1; SELECT 2").unwrap();
        assert_eq!(tree.stmts.len(), 2);
    }

    #[test]
    fn syntax_error_is_an_error_with_a_message() {
        let err = parse_protobuf("SELEC 1").unwrap_err();
        assert!(err.to_string().contains("syntax error"), "{err}");
    }

    #[test]
    fn nul_byte_is_refused() {
        assert_eq!(
            parse_protobuf("SELECT 1\0").unwrap_err(),
            ParseError::NulByte
        );
        assert_eq!(parse_raw("SELECT 1\0").unwrap_err(), ParseError::NulByte);
    }

    #[test]
    fn raw_equals_protobuf_on_a_select() {
        let sql = "SELECT a, b AS c FROM t JOIN u USING (id) WHERE a = $1 AND b IN (1, 2.5, 'x') ORDER BY 1 LIMIT 10";
        assert_eq!(parse_raw(sql).unwrap(), parse_protobuf(sql).unwrap());
    }

    #[test]
    fn syntax_error_has_cursor() {
        let err = parse_raw("SELECT * FROM t WHERE").unwrap_err();
        match err {
            ParseError::Syntax { message, cursor } => {
                assert!(
                    message.contains("syntax error at end of input"),
                    "{message}"
                );
                assert_eq!(cursor, 22);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_input_is_an_error() {
        for sql in ["", "   ", "-- only a comment", ";", "/* c */ ;"] {
            assert_eq!(
                ParseTree::parse(sql).unwrap_err(),
                ParseError::Empty,
                "{sql:?}"
            );
        }
    }

    #[test]
    fn deparse_round_trips() {
        let tree =
            ParseTree::parse("select a from t where b = 1; insert into t values (1)").unwrap();
        assert_eq!(
            deparse(&tree).unwrap(),
            "SELECT a FROM t WHERE b = 1; INSERT INTO t VALUES (1)"
        );
    }

    #[test]
    fn fingerprint_ignores_literals_and_normalize_replaces_them() {
        assert_eq!(
            fingerprint("SELECT * FROM t WHERE id = 1").unwrap(),
            fingerprint("select *  from t where id = 42").unwrap()
        );
        assert_ne!(
            fingerprint("SELECT * FROM t WHERE id = 1").unwrap(),
            fingerprint("SELECT * FROM u WHERE id = 1").unwrap()
        );
        assert_eq!(
            normalize("SELECT * FROM t WHERE id = 1 AND name = 'x'").unwrap(),
            "SELECT * FROM t WHERE id = $1 AND name = $2"
        );
    }

    #[test]
    fn scan_gives_tokens_with_offsets() {
        let sql = "SELECT id FROM t /* c */ WHERE id = 42";
        let tokens = scan(sql).unwrap();
        let texts: Vec<&str> = tokens.iter().map(|t| &sql[t.start..t.end]).collect();
        assert_eq!(
            texts,
            ["SELECT", "id", "FROM", "t", "/* c */", "WHERE", "id", "=", "42"]
        );
        assert_eq!(tokens[0].keyword_kind, 4); // SELECT is reserved
        assert_eq!(tokens[1].keyword_kind, 0);
    }
}
