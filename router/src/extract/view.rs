//! Summaries from parser-ffi's zero-copy view. (in progress)

use super::ExtractError;
use crate::summary::Summary;

pub fn summarize(_tree: &parser_ffi::ParseTree) -> Result<Summary, ExtractError> {
    Ok(Summary::default())
}
