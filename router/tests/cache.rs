//! Tests of the AST cache: hits and misses, templating of literals, eviction,
//! overrides, errors, both engines and concurrent use.

use std::sync::Arc;

use router::cache::{AstCache, LookupError, Tree};
use router::route::ParamValue;
use router::sharding::ParserEngine;
use router::summary::{Condition, StatementKind, ValueSource};
use router::template::{NUMBER_PLACEHOLDER, STRING_PLACEHOLDER};

// Test code: a failed unwrap in the loader is a failed test.
#[allow(clippy::unwrap_used)]
#[path = "../../parser-ffi/tests/shared/corpus.rs"]
mod shared_corpus;

const ENGINES: [ParserEngine; 2] = [ParserEngine::ZeroCopy, ParserEngine::PgQueryProtobuf];

fn big() -> AstCache {
    AstCache::new(1000, 1 << 30)
}

/// Every value source of every condition, in canonical order.
fn values(lookup: &router::cache::Lookup) -> Vec<ValueSource> {
    fn walk(condition: &Condition, out: &mut Vec<ValueSource>) {
        match condition {
            Condition::Eq { value, .. } | Condition::Any { value, .. } => {
                out.push(value.source.clone())
            }
            Condition::And(children) | Condition::Or(children) => {
                children.iter().for_each(|c| walk(c, out))
            }
        }
    }
    let mut out = Vec::new();
    for stmt in &lookup.entry.summary.statements {
        stmt.conditions.iter().for_each(|c| walk(c, &mut out));
    }
    out
}

fn lookup(cache: &AstCache, sql: &str) -> router::cache::Lookup {
    cache
        .lookup(sql, ParserEngine::ZeroCopy)
        .unwrap_or_else(|err| panic!("{sql}: {err}"))
}

#[test]
fn miss_then_hit() {
    for engine in ENGINES {
        let cache = big();
        let first = cache.lookup("SELECT x FROM t", engine).unwrap();
        assert!(!first.hit);
        let second = cache.lookup("SELECT x FROM t", engine).unwrap();
        assert!(second.hit);
        assert!(Arc::ptr_eq(&first.entry, &second.entry));
        assert!(!second.entry.templated);
        assert_eq!(second.entry.text, "SELECT x FROM t");
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (1, 1, 1));
        assert_eq!(stats.bytes, first.entry.bytes);
        assert_eq!(first.entry.tree.engine(), engine);
    }
}

#[test]
fn entries_count_their_hits_and_routes() {
    let cache = big();
    let first = lookup(&cache, "SELECT * FROM t WHERE id = 1");
    lookup(&cache, "SELECT * FROM t WHERE id = 2");
    lookup(&cache, "SELECT * FROM t WHERE id = 3");
    lookup(&cache, "SELECT 'plain'");
    first.entry.stats.routed(1);
    first.entry.stats.routed(2);
    first.entry.stats.routed(1);
    let entries = cache.entries();
    // A templated entry sits under two keys but is listed once.
    assert_eq!(entries.len(), 2);
    let templated = entries
        .iter()
        .find(|e| Arc::ptr_eq(e, &first.entry))
        .unwrap();
    assert_eq!(templated.shown_text(), "SELECT * FROM t WHERE id = ?");
    assert_eq!(templated.stats.counts(), (2, 2, 1));
    // Most recently used first.
    assert_eq!(entries[0].shown_text(), "SELECT ?");
}

#[test]
fn engine_change_replaces_the_entry() {
    let cache = big();
    let a = cache
        .lookup("SELECT x FROM t", ParserEngine::PgQueryProtobuf)
        .unwrap();
    assert!(matches!(a.entry.tree, Tree::Protobuf(_)));
    let b = cache
        .lookup("SELECT x FROM t", ParserEngine::ZeroCopy)
        .unwrap();
    assert!(!b.hit);
    assert!(matches!(b.entry.tree, Tree::ZeroCopy(_)));
    assert!(
        cache
            .lookup("SELECT x FROM t", ParserEngine::ZeroCopy)
            .unwrap()
            .hit
    );
    let stats = cache.stats();
    assert_eq!((stats.entries, stats.bytes), (1, b.entry.bytes));
}

#[test]
fn eviction_by_count_is_lru() {
    let cache = AstCache::new(2, 1 << 30);
    lookup(&cache, "SELECT a FROM t");
    lookup(&cache, "SELECT b FROM t");
    assert!(lookup(&cache, "SELECT a FROM t").hit);
    lookup(&cache, "SELECT c FROM t"); // evicts b, the least recently used
    let stats = cache.stats();
    assert_eq!((stats.entries, stats.evictions), (2, 1));
    assert!(lookup(&cache, "SELECT a FROM t").hit);
    assert!(!lookup(&cache, "SELECT b FROM t").hit);
}

#[test]
fn eviction_by_bytes() {
    let probe = big();
    let bytes = lookup(&probe, "SELECT a FROM t").entry.bytes;
    let cache = AstCache::new(100, bytes * 2 + bytes / 2);
    for sql in ["SELECT a FROM t", "SELECT b FROM t", "SELECT c FROM t"] {
        lookup(&cache, sql);
    }
    let stats = cache.stats();
    assert_eq!((stats.entries, stats.evictions), (2, 1));
    assert!(stats.bytes <= stats.max_bytes);
    assert!(!lookup(&cache, "SELECT a FROM t").hit);
}

#[test]
fn too_big_entries_are_not_cached() {
    let cache = AstCache::new(100, 1000);
    let first = lookup(&cache, "SELECT a FROM t");
    assert!(first.entry.bytes > 1000);
    assert!(!lookup(&cache, "SELECT a FROM t").hit);
    assert_eq!(cache.stats().entries, 0);

    let disabled = AstCache::new(0, 1 << 30);
    lookup(&disabled, "SELECT a FROM t");
    assert!(!lookup(&disabled, "SELECT a FROM t").hit);
}

#[test]
fn clear_and_resize() {
    let cache = big();
    for sql in ["SELECT a FROM t", "SELECT b FROM t", "SELECT c FROM t"] {
        lookup(&cache, sql);
    }
    cache.resize(1, 1 << 30);
    let stats = cache.stats();
    assert_eq!(
        (stats.entries, stats.evictions, stats.max_entries),
        (1, 2, 1)
    );
    assert!(lookup(&cache, "SELECT c FROM t").hit);
    cache.clear();
    let stats = cache.stats();
    assert_eq!((stats.entries, stats.bytes), (0, 0));
    assert!(!lookup(&cache, "SELECT c FROM t").hit);
}

#[test]
fn parse_errors_are_returned_not_cached() {
    for engine in ENGINES {
        let cache = big();
        for _ in 0..2 {
            let err = cache.lookup("SELEC 1", engine).unwrap_err();
            assert!(matches!(err, LookupError::Parse(_)), "{err:?}");
        }
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.misses, stats.hits), (0, 2, 0));
        // A NUL byte never reaches a key.
        let err = cache.lookup("SELECT 'a\0'", engine).unwrap_err();
        assert_eq!(err, LookupError::Parse(parser_ffi::ParseError::NulByte));
        let err = cache.lookup("SELECT 1\0", engine).unwrap_err();
        assert_eq!(err, LookupError::Parse(parser_ffi::ParseError::NulByte));
        // A text that spells a templated entry's key (NUL placeholders
        // included) does not find that entry.
        let templated = cache.lookup("SELECT * FROM t LIMIT 10", engine).unwrap();
        assert!(templated.entry.templated);
        let err = cache
            .lookup("SELECT * FROM t LIMIT \0#", engine)
            .unwrap_err();
        assert_eq!(err, LookupError::Parse(parser_ffi::ParseError::NulByte));
    }
    assert!(big()
        .lookup("/* only a comment */", ParserEngine::ZeroCopy)
        .is_err());
}

#[test]
fn edge_comments_and_overrides() {
    let cache = big();
    let a = lookup(&cache, "/* pgdog_shard: 2 */ SELECT x FROM t -- trailing\n");
    assert_eq!(a.overrides.shard, Some(2));
    assert_eq!(a.entry.text, "SELECT x FROM t");
    let b = lookup(&cache, "SELECT x FROM t /* pgdog_sharding_key: 'k 1' */");
    assert!(b.hit);
    assert_eq!(b.overrides.shard, None);
    assert_eq!(b.overrides.sharding_key.as_deref(), Some("k 1"));
    let c = lookup(&cache, "  SELECT x FROM t  ");
    assert!(c.hit);
    assert_eq!(c.overrides, Default::default());
}

#[test]
fn comments_in_the_middle_are_part_of_the_key() {
    let cache = big();
    assert!(!lookup(&cache, "SELECT /* a */ x FROM t").hit);
    assert!(!lookup(&cache, "SELECT /* b */ x FROM t").hit);
    let inner = lookup(&cache, "SELECT /* pgdog_shard: 7 */ x FROM t");
    assert_eq!(inner.overrides.shard, Some(7));
    let hit = lookup(
        &cache,
        "/* pgdog_shard: 1 */ SELECT /* pgdog_shard: 7 */ x FROM t",
    );
    assert!(hit.hit);
    assert_eq!(hit.overrides.shard, Some(1), "edge comments win");
}

// The tests below read summaries: they need the extractors.

#[test]
fn templated_hits_return_this_texts_literals() {
    for engine in ENGINES {
        let cache = big();
        let a = cache
            .lookup("SELECT * FROM t WHERE id = 1", engine)
            .unwrap();
        assert!(a.entry.templated, "{:?}", a.entry);
        assert_eq!(a.literals, ["1"]);
        assert_eq!(values(&a), [ValueSource::Param(1)]);
        let b = cache
            .lookup("SELECT * FROM t WHERE id = 2", engine)
            .unwrap();
        assert!(b.hit);
        assert!(Arc::ptr_eq(&a.entry, &b.entry));
        assert_eq!(b.literals, ["2"]);
        assert_eq!(b.entry.text, "SELECT * FROM t WHERE id = 1");
        let c = cache
            .lookup("SELECT * FROM t WHERE id = '42'", engine)
            .unwrap();
        assert!(!c.hit, "a string is not a number");
        assert_eq!(c.literals, ["42"]);
        let d = cache
            .lookup("SELECT * FROM t WHERE id = '43'", engine)
            .unwrap();
        assert!(d.hit);
        assert_eq!(d.literals, ["43"]);
        assert_eq!(cache.stats().entries, 2);
    }
}

#[test]
fn recent_entries_are_found_by_matching_their_template() {
    for engine in ENGINES {
        let cache = big();
        let a = cache
            .lookup("SELECT * FROM t WHERE id = 1 AND name = 'x'", engine)
            .unwrap();
        let other = cache.lookup("SELECT 1 FROM u WHERE k = 5", engine).unwrap();
        let recent = [Arc::clone(&other.entry), Arc::clone(&a.entry)];
        let (at, b) = cache
            .lookup_like(
                "/* pgdog_shard: 1 */ SELECT * FROM t WHERE id = 7 AND name = 'it''s'",
                engine,
                &recent,
            )
            .unwrap();
        assert_eq!(at, 1);
        assert!(b.hit && Arc::ptr_eq(&b.entry, &a.entry));
        // The same literals and overrides as the shared map's lookup.
        let shared = cache
            .lookup(
                "/* pgdog_shard: 1 */ SELECT * FROM t WHERE id = 7 AND name = 'it''s'",
                engine,
            )
            .unwrap();
        assert_eq!(b.literals, shared.literals);
        assert_eq!(b.overrides, shared.overrides);
        assert_eq!(b.overrides.shard, Some(1));
        // Counted as hits.
        assert_eq!(cache.stats().hits, 2);
        // Another statement, or the same one with another kind of literal.
        for sql in [
            "SELECT * FROM t WHERE id = 1 AND name = 2",
            "SELECT * FROM t WHERE id = 1 AND name = 'x' LIMIT 1",
            "SELECT * FROM t WHERE id = 1",
        ] {
            assert!(cache.lookup_like(sql, engine, &recent).is_none(), "{sql}");
        }
        // An entry of the other engine is not one to use.
        let other_engine = ENGINES.into_iter().find(|e| *e != engine).unwrap();
        assert!(cache
            .lookup_like(
                "SELECT * FROM t WHERE id = 2 AND name = 'y'",
                other_engine,
                &recent
            )
            .is_none());
        // An untemplated entry never matches.
        let plain = cache.lookup("SELECT x FROM t", engine).unwrap();
        assert!(cache
            .lookup_like("SELECT x FROM t", engine, &[plain.entry])
            .is_none());
    }
}

#[test]
fn a_templated_entry_is_also_found_by_its_own_text() {
    for engine in ENGINES {
        let cache = big();
        let first = cache
            .lookup("SELECT * FROM t WHERE id = 1 LIMIT 5", engine)
            .unwrap();
        assert!(first.entry.templated && !first.hit);
        // The same text again: the exact-text key answers, with the values
        // the entry kept for its own text.
        let again = cache
            .lookup("SELECT * FROM t WHERE id = 1 LIMIT 5", engine)
            .unwrap();
        assert!(again.hit && Arc::ptr_eq(&first.entry, &again.entry));
        assert_eq!(again.literals, ["1"]);
        // Another text of the template: the template key answers.
        let other = cache
            .lookup("SELECT * FROM t WHERE id = 9 LIMIT 7", engine)
            .unwrap();
        assert!(other.hit && Arc::ptr_eq(&first.entry, &other.entry));
        assert_eq!(other.literals, ["9"]);
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.bytes), (1, first.entry.bytes));
    }
}

#[test]
fn both_keys_of_an_entry_are_evicted_and_used_together() {
    let cache = AstCache::new(2, 1 << 30);
    let a = lookup(&cache, "SELECT * FROM t WHERE id = 1");
    assert!(a.entry.templated);
    lookup(&cache, "SELECT b FROM t");
    // Used through its template key only: its text key is used too.
    assert!(lookup(&cache, "SELECT * FROM t WHERE id = 2").hit);
    lookup(&cache, "SELECT c FROM t"); // evicts `b`, not the entry of `a`
    let stats = cache.stats();
    assert_eq!((stats.entries, stats.evictions), (2, 1));
    assert!(lookup(&cache, "SELECT * FROM t WHERE id = 1").hit);
    assert!(!lookup(&cache, "SELECT b FROM t").hit); // evicts `c`
    lookup(&cache, "SELECT d FROM t"); // evicts the entry of `a`: both keys
    let stats = cache.stats();
    assert_eq!((stats.entries, stats.evictions), (2, 3));
    assert!(!lookup(&cache, "SELECT * FROM t WHERE id = 3").hit);
    assert!(lookup(&cache, "SELECT * FROM t WHERE id = 1").hit);
    let stats = cache.stats();
    assert_eq!(stats.entries, 2);
    assert!(stats.bytes > 0);
    cache.clear();
    assert_eq!((cache.stats().entries, cache.stats().bytes), (0, 0));
}

#[test]
fn entries_route_with_a_plan_kept_per_config() {
    let config = |shards: usize| {
        let databases: String = (0..shards)
            .map(|i| format!("[[databases]]\nname = \"db\"\nhost = \"h\"\nshard = {i}\n"))
            .collect();
        let toml = format!(
            "{databases}[[sharded_tables]]\ndatabase = \"db\"\nname = \"t\"\ncolumn = \"id\"\n"
        );
        let users = "[[users]]\nname = \"u\"\ndatabase = \"db\"\npassword = \"p\"\n";
        let config = router::config::Config::from_toml(&toml, users).unwrap();
        Arc::clone(&config.clusters["db"].sharding)
    };
    let (two, two_again, four) = (config(2), config(2), config(4));
    assert!(!Arc::ptr_eq(&two, &two_again));
    let cache = big();
    let entry = lookup(&cache, "SELECT * FROM t WHERE id = $1").entry;
    let none = router::route::Overrides::default();
    for key in 0..200 {
        let text = key.to_string();
        let params = [ParamValue::Text(text.as_bytes())];
        for sharding in [&two, &two_again, &four] {
            let fresh = router::route::route_all(&entry.summary, &params, &none, sharding);
            assert_eq!(entry.route(&params, &none, sharding), fresh, "key {key}");
        }
    }
}

#[test]
fn only_key_literals_become_parameters() {
    let cache = big();
    let a = lookup(
        &cache,
        "SELECT * FROM t WHERE status = 'new' AND id = $2 AND tenant = 5 LIMIT 10",
    );
    assert!(a.entry.templated);
    assert_eq!(a.entry.literal_base, 2);
    assert_eq!(a.literals, ["new", "5"]);
    let mut got = values(&a);
    got.sort_by_key(|v| format!("{v:?}"));
    assert_eq!(
        got,
        [
            ValueSource::Param(2),
            ValueSource::Param(3),
            ValueSource::Param(4)
        ]
    );

    let b = lookup(
        &cache,
        "SELECT * FROM t WHERE status = 'old' AND id = $2 AND tenant = 6 LIMIT 20",
    );
    assert!(b.hit);
    assert_eq!(b.literals, ["old", "6"]);
    let bind = [ParamValue::Text(b"x"), ParamValue::Text(b"9")];
    assert_eq!(
        b.params(&bind).as_ref(),
        [
            ParamValue::Text(b"x"),
            ParamValue::Text(b"9"),
            ParamValue::Text(b"old"),
            ParamValue::Text(b"6"),
        ]
    );
    // Fewer bind parameters than the statement's highest `$n`: padded.
    assert_eq!(
        b.params(&[]).as_ref(),
        [
            ParamValue::Null,
            ParamValue::Null,
            ParamValue::Text(b"old"),
            ParamValue::Text(b"6"),
        ]
    );
}

#[test]
fn literals_outside_keys_share_the_entry() {
    let cache = big();
    let a = lookup(&cache, "SELECT * FROM t ORDER BY 1 LIMIT 10");
    assert!(a.entry.templated && a.literals.is_empty());
    let b = lookup(&cache, "SELECT * FROM t ORDER BY 2 LIMIT 20");
    assert!(b.hit && b.literals.is_empty());
    let bind = [ParamValue::Text(b"x")];
    assert_eq!(b.params(&bind).as_ref(), bind);
}

#[test]
fn quoted_strings() {
    let cache = big();
    let a = lookup(&cache, "SELECT * FROM t WHERE name = 'it''s'");
    assert!(a.entry.templated);
    assert_eq!(a.literals, ["it's"]);
    let b = lookup(&cache, "SELECT * FROM t WHERE name = 'a\\b'");
    assert!(b.hit);
    assert_eq!(b.literals, ["a\\b"]);
    let c = lookup(&cache, "SELECT * FROM t WHERE name = ''");
    assert!(c.hit);
    assert_eq!(c.literals, [""]);
}

#[test]
fn special_strings_are_not_templated() {
    let cache = big();
    for sql in [
        "SELECT * FROM t WHERE name = E'a\\'b'",
        "SELECT * FROM t WHERE name = E'c'",
        "SELECT * FROM t WHERE name = $$x$$",
        "SELECT * FROM t WHERE name = $q$y$q$",
        "SELECT * FROM t WHERE name = U&'z'",
        "SELECT * FROM t WHERE id = 0x1F",
        "SELECT * FROM t WHERE id = 1_000",
    ] {
        let a = lookup(&cache, sql);
        assert!(
            !a.hit && !a.entry.templated && a.literals.is_empty(),
            "{sql}"
        );
        assert!(matches!(
            values(&a).as_slice(),
            [ValueSource::Text { .. } | ValueSource::Integer { .. }]
        ));
        assert!(lookup(&cache, sql).hit, "{sql}");
    }
}

#[test]
fn numbers_inside_identifiers_are_not_literals() {
    let cache = big();
    let a = lookup(&cache, "SELECT * FROM t1 WHERE x_2 = 3");
    let b = lookup(&cache, "SELECT * FROM t2 WHERE x_2 = 3");
    assert!(!b.hit);
    assert_eq!(a.entry.summary.statements[0].tables[0].name, "t1");
    assert_eq!(b.entry.summary.statements[0].tables[0].name, "t2");
    assert!(lookup(&cache, "SELECT * FROM t1 WHERE x_2 = 4").hit);
}

#[test]
fn negative_numbers() {
    for engine in ENGINES {
        let cache = big();
        let a = cache
            .lookup("SELECT * FROM t WHERE id = -7", engine)
            .unwrap();
        assert!(a.entry.templated, "{:?}", a.entry.summary);
        assert_eq!(a.literals, ["-7"]);
        let b = cache
            .lookup("SELECT * FROM t WHERE id = - 8", engine)
            .unwrap();
        assert!(!b.hit, "whitespace is part of the key");
        assert_eq!(b.literals, ["-8"]);
        let c = cache
            .lookup("SELECT * FROM t WHERE id = -9", engine)
            .unwrap();
        assert!(c.hit);
        assert_eq!(c.literals, ["-9"]);
        let d = cache
            .lookup("SELECT * FROM t WHERE id = -2147483648", engine)
            .unwrap();
        assert!(d.hit);
        assert_eq!(d.literals, ["-2147483648"]);
        let e = cache
            .lookup("SELECT * FROM t WHERE id = 5-7", engine)
            .unwrap();
        assert!(!e.hit);
        assert!(e.literals.is_empty() || e.entry.templated);
    }
}

#[test]
fn in_lists_of_different_lengths_have_different_keys() {
    let cache = big();
    let three = lookup(&cache, "SELECT * FROM t WHERE id IN (1, 2, 3)");
    assert!(three.entry.templated);
    assert_eq!(three.literals, ["1", "2", "3"]);
    let two = lookup(&cache, "SELECT * FROM t WHERE id IN (1, 2)");
    assert!(!two.hit);
    assert_eq!(two.literals, ["1", "2"]);
    let again = lookup(&cache, "SELECT * FROM t WHERE id IN (4, 5, 6)");
    assert!(again.hit);
    assert_eq!(again.literals, ["4", "5", "6"]);
    let repeated = lookup(&cache, "SELECT * FROM t WHERE id IN (7, 7)");
    assert!(repeated.hit);
    assert_eq!(repeated.literals, ["7", "7"]);
}

#[test]
fn inserts_and_multiple_statements() {
    let cache = big();
    let a = lookup(&cache, "INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')");
    assert!(a.entry.templated);
    // Every column with a value is a possible key: all four are read.
    assert_eq!(a.literals, ["1", "a", "2", "b"]);
    let b = lookup(&cache, "INSERT INTO t (id, v) VALUES (3, 'c'), (4, 'd')");
    assert!(b.hit);
    assert_eq!(b.literals, ["3", "c", "4", "d"]);
    let c = lookup(&cache, "BEGIN; UPDATE t SET v = 1 WHERE id = 5; COMMIT");
    assert_eq!(c.literals, ["5"]);
    assert!(lookup(&cache, "BEGIN; UPDATE t SET v = 2 WHERE id = 6; COMMIT").hit);
}

#[test]
fn literal_values_outside_conditions_are_not_templated() {
    let cache = big();
    let a = lookup(&cache, "SET pgdog.shard = 1");
    assert_eq!(
        a.entry.summary.statements[0].kind,
        StatementKind::SetShard(Some("1".into()))
    );
    assert!(!a.entry.templated);
    let b = lookup(&cache, "SET pgdog.shard = 2");
    assert!(!b.hit);
    assert_eq!(
        b.entry.summary.statements[0].kind,
        StatementKind::SetShard(Some("2".into()))
    );
    // Not cached either: one entry per value would crowd the cache out.
    assert!(!lookup(&cache, "SET pgdog.shard = 2").hit);
}

/// A SET's text is what a pooler replays: it is never served from another
/// text's entry, so its span slices this text's value; with literals it is
/// not cached at all (`SET app.user_id = '<uuid>'` per request would crowd
/// the cache), without them it is cached by its exact text.
#[test]
fn set_statements_are_keyed_by_their_text() {
    let cache = big();
    for (sql, value) in [
        (
            "SET application_name = 'one'",
            "SET application_name = 'one'",
        ),
        (
            "SET application_name = 'two'",
            "SET application_name = 'two'",
        ),
        ("/* c */ SET work_mem = 64; SELECT 1", "SET work_mem = 64"),
        ("SET work_mem = 128; SELECT 1", "SET work_mem = 128"),
    ] {
        let found = lookup(&cache, sql);
        assert!(!found.entry.templated, "{sql}");
        let effect = found.entry.summary.statements[0].session.clone().unwrap();
        assert_eq!(effect.set_text(&found.entry.text), Some(value), "{sql}");
    }
    assert!(!lookup(&cache, "SET application_name = 'one'").hit);
    assert_eq!(cache.stats().entries, 0);
    assert!(!lookup(&cache, "SET search_path TO app, public").hit);
    assert!(lookup(&cache, "SET search_path TO app, public").hit);
}

/// A FETCH's count is in its summary: `FETCH 5` is never served from
/// `FETCH 1000`'s entry, and a repeated FETCH (a driver's fetch size) is
/// cached by its exact text.
#[test]
fn fetch_counts_are_keyed_by_their_text() {
    use router::summary::{CursorEffect, SessionEffect};
    for engine in ENGINES {
        let cache = big();
        let count = |sql: &str| {
            let found = cache.lookup(sql, engine).unwrap();
            assert!(!found.entry.templated, "{sql}");
            match found.entry.summary.statements[0].session.clone() {
                Some(SessionEffect::Cursor(CursorEffect::Fetch { count, .. })) => {
                    (count, found.hit)
                }
                other => panic!("{sql}: {other:?}"),
            }
        };
        assert_eq!(count("FETCH FORWARD 1000 FROM c"), (1000, false));
        assert_eq!(count("FETCH FORWARD 5 FROM c"), (5, false));
        assert_eq!(count("FETCH FORWARD 1000 FROM c"), (1000, true));
        assert_eq!(count("MOVE 7 IN c"), (7, false));
    }
}

#[test]
fn keys_never_equal_statement_text() {
    let cache = big();
    let a = lookup(&cache, "SELECT * FROM t WHERE id = 1");
    assert!(a.entry.templated);
    let key = format!("SELECT * FROM t WHERE id = {NUMBER_PLACEHOLDER}");
    assert!(cache.lookup(&key, ParserEngine::ZeroCopy).is_err());
    let key = format!("SELECT * FROM t WHERE id = {STRING_PLACEHOLDER}");
    assert!(cache.lookup(&key, ParserEngine::ZeroCopy).is_err());
}

#[test]
fn concurrent_lookups() {
    let cache = Arc::new(AstCache::new(64, 1 << 30));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                for i in 0..300 {
                    // Each engine has its own tables, so they do not
                    // replace each other's entries.
                    let engine = ENGINES[t % 2];
                    let table = i % 5 + 10 * (t % 2);
                    let id = t * 1000 + i;
                    let sql = format!("SELECT * FROM t{table} WHERE id = {id}");
                    let found = cache.lookup(&sql, engine).unwrap();
                    assert_eq!(
                        found.entry.summary.statements[0].tables[0].name,
                        format!("t{table}")
                    );
                    assert_eq!(found.literals, [id.to_string().as_str()]);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let stats = cache.stats();
    assert_eq!(stats.hits + stats.misses, 1200);
    assert!(stats.entries <= 10);
    assert!(stats.hits > 1100, "{stats:?}");
}

#[test]
fn cache_is_shareable() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AstCache>();
    send_sync::<router::cache::Lookup>();
}

/// Every lookup, hit or miss, templated or not, must give the summary a
/// fresh parse of that very text gives, once parameters are read.
#[test]
fn lookups_agree_with_fresh_parses() {
    const STATEMENTS: &[&str] = &[
        "SELECT * FROM t WHERE id = {}",
        "SELECT * FROM t WHERE id = {} AND name = {}",
        "SELECT * FROM t WHERE id IN ({}, {})",
        "UPDATE t SET v = {} WHERE id = {} AND tenant = $1",
        "INSERT INTO t (id, v) VALUES ({}, {}), ($3, {})",
        "SELECT * FROM t WHERE id = ANY({})",
        "SELECT * FROM t WHERE id = {}::bigint AND k = CAST({} AS text)",
        "DELETE FROM t WHERE (id = {} OR id = {}) AND x > {}",
        "SELECT * FROM t a JOIN u ON u.id = a.id WHERE a.id = -{}",
        "SELECT * FROM t WHERE id = - {} OR id = -{}",
        "SELECT {} FROM t WHERE id = {} LIMIT {}",
        "SET pgdog.shard = {}",
        "SET pgdog.sharding_key TO {}",
        "/* pgdog_shard: 1 */ SELECT * FROM t WHERE id = {} -- c\n",
        "WITH x AS (SELECT * FROM t WHERE id = {}) SELECT * FROM x WHERE y = {}",
        "SELECT * FROM t WHERE id = {} UNION SELECT * FROM u WHERE id = {}",
        "SELECT * FROM t WHERE id = {}; SELECT * FROM u WHERE id = {}",
        "SELECT * FROM t WHERE id = {} FOR UPDATE",
    ];
    const VALUES: &[&str] = &[
        "1",
        "42",
        "007",
        "0",
        "2147483647",
        "2147483648",
        "9223372036854775808",
        "1.5",
        ".5",
        "1e3",
        "'a'",
        "'it''s'",
        "''",
        "'{1,2}'",
        "E'x\\'y'",
        "$$d$$",
        "'5'::int",
        "NULL",
        "$2",
        "0x10",
        "1_000",
        "-3",
        "- 4",
        "(5)",
        "B'1'",
        "true",
    ];

    /// The summary with every value as comparable text (parameters past the
    /// statement's own read from `literals`), canonicalized.
    fn strings(literals: &router::cache::Literals) -> Vec<String> {
        let text = |l: &[u8]| String::from_utf8_lossy(l).into_owned();
        literals.iter().map(text).collect()
    }

    fn resolved(
        summary: &router::summary::Summary,
        base: u16,
        literals: &[String],
    ) -> router::summary::Summary {
        fn walk(condition: &mut Condition, base: u16, literals: &[String]) {
            match condition {
                Condition::Eq { value, .. } | Condition::Any { value, .. } => {
                    let text = match &value.source {
                        ValueSource::Integer { value, .. } => value.to_string(),
                        ValueSource::Text { text, .. } => text.clone(),
                        ValueSource::Param(n) if *n > base => {
                            literals[usize::from(*n - base - 1)].clone()
                        }
                        ValueSource::Param(n) => format!("${n}"),
                        ValueSource::Null => "NULL".to_owned(),
                    };
                    let text = text.parse::<i64>().map_or(text, |n| n.to_string());
                    value.source = ValueSource::Text { text, location: 0 };
                }
                Condition::And(children) | Condition::Or(children) => {
                    children.iter_mut().for_each(|c| walk(c, base, literals))
                }
            }
        }
        let mut summary = summary.clone();
        for stmt in &mut summary.statements {
            stmt.all_conditions_mut()
                .for_each(|c| walk(c, base, literals));
        }
        summary.canonicalize();
        summary
    }

    let mut state = 0x853c_49e6_748f_ea9b_u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for engine in ENGINES {
        let cache = AstCache::new(64, 1 << 30);
        let mut hits = 0;
        for _ in 0..3000 {
            let statement = STATEMENTS[next(STATEMENTS.len())];
            let mut sql = String::new();
            for (i, part) in statement.split("{}").enumerate() {
                if i > 0 {
                    sql.push_str(VALUES[next(VALUES.len())]);
                }
                sql.push_str(part);
            }
            let Ok(found) = cache.lookup(&sql, engine) else {
                continue;
            };
            hits += usize::from(found.hit);
            let (core, _) = router::template::split_edge_comments(&sql);
            let fresh = match engine {
                ParserEngine::ZeroCopy => {
                    router::extract::summarize(&parser_ffi::ParseTree::parse(core).unwrap())
                }
                ParserEngine::PgQueryProtobuf => {
                    router::extract::summarize_protobuf(&parser_ffi::parse_protobuf(core).unwrap())
                }
            }
            .unwrap();
            let base = if found.entry.templated {
                found.entry.literal_base
            } else {
                u16::MAX
            };
            assert_eq!(
                resolved(&found.entry.summary, base, &strings(&found.literals)),
                resolved(&fresh, u16::MAX, &[]),
                "{sql:?} (hit: {}, first text: {:?})",
                found.hit,
                found.entry.text
            );
        }
        assert!(hits > 300, "{hits} hits");
    }
}

/// The cache tries a text as its own core before splitting off its edge
/// comments; that is sound because splitting a core gives the core back
/// with no overrides.
#[test]
fn a_core_splits_to_itself() {
    use router::template::split_edge_comments;
    let mut checked = 0;
    for (name, sql) in shared_corpus::corpus() {
        for text in [
            sql.clone(),
            format!("  /* pgdog_shard: 1 */ {sql}\n -- pgdog_sharding_key: 5\n"),
            format!("{sql} /* pgdog_shard: 0 */"),
            format!("-- a\n{sql}\r\n-- b"),
        ] {
            let (core, _) = split_edge_comments(&text);
            let (again, overrides) = split_edge_comments(core);
            assert_eq!(again, core, "{name}: {text:?}");
            assert_eq!(overrides, Default::default(), "{name}: {text:?}");
            checked += 1;
        }
    }
    assert!(checked > 4000, "{checked}");
}

/// A templated entry reads its sublinks' key literals from each text too:
/// two texts of one template whose subqueries sit on different shards
/// route differently (rule 12), with either engine.
#[test]
fn sublink_literals_are_parameters_too() {
    let toml = "[[databases]]\nname = \"db\"\nhost = \"h\"\nshard = 0\n\
                [[databases]]\nname = \"db\"\nhost = \"h\"\nshard = 1\n\
                [[sharded_tables]]\ndatabase = \"db\"\nname = \"t\"\ncolumn = \"id\"\n";
    let users = "[[users]]\nname = \"u\"\ndatabase = \"db\"\npassword = \"p\"\n";
    let config = router::config::Config::from_toml(toml, users).unwrap();
    let sharding = Arc::clone(&config.clusters["db"].sharding);
    let none = router::route::Overrides::default();
    for engine in ENGINES {
        let cache = big();
        // Keys 3 and 4 live on shard 1, 42 on shard 0 (see routes.rs).
        let same = "SELECT * FROM t WHERE id = 3 AND x IN (SELECT x FROM t WHERE id = 4)";
        let other = "SELECT * FROM t WHERE id = 3 AND x IN (SELECT x FROM t WHERE id = 42)";
        let first = cache.lookup(same, engine).unwrap();
        assert!(first.entry.templated);
        let second = cache.lookup(other, engine).unwrap();
        assert!(second.hit && Arc::ptr_eq(&first.entry, &second.entry));
        assert_eq!(second.literals, ["3", "42"]);
        let route = |lookup: &router::cache::Lookup| {
            lookup
                .entry
                .route(&lookup.params(&[]), &none, &sharding)
                .map(|routed| routed.route)
        };
        assert_eq!(route(&first), Ok(router::route::Route::Shard(1)));
        assert!(
            matches!(
                route(&second),
                Err(router::route::RouteError::SubqueryOnOtherShards { .. })
            ),
            "{engine:?}"
        );
    }
}
