//! Reads libpg_query's generated field tables (`pg_query_outfuncs_conds.c`,
//! `pg_query_outfuncs_defs.c`, `pg_query_enum_defs.c`): which node types exist,
//! what fields each has and how each maps to the protobuf message. These files
//! are what libpg_query's own protobuf output is built from, so a tree converted
//! by following them matches `pg_query::parse` field for field.

use std::path::Path;

use crate::BuildResult;

/// One node type: `case T_<tag>: OUT_NODE(...)`.
#[derive(Debug, Clone)]
pub struct NodeType {
    /// NodeTag suffix and C struct name (`A_Expr`).
    pub c_name: String,
    /// The protobuf message / prost struct name (`AExpr`).
    pub proto_name: String,
    /// The `Node` oneof field (`a_expr`): prost's variant is its UpperCamelCase.
    pub oneof_field: String,
    /// Fields from `_out<proto_name>`; empty for hand-written kinds.
    pub fields: Vec<Field>,
    /// Written by hand in libpg_query (and in our emitters).
    pub special: bool,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub kind: FieldKind,
    /// The protobuf field name (snake_case).
    pub proto_name: String,
    /// The C struct member.
    pub c_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    Int,
    Uint,
    Uint64,
    Long,
    Float,
    Bool,
    Char,
    String,
    Enum(String),
    List,
    Bitmapset,
    NodePtr,
    /// A pointer to a node of this proto type.
    SpecificPtr(String),
    /// A node of this proto type embedded by value.
    SpecificEmbedded(String),
}

/// One C enum and its protobuf values: (C enumerator, protobuf number).
#[derive(Debug, Clone)]
pub struct EnumType {
    pub name: String,
    pub values: Vec<(String, i32)>,
}

#[derive(Debug, Clone)]
pub struct Tables {
    pub nodes: Vec<NodeType>,
    pub enums: Vec<EnumType>,
}

/// Node kinds libpg_query writes by hand (`pg_query_outfuncs_protobuf.c`).
pub const SPECIAL: &[&str] = &[
    "Integer",
    "Float",
    "Boolean",
    "String",
    "BitString",
    "List",
    "IntList",
    "OidList",
    "A_Const",
];

impl Tables {
    pub fn read(include_dir: &Path) -> BuildResult<Tables> {
        let read = |name: &str| -> BuildResult<String> {
            let path = include_dir.join(name);
            println!("cargo:rerun-if-changed={}", path.display());
            std::fs::read_to_string(&path)
                .map_err(|err| format!("cannot read {}: {err}", path.display()).into())
        };
        let mut nodes = read_conds(&read("pg_query_outfuncs_conds.c")?)?;
        let mut fields = read_defs(&read("pg_query_outfuncs_defs.c")?)?;
        for node in &mut nodes {
            node.special = SPECIAL.contains(&node.c_name.as_str());
            if !node.special {
                node.fields = fields.remove(&node.proto_name).ok_or_else(|| {
                    format!("no _out{} in pg_query_outfuncs_defs.c", node.proto_name)
                })?;
            }
        }
        let enums = read_enums(&read("pg_query_enum_defs.c")?)?;
        if nodes.len() < 200 || enums.len() < 50 {
            return Err(format!(
                "libpg_query's tables look wrong: {} node types, {} enums",
                nodes.len(),
                enums.len()
            )
            .into());
        }
        Ok(Tables { nodes, enums })
    }

    /// The node type with this protobuf name.
    pub fn by_proto(&self, proto_name: &str) -> Option<&NodeType> {
        self.nodes.iter().find(|n| n.proto_name == proto_name)
    }
}

/// Arguments of the first `NAME(...)` call on a line.
fn macro_args<'a>(line: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let start = line.find(&format!("{name}("))? + name.len() + 1;
    let end = start + line[start..].find(')')?;
    Some(line[start..end].split(',').map(str::trim).collect())
}

fn read_conds(text: &str) -> BuildResult<Vec<NodeType>> {
    let mut nodes = Vec::new();
    let mut tag = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("case T_") {
            tag = Some(rest.trim_end_matches(':').to_owned());
        } else if let Some(args) = macro_args(line, "OUT_NODE") {
            // OUT_NODE(typename, typename_c, typename_underscore, UPCASE, typename_cast, fldname)
            let c_name = tag.take().ok_or("OUT_NODE without a case label")?;
            if args.len() != 6
                || args[4] != c_name && !matches!(c_name.as_str(), "IntList" | "OidList")
            {
                return Err(format!("unexpected OUT_NODE for T_{c_name}: {args:?}").into());
            }
            nodes.push(NodeType {
                c_name,
                proto_name: args[1].to_owned(),
                oneof_field: args[5].trim_end_matches('_').to_owned(),
                fields: Vec::new(),
                special: false,
            });
        }
    }
    Ok(nodes)
}

fn read_defs(text: &str) -> BuildResult<std::collections::HashMap<String, Vec<Field>>> {
    let mut out = std::collections::HashMap::new();
    let mut current: Option<(String, Vec<Field>)> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("_out") && line.contains("(OUT_TYPE(") {
            let args = macro_args(line, "OUT_TYPE").ok_or("bad _out header")?;
            current = Some((args[1].to_owned(), Vec::new()));
            continue;
        }
        if line == "}" {
            if let Some((name, fields)) = current.take() {
                out.insert(name, fields);
            }
            continue;
        }
        let Some((_, fields)) = current.as_mut() else {
            continue;
        };
        let Some(name) = line
            .strip_prefix("WRITE_")
            .and_then(|l| l.split('(').next())
        else {
            continue;
        };
        let args = macro_args(line, &format!("WRITE_{name}")).ok_or("bad WRITE_ line")?;
        let simple = |kind: FieldKind| -> BuildResult<Field> {
            // (msgtype, outname, outname_json, fldname)
            if args.len() != 4 {
                return Err(format!("unexpected arguments: {line}").into());
            }
            Ok(Field {
                kind,
                proto_name: args[1].to_owned(),
                c_name: args[3].to_owned(),
            })
        };
        let field = match name {
            "INT_FIELD" => simple(FieldKind::Int)?,
            "UINT_FIELD" => simple(FieldKind::Uint)?,
            "UINT64_FIELD" => simple(FieldKind::Uint64)?,
            "LONG_FIELD" => simple(FieldKind::Long)?,
            "FLOAT_FIELD" => simple(FieldKind::Float)?,
            "BOOL_FIELD" => simple(FieldKind::Bool)?,
            "CHAR_FIELD" => simple(FieldKind::Char)?,
            "STRING_FIELD" => simple(FieldKind::String)?,
            "LIST_FIELD" => simple(FieldKind::List)?,
            "BITMAPSET_FIELD" => simple(FieldKind::Bitmapset)?,
            "NODE_PTR_FIELD" => simple(FieldKind::NodePtr)?,
            "ENUM_FIELD" => {
                // (msgtype, enumtype, outname, outname_json, fldname)
                Field {
                    kind: FieldKind::Enum(args[1].to_owned()),
                    proto_name: args[2].to_owned(),
                    c_name: args[4].to_owned(),
                }
            }
            "SPECIFIC_NODE_PTR_FIELD" | "SPECIFIC_NODE_FIELD" => {
                // (msgtype, typename, typename_underscore, outname, outname_json, fldname)
                let target = args[1].to_owned();
                Field {
                    kind: if name == "SPECIFIC_NODE_FIELD" {
                        FieldKind::SpecificEmbedded(target)
                    } else {
                        FieldKind::SpecificPtr(target)
                    },
                    proto_name: args[3].to_owned(),
                    c_name: args[5].to_owned(),
                }
            }
            other => return Err(format!("unknown field macro WRITE_{other}: {line}").into()),
        };
        fields.push(field);
    }
    Ok(out)
}

fn read_enums(text: &str) -> BuildResult<Vec<EnumType>> {
    let mut enums = Vec::new();
    let mut current: Option<EnumType> = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("_enumToInt") {
            let name = rest.split('(').next().unwrap_or_default().to_owned();
            current = Some(EnumType {
                name,
                values: Vec::new(),
            });
            continue;
        }
        let Some(enum_type) = current.as_mut() else {
            continue;
        };
        if let Some(rest) = line.strip_prefix("case ") {
            // case LIMIT_OPTION_COUNT: return 2;
            let (enumerator, value) = rest.split_once(':').ok_or("bad enum case")?;
            let value = value
                .trim()
                .strip_prefix("return ")
                .and_then(|v| v.strip_suffix(';'))
                .ok_or("bad enum return")?
                .parse()?;
            enum_type.values.push((enumerator.trim().to_owned(), value));
        } else if line == "}" && !enum_type.values.is_empty() {
            if let Some(done) = current.take() {
                enums.push(done);
            }
        }
    }
    Ok(enums)
}
