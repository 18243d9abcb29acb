//! The parser's error type: what went wrong parsing one statement string.

/// Why a statement string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The input contains a NUL byte; C strings cannot carry it.
    #[error("statement contains a NUL byte")]
    NulByte,
    /// Postgres's parser rejected the statement.
    #[error("{message}")]
    Syntax {
        message: String,
        /// 1-based character position of the error in the statement, 0 if unknown.
        cursor: usize,
    },
    /// The protobuf baseline could not decode what the C library encoded.
    #[error("protobuf parse tree could not be decoded: {0}")]
    Protobuf(String),
}

impl ParseError {
    pub(crate) fn from_pg_query(err: pg_query::Error) -> Self {
        match err {
            pg_query::Error::Parse(message) => ParseError::Syntax { message, cursor: 0 },
            other => ParseError::Protobuf(other.to_string()),
        }
    }
}
