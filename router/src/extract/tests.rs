//! Unit tests of the extractors. (in progress)
