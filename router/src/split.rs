//! A multi-row INSERT whose rows belong to several shards, split into one
//! INSERT per shard (PgDog's `split_inserts`): each `VALUES` row goes to
//! the database its sharding key hashes to, in the order the client wrote
//! them. Pure: from pg_query's protobuf tree, each part deparsed.
//!
//! What splits: `INSERT INTO t (cols) VALUES (...), (...)` into a
//! configured sharded table whose key column is in the column list with a
//! literal value or a bind parameter (optionally cast) in every row. With
//! parameters, each part's are renumbered from `$1` in the order of the
//! client's numbers, and [`Part::params`] says which of the client's values
//! it takes (its Bind carries those, in that order). `ON CONFLICT` only with a
//! conflict target that includes the key (a conflict is then always
//! between rows of one shard). `RETURNING` rows come back in the client's
//! row order (the proxy interleaves the shards' rows by `rows`), so it is
//! refused with `ON CONFLICT`, where rows may return no row. Anything else
//! is refused with the reason.

use parser_ffi::protobuf::{self as pb, node::Node as N};
use parser_ffi::ParseError;

use crate::hash;
use crate::route::tables::{entry_names, target_table};
use crate::route::ParamValue;
use crate::sharding::{Key, ShardedTable, Sharding};

/// One INSERT per database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub parts: Vec<Part>,
    /// The statement returns rows (RETURNING).
    pub returning: bool,
    /// A row's key is in a logical shard that is moving
    /// ([`crate::sharding::Moving`]).
    pub touches_moving: bool,
}

/// The rows of one database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub database: usize,
    pub sql: String,
    /// The client's row numbers (0-based) this INSERT holds, in order.
    pub rows: Vec<usize>,
    /// The client's parameter indexes (0-based) this INSERT's `$1`, `$2`,
    /// ... stand for, in order (empty when it has no parameters).
    pub params: Vec<usize>,
}

/// Why an INSERT cannot be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("a multi-row INSERT whose rows go to several shards can be split only when {0}")]
    Unsupported(&'static str),
    #[error("row {row} of the INSERT into {table}: {why}")]
    Row {
        row: usize,
        table: String,
        why: RowKeyError,
    },
    #[error("INSERT INTO {table} ... SELECT: {why}")]
    InsertSelect {
        table: String,
        why: InsertSelectError,
    },
    #[error("the INSERT could not be analysed for splitting: {0}")]
    Parse(#[from] ParseError),
    #[error("the INSERT could not be analysed for splitting: no target table")]
    NoTarget,
    #[error("the INSERT could not be analysed for splitting: parameter {0:?}")]
    Parameter(String),
}

use SplitError::Unsupported;

/// Split the INSERT `sql` (a simple query's: literal keys) by shard of
/// `sharding`.
pub fn split_insert(sql: &str, sharding: &Sharding) -> Result<Split, SplitError> {
    InsertRows::parse(sql)?.split(sharding, &[])
}

/// A multi-row INSERT read for splitting, whatever the config: the
/// statement without its VALUES rows, and the rows. Read once per
/// prepared statement, split per Bind.
#[derive(Debug, Clone)]
pub struct InsertRows {
    /// The parse tree with an empty VALUES list.
    skeleton: pb::ParseResult,
    values: Vec<pb::Node>,
    /// The highest parameter number the statement uses (0: none).
    parameters: usize,
    /// The text cut at its rows, which parts are written from (`None`:
    /// they are deparsed).
    text: Option<RowsText>,
}

/// What a part's INSERT text (and its parameters' types) depends on, for
/// a cache of parts' statements: the number of rows, when the rows follow
/// one template ([`text::Template`]) with the same types in every row;
/// else the rows themselves.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PartShape {
    Rows(usize),
    Exact(Vec<usize>),
}

/// The most rows one chunk of a prepared part holds (pgjdbc's largest
/// rewritten batch).
pub const CHUNK_ROWS: usize = 128;

/// The sizes a prepared part of `rows` rows is sent in, first to last: the
/// largest power of two not above what is left, at most [`CHUNK_ROWS`]
/// (500 rows: 128, 128, 128, 64, 32, 16, 4). Each size is one statement
/// prepared once per server, whichever rows and shards a Bind's parts get.
pub fn chunk_sizes(rows: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut left = rows;
    while left > 0 {
        let size = (1usize << left.ilog2()).min(CHUNK_ROWS);
        sizes.push(size);
        left -= size;
    }
    sizes
}

impl InsertRows {
    /// Read the INSERT `sql`; an error when it is not one INSERT of
    /// VALUES rows.
    pub fn parse(sql: &str) -> Result<InsertRows, SplitError> {
        // `parse_raw` builds the same tree as the protobuf round trip
        // (checked on the parser corpus), several times faster.
        let mut skeleton = parser_ffi::parse_raw(sql)?;
        let (values, text) = {
            let insert = the_insert(&skeleton)?;
            let values = values_lists(insert)?;
            let relation = insert.relation.as_ref().map(|r| r.location);
            let text = relation
                .and_then(|at| usize::try_from(at).ok())
                .and_then(|at| RowsText::cut(sql, at, !insert.cols.is_empty(), values.len()));
            (values, text)
        };
        set_values(&mut skeleton, Vec::new());
        let parameters = match &text {
            Some(text) => text.highest_param(),
            None => renumber(sql)?.1.last().map_or(0, |&i| i + 1),
        };
        Ok(InsertRows {
            skeleton,
            values,
            parameters,
            text,
        })
    }

    /// The shape of the part holding `rows` (`types`: the statement's
    /// declared parameter types).
    pub fn shape(&self, rows: &[usize], types: &[u32]) -> PartShape {
        let template = self.text.as_ref().and_then(RowsText::template);
        match template.is_some_and(|t| t.uniform(types)) {
            true => PartShape::Rows(rows.len()),
            false => PartShape::Exact(rows.to_vec()),
        }
    }

    /// The client's parameter indexes of the part holding `rows` when its
    /// shape is [`PartShape::Rows`] (as [`part_sql`](Self::part_sql) gives
    /// them, without writing its text); `None` otherwise.
    pub fn part_params(&self, rows: &[usize]) -> Option<Vec<usize>> {
        self.text.as_ref()?.templated_params(rows)
    }

    /// The INSERT of `rows` (the client's row numbers, in order) with its
    /// parameters renumbered from `$1`, and the client's parameter index
    /// of each: written from the client's text, else deparsed.
    pub fn part_sql(&self, rows: &[usize]) -> Result<(String, Vec<usize>), SplitError> {
        if let Some(text) = &self.text {
            if let Some(templated) = text.templated(rows) {
                return Ok(templated);
            }
            if let Some(sql) = text.part(rows) {
                return renumber(&sql);
            }
        }
        let mut tree = self.skeleton.clone();
        let lists = rows.iter().filter_map(|&r| self.values.get(r).cloned());
        set_values(&mut tree, lists.collect());
        renumber(&parser_ffi::deparse_protobuf(&tree)?)
    }

    /// The highest parameter number the statement uses (0: none): with the
    /// types a Parse declares, how many values its Bind must carry.
    pub fn parameters(&self) -> usize {
        self.parameters
    }

    /// The rows grouped by the database of their keys, in `sharding`,
    /// each part's INSERT written; `params` are the Bind's values (none for
    /// a simple query).
    pub fn split(
        &self,
        sharding: &Sharding,
        params: &[ParamValue<'_>],
    ) -> Result<Split, SplitError> {
        let mut split = self.assign(sharding, params)?;
        for part in &mut split.parts {
            (part.sql, part.params) = self.part_sql(&part.rows)?;
        }
        Ok(split)
    }

    /// [`split`](Self::split) without the parts' texts (`sql` empty,
    /// `params` empty): where each row goes.
    pub fn assign(
        &self,
        sharding: &Sharding,
        params: &[ParamValue<'_>],
    ) -> Result<Split, SplitError> {
        let insert = the_insert(&self.skeleton)?;
        let (entry, table, column) = key_column(insert, sharding)?;
        let keys = (self.values.iter()).map(|list| row_key(list, column, entry, params));
        group(insert, entry, &table, keys)
    }
}

/// The target table's `[[sharded_tables]]` entry, its name and the index of
/// its key in the column list; its `ON CONFLICT` checked.
fn key_column<'s>(
    insert: &pb::InsertStmt,
    sharding: &'s Sharding,
) -> Result<(&'s ShardedTable, String, usize), SplitError> {
    let (entry, table) = target(insert, sharding)?;
    let column = insert
        .cols
        .iter()
        .position(|c| matches!(&c.node, Some(N::ResTarget(t)) if t.name == entry.column))
        .ok_or(Unsupported("its column list names the sharding key"))?;
    check_conflict(insert, &entry.column)?;
    Ok((entry, table, column))
}

/// The rows, whose keys are `keys` in order, grouped by database.
fn group(
    insert: &pb::InsertStmt,
    entry: &ShardedTable,
    table: &str,
    keys: impl Iterator<Item = Result<Key, RowKeyError>>,
) -> Result<Split, SplitError> {
    let mut parts: Vec<Part> = Vec::new();
    let mut touches_moving = false;
    for (row, key) in keys.enumerate() {
        let row_error = |why| SplitError::Row {
            row: row + 1,
            table: table.to_owned(),
            why,
        };
        let key = key.map_err(row_error)?;
        let database =
            hash::database(&entry.keys, &key).ok_or_else(|| row_error(RowKeyError::NoShard))?;
        touches_moving |= hash::moving(&entry.keys, &key);
        match parts.iter_mut().find(|p| p.database == database) {
            Some(part) => part.rows.push(row),
            None => parts.push(Part {
                database,
                sql: String::new(),
                rows: vec![row],
                params: Vec::new(),
            }),
        }
    }
    Ok(Split {
        parts,
        touches_moving,
        returning: insert
            .returning_clause
            .as_ref()
            .is_some_and(|r| !r.exprs.is_empty()),
    })
}

/// The only statement of `tree`, an INSERT.
fn the_insert(tree: &pb::ParseResult) -> Result<&pb::InsertStmt, SplitError> {
    match tree.stmts.as_slice() {
        [raw] => match raw.stmt.as_ref().and_then(|s| s.node.as_ref()) {
            Some(N::InsertStmt(insert)) => Ok(insert),
            _ => Err(Unsupported("it is one INSERT statement")),
        },
        _ => Err(Unsupported("it is sent alone (one statement per query)")),
    }
}

/// `sql` with its parameters numbered from `$1` in the order of their
/// numbers, and the original index (0-based) of each new number.
pub(crate) fn renumber(sql: &str) -> Result<(String, Vec<usize>), SplitError> {
    if !sql.contains('$') {
        return Ok((sql.to_owned(), Vec::new()));
    }
    let tokens = parser_ffi::scan(sql)?;
    let param = pb::Token::Param as i32;
    let number = |t: &parser_ffi::Token| -> Result<usize, SplitError> {
        sql.get(t.start + 1..t.end)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                SplitError::Parameter(sql.get(t.start..t.end).unwrap_or_default().to_owned())
            })
    };
    let mut used = Vec::new();
    for token in tokens.iter().filter(|t| t.token == param) {
        used.push(number(token)?);
    }
    used.sort_unstable();
    used.dedup();
    let mut out = String::with_capacity(sql.len());
    let mut at = 0;
    for token in tokens.iter().filter(|t| t.token == param) {
        let n = number(token)?;
        let new = used.binary_search(&n).unwrap_or(0) + 1;
        out.push_str(&sql[at..token.start]);
        out.push('$');
        out.push_str(&new.to_string());
        at = token.end;
    }
    out.push_str(&sql[at..]);
    Ok((out, used.into_iter().map(|n| n - 1).collect()))
}

/// The table an INSERT writes, as written (schema-qualified when it is).
pub fn insert_table(sql: &str) -> Option<String> {
    let tree = parser_ffi::parse_protobuf(sql).ok()?;
    let [raw] = tree.stmts.as_slice() else {
        return None;
    };
    let Some(N::InsertStmt(insert)) = raw.stmt.as_ref()?.node.as_ref() else {
        return None;
    };
    let relation = insert.relation.as_ref()?;
    Some(match relation.schemaname.is_empty() {
        true => relation.relname.clone(),
        false => format!("{}.{}", relation.schemaname, relation.relname),
    })
}

/// The INSERT `sql`, which names no columns, with the first of the
/// table's `columns` (in table order) named: as many as its rows have
/// values, so the key can be found and routed. `None` when it cannot be
/// rewritten (no VALUES rows of known width, more values than columns).
pub fn with_columns(sql: &str, columns: &[String]) -> Option<String> {
    let mut tree = parser_ffi::parse_protobuf(sql).ok()?;
    let [raw] = tree.stmts.as_mut_slice() else {
        return None;
    };
    let Some(N::InsertStmt(insert)) = raw.stmt.as_mut()?.node.as_mut() else {
        return None;
    };
    if !insert.cols.is_empty() {
        return None;
    }
    let Some(N::SelectStmt(select)) = insert.select_stmt.as_deref()?.node.as_ref() else {
        return None;
    };
    let width = select
        .values_lists
        .iter()
        .map(|list| match &list.node {
            Some(N::List(list)) => list.items.len(),
            _ => usize::MAX,
        })
        .max()?;
    if width > columns.len() {
        return None;
    }
    insert.cols = columns[..width]
        .iter()
        .map(|name| pb::Node {
            node: Some(N::ResTarget(Box::new(pb::ResTarget {
                name: name.clone(),
                indirection: Vec::new(),
                val: None,
                location: -1,
            }))),
        })
        .collect();
    parser_ffi::deparse_protobuf(&tree).ok()
}

/// The target table's `[[sharded_tables]]` entry, and its name.
fn target<'s>(
    insert: &pb::InsertStmt,
    sharding: &'s Sharding,
) -> Result<(&'s ShardedTable, String), SplitError> {
    let relation = insert.relation.as_ref().ok_or(SplitError::NoTarget)?;
    let (table, named) = target_table(relation, sharding);
    let named = named.ok_or(Unsupported("its table is sharded by a key column"))?;
    let entry = sharding
        .tables
        .iter()
        .find(|e| match named {
            true => entry_names(e, &table),
            false => e.name.is_none() && insert_names(insert, &e.column),
        })
        .ok_or(Unsupported("its table is sharded by a key column"))?;
    Ok((entry, relation.relname.clone()))
}

fn insert_names(insert: &pb::InsertStmt, column: &str) -> bool {
    insert
        .cols
        .iter()
        .any(|c| matches!(&c.node, Some(N::ResTarget(t)) if t.name == column))
}

/// `ON CONFLICT` must name the key in its target, and then RETURNING
/// (which may skip rows) is refused.
fn check_conflict(insert: &pb::InsertStmt, key: &str) -> Result<(), SplitError> {
    let Some(conflict) = &insert.on_conflict_clause else {
        return Ok(());
    };
    let names_key = conflict.infer.as_ref().is_some_and(|infer| {
        infer.index_elems.iter().any(|e| match &e.node {
            Some(N::IndexElem(elem)) => elem.name == key,
            _ => false,
        })
    });
    if !names_key {
        return Err(Unsupported(
            "its ON CONFLICT target includes the sharding key (ON CONFLICT (key, ...))",
        ));
    }
    if insert
        .returning_clause
        .as_ref()
        .is_some_and(|r| !r.exprs.is_empty())
    {
        return Err(Unsupported(
            "it does not combine ON CONFLICT with RETURNING (skipped rows would shift the returned rows)",
        ));
    }
    Ok(())
}

/// The VALUES rows (each a `List` node).
fn values_lists(insert: &pb::InsertStmt) -> Result<Vec<pb::Node>, SplitError> {
    let select = match insert.select_stmt.as_deref().and_then(|s| s.node.as_ref()) {
        Some(N::SelectStmt(select)) => select,
        _ => return Err(Unsupported("its rows are a VALUES list")),
    };
    let plain = select.target_list.is_empty()
        && select.from_clause.is_empty()
        && select.with_clause.is_none()
        && select.sort_clause.is_empty()
        && select.limit_count.is_none()
        && insert.with_clause.is_none();
    if select.values_lists.is_empty() || !plain {
        return Err(Unsupported("its rows are a VALUES list"));
    }
    Ok(select.values_lists.clone())
}

/// Replace the (only) INSERT's VALUES rows.
fn set_values(tree: &mut pb::ParseResult, lists: Vec<pb::Node>) {
    let Some(N::InsertStmt(insert)) = tree
        .stmts
        .first_mut()
        .and_then(|raw| raw.stmt.as_mut())
        .and_then(|s| s.node.as_mut())
    else {
        return;
    };
    if let Some(N::SelectStmt(select)) = insert.select_stmt.as_mut().and_then(|s| s.node.as_mut()) {
        select.values_lists = lists;
    }
}

mod insert_select;
mod literal;
mod row_keys;
mod text;

pub use insert_select::{check_insert_select, InsertSelectError};
pub use literal::LiteralLayout;
pub(crate) use row_keys::{is_negation, literal_key};
use row_keys::{row_key, row_key_value};
pub use row_keys::{LiteralKey, RowKeyError};
use text::RowsText;

#[cfg(test)]
mod tests;
