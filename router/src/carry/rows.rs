//! Carried rows (rules 5-7 of [`super`]): a subquery whose every row is
//! carried into the write (a FROM/USING subquery, a CTE, a row-valued
//! subquery), the SELECT that runs it on the coordinator and the typed
//! constant SELECT that replaces it.

use parser_ffi::protobuf as pb;

use super::identifier;
use super::NotCarried;

/// The rows of a carried subquery: its columns' names and Postgres's own
/// names of their types, then each row's values as text (`None`: NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    pub names: Vec<String>,
    pub types: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// The SELECT that runs `subquery` (of `columns` columns) on the
/// coordinator, at most `max_rows + 1` rows of it: a first column that is
/// true for each row (NULL, on a row of NULLs, when there is none), the
/// type name of each column (known with no row too: the row of NULLs is a
/// LEFT JOIN's), then the subquery's own columns, under its own names.
pub(super) fn sql(subquery: &str, columns: usize, max_rows: u64) -> String {
    let names: Vec<String> = (1..=columns).map(|i| format!("pgshard_c{i}")).collect();
    let types: Vec<String> = names
        .iter()
        .map(|c| format!("pg_catalog.format_type(pg_catalog.pg_typeof(pgshard_p.{c}), -1)"))
        .collect();
    format!(
        "SELECT pgshard_p.pgshard_present, {types}, pgshard_r.* \
         FROM (SELECT) AS pgshard_one LEFT JOIN (({subquery}) AS pgshard_r \
         CROSS JOIN LATERAL (SELECT true, pgshard_r.*) AS pgshard_p(pgshard_present, {names})) \
         ON true LIMIT {limit}",
        types = types.join(", "),
        names = names.join(", "),
        limit = max_rows.saturating_add(1),
    )
}

/// The constant SELECT of `rows` (rule 6): `SELECT * FROM (VALUES
/// ('v'::type, ...), ...) AS pgshard_values("name", ...)`, every value
/// typed; with no row, `SELECT NULL::type AS "name", ... WHERE false`.
pub(super) fn constant(rows: &Rows, subquery: &str) -> Result<pb::Node, NotCarried> {
    let columns = rows.types.len();
    if rows.names.len() != columns || rows.rows.iter().any(|row| row.len() != columns) {
        return Err(NotCarried::Mismatch);
    }
    if rows.types.iter().any(|t| t == "record" || t == "record[]") {
        return Err(NotCarried::Record(subquery.to_owned()));
    }
    let value = |text: &Option<String>, type_name: &str| match text {
        Some(text) => format!("{}::{type_name}", super::literal(text)),
        None => format!("NULL::{type_name}"),
    };
    let names: Vec<String> = rows.names.iter().map(|n| identifier(n)).collect();
    let sql = if rows.rows.is_empty() {
        let targets: Vec<String> = rows
            .types
            .iter()
            .zip(&names)
            .map(|(type_name, name)| format!("NULL::{type_name} AS {name}"))
            .collect();
        format!("SELECT {} WHERE false", targets.join(", "))
    } else {
        let values: Vec<String> = rows
            .rows
            .iter()
            .map(|row| {
                let row: Vec<String> = row
                    .iter()
                    .zip(&rows.types)
                    .map(|(text, type_name)| value(text, type_name))
                    .collect();
                format!("({})", row.join(", "))
            })
            .collect();
        format!(
            "SELECT * FROM (VALUES {}) AS pgshard_values({})",
            values.join(", "),
            names.join(", ")
        )
    };
    // A type name is Postgres's own (`format_type`); anything that makes
    // the text more than one SELECT is not taken.
    super::parsed_select(&sql)
}

/// The bytes `rows` adds to the statement, about: each value's text and
/// its type name.
pub fn bytes(rows: &Rows) -> u64 {
    let mut total = rows.names.iter().map(String::len).sum::<usize>();
    for row in &rows.rows {
        for (text, type_name) in row.iter().zip(&rows.types) {
            total += text.as_ref().map_or(4, String::len) + type_name.len() + 4;
        }
    }
    u64::try_from(total).unwrap_or(u64::MAX)
}
