//! The AST cache: statement text to parsed tree and summary, shared by every
//! client and worker thread. The proxy owns one and passes it in; nothing
//! here is global.
//!
//! # Keys
//! Edge comments come off first ([`template::split_edge_comments`]); the rest
//! (the core) is keyed by its template ([`template::template`]: number and
//! string literals replaced by NUL-led placeholders, one per kind) when the
//! entry can be *templated*, else by its exact text. An entry is templated
//! when every literal-valued key in its summary ([`ValueSource::Integer`] /
//! [`ValueSource::Text`]) sits exactly on one of the lexer's literals (or on
//! a `-` right before a number, which the parser folds into the constant)
//! and has that literal's value. Those values are rewritten to
//! [`ValueSource::Param`]`(literal_base + 1 + j)`, where `literal_base` is
//! the highest `$n` of the statement and `j` indexes [`Entry::uses`] (the
//! literals the summary reads, in text order; `LIMIT 10` is not one of them
//! but still shares the key). Each lookup returns the values of *its* text's
//! literals ([`Lookup::literals`]), and [`Lookup::params`] lays out bind
//! parameters followed by those literals, which the router reads as text
//! parameters. Anything else (a literal the lexer does not template, a
//! statement the lexer is unsure of, `SET pgdog.shard = 1` whose value sits in
//! the statement kind) is keyed by its exact text: correctness over hit rate.
//! A lookup tries the exact text (untemplated entries only, no lexing),
//! then the template key, then the exact text again. A caller that keeps
//! the templated entries it found last (a session) can look a new text up
//! among them first ([`AstCache::lookup_like`]): the text is compared with
//! their template keys and only its literals are lexed
//! ([`template::rematch`]), with no hashing and no lock.
//!
//! Comments in the middle of a statement are part of its key; the overrides
//! they name are read once, on the miss, and kept in the entry.

//! # Size
//! The cache holds at most `max_entries` entries and `max_bytes` estimated
//! bytes, evicting least recently used entries until both hold. An entry's
//! bytes are its key, its text, its summary (walked, and again for
//! its routing plan, which mirrors it) and its tree. Trees are
//! estimated from the text's length with constants measured on this kind of
//! machine (growth of the resident set per tree kept, 5,000 trees each of
//! 28- to 2,051-byte statements, glibc malloc):
//! - zero-copy tree: the parser's memory context starts with one 8 KiB block
//!   ([`C_CONTEXT_BYTES`]; about 7 KiB of it touched for a point SELECT) and
//!   grows by about [`C_BYTES_PER_TEXT_BYTE`] bytes per byte of text (32 KiB
//!   for a 2 KiB ORM query);
//! - protobuf tree: [`PROTOBUF_BASE_BYTES`] plus [`PROTOBUF_BYTES_PER_TEXT_BYTE`]
//!   per byte of text (16 KiB for a point SELECT, 267 KiB for the ORM query:
//!   boxed nodes, `Vec`s and `String`s, and the allocator's slack);
//!
//! plus [`ENTRY_OVERHEAD`] for the entry, its `Arc` and the LRU's node. An
//! entry larger than `max_bytes` is not cached at all.
//!
//! # Concurrency
//! One `Mutex` around the LRU; it is held for a hash lookup and a list bump
//! (or an insert and evictions), never while lexing or parsing. Evicted
//! entries are dropped after the lock is released. Two threads missing the
//! same key both parse; the later insert replaces the earlier one.
//!
//! # Errors
//! Statements that fail to parse or summarize are not cached: their error is
//! returned and the next attempt parses again (a client looping on bad SQL
//! pays a parse per try, and cannot evict good entries with garbage).

use std::mem::size_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use lru::LruCache;
use parser_ffi::protobuf::ParseResult;
use parser_ffi::{ParseError, ParseTree};

use crate::extract::{self, ExtractError};
use crate::route::{
    self, Overrides, ParamValue, ParamValues, Params, RouteError, RoutePlan, Routed,
};
use crate::sharding::{ParserEngine, Sharding};
use crate::summary::{
    Condition, CursorEffect, SessionEffect, StatementKind, Summary, Value, ValueSource,
};
use crate::template::{self, Literal, LiteralKind, Template};

mod literals;
pub use literals::Literals;

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
    template_key: Option<String>,
    /// The values of the literals [`Entry::uses`] reads, in [`Entry::text`].
    text_literals: Literals,
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

    fn hit(&self) {
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
    fn keys(&self) -> impl Iterator<Item = &str> {
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

/// A literal a templated entry reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiteralUse {
    /// Index into the text's [`Template::literals`].
    pub index: usize,
    /// A `-` precedes the number, and the parser folded it into the value.
    pub negate: bool,
}

/// The outcome of [`AstCache::lookup`].
#[derive(Debug, Clone)]
pub struct Lookup {
    pub entry: Arc<Entry>,
    /// For a templated entry, the values of this text's literals that the
    /// summary reads as parameters `literal_base + 1 ..` (see
    /// [`Lookup::params`]); empty otherwise.
    pub literals: Literals,
    /// From the edge comments of this text, then from comments inside it
    /// (each setting from the first place that names it).
    pub overrides: Overrides,
    /// Served from the cache, without parsing.
    pub hit: bool,
}

impl Lookup {
    /// A hit on `entry` by its own text, with `edge` the overrides of the
    /// text's edge comments.
    fn exact(entry: Arc<Entry>, edge: Overrides) -> Lookup {
        Lookup {
            literals: entry.text_literals.clone(),
            overrides: merge(edge, &entry.overrides),
            entry,
            hit: true,
        }
    }

    /// The parameters to route with: the first `literal_base` bind
    /// parameters (padded with `Null` if fewer arrived), then the literals
    /// as text. Without literals, `bind` itself.
    pub fn params<'a>(&'a self, bind: &'a [ParamValue<'a>]) -> Params<'a> {
        if self.literals.is_empty() {
            return Params::Borrowed(bind);
        }
        let mut params = ParamValues::new();
        for i in 0..usize::from(self.entry.literal_base) {
            params.push(bind.get(i).copied().unwrap_or(ParamValue::Null));
        }
        for literal in self.literals.iter() {
            params.push(ParamValue::Text(literal));
        }
        Params::Owned(params)
    }
}

/// Why a statement could not be looked up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Extract(#[from] ExtractError),
}

/// Counters and sizes, for `SHOW QUERY_CACHE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Entries dropped to make room (not by `clear` or replacement).
    pub evictions: u64,
    pub entries: usize,
    pub bytes: usize,
    pub max_entries: usize,
    pub max_bytes: usize,
}

/// The LRU AST cache (see the module docs).
pub struct AstCache {
    inner: Mutex<Inner>,
    /// Hits of [`AstCache::lookup_like`], which takes no lock.
    hits_like: AtomicU64,
    /// How many times the cache was cleared: callers holding entries for
    /// `lookup_like` drop them when it changes.
    clears: AtomicU64,
}

/// Keys map to entries; a templated entry sits under two keys (its template
/// and its text), which are promoted, evicted and counted together.
struct Inner {
    lru: LruCache<String, Arc<Entry>>,
    /// Distinct entries (not keys).
    entries: usize,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
    hits: u64,
    misses: u64,
    evictions: u64,
}

impl Inner {
    /// Evict until both bounds hold; the evicted entries go to `dropped`.
    fn evict(&mut self, dropped: &mut Vec<Arc<Entry>>) {
        while self.entries > self.max_entries || self.bytes > self.max_bytes {
            let Some((_, entry)) = self.lru.pop_lru() else {
                break;
            };
            self.unlink(&entry);
            self.evictions += 1;
            dropped.push(entry);
        }
    }

    /// Remove the keys that still map to `entry` and stop counting it.
    fn unlink(&mut self, entry: &Arc<Entry>) {
        for key in entry.keys() {
            if self.lru.peek(key).is_some_and(|e| Arc::ptr_eq(e, entry)) {
                self.lru.pop(key);
            }
        }
        self.entries = self.entries.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(entry.bytes);
    }

    /// Add `entry` under each of its keys, replacing what they held.
    fn insert(&mut self, entry: &Arc<Entry>, dropped: &mut Vec<Arc<Entry>>) {
        for key in entry.keys() {
            if let Some((_, old)) = self.lru.push(key.to_owned(), Arc::clone(entry)) {
                if !Arc::ptr_eq(&old, entry) {
                    self.unlink(&old);
                    dropped.push(old);
                }
            }
        }
        self.entries += 1;
        self.bytes += entry.bytes;
        self.evict(dropped);
    }

    /// Mark `key` used (the other key of an entry just found).
    fn touch(&mut self, key: Option<&str>) {
        if let Some(key) = key {
            self.lru.promote(key);
        }
    }
}

impl std::fmt::Debug for AstCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AstCache")
            .field("stats", &self.stats())
            .finish()
    }
}

impl AstCache {
    /// A cache of at most `max_entries` entries and `max_bytes` estimated
    /// bytes. `max_entries == 0` disables caching (every lookup parses).
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        AstCache {
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded(),
                entries: 0,
                bytes: 0,
                max_entries,
                max_bytes,
                hits: 0,
                misses: 0,
                evictions: 0,
            }),
            hits_like: AtomicU64::new(0),
            clears: AtomicU64::new(0),
        }
    }

    /// `sql` as a text of one of `recent` (templated entries the caller
    /// found before, most recent first): matched against their template
    /// keys (`template::rematch`), without lexing it whole, hashing it or
    /// taking the lock. The index of the entry that matched, and the
    /// lookup; `None` sends the caller to [`lookup`](Self::lookup). Found
    /// this way, an entry is not made more recent in the LRU (a session
    /// holding it keeps it alive if it is evicted; others parse it again).
    pub fn lookup_like(
        &self,
        sql: &str,
        engine: ParserEngine,
        recent: &[Arc<Entry>],
    ) -> Option<(usize, Lookup)> {
        if recent.is_empty() {
            return None;
        }
        let (core, edge) = template::split_edge_comments(sql);
        recent.iter().enumerate().find_map(|(at, entry)| {
            let key = entry.template_key.as_deref()?;
            if entry.tree.engine() != engine {
                return None;
            }
            // The values of the literals the entry reads, as they come.
            let mut literals = Literals::default();
            let (mut index, mut uses) = (0, entry.uses.iter().peekable());
            let matched = template::rematch_each(key, core, |literal| {
                while let Some(used) = uses.next_if(|used| used.index == index) {
                    push_value(&mut literals, &literal, used, core);
                }
                index += 1;
            });
            // Every literal the entry reads was found (none left over).
            if !matched || uses.peek().is_some() {
                return None;
            }
            entry.stats.hit();
            self.hits_like.fetch_add(1, Ordering::Relaxed);
            let lookup = Lookup {
                entry: Arc::clone(entry),
                literals,
                overrides: merge(edge.clone(), &entry.overrides),
                hit: true,
            };
            Some((at, lookup))
        })
    }

    /// The entry for `sql`, parsed with `engine` on a miss (see the module
    /// docs). An entry parsed by the other engine counts as a miss and is
    /// replaced.
    pub fn lookup(&self, sql: &str, engine: ParserEngine) -> Result<Lookup, LookupError> {
        // The exact text first: a statement without literals (every prepared
        // statement, most repeated queries) or the text a templated entry
        // was built from is found without lexing it. A text as drivers send
        // it (no comment or space at its edges) is its own core: it is
        // tried before looking for edge comments (splitting a core gives
        // the core back, without overrides).
        if let Some(entry) = self.exact(sql, engine) {
            return Ok(Lookup::exact(entry, Overrides::default()));
        }
        let (core, edge) = template::split_edge_comments(sql);
        if core.len() != sql.len() {
            if let Some(entry) = self.exact(core, engine) {
                return Ok(Lookup::exact(entry, edge));
            }
        }
        let template = template::template(core);
        if template.is_none() && core.contains('\0') {
            return Err(ParseError::NulByte.into());
        }
        let template_key = template.as_ref().map(|t| t.key.as_ref());

        let found = {
            let mut inner = self.lock();
            let mut found = match template_key {
                Some(key) => inner.lru.get(key).cloned(),
                None => None,
            };
            if found.is_none() && template_key != Some(core) {
                found = inner.lru.get(core).cloned();
            }
            let found = found.filter(|entry| entry.tree.engine() == engine);
            match &found {
                Some(entry) => {
                    if entry.templated {
                        inner.touch(Some(&entry.text));
                    }
                    inner.hits += 1;
                    entry.stats.hit();
                }
                None => inner.misses += 1,
            }
            found
        };
        if let Some(entry) = found {
            if let Some(literals) = literal_values(&entry, core, template.as_ref()) {
                let overrides = merge(edge, &entry.overrides);
                return Ok(Lookup {
                    entry,
                    literals,
                    overrides,
                    hit: true,
                });
            }
        }

        // A valued statement with literals (`SET app.user_id = '<uuid>'`, one
        // per request) would fill the cache with entries never met again.
        let cacheable = template.as_ref().is_some_and(|t| t.literals.is_empty());
        let entry = Arc::new(build_entry(core, template, engine)?);
        let literals = entry.text_literals.clone();
        if cacheable || !valued(&entry.summary) {
            self.insert(&entry);
        }
        let overrides = merge(edge, &entry.overrides);
        Ok(Lookup {
            entry,
            literals,
            overrides,
            hit: false,
        })
    }

    /// The entry whose text is `core`, counted as a hit. Only an entry's
    /// text answers: it parsed, so it holds no NUL, while template keys hold
    /// NUL placeholders (which a client's text could otherwise spell).
    fn exact(&self, core: &str, engine: ParserEngine) -> Option<Arc<Entry>> {
        let mut inner = self.lock();
        let entry = inner
            .lru
            .get(core)
            .filter(|entry| {
                entry.template_key.as_deref() != Some(core) && entry.tree.engine() == engine
            })
            .cloned()?;
        inner.touch(entry.template_key.as_deref());
        inner.hits += 1;
        entry.stats.hit();
        Some(entry)
    }

    /// Counters and sizes.
    pub fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            hits: inner.hits + self.hits_like.load(Ordering::Relaxed),
            misses: inner.misses,
            evictions: inner.evictions,
            entries: inner.entries,
            bytes: inner.bytes,
            max_entries: inner.max_entries,
            max_bytes: inner.max_bytes,
        }
    }

    /// Every entry, once each, most recently used first.
    pub fn entries(&self) -> Vec<Arc<Entry>> {
        let inner = self.lock();
        let mut seen = std::collections::HashSet::new();
        inner
            .lru
            .iter()
            .filter(|(_, entry)| seen.insert(Arc::as_ptr(entry)))
            .map(|(_, entry)| Arc::clone(entry))
            .collect()
    }

    /// How many times [`clear`](Self::clear) ran: entries a caller kept for
    /// [`lookup_like`](Self::lookup_like) from before the last clear are
    /// dropped too.
    pub fn clears(&self) -> u64 {
        self.clears.load(Ordering::Acquire)
    }

    /// Drop every entry (counters stay).
    pub fn clear(&self) {
        self.clears.fetch_add(1, Ordering::AcqRel);
        let old = {
            let mut inner = self.lock();
            inner.bytes = 0;
            inner.entries = 0;
            std::mem::replace(&mut inner.lru, LruCache::unbounded())
        };
        drop(old);
    }

    /// New bounds (config reload); evicts until they hold.
    pub fn resize(&self, max_entries: usize, max_bytes: usize) {
        let mut dropped = Vec::new();
        {
            let mut inner = self.lock();
            inner.max_entries = max_entries;
            inner.max_bytes = max_bytes;
            inner.evict(&mut dropped);
        }
        drop(dropped);
    }

    fn insert(&self, entry: &Arc<Entry>) {
        let mut dropped = Vec::new();
        {
            let mut inner = self.lock();
            if inner.max_entries == 0 || entry.bytes > inner.max_bytes {
                return;
            }
            inner.insert(entry, &mut dropped);
        }
        drop(dropped);
    }

    /// The lock; a panic while it was held cannot leave the LRU half-updated
    /// in a way that matters (at worst `bytes` is off), so poisoning is
    /// ignored.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Edge overrides first, then the entry's.
fn merge(edge: Overrides, inner: &Overrides) -> Overrides {
    Overrides {
        shard: edge.shard.or(inner.shard),
        sharding_key: edge.sharding_key.or_else(|| inner.sharding_key.clone()),
    }
}

/// This text's values of the literals `entry` reads; `None` if the text does
/// not fit the entry (cannot happen for texts of the same key).
fn literal_values(entry: &Entry, core: &str, template: Option<&Template>) -> Option<Literals> {
    if !entry.templated {
        return Some(Literals::default());
    }
    values_of(&entry.uses, core, &template?.literals)
}

/// The values of the literals `uses` names, in `core` as lexed to
/// `literals`.
fn values_of(uses: &[LiteralUse], core: &str, literals: &[Literal]) -> Option<Literals> {
    let mut values = Literals::default();
    for used in uses {
        push_value(&mut values, literals.get(used.index)?, used, core);
    }
    Some(values)
}

/// Append the value of `literal` in `core`, as `used` reads it.
fn push_value(values: &mut Literals, literal: &Literal, used: &LiteralUse, core: &str) {
    values.push(&literal.value(core), used.negate);
}

/// Parse and summarize `core`; template the entry if it can be.
fn build_entry(
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

/// Rewrite the literal-valued keys of `summary` to parameters after the
/// statement's own (`template.max_param`); `None` if some value does not sit
/// on a literal of `template` or the summary holds literal values elsewhere.
/// The summary holds values as text (the pgdog settings' values, a SET's,
/// PREPARE's or EXECUTE's text span, EXECUTE's arguments): they belong to the text they were read from, so the
/// statement is never templated, and is cached (by its exact text) only
/// when it has no literal.
fn valued(summary: &Summary) -> bool {
    summary.statements.iter().any(|stmt| {
        matches!(
            stmt.kind,
            StatementKind::SetShard(Some(_)) | StatementKind::SetShardingKey(Some(_))
        ) || matches!(
            stmt.session,
            Some(
                SessionEffect::Set { .. }
                    | SessionEffect::Prepare { .. }
                    | SessionEffect::Execute { .. }
            )
        ) || matches!(stmt.kind, StatementKind::Do(_))
    })
}

/// A FETCH or MOVE holds its count in its summary: it belongs to the text
/// it was read from, so the statement is never templated (it is cached by
/// its exact text: a client fetches with the same count over and over).
fn counted(summary: &Summary) -> bool {
    summary.statements.iter().any(|stmt| {
        matches!(
            stmt.session,
            Some(SessionEffect::Cursor(CursorEffect::Fetch { .. }))
        )
    })
}

fn parameterize(
    summary: &mut Summary,
    core: &str,
    template: &Template,
) -> Option<(u16, Vec<LiteralUse>)> {
    if valued(summary) || counted(summary) {
        return None;
    }
    let base = u16::try_from(template.max_param).ok()?;
    // First pass: the literal each value reads, in walk order.
    let mut reads: Vec<LiteralUse> = Vec::new();
    let all_mapped = for_each_value(summary, &mut |value| {
        let used = match &value.source {
            ValueSource::Integer { value: v, location } => {
                locate(core, template, *location, |text, negate| {
                    let n: i64 = text.parse().ok()?;
                    let n = if negate { n.checked_neg()? } else { n };
                    (n == *v).then_some(())
                })
            }
            ValueSource::Text { text: t, location } => {
                locate(core, template, *location, |text, negate| {
                    let expected = if negate { t.strip_prefix('-')? } else { t };
                    (expected == text).then_some(())
                })
            }
            ValueSource::Param(_) | ValueSource::Null => return true,
        };
        match used {
            Some(used) => {
                reads.push(used);
                true
            }
            None => false,
        }
    });
    if !all_mapped {
        return None;
    }
    // Parameters follow the literals' order in the text.
    let mut uses = reads.clone();
    uses.sort_by_key(|used| (used.index, used.negate));
    uses.dedup();
    // Second pass: the same walk, rewriting.
    let mut reads = reads.into_iter();
    for_each_value(summary, &mut |value| {
        if !matches!(
            value.source,
            ValueSource::Integer { .. } | ValueSource::Text { .. }
        ) {
            return true;
        }
        let number = reads.next().and_then(|used| {
            let j = uses
                .binary_search_by_key(&(used.index, used.negate), |u| (u.index, u.negate))
                .ok()?;
            base.checked_add(1)?.checked_add(u16::try_from(j).ok()?)
        });
        match number {
            Some(number) => {
                value.source = ValueSource::Param(number);
                true
            }
            None => false,
        }
    })
    .then_some((base, uses))
}

/// The literal a value at `location` reads, if `check(value, negate)` agrees
/// with the value the parser saw.
fn locate(
    core: &str,
    template: &Template,
    location: i32,
    check: impl Fn(&str, bool) -> Option<()>,
) -> Option<LiteralUse> {
    let location = usize::try_from(location).ok()?;
    let by_start = |at: usize| {
        template
            .literals
            .binary_search_by_key(&at, |literal| literal.start)
            .ok()
    };
    let used = match by_start(location) {
        Some(index) => LiteralUse {
            index,
            negate: false,
        },
        None => {
            // `-7`: the parser puts the constant's location on the sign.
            let b = core.as_bytes();
            if b.get(location) != Some(&b'-') {
                return None;
            }
            let mut at = location + 1;
            while b.get(at).is_some_and(|&c| template::is_space(c)) {
                at += 1;
            }
            let index = by_start(at)?;
            if template.literals.get(index)?.kind != LiteralKind::Number {
                return None;
            }
            LiteralUse {
                index,
                negate: true,
            }
        }
    };
    let literal = template.literals.get(used.index)?;
    check(&literal.value(core), used.negate)?;
    Some(used)
}

/// Call `f` on every value of every call's arguments and every condition
/// (the sublinks' too) until it returns false; whether all returned true.
fn for_each_value(summary: &mut Summary, f: &mut impl FnMut(&mut Value) -> bool) -> bool {
    let mut stack: Vec<&mut Condition> = Vec::new();
    for stmt in &mut summary.statements {
        let values = stmt
            .calls
            .iter_mut()
            .flat_map(|call| call.args.iter_mut().flatten());
        for value in values {
            if !f(value) {
                return false;
            }
        }
        stack.extend(stmt.all_conditions_mut());
    }
    while let Some(condition) = stack.pop() {
        match condition {
            Condition::Eq { value, .. } | Condition::Any { value, .. } => {
                if !f(value) {
                    return false;
                }
            }
            Condition::And(children) | Condition::Or(children) => stack.extend(children.iter_mut()),
        }
    }
    true
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
                bytes += sublink.equalities.len() * 2 * size_of::<crate::summary::ColumnRef>();
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
