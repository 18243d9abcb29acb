//! Quoting for the SQL and replication commands a move builds from names:
//! identifiers, string literals, and libpq connection strings (the
//! subscription's connection to the source); a moving table's name.

/// A moving table: its schema and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub schema: String,
    pub name: String,
}

impl Table {
    pub fn sql(&self) -> String {
        qualified(&self.schema, &self.name)
    }
}

/// `name` as a quoted identifier: `"events_p7"`, `"we""ird"`.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `schema.name`, both quoted.
pub fn qualified(schema: &str, name: &str) -> String {
    format!("{}.{}", ident(schema), ident(name))
}

/// `text` as a string literal (`standard_conforming_strings`, on since
/// Postgres 9.1: only quotes are doubled). A NUL cannot be in a literal:
/// it is dropped.
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\0', "").replace('\'', "''"))
}

/// One `key=value` of a libpq connection string, the value quoted
/// (backslash and quote escaped).
pub fn conninfo_pair(key: &str, value: &str) -> String {
    format!(
        "{key}='{}'",
        value.replace('\\', "\\\\").replace('\'', "\\'")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let cases: &[(&str, String, &str)] = &[
            ("ident", ident("events_p7"), "\"events_p7\""),
            ("ident quote", ident("a\"b"), "\"a\"\"b\""),
            (
                "qualified",
                qualified("pgshard_moved", "t"),
                "\"pgshard_moved\".\"t\"",
            ),
            ("literal", literal("it's"), "'it''s'"),
            ("literal nul", literal("a\0b"), "'ab'"),
            ("literal backslash", literal("a\\b"), "'a\\b'"),
            (
                "conninfo",
                conninfo_pair("password", "p'w\\x"),
                "password='p\\'w\\\\x'",
            ),
        ];
        for (what, got, want) in cases {
            assert_eq!(got, want, "{what}");
        }
    }
}
