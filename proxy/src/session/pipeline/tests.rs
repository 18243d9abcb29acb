//! The pipeline's flags, one line per case: the events in order, then the
//! facts that hold after them (`unsynced`, `copy`, `flight` for
//! [`Pipeline::in_flight`], `-` for none). Events: `ext` (extended
//! messages sent), `sync`, `copy` (CopyInResponse), `done` (the client's
//! CopyDone/CopyFail), `error` (an error at a Sync).

use super::*;

fn run(events: &str) -> Pipeline {
    let mut pipeline = Pipeline::new(QueryClock::new(None));
    for event in events.split_whitespace() {
        match event {
            "ext" => pipeline.sent_extended(),
            "sync" => pipeline.synced(),
            "copy" => pipeline.copy_in_started(),
            "done" => pipeline.copy_in_ended(),
            "error" => pipeline.failed_at_sync(),
            other => panic!("unknown event {other}"),
        }
    }
    pipeline
}

fn facts(pipeline: &Pipeline) -> String {
    let facts: Vec<&str> = [
        (pipeline.unsynced(), "unsynced"),
        (pipeline.in_copy_in(), "copy"),
        (pipeline.in_flight(), "flight"),
    ]
    .into_iter()
    .filter_map(|(holds, name)| holds.then_some(name))
    .collect();
    match facts.is_empty() {
        true => "-".to_owned(),
        false => facts.join(" "),
    }
}

#[test]
fn flags_follow_their_events() {
    let cases = [
        ("", "-"),
        ("ext", "unsynced flight"),
        ("ext sync", "-"),
        ("ext ext", "unsynced flight"),
        // A COPY bound in the extended protocol: both hold until the
        // client's data ends and its Sync goes.
        ("ext copy", "unsynced copy flight"),
        ("ext copy sync", "copy flight"),
        ("ext copy done", "unsynced flight"),
        ("ext copy done sync", "-"),
        // A simple query's COPY: a Sync changes nothing of it.
        ("copy", "copy flight"),
        ("copy sync", "copy flight"),
        ("copy done", "-"),
        ("done", "-"),
        // An error ends neither.
        ("ext error", "unsynced flight"),
        ("copy error", "copy flight"),
    ];
    for (events, expected) in cases {
        assert_eq!(facts(&run(events)), expected, "{events}");
    }
}

#[test]
fn ready_reports_an_error_once() {
    let cases = [
        ("", [false, false]),
        ("error", [true, false]),
        ("error error", [true, false]),
        ("ext error sync", [true, false]),
        ("ext sync", [false, false]),
    ];
    for (events, expected) in cases {
        let mut pipeline = run(events);
        assert_eq!([pipeline.ready(), pipeline.ready()], expected, "{events}");
    }
}

#[test]
fn errors_are_counted_from_a_mark() {
    let mut pipeline = run("");
    let before = pipeline.error_mark();
    assert!(!pipeline.errors_since(before));
    pipeline.error_relayed();
    let after = pipeline.error_mark();
    assert!(pipeline.errors_since(before));
    assert!(!pipeline.errors_since(after));
}

#[test]
fn the_unnamed_statement_is_where_it_was_last_parsed() {
    // Events: `parse N` (parsed on server N), `drop N` (dropped on N),
    // `query` (a simple query of pgshard's), `gone` (dropped everywhere);
    // then the server that holds it, `-` for none.
    let cases = [
        ("parse 1", "1"),
        ("parse 1 parse 2", "2"),
        ("parse 1 drop 2", "1"),
        ("parse 1 drop 1", "-"),
        ("parse 1 query", "-"),
        ("parse 1 gone", "-"),
        ("drop 1", "-"),
    ];
    for (events, expected) in cases {
        let mut pipeline = run("");
        let mut words = events.split_whitespace();
        while let Some(event) = words.next() {
            let mut id = || words.next().and_then(|n| n.parse().ok()).unwrap();
            match event {
                "parse" => pipeline.unnamed_parsed_on(id()),
                "drop" => pipeline.unnamed_dropped_on(id()),
                "query" => pipeline.query("SELECT 1"),
                "gone" => pipeline.unnamed_dropped(),
                other => panic!("unknown event {other}"),
            }
        }
        let holder = (1..=2).find(|&id| pipeline.unnamed_is_on(id));
        let holder = holder.map_or("-".to_owned(), |id| id.to_string());
        assert_eq!(holder, expected, "{events}");
    }
}

#[test]
fn a_query_of_pgshards_own_is_queued() {
    let mut pipeline = run("");
    assert!(pipeline.queued().is_empty());
    pipeline.query("ROLLBACK");
    assert_eq!(pipeline.queued().first(), Some(&b'Q'));
    assert!(pipeline.queued().ends_with(b"ROLLBACK\0"));
}
