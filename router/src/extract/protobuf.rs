//! Summaries from pg_query's protobuf structs. (in progress)

use super::ExtractError;
use crate::summary::Summary;

pub fn summarize(_tree: &parser_ffi::protobuf::ParseResult) -> Result<Summary, ExtractError> {
    Ok(Summary::default())
}
