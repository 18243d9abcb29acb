//! Routing as a pure function: (statement summary, bind parameters,
//! overrides, sharding model) -> which databases run the statement.
//!
//! # Rules
//! 1. Transaction control, session statements and `SET pgdog.*` go
//!    [`Route::Any`] (the proxy handles them itself), even under overrides: a
//!    bad `pgdog.shard` must not stop the client from setting a good one.
//! 2. Overrides: `shard = n` -> `Shard(n)` (an error unless `n` is one of the
//!    cluster's databases). `sharding_key = v` is typed and hashed with the
//!    key space of the statement's first configured sharded table, else of
//!    its first family table, else of the cluster's first `[[sharded_tables]]`
//!    entry, else of its first family.
//! 3. A cluster of one database has nothing to decide: `Any` for statements
//!    without tables, `Shard(0)` for the rest.
//! 4. Each table is a family member (`events_p7`: key 7), a configured
//!    sharded table, omnisharded, a catalog (`pg_catalog`,
//!    `information_schema`, unqualified `pg_*`), or unlisted. **Unlisted
//!    tables are omnisharded** (PgDog's default: read from one database,
//!    written on all), unless `unlisted_tables = "sharded"` or the cluster
//!    has a column-only `[[sharded_tables]]` entry (which shards every
//!    table that has its column, which a name does not tell): then they
//!    are *unknown*, **sharded by a key pgshard does not know**: keyless
//!    reads, UPDATEs and DELETEs go to every database (no row is silently
//!    missed), keyless INSERTs and COPY FROM are refused (pgshard cannot
//!    tell where the row belongs). List such tables in
//!    `[[omnisharded_tables]]` to read them from one database and write
//!    them everywhere.
//! 5. Conditions (one per query level that restricts the statement's rows,
//!    a UNION's arms OR-ed into one: see [`crate::extract`]; sublinks give
//!    none to the statement, rule 12 places them) give shard sets: `k = v`
//!    the database of `v`, `k = ANY(array)`
//!    the union of its elements', AND the intersection, OR the union (free
//!    if any branch is). An empty AND of one
//!    column (`k = 1 AND k = 2`, or `k = ANY('{}')`) matches no row and goes
//!    to the lowest database named; of different columns (`a.k = 1 AND
//!    b.k = 2`) it is a cross-shard join: an error. A NULL or missing value
//!    restricts nothing (`k = NULL` matches no row; a missing parameter is not
//!    known yet, as when a statement is described before Bind). A value cast
//!    to a type of another kind (`k = $1::numeric`) restricts nothing. The
//!    extractor has resolved each column to the tables of its own query
//!    level (through FROM subqueries and CTEs whose output passes a table's
//!    column through unchanged: [`crate::extract`], **resolution**), and
//!    written it so that it is found here among the statement's tables:
//!    a qualifier by alias, then by table name; an unqualified column as
//!    any of them. Column-only `[[sharded_tables]]` entries key unknown
//!    tables only. The levels' sets and the family tables' databases are
//!    intersected; an empty intersection is an error. Conditions count only
//!    when the statement touches a sharded (or unknown, or family) table.
//! 6. Restricted -> `Shard`, `Shards` or `All`. An INSERT (or MERGE) whose
//!    rows go to several databases is refused unless it reads sharded tables
//!    other than its target (INSERT ... SELECT, which each database runs on
//!    its own rows).
//! 7. Unrestricted, touching sharded tables: reads, UPDATE, DELETE, COPY TO,
//!    EXPLAIN -> `All`; INSERT ... VALUES (or MERGE) without the key -> error
//!    naming the column to add; INSERT ... SELECT from sharded tables other
//!    than the target -> `All`; COPY FROM -> error (not supported yet).
//! 8. Only omnisharded / catalog tables: writes `All`, reads (locking ones
//!    too) `Any`. No tables: DDL `All`, the rest `Any`. DDL on sharded tables
//!    goes `All` (every database holds a part), on a family table to its
//!    database.
//! 9. `cross_shard_disabled` refuses a statement that touches sharded tables
//!    and would run on more than one database (DDL excepted).
//! 10. Statement strings: see [`route_all`].
//! 11. Writes that would put rows where they do not belong are refused
//!     (after rules 1-3: overrides and one-database clusters decide first):
//!     a statement that sets the sharding key column of its target (a
//!     sharded table's own key, or a column-only entry's column on an
//!     unknown table: `UPDATE orders SET tenant_id = 4 ...`) would leave the
//!     row on its old key's shard; a write into an omnisharded table that
//!     also reads sharded, unknown or family tables (`INSERT INTO countries
//!     SELECT ... FROM orders`) would compute different rows on each
//!     database, or write one copy only, and the copies would diverge.
//!     Data-modifying WITH queries (`route/cte_writes.rs`) are checked the
//!     same way (their SET columns; an omnisharded table they write while
//!     the statement reads sharded, unknown or family tables anywhere), and
//!     run whatever the rest of the statement does: the statement runs on
//!     the union of the databases its own levels need (rules 5-7) and those
//!     each UPDATE or DELETE WITH query's own conditions allow (every
//!     database when unrestricted), and exactly on the one database an
//!     INSERT's (or MERGE's) rows go to, which every other part must fit
//!     in; an INSERT whose rows have no key or several databases, or parts
//!     that cannot share one set of databases, are refused.
//! 12. Sublinks (subqueries inside expressions: `IN (SELECT ...)`, `EXISTS`,
//!     scalar `(SELECT ...)`, `ANY/ALL (SELECT ...)`, `ARRAY(SELECT ...)`,
//!     in WHERE, the target list, HAVING, ON, ORDER BY, VALUES, SET,
//!     RETURNING, at any depth) are evaluated by each database the
//!     statement runs on, over that database's rows only; a statement is
//!     never routed by one of its levels alone. After rules 1-3, for every
//!     statement but DDL, each sublink (nested ones each on their own; its
//!     reads are its FROM, FROM subqueries, own CTEs, and the CTEs of
//!     enclosing queries it references) that reads sharded, unknown or
//!     family tables must be either
//!     - **correlated** with an enclosing query on a co-located key: an
//!       equality AND-ed into its own WHERE (or an INNER join's ON reached
//!       through preserved sides) of a plain SELECT between the sharding
//!       key of a table of its own FROM (qualified by that table's alias or
//!       name, or unqualified) and the sharding key, in the same key space,
//!       of the table an enclosing query's qualifier names (`EXISTS (SELECT
//!       1 FROM orders o WHERE o.user_id = u.id)`): each database meets the
//!       partners of its own rows, wherever the statement runs. The outer
//!       qualifier must name no item of the sublink's own FROM, no FROM item
//!       other than a table anywhere in the statement (a subquery's,
//!       function's, join's or CTE reference's name), and only tables keyed
//!       in that key space; a statement with a function in FROM whose name
//!       cannot be told (`FROM coalesce(...)` without an alias) has no
//!       correlations. An unqualified outer column (`WHERE l_orderkey =
//!       o_orderkey`, TPC-H Q4) is resolved as Postgres does, innermost
//!       level first, through the catalog's columns ([`crate::catalog`]):
//!       when the statement has no FROM item but tables (and unnamed
//!       joins), the catalog knows every table it names, and no table of
//!       the sublink's own FROM has the column, the tables that have it
//!       must all be keyed by it in that key space; otherwise (no catalog, a
//!       table it does not know) it is no correlation. `key IN (SELECT key
//!       FROM ... [GROUP BY key, ...] [HAVING ...])` (or `= ANY`) AND-ed
//!       into a SELECT's WHERE, selecting the key alone, without LIMIT,
//!       OFFSET, DISTINCT ON, windows or grouping sets (TPC-H Q18), counts
//!       as the equality of the two keys: each outer row meets only the
//!       inner rows, whole groups of them, of its own key (`NOT IN`, under
//!       OR or NOT, or in UPDATE/DELETE: not yet). Its left side is read
//!       at the level around the sublink: the sublink's own FROM does not
//!       hide it, and tables named only inside the sublink are not what it
//!       can mean. Family tables in the sublink place it anyway; or
//!     - **placed**: its conditions (rule 5, over its own levels) and family
//!       tables restrict it to exactly one database `d`, and the statement
//!       runs on `d` alone: its own levels (outside sublinks, CTE bodies
//!       defined there included) read no sharded table, match no row, or
//!       are restricted to exactly `d` (`WHERE id = 5 AND x IN (SELECT ...
//!       FROM orders WHERE user_id = 5)`, co-located). All placed sublinks
//!       must agree on `d`; the statement is then pinned to it in a string.
//!       A placed sublink that matches no row (`k = 1 AND k = 2`) reads
//!       nothing wherever it runs and places nothing.
//!
//!     Anything else is refused, naming the table and what to do: a sublink
//!     without a key or correlation (a keyless one under a keyless outer
//!     query too: each database would see its own part of the inner rows),
//!     or one on another database, on several, or on a different one than
//!     another sublink. Sublinks that read only omnisharded or catalog
//!     tables, or none, are exact anywhere. A sublink that reads more than
//!     [`crate::extract::MAX_SUBLINK_TABLES`] tables through CTEs is refused
//!     when the statement reads any sharded table. The statement's own
//!     levels are routed by rules 4-11 from the tables outside its sublinks.
//!
//! 13. Joins (`route/joins.rs`): each database joins the rows it holds,
//!     so after rules 1-3, for every statement but DDL, each query level
//!     (anywhere: the statement's own, FROM subqueries, CTE bodies, set
//!     operations' arms, sublinks, an INSERT's SELECT; an UPDATE's target
//!     with its FROM, a DELETE's with its USING, a MERGE's target and
//!     source as a FULL join) must pair only rows that live on one
//!     database. Its *sharded items* are its sharded, unknown and family
//!     tables and the FROM subqueries and CTE references that name one
//!     (omnisharded and catalog tables, functions, VALUES and subqueries
//!     over them are whole on every database and never need co-location).
//!     With two or more, each must be
//!     - **connected** to the others, transitively, by equalities `a.k =
//!       b.k` between their sharding keys in one key space (co-located:
//!       same type, function, shard count and placement), AND-ed into the
//!       WHERE or the ON of an INNER join (at any join depth), or `USING
//!       (k)` / NATURAL where `k` is the key of an item on each side. An
//!       outer join's ON (or USING) connects its two sides once each side
//!       it keeps (LEFT: the left, RIGHT: the right, FULL: both) is
//!       connected itself: each kept row then meets its partners on its
//!       own database, and is null-extended there only when it has none
//!       anywhere, as Postgres would; it connects two items of its
//!       nullable side (the rows that fail it are dropped), but never two
//!       items of a side it keeps (it filters none of their rows). A
//!       qualifier names the level's item by alias (a table by name when
//!       it has none), an unqualified column the items keyed by that name;
//!       a table with column aliases has no key. A subquery's or CTE's
//!       output column is a key when it is a plain column of its own
//!       level's select list (`k`, `t.k AS x`, or passed through by `*` or
//!       `t.*`, renamed by column aliases) that is the key of a table of
//!       its own FROM; a LATERAL subquery whose own WHERE (or INNER ON)
//!       equates the key of a table of its FROM with an earlier item's key
//!       is connected to that item (as by the ON of the join that holds
//!       them apart); or
//!     - **on one shard** with the others: every part of the level that
//!       is not connected to the rest is restricted to the same one
//!       database, by the level's own condition (its WHERE and the ON of
//!       INNER joins reached through preserved sides) as it names the
//!       part's tables, by the own conditions of its subqueries and CTEs,
//!       by its family tables (`... ON u.grp = o.qty WHERE u.id = 5 AND
//!       o.tenant_id = 5`). A part whose condition matches no row pairs
//!       nothing and is left out.
//!
//!     An outer join that keeps rows every database holds (a kept side
//!     with no sharded item) while its other side has one is exact only
//!     when the statement runs on one database `d` and every part of that
//!     level is restricted to `d`. Anything else is refused, naming two
//!     items and what to do (or the outer join). INSERT ... SELECT,
//!     UPDATE ... FROM, DELETE ... USING and MERGE are checked as reads
//!     are: each database would write from its own pairs only.
//!
//! 14. Schema changes that place rows (`route/schema.rs`), after rules
//!     1-3: a table is placed by its name (a `[[sharded_tables]]` entry, a
//!     family, `[[omnisharded_tables]]`, the `unlisted_tables` rule) and
//!     its key column, and the rows it holds stay where they are.
//!     - Renaming a table, materialized view or foreign table (RENAME TO,
//!       SET SCHEMA) is refused unless the new name places it as the old
//!       one did: both unlisted (where columns decide: they are kept), both
//!       copies on every database, both sharded by the same columns in the
//!       same key spaces, both family members on the same database.
//!     - Renaming or dropping the key column of a table an entry names, and
//!       renaming, dropping or adding (or renaming to) a column-only
//!       entry's column on an unlisted table, are refused (on one the
//!       catalog shows without any such column, so omnisharded, adding one
//!       would shard it by that column while every database holds all its
//!       rows: the error says to list it in `[[omnisharded_tables]]` first).
//!     - A table created from a query (CREATE TABLE AS, SELECT INTO, CREATE
//!       MATERIALIZED VIEW, with data or a materialized view without; also
//!       under EXPLAIN ANALYZE) is filled by each database it runs on from
//!       the rows it holds: from sharded, unknown or family tables (anywhere
//!       in the query) it is refused into an omnisharded or catalog table,
//!       a family member, or an unlisted one when no column-only entry can
//!       key it; from none of them, into a table an entry shards (or an
//!       unknown one, `unlisted_tables = "sharded"`). Into a sharded table
//!       (or an unlisted one of a cluster with column-only entries) it runs
//!       on every database, its sublinks must be correlated (rule 12; none
//!       can place a statement that must run everywhere) and its joins
//!       co-located (rule 13); the key it keeps and whether its rows are
//!       exact per shard are checked with its text by
//!       [`crate::create_as::check`]. REFRESH MATERIALIZED VIEW runs where
//!       the view is placed (every database): its query was checked when
//!       it was created through pgshard.
//! 15. What stands behind names (`route/behind.rs`, with the cluster's
//!     [`crate::catalog`]): functions a statement calls (transitively), its
//!     DO block, the triggers on the table it writes and the sequences it
//!     advances run wherever it runs. One that reaches sharded, unknown or
//!     family tables, or whose code pgshard cannot read (dynamic SQL,
//!     another language), is refused unless a `[[sharded_functions]]`
//!     entry names the argument that places it; one that writes
//!     omnisharded tables makes the statement run on every database; a
//!     sequence that is not a sharded table's own draws on database 0. A
//!     plain view is read as its query ([`crate::catalog::expand`]: the
//!     proxy routes the expansion), so a statement still naming one is
//!     refused here.
//! 16. `EXECUTE name (arguments)` names no table: the proxy routes the
//!     statement `name` prepared instead, with the arguments as its
//!     parameters (see [`crate::prepared`]), as if it were sent with
//!     those values.
//! 17. Moves (`route/moving.rs`): while logical shards of a placement
//!     group move to another database ([`crate::sharding::Moving`], set
//!     by the proxy), a schema change on a table of the group is refused
//!     (the move copied its definition when it started), and a route
//!     reports [`Routed::touches_moving`] when one of its keys falls into
//!     a moving shard, when it has no key over a table of the group (it
//!     touches every shard), or when an override picks the database a
//!     moving shard is on. A statement without the key over a table whose
//!     marker refuses keyless statements (plain tables and partitioned
//!     parents, whose moving rows sit on two databases for a while) is
//!     refused. Overrides skip the schema-change refusal, as they skip
//!     rules 4-16. DROP is not refused: its summary names no table.
//!
//! Limitations: an INSERT ... SELECT is told from INSERT ... VALUES by
//! whether the statement names a sharded table other than its target
//! outside its sublinks (the same table read back under the same name
//! counts once, so `INSERT INTO orders SELECT * FROM orders` is refused as
//! keyless). A statement whose own levels read no sharded table still
//! needs every database when unrestricted (`WITH i AS (INSERT ...) SELECT
//! 1` is refused; `... SELECT * FROM i` is not). A FROM subquery or CTE that aggregates, DISTINCTs, LIMITs or
//! windows rows of sharded tables without being restricted to one database
//! itself is not refused here, even when joined on a key it passes
//! through, inside a placed or correlated sublink or under a single-shard
//! statement (on several databases, that is the fan-out merge analysis's
//! to refuse). Rule 13 follows a subquery's or CTE's keys one level deep
//! (a column of a subquery nested in it, or of a CTE it reads, is no key)
//! and gives a set operation in FROM no key; it takes no restriction from
//! an outer join's ON (`countries c LEFT JOIN orders o ON ... AND
//! o.tenant_id = 3` is refused: put the key in WHERE or pick a shard), and
//! never reads an outer join as the inner one a WHERE makes of it (a kept
//! side of rows every database holds is refused off one shard even under
//! `WHERE o.amount > 0`); columns are matched to tables by name as for
//! conditions (rule 5), so an unqualified column-only key names the
//! level's unknown tables.

mod behind;
mod body;
mod copies;
mod cte_writes;
mod error;
mod facts;
mod joins;
mod key_values;
mod keyed;
mod keys;
mod moving;
mod plan;
pub mod schema;
mod shard_set;
mod sublinks;
pub(crate) mod tables;

#[cfg(test)]
mod tests;

use smallvec::SmallVec;

use crate::sharding::Sharding;
use crate::summary::{StatementSummary, Summary};

pub use copies::{holds_copies, is_copied, unseen_table, writes_everywhere};
pub use error::RouteError;
pub use moving::names_moving;
pub use plan::RoutePlan;
use plan::StatementPlan;
use shard_set::ShardSet;

/// Where a statement goes. Shard numbers are database numbers (`[[databases]]`
/// `shard`), already through logical-shard placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Exactly one database.
    Shard(usize),
    /// Several (sorted, deduplicated, at least two, not all).
    Shards(Vec<usize>),
    /// Every database (keyless reads of sharded tables, writes of
    /// omnisharded tables, DDL).
    All,
    /// No data dependency (`SELECT 1`, reads of omnisharded tables, catalog
    /// reads): any one database will do; the proxy picks (the transaction's
    /// shard if one is open).
    Any,
}

/// A route and whether the statement writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub route: Route,
    pub write: bool,
    /// It reads or writes rows of a logical shard that is moving to
    /// another database (rule 17): the proxy holds it while the move
    /// switches the placement. Always `false` when nothing moves.
    pub touches_moving: bool,
}

/// One bind parameter as it arrived in Bind (or a literal read from the
/// statement text, passed as text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamValue<'a> {
    Null,
    /// Text format: the value's text, UTF-8.
    Text(&'a [u8]),
    /// Binary format: the type's send representation (big-endian ints, 16
    /// uuid bytes, text bytes, array wire format).
    Binary(&'a [u8]),
}

/// Parameter values laid out for routing: inline up to 4, so a routed
/// statement's few keys cost no allocation (and moving it stays cheap).
pub type ParamValues<'a> = SmallVec<[ParamValue<'a>; 4]>;

/// The parameters a statement is routed with: a Bind's own, or laid out
/// with the literals of its text ([`crate::cache::Lookup::params`]).
#[derive(Debug, Clone)]
pub enum Params<'a> {
    Borrowed(&'a [ParamValue<'a>]),
    Owned(ParamValues<'a>),
}

impl<'a> std::ops::Deref for Params<'a> {
    type Target = [ParamValue<'a>];

    fn deref(&self) -> &Self::Target {
        match self {
            Params::Borrowed(params) => params,
            Params::Owned(params) => params,
        }
    }
}

/// Manual routing a client asked for: `/* pgdog_shard: N */` and
/// `/* pgdog_sharding_key: v */` comments, `SET pgdog.shard` and
/// `SET pgdog.sharding_key`. A shard number wins over a key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub shard: Option<usize>,
    pub sharding_key: Option<String>,
}

/// Route one statement.
pub fn route(
    stmt: &StatementSummary,
    params: &[ParamValue<'_>],
    overrides: &Overrides,
    sharding: &Sharding,
) -> Result<Routed, RouteError> {
    StatementPlan::new(stmt, sharding)
        .decide(params, overrides, sharding)
        .map(|decision| decision.routed)
}

/// Route a whole statement string: every statement must agree on one
/// destination (or all be keyless reads); transaction control follows the
/// rest. `Any` joins anything; equal routes stay; two different single
/// shards are an error; otherwise the union (`All` if either is). A
/// statement that must not run anywhere but its own shard (an INSERT, a
/// MERGE, COPY, or a family table's statement) joined with a different
/// route is an error too: running it on the other route's databases would
/// duplicate its rows or miss its table. An empty string goes `Any`.
/// (The proxy runs a string that errs so, or that goes to several shards,
/// one statement at a time where [`crate::query_string`] allows.)
///
/// This plans and routes in one go; a caller routing the same statement
/// again (a cache entry, a prepared statement) keeps the [`RoutePlan`].
pub fn route_all(
    summary: &Summary,
    params: &[ParamValue<'_>],
    overrides: &Overrides,
    sharding: &Sharding,
) -> Result<Routed, RouteError> {
    RoutePlan::new(summary, sharding).route(params, overrides, sharding)
}

/// A route, and whether the statement must run on exactly those databases
/// (not merely may: running it elsewhere too would be wrong).
#[derive(Debug, Clone)]
struct Decision {
    routed: Routed,
    pinned: bool,
}

fn combine(a: Decision, b: Decision, databases: usize) -> Result<Decision, RouteError> {
    let write = a.routed.write || b.routed.write;
    let touches_moving = a.routed.touches_moving || b.routed.touches_moving;
    let pinned = a.pinned || b.pinned;
    let conflict = |a: &Route, b: &Route| RouteError::StatementsOnDifferentShards {
        first: describe(a),
        second: describe(b),
    };
    let route = match (a.routed.route, b.routed.route) {
        (Route::Any, route) | (route, Route::Any) => route,
        (a, b) if a == b => a,
        (a, b) if pinned || matches!((&a, &b), (Route::Shard(_), Route::Shard(_))) => {
            return Err(conflict(&a, &b));
        }
        (Route::All, _) | (_, Route::All) => Route::All,
        (a, b) => {
            let mut set = ShardSet::empty(databases);
            for route in [a, b] {
                match route {
                    Route::Shard(s) => set.insert(s),
                    Route::Shards(shards) => shards.into_iter().for_each(|s| set.insert(s)),
                    Route::All | Route::Any => {}
                }
            }
            to_route(&set, databases)
        }
    };
    Ok(Decision {
        routed: Routed {
            route,
            write,
            touches_moving,
        },
        pinned,
    })
}

fn describe(route: &Route) -> String {
    match route {
        Route::Shard(s) => format!("shard {s}"),
        Route::Shards(shards) => format!("shards {}", join(shards.iter().copied())),
        Route::All => "all shards".to_owned(),
        Route::Any => "any shard".to_owned(),
    }
}

fn join(shards: impl Iterator<Item = usize>) -> String {
    shards.map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
}

/// `Shard` for one database, `All` for every one, else `Shards`.
fn to_route(set: &ShardSet, databases: usize) -> Route {
    let len = set.len();
    match set.first() {
        Some(first) if len == 1 => Route::Shard(first),
        _ if len >= databases => Route::All,
        _ => Route::Shards(set.iter().collect()),
    }
}
