//! The transaction state machine, one line per case: the state before, the
//! attached server, the input, what the machine answers and the state after.
//! States: `idle`, `deferred` (BEGIN answered, text `BEGIN`), `open` (opened
//! by pgshard on a server: it has a join script), `failed`.
//! Servers: `-` (none) or shard and status, e.g. `0I`, `1T`, `0I copy`.

use super::*;

fn machine(state: &str) -> Transaction {
    let join = (state == "open").then(|| BytesMut::from(&b"BEGIN"[..]));
    let txn = match state {
        "idle" | "open" => Txn::None,
        "deferred" => Txn::Deferred(Bytes::from_static(b"BEGIN")),
        "failed" => Txn::Failed,
        other => panic!("unknown state {other}"),
    };
    Transaction {
        txn,
        scoped_overrides: false,
        join,
        after_open: Vec::new(),
        tentative: None,
    }
}

fn server(spec: &str) -> Option<ServerView> {
    if spec == "-" {
        return None;
    }
    let (head, copy) = match spec.strip_suffix(" copy") {
        Some(head) => (head, true),
        None => (spec, false),
    };
    let (shard, status) = head.split_at(head.len() - 1);
    Some(ServerView {
        shard: shard.parse().unwrap(),
        status: status_of(status.as_bytes()[0]),
        copy_in: copy,
    })
}

fn status_of(byte: u8) -> TransactionStatus {
    match byte {
        b'I' => TransactionStatus::Idle,
        b'T' => TransactionStatus::InBlock,
        b'E' => TransactionStatus::Failed,
        other => panic!("unknown status {}", char::from(other)),
    }
}

fn state(t: &Transaction) -> String {
    match &t.txn {
        Txn::None => "idle".into(),
        Txn::Deferred(text) => format!("deferred {}", String::from_utf8_lossy(text)),
        Txn::Failed => "failed".into(),
    }
}

fn control(statement: &str) -> Control<'_> {
    match statement {
        "COMMIT" => Control::Commit,
        "ROLLBACK" => Control::Rollback,
        s if s.starts_with("BEGIN") || s.starts_with("START") => Control::Begin(s.as_bytes()),
        s if s.starts_with("SET CONSTRAINTS") => Control::Scoped(s.as_bytes(), "SET CONSTRAINTS"),
        s if s.starts_with("SET LOCAL") || s.starts_with("SET TRANSACTION") => {
            Control::Scoped(s.as_bytes(), "SET")
        }
        _ => Control::Other,
    }
}

fn verdict(v: Verdict) -> String {
    match v {
        Verdict::Answer { tag, ends: false } => format!("answer {tag}"),
        Verdict::Answer { tag, ends: true } => format!("answer {tag}, ends"),
        Verdict::Aborted => "aborted".into(),
        Verdict::NestedBegin => "nested begin".into(),
        Verdict::Route => "route".into(),
    }
}

#[test]
fn statements_before_routing() {
    #[rustfmt::skip]
    let cases = [
        // state     server  statement                        busy   verdict                   state after
        ("idle",     "-",    "BEGIN",                         false, "answer BEGIN",           "deferred BEGIN"),
        ("idle",     "-",    "START TRANSACTION READ ONLY",   false, "answer BEGIN",           "deferred START TRANSACTION READ ONLY"),
        ("idle",     "0I",   "BEGIN",                         false, "answer BEGIN",           "deferred BEGIN"),
        // Replies still due, or a transaction open on the server: in order, on the server.
        ("idle",     "-",    "BEGIN",                         true,  "route",                  "idle"),
        ("idle",     "0T",   "BEGIN",                         false, "route",                  "idle"),
        ("idle",     "0E",   "BEGIN",                         false, "route",                  "idle"),
        // No transaction here: the server answers (with its warning).
        ("idle",     "-",    "COMMIT",                        false, "route",                  "idle"),
        ("idle",     "0T",   "COMMIT",                        false, "route",                  "idle"),
        ("idle",     "0T",   "SET LOCAL a = 1",               false, "route",                  "idle"),
        ("idle",     "-",    "SELECT 1",                      false, "route",                  "idle"),
        ("deferred", "-",    "BEGIN",                         false, "nested begin",           "deferred BEGIN"),
        ("deferred", "-",    "COMMIT",                        false, "answer COMMIT, ends",    "idle"),
        ("deferred", "0I",   "COMMIT",                        true,  "answer COMMIT, ends",    "idle"),
        ("deferred", "-",    "ROLLBACK",                      false, "answer ROLLBACK, ends",  "idle"),
        ("deferred", "-",    "SET LOCAL a = 1",               false, "answer SET",             "deferred BEGIN\n;SET LOCAL a = 1"),
        ("deferred", "-",    "SET TRANSACTION READ ONLY",     false, "answer SET",             "deferred BEGIN\n;SET TRANSACTION READ ONLY"),
        ("deferred", "-",    "SET CONSTRAINTS ALL DEFERRED",  false, "answer SET CONSTRAINTS", "deferred BEGIN\n;SET CONSTRAINTS ALL DEFERRED"),
        ("deferred", "-",    "SELECT 1",                      false, "route",                  "deferred BEGIN"),
        // Aborted: only its end is accepted, and COMMIT rolls back.
        ("failed",   "-",    "COMMIT",                        false, "answer ROLLBACK, ends",  "idle"),
        ("failed",   "0I",   "ROLLBACK",                      true,  "answer ROLLBACK, ends",  "idle"),
        ("failed",   "-",    "BEGIN",                         false, "aborted",                "failed"),
        ("failed",   "-",    "SET LOCAL a = 1",               false, "aborted",                "failed"),
        ("failed",   "-",    "SELECT 1",                      false, "aborted",                "failed"),
    ];
    for (before, attached, statement, busy, expected, after) in cases {
        let mut t = machine(before);
        let got = verdict(t.on_statement(control(statement), server(attached), busy));
        let case = format!("{before} / {attached} / {statement}");
        assert_eq!(got, expected, "{case}");
        assert_eq!(state(&t), after, "{case}");
    }
}

#[test]
fn placement_of_routed_statements() {
    #[rustfmt::skip]
    let cases = [
        // state     server  shards  needs block  placement
        ("idle",     "-",    "any",  false,       "any"),
        ("idle",     "-",    "any",  true,        "any"),
        ("deferred", "-",    "any",  false,       "any"),
        // DECLARE, SAVEPOINT, named portals open the transaction somewhere.
        ("deferred", "-",    "any",  true,        "shard 2"),
        ("deferred", "1I",   "any",  true,        "shard 1"),
        ("idle",     "-",    "1",    false,       "shard 1"),
        ("deferred", "0I",   "1",    false,       "shard 1"),
        ("idle",     "0T",   "1",    false,       "shard 1"),
        ("idle",     "-",    "0,1",  false,       "fan-out"),
        ("idle",     "0I",   "0,1",  false,       "fan-out"),
        ("idle",     "0T",   "0,1",  false,       "refuse"),
        ("idle",     "0E",   "0,1",  false,       "refuse"),
        ("deferred", "-",    "0,1",  false,       "in txn"),
        ("deferred", "0I",   "0,1",  false,       "in txn"),
        ("open",     "0T",   "0,1",  false,       "in txn"),
        ("open",     "0E",   "0,1",  false,       "in txn"),
    ];
    for (before, attached, shards, needs_block, expected) in cases {
        let t = machine(before);
        let shards: Option<Vec<usize>> =
            (shards != "any").then(|| shards.split(',').map(|s| s.parse().unwrap()).collect());
        let got = match t.place(shards.as_deref(), needs_block, server(attached), || 2) {
            Placement::Send(Target::Any) => "any".to_owned(),
            Placement::Send(Target::Shard(s)) => format!("shard {s}"),
            Placement::Send(Target::Near(s)) => format!("near {s}"),
            Placement::FanOut => "fan-out".into(),
            Placement::FanOutInTxn => "in txn".into(),
            Placement::Refuse => "refuse".into(),
        };
        assert_eq!(
            got, expected,
            "{before} / {attached} / {shards:?} / {needs_block}"
        );
    }
}

#[test]
fn attached_server_fits_target() {
    #[rustfmt::skip]
    let cases = [
        // state     server     target     fit
        ("idle",     "0I",      "any",     Fit::Keep),
        ("idle",     "0T",      "any",     Fit::Keep),
        ("idle",     "0I",      "shard 0", Fit::Keep),
        ("idle",     "0T",      "shard 0", Fit::Keep),
        ("idle",     "0I",      "shard 1", Fit::Detach),
        ("idle",     "0T",      "shard 1", Fit::Refuse),
        ("idle",     "0E",      "shard 1", Fit::Refuse),
        ("idle",     "0I copy", "shard 1", Fit::Refuse),
        // A deferred transaction opens on a server checked out for it.
        ("deferred", "0I",      "shard 0", Fit::Detach),
        ("deferred", "0I",      "any",     Fit::Keep),
        ("idle",     "0I",      "near 1",  Fit::Detach),
        ("idle",     "1I",      "near 1",  Fit::Keep),
        ("idle",     "0T",      "near 1",  Fit::Keep),
        ("idle",     "0I copy", "near 1",  Fit::Keep),
        // A transaction pgshard opened joins the next shard; an aborted
        // one stays where its server answers 25P02.
        ("open",     "0T",      "shard 1", Fit::Switch),
        ("open",     "0T",      "shard 0", Fit::Keep),
        ("open",     "0E",      "shard 1", Fit::Keep),
        ("open",     "0T copy", "shard 1", Fit::Refuse),
    ];
    for (before, attached, target, expected) in cases {
        let t = machine(before);
        let target = match target.split_once(' ') {
            None => Target::Any,
            Some(("shard", s)) => Target::Shard(s.parse().unwrap()),
            Some((_, s)) => Target::Near(s.parse().unwrap()),
        };
        let got = t.fit(target, server(attached).unwrap());
        assert_eq!(got, expected, "{before} / {attached} / {target:?}");
    }
}

#[test]
fn refusals_end_the_transaction() {
    #[rustfmt::skip]
    let cases = [
        // state     server  roll back on the server  state after
        ("idle",     "-",    false,                   "idle"),
        ("idle",     "0I",   false,                   "idle"),
        ("idle",     "0T",   true,                    "failed"),
        ("idle",     "0E",   true,                    "failed"),
        ("deferred", "-",    false,                   "failed"),
        ("deferred", "0I",   false,                   "failed"),
        ("failed",   "0I",   false,                   "failed"),
    ];
    for (before, attached, rollback, after) in cases {
        let mut t = machine(before);
        assert_eq!(
            t.refuse(server(attached)),
            rollback,
            "{before} / {attached}"
        );
        assert_eq!(state(&t), after, "{before} / {attached}");
    }
}

#[test]
fn client_status() {
    #[rustfmt::skip]
    let cases = [
        ("idle", b'I', b'I'), ("idle", b'T', b'T'), ("idle", b'E', b'E'),
        ("deferred", b'I', b'T'), ("failed", b'I', b'E'), ("failed", b'T', b'E'),
    ];
    for (before, server_status, expected) in cases {
        let t = machine(before);
        assert_eq!(
            t.status(status_of(server_status)),
            status_of(expected),
            "{before}"
        );
        assert_eq!(t.overrides_server(), before != "idle");
    }
}

#[test]
fn opening_and_errors() {
    let mut t = machine("deferred");
    t.on_statement(control("SET LOCAL a = 1"), None, false);
    assert_eq!(t.open().unwrap(), "BEGIN\n;SET LOCAL a = 1");
    assert_eq!(state(&t), "idle");
    assert_eq!(t.open(), None);
    let mut t = machine("failed");
    assert_eq!(t.open(), None);
    assert_eq!(state(&t), "failed");

    let mut t = machine("deferred");
    t.on_error();
    assert_eq!(state(&t), "failed");
    let mut t = machine("idle");
    t.on_error();
    assert_eq!(state(&t), "idle");
}

#[test]
fn overrides_end_with_their_transaction() {
    // Set outside a transaction: they stay.
    let mut t = machine("idle");
    t.on_override(server("0I"));
    assert!(!t.on_end(Some(TransactionStatus::Idle)));
    // Set in a deferred transaction that pgshard ends.
    let mut t = machine("deferred");
    t.on_override(None);
    assert!(!t.on_end(None), "still deferred");
    t.on_statement(Control::Commit, None, false);
    assert!(t.on_end(None));
    assert!(!t.on_end(None), "once");
    // Set in a transaction open on the server: they go at its end.
    let mut t = machine("idle");
    t.on_override(server("0T"));
    assert!(!t.on_end(Some(TransactionStatus::InBlock)));
    assert!(t.on_end(Some(TransactionStatus::Idle)));
}

#[test]
fn a_savepoint_statement_that_fails_on_the_one_server_leaves_the_join_script() {
    let mut t = machine("open");
    t.record_tentative(b"SAVEPOINT a");
    t.settled();
    t.record_tentative(b"ROLLBACK TO SAVEPOINT nope");
    t.on_error();
    assert_eq!(t.join_script(), Some(&b"BEGIN\n;SAVEPOINT a"[..]));
    // An error after the ReadyForQuery takes nothing back.
    t.record_tentative(b"RELEASE a");
    t.settled();
    t.on_error();
    assert_eq!(
        t.join_script(),
        Some(&b"BEGIN\n;SAVEPOINT a\n;RELEASE a"[..])
    );
}
