//! The walk of a SELECT for the gather planner (rules 1-3 of
//! [`crate::gather`]): every query level (set operation arms, FROM
//! subqueries, CTE bodies, sublinks anywhere), each level's FROM items
//! (tables by their RangeVar, the rest by name), every column reference
//! with the level it is written at, and the AND-ed conditions of each
//! level. CTE names are scoped as Postgres scopes them, so a RangeVar that
//! names a CTE in scope is no table. Expression nodes the walk does not
//! know are refused ([`NotGathered::Unreadable`]): what it cannot read it
//! cannot rewrite exactly.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::exprs::{children, Visit};
use super::NotGathered;

/// Deepest nesting of levels and expressions the walk follows.
const MAX_DEPTH: usize = 200;

/// A FROM item of a level.
#[derive(Debug)]
pub(super) enum Item {
    /// A RangeVar that names a table (not a CTE in scope): its number in
    /// [`Walked::tables`].
    Table(usize),
    /// A subquery, function, CTE reference or aliased join: its columns
    /// cannot be told.
    Other,
}

/// One query level (a SelectStmt without a set operation).
#[derive(Debug, Default)]
pub(super) struct Level<'a> {
    pub items: Vec<Item>,
    /// Conditions AND-ed into its WHERE and into the ON of INNER joins
    /// reached through preserved sides.
    pub conjuncts: Vec<&'a pb::Node>,
    /// Some join of its FROM merges columns (USING or NATURAL).
    pub merges: bool,
    /// Some FROM item of it is a subquery.
    pub subqueries: bool,
}

/// A RangeVar naming a table.
#[derive(Debug)]
pub(super) struct TableUse<'a> {
    pub range_var: &'a pb::RangeVar,
    pub level: usize,
    /// Reached from its level's FROM through preserved join sides only.
    pub preserved: bool,
    /// It is a side of a NATURAL join, or its alias renames columns.
    pub all_columns: bool,
    /// Under TABLESAMPLE.
    pub sampled: bool,
    /// The names of the USING lists of the joins it is under.
    pub using: Vec<&'a str>,
    /// The AND-ed parts of the ON of the join it is a side of, when that
    /// join is INNER or it is the join's nullable side (LEFT's right, RIGHT's
    /// left): filtering it first is the same join.
    pub on: Vec<&'a pb::Node>,
}

/// A column reference and the level it is written at.
#[derive(Debug)]
pub(super) struct ColumnUse<'a> {
    /// Its names (`None` for `*`).
    pub fields: Vec<Option<&'a str>>,
    pub level: usize,
}

/// What the walk found.
#[derive(Debug, Default)]
pub(super) struct Walked<'a> {
    pub levels: Vec<Level<'a>>,
    pub tables: Vec<TableUse<'a>>,
    pub columns: Vec<ColumnUse<'a>>,
    /// Function names called anywhere (last name part).
    pub calls: Vec<&'a str>,
    /// The names of the columns GROUP BY lists anywhere (last name part).
    pub grouped: Vec<&'a str>,
    pub params: bool,
    /// The statement's own level (a SELECT without a set operation).
    pub top: usize,
    /// Its locking clauses (FOR UPDATE...), its LIMIT or OFFSET.
    pub locking: &'a [pb::Node],
    pub limited: bool,
}

/// The walker: what it found, and the CTE names in scope.
#[derive(Default)]
pub(super) struct Walk<'a> {
    pub found: Walked<'a>,
    ctes: Vec<&'a str>,
    /// Temp tables of `pg_temp` the coordinator reads in place (a
    /// data-modifying WITH query's rows, `writes.rs`).
    local: &'a [String],
    depth: usize,
}

impl<'a> Walk<'a> {
    /// Walk the SELECT `select` (the statement); `local`: temp tables
    /// read in place.
    pub fn statement(
        select: &'a pb::SelectStmt,
        local: &'a [String],
    ) -> Result<Walked<'a>, NotGathered> {
        let mut walk = Walk {
            local,
            ..Walk::default()
        };
        walk.select(select)?;
        Ok(walk.found)
    }

    fn deeper(&mut self) -> Result<(), NotGathered> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(NotGathered::Unreadable("a statement nested this deeply"));
        }
        Ok(())
    }

    /// A query: its WITH in scope for it, then its arms or its level.
    fn select(&mut self, select: &'a pb::SelectStmt) -> Result<(), NotGathered> {
        self.deeper()?;
        if select.into_clause.is_some() {
            return Err(NotGathered::NotSelect);
        }
        let top = self.depth == 1 && select.op() == pb::SetOperation::SetopNone;
        if !select.locking_clause.is_empty() && !top {
            return Err(NotGathered::Locking(
                "in a subquery, a WITH query or a set operation",
            ));
        }
        let scope = self.ctes.len();
        if let Some(with) = &select.with_clause {
            self.with(with)?;
        }
        if select.op() == pb::SetOperation::SetopNone {
            if top {
                self.found.top = self.found.levels.len();
                self.found.locking = &select.locking_clause;
                self.found.limited = select.limit_count.is_some() || select.limit_offset.is_some();
            }
            self.level(select)?;
        } else {
            for arm in [&select.larg, &select.rarg].into_iter().flatten() {
                self.select(arm)?;
            }
            // ORDER BY / LIMIT of a set operation name its output columns.
            let level = self.new_level();
            self.exprs(&select.sort_clause, level)?;
            self.opt(&select.limit_count, level)?;
            self.opt(&select.limit_offset, level)?;
        }
        self.ctes.truncate(scope);
        self.depth -= 1;
        Ok(())
    }

    /// A WITH: each body sees the CTEs before it (all of them when
    /// RECURSIVE); the query sees them all.
    fn with(&mut self, with: &'a pb::WithClause) -> Result<(), NotGathered> {
        let ctes: Vec<&'a pb::CommonTableExpr> = with
            .ctes
            .iter()
            .filter_map(|node| match node.node.as_ref() {
                Some(NodeEnum::CommonTableExpr(cte)) => Some(&**cte),
                _ => None,
            })
            .collect();
        if with.recursive {
            self.ctes
                .extend(ctes.iter().map(|cte| cte.ctename.as_str()));
        }
        for cte in &ctes {
            match cte.ctequery.as_deref().and_then(|q| q.node.as_ref()) {
                Some(NodeEnum::SelectStmt(body)) => self.select(body)?,
                _ => return Err(NotGathered::DataModifyingWith),
            }
            if !with.recursive {
                self.ctes.push(cte.ctename.as_str());
            }
        }
        Ok(())
    }

    fn new_level(&mut self) -> usize {
        self.found.levels.push(Level::default());
        self.found.levels.len() - 1
    }

    /// A SELECT without a set operation: its FROM, then its expressions.
    fn level(&mut self, select: &'a pb::SelectStmt) -> Result<(), NotGathered> {
        let level = self.new_level();
        if let Some(condition) = &select.where_clause {
            self.found.levels[level]
                .conjuncts
                .extend(and_split(condition));
        }
        for item in &select.from_clause {
            self.item(item, level, FromPath::default())?;
        }
        for target in &select.target_list {
            self.expr(target, level)?;
        }
        self.opt(&select.where_clause, level)?;
        self.exprs(&select.group_clause, level)?;
        for item in &select.group_clause {
            if let Some(NodeEnum::ColumnRef(column)) = item.node.as_ref() {
                if let Some(NodeEnum::String(name)) =
                    column.fields.last().and_then(|f| f.node.as_ref())
                {
                    self.found.grouped.push(name.sval.as_str());
                }
            }
        }
        self.opt(&select.having_clause, level)?;
        self.exprs(&select.window_clause, level)?;
        self.exprs(&select.sort_clause, level)?;
        self.exprs(&select.distinct_clause, level)?;
        self.opt(&select.limit_count, level)?;
        self.opt(&select.limit_offset, level)?;
        for row in &select.values_lists {
            self.expr(row, level)?;
        }
        Ok(())
    }

    /// A FROM item of `level`, reached along `path`.
    fn item(
        &mut self,
        item: &'a pb::Node,
        level: usize,
        path: FromPath<'a>,
    ) -> Result<(), NotGathered> {
        self.deeper()?;
        match item.node.as_ref() {
            Some(NodeEnum::RangeVar(range_var)) => self.range_var(range_var, level, path, false),
            Some(NodeEnum::JoinExpr(join)) => self.join(join, level, path)?,
            Some(NodeEnum::RangeSubselect(sub)) => {
                self.found.levels[level].items.push(Item::Other);
                self.found.levels[level].subqueries = true;
                match sub.subquery.as_deref().and_then(|q| q.node.as_ref()) {
                    Some(NodeEnum::SelectStmt(query)) => self.select(query)?,
                    _ => return Err(NotGathered::Unreadable("a FROM subquery")),
                }
            }
            Some(NodeEnum::RangeFunction(function)) => {
                self.found.levels[level].items.push(Item::Other);
                self.exprs(&function.functions, level)?;
            }
            Some(NodeEnum::RangeTableSample(sample)) => {
                match sample.relation.as_deref().and_then(|r| r.node.as_ref()) {
                    Some(NodeEnum::RangeVar(range_var)) => {
                        self.range_var(range_var, level, path, true)
                    }
                    _ => return Err(NotGathered::Unreadable("a TABLESAMPLE")),
                }
                self.exprs(&sample.args, level)?;
                self.opt(&sample.repeatable, level)?;
            }
            _ => return Err(NotGathered::Unreadable("a FROM item")),
        }
        self.depth -= 1;
        Ok(())
    }

    fn join(
        &mut self,
        join: &'a pb::JoinExpr,
        level: usize,
        path: FromPath<'a>,
    ) -> Result<(), NotGathered> {
        let preserved = path.preserved;
        let (left, right) = match join.jointype() {
            pb::JoinType::JoinInner => (preserved, preserved),
            pb::JoinType::JoinLeft => (preserved, false),
            pb::JoinType::JoinRight => (false, preserved),
            _ => (false, false),
        };
        if let Some(quals) = &join.quals {
            if join.jointype() == pb::JoinType::JoinInner && preserved {
                self.found.levels[level].conjuncts.extend(and_split(quals));
            }
        }
        let mut using = path.using.clone();
        for name in &join.using_clause {
            if let Some(NodeEnum::String(name)) = name.node.as_ref() {
                using.push(name.sval.as_str());
            }
        }
        if join.is_natural || !join.using_clause.is_empty() {
            self.found.levels[level].merges = true;
        }
        if join.alias.is_some() {
            self.found.levels[level].items.push(Item::Other);
        }
        let natural = path.natural || join.is_natural;
        let on: Vec<&'a pb::Node> = join.quals.as_deref().map(and_split).unwrap_or_default();
        let filters = |nullable: bool| match join.jointype() {
            pb::JoinType::JoinInner => on.clone(),
            pb::JoinType::JoinLeft | pb::JoinType::JoinRight if nullable => on.clone(),
            _ => Vec::new(),
        };
        let sides = [
            (
                &join.larg,
                left,
                filters(join.jointype() == pb::JoinType::JoinRight),
            ),
            (
                &join.rarg,
                right,
                filters(join.jointype() == pb::JoinType::JoinLeft),
            ),
        ];
        for (side, preserved, on) in sides {
            if let Some(side) = side {
                let path = FromPath {
                    preserved,
                    natural,
                    using: using.clone(),
                    on,
                };
                self.item(side, level, path)?;
            }
        }
        self.opt(&join.quals, level)
    }

    /// A RangeVar of `level`'s FROM: a CTE reference or a table.
    fn range_var(
        &mut self,
        range_var: &'a pb::RangeVar,
        level: usize,
        path: FromPath<'a>,
        sampled: bool,
    ) {
        let alias = range_var.alias.as_ref();
        let cte =
            range_var.schemaname.is_empty() && self.ctes.contains(&range_var.relname.as_str());
        let local = range_var.schemaname == "pg_temp" && self.local.contains(&range_var.relname);
        if cte || local {
            self.found.levels[level].items.push(Item::Other);
            return;
        }
        let renames = alias.is_some_and(|a| !a.colnames.is_empty());
        self.found.levels[level]
            .items
            .push(Item::Table(self.found.tables.len()));
        self.found.tables.push(TableUse {
            range_var,
            level,
            preserved: path.preserved,
            all_columns: path.natural || renames,
            sampled,
            using: path.using,
            on: path.on,
        });
    }

    fn opt(&mut self, node: &'a Option<Box<pb::Node>>, level: usize) -> Result<(), NotGathered> {
        match node {
            Some(node) => self.expr(node, level),
            None => Ok(()),
        }
    }

    fn exprs(&mut self, nodes: &'a [pb::Node], level: usize) -> Result<(), NotGathered> {
        nodes.iter().try_for_each(|node| self.expr(node, level))
    }

    /// An expression written at `level`.
    fn expr(&mut self, node: &'a pb::Node, level: usize) -> Result<(), NotGathered> {
        let Some(node) = node.node.as_ref() else {
            return Ok(());
        };
        self.deeper()?;
        children(self, node, level)?;
        self.depth -= 1;
        Ok(())
    }
}

impl<'a> Visit<'a> for Walk<'a> {
    fn column(&mut self, column: &'a pb::ColumnRef, level: usize) {
        let fields = column
            .fields
            .iter()
            .map(|field| match field.node.as_ref() {
                Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
                _ => None,
            })
            .collect();
        self.found.columns.push(ColumnUse { fields, level });
    }

    fn param(&mut self) {
        self.found.params = true;
    }

    fn call(&mut self, name: &'a str) {
        self.found.calls.push(name);
    }

    fn sublink(&mut self, sublink: &'a pb::SubLink, level: usize) -> Result<(), NotGathered> {
        self.opt(&sublink.testexpr, level)?;
        match sublink.subselect.as_deref().and_then(|q| q.node.as_ref()) {
            Some(NodeEnum::SelectStmt(query)) => self.select(query),
            _ => Err(NotGathered::Unreadable("a subquery")),
        }
    }

    fn nodes(&mut self, nodes: &'a [pb::Node], level: usize) -> Result<(), NotGathered> {
        self.exprs(nodes, level)
    }

    fn boxed(&mut self, node: &'a Option<Box<pb::Node>>, level: usize) -> Result<(), NotGathered> {
        self.opt(node, level)
    }
}

/// How a FROM item is reached from its level's FROM list.
#[derive(Clone)]
struct FromPath<'a> {
    preserved: bool,
    natural: bool,
    using: Vec<&'a str>,
    /// The ON parts that filter the item when it is a table.
    on: Vec<&'a pb::Node>,
}

impl Default for FromPath<'_> {
    fn default() -> Self {
        FromPath {
            preserved: true,
            natural: false,
            using: Vec::new(),
            on: Vec::new(),
        }
    }
}

/// The AND-ed parts of a condition.
pub(super) fn and_split(condition: &pb::Node) -> Vec<&pb::Node> {
    let mut parts = Vec::new();
    let mut pending = vec![condition];
    while let Some(node) = pending.pop() {
        match node.node.as_ref() {
            Some(NodeEnum::BoolExpr(bool_expr))
                if bool_expr.boolop() == pb::BoolExprType::AndExpr =>
            {
                pending.extend(bool_expr.args.iter().rev());
            }
            _ => parts.push(node),
        }
    }
    parts
}
