//! What stands behind a name in a cluster's databases: views, materialized
//! views, sequences, functions, procedures and triggers, and each table's
//! columns and primary key ([`Table`]), as one shard's
//! catalog lists them (the proxy reads it: `proxy/src/schema.rs`), and what
//! each body reaches ([`reach`]). Pure data: built from plain rows, read by
//! routing (`route/behind.rs`) and by view expansion ([`expand`]).
//!
//! A statement can reach a sharded table without naming it: through a view
//! (`SELECT count(*) FROM bigv`), a function (`SELECT nbig()`), a DO block,
//! a trigger on the table it writes, or a sequence every shard holds a copy
//! of. Routing looks behind each of these names with this snapshot, so that
//! such a statement is answered exactly or refused, never answered from one
//! shard's rows.
//!
//! Names are matched as the router matches tables: an unqualified name may
//! mean any schema (pgshard cannot see the client's `search_path`), so every
//! object of that name counts.

pub mod expand;
pub mod reach;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

pub use reach::Reach;

/// A cluster's catalog, as read from one of its databases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// Views, materialized views and sequences, by name.
    relations: HashMap<String, Vec<Relation>>,
    /// SQL and PL/pgSQL functions and procedures (and those of other
    /// languages, whose bodies are not read), by name.
    functions: HashMap<String, Vec<Arc<Function>>>,
    /// Triggers, by the name of the table (or view) they are on.
    triggers: HashMap<String, Vec<Trigger>>,
    /// Ordinary and partitioned tables (their columns and primary keys),
    /// by name.
    tables: HashMap<String, Vec<Arc<Table>>>,
    /// How many of the relations are plain views.
    views: usize,
}

/// An ordinary or partitioned table's definition, as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub schema: String,
    pub name: String,
    /// Its columns' names (as stored: not quoted), in table order, dropped
    /// columns left out.
    pub columns: Vec<String>,
    /// Its primary key's columns in key order; empty without one.
    pub primary_key: Vec<String>,
}

/// A view, materialized view or sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    pub schema: String,
    pub name: String,
    pub kind: RelationKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelationKind {
    View(Arc<View>),
    MaterializedView(Arc<View>),
    /// `owner`: the (schema, table, column) whose `serial`/identity it
    /// feeds, if any.
    Sequence {
        owner: Option<(String, String, String)>,
    },
}

/// A view's query, as `pg_get_viewdef` prints it (or as `CREATE VIEW` gave
/// it), and what it reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The SELECT, without a trailing `;`.
    pub query: String,
    /// Its columns' names, each quoted as an identifier where needed, in
    /// order.
    pub columns: Vec<String>,
    /// The tables (and views) its query reads, the functions it calls.
    pub reach: Reach,
    /// When the view is one table's rows and columns (what Postgres can
    /// write through without a trigger): that table, and for each view
    /// column the table column it shows (`None` for an expression).
    pub simple: Option<SimpleView>,
}

/// A view over one table whose rows are that table's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleView {
    pub base: crate::summary::TableRef,
    /// (view column, the base table's column it is, if a plain column).
    pub columns: Vec<(String, Option<String>)>,
}

/// A function or procedure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub schema: String,
    pub name: String,
    pub language: String,
    /// Its `CREATE FUNCTION` statement (empty for compiled code).
    pub definition: String,
    pub reach: Reach,
}

/// A trigger and the function it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    pub schema: String,
    pub table: String,
    pub name: String,
    pub function: (String, String),
}

/// One row of the catalog read, as the proxy gets it from a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogRow {
    /// A view (`materialized`: a materialized view) with its definition
    /// (`pg_get_viewdef`) and its columns, quoted.
    View {
        schema: String,
        name: String,
        materialized: bool,
        definition: String,
        columns: Vec<String>,
    },
    Sequence {
        schema: String,
        name: String,
        owner: Option<(String, String, String)>,
    },
    /// A function or procedure: its whole `CREATE FUNCTION` statement
    /// (`pg_get_functiondef`), unread for languages other than SQL and
    /// PL/pgSQL.
    Function {
        schema: String,
        name: String,
        language: String,
        definition: String,
    },
    Trigger {
        schema: String,
        table: String,
        name: String,
        function: (String, String),
    },
    /// An ordinary or partitioned table with its columns and primary key.
    Table(Table),
}

impl Catalog {
    /// The catalog of `rows`, each body read once.
    pub fn from_rows(rows: impl IntoIterator<Item = CatalogRow>) -> Catalog {
        Catalog::from_rows_reusing(rows, None)
    }

    /// The catalog of `rows`; a function whose definition `previous` holds
    /// already keeps what was read of its body (a catalog is read again
    /// after every schema change: bodies change rarely).
    pub fn from_rows_reusing(
        rows: impl IntoIterator<Item = CatalogRow>,
        previous: Option<&Catalog>,
    ) -> Catalog {
        let mut catalog = Catalog::default();
        for row in rows {
            let known = match (&row, previous) {
                (
                    CatalogRow::Function {
                        schema,
                        name,
                        definition,
                        ..
                    },
                    Some(previous),
                ) => previous
                    .functions(Some(schema), name)
                    .find(|f| f.definition == *definition)
                    .cloned(),
                _ => None,
            };
            match known {
                Some(function) => catalog
                    .functions
                    .entry(function.name.clone())
                    .or_default()
                    .push(function),
                None => catalog.add(row),
            }
        }
        catalog
    }

    /// Add one row (a later one of the same name and schema replaces it).
    pub fn add(&mut self, row: CatalogRow) {
        match row {
            CatalogRow::View {
                schema,
                name,
                materialized,
                definition,
                columns,
            } => {
                let view = Arc::new(View::new(&definition, columns));
                let kind = if materialized {
                    RelationKind::MaterializedView(view)
                } else {
                    RelationKind::View(view)
                };
                self.add_relation(Relation { schema, name, kind });
            }
            CatalogRow::Sequence {
                schema,
                name,
                owner,
            } => self.add_relation(Relation {
                schema,
                name,
                kind: RelationKind::Sequence { owner },
            }),
            CatalogRow::Function {
                schema,
                name,
                language,
                definition,
            } => {
                let reach = reach::of_function(&language, &definition);
                let list = self.functions.entry(name.clone()).or_default();
                list.push(Arc::new(Function {
                    schema,
                    name,
                    language,
                    definition,
                    reach,
                }));
            }
            CatalogRow::Trigger {
                schema,
                table,
                name,
                function,
            } => self
                .triggers
                .entry(table.clone())
                .or_default()
                .push(Trigger {
                    schema,
                    table,
                    name,
                    function,
                }),
            CatalogRow::Table(table) => {
                let list = self.tables.entry(table.name.clone()).or_default();
                list.retain(|t| t.schema != table.schema);
                list.push(Arc::new(table));
            }
        }
    }

    fn add_relation(&mut self, relation: Relation) {
        let is_view = |r: &Relation| matches!(r.kind, RelationKind::View(_));
        let list = self.relations.entry(relation.name.clone()).or_default();
        let before = list.iter().filter(|r| is_view(r)).count();
        list.retain(|r| r.schema != relation.schema);
        list.push(relation);
        let after = list.iter().filter(|r| is_view(r)).count();
        self.views = self.views + after - before;
    }

    /// Nothing is known: routing has nothing to look behind (tables'
    /// definitions do not count: nothing stands behind a table's name).
    pub fn is_empty(&self) -> bool {
        self.relations.is_empty() && self.functions.is_empty() && self.triggers.is_empty()
    }

    /// The relations `schema.name` may mean (any schema when `None`).
    pub fn relations<'c, 's>(
        &'c self,
        schema: Option<&'s str>,
        name: &str,
    ) -> impl Iterator<Item = &'c Relation> + use<'c, 's> {
        self.relations
            .get(name)
            .into_iter()
            .flatten()
            .filter(move |r| schema.is_none_or(|s| s == r.schema))
    }

    /// The plain (not materialized) view `schema.name` may mean, if one.
    pub fn view<'c>(
        &'c self,
        schema: Option<&str>,
        name: &str,
    ) -> Option<(&'c Relation, &'c Arc<View>)> {
        self.relations(schema, name).find_map(|r| match &r.kind {
            RelationKind::View(view) => Some((r, view)),
            _ => None,
        })
    }

    /// Whether any plain view is known (statements then need a look).
    pub fn has_views(&self) -> bool {
        self.views > 0
    }

    /// The functions a call of `schema.name` may mean. A name in
    /// `pg_catalog` is Postgres's own.
    pub fn functions<'c, 's>(
        &'c self,
        schema: Option<&'s str>,
        name: &str,
    ) -> impl Iterator<Item = &'c Arc<Function>> + use<'c, 's> {
        self.functions
            .get(name)
            .into_iter()
            .flatten()
            .filter(move |f| schema.is_none_or(|s| s == f.schema))
    }

    /// The triggers on `schema.name` (any schema when `None`).
    pub fn triggers<'c, 's>(
        &'c self,
        schema: Option<&'s str>,
        table: &str,
    ) -> impl Iterator<Item = &'c Trigger> + use<'c, 's> {
        self.triggers
            .get(table)
            .into_iter()
            .flatten()
            .filter(move |t| schema.is_none_or(|s| s == t.schema))
    }

    /// The table `schema.name` means: with no schema, the one table of that
    /// name, or the first when every schema's table of that name has the
    /// same columns and primary key (pgshard cannot see the client's
    /// `search_path`); `None` when unknown or when it could mean tables that
    /// differ.
    pub fn table(&self, schema: Option<&str>, name: &str) -> Option<&Table> {
        let mut found = self
            .tables
            .get(name)
            .into_iter()
            .flatten()
            .filter(|t| schema.is_none_or(|s| s == t.schema));
        let first = found.next()?;
        found
            .all(|t| t.columns == first.columns && t.primary_key == first.primary_key)
            .then_some(&**first)
    }

    /// The columns of the table `schema.name` means ([`Catalog::table`]).
    pub fn columns(&self, schema: Option<&str>, name: &str) -> Option<&[String]> {
        self.table(schema, name).map(|t| t.columns.as_slice())
    }

    /// The primary key of the table `schema.name` means, in key order
    /// (empty: it has none); `None` when the table is not known.
    pub fn primary_key(&self, schema: Option<&str>, name: &str) -> Option<&[String]> {
        self.table(schema, name).map(|t| t.primary_key.as_slice())
    }

    /// The sequence `name` as a sequence function's argument spells it
    /// (`'s'`, `'app.s'`, `'"S"'`), if known.
    pub fn sequence(&self, spelled: &str) -> Option<&Relation> {
        let (schema, name) = split_spelled(spelled)?;
        let found = self
            .relations(schema.as_deref(), &name)
            .find(|r| matches!(r.kind, RelationKind::Sequence { .. }));
        found
    }
}

impl View {
    fn new(definition: &str, columns: Vec<String>) -> View {
        let query = definition
            .trim()
            .trim_end_matches(';')
            .trim_end()
            .to_owned();
        let (reach, simple) = reach::of_view(&query);
        View {
            query,
            columns,
            reach,
            simple,
        }
    }
}

/// A name as a regclass literal spells it: identifiers separated by dots,
/// unquoted ones folded to lower case, `""` inside quotes read as `"`;
/// (schema, name), the schema `None` when not given. `None` for what does
/// not read as one or two identifiers.
pub fn split_spelled(spelled: &str) -> Option<(Option<String>, String)> {
    let mut parts = Vec::new();
    let mut chars = spelled.trim().chars().peekable();
    loop {
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    '"' => break,
                    c => part.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' || c.is_whitespace() {
                    break;
                }
                part.push(c.to_ascii_lowercase());
                chars.next();
            }
            if part.is_empty() {
                return None;
            }
        }
        parts.push(part);
        match chars.next() {
            None => break,
            Some('.') => {}
            Some(_) => return None,
        }
    }
    match parts.len() {
        1 => parts.pop().map(|name| (None, name)),
        2 => {
            let name = parts.pop()?;
            parts.pop().map(|schema| (Some(schema), name))
        }
        _ => None,
    }
}
