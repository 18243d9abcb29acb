//! Summaries from parser-ffi's zero-copy view of the C tree (the default engine).
//!
//! One iterative walk per statement ([`view::walk_with`] on one reused stack)
//! meets every node once: RangeVars become tables, CTE names are noted for the
//! exclusion rule, SelectStmts report locking and `INTO`, and every query level
//! (SelectStmt, UpdateStmt, DeleteStmt, MergeStmt, InsertStmt) adds its
//! condition, read from the level's own WHERE / JOIN ... ON / VALUES. Those
//! reads follow only the boolean skeleton of an expression (AND, OR, NOT) down
//! to its comparisons, so the walk is the only full pass over the tree.
//!
//! The one recursion is over nested AND/OR/NOT, bounded by [`MAX_DEPTH`]; join
//! trees and cast chains are followed with loops. Strings are copied out of the
//! tree only for the summary itself, after deduplication.

use parser_ffi::protobuf::{
    AExprKind, BoolExprType, JoinType, SetOperation, TransactionStmtKind, VariableSetKind,
};
use parser_ffi::view::{
    self, AConst, ConstValue, InsertStmt, List, Node, NodeRef, SelectStmt, TypeName,
    VariableSetStmt, Walk,
};
use parser_ffi::ParseTree;

use super::{ExtractError, MAX_DEPTH};
use crate::summary::{
    ColumnRef, Condition, StatementKind, StatementSummary, Summary, TableRef, Value, ValueSource,
};

/// Summarize every statement of `tree` (see the rules in [`super`]).
pub fn summarize(tree: &ParseTree) -> Result<Summary, ExtractError> {
    let mut scratch = Scratch::default();
    let mut statements = Vec::with_capacity(tree.statement_list().len());
    for raw in tree.statements() {
        let summary = match raw.stmt() {
            Some(stmt) => statement(stmt, &mut scratch)?,
            // raw_parser never leaves a RawStmt empty; summarize it as nothing.
            None => StatementSummary {
                kind: StatementKind::Other,
                write: false,
                locking: false,
                tables: Vec::new(),
                conditions: Vec::new(),
                insert_without_columns: false,
            },
        };
        statements.push(summary);
    }
    let mut summary = Summary { statements };
    summary.canonicalize();
    Ok(summary)
}

/// A table as found in the tree: (schema, name, alias), borrowed.
type Relation<'a> = (Option<&'a str>, &'a str, Option<&'a str>);

/// Buffers reused across the statements of one string.
#[derive(Default)]
struct Scratch<'a> {
    /// The walk's stack.
    stack: Vec<Node<'a>>,
    /// FROM items still to look at for INNER JOIN quals.
    joins: Vec<Node<'a>>,
    relations: Vec<Relation<'a>>,
    ctes: Vec<&'a str>,
    /// State of [`condition`].
    booleans: Booleans<'a>,
}

/// Where a statement's `write` flag comes from.
#[derive(Clone, Copy)]
enum Write {
    Always,
    Never,
    /// A SELECT: writes if some SelectStmt has INTO or some CTE modifies data.
    IfSelectWrites,
}

fn statement<'a>(
    stmt: Node<'a>,
    scratch: &mut Scratch<'a>,
) -> Result<StatementSummary, ExtractError> {
    let (kind, write) = classify(stmt);
    let Scratch {
        stack,
        joins,
        relations,
        ctes,
        booleans,
    } = scratch;
    relations.clear();
    ctes.clear();
    let mut visitor = Visitor {
        joins,
        booleans,
        relations,
        ctes,
        conditions: Vec::new(),
        locking: false,
        select_into: false,
        modifying_cte: false,
        insert_without_columns: false,
        error: None,
    };
    view::walk_with(stack, stmt, |node| visitor.visit(node));
    if let Some(err) = visitor.error {
        return Err(err);
    }
    let write = match write {
        Write::Always => true,
        Write::Never => false,
        Write::IfSelectWrites => visitor.select_into || visitor.modifying_cte,
    };
    Ok(StatementSummary {
        kind,
        write,
        locking: visitor.locking,
        tables: tables(visitor.relations, visitor.ctes),
        conditions: visitor.conditions,
        insert_without_columns: visitor.insert_without_columns,
    })
}

/// The tables: deduplicated while still borrowed, CTE references dropped.
fn tables(relations: &mut Vec<Relation<'_>>, ctes: &[&str]) -> Vec<TableRef> {
    relations.sort_unstable();
    relations.dedup();
    relations
        .iter()
        .filter(|(schema, name, _)| schema.is_some() || !ctes.contains(name))
        .map(|&(schema, name, alias)| TableRef {
            schema: schema.map(str::to_owned),
            name: name.to_owned(),
            alias: alias.map(str::to_owned),
        })
        .collect()
}

/// Kind and write rule of a top-level statement.
fn classify(stmt: Node<'_>) -> (StatementKind, Write) {
    use StatementKind as K;
    match stmt.kind() {
        NodeRef::SelectStmt(_) => (K::Select, Write::IfSelectWrites),
        NodeRef::InsertStmt(_) => (K::Insert, Write::Always),
        NodeRef::UpdateStmt(_) => (K::Update, Write::Always),
        NodeRef::DeleteStmt(_) => (K::Delete, Write::Always),
        NodeRef::MergeStmt(_) => (K::Merge, Write::Always),
        NodeRef::CopyStmt(copy) => {
            let write = if copy.is_from() {
                Write::Always
            } else {
                Write::Never
            };
            (
                K::Copy {
                    to: !copy.is_from(),
                },
                write,
            )
        }
        NodeRef::TransactionStmt(txn) => {
            let kind = match txn.kind() {
                TransactionStmtKind::TransStmtBegin | TransactionStmtKind::TransStmtStart => {
                    K::Begin
                }
                TransactionStmtKind::TransStmtCommit => K::Commit,
                TransactionStmtKind::TransStmtRollback => K::Rollback,
                _ => K::TransactionOther,
            };
            (kind, Write::Never)
        }
        NodeRef::VariableSetStmt(set) => (variable_set(set), Write::Never),
        NodeRef::VariableShowStmt(_) | NodeRef::DiscardStmt(_) => (K::Session, Write::Never),
        NodeRef::ExplainStmt(explain) => {
            let write = explain.query().map_or(Write::Never, |query| classify(query).1);
            (K::Explain, write)
        }
        NodeRef::CallStmt(_) | NodeRef::DoStmt(_) => (K::Other, Write::Always),
        node if is_ddl(node) => (K::Ddl, Write::Always),
        _ => (K::Other, Write::Never),
    }
}

/// `SET` / `RESET`: the two pgdog settings, or session state.
fn variable_set(set: VariableSetStmt<'_>) -> StatementKind {
    let shard = match set.name() {
        Some("pgdog.shard") => true,
        Some("pgdog.sharding_key") => false,
        _ => return StatementKind::Session,
    };
    let value = match set.kind() {
        // `SET x TO DEFAULT` means what `RESET x` means.
        VariableSetKind::VarReset | VariableSetKind::VarSetDefault => None,
        VariableSetKind::VarSetValue if set.args().len() == 1 => {
            let text = match set.args().get(0).map(Node::kind) {
                Some(NodeRef::AConst(value)) => match value.val() {
                    Some(ConstValue::Integer(int)) => int.to_string(),
                    Some(ConstValue::String(text) | ConstValue::Float(text)) => text.to_owned(),
                    _ => return StatementKind::Session,
                },
                _ => return StatementKind::Session,
            };
            Some(text)
        }
        // Several values, FROM CURRENT: Postgres refuses or keeps its own
        // meaning; pass it on as session state.
        _ => return StatementKind::Session,
    };
    if shard {
        StatementKind::SetShard(value)
    } else {
        StatementKind::SetShardingKey(value)
    }
}

/// Schema changes (and the other catalog-changing statements routed with them).
fn is_ddl(node: NodeRef<'_>) -> bool {
    use NodeRef as N;
    matches!(
        node,
        N::CreateSchemaStmt(_)
            | N::AlterTableStmt(_)
            | N::AlterCollationStmt(_)
            | N::AlterDomainStmt(_)
            | N::GrantStmt(_)
            | N::GrantRoleStmt(_)
            | N::AlterDefaultPrivilegesStmt(_)
            | N::CreateStmt(_)
            | N::CreateTableSpaceStmt(_)
            | N::DropTableSpaceStmt(_)
            | N::AlterTableSpaceOptionsStmt(_)
            | N::AlterTableMoveAllStmt(_)
            | N::CreateExtensionStmt(_)
            | N::AlterExtensionStmt(_)
            | N::AlterExtensionContentsStmt(_)
            | N::CreateFdwStmt(_)
            | N::AlterFdwStmt(_)
            | N::CreateForeignServerStmt(_)
            | N::AlterForeignServerStmt(_)
            | N::CreateForeignTableStmt(_)
            | N::CreateUserMappingStmt(_)
            | N::AlterUserMappingStmt(_)
            | N::DropUserMappingStmt(_)
            | N::ImportForeignSchemaStmt(_)
            | N::CreatePolicyStmt(_)
            | N::AlterPolicyStmt(_)
            | N::CreateAmStmt(_)
            | N::CreateTrigStmt(_)
            | N::CreateEventTrigStmt(_)
            | N::AlterEventTrigStmt(_)
            | N::CreatePLangStmt(_)
            | N::CreateRoleStmt(_)
            | N::AlterRoleStmt(_)
            | N::AlterRoleSetStmt(_)
            | N::DropRoleStmt(_)
            | N::CreateSeqStmt(_)
            | N::AlterSeqStmt(_)
            | N::DefineStmt(_)
            | N::CreateDomainStmt(_)
            | N::CreateOpClassStmt(_)
            | N::CreateOpFamilyStmt(_)
            | N::AlterOpFamilyStmt(_)
            | N::DropStmt(_)
            | N::TruncateStmt(_)
            | N::CommentStmt(_)
            | N::SecLabelStmt(_)
            | N::IndexStmt(_)
            | N::CreateStatsStmt(_)
            | N::AlterStatsStmt(_)
            | N::CreateFunctionStmt(_)
            | N::AlterFunctionStmt(_)
            | N::RenameStmt(_)
            | N::AlterObjectDependsStmt(_)
            | N::AlterObjectSchemaStmt(_)
            | N::AlterOwnerStmt(_)
            | N::AlterOperatorStmt(_)
            | N::AlterTypeStmt(_)
            | N::RuleStmt(_)
            | N::CompositeTypeStmt(_)
            | N::CreateEnumStmt(_)
            | N::CreateRangeStmt(_)
            | N::AlterEnumStmt(_)
            | N::ViewStmt(_)
            | N::CreatedbStmt(_)
            | N::AlterDatabaseStmt(_)
            | N::AlterDatabaseRefreshCollStmt(_)
            | N::AlterDatabaseSetStmt(_)
            | N::DropdbStmt(_)
            | N::AlterSystemStmt(_)
            | N::CreateTableAsStmt(_)
            | N::RefreshMatViewStmt(_)
            | N::CreateConversionStmt(_)
            | N::CreateCastStmt(_)
            | N::CreateTransformStmt(_)
            | N::DropOwnedStmt(_)
            | N::ReassignOwnedStmt(_)
            | N::AlterTsDictionaryStmt(_)
            | N::AlterTsConfigurationStmt(_)
            | N::CreatePublicationStmt(_)
            | N::AlterPublicationStmt(_)
            | N::CreateSubscriptionStmt(_)
            | N::AlterSubscriptionStmt(_)
            | N::DropSubscriptionStmt(_)
    )
}

/// What the walk collects for one statement.
struct Visitor<'s, 'a> {
    joins: &'s mut Vec<Node<'a>>,
    booleans: &'s mut Booleans<'a>,
    relations: &'s mut Vec<Relation<'a>>,
    ctes: &'s mut Vec<&'a str>,
    conditions: Vec<Condition>,
    locking: bool,
    select_into: bool,
    modifying_cte: bool,
    insert_without_columns: bool,
    error: Option<ExtractError>,
}

impl<'a> Visitor<'_, 'a> {
    fn visit(&mut self, node: NodeRef<'a>) -> Walk {
        let result = match node {
            NodeRef::RangeVar(range) => {
                if let Some(name) = range.relname() {
                    let alias = range.alias().and_then(|alias| alias.aliasname());
                    self.relations.push((range.schemaname(), name, alias));
                }
                // Only the alias below.
                return Walk::SkipChildren;
            }
            NodeRef::CommonTableExpr(cte) => {
                if let Some(name) = cte.ctename() {
                    self.ctes.push(name);
                }
                if let Some(query) = cte.ctequery() {
                    self.modifying_cte |= matches!(
                        query.kind(),
                        NodeRef::InsertStmt(_)
                            | NodeRef::UpdateStmt(_)
                            | NodeRef::DeleteStmt(_)
                            | NodeRef::MergeStmt(_)
                    );
                }
                Ok(())
            }
            NodeRef::SelectStmt(select) => self.select(select),
            NodeRef::UpdateStmt(update) => self.level(update.where_clause()),
            NodeRef::DeleteStmt(delete) => self.level(delete.where_clause()),
            NodeRef::MergeStmt(merge) => self.level(merge.join_condition()),
            NodeRef::InsertStmt(insert) => {
                self.insert(insert);
                Ok(())
            }
            // `FOR UPDATE OF o` names FROM items (often aliases), not tables.
            NodeRef::LockingClause(_) => return Walk::SkipChildren,
            // Leaves (their children are name parts at most).
            NodeRef::ColumnRef(_) | NodeRef::AConst(_) | NodeRef::ParamRef(_) => {
                return Walk::SkipChildren
            }
            _ => Ok(()),
        };
        match result {
            Ok(()) => Walk::Continue,
            Err(err) => {
                self.error = Some(err);
                Walk::Stop
            }
        }
    }

    /// A SELECT level: WHERE AND-ed with the quals of the INNER joins in FROM.
    fn select(&mut self, select: SelectStmt<'a>) -> Result<(), ExtractError> {
        if !select.locking_clause().is_empty() {
            self.locking = true;
        }
        if select.into_clause().is_some() {
            self.select_into = true;
        }
        let mut level = Gathered::default();
        if let Some(expr) = select.where_clause() {
            if let Some(found) = condition(expr, self.booleans)? {
                level.push(found, 2);
            }
        }
        let from = select.from_clause();
        if !from.is_empty() {
            self.joins.clear();
            from.push_nodes(self.joins);
            while let Some(item) = self.joins.pop() {
                let NodeRef::JoinExpr(join) = item.kind() else {
                    continue;
                };
                // Only quals that restrict the level's rows count: those of
                // inner joins reached through preserved sides.
                let (left, right) = match join.jointype() {
                    JoinType::JoinInner => {
                        if let Some(quals) = join.quals() {
                            if let Some(found) = condition(quals, self.booleans)? {
                                level.push(found, 2);
                            }
                        }
                        (join.larg(), join.rarg())
                    }
                    JoinType::JoinLeft => (join.larg(), None),
                    JoinType::JoinRight => (None, join.rarg()),
                    _ => (None, None),
                };
                self.joins.extend(left);
                self.joins.extend(right);
            }
        }
        self.conditions.extend(level.into_and());
        Ok(())
    }

    /// An UPDATE / DELETE / MERGE level: one expression.
    fn level(&mut self, expr: Option<Node<'a>>) -> Result<(), ExtractError> {
        if let Some(expr) = expr {
            self.conditions.extend(condition(expr, self.booleans)?);
        }
        Ok(())
    }

    /// An INSERT level: its VALUES rows (INSERT ... SELECT is left to the
    /// SELECT's own levels, met by the walk).
    fn insert(&mut self, insert: InsertStmt<'a>) {
        let Some(NodeRef::SelectStmt(values)) = insert.select_stmt().map(Node::kind) else {
            return;
        };
        let rows = values.values_lists();
        if rows.is_empty() || values.op() != SetOperation::SetopNone {
            return;
        }
        let columns = insert.cols();
        if columns.is_empty() {
            self.insert_without_columns = true;
            return;
        }
        let Some(target) = insert.relation() else {
            return;
        };
        let Some(table) = target
            .alias()
            .and_then(|alias| alias.aliasname())
            .or(target.relname())
        else {
            return;
        };
        let mut any = Gathered::default();
        for row in rows.iter() {
            let Some(NodeRef::List(row)) = row.map(Node::kind) else {
                return;
            };
            match row_condition(table, columns, row) {
                Some(found) => any.push(found, rows.len()),
                None => return,
            }
        }
        self.conditions.extend(any.into_or());
    }
}

/// One VALUES row: the `Eq`s of the plain columns given a value.
fn row_condition(table: &str, columns: List<'_>, row: List<'_>) -> Option<Condition> {
    let mut all = Gathered::default();
    for (column, value) in columns.iter().zip(row.iter()) {
        let Some(NodeRef::ResTarget(target)) = column.map(Node::kind) else {
            continue;
        };
        // `(arr[1])`, `(composite.field)` assign a part of the column.
        if !target.indirection().is_empty() {
            continue;
        }
        let (Some(name), Some(value)) = (target.name(), value.and_then(value_of)) else {
            continue;
        };
        let eq = Condition::Eq {
            column: ColumnRef {
                table: Some(table.to_owned()),
                column: name.to_owned(),
            },
            value: value.to_value(),
        };
        all.push(eq, columns.len());
    }
    all.into_and()
}

/// The condition an expression gives, if any.
///
/// AND/OR/NOT are evaluated with explicit stacks (one [`Frame`] per open
/// boolean node, its arguments waiting on `pending`) rather than recursion, so
/// no input can exhaust the thread's stack. A level's expression is at depth
/// 1 and a boolean node's arguments one deeper; meeting any node deeper than
/// [`MAX_DEPTH`] is [`ExtractError::TooDeep`]. Every argument is looked at,
/// even after an OR branch without a condition, so whether a tree is too deep
/// does not depend on what its other branches hold.
fn condition<'a>(
    expr: Node<'a>,
    booleans: &mut Booleans<'a>,
) -> Result<Option<Condition>, ExtractError> {
    let Booleans { frames, pending } = booleans;
    frames.clear();
    pending.clear();
    let mut next = expr;
    loop {
        if frames.len() >= MAX_DEPTH {
            return Err(ExtractError::TooDeep);
        }
        let mut result = match next.kind() {
            NodeRef::BoolExpr(bool_expr) => {
                let op = match bool_expr.boolop() {
                    BoolExprType::AndExpr => BoolOp::And,
                    BoolExprType::OrExpr => BoolOp::Or,
                    _ => BoolOp::Not,
                };
                let args = bool_expr.args();
                let before = pending.len();
                args.push_nodes(pending);
                frames.push(Frame {
                    op,
                    capacity: args.len(),
                    remaining: pending.len() - before,
                    gathered: Gathered::Empty,
                    keyed: true,
                });
                None
            }
            NodeRef::AExpr(a_expr) => Some(comparison(a_expr)),
            _ => Some(None),
        };
        // Fold the result into the open frames, closing those that are done,
        // until one has another argument to look at.
        loop {
            let Some(frame) = frames.last_mut() else {
                return Ok(result.flatten());
            };
            if let Some(found) = result.take() {
                frame.fold(found);
            }
            if frame.remaining > 0 {
                frame.remaining -= 1;
                if let Some(arg) = pending.pop() {
                    next = arg;
                    break;
                }
            }
            let done = frames.pop().and_then(Frame::finish);
            result = Some(done);
        }
    }
}

/// The stacks [`condition`] works on, reused from one expression to the next.
#[derive(Default)]
struct Booleans<'a> {
    frames: Vec<Frame>,
    /// Arguments of the open frames not looked at yet (each frame's on top of
    /// its parent's).
    pending: Vec<Node<'a>>,
}

/// An AND, OR or NOT being evaluated by [`condition`].
struct Frame {
    op: BoolOp,
    /// Number of arguments (to size the result).
    capacity: usize,
    /// Arguments still on the pending stack.
    remaining: usize,
    gathered: Gathered,
    /// For OR: every branch so far gave a condition.
    keyed: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BoolOp {
    And,
    Or,
    Not,
}

impl Frame {
    /// Take in the condition (or none) of one argument.
    fn fold(&mut self, found: Option<Condition>) {
        match (self.op, found) {
            (BoolOp::And, Some(found)) => self.gathered.push(found, self.capacity),
            (BoolOp::Or, Some(found)) if self.keyed => self.gathered.push(found, self.capacity),
            (BoolOp::Or, None) => {
                self.keyed = false;
                self.gathered = Gathered::Empty;
            }
            _ => {}
        }
    }

    fn finish(self) -> Option<Condition> {
        match self.op {
            BoolOp::And => self.gathered.into_and(),
            BoolOp::Or => self.gathered.into_or(),
            // NOT restricts nothing we can use.
            BoolOp::Not => None,
        }
    }
}

/// `col = v`, `v = col`, `col IN (...)`, `col = ANY(...)`.
fn comparison(a_expr: view::AExpr<'_>) -> Option<Condition> {
    let kind = a_expr.kind();
    if !matches!(
        kind,
        AExprKind::AexprOp | AExprKind::AexprOpAny | AExprKind::AexprIn
    ) || !is_equals(a_expr.name())
    {
        return None;
    }
    let left = a_expr.lexpr()?;
    let right = a_expr.rexpr()?;
    match kind {
        AExprKind::AexprOp => {
            let (column, value) = match column_of(left) {
                Some(column) => (column, value_of(right)?),
                None => (column_of(right)?, value_of(left)?),
            };
            Some(Condition::Eq {
                column: column.to_column(),
                value: value.to_value(),
            })
        }
        AExprKind::AexprOpAny => {
            let column = column_of(left)?;
            match right.kind() {
                NodeRef::AArrayExpr(array) => one_of(column, array.elements()),
                _ => Some(Condition::Any {
                    column: column.to_column(),
                    value: value_of(right)?.to_value(),
                }),
            }
        }
        // AexprIn (`NOT IN` is named `<>`, refused above).
        _ => match right.kind() {
            NodeRef::List(values) => one_of(column_of(left)?, values),
            _ => None,
        },
    }
}

/// `col IN (v1, ...)`: one `Eq`, or an `Or` of them; every element a value.
fn one_of(column: Column<'_>, values: List<'_>) -> Option<Condition> {
    // Check every element before copying anything out.
    if !values.iter().all(|value| value.and_then(value_of).is_some()) {
        return None;
    }
    let mut any = Gathered::default();
    for value in values.iter().flatten().filter_map(value_of) {
        let eq = Condition::Eq {
            column: column.to_column(),
            value: value.to_value(),
        };
        any.push(eq, values.len());
    }
    any.into_or()
}

/// Whether an operator name's last part is `=`.
fn is_equals(name: List<'_>) -> bool {
    let count = name.len();
    match count.checked_sub(1).and_then(|last| name.get(last)) {
        Some(last) => matches!(last.kind(), NodeRef::String(op) if op.sval() == Some("=")),
        None => false,
    }
}

/// A column, borrowed from the tree.
#[derive(Clone, Copy)]
struct Column<'a> {
    table: Option<&'a str>,
    column: &'a str,
}

impl Column<'_> {
    fn to_column(self) -> ColumnRef {
        ColumnRef {
            table: self.table.map(str::to_owned),
            column: self.column.to_owned(),
        }
    }
}

/// A ColumnRef ending in a name (not `*`).
fn column_of(node: Node<'_>) -> Option<Column<'_>> {
    let NodeRef::ColumnRef(column) = node.kind() else {
        return None;
    };
    let mut previous = None;
    let mut last = None;
    for field in column.fields().iter() {
        previous = last;
        last = field;
    }
    let NodeRef::String(name) = last?.kind() else {
        return None;
    };
    let table = match previous.map(Node::kind) {
        Some(NodeRef::String(table)) => table.sval(),
        _ => None,
    };
    Some(Column {
        table,
        column: name.sval()?,
    })
}

/// A value, borrowed from the tree.
#[derive(Clone, Copy)]
struct ValueOf<'a> {
    source: SourceOf<'a>,
    /// The outermost cast's type.
    cast: Option<TypeName<'a>>,
}

#[derive(Clone, Copy)]
enum SourceOf<'a> {
    Integer(i32, i32),
    Text(&'a str, i32),
    Param(u16),
    Null,
}

impl ValueOf<'_> {
    fn to_value(self) -> Value {
        let source = match self.source {
            SourceOf::Integer(value, location) => ValueSource::Integer {
                value: i64::from(value),
                location,
            },
            SourceOf::Text(text, location) => ValueSource::Text {
                text: text.to_owned(),
                location,
            },
            SourceOf::Param(number) => ValueSource::Param(number),
            SourceOf::Null => ValueSource::Null,
        };
        Value {
            source,
            cast: self.cast.and_then(type_name),
        }
    }
}

/// A constant, a parameter, or casts of one (followed in a loop: a chain of
/// a million casts costs no stack).
fn value_of(node: Node<'_>) -> Option<ValueOf<'_>> {
    let mut cast = None;
    let mut node = node;
    loop {
        match node.kind() {
            NodeRef::TypeCast(type_cast) => {
                if cast.is_none() {
                    cast = Some(type_cast.type_name()?);
                }
                node = type_cast.arg()?;
            }
            NodeRef::AConst(constant) => {
                return Some(ValueOf {
                    source: constant_of(constant)?,
                    cast,
                })
            }
            NodeRef::ParamRef(param) => {
                // `$0` and numbers past the protocol's 65535 name no parameter.
                let number = u16::try_from(param.number()).ok().filter(|&n| n > 0)?;
                return Some(ValueOf {
                    source: SourceOf::Param(number),
                    cast,
                });
            }
            _ => return None,
        }
    }
}

fn constant_of(constant: AConst<'_>) -> Option<SourceOf<'_>> {
    if constant.isnull() {
        return Some(SourceOf::Null);
    }
    let location = constant.location();
    match constant.val()? {
        ConstValue::Integer(value) => Some(SourceOf::Integer(value, location)),
        ConstValue::Float(text) | ConstValue::String(text) => Some(SourceOf::Text(text, location)),
        ConstValue::Boolean(_) | ConstValue::BitString(_) => None,
    }
}

/// A type name's last part, lower-cased.
fn type_name(type_name: TypeName<'_>) -> Option<String> {
    let names = type_name.names();
    let last = names.get(names.len().checked_sub(1)?)?;
    match last.kind() {
        NodeRef::String(name) => name.sval().map(str::to_lowercase),
        _ => None,
    }
}

/// Conditions gathered for an AND or an OR; allocates only for a second one.
#[derive(Default)]
enum Gathered {
    #[default]
    Empty,
    One(Condition),
    Many(Vec<Condition>),
}

impl Gathered {
    /// Add one; `capacity` is how many are expected in all.
    fn push(&mut self, condition: Condition, capacity: usize) {
        *self = match std::mem::take(self) {
            Gathered::Empty => Gathered::One(condition),
            Gathered::One(first) => {
                let mut all = Vec::with_capacity(capacity.max(2));
                all.push(first);
                all.push(condition);
                Gathered::Many(all)
            }
            Gathered::Many(mut all) => {
                all.push(condition);
                Gathered::Many(all)
            }
        };
    }

    /// AND rule: conditions without a use were never added; one stays as is.
    fn into_and(self) -> Option<Condition> {
        match self {
            Gathered::Empty => None,
            Gathered::One(condition) => Some(condition),
            Gathered::Many(all) => Some(Condition::And(all)),
        }
    }

    /// OR rule (the caller drops the whole OR if a branch gave nothing).
    fn into_or(self) -> Option<Condition> {
        match self {
            Gathered::Empty => None,
            Gathered::One(condition) => Some(condition),
            Gathered::Many(all) => Some(Condition::Or(all)),
        }
    }
}
