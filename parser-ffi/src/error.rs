//! The parser's error type: why a statement string could not be parsed,
//! converted or deparsed.

use crate::convert::ConvertError;

/// Why a statement string could not be parsed (or a tree converted/deparsed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The input contains a NUL byte; C strings cannot carry it.
    #[error("statement contains a NUL byte")]
    NulByte,
    /// The input holds no statement (empty, blanks, comments or `;` only).
    #[error("empty statement")]
    Empty,
    /// Postgres's parser rejected the statement.
    #[error("{message}")]
    Syntax {
        message: String,
        /// 1-based character position of the error in the statement, 0 if unknown.
        cursor: usize,
    },
    /// The C tree could not be converted to protobuf structs.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// libpg_query's deparser failed.
    #[error("deparse failed: {0}")]
    Deparse(String),
    /// The protobuf baseline could not decode what the C library encoded.
    #[error("protobuf parse tree could not be decoded: {0}")]
    Protobuf(String),
}
