//! The routing state's per-statement facts and its recent templates, one
//! line per case. Events: `read`/`primary` (judged a plain read or not),
//! `writes`/`reads` (placing a statement its summary says may write or
//! not), `write` (placing one that writes), `nowrite` (one that writes
//! nothing), `placed`, `took-replica`, `took-writes`, `read-placed`; then
//! the facts that hold (`replica`, `writes`, `-`) and what the takes
//! returned.

use super::*;

fn run(events: &str) -> (RouteState, Vec<bool>) {
    let mut state = RouteState::default();
    let mut taken = Vec::new();
    for event in events.split_whitespace() {
        match event {
            "read" => state.judged_read(true),
            "primary" => state.judged_read(false),
            "writes" => state.placing(true),
            "reads" => state.placing(false),
            "nowrite" => state.placing_no_write(),
            "write" => state.placing_write(),
            "placed" => state.placed(),
            "read-placed" => state.read_placed(),
            "took-replica" => taken.push(state.take_replica_ok()),
            "took-writes" => taken.push(state.take_writes()),
            other => panic!("unknown event {other}"),
        }
    }
    (state, taken)
}

fn facts(state: &RouteState) -> String {
    match (state.replica_ok(), state.writes()) {
        (false, false) => "-".to_owned(),
        (true, false) => "replica".to_owned(),
        (false, true) => "writes".to_owned(),
        (true, true) => "replica writes".to_owned(),
    }
}

#[test]
fn statement_facts_follow_their_events() {
    let cases = [
        ("", "-", vec![]),
        ("read", "replica", vec![]),
        ("read primary", "-", vec![]),
        // A SELECT that reads tables may both run on a replica and write.
        ("read writes", "replica writes", vec![]),
        ("read writes took-replica", "writes", vec![true]),
        ("read writes took-writes", "replica", vec![true]),
        ("read took-replica took-replica", "-", vec![true, false]),
        ("read read-placed", "-", vec![]),
        ("write", "writes", vec![]),
        ("write nowrite", "-", vec![]),
        ("writes reads", "-", vec![]),
        ("reads writes", "writes", vec![]),
        ("write placed", "-", vec![]),
        ("writes took-writes took-writes", "-", vec![true, false]),
        ("primary took-replica", "-", vec![false]),
    ];
    for (events, expected, taken) in cases {
        let (state, took) = run(events);
        assert_eq!(facts(&state), expected, "{events}");
        assert_eq!(took, taken, "{events}");
    }
}

#[test]
fn overrides_last_until_their_transaction_ends() {
    let mut state = RouteState::default();
    state.shard_set(Some(1));
    state.sharding_key_set(Some("42".to_owned()));
    assert_eq!(state.overrides().shard, Some(1));
    assert_eq!(state.overrides().sharding_key.as_deref(), Some("42"));
    state.shard_set(None);
    assert_eq!(state.overrides().shard, None);
    state.overrides_ended();
    assert_eq!(state.overrides().sharding_key, None);
}

#[test]
fn recent_templates_are_found_again_and_dropped_when_the_config_changes() {
    let cache = AstCache::new(100, 1 << 20);
    let engine = ParserEngine::ZeroCopy;
    let mut state = RouteState::default();
    let lookup = |state: &mut RouteState, sql: &str| match state.lookup(&cache, sql, engine) {
        Ok(found) => found,
        Err(_) => panic!("parse {sql}"),
    };
    let first = lookup(&mut state, "SELECT * FROM t WHERE id = 1");
    assert!(
        first.entry.templated,
        "a statement with a literal is templated"
    );
    assert_eq!(state.recent.len(), 1);
    // Another text of the same template is found among the recent ones
    // (from the shared map it would be remembered a second time).
    let again = lookup(&mut state, "SELECT * FROM t WHERE id = 2");
    assert!(Arc::ptr_eq(&first.entry, &again.entry));
    assert_eq!(state.recent.len(), 1);
    for n in 0..RECENT_TEMPLATES + 2 {
        lookup(&mut state, &format!("SELECT * FROM u{n} WHERE id = 1"));
    }
    assert_eq!(
        state.recent.len(),
        RECENT_TEMPLATES,
        "at most a few are kept"
    );
    state.config_changed();
    assert!(state.recent.is_empty());
}
