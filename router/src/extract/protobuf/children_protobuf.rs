//! Which fields of which protobuf struct may hold nodes, for the walk of
//! [`super::walk_protobuf`]: the heap stack it runs on ([`Stack`] of
//! [`Item`]s), and the table (`node_children!`) that pushes a node's
//! children, checked against parser-ffi's corpus by counting the `Node`s of
//! each tree.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

/// What the walk visits: a `Node`, or a struct that a field holds directly
/// (`InsertStmt.relation`, a set operation's arms, ...), a node in C too.
#[derive(Clone, Copy)]
pub(super) enum Item<'a> {
    Node(&'a NodeEnum),
    RangeVar(&'a pb::RangeVar),
    Select(&'a pb::SelectStmt),
    Other(&'a dyn Children),
}

impl<'a> Item<'a> {
    pub(super) fn push_children(self, stack: &mut Stack<'a>) {
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
pub(super) struct Stack<'a> {
    pub(super) items: Vec<(Item<'a>, usize)>,
    /// Depth of the children being pushed.
    pub(super) depth: usize,
}

impl<'a> Stack<'a> {
    fn push(&mut self, item: Item<'a>) {
        self.items.push((item, self.depth));
    }
}

/// A protobuf struct with fields that may hold nodes.
pub(super) trait Children {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::protobuf::inner;

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
