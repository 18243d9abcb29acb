//! Which places of a write are carried and how each runs first (rules 2,
//! 3 and 5 of [`super`]): [`carry_of`] of a subquery, FROM subquery or
//! CTE node.

use parser_ffi::protobuf::{self as pb, node::Node as NodeEnum};

use super::{identifier, parsed_select, rows, walk, Carry, Kind, NotCarried};
use crate::gather::{self, GatherOptions};
use crate::sharding::Sharding;

/// What deciding on a place needs.
pub(super) struct Context<'s> {
    pub sharding: &'s Sharding,
    pub options: GatherOptions,
    /// The write is bound (rule 3).
    pub bound: bool,
    pub version: i32,
    pub max_rows: u64,
    /// The write's WITH clause: what a subquery run first is run after.
    pub with: Option<pb::WithClause>,
}

/// The [`Kind`] of a subquery node of a kind that can be carried.
fn sublink_kind(sublink: &pb::SubLink) -> Option<Kind> {
    let select = match sublink.subselect.as_deref().and_then(|s| s.node.as_ref()) {
        Some(NodeEnum::SelectStmt(select)) => select,
        _ => return None,
    };
    // Of more than one column (a multiple-column SET's, a row comparison's,
    // the parser's EXPR subquery still) or compared with a row.
    let columns = matches!(walk::columns(select), Some(n) if n > 1);
    let row_valued = || {
        let row = matches!(
            sublink.testexpr.as_deref().and_then(|t| t.node.as_ref()),
            Some(NodeEnum::RowExpr(_))
        );
        row || columns
    };
    match pb::SubLinkType::try_from(sublink.sub_link_type).ok()? {
        pb::SubLinkType::ExprSublink if columns => Some(Kind::Rows),
        pb::SubLinkType::ExprSublink => Some(Kind::Scalar),
        pb::SubLinkType::ExistsSublink => Some(Kind::Exists),
        pb::SubLinkType::AnySublink | pb::SubLinkType::AllSublink if row_valued() => {
            Some(Kind::Rows)
        }
        pb::SubLinkType::AnySublink | pb::SubLinkType::AllSublink => Some(Kind::Array),
        pb::SubLinkType::RowcompareSublink | pb::SubLinkType::MultiexprSublink => Some(Kind::Rows),
        _ => None,
    }
}

/// The [`Carry`] of `node` when it is a place carried (rules 2 and 5).
pub(super) fn carry_of(node: &pb::Node, context: &Context) -> Result<Option<Carry>, NotCarried> {
    let (kind, select, shown) = match node.node.as_ref() {
        Some(NodeEnum::SubLink(sublink)) => {
            let (Some(kind), Some(select)) = (sublink_kind(sublink), sublink.subselect.as_deref())
            else {
                return Ok(None);
            };
            (kind, select.clone(), None)
        }
        Some(NodeEnum::RangeSubselect(from)) => match from.subquery.as_deref() {
            Some(select) => (Kind::Rows, select.clone(), None),
            None => return Ok(None),
        },
        Some(NodeEnum::CommonTableExpr(cte)) => {
            let Some(query) = cte.ctequery.as_deref() else {
                return Ok(None);
            };
            if cte.search_clause.is_some() || cte.cycle_clause.is_some() {
                return Err(NotCarried::SearchCycle(cte.ctename.clone()));
            }
            let all = format!("SELECT * FROM {}", identifier(&cte.ctename));
            let select = parsed_select(&all)?;
            (Kind::Rows, select, Some(query))
        }
        _ => return Ok(None),
    };
    // For the CTE, its own query is what is counted and shown.
    let counted = shown.unwrap_or(&select);
    let subquery = deparse_select(counted.clone(), context.version)?;
    let columns = match kind {
        Kind::Rows => match counted.node.as_ref() {
            Some(NodeEnum::SelectStmt(s)) => {
                walk::columns(s).ok_or_else(|| NotCarried::Star(subquery.clone()))?
            }
            _ => return Ok(None),
        },
        _ => 0,
    };
    let inner = deparse_select(select, context.version)?;
    let sql = match kind {
        Kind::Scalar => format!(
            "SELECT pg_catalog.format_type(pg_catalog.pg_typeof(v), -1), v::text, 1 \
             FROM (SELECT ({inner}) AS v) AS pgshard_carried"
        ),
        Kind::Array => format!(
            "SELECT pg_catalog.format_type(pg_catalog.pg_typeof(v), -1), v::text, \
             pg_catalog.array_ndims(v) FROM (SELECT ARRAY({inner}) AS v) AS pgshard_carried"
        ),
        Kind::Exists => format!("SELECT 'boolean', (EXISTS ({inner}))::text, 1"),
        Kind::Rows => rows::sql(&inner, columns, context.max_rows),
    };
    let sql = after_with(&sql, context)?;
    let planned = gather::plan(&sql, context.sharding, &context.options).map_err(|why| {
        NotCarried::NotGathered {
            subquery: subquery.clone(),
            why,
        }
    })?;
    if planned.gathers.is_empty() {
        return Ok(None);
    }
    if planned.finish_params && !context.bound {
        return Err(NotCarried::Parameters(subquery));
    }
    Ok(Some(Carry {
        kind,
        sql,
        subquery,
        columns,
        position: 0,
    }))
}

/// `sql`, one SELECT, after the write's WITH clause when it has one.
fn after_with(sql: &str, context: &Context) -> Result<String, NotCarried> {
    let Some(with) = &context.with else {
        return Ok(sql.to_owned());
    };
    let mut select = parsed_select(sql)?;
    match select.node.as_mut() {
        Some(NodeEnum::SelectStmt(select)) => select.with_clause = Some(with.clone()),
        _ => return Err(NotCarried::Mismatch),
    }
    deparse_select(select, context.version)
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
