//! Summaries from pg_query's protobuf structs (engine `pg_query_protobuf`),
//! following the rules in [`super`]. One walk per statement visits every node
//! on a heap stack (no recursion per tree level, so no input can exhaust the
//! thread's stack) for tables, CTE names, locking and `INTO`; then a second
//! pass, again on a heap stack, follows only the query levels that restrict
//! the statement's rows (`Levels`) and reads each one's condition. A
//! statement with a sublink gets a third pass ([`sublinks_protobuf`]).
//!
//! The walk knows which fields of which protobuf struct may hold nodes from
//! the table at the end (`node_children!`), checked against the corpus by
//! counting the `Node`s of each tree.

use parser_ffi::protobuf::{self as pb, a_const::Val, node::Node as NodeEnum};

mod joins_protobuf;
mod schema_protobuf;
mod sublinks_protobuf;

use super::resolve::{self, Bodies, Body, Name, Output, Resolver, StatementTables};
use super::{ExtractError, MAX_CTE_CONDITION_NODES, MAX_DEPTH};
use crate::summary::{
    Argument, Call, ColumnRef, Condition, CteWrite, CursorEffect, CursorOptions, FetchDirection,
    InlineCode, SessionEffect, StatementKind, StatementSummary, Summary, TableRef, Value,
    ValueSource,
};

/// Summarize every statement of `tree` (see [`super`] for the rules).
pub fn summarize(tree: &pb::ParseResult) -> Result<Summary, ExtractError> {
    let mut stack = Stack::default();
    let mut statements = Vec::with_capacity(tree.stmts.len());
    for raw in &tree.stmts {
        let root = inner(&raw.stmt);
        let mut summary = statement(root, &mut stack)?;
        summary.session =
            root.and_then(|root| session_effect(root, raw.stmt_location, raw.stmt_len));
        statements.push(summary);
    }
    let mut summary = Summary { statements };
    summary.canonicalize();
    Ok(summary)
}

fn statement<'a>(
    root: Option<&'a NodeEnum>,
    stack: &mut Stack<'a>,
) -> Result<StatementSummary, ExtractError> {
    let mut found = Found::default();
    if let Some(root) = root {
        found.walk(root, stack)?;
    }
    let (kind, write) = classify(root);
    let Found {
        mut tables,
        calls,
        mut ctes,
        locking,
        select_into,
        modifying_cte,
        sublink,
        join,
    } = found;
    if !ctes.is_empty() {
        tables.retain(|table| table.schema.is_some() || !ctes.contains(&table.name));
    }
    let statement_tables = StatementTables::new(&tables);
    let mut levels = Levels::default();
    if let Some(root) = root {
        levels.run(root, &statement_tables)?;
    }
    let conditions = levels.lists.pop().unwrap_or_default();
    let cte_writes = cte_writes(&levels.scopes);
    let insert_without_columns = levels.insert_without_columns;
    let sublinks = match root {
        Some(root) if sublink => {
            ctes.sort_unstable();
            let is_cte = |name: &str| ctes.binary_search_by(|cte| cte.as_str().cmp(name)).is_ok();
            Some(Box::new(sublinks_protobuf::sublinks(
                root,
                &mut levels,
                &statement_tables,
                stack,
                is_cte,
            )?))
        }
        _ => None,
    };
    let joins = match root {
        Some(root) if join => joins_protobuf::joins(root, stack)?,
        _ => None,
    };
    let (target, set_columns) = target_and_set_columns(root);
    Ok(StatementSummary {
        kind,
        write: write.unwrap_or(select_into || modifying_cte),
        locking,
        tables,
        conditions,
        insert_without_columns,
        target,
        set_columns,
        session: None,
        sublinks,
        joins,
        calls,
        schema_change: root.and_then(schema_protobuf::schema_change),
        cte_writes,
    })
}

/// What a top-level statement does to tracked session state (see the
/// rules in [`super`]); `location` and `len` are its RawStmt's.
fn session_effect(root: &NodeEnum, location: i32, len: i32) -> Option<SessionEffect> {
    use pb::VariableSetKind as V;
    match root {
        NodeEnum::VariableSetStmt(set) => {
            let kind = set.kind();
            let transaction =
                kind == V::VarSetMulti && set.name.eq_ignore_ascii_case("TRANSACTION");
            if set.is_local || transaction {
                return Some(SessionEffect::TransactionScoped("SET"));
            }
            let name = || Some(set.name.to_ascii_lowercase()).filter(|n| !n.is_empty());
            Some(match kind {
                V::VarResetAll => SessionEffect::ResetAll,
                V::VarSetValue | V::VarSetCurrent => {
                    match (name(), usize::try_from(location), usize::try_from(len)) {
                        (Some(name), Ok(start), Ok(len)) => SessionEffect::Set { name, start, len },
                        _ => SessionEffect::Untracked,
                    }
                }
                V::VarSetDefault | V::VarReset => match name() {
                    Some(name) => SessionEffect::Reset { name },
                    None => SessionEffect::Untracked,
                },
                _ => SessionEffect::Untracked,
            })
        }
        NodeEnum::ConstraintsSetStmt(_) => {
            Some(SessionEffect::TransactionScoped("SET CONSTRAINTS"))
        }
        NodeEnum::DeallocateStmt(stmt) if stmt.isall => Some(SessionEffect::Deallocate(None)),
        NodeEnum::DeallocateStmt(stmt) if !stmt.name.is_empty() => {
            Some(SessionEffect::Deallocate(Some(stmt.name.clone())))
        }
        NodeEnum::DiscardStmt(discard) if discard.target() == pb::DiscardMode::DiscardAll => {
            Some(SessionEffect::DiscardAll)
        }
        NodeEnum::PrepareStmt(prepare) if !prepare.name.is_empty() => {
            Some(SessionEffect::Prepare {
                name: prepare.name.clone(),
                types: prepare
                    .argtypes
                    .iter()
                    .map(|node| match node.node.as_ref() {
                        Some(NodeEnum::TypeName(name)) => type_name(name),
                        _ => None,
                    })
                    .collect(),
                start: usize::try_from(location).ok()?,
                len: usize::try_from(len).ok()?,
            })
        }
        _ => {
            let execute = match root {
                NodeEnum::ExecuteStmt(execute) => execute,
                NodeEnum::ExplainStmt(explain) => match inner(&explain.query)? {
                    NodeEnum::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                NodeEnum::CreateTableAsStmt(create) => match inner(&create.query)? {
                    NodeEnum::ExecuteStmt(execute) => execute,
                    _ => return None,
                },
                _ => return cursor_effect(root).map(SessionEffect::Cursor),
            };
            if execute.name.is_empty() {
                return None;
            }
            Some(SessionEffect::Execute {
                name: execute.name.clone(),
                args: execute.params.iter().map(argument).collect(),
                start: usize::try_from(location).ok()?,
                len: usize::try_from(len).ok()?,
            })
        }
    }
}

/// An EXECUTE's argument (see [`Argument`]).
fn argument(node: &pb::Node) -> Argument {
    match node.node.as_ref() {
        Some(NodeEnum::AConst(constant)) if constant.isnull => Argument::Value(ValueSource::Null),
        Some(NodeEnum::AConst(constant)) => match constant.val.as_ref() {
            Some(Val::Ival(int)) => Argument::Value(ValueSource::Integer {
                value: i64::from(int.ival),
                location: constant.location,
            }),
            Some(Val::Sval(text)) => Argument::Value(ValueSource::Text {
                text: text.sval.clone(),
                location: constant.location,
            }),
            Some(Val::Fval(float)) => Argument::Number(float.fval.clone()),
            _ => Argument::Expression,
        },
        Some(NodeEnum::ParamRef(param)) => match u16::try_from(param.number) {
            Ok(number) if number > 0 => Argument::Value(ValueSource::Param(number)),
            _ => Argument::Expression,
        },
        _ => Argument::Expression,
    }
}

/// The writes of the data-modifying CTEs the condition pass evaluated
/// (those of the statement's own WITH: Postgres allows no others).
fn cte_writes(scopes: &Scopes<'_>) -> Vec<CteWrite> {
    scopes
        .ctes
        .iter()
        .filter_map(|cte| {
            let body = cte.body?;
            let inserts = match body {
                NodeEnum::InsertStmt(_) | NodeEnum::MergeStmt(_) => true,
                NodeEnum::UpdateStmt(_) | NodeEnum::DeleteStmt(_) => false,
                _ => return None,
            };
            let CteState::Done { conditions, .. } = &cte.state else {
                return None;
            };
            let (table, set_columns) = target_and_set_columns(Some(body));
            Some(CteWrite {
                inserts,
                table: table?,
                set_columns,
                conditions: conditions.clone(),
            })
        })
        .collect()
}

/// What a top-level statement does with a cursor (see the rules in
/// [`super`]).
fn cursor_effect(root: &NodeEnum) -> Option<CursorEffect> {
    let named = non_empty;
    let current_of = |clause: &Option<Box<pb::Node>>| match inner(clause) {
        Some(NodeEnum::CurrentOfExpr(current)) => named(&current.cursor_name),
        _ => None,
    };
    Some(match root {
        NodeEnum::DeclareCursorStmt(declare) => CursorEffect::Declare {
            name: named(&declare.portalname)?,
            options: CursorOptions::from_bits(declare.options),
        },
        NodeEnum::FetchStmt(fetch) => CursorEffect::Fetch {
            name: named(&fetch.portalname)?,
            direction: match fetch.direction() {
                pb::FetchDirection::FetchBackward => FetchDirection::Backward,
                pb::FetchDirection::FetchAbsolute => FetchDirection::Absolute,
                pb::FetchDirection::FetchRelative => FetchDirection::Relative,
                _ => FetchDirection::Forward,
            },
            count: fetch.how_many,
            moves: fetch.ismove,
        },
        NodeEnum::ClosePortalStmt(close) => CursorEffect::Close(named(&close.portalname)),
        NodeEnum::UpdateStmt(update) => CursorEffect::CurrentOf(current_of(&update.where_clause)?),
        NodeEnum::DeleteStmt(delete) => CursorEffect::CurrentOf(current_of(&delete.where_clause)?),
        _ => return None,
    })
}

/// The table the statement writes and the columns an UPDATE (or a MERGE's
/// UPDATE actions) assigns: of the statement, or of the one EXPLAIN explains.
fn target_and_set_columns(root: Option<&NodeEnum>) -> (Option<TableRef>, Vec<String>) {
    let stmt = match root {
        Some(NodeEnum::ExplainStmt(explain)) => inner(&explain.query),
        stmt => stmt,
    };
    let mut columns = Vec::new();
    let relation = match stmt {
        Some(NodeEnum::InsertStmt(insert)) => &insert.relation,
        Some(NodeEnum::UpdateStmt(update)) => {
            assigned(&update.target_list, &mut columns);
            &update.relation
        }
        Some(NodeEnum::DeleteStmt(delete)) => &delete.relation,
        Some(NodeEnum::MergeStmt(merge)) => {
            // WHEN MATCHED and WHEN NOT MATCHED BY SOURCE: both update.
            for clause in &merge.merge_when_clauses {
                if let Some(NodeEnum::MergeWhenClause(clause)) = clause.node.as_ref() {
                    if clause.command_type() == pb::CmdType::CmdUpdate {
                        assigned(&clause.target_list, &mut columns);
                    }
                }
            }
            &merge.relation
        }
        Some(NodeEnum::CopyStmt(copy)) if copy.is_from => &copy.relation,
        _ => return (None, Vec::new()),
    };
    let target = relation
        .as_ref()
        .filter(|range_var| !range_var.relname.is_empty())
        .map(table_ref);
    columns.sort_unstable();
    columns.dedup();
    (target, columns)
}

/// The column names a SET list assigns.
fn assigned(targets: &[pb::Node], columns: &mut Vec<String>) {
    for target in targets {
        if let Some(NodeEnum::ResTarget(target)) = target.node.as_ref() {
            columns.extend(non_empty(&target.name));
        }
    }
}

fn table_ref(range_var: &pb::RangeVar) -> TableRef {
    TableRef {
        schema: non_empty(&range_var.schemaname),
        name: range_var.relname.clone(),
        alias: range_var
            .alias
            .as_ref()
            .and_then(|alias| non_empty(&alias.aliasname)),
    }
}

/// The statement's kind and whether it writes: `None` for a SELECT, which
/// writes if some SelectStmt of it has INTO or some CTE modifies data
/// (Postgres accepts those only at the top, and refuses the statement
/// otherwise). An EXPLAIN takes the explained statement's `write`.
fn classify(root: Option<&NodeEnum>) -> (StatementKind, Option<bool>) {
    use StatementKind as K;
    let (kind, write) = match root {
        None => (K::Other, false),
        Some(NodeEnum::SelectStmt(_)) => return (K::Select, None),
        Some(NodeEnum::InsertStmt(_)) => (K::Insert, true),
        Some(NodeEnum::UpdateStmt(_)) => (K::Update, true),
        Some(NodeEnum::DeleteStmt(_)) => (K::Delete, true),
        Some(NodeEnum::MergeStmt(_)) => (K::Merge, true),
        Some(NodeEnum::CopyStmt(copy)) => (K::Copy { to: !copy.is_from }, copy.is_from),
        Some(NodeEnum::TransactionStmt(transaction)) => (transaction_kind(transaction), false),
        Some(NodeEnum::VariableSetStmt(set)) => (set_kind(set), false),
        Some(NodeEnum::VariableShowStmt(_) | NodeEnum::DiscardStmt(_)) => (K::Session, false),
        Some(NodeEnum::ExplainStmt(explain)) => {
            let query = inner(&explain.query);
            // The grammar explains no EXPLAIN; a hand-built tree that does
            // is not followed further.
            let write = match query {
                Some(NodeEnum::ExplainStmt(_)) => Some(false),
                query => classify(query).1,
            };
            return (K::Explain, write);
        }
        Some(NodeEnum::DoStmt(code)) => (K::Do(Box::new(inline_code(&code.args))), true),
        Some(NodeEnum::CallStmt(_)) => (K::Other, true),
        Some(node) if is_ddl(node) => (K::Ddl, true),
        Some(_) => (K::Other, false),
    };
    (kind, Some(write))
}

/// A DO block's language and body, from its DefElems (`as`, `language`).
fn inline_code(args: &[pb::Node]) -> InlineCode {
    let mut code = InlineCode {
        language: "plpgsql".to_owned(),
        body: String::new(),
    };
    for arg in args {
        let Some(NodeEnum::DefElem(elem)) = arg.node.as_ref() else {
            continue;
        };
        let Some(NodeEnum::String(value)) = inner(&elem.arg) else {
            continue;
        };
        match elem.defname.as_str() {
            "as" => code.body.clone_from(&value.sval),
            "language" => code.language = value.sval.to_ascii_lowercase(),
            _ => {}
        }
    }
    code
}

/// A FuncCall as the summary keeps it; `None` when its name is not a plain
/// (schema-qualified) name.
fn call_of(call: &pb::FuncCall) -> Option<Call> {
    let name_at = |i: usize| match call.funcname.get(i).and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::String(name)) => Some(name.sval.clone()),
        _ => None,
    };
    let last = call.funcname.len().checked_sub(1)?;
    let name = name_at(last)?;
    let schema = last.checked_sub(1).and_then(name_at);
    let args = call.args.iter().map(value).collect();
    Some(Call { schema, name, args })
}

fn transaction_kind(transaction: &pb::TransactionStmt) -> StatementKind {
    use pb::TransactionStmtKind as T;
    match transaction.kind() {
        T::TransStmtBegin | T::TransStmtStart => StatementKind::Begin,
        T::TransStmtCommit => StatementKind::Commit,
        T::TransStmtRollback => StatementKind::Rollback,
        _ => StatementKind::TransactionOther,
    }
}

/// `SET pgdog.shard` / `pgdog.sharding_key`: one literal gives its text
/// (`SET x TO DEFAULT` is `RESET x`); any other form of SET on them (several
/// values, `FROM CURRENT`) is left to the server, as a plain session command.
fn set_kind(set: &pb::VariableSetStmt) -> StatementKind {
    use pb::VariableSetKind as V;
    let wrap: fn(Option<String>) -> StatementKind = match set.name.as_str() {
        "pgdog.shard" => StatementKind::SetShard,
        "pgdog.sharding_key" => StatementKind::SetShardingKey,
        _ => return StatementKind::Session,
    };
    let value = match (set.kind(), set.args.as_slice()) {
        (V::VarReset | V::VarSetDefault, _) => None,
        (V::VarSetValue, [arg]) => match arg.node.as_ref() {
            Some(NodeEnum::AConst(pb::AConst { val: Some(val), .. })) => Some(match val {
                Val::Ival(int) => int.ival.to_string(),
                Val::Sval(text) => text.sval.clone(),
                Val::Fval(float) => float.fval.clone(),
                Val::Boolval(_) | Val::Bsval(_) => return StatementKind::Session,
            }),
            _ => return StatementKind::Session,
        },
        _ => return StatementKind::Session,
    };
    wrap(value)
}

/// Schema changes: what Postgres logs under `log_statement = 'ddl'`, plus
/// TRUNCATE and REFRESH MATERIALIZED VIEW (both rewrite a table's data on
/// every shard, as DDL runs).
fn is_ddl(node: &NodeEnum) -> bool {
    macro_rules! any_of {
        ($($variant:ident)*) => { matches!(node, $(NodeEnum::$variant(_))|*) };
    }
    any_of! {
        CreateSchemaStmt CreateStmt CreateTableSpaceStmt CreateExtensionStmt CreateFdwStmt
        CreateForeignServerStmt CreateForeignTableStmt CreateUserMappingStmt
        CreatePolicyStmt CreateAmStmt CreateTrigStmt CreateEventTrigStmt CreatePlangStmt
        CreateRoleStmt CreateSeqStmt CreateDomainStmt CreateOpClassStmt CreateOpFamilyStmt
        CreateStatsStmt CreateFunctionStmt CreateEnumStmt CreateRangeStmt CreatedbStmt
        CreateTableAsStmt CreateConversionStmt CreateCastStmt CreateTransformStmt
        CreatePublicationStmt CreateSubscriptionStmt AlterTableStmt AlterCollationStmt
        AlterDomainStmt AlterDefaultPrivilegesStmt AlterTableSpaceOptionsStmt
        AlterTableMoveAllStmt AlterExtensionStmt AlterExtensionContentsStmt AlterFdwStmt
        AlterForeignServerStmt AlterUserMappingStmt AlterPolicyStmt AlterEventTrigStmt
        AlterRoleStmt AlterRoleSetStmt AlterSeqStmt AlterOpFamilyStmt AlterStatsStmt
        AlterFunctionStmt AlterObjectDependsStmt AlterObjectSchemaStmt AlterOwnerStmt
        AlterOperatorStmt AlterTypeStmt AlterEnumStmt AlterDatabaseStmt
        AlterDatabaseRefreshCollStmt AlterDatabaseSetStmt AlterSystemStmt
        AlterTsdictionaryStmt AlterTsconfigurationStmt AlterPublicationStmt
        AlterSubscriptionStmt DropStmt DropTableSpaceStmt DropUserMappingStmt DropRoleStmt
        DropdbStmt DropOwnedStmt DropSubscriptionStmt IndexStmt TruncateStmt RenameStmt
        CommentStmt SecLabelStmt GrantStmt GrantRoleStmt ViewStmt DefineStmt
        CompositeTypeStmt RuleStmt ReassignOwnedStmt ImportForeignSchemaStmt RefreshMatViewStmt
    }
}

/// What the walk of one statement collects.
#[derive(Default)]
struct Found {
    tables: Vec<TableRef>,
    calls: Vec<Call>,
    ctes: Vec<String>,
    locking: bool,
    select_into: bool,
    modifying_cte: bool,
    /// The statement has a SubLink.
    sublink: bool,
    /// The statement may join FROM items: it has a JoinExpr, a FROM list
    /// of two items or more, an UPDATE ... FROM, a DELETE ... USING or a
    /// MERGE.
    join: bool,
}

impl Found {
    /// Visit every node under `root`, depth first, on `stack`.
    fn walk<'a>(&mut self, root: &'a NodeEnum, stack: &mut Stack<'a>) -> Result<(), ExtractError> {
        stack.items.clear();
        stack.items.push((Item::Node(root), 1));
        while let Some((item, depth)) = stack.items.pop() {
            if depth > MAX_DEPTH {
                stack.items.clear();
                return Err(ExtractError::TooDeep);
            }
            if self.visit(item) {
                stack.depth = depth + 1;
                item.push_children(stack);
            }
        }
        Ok(())
    }

    /// Take what `item` gives; `false` to skip what lies below it.
    fn visit(&mut self, item: Item<'_>) -> bool {
        let node = match item {
            Item::Node(node) => node,
            Item::RangeVar(range_var) => return self.table(range_var),
            Item::Select(select) => {
                self.select(select);
                return true;
            }
            Item::Other(_) => return true,
        };
        match node {
            NodeEnum::RangeVar(range_var) => return self.table(range_var),
            // `FOR UPDATE OF o` names FROM items (often aliases), not tables.
            NodeEnum::LockingClause(_) => return false,
            NodeEnum::CommonTableExpr(cte) => {
                self.ctes.push(cte.ctename.clone());
                self.modifying_cte |= matches!(
                    inner(&cte.ctequery),
                    Some(
                        NodeEnum::InsertStmt(_)
                            | NodeEnum::UpdateStmt(_)
                            | NodeEnum::DeleteStmt(_)
                            | NodeEnum::MergeStmt(_)
                    )
                );
            }
            NodeEnum::SelectStmt(select) => self.select(select),
            NodeEnum::SubLink(_) => self.sublink = true,
            NodeEnum::FuncCall(call) => self.calls.extend(call_of(call)),
            // Its FuncCall is held directly (a node in C); its arguments
            // are nodes the walk meets.
            NodeEnum::CallStmt(call) => {
                self.calls
                    .extend(call.funccall.as_deref().and_then(call_of));
            }
            NodeEnum::JoinExpr(_) | NodeEnum::MergeStmt(_) => self.join = true,
            NodeEnum::UpdateStmt(update) => self.join |= !update.from_clause.is_empty(),
            NodeEnum::DeleteStmt(delete) => self.join |= !delete.using_clause.is_empty(),
            _ => {}
        }
        true
    }

    /// Note a table; `true`: the walk goes on into its alias.
    fn table(&mut self, range_var: &pb::RangeVar) -> bool {
        if !range_var.relname.is_empty() {
            self.tables.push(table_ref(range_var));
        }
        true
    }

    fn select(&mut self, select: &pb::SelectStmt) {
        self.locking |= !select.locking_clause.is_empty();
        self.select_into |= select.into_clause.is_some();
        self.join |= select.from_clause.len() > 1;
    }
}

/// The second pass: the query levels that restrict the statement's rows (see
/// [`super`]), on a heap stack of tasks, run depth first in the statement's
/// order (a CTE's body is evaluated completely when first referenced; the
/// data-modifying CTEs of the statement's own WITH before what its FROM
/// leads to). `lists` holds the condition lists being filled: the
/// statement's at the bottom, one more per UNION arm and per CTE body under
/// evaluation.
///
/// Query levels open around a task are counted (the statement's own query
/// is level 1; a set operation's arms, a FROM subquery, an INSERT's SELECT
/// and a referenced CTE's body are one deeper): past [`MAX_DEPTH`] the
/// statement is [`ExtractError::TooDeep`], so that conditions (a UNION chain
/// nests its ORs) stay as shallow as the rest.
#[derive(Default)]
struct Levels<'a> {
    tasks: Vec<Task<'a>>,
    lists: Vec<Vec<Condition>>,
    scopes: Scopes<'a>,
    insert_without_columns: bool,
}

/// A query: a node, or a SelectStmt held directly (a set operation's arm).
#[derive(Clone, Copy)]
enum Query<'a> {
    Node(&'a NodeEnum),
    Select(&'a pb::SelectStmt),
}

enum Task<'a> {
    /// Add the conditions of `query` (at tree depth `depth`, query level
    /// `level`, naming the CTEs of `scope`) to the innermost list; `top`: the
    /// statement's own query.
    Query {
        query: Query<'a>,
        depth: usize,
        level: usize,
        scope: Scope,
        top: bool,
    },
    /// Start a new innermost list.
    Open,
    /// Close the two innermost lists (a UNION's arms): their `Or` goes to the
    /// list below.
    Union,
    /// A contributing FROM (at query level `level`) references CTE `index`
    /// (`add`), or the statement's own WITH holds the data-modifying CTE
    /// `index` (not `add`): evaluate its body if that has not been done,
    /// then, if `add`, add its conditions to the innermost list (capped).
    Cte {
        index: usize,
        level: usize,
        add: bool,
    },
    /// CTE `index`'s body is evaluated (the innermost list): keep it, add it
    /// if `add`.
    CteDone { index: usize, add: bool },
}

impl<'a> Levels<'a> {
    /// The conditions of the statement `root` (left in `lists[0]`).
    fn run(&mut self, root: &'a NodeEnum, tables: &StatementTables) -> Result<(), ExtractError> {
        // EXPLAIN, COPY (query), CREATE TABLE AS, DECLARE, PREPARE: the
        // wrapped query is the statement's level.
        let mut node = root;
        let mut depth = 1;
        loop {
            let query = match node {
                NodeEnum::ExplainStmt(wrapper) => &wrapper.query,
                NodeEnum::CopyStmt(wrapper) => &wrapper.query,
                NodeEnum::CreateTableAsStmt(wrapper) => &wrapper.query,
                NodeEnum::DeclareCursorStmt(wrapper) => &wrapper.query,
                NodeEnum::PrepareStmt(wrapper) => &wrapper.query,
                _ => break,
            };
            let Some(query) = inner(query) else {
                break;
            };
            node = query;
            depth += 1;
        }
        self.lists.push(Vec::new());
        self.tasks.push(Task::Query {
            query: Query::Node(node),
            depth,
            level: 1,
            scope: None,
            top: true,
        });
        self.drain(tables)
    }

    /// The conditions of `query` (a sublink's, at tree depth `depth`) seeing
    /// the CTEs of `scope`.
    fn run_at(
        &mut self,
        query: &'a NodeEnum,
        depth: usize,
        scope: Scope,
        tables: &StatementTables,
    ) -> Result<Vec<Condition>, ExtractError> {
        self.lists.clear();
        self.tasks.clear();
        self.lists.push(Vec::new());
        self.tasks.push(Task::Query {
            query: Query::Node(query),
            depth,
            level: 1,
            scope,
            top: false,
        });
        self.drain(tables)?;
        Ok(self.lists.pop().unwrap_or_default())
    }

    /// Run the queued tasks.
    fn drain(&mut self, tables: &StatementTables) -> Result<(), ExtractError> {
        while let Some(task) = self.tasks.pop() {
            match task {
                Task::Query {
                    query,
                    depth,
                    level,
                    scope,
                    top,
                } => {
                    if level > MAX_DEPTH {
                        return Err(ExtractError::TooDeep);
                    }
                    let at = At {
                        depth,
                        level,
                        scope,
                    };
                    self.query(query, at, top, tables)?;
                }
                Task::Open => self.lists.push(Vec::new()),
                Task::Union => {
                    let right = self.lists.pop().unwrap_or_default();
                    let left = self.lists.pop().unwrap_or_default();
                    if let (Some(left), Some(right)) = (and(left), and(right)) {
                        self.add(Some(Condition::Or(vec![left, right])));
                    }
                }
                Task::Cte { index, level, add } => self.cte(index, level, add),
                Task::CteDone { index, add } => {
                    let conditions = self.lists.pop().unwrap_or_default();
                    let fits = fits(&conditions);
                    if let Some(cte) = self.scopes.ctes.get_mut(index) {
                        cte.state = CteState::Done { conditions, fits };
                    }
                    // Level 0: adding a finished CTE queues nothing.
                    self.cte(index, 0, add);
                }
            }
        }
        Ok(())
    }

    /// Add a level's condition, if any, to the innermost list.
    fn add(&mut self, condition: Option<Condition>) {
        if let (Some(condition), Some(list)) = (condition, self.lists.last_mut()) {
            list.push(condition);
        }
    }

    fn query(
        &mut self,
        query: Query<'a>,
        at: At,
        top: bool,
        tables: &StatementTables,
    ) -> Result<(), ExtractError> {
        let node = match query {
            Query::Select(select) => return self.select(select, at, top, tables),
            Query::Node(NodeEnum::SelectStmt(select)) => {
                return self.select(select, at, top, tables)
            }
            Query::Node(node) => node,
        };
        let depth = at.depth;
        let mut parts = Vec::new();
        let (at, from, target) = match node {
            NodeEnum::InsertStmt(insert) => {
                let at = self.with(insert.with_clause.as_ref(), at);
                self.insert(insert, at, tables);
                self.data_modifying_ctes(top, at);
                return Ok(());
            }
            NodeEnum::UpdateStmt(update) => {
                let at = self.with(update.with_clause.as_ref(), at);
                parts.extend(condition(update.where_clause.as_deref(), depth + 1)?);
                self.from(&update.from_clause, at, &mut parts)?;
                (at, &update.from_clause[..], update.relation.as_ref())
            }
            NodeEnum::DeleteStmt(delete) => {
                let at = self.with(delete.with_clause.as_ref(), at);
                parts.extend(condition(delete.where_clause.as_deref(), depth + 1)?);
                self.from(&delete.using_clause, at, &mut parts)?;
                (at, &delete.using_clause[..], delete.relation.as_ref())
            }
            NodeEnum::MergeStmt(merge) => {
                let at = self.with(merge.with_clause.as_ref(), at);
                parts.extend(condition(merge.join_condition.as_deref(), depth + 1)?);
                let source = merge.source_relation.as_deref();
                let source = source.map_or(&[][..], std::slice::from_ref);
                self.from(source, at, &mut parts)?;
                (at, source, merge.relation.as_ref())
            }
            _ => return Ok(()),
        };
        let resolved = self.resolve(and(parts), from, target, at.scope, tables);
        self.add(resolved);
        self.data_modifying_ctes(top, at);
        Ok(())
    }

    /// A level's condition with its columns resolved against its FROM
    /// items and `target` (see [`super::resolve`]).
    fn resolve(
        &mut self,
        condition: Option<Condition>,
        from: &'a [pb::Node],
        target: Option<&'a pb::RangeVar>,
        scope: Scope,
        tables: &StatementTables,
    ) -> Option<Condition> {
        let condition = condition?;
        let items = from_items(from, target, scope, &self.scopes);
        let mut bodies = ProtobufBodies {
            scopes: &mut self.scopes,
        };
        Resolver::new(items, &mut bodies, tables).condition(condition)
    }

    /// A SELECT: its own level, or a set operation's arms.
    fn select(
        &mut self,
        select: &'a pb::SelectStmt,
        at: At,
        top: bool,
        tables: &StatementTables,
    ) -> Result<(), ExtractError> {
        let at = self.with(select.with_clause.as_ref(), at);
        let arm = |arm: &'a Option<Box<pb::SelectStmt>>| {
            arm.as_deref().map(|select| Task::Query {
                query: Query::Select(select),
                depth: at.depth + 1,
                level: at.level + 1,
                scope: at.scope,
                top: false,
            })
        };
        // Tasks run last pushed first: left arms before right ones.
        match select.op() {
            pb::SetOperation::SetopUnion => {
                if let (Some(left), Some(right)) = (arm(&select.larg), arm(&select.rarg)) {
                    self.tasks.push(Task::Union);
                    self.tasks.push(right);
                    self.tasks.push(Task::Open);
                    self.tasks.push(left);
                    self.tasks.push(Task::Open);
                }
            }
            pb::SetOperation::SetopIntersect => {
                self.tasks.extend(arm(&select.rarg));
                self.tasks.extend(arm(&select.larg));
            }
            pb::SetOperation::SetopExcept => self.tasks.extend(arm(&select.larg)),
            _ => {
                let mut parts = Vec::new();
                parts.extend(condition(select.where_clause.as_deref(), at.depth + 1)?);
                self.from(&select.from_clause, at, &mut parts)?;
                let resolved =
                    self.resolve(and(parts), &select.from_clause, None, at.scope, tables);
                self.add(resolved);
            }
        }
        self.data_modifying_ctes(top, at);
        Ok(())
    }

    /// Where a query's WITH (if any) puts its levels: its CTEs become visible.
    fn with(&mut self, with: Option<&'a pb::WithClause>, at: At) -> At {
        let Some(with) = with else {
            return at;
        };
        // WithClause (depth + 1) > its list of CTEs (+ 2) > ctequery (+ 3).
        let scope = self.scopes.enter(with, at.scope, at.depth + 3);
        At { scope, ..at }
    }

    /// At the statement's own level, the data-modifying CTEs of its WITH
    /// (the scope `at` names) are evaluated whether referenced or not (their
    /// conditions are their writes', added to a level only where a
    /// contributing FROM references them). Called once the level has queued
    /// what it leads to: they are evaluated first, in order.
    fn data_modifying_ctes(&mut self, top: bool, at: At) {
        let Some(position) = at.scope.filter(|_| top) else {
            return;
        };
        let Some(group) = self.scopes.groups.get(position.group) else {
            return;
        };
        for index in (group.first..group.first + group.len).rev() {
            let modifying = self.scopes.ctes.get(index).is_some_and(|cte| {
                matches!(
                    cte.body,
                    Some(
                        NodeEnum::InsertStmt(_)
                            | NodeEnum::UpdateStmt(_)
                            | NodeEnum::DeleteStmt(_)
                            | NodeEnum::MergeStmt(_)
                    )
                )
            });
            if modifying {
                self.cte(index, at.level, false);
            }
        }
    }

    /// Evaluate CTE `index`, and add its conditions to the innermost list
    /// if `add` (see [`Task::Cte`]).
    fn cte(&mut self, index: usize, level: usize, add: bool) {
        let Levels {
            tasks,
            lists,
            scopes,
            ..
        } = self;
        let scope = scopes.body_scope(index);
        let Some(cte) = scopes.ctes.get_mut(index) else {
            return;
        };
        match &cte.state {
            CteState::New => {
                cte.state = CteState::Evaluating;
                tasks.push(Task::CteDone { index, add });
                tasks.extend(cte.body.map(|body| Task::Query {
                    query: Query::Node(body),
                    depth: cte.depth,
                    level: level + 1,
                    scope,
                    top: false,
                }));
                tasks.push(Task::Open);
            }
            // Referenced from its own body: nothing more to add.
            CteState::Evaluating => {}
            CteState::Done { conditions, fits } => {
                if let (true, Some(list)) = (*fits && add, lists.last_mut()) {
                    list.extend(conditions.iter().cloned());
                }
            }
        }
    }

    /// The FROM items reached through preserved sides: the quals of INNER
    /// joins go to `parts`; subqueries and CTE references are queued, to be
    /// evaluated in the order written. `at` is the level's own place.
    fn from(
        &mut self,
        items: &'a [pb::Node],
        at: At,
        parts: &mut Vec<Condition>,
    ) -> Result<(), ExtractError> {
        let mut pending: Vec<(&'a pb::Node, usize)> = items
            .iter()
            .rev()
            .map(|item| (item, at.depth + 1))
            .collect();
        let queued = self.tasks.len();
        while let Some((item, depth)) = pending.pop() {
            if depth > MAX_DEPTH {
                return Err(ExtractError::TooDeep);
            }
            match item.node.as_ref() {
                Some(NodeEnum::JoinExpr(join)) => {
                    let (left, right) = match join.jointype() {
                        pb::JoinType::JoinInner => {
                            parts.extend(condition(join.quals.as_deref(), depth + 1)?);
                            (&join.larg, &join.rarg)
                        }
                        pb::JoinType::JoinLeft => (&join.larg, &None),
                        pb::JoinType::JoinRight => (&None, &join.rarg),
                        _ => (&None, &None),
                    };
                    pending.extend(right.as_deref().map(|side| (side, depth + 1)));
                    pending.extend(left.as_deref().map(|side| (side, depth + 1)));
                }
                Some(NodeEnum::RangeSubselect(subselect)) => {
                    let query = inner(&subselect.subquery);
                    self.tasks.extend(query.map(|query| Task::Query {
                        query: Query::Node(query),
                        depth: depth + 1,
                        level: at.level + 1,
                        scope: at.scope,
                        top: false,
                    }));
                }
                Some(NodeEnum::RangeVar(range_var)) if range_var.schemaname.is_empty() => {
                    let found = self.scopes.find(at.scope, &range_var.relname);
                    self.tasks.extend(found.map(|index| Task::Cte {
                        index,
                        level: at.level,
                        add: true,
                    }));
                }
                _ => {}
            }
        }
        // Queued in the order written; run in that order.
        self.tasks[queued..].reverse();
        Ok(())
    }

    /// An INSERT: its VALUES rows, or its SELECT's levels.
    fn insert(&mut self, insert: &'a pb::InsertStmt, at: At, tables: &StatementTables) {
        match inner(&insert.select_stmt) {
            Some(NodeEnum::SelectStmt(values))
                if !values.values_lists.is_empty()
                    && values.op() == pb::SetOperation::SetopNone =>
            {
                let found = self.values(insert, values);
                let resolved = self.resolve(found, &[], insert.relation.as_ref(), None, tables);
                self.add(resolved);
            }
            Some(source) => self.tasks.push(Task::Query {
                query: Query::Node(source),
                depth: at.depth + 1,
                level: at.level + 1,
                scope: at.scope,
                top: false,
            }),
            // DEFAULT VALUES.
            None => {}
        }
    }

    /// `INSERT ... VALUES`: one condition for all rows (see [`super`]).
    fn values(&mut self, insert: &pb::InsertStmt, values: &pb::SelectStmt) -> Option<Condition> {
        if insert.cols.is_empty() {
            self.insert_without_columns = true;
            return None;
        }
        let target = insert.relation.as_ref()?;
        let alias = target
            .alias
            .as_ref()
            .and_then(|alias| non_empty(&alias.aliasname));
        let table = alias.unwrap_or_else(|| target.relname.clone());
        let mut rows = Vec::with_capacity(values.values_lists.len());
        for row in &values.values_lists {
            let Some(NodeEnum::List(row)) = row.node.as_ref() else {
                return None;
            };
            rows.push(row_condition(&table, &insert.cols, &row.items)?);
        }
        or(rows)
    }
}

/// Where a query sits: its tree depth, its query level, the CTEs it sees.
#[derive(Clone, Copy)]
struct At {
    depth: usize,
    level: usize,
    scope: Scope,
}

/// The CTEs a name is looked up in: those of WITH number `group` numbered
/// below `end`, then the group's outer scope. `None`: no CTE visible.
type Scope = Option<ScopePosition>;

#[derive(Clone, Copy)]
struct ScopePosition {
    group: usize,
    end: usize,
}

/// The CTEs of the contributing levels, by WITH (a group); names are looked
/// up by binary search, so many CTEs cost n log n.
#[derive(Default)]
struct Scopes<'a> {
    ctes: Vec<Cte<'a>>,
    groups: Vec<Group>,
    /// Each group's (name, CTE number)s sorted, at the group's CTE numbers.
    by_name: Vec<(&'a str, usize)>,
}

struct Cte<'a> {
    body: Option<&'a NodeEnum>,
    /// Its column names (`WITH c (a, b) AS ...`).
    colnames: &'a [pb::Node],
    /// Tree depth of the body.
    depth: usize,
    group: usize,
    state: CteState,
}

struct Group {
    first: usize,
    len: usize,
    recursive: bool,
    outer: Scope,
}

enum CteState {
    New,
    Evaluating,
    /// Evaluated; `fits`: small enough to be copied where referenced.
    Done {
        conditions: Vec<Condition>,
        fits: bool,
    },
}

impl<'a> Scopes<'a> {
    /// Add a WITH's CTEs (bodies at tree depth `depth`) below `outer`; the
    /// scope of the WITH's query.
    fn enter(&mut self, with: &'a pb::WithClause, outer: Scope, depth: usize) -> Scope {
        let group = self.groups.len();
        let first = self.ctes.len();
        for cte in &with.ctes {
            let Some(NodeEnum::CommonTableExpr(cte)) = cte.node.as_ref() else {
                continue;
            };
            self.by_name.push((&cte.ctename, self.ctes.len()));
            self.ctes.push(Cte {
                body: inner(&cte.ctequery),
                colnames: &cte.aliascolnames,
                depth,
                group,
                state: CteState::New,
            });
        }
        let end = self.ctes.len();
        if let Some(names) = self.by_name.get_mut(first..end) {
            names.sort_unstable();
        }
        self.groups.push(Group {
            first,
            len: end - first,
            recursive: with.recursive,
            outer,
        });
        Some(ScopePosition { group, end })
    }

    /// What CTE `index`'s body sees: in a RECURSIVE WITH every CTE of it,
    /// else the earlier ones, then the outer scope.
    fn body_scope(&self, index: usize) -> Scope {
        let group = self.ctes.get(index)?.group;
        let end = match self.groups.get(group) {
            Some(with) if with.recursive => with.first + with.len,
            _ => index,
        };
        Some(ScopePosition { group, end })
    }

    /// The CTE an unqualified name refers to from `scope`: the first visible
    /// one of that name (Postgres refuses two in one WITH), innermost first.
    fn find(&self, mut scope: Scope, name: &str) -> Option<usize> {
        while let Some(position) = scope {
            let group = self.groups.get(position.group)?;
            let names = self.by_name.get(group.first..group.first + group.len)?;
            let from = names.partition_point(|&(candidate, _)| candidate < name);
            let found = names
                .get(from..)?
                .iter()
                .take_while(|&&(candidate, _)| candidate == name)
                .map(|&(_, index)| index)
                .find(|&index| index < position.end);
            if found.is_some() {
                return found;
            }
            scope = group.outer;
        }
        None
    }
}

/// The columns that output column `column` of `query` (its select list
/// renamed by `colnames`, as a table created from it would name its
/// columns) passes through, resolved and written as condition columns are
/// (see **resolution** in [`super`]) among `tables`, a statement's: what
/// `... FROM (query) AS q (colnames) WHERE column = v` would be keyed by.
/// Empty when it passes none through.
pub fn output_source(
    query: &NodeEnum,
    colnames: &[&str],
    column: &str,
    tables: &[TableRef],
) -> Vec<ColumnRef> {
    let mut scopes = Scopes::default();
    let item = resolve::Item::Derived {
        name: None,
        colnames: colnames.to_vec(),
        query: (query, None),
    };
    let tables = StatementTables::new(tables);
    let mut bodies = ProtobufBodies {
        scopes: &mut scopes,
    };
    let written = ColumnRef {
        table: None,
        column: column.to_owned(),
    };
    match Resolver::new(vec![item], &mut bodies, &tables).column(&written) {
        resolve::Mapped::Same => vec![written],
        resolve::Mapped::Drop => Vec::new(),
        resolve::Mapped::Columns(columns) => columns,
    }
}

/// A query behind a derived item, and the CTEs it sees.
type Derived<'a> = (&'a NodeEnum, Scope);

/// A level's FROM items for resolution (see [`super::resolve`]): `target`
/// (an UPDATE's, DELETE's, MERGE's or INSERT's relation) first, then the
/// leaves of `from`'s join trees, left to right.
fn from_items<'a>(
    from: &'a [pb::Node],
    target: Option<&'a pb::RangeVar>,
    scope: Scope,
    scopes: &Scopes<'a>,
) -> Vec<resolve::Item<'a, Derived<'a>>> {
    let mut items = Vec::new();
    if let Some(table) = target.and_then(name_of) {
        items.push(resolve::Item::Table {
            table,
            renamed: false,
        });
    }
    // Join trees: left sides followed at once, right ones stacked (so a
    // FROM without joins allocates nothing here).
    let mut pending: Vec<&'a NodeEnum> = Vec::new();
    for top in from.iter().filter_map(|n| n.node.as_ref()) {
        let mut next = Some(top);
        while let Some(node) = next.take().or_else(|| pending.pop()) {
            match node {
                NodeEnum::JoinExpr(join) => {
                    pending.extend(inner(&join.rarg));
                    next = inner(&join.larg);
                }
                NodeEnum::RangeTableSample(sample) => next = inner(&sample.relation),
                NodeEnum::RangeVar(range) => {
                    let Some(table) = name_of(range) else {
                        continue;
                    };
                    let cte = match table.schema {
                        None => scopes.find(scope, table.name),
                        Some(_) => None,
                    };
                    let alias = range.alias.as_ref();
                    match cte.and_then(|index| Some((index, scopes.ctes.get(index)?))) {
                        Some((index, cte)) => {
                            let Some(body) = cte.body else {
                                continue;
                            };
                            items.push(resolve::Item::Derived {
                                name: Some(table.alias.unwrap_or(table.name)),
                                colnames: colnames(cte.colnames, alias),
                                query: (body, scopes.body_scope(index)),
                            });
                        }
                        None => items.push(resolve::Item::Table {
                            table,
                            renamed: alias.is_some_and(|alias| !alias.colnames.is_empty()),
                        }),
                    }
                }
                NodeEnum::RangeSubselect(subselect) => {
                    let Some(query) = inner(&subselect.subquery) else {
                        continue;
                    };
                    let alias = subselect.alias.as_ref();
                    items.push(resolve::Item::Derived {
                        name: alias.and_then(|alias| non_empty_str(&alias.aliasname)),
                        colnames: colnames(&[], alias),
                        query: (query, scope),
                    });
                }
                _ => {}
            }
        }
    }
    items
}

/// A RangeVar's names.
fn name_of(range: &pb::RangeVar) -> Option<Name<'_>> {
    Some(Name {
        schema: non_empty_str(&range.schemaname),
        name: non_empty_str(&range.relname)?,
        alias: range
            .alias
            .as_ref()
            .and_then(|alias| non_empty_str(&alias.aliasname)),
    })
}

/// A CTE's column names overridden position by position by an alias's.
fn colnames<'a>(cte: &'a [pb::Node], alias: Option<&'a pb::Alias>) -> Vec<&'a str> {
    let strings = |list: &'a [pb::Node]| -> Vec<&'a str> {
        list.iter()
            .filter_map(|node| match node.node.as_ref() {
                Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
                _ => None,
            })
            .collect()
    };
    let mut names = strings(cte);
    let alias = alias.map_or_else(Vec::new, |alias| strings(&alias.colnames));
    for (position, name) in alias.into_iter().enumerate() {
        match names.get_mut(position) {
            Some(slot) => *slot = name,
            None => names.push(name),
        }
    }
    names
}

/// What resolution reads of the queries behind derived items.
struct ProtobufBodies<'s, 'a> {
    scopes: &'s mut Scopes<'a>,
}

impl<'a> Bodies<'a> for ProtobufBodies<'_, 'a> {
    type Query = Derived<'a>;

    fn body(&mut self, (query, scope): Derived<'a>) -> Body<'a, Derived<'a>> {
        let mut body = Body {
            outputs: Vec::new(),
            passes: false,
            items: Vec::new(),
        };
        let returning = |clause: &'a Option<pb::ReturningClause>| {
            clause.as_ref().map(|clause| clause.exprs.as_slice())
        };
        let targets = match query {
            NodeEnum::SelectStmt(select) if select.op() == pb::SetOperation::SetopNone => {
                if select.values_lists.is_empty() {
                    body.passes = passes(select);
                    let scope = match &select.with_clause {
                        // Bodies entered here are never evaluated as tasks:
                        // their depth does not count.
                        Some(with) => self.scopes.enter(with, scope, 0),
                        None => scope,
                    };
                    body.items = from_items(&select.from_clause, None, scope, self.scopes);
                }
                Some(select.target_list.as_slice())
            }
            NodeEnum::SelectStmt(select) => {
                // A set operation: its leftmost arm names the columns.
                let mut arm: &'a pb::SelectStmt = select;
                while arm.op() != pb::SetOperation::SetopNone {
                    match arm.larg.as_deref() {
                        Some(left) => arm = left,
                        None => break,
                    }
                }
                Some(arm.target_list.as_slice())
            }
            NodeEnum::InsertStmt(insert) => returning(&insert.returning_clause),
            NodeEnum::UpdateStmt(update) => returning(&update.returning_clause),
            NodeEnum::DeleteStmt(delete) => returning(&delete.returning_clause),
            NodeEnum::MergeStmt(merge) => returning(&merge.returning_clause),
            _ => None,
        };
        if let Some(targets) = targets {
            body.outputs = targets.iter().map(output_of).collect();
        }
        body
    }
}

/// A select-list item as resolution sees it.
fn output_of(target: &pb::Node) -> Output<'_> {
    let Some(NodeEnum::ResTarget(target)) = target.node.as_ref() else {
        return Output::Unnamed;
    };
    let name = non_empty_str(&target.name);
    if let Some(NodeEnum::ColumnRef(column)) = inner(&target.val) {
        if let Some((last, rest)) = column.fields.split_last() {
            let qualifier = match rest.last().and_then(|field| field.node.as_ref()) {
                Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
                _ => None,
            };
            match last.node.as_ref() {
                Some(NodeEnum::AStar(_)) => return Output::Star(qualifier),
                Some(NodeEnum::String(column)) => {
                    return Output::Column {
                        name: name.unwrap_or(&column.sval),
                        table: qualifier,
                        column: &column.sval,
                    }
                }
                _ => {}
            }
        }
    }
    match name {
        Some(name) => Output::Named(name),
        None => Output::Unnamed,
    }
}

/// Whether a plain SELECT's rows are each computed where their source rows
/// live (see `resolve::Body::passes`).
fn passes(select: &pb::SelectStmt) -> bool {
    let distinct_on = select
        .distinct_clause
        .iter()
        .any(|item| item.node.is_some());
    if select.limit_count.is_some()
        || select.limit_offset.is_some()
        || distinct_on
        || !select.window_clause.is_empty()
    {
        return false;
    }
    let mut stack = Stack::default();
    for target in &select.target_list {
        if let Some(node) = &target.node {
            stack.items.push((Item::Node(node), 1));
        }
    }
    while let Some((item, depth)) = stack.items.pop() {
        if let Item::Node(NodeEnum::FuncCall(call)) = item {
            if call.over.is_some() {
                return false;
            }
        }
        stack.depth = depth + 1;
        item.push_children(&mut stack);
    }
    true
}

fn non_empty_str(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

/// Whether conditions hold at most [`MAX_CTE_CONDITION_NODES`] Eq, Any, And
/// and Or nodes (counted on a heap stack, stopping past the limit).
fn fits(conditions: &[Condition]) -> bool {
    let mut nodes = 0;
    let mut stack: Vec<&Condition> = conditions.iter().collect();
    while let Some(condition) = stack.pop() {
        nodes += 1;
        if nodes > MAX_CTE_CONDITION_NODES {
            return false;
        }
        if let Condition::And(children) | Condition::Or(children) = condition {
            stack.extend(children);
        }
    }
    true
}

/// One VALUES row: the `Eq`s of the columns given a value.
fn row_condition(table: &str, columns: &[pb::Node], row: &[pb::Node]) -> Option<Condition> {
    let eqs = columns.iter().zip(row).filter_map(|(column, expr)| {
        let Some(NodeEnum::ResTarget(target)) = column.node.as_ref() else {
            return None;
        };
        // `(arr[1])`, `(composite.field)` assign a part of the column.
        if !target.indirection.is_empty() || target.name.is_empty() {
            return None;
        }
        let column = ColumnRef {
            table: Some(table.to_owned()),
            column: target.name.clone(),
        };
        Some(Condition::Eq {
            column,
            value: value(expr)?,
        })
    });
    and(eqs.collect())
}

/// The condition an expression gives, if any. Evaluated on a heap stack, not
/// by recursion: AND/OR may nest as deep as the parser allows.
fn condition(expr: Option<&pb::Node>, depth: usize) -> Result<Option<Condition>, ExtractError> {
    enum Task<'a> {
        Eval(&'a pb::Node, usize),
        /// Combine the last `n` results.
        And(usize),
        Or(usize),
    }
    let Some(expr) = expr else {
        return Ok(None);
    };
    let mut tasks = vec![Task::Eval(expr, depth)];
    let mut results: Vec<Option<Condition>> = Vec::new();
    while let Some(task) = tasks.pop() {
        match task {
            Task::Eval(expr, depth) => {
                if depth > MAX_DEPTH {
                    return Err(ExtractError::TooDeep);
                }
                let bool_expr = match expr.node.as_ref() {
                    Some(NodeEnum::BoolExpr(bool_expr)) => bool_expr,
                    Some(NodeEnum::AExpr(a_expr)) => {
                        results.push(a_expr_condition(a_expr));
                        continue;
                    }
                    _ => {
                        results.push(None);
                        continue;
                    }
                };
                let n = bool_expr.args.len();
                match bool_expr.boolop() {
                    pb::BoolExprType::AndExpr => tasks.push(Task::And(n)),
                    pb::BoolExprType::OrExpr => tasks.push(Task::Or(n)),
                    // NOT, and anything unknown: no condition.
                    _ => {
                        results.push(None);
                        continue;
                    }
                }
                let args = bool_expr.args.iter();
                tasks.extend(args.map(|arg| Task::Eval(arg, depth + 1)));
            }
            Task::And(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                results.push(and(children.into_iter().flatten().collect()));
            }
            Task::Or(n) => {
                let children = results.split_off(results.len().saturating_sub(n));
                let children: Option<Vec<_>> = children.into_iter().collect();
                results.push(children.and_then(or));
            }
        }
    }
    Ok(results.pop().flatten())
}

/// `col = v`, `v = col`, `col IN (...)`, `col = ANY(...)`.
fn a_expr_condition(a_expr: &pb::AExpr) -> Option<Condition> {
    let operator = a_expr
        .name
        .last()
        .and_then(|name| match name.node.as_ref() {
            Some(NodeEnum::String(name)) => Some(name.sval.as_str()),
            _ => None,
        });
    if operator != Some("=") {
        return None;
    }
    let left = a_expr.lexpr.as_deref();
    let right = a_expr.rexpr.as_deref()?;
    match a_expr.kind() {
        pb::AExprKind::AexprOp => match (column(left?), column(right)) {
            (Some(column), None) => Some(Condition::Eq {
                column,
                value: value(right)?,
            }),
            (None, Some(column)) => Some(Condition::Eq {
                column,
                value: value(left?)?,
            }),
            _ => None,
        },
        pb::AExprKind::AexprIn => match right.node.as_ref() {
            Some(NodeEnum::List(list)) => in_list(column(left?)?, &list.items),
            _ => None,
        },
        pb::AExprKind::AexprOpAny => {
            let column = column(left?)?;
            match right.node.as_ref() {
                Some(NodeEnum::AArrayExpr(array)) => in_list(column, &array.elements),
                _ => Some(Condition::Any {
                    column,
                    value: value(right)?,
                }),
            }
        }
        _ => None,
    }
}

/// `col IN (v1, ...)`: every element must be a value.
fn in_list(column: ColumnRef, items: &[pb::Node]) -> Option<Condition> {
    let eqs = items.iter().map(|item| {
        Some(Condition::Eq {
            column: column.clone(),
            value: value(item)?,
        })
    });
    or(eqs.collect::<Option<Vec<_>>>()?)
}

/// AND of `parts`: one is returned as is, none gives no condition.
fn and(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Condition::And(parts)),
    }
}

/// OR of `parts` (every branch already gave a condition).
fn or(mut parts: Vec<Condition>) -> Option<Condition> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Condition::Or(parts)),
    }
}

/// A ColumnRef whose last field is a name.
fn column(expr: &pb::Node) -> Option<ColumnRef> {
    let Some(NodeEnum::ColumnRef(column_ref)) = expr.node.as_ref() else {
        return None;
    };
    let (last, rest) = column_ref.fields.split_last()?;
    let Some(NodeEnum::String(name)) = last.node.as_ref() else {
        return None;
    };
    let table = match rest.last().and_then(|field| field.node.as_ref()) {
        Some(NodeEnum::String(table)) => Some(table.sval.clone()),
        _ => None,
    };
    Some(ColumnRef {
        table,
        column: name.sval.clone(),
    })
}

/// A literal or parameter, possibly cast (the outermost cast names the type).
fn value(expr: &pb::Node) -> Option<Value> {
    let mut cast: Option<Option<String>> = None;
    let mut expr = expr.node.as_ref()?;
    // A loop: casts of casts need no recursion.
    while let NodeEnum::TypeCast(type_cast) = expr {
        if cast.is_none() {
            cast = Some(type_cast.type_name.as_ref().and_then(type_name));
        }
        expr = inner(&type_cast.arg)?;
    }
    let source = match expr {
        // `$0` and numbers past the protocol's 65535 name no parameter.
        NodeEnum::ParamRef(param) => {
            ValueSource::Param(u16::try_from(param.number).ok().filter(|&n| n > 0)?)
        }
        NodeEnum::AConst(constant) if constant.isnull => ValueSource::Null,
        NodeEnum::AConst(constant) => {
            let location = constant.location;
            match constant.val.as_ref()? {
                Val::Ival(int) => ValueSource::Integer {
                    value: i64::from(int.ival),
                    location,
                },
                Val::Fval(float) => ValueSource::Text {
                    text: float.fval.clone(),
                    location,
                },
                Val::Sval(text) => ValueSource::Text {
                    text: text.sval.clone(),
                    location,
                },
                Val::Boolval(_) | Val::Bsval(_) => return None,
            }
        }
        _ => return None,
    };
    Some(Value {
        source,
        cast: cast.flatten(),
    })
}

/// A type's last name part, lower-cased (`pg_catalog.int4` -> `int4`).
fn type_name(type_name: &pb::TypeName) -> Option<String> {
    match type_name.names.last()?.node.as_ref()? {
        NodeEnum::String(name) => Some(name.sval.to_ascii_lowercase()),
        _ => None,
    }
}

/// The node an optional boxed `Node` field holds.
fn inner(field: &Option<Box<pb::Node>>) -> Option<&NodeEnum> {
    field.as_deref().and_then(|node| node.node.as_ref())
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

// ---------------------------------------------------------------------------
// The walk: every field of every protobuf struct that can hold a node.

/// What the walk visits: a `Node`, or a struct that a field holds directly
/// (`InsertStmt.relation`, a set operation's arms, ...), a node in C too.
#[derive(Clone, Copy)]
enum Item<'a> {
    Node(&'a NodeEnum),
    RangeVar(&'a pb::RangeVar),
    Select(&'a pb::SelectStmt),
    Other(&'a dyn Children),
}

impl<'a> Item<'a> {
    fn push_children(self, stack: &mut Stack<'a>) {
        match self {
            Item::Node(node) => push_node_children(node, stack),
            Item::RangeVar(range_var) => range_var.push_children(stack),
            Item::Select(select) => select.push_children(stack),
            Item::Other(other) => other.push_children(stack),
        }
    }
}

/// The walk's heap stack: items with their depth (the statement is 1).
#[derive(Default)]
struct Stack<'a> {
    items: Vec<(Item<'a>, usize)>,
    /// Depth of the children being pushed.
    depth: usize,
}

impl<'a> Stack<'a> {
    fn push(&mut self, item: Item<'a>) {
        self.items.push((item, self.depth));
    }
}

/// A protobuf struct with fields that may hold nodes.
trait Children {
    fn push_children<'a>(&'a self, stack: &mut Stack<'a>);
}

/// A field's value: pushes the nodes it holds.
trait Field {
    fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>);
}

impl Field for pb::Node {
    fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>) {
        if let Some(node) = &self.node {
            stack.push(Item::Node(node));
        }
    }
}

impl<T: Field> Field for Vec<T> {
    fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>) {
        self.iter().for_each(|item| item.push_nodes(stack));
    }
}

impl<T: Field> Field for Option<T> {
    fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>) {
        if let Some(item) = self {
            item.push_nodes(stack);
        }
    }
}

impl<T: Field> Field for Box<T> {
    fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>) {
        T::push_nodes(self, stack);
    }
}

impl Field for pb::RangeVar {
    fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>) {
        stack.push(Item::RangeVar(self));
    }
}

impl Field for pb::SelectStmt {
    fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>) {
        stack.push(Item::Select(self));
    }
}

/// Structs held directly by fields, visited for their children only.
macro_rules! held_directly {
    ($($ty:ident),* $(,)?) => {$(
        impl Field for pb::$ty {
            fn push_nodes<'a>(&'a self, stack: &mut Stack<'a>) {
                stack.push(Item::Other(self));
            }
        }
    )*};
}

held_directly! {
    Alias, CollateClause, CreateStmt, CteCycleClause, CteSearchClause, FromExpr, FuncCall,
    FuncExpr, GrantStmt, InferClause, IntoClause, JsonAggConstructor, JsonBehavior,
    JsonKeyValue, JsonOutput, JsonTablePathSpec, JsonValueExpr, ObjectWithArgs,
    OnConflictClause, OnConflictExpr, PartitionBoundSpec, PartitionSpec, PublicationTable,
    Query, ReturningClause, TableFunc, TableSampleClause, TypeName, VariableSetStmt, WindowDef,
    WithClause,
}

/// One line per node type: `Variant(Type): fields that may hold nodes;`
/// (`(Type)` where the struct's name differs from the variant's). Generates
/// [`Children`] for each type and the dispatch from [`NodeEnum`]; node types
/// without such fields (value nodes, ParamRef, ...) have no children.
macro_rules! node_children {
    ($($variant:ident $(($ty:ident))? : $($field:ident),+ ;)*) => {
        $( node_children!(@impl [$variant $($ty)?] $($field),+); )*

        fn push_node_children<'a>(node: &'a NodeEnum, stack: &mut Stack<'a>) {
            match node {
                $( NodeEnum::$variant(node) => node.push_children(stack), )*
                _ => {}
            }
        }
    };
    (@impl [$variant:ident] $($field:ident),+) => {
        node_children!(@impl [$variant $variant] $($field),+);
    };
    (@impl [$variant:ident $ty:ident] $($field:ident),+) => {
        impl Children for pb::$ty {
            fn push_children<'a>(&'a self, stack: &mut Stack<'a>) {
                $( Field::push_nodes(&self.$field, stack); )+
            }
        }
    };
}

node_children! {
    Alias: colnames;
    RangeVar: alias;
    TableFunc: ns_uris, ns_names, docexpr, rowexpr, colnames, coltypes, coltypmods,
        colcollations, colexprs, coldefexprs, colvalexprs, passingvalexprs, plan;
    IntoClause: rel, col_names, options, view_query;
    Var: xpr;
    Param: xpr;
    Aggref: xpr, aggargtypes, aggdirectargs, args, aggorder, aggdistinct, aggfilter;
    GroupingFunc: xpr, args, refs;
    WindowFunc: xpr, args, aggfilter, run_condition;
    WindowFuncRunCondition: xpr, arg;
    MergeSupportFunc: xpr;
    SubscriptingRef: xpr, refupperindexpr, reflowerindexpr, refexpr, refassgnexpr;
    FuncExpr: xpr, args;
    NamedArgExpr: xpr, arg;
    OpExpr: xpr, args;
    DistinctExpr: xpr, args;
    NullIfExpr: xpr, args;
    ScalarArrayOpExpr: xpr, args;
    BoolExpr: xpr, args;
    SubLink: xpr, testexpr, oper_name, subselect;
    SubPlan: xpr, testexpr, param_ids, set_param, par_param, args;
    AlternativeSubPlan: xpr, subplans;
    FieldSelect: xpr, arg;
    FieldStore: xpr, arg, newvals, fieldnums;
    RelabelType: xpr, arg;
    CoerceViaIo: xpr, arg;
    ArrayCoerceExpr: xpr, arg, elemexpr;
    ConvertRowtypeExpr: xpr, arg;
    CollateExpr: xpr, arg;
    CaseExpr: xpr, arg, args, defresult;
    CaseWhen: xpr, expr, result;
    CaseTestExpr: xpr;
    ArrayExpr: xpr, elements;
    RowExpr: xpr, args, colnames;
    RowCompareExpr: xpr, opnos, opfamilies, inputcollids, largs, rargs;
    CoalesceExpr: xpr, args;
    MinMaxExpr: xpr, args;
    SqlvalueFunction(SqlValueFunction): xpr;
    XmlExpr: xpr, named_args, arg_names, args;
    JsonValueExpr: raw_expr, formatted_expr;
    JsonConstructorExpr: xpr, args, func, coercion;
    JsonIsPredicate: expr;
    JsonBehavior: expr;
    JsonExpr: xpr, formatted_expr, path_spec, passing_names, passing_values, on_empty, on_error;
    JsonTablePathScan: plan, child;
    JsonTableSiblingJoin: plan, lplan, rplan;
    NullTest: xpr, arg;
    BooleanTest: xpr, arg;
    MergeAction: qual, target_list, update_colnos;
    CoerceToDomain: xpr, arg;
    CoerceToDomainValue: xpr;
    SetToDefault: xpr;
    CurrentOfExpr: xpr;
    NextValueExpr: xpr;
    InferenceElem: xpr, expr;
    ReturningExpr: xpr, retexpr;
    TargetEntry: xpr, expr;
    JoinExpr: larg, rarg, using_clause, join_using_alias, quals, alias;
    FromExpr: fromlist, quals;
    OnConflictExpr: arbiter_elems, arbiter_where, on_conflict_set, on_conflict_where,
        excl_rel_tlist;
    Query: utility_stmt, cte_list, rtable, rteperminfos, jointree, merge_action_list,
        merge_join_condition, target_list, on_conflict, returning_list, group_clause,
        grouping_sets, having_qual, window_clause, distinct_clause, sort_clause, limit_offset,
        limit_count, row_marks, set_operations, constraint_deps, with_check_options;
    TypeName: names, typmods, array_bounds;
    ColumnRef: fields;
    AExpr: name, lexpr, rexpr;
    TypeCast: arg, type_name;
    CollateClause: arg, collname;
    FuncCall: funcname, args, agg_order, agg_filter, over;
    AIndices: lidx, uidx;
    AIndirection: arg, indirection;
    AArrayExpr: elements;
    ResTarget: indirection, val;
    MultiAssignRef: source;
    SortBy: node, use_op;
    WindowDef: partition_clause, order_clause, start_offset, end_offset;
    RangeSubselect: subquery, alias;
    RangeFunction: functions, alias, coldeflist;
    RangeTableFunc: docexpr, rowexpr, namespaces, columns, alias;
    RangeTableFuncCol: type_name, colexpr, coldefexpr;
    RangeTableSample: relation, method, args, repeatable;
    ColumnDef: type_name, raw_default, cooked_default, identity_sequence, coll_clause,
        constraints, fdwoptions;
    TableLikeClause: relation;
    IndexElem: expr, collation, opclass, opclassopts;
    DefElem: arg;
    LockingClause: locked_rels;
    XmlSerialize: expr, type_name;
    PartitionElem: expr, collation, opclass;
    PartitionSpec: part_params;
    PartitionBoundSpec: listdatums, lowerdatums, upperdatums;
    PartitionRangeDatum: value;
    PartitionCmd: name, bound;
    RangeTblEntry: alias, eref, tablesample, subquery, joinaliasvars, joinleftcols,
        joinrightcols, join_using_alias, functions, tablefunc, values_lists, coltypes,
        coltypmods, colcollations, groupexprs, security_quals;
    RangeTblFunction: funcexpr, funccolnames, funccoltypes, funccoltypmods, funccolcollations;
    TableSampleClause: args, repeatable;
    WithCheckOption: qual;
    GroupingSet: content;
    WindowClause: partition_clause, order_clause, start_offset, end_offset;
    WithClause: ctes;
    InferClause: index_elems, where_clause;
    OnConflictClause: infer, target_list, where_clause;
    CtesearchClause(CteSearchClause): search_col_list;
    CtecycleClause(CteCycleClause): cycle_col_list, cycle_mark_value, cycle_mark_default;
    CommonTableExpr: aliascolnames, ctequery, search_clause, cycle_clause, ctecolnames,
        ctecoltypes, ctecoltypmods, ctecolcollations;
    MergeWhenClause: condition, target_list, values;
    ReturningClause: options, exprs;
    JsonOutput: type_name;
    JsonArgument: val;
    JsonFuncExpr: context_item, pathspec, passing, output, on_empty, on_error;
    JsonTablePathSpec: string;
    JsonTable: context_item, pathspec, passing, columns, on_error, alias;
    JsonTableColumn: type_name, pathspec, columns, on_empty, on_error;
    JsonKeyValue: key, value;
    JsonParseExpr: expr, output;
    JsonScalarExpr: expr, output;
    JsonSerializeExpr: expr, output;
    JsonObjectConstructor: exprs, output;
    JsonArrayConstructor: exprs, output;
    JsonArrayQueryConstructor: query, output;
    JsonAggConstructor: output, agg_filter, agg_order, over;
    JsonObjectAgg: constructor, arg;
    JsonArrayAgg: constructor, arg;
    RawStmt: stmt;
    InsertStmt: relation, cols, select_stmt, on_conflict_clause, returning_clause, with_clause;
    DeleteStmt: relation, using_clause, where_clause, returning_clause, with_clause;
    UpdateStmt: relation, target_list, where_clause, from_clause, returning_clause, with_clause;
    MergeStmt: relation, source_relation, join_condition, merge_when_clauses, returning_clause,
        with_clause;
    SelectStmt: distinct_clause, into_clause, target_list, from_clause, where_clause,
        group_clause, having_clause, window_clause, values_lists, sort_clause, limit_offset,
        limit_count, locking_clause, with_clause, larg, rarg;
    SetOperationStmt: larg, rarg, col_types, col_typmods, col_collations, group_clauses;
    ReturnStmt: returnval;
    PlassignStmt(PlAssignStmt): indirection, val;
    CreateSchemaStmt: schema_elts;
    AlterTableStmt: relation, cmds;
    AlterTableCmd: def;
    AlterCollationStmt: collname;
    AlterDomainStmt: type_name, def;
    GrantStmt: objects, privileges, grantees;
    ObjectWithArgs: objname, objargs, objfuncargs;
    AccessPriv: cols;
    GrantRoleStmt: granted_roles, grantee_roles, opt;
    AlterDefaultPrivilegesStmt: options, action;
    CopyStmt: relation, query, attlist, options, where_clause;
    VariableSetStmt: args;
    CreateStmt: relation, table_elts, inh_relations, partbound, partspec, of_typename,
        constraints, nnconstraints, options;
    Constraint: raw_expr, keys, including, exclusions, options, where_clause, pktable, fk_attrs,
        pk_attrs, fk_del_set_cols, old_conpfeqop;
    CreateTableSpaceStmt: options;
    AlterTableSpaceOptionsStmt: options;
    AlterTableMoveAllStmt: roles;
    CreateExtensionStmt: options;
    AlterExtensionStmt: options;
    AlterExtensionContentsStmt: object;
    CreateFdwStmt: func_options, options;
    AlterFdwStmt: func_options, options;
    CreateForeignServerStmt: options;
    AlterForeignServerStmt: options;
    CreateForeignTableStmt: base_stmt, options;
    CreateUserMappingStmt: options;
    AlterUserMappingStmt: options;
    ImportForeignSchemaStmt: table_list, options;
    CreatePolicyStmt: table, roles, qual, with_check;
    AlterPolicyStmt: table, roles, qual, with_check;
    CreateAmStmt: handler_name;
    CreateTrigStmt: relation, funcname, args, columns, when_clause, transition_rels, constrrel;
    CreateEventTrigStmt: whenclause, funcname;
    CreatePlangStmt(CreatePLangStmt): plhandler, plinline, plvalidator;
    CreateRoleStmt: options;
    AlterRoleStmt: options;
    AlterRoleSetStmt: setstmt;
    DropRoleStmt: roles;
    CreateSeqStmt: sequence, options;
    AlterSeqStmt: sequence, options;
    DefineStmt: defnames, args, definition;
    CreateDomainStmt: domainname, type_name, coll_clause, constraints;
    CreateOpClassStmt: opclassname, opfamilyname, datatype, items;
    CreateOpClassItem: name, order_family, class_args, storedtype;
    CreateOpFamilyStmt: opfamilyname;
    AlterOpFamilyStmt: opfamilyname, items;
    DropStmt: objects;
    TruncateStmt: relations;
    CommentStmt: object;
    SecLabelStmt: object;
    DeclareCursorStmt: query;
    IndexStmt: relation, index_params, index_including_params, options, where_clause,
        exclude_op_names;
    CreateStatsStmt: defnames, stat_types, exprs, relations;
    StatsElem: expr;
    AlterStatsStmt: defnames, stxstattarget;
    CreateFunctionStmt: funcname, parameters, return_type, options, sql_body;
    FunctionParameter: arg_type, defexpr;
    AlterFunctionStmt: func, actions;
    AlterObjectDependsStmt: relation, object;
    DoStmt: args;
    CallStmt: funccall, funcexpr, outargs;
    RenameStmt: relation, object;
    AlterObjectSchemaStmt: relation, object;
    AlterOwnerStmt: relation, object;
    AlterOperatorStmt: opername, options;
    AlterTypeStmt: type_name, options;
    RuleStmt: relation, where_clause, actions;
    TransactionStmt: options;
    CompositeTypeStmt: typevar, coldeflist;
    CreateEnumStmt: type_name, vals;
    CreateRangeStmt: type_name, params;
    AlterEnumStmt: type_name;
    ViewStmt: view, aliases, query, options;
    CreatedbStmt: options;
    AlterDatabaseStmt: options;
    AlterDatabaseSetStmt: setstmt;
    DropdbStmt: options;
    AlterSystemStmt: setstmt;
    ClusterStmt: relation, params;
    VacuumStmt: options, rels;
    VacuumRelation: relation, va_cols;
    ExplainStmt: query, options;
    CreateTableAsStmt: query, into;
    RefreshMatViewStmt: relation;
    LockStmt: relations;
    ConstraintsSetStmt: constraints;
    ReindexStmt: relation, params;
    CreateConversionStmt: conversion_name, func_name;
    CreateCastStmt: sourcetype, targettype, func;
    CreateTransformStmt: type_name, fromsql, tosql;
    PrepareStmt: argtypes, query;
    ExecuteStmt: params;
    DropOwnedStmt: roles;
    ReassignOwnedStmt: roles;
    AlterTsdictionaryStmt(AlterTsDictionaryStmt): dictname, options;
    AlterTsconfigurationStmt(AlterTsConfigurationStmt): cfgname, tokentype, dicts;
    PublicationTable: relation, where_clause, columns;
    PublicationObjSpec: pubtable;
    CreatePublicationStmt: options, pubobjects;
    AlterPublicationStmt: options, pubobjects;
    CreateSubscriptionStmt: publication, options;
    AlterSubscriptionStmt: publication, options;
    List: items;
    IntList: items;
    OidList: items;
}

/// Call `found` on each `a = b` between two columns met through ANDs only.
fn equalities(expr: &pb::Node, mut found: impl FnMut(ColumnRef, ColumnRef)) {
    let mut exprs = vec![expr];
    while let Some(expr) = exprs.pop() {
        match expr.node.as_ref() {
            Some(NodeEnum::BoolExpr(bool_expr))
                if bool_expr.boolop() == pb::BoolExprType::AndExpr =>
            {
                exprs.extend(bool_expr.args.iter());
            }
            Some(NodeEnum::AExpr(a_expr)) if a_expr.kind() == pb::AExprKind::AexprOp => {
                let equals = a_expr.name.last().is_some_and(|name| {
                    matches!(name.node.as_ref(), Some(NodeEnum::String(op)) if op.sval == "=")
                });
                let left = a_expr.lexpr.as_deref().and_then(column);
                let right = a_expr.rexpr.as_deref().and_then(column);
                if let (true, Some(left), Some(right)) = (equals, left, right) {
                    found(left, right);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk reaches every `Node` of the tree (the node table misses no
    /// field): counted against the tree's `Debug` text, on parser-ffi's corpus.
    #[test]
    fn the_walk_visits_every_node_of_the_corpus() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../parser-ffi/tests/corpus");
        let mut checked = 0;
        for file in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            for sql in text.split("\n----\n") {
                let Ok(tree) = parser_ffi::parse_raw(sql) else {
                    continue;
                };
                let expected = format!("{tree:?}").matches("Node { node: Some(").count();
                let mut stack = Stack::default();
                let mut visited = 0;
                for raw in &tree.stmts {
                    stack
                        .items
                        .extend(inner(&raw.stmt).map(|root| (Item::Node(root), 1)));
                    while let Some((item, _)) = stack.items.pop() {
                        visited += usize::from(matches!(item, Item::Node(_)));
                        item.push_children(&mut stack);
                    }
                }
                assert_eq!(visited, expected, "{sql}");
                checked += 1;
            }
        }
        assert!(checked >= 1000, "only {checked} entries");
    }
}
