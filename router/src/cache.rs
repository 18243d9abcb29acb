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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lru::LruCache;
use parser_ffi::ParseError;

use crate::extract::ExtractError;
use crate::route::Overrides;
use crate::sharding::ParserEngine;
use crate::template;

mod entry;
mod literals;
mod lookup;
mod templated;

use entry::build_entry;
pub use entry::{
    Entry, EntryStats, Tree, C_BYTES_PER_TEXT_BYTE, C_CONTEXT_BYTES, ENTRY_OVERHEAD,
    PROTOBUF_BASE_BYTES, PROTOBUF_BYTES_PER_TEXT_BYTE,
};
pub use literals::Literals;
pub use lookup::Lookup;
use lookup::{literal_values, merge};
pub use templated::LiteralUse;
use templated::{push_value, valued};

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
