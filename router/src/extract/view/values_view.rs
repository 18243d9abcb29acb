//! The operands of a key comparison (zero-copy view): a column reference, and a
//! constant or parameter through casts as a [`Value`].

use parser_ffi::view::{AConst, ConstValue, Node, NodeRef, TypeName};

use crate::summary::{ColumnRef, Value, ValueSource};

/// A column, borrowed from the tree.
#[derive(Clone, Copy)]
pub(super) struct Column<'a> {
    table: Option<&'a str>,
    pub(super) column: &'a str,
}

impl Column<'_> {
    pub(super) fn to_column(self) -> ColumnRef {
        ColumnRef {
            table: self.table.map(str::to_owned),
            column: self.column.to_owned(),
        }
    }
}

/// A ColumnRef ending in a name (not `*`).
pub(super) fn column_of(node: Node<'_>) -> Option<Column<'_>> {
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
pub(super) struct ValueOf<'a> {
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
    pub(super) fn to_value(self) -> Value {
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
pub(super) fn value_of(node: Node<'_>) -> Option<ValueOf<'_>> {
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

/// A type name's last part, lower-cased in ASCII (as Postgres folds names).
pub(super) fn type_name(type_name: TypeName<'_>) -> Option<String> {
    let names = type_name.names();
    let last = names.get(names.len().checked_sub(1)?)?;
    match last.kind() {
        NodeRef::String(name) => name.sval().map(str::to_ascii_lowercase),
        _ => None,
    }
}
