//! Carried subqueries (issue 34): a write (UPDATE, DELETE, INSERT ...
//! VALUES) whose subqueries read across shards, run as Citus's recursive
//! planning does. Pure: it plans from the statement's text and the
//! sharding config; the proxy runs the plan (`proxy/src/session/carry.rs`).
//!
//! Rules:
//! 1. Only one UPDATE, DELETE or INSERT ... VALUES, whose WITH (if any) is
//!    read-only (a data-modifying WITH is refused here). The places looked
//!    at (`carry/walk.rs`), in this order: the WITH's CTEs, then the WHERE,
//!    the SET values (a multiple-column SET's subquery once), the FROM
//!    (UPDATE) or USING (DELETE) items through joins, the VALUES rows,
//!    their subqueries reached through the expression nodes
//!    [`walk::visit`] knows; any other place keeps its subquery, and
//!    routing decides on it as before.
//! 2. A subquery that reads a table the coordinator would gather
//!    ([`crate::gather::plan`] of the SELECT that runs it alone finds a
//!    gather) is *carried*: it runs first, alone, on the coordinator path
//!    ([`Carry::sql`], after the write's WITH clause, so that it sees the
//!    CTEs it names), and its result replaces it in the write
//!    ([`CarryPlan::write_sql`]). A scalar subquery as `'text'::type`
//!    (`NULL::type` for no row; more rows fail as in Postgres, `21000`),
//!    EXISTS as `true`/`false`, a one-column IN and `op ANY`/`op ALL` as
//!    `x op ANY/ALL ('{...}'::type[])`, whose three-valued logic is the
//!    subquery's (a NULL in the set makes `NOT IN` no row; an empty set
//!    makes `IN` false, `NOT IN` true). The type is Postgres's own name for
//!    it (`format_type(pg_typeof(v), -1)`: `bpchar`, not `character`, so no
//!    length is imposed).
//! 3. The subquery runs alone, so one that refers to the write's columns
//!    (correlated, a LATERAL FROM subquery naming an item before it) fails
//!    there with Postgres's error for the unknown name (`42703`/`42P01`),
//!    which the proxy turns into a refusal: names that resolve inside the
//!    subquery resolve alike alone, so it is exact or an error. A subquery
//!    with parameters (`$n`) is carried only when the write is bound
//!    ([`plan_bound`], the extended protocol): the proxy runs it with the
//!    Bind's values and the statement's parameter types, and the write
//!    keeps its own `$n`; in a simple query it is refused.
//! 4. A scalar subquery of record type, or a one-column IN over a subquery
//!    of arrays, is refused (`Value` checks), a constant of them would not
//!    read back.
//! 5. [`Kind::Rows`]: a FROM/USING subquery, a read-only CTE, and a
//!    row-valued subquery (`(a, b) IN (SELECT x, y ...)`, `(a, b) = (SELECT
//!    x, y ...)` in WHERE, `SET (a, b) = (SELECT x, y ...)`) carry all their
//!    rows. The SELECT run first (`carry/rows.rs`) returns, per row, the
//!    column types' names and the values as text under the subquery's own
//!    column names, and one row of NULLs typed alike when it has none, so an
//!    empty result types too; at most `max_rows + 1` rows (the proxy
//!    refuses more, 54000). Its columns are counted from its text
//!    ([`walk::columns`]): a `*` in its target list is refused (list the
//!    columns). A CTE runs as `WITH <the write's WITH> SELECT * FROM name`.
//!    A CTE with SEARCH or CYCLE is refused; `ARRAY(SELECT ...)` (whose
//!    rows' order counts) is not carried.
//! 6. The rows replace the subquery's SELECT, the FROM item's alias and the
//!    CTE's name and column list kept: `SELECT * FROM (VALUES ('v'::type,
//!    ...), ...) AS pgshard_values("name", ...)`, every value typed (a
//!    NULL as `NULL::type`), or with no row `SELECT NULL::type AS "name",
//!    ... WHERE false`. The write's semantics are then the subquery's rows'
//!    (a row comparison with more than one row fails there, `21000`, as in
//!    Postgres); a column of record type is refused.
//! 7. A plain table in FROM/USING that is not co-located with the target
//!    is not carried (its columns cannot be told from the text): the
//!    routing's refusal stands; written as `(SELECT cols FROM t) AS t` it
//!    is carried by rule 5.
//! 8. A write the router places (its FROM items joined on co-located
//!    keys) may still have a FROM/USING subquery or WITH query that
//!    aggregates, deduplicates, limits or combines rows across shards
//!    (`FROM (SELECT id FROM users ORDER BY score LIMIT 3) s WHERE
//!    users.id = s.id`), which each shard would compute over its own rows:
//!    [`cuts_rows`] says so (the check a cross-shard SELECT makes there,
//!    `merge::cuts_rows`), and the proxy carries it, or refuses the write.

mod replace;
mod rows;
mod site;
mod walk;

pub use rows::{bytes as rows_bytes, Rows};

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};
use parser_ffi::ParseError;

use crate::gather::{self, GatherOptions};
use crate::sharding::Sharding;

/// What a carried subquery is replaced by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A scalar subquery: its one value.
    Scalar,
    /// `IN`, `op ANY`, `op ALL` of one column: an array of its values.
    Array,
    /// `EXISTS`: true or false.
    Exists,
    /// A FROM/USING subquery, a CTE, a row-valued subquery: its rows
    /// (rules 5 and 6).
    Rows,
}

/// One subquery to run before the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carry {
    pub kind: Kind,
    /// The SELECT to run: for [`Kind::Rows`], rows as [`rows`] says; else
    /// one row of three columns, the type's name, the value as text (NULL
    /// for NULL) and, for [`Kind::Array`], its number of dimensions.
    pub sql: String,
    /// The subquery as written (deparsed), for messages.
    pub subquery: String,
    /// For [`Kind::Rows`], its number of columns (0 for the other kinds).
    pub columns: usize,
    /// Which place of the statement it is, counted in [`walk`]'s order.
    position: usize,
}

/// The result of a one-row [`Carry`]: the first row of its SELECT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    pub type_name: String,
    pub text: Option<String>,
    pub dimensions: Option<String>,
}

/// The result of a [`Carry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Value(Value),
    Rows(Rows),
}

/// A write and the subqueries it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct CarryPlan {
    tree: pb::ParseResult,
    pub carried: Vec<Carry>,
}

/// Why a write's subqueries are not carried.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum NotCarried {
    #[error("{0}")]
    Parse(ParseError),
    #[error("only one UPDATE, DELETE or INSERT ... VALUES without a data-modifying WITH has its subqueries run first")]
    NotWrite,
    #[error("no subquery of its WITH, WHERE, SET, FROM/USING or VALUES that reads across shards can be run first")]
    Nothing,
    #[error("its subquery {0} has parameters, which a subquery run first takes only in the extended protocol (a bound statement)")]
    Parameters(String),
    #[error("its subquery {subquery} cannot be run on the coordinator: {why}")]
    NotGathered {
        subquery: String,
        why: gather::NotGathered,
    },
    #[error("its subquery {0} returns a record, which cannot be carried into the statement as a constant")]
    Record(String),
    #[error(
        "its subquery {0} returns arrays, whose IN/ANY/ALL cannot be carried as one array constant"
    )]
    ArrayOfArrays(String),
    #[error("its subquery {0} selects *, whose columns pgshard cannot count to carry its rows: list the columns it returns")]
    Star(String),
    #[error("its WITH query {0} has SEARCH or CYCLE, which pgshard does not carry")]
    SearchCycle(String),
    #[error("the subquery results did not match the plan")]
    Mismatch,
    #[error("the statement could not be rewritten: {0}")]
    Deparse(ParseError),
}

/// Plan the subqueries `sql` (one write, a simple query) carries;
/// `coordinator` is the database that would run them, `max_rows` the most
/// rows a carried subquery may have (its SELECT reads one more). A
/// subquery with parameters is refused.
pub fn plan(
    sql: &str,
    sharding: &Sharding,
    coordinator: usize,
    max_rows: u64,
) -> Result<CarryPlan, NotCarried> {
    plan_with(sql, sharding, (coordinator, max_rows), false)
}

/// [`plan`] of a bound statement (the extended protocol): its carried
/// subqueries may take its parameters, run with the Bind's values (rule 3).
pub fn plan_bound(
    sql: &str,
    sharding: &Sharding,
    coordinator: usize,
    max_rows: u64,
) -> Result<CarryPlan, NotCarried> {
    plan_with(sql, sharding, (coordinator, max_rows), true)
}

fn plan_with(
    sql: &str,
    sharding: &Sharding,
    (coordinator, max_rows): (usize, u64),
    bound: bool,
) -> Result<CarryPlan, NotCarried> {
    let mut tree = parser_ffi::parse_protobuf(sql).map_err(NotCarried::Parse)?;
    let context = site::Context {
        sharding,
        options: GatherOptions {
            coordinator,
            ..GatherOptions::default()
        },
        bound,
        version: tree.version,
        max_rows,
        with: None,
    };
    let mut carried = Vec::new();
    let mut failed = None;
    let mut position = 0;
    {
        let places = walk::places(&mut tree)?;
        let context = site::Context {
            with: places.with.as_deref().cloned(),
            ..context
        };
        let mut decide = |node: &mut pb::Node| {
            position += 1;
            if failed.is_some() {
                return;
            }
            match site::carry_of(node, &context) {
                Ok(Some(carry)) => carried.push(Carry {
                    position: position - 1,
                    ..carry
                }),
                Ok(None) => {}
                Err(why) => failed = Some(why),
            }
        };
        walk::each_place(places, &mut decide);
    }
    if let Some(why) = failed {
        return Err(why);
    }
    if carried.is_empty() {
        return Err(NotCarried::Nothing);
    }
    Ok(CarryPlan { tree, carried })
}

/// `sql` (one write, routed) has a FROM/USING item or WITH query that
/// reads across shards and aggregates, deduplicates, limits or combines
/// rows (rule 8): run on the shards it would be computed over each one's
/// own rows only, so it must be carried ([`plan`] finds it, or why not).
/// False when it has none, or none that reads a sharded table.
pub fn cuts_rows(sql: &str, sharding: &Sharding, coordinator: usize, max_rows: u64) -> bool {
    let Ok(mut tree) = parser_ffi::parse_protobuf(sql) else {
        return false;
    };
    let Ok(places) = walk::places(&mut tree) else {
        return false;
    };
    let ctes = places.with.iter().flat_map(|w| w.ctes.iter());
    let queries = ctes.filter_map(|cte| match cte.node.as_ref() {
        Some(NodeEnum::CommonTableExpr(cte)) => cte.ctequery.as_deref(),
        _ => None,
    });
    let mut cuts = false;
    for query in queries {
        cuts |= crate::merge::cuts_rows(None, Some(query));
    }
    for root in &places.roots {
        cuts |= crate::merge::cuts_rows(Some(root), None);
    }
    cuts && !matches!(
        plan(sql, sharding, coordinator, max_rows),
        Err(NotCarried::Nothing | NotCarried::NotWrite)
    )
}

impl CarryPlan {
    /// The write with each carried subquery replaced by its result
    /// (`answers`, one per [`CarryPlan::carried`], in order).
    pub fn write_sql(&self, answers: &[Answer]) -> Result<String, NotCarried> {
        if answers.len() != self.carried.len() {
            return Err(NotCarried::Mismatch);
        }
        let mut tree = self.tree.clone();
        let mut next = self.carried.iter().zip(answers).peekable();
        let mut failed = None;
        let mut position = 0;
        {
            let places = walk::places(&mut tree)?;
            let mut replace = |node: &mut pb::Node| {
                position += 1;
                if failed.is_some() {
                    return;
                }
                let Some((carry, answer)) = next.next_if(|(c, _)| c.position == position - 1)
                else {
                    return;
                };
                if let Err(why) = replace::replace(node, carry, answer) {
                    failed = Some(why);
                }
            };
            walk::each_place(places, &mut replace);
        }
        if let Some(why) = failed {
            return Err(why);
        }
        if next.next().is_some() {
            return Err(NotCarried::Mismatch);
        }
        parser_ffi::deparse_protobuf(&tree).map_err(NotCarried::Deparse)
    }
}

/// The one SELECT of `sql`, parsed.
fn parsed_select(sql: &str) -> Result<pb::Node, NotCarried> {
    let tree = parser_ffi::parse_protobuf(sql).map_err(NotCarried::Parse)?;
    let [raw] = <[pb::RawStmt; 1]>::try_from(tree.stmts).map_err(|_| NotCarried::Mismatch)?;
    match raw.stmt.map(|s| *s) {
        Some(
            select @ pb::Node {
                node: Some(NodeEnum::SelectStmt(_)),
            },
        ) => Ok(select),
        _ => Err(NotCarried::Mismatch),
    }
}

/// `name` as a quoted SQL identifier.
fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_rows;
