//! parser-ffi: PostgreSQL's parser (libpg_query) behind a small safe API.
//!
//! Today this crate offers the protobuf baseline (`pg_query::parse`), which every
//! faster path is checked against. The direct FFI over the C parse tree lands
//! with its own issue; `unsafe` is allowed in this crate only.

pub mod error;

pub use error::ParseError;
pub use pg_query::protobuf;

/// Parse `sql` with libpg_query and decode the tree from protobuf.
///
/// This is the slow, well-trodden path (the C library encodes the tree to
/// protobuf and prost decodes it). It stays as the oracle for the direct paths.
pub fn parse_protobuf(sql: &str) -> Result<protobuf::ParseResult, ParseError> {
    if sql.contains('\0') {
        return Err(ParseError::NulByte);
    }
    pg_query::parse(sql, 0)
        .map(|result| result.protobuf)
        .map_err(ParseError::from_pg_query)
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
    }
}
