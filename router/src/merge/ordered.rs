//! `string_agg` and `array_agg` with an ORDER BY inside the call across
//! shards: each shard returns its partial group's values in that order as
//! an array (`array_agg(x ORDER BY k)`) and one array per sort key beside
//! it (`array_agg(k ORDER BY k)`, hidden); the merge interleaves the
//! shards' arrays by the keys, as one Postgres sorting all the rows would,
//! and joins a `string_agg`'s values with its delimiter. Without an ORDER
//! BY the order is the shards' arrival order, which one Postgres would not
//! give: refused. The delimiter must be a string constant.

use parser_ffi::protobuf::{self as pb, node::Node as N};

use super::{Column, Unmergeable};

/// At most this many sort keys in the call (their directions are bits).
const MAX_KEYS: usize = 8;

const NEEDS_ORDER: Unmergeable = Unmergeable::Construct(
    "string_agg() or array_agg() without an ORDER BY inside the call (string_agg(x, ',' ORDER BY x)), with DISTINCT, or with a delimiter that is not a string constant,",
);

/// Whether a `string_agg` (`string`) or `array_agg` call can be merged.
pub(super) fn check(call: &pb::FuncCall, string: bool) -> Result<(), Unmergeable> {
    let delimiter_ok = match call.args.as_slice() {
        [_] => !string,
        [_, delimiter] => string && constant(delimiter).is_some(),
        _ => false,
    };
    let keys_ok = (1..=MAX_KEYS).contains(&call.agg_order.len())
        && call.agg_order.iter().all(|item| match &item.node {
            Some(N::SortBy(sort)) => sort.sortby_dir != pb::SortByDir::SortbyUsing as i32,
            _ => false,
        });
    if call.agg_distinct || !delimiter_ok || !keys_ok {
        return Err(NEEDS_ORDER);
    }
    Ok(())
}

/// A string literal's text.
fn constant(node: &pb::Node) -> Option<&str> {
    match &node.node {
        Some(N::AConst(pb::AConst {
            val: Some(pb::a_const::Val::Sval(s)),
            ..
        })) => Some(&s.sval),
        _ => None,
    }
}

/// Rewrite the select-list item (a `string_agg` / `array_agg` call that
/// passed [`check`]) to `array_agg(x ORDER BY ...)`; the hidden
/// `array_agg(k ORDER BY ...)` per sort key to run after it, and the
/// column's plan (`keys`: where the first of them will be).
pub(super) fn split(
    target: &mut pb::Node,
    keys: usize,
    delimiters: &mut Vec<String>,
) -> Result<(Column, Vec<pb::Node>), Unmergeable> {
    let Some(N::ResTarget(res)) = &mut target.node else {
        return Err(NEEDS_ORDER);
    };
    let Some(pb::Node {
        node: Some(N::FuncCall(call)),
    }) = res.val.as_deref_mut()
    else {
        return Err(NEEDS_ORDER);
    };
    let name = |s: &str| pb::Node {
        node: Some(N::String(pb::String { sval: s.into() })),
    };
    if res.name.is_empty() {
        // The client's column keeps the name Postgres gives it.
        res.name = match call.args.len() {
            2 => "string_agg".into(),
            _ => "array_agg".into(),
        };
    }
    let delimiter = match call.args.as_slice() {
        [_, delimiter] => {
            delimiters.push(constant(delimiter).ok_or(NEEDS_ORDER)?.to_owned());
            call.args.truncate(1);
            Some(delimiters.len() - 1)
        }
        _ => None,
    };
    call.funcname = vec![name("pg_catalog"), name("array_agg")];
    let (mut descending, mut nulls_first) = (0u8, 0u8);
    let mut hidden = Vec::with_capacity(call.agg_order.len());
    for (i, item) in call.agg_order.iter().enumerate() {
        let Some(N::SortBy(sort)) = &item.node else {
            return Err(NEEDS_ORDER);
        };
        let desc = sort.sortby_dir == pb::SortByDir::SortbyDesc as i32;
        let first = match pb::SortByNulls::try_from(sort.sortby_nulls) {
            Ok(pb::SortByNulls::SortbyNullsFirst) => true,
            Ok(pb::SortByNulls::SortbyNullsLast) => false,
            _ => desc,
        };
        descending |= u8::from(desc) << i;
        nulls_first |= u8::from(first) << i;
        let mut key = call.clone();
        key.args = vec![sort.node.as_deref().cloned().ok_or(NEEDS_ORDER)?];
        hidden.push(pb::Node {
            node: Some(N::FuncCall(key)),
        });
    }
    let column = Column::Ordered {
        keys,
        count: hidden.len() as u8,
        descending,
        nulls_first,
        delimiter,
    };
    Ok((column, hidden))
}
