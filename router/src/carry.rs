//! Carried subqueries (issue 34): a write (UPDATE, DELETE, INSERT ...
//! VALUES) whose subqueries read across shards, run as Citus's recursive
//! planning does. Pure: it plans from the statement's text and the
//! sharding config; the proxy runs the plan (`proxy/src/session/carry.rs`).
//!
//! Rules:
//! 1. Only one UPDATE, DELETE or INSERT ... VALUES without a WITH clause.
//!    The subqueries looked at are those of its WHERE, of its SET values
//!    (not `(a, b) = (SELECT ...)`), and of its VALUES rows, reached
//!    through the expression nodes [`visit`] knows; any other place keeps
//!    its subquery, and routing decides on it as before.
//! 2. A subquery (scalar, EXISTS, `IN`/`NOT IN`, `op ANY`/`op ALL`) that
//!    reads a table the coordinator would gather ([`crate::gather::plan`]
//!    of it alone finds a gather) is *carried*: it runs first, alone, on
//!    the coordinator path ([`Carry::sql`]), and its result replaces it in
//!    the write as a typed constant ([`CarryPlan::write_sql`]): a scalar as
//!    `'text'::type` (`NULL::type` for no row; more rows fail as in
//!    Postgres, `21000`), EXISTS as `true`/`false`, IN and `op ANY`/`op
//!    ALL` as `x op ANY/ALL ('{...}'::type[])`, whose three-valued logic is
//!    the subquery's (a NULL in the set makes `NOT IN` no row; an empty set
//!    makes `IN` false, `NOT IN` true). The type is Postgres's own name for
//!    it (`format_type(pg_typeof(v), -1)`: `bpchar`, not `character`, so no
//!    length is imposed).
//! 3. The subquery runs alone, so one that refers to the write's columns
//!    (correlated) fails there with Postgres's error for the unknown name
//!    (`42703`/`42P01`), which the proxy turns into a refusal: names that
//!    resolve inside the subquery resolve alike alone, so it is exact or
//!    an error. A subquery with parameters (`$n`) is carried only when the
//!    write is bound ([`plan_bound`], the extended protocol): the proxy
//!    runs it with the Bind's values and the statement's parameter types,
//!    and the write keeps its own `$n`; in a simple query it is refused.
//! 4. A subquery of record type, or IN over a subquery of arrays, is
//!    refused (`Value` checks), a constant of them would not read back.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};
use parser_ffi::ParseError;

use crate::gather::{self, GatherOptions};
use crate::sharding::Sharding;

/// What a carried subquery is replaced by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A scalar subquery: its one value.
    Scalar,
    /// `IN`, `op ANY`, `op ALL`: an array of its values.
    Array,
    /// `EXISTS`: true or false.
    Exists,
}

/// One subquery to run before the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carry {
    pub kind: Kind,
    /// The SELECT to run: one row of three columns, the type's name, the
    /// value as text (NULL for NULL) and, for [`Kind::Array`], its number
    /// of dimensions.
    pub sql: String,
    /// The subquery as written (deparsed), for messages.
    pub subquery: String,
    /// Which subquery of the statement it is, counted in [`visit`]'s order.
    position: usize,
}

/// The result of a [`Carry`]: the first row of its SELECT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    pub type_name: String,
    pub text: Option<String>,
    pub dimensions: Option<String>,
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
    #[error(
        "only one UPDATE, DELETE or INSERT ... VALUES without WITH has its subqueries run first"
    )]
    NotWrite,
    #[error("no subquery of its WHERE, SET or VALUES that reads across shards can be run first")]
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
    #[error("the subquery results did not match the plan")]
    Mismatch,
    #[error("the statement could not be rewritten: {0}")]
    Deparse(ParseError),
}

/// Plan the subqueries `sql` (one write, a simple query) carries;
/// `coordinator` is the database that would run them. A subquery with
/// parameters is refused.
pub fn plan(sql: &str, sharding: &Sharding, coordinator: usize) -> Result<CarryPlan, NotCarried> {
    plan_with(sql, sharding, coordinator, false)
}

/// [`plan`] of a bound statement (the extended protocol): its carried
/// subqueries may take its parameters, run with the Bind's values (rule 3).
pub fn plan_bound(
    sql: &str,
    sharding: &Sharding,
    coordinator: usize,
) -> Result<CarryPlan, NotCarried> {
    plan_with(sql, sharding, coordinator, true)
}

fn plan_with(
    sql: &str,
    sharding: &Sharding,
    coordinator: usize,
    bound: bool,
) -> Result<CarryPlan, NotCarried> {
    let mut tree = parser_ffi::parse_protobuf(sql).map_err(NotCarried::Parse)?;
    let options = GatherOptions {
        coordinator,
        ..GatherOptions::default()
    };
    let version = tree.version;
    let mut carried = Vec::new();
    let mut failed = None;
    let mut position = 0;
    {
        let roots = roots(&mut tree)?;
        let mut decide = |node: &mut pb::Node| {
            position += 1;
            if failed.is_some() {
                return;
            }
            match carry_of(node, sharding, (&options, bound), version) {
                Ok(Some(carry)) => carried.push(Carry {
                    position: position - 1,
                    ..carry
                }),
                Ok(None) => {}
                Err(why) => failed = Some(why),
            }
        };
        for root in roots {
            visit(root, &mut decide);
        }
    }
    if let Some(why) = failed {
        return Err(why);
    }
    if carried.is_empty() {
        return Err(NotCarried::Nothing);
    }
    Ok(CarryPlan { tree, carried })
}

impl CarryPlan {
    /// The write with each carried subquery replaced by its result
    /// (`values`, one per [`CarryPlan::carried`], in order).
    pub fn write_sql(&self, values: &[Value]) -> Result<String, NotCarried> {
        if values.len() != self.carried.len() {
            return Err(NotCarried::Mismatch);
        }
        let mut tree = self.tree.clone();
        let mut next = self.carried.iter().zip(values).peekable();
        let mut failed = None;
        let mut position = 0;
        {
            let roots = roots(&mut tree)?;
            let mut replace = |node: &mut pb::Node| {
                position += 1;
                if failed.is_some() {
                    return;
                }
                let Some((carry, value)) = next.next_if(|(c, _)| c.position == position - 1) else {
                    return;
                };
                match replacement(node, carry, value) {
                    Ok(new) => *node = new,
                    Err(why) => failed = Some(why),
                }
            };
            for root in roots {
                visit(root, &mut replace);
            }
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

/// The expressions of the one write in `tree` whose subqueries may be
/// carried (rule 1).
fn roots(tree: &mut pb::ParseResult) -> Result<Vec<&mut pb::Node>, NotCarried> {
    let [raw] = tree.stmts.as_mut_slice() else {
        return Err(NotCarried::NotWrite);
    };
    let node = raw.stmt.as_deref_mut().and_then(|s| s.node.as_mut());
    let mut roots = Vec::new();
    match node {
        Some(NodeEnum::UpdateStmt(update)) if update.with_clause.is_none() => {
            roots.extend(update.where_clause.as_deref_mut());
            roots.extend(update.target_list.iter_mut());
        }
        Some(NodeEnum::DeleteStmt(delete)) if delete.with_clause.is_none() => {
            roots.extend(delete.where_clause.as_deref_mut());
        }
        Some(NodeEnum::InsertStmt(insert)) if insert.with_clause.is_none() => {
            let select = insert
                .select_stmt
                .as_deref_mut()
                .and_then(|s| s.node.as_mut());
            match select {
                Some(NodeEnum::SelectStmt(select)) if !select.values_lists.is_empty() => {
                    roots.extend(select.values_lists.iter_mut());
                }
                _ => return Err(NotCarried::NotWrite),
            }
        }
        _ => return Err(NotCarried::NotWrite),
    }
    Ok(roots)
}

/// Call `f` on every subquery node reached from `node` through the
/// expression nodes known here, a subquery's left side (`x` of `x IN`)
/// before the subquery itself; a subquery's own SELECT is not entered.
fn visit(node: &mut pb::Node, f: &mut dyn FnMut(&mut pb::Node)) {
    let Some(inner) = node.node.as_mut() else {
        return;
    };
    match inner {
        NodeEnum::SubLink(sublink) => {
            boxed(&mut sublink.testexpr, f);
            f(node);
        }
        NodeEnum::BoolExpr(e) => each(&mut e.args, f),
        NodeEnum::AExpr(e) => {
            boxed(&mut e.lexpr, f);
            boxed(&mut e.rexpr, f);
        }
        NodeEnum::FuncCall(e) if e.over.is_none() && e.agg_order.is_empty() => each(&mut e.args, f),
        NodeEnum::TypeCast(e) => boxed(&mut e.arg, f),
        NodeEnum::NullTest(e) => boxed(&mut e.arg, f),
        NodeEnum::BooleanTest(e) => boxed(&mut e.arg, f),
        NodeEnum::CollateClause(e) => boxed(&mut e.arg, f),
        NodeEnum::CoalesceExpr(e) => each(&mut e.args, f),
        NodeEnum::MinMaxExpr(e) => each(&mut e.args, f),
        NodeEnum::RowExpr(e) => each(&mut e.args, f),
        NodeEnum::AArrayExpr(e) => each(&mut e.elements, f),
        NodeEnum::List(e) => each(&mut e.items, f),
        NodeEnum::ResTarget(e) => boxed(&mut e.val, f),
        NodeEnum::CaseExpr(e) => {
            boxed(&mut e.arg, f);
            each(&mut e.args, f);
            boxed(&mut e.defresult, f);
        }
        NodeEnum::CaseWhen(e) => {
            boxed(&mut e.expr, f);
            boxed(&mut e.result, f);
        }
        _ => {}
    }
}

fn boxed(node: &mut Option<Box<pb::Node>>, f: &mut dyn FnMut(&mut pb::Node)) {
    if let Some(node) = node.as_deref_mut() {
        visit(node, f);
    }
}

fn each(nodes: &mut [pb::Node], f: &mut dyn FnMut(&mut pb::Node)) {
    for node in nodes {
        visit(node, f);
    }
}

/// The [`Kind`] of a subquery node of a kind that can be carried.
fn sublink_kind(node: &pb::Node) -> Option<Kind> {
    let Some(NodeEnum::SubLink(sublink)) = node.node.as_ref() else {
        return None;
    };
    match pb::SubLinkType::try_from(sublink.sub_link_type).ok()? {
        pb::SubLinkType::ExprSublink => Some(Kind::Scalar),
        pb::SubLinkType::ExistsSublink => Some(Kind::Exists),
        pb::SubLinkType::AnySublink | pb::SubLinkType::AllSublink => Some(Kind::Array),
        _ => None,
    }
}

/// The [`Carry`] of `node` when it is a subquery carried (rule 2).
fn carry_of(
    node: &pb::Node,
    sharding: &Sharding,
    (options, bound): (&GatherOptions, bool),
    version: i32,
) -> Result<Option<Carry>, NotCarried> {
    let Some(kind) = sublink_kind(node) else {
        return Ok(None);
    };
    let Some(NodeEnum::SubLink(sublink)) = node.node.as_ref() else {
        return Ok(None);
    };
    let Some(select) = sublink.subselect.clone() else {
        return Ok(None);
    };
    let subquery = deparse_select(*select, version)?;
    let sql = match kind {
        Kind::Scalar => format!(
            "SELECT pg_catalog.format_type(pg_catalog.pg_typeof(v), -1), v::text, 1 \
             FROM (SELECT ({subquery}) AS v) AS pgshard_carried"
        ),
        Kind::Array => format!(
            "SELECT pg_catalog.format_type(pg_catalog.pg_typeof(v), -1), v::text, \
             pg_catalog.array_ndims(v) FROM (SELECT ARRAY({subquery}) AS v) AS pgshard_carried"
        ),
        Kind::Exists => format!("SELECT 'boolean', (EXISTS ({subquery}))::text, 1"),
    };
    let planned = gather::plan(&sql, sharding, options).map_err(|why| NotCarried::NotGathered {
        subquery: subquery.clone(),
        why,
    })?;
    if planned.gathers.is_empty() {
        return Ok(None);
    }
    if planned.finish_params && !bound {
        return Err(NotCarried::Parameters(subquery));
    }
    Ok(Some(Carry {
        kind,
        sql,
        subquery,
        position: 0,
    }))
}

/// A subquery's SELECT as a statement of its own.
fn deparse_select(select: pb::Node, version: i32) -> Result<String, NotCarried> {
    let tree = pb::ParseResult {
        version,
        stmts: vec![pb::RawStmt {
            stmt: Some(Box::new(select)),
            stmt_location: 0,
            stmt_len: 0,
        }],
    };
    parser_ffi::deparse_protobuf(&tree).map_err(NotCarried::Deparse)
}

/// What replaces the subquery `node` given its result (rule 2).
fn replacement(node: &mut pb::Node, carry: &Carry, value: &Value) -> Result<pb::Node, NotCarried> {
    let Some(NodeEnum::SubLink(sublink)) = node.node.as_mut() else {
        return Err(NotCarried::Mismatch);
    };
    let record = value.type_name == "record" || value.type_name == "record[]";
    if record {
        return Err(NotCarried::Record(carry.subquery.clone()));
    }
    let typed = |text: &str| constant(text, &value.type_name);
    match carry.kind {
        Kind::Exists => typed(if value.text.as_deref() == Some("true") {
            "true"
        } else {
            "false"
        }),
        Kind::Scalar => match &value.text {
            Some(text) => typed(&literal(text)),
            None => typed("NULL"),
        },
        Kind::Array => {
            if value.dimensions.as_deref().is_some_and(|d| d != "1") {
                return Err(NotCarried::ArrayOfArrays(carry.subquery.clone()));
            }
            let array = typed(&literal(value.text.as_deref().unwrap_or("{}")))?;
            let kind = match pb::SubLinkType::try_from(sublink.sub_link_type) {
                Ok(pb::SubLinkType::AllSublink) => pb::AExprKind::AexprOpAll,
                _ => pb::AExprKind::AexprOpAny,
            };
            let name = match sublink.oper_name.is_empty() {
                true => vec![string("=")],
                false => std::mem::take(&mut sublink.oper_name),
            };
            Ok(pb::Node {
                node: Some(NodeEnum::AExpr(Box::new(pb::AExpr {
                    kind: kind as i32,
                    name,
                    lexpr: sublink.testexpr.take(),
                    rexpr: Some(Box::new(array)),
                    rexpr_list_start: -1,
                    rexpr_list_end: -1,
                    location: sublink.location,
                }))),
            })
        }
    }
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A String node.
fn string(value: &str) -> pb::Node {
    pb::Node {
        node: Some(NodeEnum::String(pb::String {
            sval: value.to_owned(),
        })),
    }
}

/// The expression `<value>::<type_name>`, parsed.
fn constant(value: &str, type_name: &str) -> Result<pb::Node, NotCarried> {
    let sql = format!("SELECT ({value})::{type_name}");
    let tree = parser_ffi::parse_protobuf(&sql).map_err(NotCarried::Parse)?;
    let target = tree
        .stmts
        .into_iter()
        .next()
        .and_then(|raw| match raw.stmt?.node? {
            NodeEnum::SelectStmt(select) => select.target_list.into_iter().next(),
            _ => None,
        })
        .and_then(|target| match target.node? {
            NodeEnum::ResTarget(target) => target.val,
            _ => None,
        });
    // A type name is Postgres's own (`format_type`); anything but one cast
    // is not taken.
    match target.map(|t| *t) {
        Some(
            cast @ pb::Node {
                node: Some(NodeEnum::TypeCast(_)),
            },
        ) => Ok(cast),
        _ => Err(NotCarried::Mismatch),
    }
}

#[cfg(test)]
mod tests;
