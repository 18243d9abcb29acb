//! Sharding keys as a statement writes them: a literal or a parameter,
//! optionally cast (a negated integer too), typed as the key's column
//! ([`literal_key`], shared with `key_move.rs`), and a VALUES row's key
//! ([`row_key`]) with why it cannot be read ([`RowKeyError`]).

use parser_ffi::protobuf::{self as pb, node::Node as N};

use crate::hash;
use crate::route::ParamValue;
use crate::sharding::{DataType, Key, ShardedTable};

/// Why a VALUES row cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowKeyError {
    #[error("not a row of values")]
    NotARow,
    #[error("it has no value for the sharding key")]
    NoValue,
    #[error("no shard is configured for its sharding key")]
    NoShard,
    #[error("{}", row_reason(.column, .why))]
    Key { column: String, why: LiteralKey },
}

/// A row's key that [`literal_key`] could not type, for `column`.
fn row_reason(column: &str, why: &LiteralKey) -> String {
    match why {
        LiteralKey::EmptyCast => "an empty cast".into(),
        LiteralKey::Null => format!("its sharding key {column} is NULL"),
        LiteralKey::NotNumberOrString => "its sharding key is not a number or a string".into(),
        LiteralKey::NoParam(n) => format!("its sharding key {column} is ${n}, which has no value"),
        LiteralKey::NullParam(n) => format!("its sharding key {column} (${n}) is NULL"),
        LiteralKey::BadParam(n, e) => format!("its sharding key {column} (${n}): {e}"),
        LiteralKey::NegatedExpression => "its sharding key is an expression".into(),
        LiteralKey::Expression => {
            format!("its sharding key {column} is not a literal or a parameter (an expression)")
        }
        LiteralKey::Invalid(e) => format!("its sharding key {column}: {e}"),
    }
}

/// The sharding key of one VALUES row: a literal or a parameter,
/// optionally cast.
pub(super) fn row_key(
    list: &pb::Node,
    column: usize,
    entry: &ShardedTable,
    params: &[ParamValue<'_>],
) -> Result<Key, RowKeyError> {
    let Some(N::List(list)) = &list.node else {
        return Err(RowKeyError::NotARow);
    };
    let value = list.items.get(column).ok_or(RowKeyError::NoValue)?;
    row_key_value(value, entry, params)
}

/// A sharding key written as a literal or a parameter, optionally cast.
pub(super) fn row_key_value(
    value: &pb::Node,
    entry: &ShardedTable,
    params: &[ParamValue<'_>],
) -> Result<Key, RowKeyError> {
    literal_key(value, entry.keys.data_type, params).map_err(|why| RowKeyError::Key {
        column: entry.column.clone(),
        why,
    })
}

/// Why a key value written in a statement could not be typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiteralKey {
    EmptyCast,
    Null,
    NotNumberOrString,
    /// `$n` has no value.
    NoParam(i32),
    /// `$n` is NULL.
    NullParam(i32),
    /// `$n`'s value is not of the key's type.
    BadParam(i32, hash::KeyError),
    /// `-` before something other than an integer.
    NegatedExpression,
    Expression,
    /// A literal that is not of the key's type.
    Invalid(hash::KeyError),
}

/// A key value written as a literal or a parameter, optionally cast (a
/// negative integer too), typed as `data_type`; callers word the errors.
pub(crate) fn literal_key(
    value: &pb::Node,
    data_type: DataType,
    params: &[ParamValue<'_>],
) -> Result<Key, LiteralKey> {
    let mut value = value;
    while let Some(N::TypeCast(cast)) = &value.node {
        value = cast.arg.as_deref().ok_or(LiteralKey::EmptyCast)?;
    }
    let parsed = match &value.node {
        Some(N::AConst(constant)) if constant.isnull => return Err(LiteralKey::Null),
        Some(N::AConst(constant)) => match &constant.val {
            Some(pb::a_const::Val::Ival(i)) => hash::parse_text(data_type, &i.ival.to_string()),
            Some(pb::a_const::Val::Fval(f)) => hash::parse_text(data_type, &f.fval),
            Some(pb::a_const::Val::Sval(s)) => hash::parse_text(data_type, &s.sval),
            _ => return Err(LiteralKey::NotNumberOrString),
        },
        Some(N::ParamRef(param)) => {
            let n = param.number;
            let value = usize::try_from(n)
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| params.get(i))
                .ok_or(LiteralKey::NoParam(n))?;
            return match param_key(data_type, *value) {
                Ok(Some(key)) => Ok(key),
                Ok(None) => Err(LiteralKey::NullParam(n)),
                Err(e) => Err(LiteralKey::BadParam(n, e)),
            };
        }
        Some(N::AExpr(e)) if is_negation(e) => {
            match e.rexpr.as_deref().and_then(|r| r.node.as_ref()) {
                Some(N::AConst(pb::AConst {
                    val: Some(pb::a_const::Val::Ival(i)),
                    ..
                })) => hash::parse_text(data_type, &(-i64::from(i.ival)).to_string()),
                _ => return Err(LiteralKey::NegatedExpression),
            }
        }
        _ => return Err(LiteralKey::Expression),
    };
    parsed.map_err(LiteralKey::Invalid)
}

/// A key from a Bind's value (`None`: NULL), as the router reads one.
pub(crate) fn param_key(
    data_type: DataType,
    value: ParamValue<'_>,
) -> Result<Option<Key>, hash::KeyError> {
    match value {
        ParamValue::Null => Ok(None),
        ParamValue::Text(bytes) => match hash::plain_int(data_type, bytes) {
            Some(parsed) => parsed.map(Some),
            None => match std::str::from_utf8(bytes) {
                Ok(text) => hash::parse_text(data_type, text).map(Some),
                Err(_) => Err(hash::KeyError::TextNotUtf8),
            },
        },
        ParamValue::Binary(bytes) => hash::decode_binary(data_type, bytes).map(Some),
    }
}

/// `- 5` as the parser gives a negative literal in some positions.
pub(crate) fn is_negation(e: &pb::AExpr) -> bool {
    e.lexpr.is_none()
        && matches!(e.name.as_slice(), [pb::Node { node: Some(N::String(s)) }] if s.sval == "-")
}
