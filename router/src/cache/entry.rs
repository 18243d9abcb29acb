//! One cached statement ([`Entry`]): its tree, its summary (templated when
//! its literals can be read back as parameters), its routing plan, its
//! estimated bytes (see **Size** in [`crate::cache`]) and its use counts.

use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parser_ffi::protobuf::ParseResult;
use parser_ffi::ParseTree;

use super::literals::Literals;
use super::templated::{parameterize, values_of, LiteralUse};
use super::LookupError;
use crate::extract;
use crate::route::{self, Overrides, ParamValue, RouteError, RoutePlan, Routed};
use crate::sharding::{ParserEngine, Sharding};
use crate::summary::{Condition, StatementKind, Summary, Value, ValueSource};
use crate::template::{self, Template};

/// The parser's memory context: its first block (Postgres's
/// `ALLOCSET_DEFAULT_INITSIZE`), which even `SELECT 1` mostly fills.
pub const C_CONTEXT_BYTES: usize = 8 * 1024;

/// C parse tree bytes per byte of statement text, beyond the first block.
pub const C_BYTES_PER_TEXT_BYTE: usize = 12;

/// pg_query protobuf tree: the cost of the smallest tree.
pub const PROTOBUF_BASE_BYTES: usize = 12 * 1024;

/// pg_query protobuf tree bytes per byte of statement text.
pub const PROTOBUF_BYTES_PER_TEXT_BYTE: usize = 128;

/// The entry struct, the `Arc` counts, the LRU's node and hash slot.
pub const ENTRY_OVERHEAD: usize = size_of::<Entry>() + 128;

/// A parsed tree, as the engine that parsed it left it.
#[derive(Debug)]
pub enum Tree {
    ZeroCopy(ParseTree),
    Protobuf(ParseResult),
}

impl Tree {
    /// The engine that makes this kind of tree.
    pub fn engine(&self) -> ParserEngine {
        match self {
            Tree::ZeroCopy(_) => ParserEngine::ZeroCopy,
            Tree::Protobuf(_) => ParserEngine::PgQueryProtobuf,
        }
    }
}

/// One cached statement.
#[derive(Debug)]
pub struct Entry {
    /// What routing needs. In a templated entry, key values that were
    /// literals read `Param(literal_base + 1 + j)` (see [`Entry::uses`]).
    pub summary: Summary,
    /// The tree (kept for query rewriting). For a templated entry, the tree
    /// of the first text seen, [`Entry::text`].
    pub tree: Tree,
    /// The core text that was parsed; the tree's locations point into it.
    pub text: String,
    /// Keyed by template: other texts with other literal values share it
    /// (possibly reading none of them: `... LIMIT 10`).
    pub templated: bool,
    /// The highest `$n` of the statement (0 when not templated): literal
    /// parameters are numbered after it.
    pub literal_base: u16,
    /// For a templated entry: parameter `literal_base + 1 + j` is the
    /// literal `uses[j]` of the text being looked up. Empty otherwise.
    pub uses: Vec<LiteralUse>,
    /// Overrides read from comments inside the text (part of the key, so
    /// the same for every text that shares the entry).
    pub overrides: Overrides,
    /// Estimated bytes (see the module docs).
    pub bytes: usize,
    /// A templated entry's template key. It is also kept under its own
    /// [`Entry::text`], so that the text it was built from (a statement
    /// repeated as is: `... LIMIT 10`, an unnamed prepared statement with a
    /// literal) is found without lexing.
    pub(super) template_key: Option<String>,
    /// The values of the literals [`Entry::uses`] reads, in [`Entry::text`].
    pub(super) text_literals: Literals,
    /// The summary planned against the config it was first routed with
    /// (see [`Entry::route`]).
    plan: OnceLock<(Arc<Sharding>, RoutePlan)>,
    /// Set once [`crate::merge::plan`] has found that the statement's rows
    /// concatenate across shards (a fact of its structure, the same for
    /// every text of a templated entry), so a keyless read parses once.
    pub concatenates: OnceLock<()>,
    /// How often it was found and where it was routed (PgDog's `SHOW
    /// QUERY_CACHE`).
    pub stats: EntryStats,
}

/// An entry's use counts: lookups that found it, and routes of its
/// statement to one shard (`direct`) or to several (`multi`), as the
/// proxy reports them with [`EntryStats::routed`].
#[derive(Debug, Default)]
pub struct EntryStats {
    hits: AtomicU64,
    direct: AtomicU64,
    multi: AtomicU64,
}

impl EntryStats {
    /// The statement was routed to `shards` databases (1: direct).
    pub fn routed(&self, shards: usize) {
        let counter = if shards > 1 {
            &self.multi
        } else {
            &self.direct
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// (hits, direct, multi).
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.direct.load(Ordering::Relaxed),
            self.multi.load(Ordering::Relaxed),
        )
    }
}

impl Entry {
    /// The statement as the cache keys it: its template (literals shown as
    /// `?`) when templated, else its text.
    pub fn shown_text(&self) -> String {
        match &self.template_key {
            Some(key) => template::display(key),
            None => self.text.clone(),
        }
    }

    /// The cache keys of this entry: its template key (if templated), then
    /// its text.
    pub(super) fn keys(&self) -> impl Iterator<Item = &str> {
        self.template_key
            .as_deref()
            .into_iter()
            .chain(std::iter::once(self.text.as_str()))
    }

    /// Route this statement: with the plan kept for `sharding` (made on the
    /// first call), so that a hit costs the key values' typing and hashing,
    /// not the table and column resolution. `params` as from
    /// [`Lookup::params`]. The plan is kept for the first config it is
    /// routed with; under an equal config (a reload that changed nothing
    /// here) it still serves, under a different one the statement is
    /// planned anew each time (the proxy clears the cache when a reload
    /// changes a cluster's sharding).
    pub fn route(
        &self,
        params: &[ParamValue<'_>],
        overrides: &Overrides,
        sharding: &Arc<Sharding>,
    ) -> Result<Routed, RouteError> {
        match self.plan.get() {
            Some((planned, plan)) if Arc::ptr_eq(planned, sharding) || **planned == **sharding => {
                plan.route(params, overrides, sharding)
            }
            Some(_) => route::route_all(&self.summary, params, overrides, sharding),
            None => {
                let plan = RoutePlan::new(&self.summary, sharding);
                let routed = plan.route(params, overrides, sharding);
                // Another thread may have planned first; either plan serves.
                let _ = self.plan.set((Arc::clone(sharding), plan));
                routed
            }
        }
    }
}

/// Parse and summarize `core`; template the entry if it can be.
pub(super) fn build_entry(
    core: &str,
    template: Option<Template<'_>>,
    engine: ParserEngine,
) -> Result<Entry, LookupError> {
    let (tree, mut summary) = match engine {
        ParserEngine::ZeroCopy => {
            let tree = ParseTree::parse(core)?;
            let summary = extract::summarize(&tree)?;
            (Tree::ZeroCopy(tree), summary)
        }
        ParserEngine::PgQueryProtobuf => {
            let tree = parser_ffi::parse_protobuf(core)?;
            let summary = extract::summarize_protobuf(&tree)?;
            (Tree::Protobuf(tree), summary)
        }
    };
    let mut literal_base = 0;
    let mut uses = Vec::new();
    let mut text_literals = Literals::default();
    let mut template_key = None;
    if let Some(template) = template.filter(|t| !t.literals.is_empty()) {
        let mut candidate = summary.clone();
        if let Some((base, used)) = parameterize(&mut candidate, core, &template) {
            // With no literal read, every text of the key has this summary.
            if let Some(values) = values_of(&used, core, &template.literals) {
                candidate.canonicalize();
                summary = candidate;
                literal_base = base;
                uses = used;
                text_literals = values;
                template_key = Some(template.key.into_owned());
            }
        }
    }
    let templated = template_key.is_some();
    let overrides = if core.contains("pgdog_") {
        template::inner_overrides(core)
    } else {
        Overrides::default()
    };
    let tree_bytes = match &tree {
        Tree::ZeroCopy(_) => C_CONTEXT_BYTES + C_BYTES_PER_TEXT_BYTE * core.len(),
        Tree::Protobuf(_) => PROTOBUF_BASE_BYTES + PROTOBUF_BYTES_PER_TEXT_BYTE * core.len(),
    };
    // The text is kept in the entry and as a key, the template key in the
    // entry and as a key.
    let bytes = ENTRY_OVERHEAD
        + 2 * template_key.as_ref().map_or(0, String::len)
        + 2 * core.len()
        + text_literals.heap_bytes()
        + tree_bytes
        // The summary, and its plan, which mirrors its conditions.
        + 2 * summary_bytes(&summary)
        + uses.len() * size_of::<LiteralUse>()
        + overrides.sharding_key.as_ref().map_or(0, String::len);
    let entry = Entry {
        summary,
        tree,
        text: core.to_owned(),
        templated,
        literal_base,
        uses,
        overrides,
        bytes,
        template_key,
        text_literals,
        plan: OnceLock::new(),
        concatenates: OnceLock::new(),
        stats: EntryStats::default(),
    };
    Ok(entry)
}

/// Estimated heap and inline bytes of a summary.
fn summary_bytes(summary: &Summary) -> usize {
    use crate::summary::{StatementSummary, TableRef};
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let mut bytes = size_of::<Summary>();
    let mut stack: Vec<&Condition> = Vec::new();
    for stmt in &summary.statements {
        bytes += size_of::<StatementSummary>();
        if let StatementKind::SetShard(value) | StatementKind::SetShardingKey(value) = &stmt.kind {
            bytes += opt(value);
        }
        let table_bytes = |table: &TableRef| {
            size_of::<TableRef>() + opt(&table.schema) + table.name.len() + opt(&table.alias)
        };
        bytes += stmt.tables.iter().map(table_bytes).sum::<usize>();
        for call in &stmt.calls {
            bytes += size_of::<crate::summary::Call>() + opt(&call.schema) + call.name.len();
            bytes += call.args.len() * size_of::<Option<Value>>();
        }
        if let StatementKind::Do(code) = &stmt.kind {
            bytes += code.body.len() + code.language.len();
        }
        if let Some(sublinks) = &stmt.sublinks {
            bytes += size_of::<crate::summary::Sublinks>();
            bytes += sublinks
                .tables_outside
                .iter()
                .map(table_bytes)
                .sum::<usize>();
            bytes += sublinks.other_names.iter().map(String::len).sum::<usize>();
            for sublink in &sublinks.subqueries {
                bytes += size_of::<crate::summary::Sublink>();
                bytes += sublink.tables.iter().map(table_bytes).sum::<usize>();
                bytes += sublink.from_tables.iter().map(table_bytes).sum::<usize>();
                bytes += (sublink.equalities.len() + usize::from(sublink.in_key.is_some()))
                    * 2
                    * size_of::<crate::summary::ColumnRef>();
            }
        }
        stack.extend(stmt.all_conditions());
    }
    while let Some(condition) = stack.pop() {
        bytes += size_of::<Condition>();
        match condition {
            Condition::Eq { column, value } | Condition::Any { column, value } => {
                bytes += opt(&column.table) + column.column.len() + opt(&value.cast);
                if let ValueSource::Text { text, .. } = &value.source {
                    bytes += text.len();
                }
            }
            Condition::And(children) | Condition::Or(children) => stack.extend(children.iter()),
        }
    }
    bytes
}
