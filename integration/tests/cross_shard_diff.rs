//! A randomized differential test of keyless (cross-shard) SELECTs: seeded
//! statements over sharded tables (`cross_shard_diff/generator.rs`) run
//! through pgshard on 2 and 4 partition-only shards and on one reference
//! Postgres holding every row (`cross_shard_diff/data.rs`), in the simple
//! protocol, the extended protocol with text and binary results, and read
//! in parts: as a cursor FETCHed in seeded chunk sizes and as a portal
//! Executed with a row limit (`cross_shard_diff/target.rs`); PREPAREd with
//! SQL (most of their values made parameters) then EXECUTEd, as simple
//! queries, through the extended protocol, and in one query string; some
//! also read through a view and a function (`cross_shard_diff/behind.rs`);
//! also tables created from queries (CREATE TABLE AS, SELECT INTO,
//! materialized views), read after. A test of its own runs seeded query
//! strings of several statements for different shards (writes, reads,
//! failures, blocks: `cross_shard_diff/strings.rs`), every reply and the
//! tables after each compared. Another runs the seeded SELECTs with
//! `cross_shard_finish = "coordinator"`, where what the streaming path
//! refuses is finished on the coordinator (issue 34), in the simple
//! protocol, inside a block that wrote first, extended text and binary,
//! read in parts (a cursor's FETCHes, with MOVEs, a portal's row-limited
//! Executes) and PREPAREd three ways: there only the gather planner's own
//! 0A000 counts as a refusal. Another carries the
//! seeded SELECTs as subqueries into writes (`cross_shard_diff/writes.rs`:
//! keyed, keyless and omnisharded UPDATE, DELETE and INSERT, with
//! RETURNING) seven ways (simple, in a block, extended text and binary,
//! PREPAREd three ways), the tables compared after each.
//! pgshard must answer exactly as the
//! reference does (columns, types, rows, row count) or refuse with 0A000
//! (DESIGN.md §2: no silent wrong answers).
//!
//! Environment: `PGSHARD_DIFF_SEED` (default: from the clock; printed),
//! `PGSHARD_DIFF_N` statements per cluster (default 1200; the one-shard
//! control runs a third; query strings: a sixth),
//! `PGSHARD_DIFF_REPORT_ONLY=1` to print failures
//! without failing, `PGSHARD_DIFF_SHOW` failures printed in full (default
//! 12).
//!
//! Run: `cargo test -p integration --test cross_shard_diff -- --nocapture`.
//! Every wrong answer fails the test, in every category.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod cross_shard_diff {
    pub mod behind;
    pub mod data;
    pub mod generator;
    pub mod sources;
    pub mod strings;
    pub mod target;
    pub mod writes;
}

use std::collections::BTreeMap;
use std::time::Instant;

use common::{connect, sharded_config, Cluster, USERS};
use cross_shard_diff::behind;
use cross_shard_diff::data::{self, Data};
use cross_shard_diff::generator::{Case, Category, Generator};
use cross_shard_diff::strings;
use cross_shard_diff::target::{Answer, Outcome, Protocol, Target};
use cross_shard_diff::writes::Writes;
use integration::TestProxy;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Failures printed in full; the rest are counted.
const SHOWN_FAILURES: usize = 12;

/// The control: on one shard pgshard forwards every statement whole, so
/// every answer must match. A failure here is a bug in the test (an order
/// called total that is not) or in pgshard's pass-through, not in merging.
#[tokio::test(flavor = "multi_thread")]
async fn every_select_matches_one_postgres_on_one_shard() {
    differential(1).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn keyless_selects_match_one_postgres_on_two_shards() {
    differential(2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn keyless_selects_match_one_postgres_on_four_shards() {
    differential(4).await;
}

/// Query strings whose statements go to different shards: each string's
/// replies (in order, every statement's) and the written tables after it
/// are the reference's, or pgshard refuses the string with 0A000 and
/// nothing of it stays.
#[tokio::test(flavor = "multi_thread")]
async fn query_strings_match_one_postgres_on_two_shards() {
    query_strings(2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn query_strings_match_one_postgres_on_four_shards() {
    query_strings(4).await;
}

async fn query_strings(n: usize) {
    common::watch_proxy_panics();
    let settings = Settings::from_env();
    let seed = settings.seed;
    let count = settings.statements.div_ceil(6);
    println!(
        "[strings, {n} shards] seed {seed} (PGSHARD_DIFF_SEED={seed} to repeat), {count} strings"
    );
    let data = Data::generate(seed);
    let (_cluster, mut pgshard, mut reference) = start(n, &data, "").await;
    let mut generator = Generator::new(seed, data.user_ids());
    let mut strings = strings::Strings::new(seed, data.user_ids());
    let (mut exact, mut refused, mut wrong) = (0, 0, Vec::new());
    for _ in 0..count {
        let sql = strings.next(&mut generator);
        let got = strings::shape(&pgshard.replies(&sql).await.unwrap_or_default());
        // Refused (before it ran, or mid-way and rolled back): the
        // reference does not run it, and the tables must still agree.
        let is_refused = strings::refused(&got);
        let want = match is_refused {
            true => Vec::new(),
            false => strings::shape(&reference.replies(&sql).await.unwrap_or_default()),
        };
        // An aborted block of the string's own is ended.
        if got.last().is_some_and(|z| z != "Z I") {
            pgshard.replies("ROLLBACK").await.unwrap();
        }
        if want.last().is_some_and(|z| z != "Z I") {
            reference.replies("ROLLBACK").await.unwrap();
        }
        let mut same = is_refused || got == want;
        for table in strings::TABLES {
            let got = strings::shape(&pgshard.replies(table).await.unwrap_or_default());
            let want = strings::shape(&reference.replies(table).await.unwrap_or_default());
            same &= got == want;
        }
        match same {
            true if is_refused => refused += 1,
            true => exact += 1,
            false => wrong.push(format!(
                "{sql}\n  pgshard:   {got:?}\n  reference: {want:?}"
            )),
        }
    }
    println!(
        "[strings, {n} shards] {count} strings: {exact} exact, {refused} refused, {} wrong",
        wrong.len()
    );
    for failure in wrong.iter().take(SHOWN_FAILURES) {
        println!("{failure}");
    }
    assert_eq!(
        common::proxy_panics(),
        0,
        "a proxy task panicked (seed {seed})"
    );
    assert!(exact > count / 2, "most strings must run (seed {seed})");
    if !wrong.is_empty() && !settings.report_only {
        panic!(
            "[strings] {} strings answered wrongly (seed {seed})",
            wrong.len()
        );
    }
}

/// With `cross_shard_finish = "coordinator"`, the statements the
/// streaming path refuses are finished on the coordinator (issue 34; the
/// simple protocol for now): each seeded statement in the simple protocol,
/// outside a block and inside one that wrote first, must be the
/// reference's answer, or the
/// same error, or refused by the gather planner itself (0A000 saying it
/// cannot be finished on the coordinator either). A 0A000 that never tried
/// the coordinator counts as wrong, and so does any other answer.
#[tokio::test(flavor = "multi_thread")]
async fn gathered_selects_match_one_postgres_on_two_shards() {
    gathered(2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gathered_selects_match_one_postgres_on_four_shards() {
    gathered(4).await;
}

/// The protocols the gathered runs try each statement in: whole, and
/// read in parts (a cursor's FETCHes, a named portal's row-limited
/// Executes, FETCH and MOVE in turns) of a seeded size ([`Chunks`]).
const GATHERED_IN: [Protocol; 7] = [
    Protocol::Simple,
    Protocol::Block,
    Protocol::ExtendedText,
    Protocol::ExtendedBinary,
    Protocol::Cursor,
    Protocol::Portal,
    Protocol::CursorMove,
];

/// The ways of SQL PREPARE the gathered runs try each statement in.
const GATHERED_PREPARED: [Protocol; 3] = Protocol::PREPARED;

async fn gathered(n: usize) {
    common::watch_proxy_panics();
    let settings = Settings::from_env();
    let seed = settings.seed;
    let count = settings.statements.div_ceil(2);
    println!(
        "[gathered, {n} shards] seed {seed} (PGSHARD_DIFF_SEED={seed} to repeat), {count} statements"
    );
    let data = Data::generate(seed);
    let general = "cross_shard_finish = \"coordinator\"";
    let (_cluster, mut pgshard, mut reference) = start(n, &data, general).await;
    let mut generator = Generator::new(seed, data.user_ids());
    let mut tally = Tally::default();
    let mut chunks = Chunks::new(seed);
    for index in 0..count {
        let case = generator.next_case();
        if case.setup.is_some() {
            continue;
        }
        let mut wrong = Vec::new();
        for protocol in GATHERED_IN {
            // The rows a MOVE skips are known only in a fixed order.
            if protocol == Protocol::CursorMove && !case.ordered {
                continue;
            }
            let chunk = match protocol {
                Protocol::Cursor | Protocol::Portal | Protocol::CursorMove => chunks.next(),
                _ => 100,
            };
            let (got, want) = tokio::join!(
                pgshard.run(protocol, &case.sql, chunk),
                reference.run(protocol, &case.sql, chunk)
            );
            let verdict = match judge(&case, &got, &want) {
                Verdict::Refused if !planner_refused(&got) => {
                    Verdict::Wrong("refused without finishing it on the coordinator".into())
                }
                verdict => verdict,
            };
            tally.count(&case, protocol, &verdict, &want);
            if let Verdict::Wrong(why) = verdict {
                wrong.push((protocol, why, got, want));
            }
        }
        // PREPAREd, some marked literals made parameters, and EXECUTEd.
        let mut flip = index % 2 == 0;
        let (prepare, execute) = case.prepared("pg", || {
            flip = !flip;
            flip
        });
        for protocol in GATHERED_PREPARED {
            let statement = ("pg", prepare.as_str(), execute.as_str());
            let (got, want) = tokio::join!(
                pgshard.run_prepared(protocol, statement),
                reference.run_prepared(protocol, statement)
            );
            let verdict = match judge(&case, &got, &want) {
                Verdict::Refused if !planner_refused(&got) => {
                    Verdict::Wrong("refused without finishing it on the coordinator".into())
                }
                verdict => verdict,
            };
            tally.count(&case, protocol, &verdict, &want);
            if let Verdict::Wrong(why) = verdict {
                wrong.push((protocol, format!("{why} [{prepare}; {execute}]"), got, want));
            }
        }
        if !wrong.is_empty() {
            tally.fail(index, &case, &wrong);
        }
    }
    let failures = tally.report(n, seed);
    assert_eq!(
        common::proxy_panics(),
        0,
        "a proxy task panicked (seed {seed})"
    );
    for protocol in GATHERED_IN
        .into_iter()
        .filter(|&p| p != Protocol::CursorMove)
    {
        let beyond = tally.counts.get(&(Category::Beyond, protocol));
        assert!(
            beyond.is_some_and(|counts| counts[0] > counts[1]),
            "most statements beyond the streaming merge must be answered in {} (seed {seed}): \
             {beyond:?}",
            protocol.name()
        );
    }
    if failures > 0 && !settings.report_only {
        panic!("[gathered, {n} shards] {failures} statements answered wrongly (seed {seed})");
    }
}

/// Writes that read across shards (issue 34): the seeded SELECTs carried
/// as subqueries into keyed, keyless and omnisharded UPDATEs, DELETEs and
/// INSERTs ([`Writes`]), with `cross_shard_finish = "coordinator"`, in the
/// simple protocol, inside a block that wrote first (rolled back), the
/// extended protocol with text and binary results, and PREPAREd three ways
/// (the marked literals, the subquery's and the write's, made parameters).
/// Each write's tag, RETURNING rows or SQLSTATE must be the reference's,
/// and so must every written table after it; a write pgshard refuses with
/// 0A000 is not run on the reference (the tables must still agree).
#[tokio::test(flavor = "multi_thread")]
async fn carried_writes_match_one_postgres_on_two_shards() {
    carried_writes(2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn carried_writes_match_one_postgres_on_four_shards() {
    carried_writes(4).await;
}

/// The ways the carried writes run.
const WRITES_IN: [Protocol; 7] = [
    Protocol::Simple,
    Protocol::Block,
    Protocol::ExtendedText,
    Protocol::ExtendedBinary,
    Protocol::PreparedSimple,
    Protocol::PreparedExtended,
    Protocol::PreparedString,
];

async fn carried_writes(n: usize) {
    common::watch_proxy_panics();
    let settings = Settings::from_env();
    let seed = settings.seed;
    let count = settings.statements.div_ceil(12);
    println!(
        "[writes, {n} shards] seed {seed} (PGSHARD_DIFF_SEED={seed} to repeat), {count} statements"
    );
    let data = Data::generate(seed);
    let general = "cross_shard_finish = \"coordinator\"";
    let (_cluster, mut pgshard, mut reference) = start(n, &data, general).await;
    let mut generator = Generator::new(seed, data.user_ids());
    let mut writes = Writes::new(seed, data.user_ids());
    let mut tally = Tally::default();
    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    for index in 0..count {
        let select = generator.next_case();
        if select.setup.is_some() {
            continue;
        }
        let mut wrong = Vec::new();
        for protocol in WRITES_IN {
            let case = writes.next(&select);
            let (got, want) = write_both(&mut pgshard, &mut reference, protocol, &case).await;
            // Any 0A000 is a refusal here (rule 12's answers are the
            // SELECTs' to give, not a carried write's).
            let mut verdict = match &got {
                Outcome::Error { code, .. } if code == "0A000" => Verdict::Refused,
                _ => judge(&case, &got, &want),
            };
            if let (Verdict::Refused, Outcome::Error { message, .. }) = (&verdict, &got) {
                let reason: String = message.chars().take(400).collect();
                *refusals.entry(reason).or_default() += 1;
                if std::env::var("PGSHARD_DIFF_SHOW_REFUSED").is_ok() {
                    println!("REFUSED [{}] {} -> {message}", protocol.name(), case.sql);
                }
            }
            for table in strings::TABLES {
                let got = strings::shape(&pgshard.replies(table).await.unwrap_or_default());
                let want = strings::shape(&reference.replies(table).await.unwrap_or_default());
                if got != want && !matches!(verdict, Verdict::Wrong(_)) {
                    verdict = Verdict::Wrong(format!("the tables differ after it: {table}"));
                }
            }
            tally.count(&case, protocol, &verdict, &want);
            if let Verdict::Wrong(why) = verdict {
                wrong.push((protocol, format!("{why} [{}]", case.sql), got, want));
            }
        }
        if !wrong.is_empty() {
            tally.fail(index, &select, &wrong);
        }
    }
    let failures = tally.report(n, seed);
    for (reason, times) in &refusals {
        println!("[writes, {n} shards] refused {times}x: {reason}");
    }
    assert_eq!(
        common::proxy_panics(),
        0,
        "a proxy task panicked (seed {seed})"
    );
    // PREPAREd without types, a write whose subqueries take parameters
    // is refused, and so is an EXECUTE of one sent through Parse/Bind/
    // Execute: counted, not required.
    let required =
        |p: &Protocol| !matches!(p, Protocol::PreparedString | Protocol::PreparedExtended);
    for protocol in WRITES_IN.into_iter().filter(required) {
        let runs = tally
            .counts
            .iter()
            .filter(|((_, p), _)| *p == protocol)
            .fold([0; 4], |mut sum, (_, counts)| {
                sum.iter_mut().zip(counts).for_each(|(s, c)| *s += c);
                sum
            });
        // Writes of the omnisharded table (a fifth) are refused for now.
        assert!(
            runs[0] > 2 * runs[1],
            "most carried writes must run in {} (seed {seed}): {runs:?} \
             (exact, refused, both failed, wrong)",
            protocol.name()
        );
    }
    if failures > 0 && !settings.report_only {
        panic!("[writes, {n} shards] {failures} statements answered wrongly (seed {seed})");
    }
}

/// `case` through pgshard, then (unless pgshard refused it with 0A000)
/// through the reference: both outcomes.
async fn write_both(
    pgshard: &mut Target,
    reference: &mut Target,
    protocol: Protocol,
    case: &Case,
) -> (Outcome, Outcome) {
    let flips = {
        let mut flip = false;
        move || {
            flip = !flip;
            flip
        }
    };
    // The string way PREPAREs without types: its subqueries' parameters
    // cannot be given (refused), the others' can.
    let prepared = match protocol {
        Protocol::PreparedString => case.prepared("pw", flips),
        _ => case.prepared_typed("pw", flips),
    };
    let statement = ("pw", prepared.0.as_str(), prepared.1.as_str());
    let is_prepared = Protocol::PREPARED.contains(&protocol);
    let got = match is_prepared {
        true => pgshard.run_prepared(protocol, statement).await,
        false => pgshard.run(protocol, &case.sql, 100).await,
    };
    if matches!(&got, Outcome::Error { code, .. } if code == "0A000") {
        return (got, Outcome::Broken("not run: pgshard refused it".into()));
    }
    let want = match is_prepared {
        true => reference.run_prepared(protocol, statement).await,
        false => reference.run(protocol, &case.sql, 100).await,
    };
    (got, want)
}

/// A 0A000 of the gather planner's own (the streaming path refused the
/// statement and the coordinator cannot take it either), or of a merge
/// that found at run time a value it cannot compare (a type, a collation:
/// the shards' rows were read already; deciding that before the fan-out,
/// to finish such statements on the coordinator too, comes later).
fn planner_refused(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Error { code, message }
        if code == "0A000" && (message.contains("nor can it be finished on the coordinator")
            || message.starts_with("cannot merge a column of type")
            || message.starts_with("cannot order text across shards")))
}

/// The run's knobs, from the environment.
struct Settings {
    seed: u64,
    statements: usize,
    report_only: bool,
}

impl Settings {
    fn from_env() -> Settings {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let seed = match var("PGSHARD_DIFF_SEED") {
            Some(seed) => seed
                .parse()
                .expect("PGSHARD_DIFF_SEED: an unsigned integer"),
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64 % 1_000_000_000_000)
                .unwrap_or(1),
        };
        let statements =
            var("PGSHARD_DIFF_N").map_or(1200, |n| n.parse().expect("PGSHARD_DIFF_N: a count"));
        Settings {
            seed,
            statements,
            report_only: var("PGSHARD_DIFF_REPORT_ONLY").is_some_and(|v| v != "0"),
        }
    }
}

/// Users: `app` (SCRAM) for tokio-postgres and `raw`, trusted, for the raw
/// socket paths.
fn users() -> String {
    format!(
        "{USERS}[[users]]\nname = \"raw\"\ndatabase = \"prod\"\nauth_type = \"trust\"\n\
         server_user = \"app\"\nserver_password = \"app-pw\"\n"
    )
}

/// `n` shards and a reference behind pgshard and beside it, loaded.
async fn start(n: usize, data: &Data, general: &str) -> (Cluster, Target, Target) {
    let mut servers = common::servers(n + 1);
    let reference = servers.pop().unwrap();
    let reference_db = format!("shard_{n}");
    let mut shards = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        shards.push(
            connect(server.port(), "app", "app-pw", &format!("shard_{i}"))
                .await
                .unwrap(),
        );
    }
    let direct = connect(reference.port(), "app", "app-pw", &reference_db)
        .await
        .unwrap();
    data::load(data, &shards, &direct).await;
    let proxy =
        TestProxy::start(&sharded_config(&servers, general, data::SHARDING), &users()).unwrap();
    let port = proxy.port();
    let pgshard = Target::connect(
        port,
        "raw",
        "prod",
        format!("host=127.0.0.1 port={port} user=app password=app-pw dbname=prod"),
    )
    .await;
    let oracle = Target::connect(
        reference.port(),
        "postgres",
        &reference_db,
        reference.conninfo("app", Some("app-pw"), &reference_db),
    )
    .await;
    servers.push(reference);
    let cluster = Cluster {
        proxy,
        databases: common::databases(&servers[..n]),
        general: String::new(),
        servers,
        copies_differ: None,
    };
    (cluster, pgshard, oracle)
}

async fn differential(n: usize) {
    common::watch_proxy_panics();
    let mut settings = Settings::from_env();
    if n == 1 {
        // The control needs fewer statements to show the test is sound.
        settings.statements = settings.statements.div_ceil(3);
    }
    let seed = settings.seed;
    println!(
        "[{n} shards] seed {seed} (PGSHARD_DIFF_SEED={seed} to repeat), {} statements",
        settings.statements
    );
    let data = Data::generate(seed);
    let (_cluster, mut pgshard, mut reference) = start(n, &data, "").await;
    let mut generator = Generator::new(seed, data.user_ids());
    // Which literals become parameters: a stream of its own, so that the
    // statements of a seed stay the same.
    let mut picks = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5041_5241_4d53);
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut chunks = Chunks::new(seed);
    for index in 0..settings.statements {
        let case = generator.next_case();
        let chunk = chunks.next();
        let mut wrong = run_case(&case, chunk, &mut pgshard, &mut reference, &mut tally).await;
        // Every 8th statement also through a view, every 8th through a
        // function (a schema change each: fewer keep the run short).
        // (A case with a setup reads what the setup made: it stays as it is.)
        let behind = match index % 8 {
            _ if case.setup.is_some() => None,
            3 => Some(behind::view(index, &case)),
            7 => Some(behind::function(index, &case)),
            _ => None,
        };
        if let Some(behind) = behind {
            let made = tokio::join!(
                pgshard.setup(&behind.create),
                reference.setup(&behind.create)
            );
            if made == (true, true) {
                let case = &behind.case;
                let wrong = run_case(case, chunk, &mut pgshard, &mut reference, &mut tally).await;
                tally.fail(index, case, &wrong);
            }
            tokio::join!(pgshard.setup(&behind.drop), reference.setup(&behind.drop));
        }
        // The same statement PREPAREd, most of its marked literals made
        // parameters, and EXECUTEd with them.
        let (prepare, execute) = case.prepared("pd", || picks.random_bool(0.7));
        let prepared = match case.setup {
            None => Protocol::PREPARED.as_slice(),
            Some(_) => &[],
        };
        for &protocol in prepared {
            let statement = ("pd", prepare.as_str(), execute.as_str());
            let (got, want) = tokio::join!(
                pgshard.run_prepared(protocol, statement),
                reference.run_prepared(protocol, statement)
            );
            let verdict = judge(&case, &got, &want);
            tally.count(&case, protocol, &verdict, &want);
            if let Verdict::Wrong(why) = verdict {
                let shown = format!("{why} [{prepare}; {execute}]");
                wrong.push((protocol, shown, got, want));
            }
        }
        tally.fail(index, &case, &wrong);
    }
    println!(
        "[{n} shards] {} statements x {} ways in {:?}",
        settings.statements,
        Protocol::ALL.len() + Protocol::PREPARED.len(),
        started.elapsed()
    );
    let failures = tally.report(n, seed);
    assert_eq!(
        common::proxy_panics(),
        0,
        "a proxy task panicked (seed {seed})"
    );
    if failures > 0 && !settings.report_only {
        panic!(
            "[{n} shards] {failures} statements answered wrongly (seed {seed}; \
             PGSHARD_DIFF_SEED={seed} repeats the run, PGSHARD_DIFF_REPORT_ONLY=1 only \
             reports); the first are printed above"
        );
    }
}

/// Run `case` in every protocol on both servers; judge and count it. What
/// it answered wrongly, by protocol.
async fn run_case(
    case: &Case,
    chunk: u32,
    pgshard: &mut Target,
    reference: &mut Target,
    tally: &mut Tally,
) -> Vec<(Protocol, String, Outcome, Outcome)> {
    let mut wrong = Vec::new();
    for protocol in Protocol::ALL {
        let (verdict, got, want) = run_one(case, protocol, chunk, pgshard, reference).await;
        tally.count(case, protocol, &verdict, &want);
        if let Verdict::Wrong(why) = verdict {
            wrong.push((protocol, why, got, want));
        }
    }
    wrong
}

/// One case in one protocol: its setup (a table created from a query),
/// which both servers must run or pgshard refuse, then its statement,
/// judged, then its teardown on both.
async fn run_one(
    case: &Case,
    protocol: Protocol,
    chunk: u32,
    pgshard: &mut Target,
    reference: &mut Target,
) -> (Verdict, Outcome, Outcome) {
    let mut outcome = None;
    if let Some(setup) = &case.setup {
        // A schema change is no query to read in parts: it runs on the
        // connection (and as the user) the parts are read through.
        let protocol = match protocol {
            Protocol::Cursor => Protocol::Simple,
            Protocol::Portal => Protocol::ExtendedBinary,
            protocol => protocol,
        };
        let (got, want) = tokio::join!(
            pgshard.run(protocol, setup, chunk),
            reference.run(protocol, setup, chunk)
        );
        if !matches!((&got, &want), (Outcome::Rows(_), Outcome::Rows(_))) {
            outcome = Some((judge(case, &got, &want), got, want));
        }
    }
    let outcome = match outcome {
        Some(outcome) => outcome,
        None => {
            let (got, want) = tokio::join!(
                pgshard.run(protocol, &case.sql, chunk),
                reference.run(protocol, &case.sql, chunk)
            );
            (judge(case, &got, &want), got, want)
        }
    };
    if let Some(teardown) = &case.teardown {
        let (a, b) = tokio::join!(
            pgshard.run(Protocol::Simple, teardown, chunk),
            reference.run(Protocol::Simple, teardown, chunk)
        );
        for done in [a, b] {
            assert!(
                matches!(done, Outcome::Rows(_)),
                "{teardown}: {}",
                show(&done)
            );
        }
    }
    outcome
}

/// How many rows each FETCH of a cursor (each Execute of a portal) asks
/// for: from one to more than any statement returns, seeded.
struct Chunks(rand::rngs::Xoshiro256PlusPlus);

impl Chunks {
    fn new(seed: u64) -> Chunks {
        use rand::SeedableRng;
        Chunks(rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xC0C0))
    }

    fn next(&mut self) -> u32 {
        use rand::RngExt;
        match self.0.random_range(0..100) {
            0..=4 => 1,
            5..=24 => self.0.random_range(2..10),
            25..=59 => self.0.random_range(10..100),
            60..=89 => self.0.random_range(100..1000),
            _ => 5000,
        }
    }
}

/// How one statement in one protocol came out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// The reference's answer, exactly.
    Exact,
    /// pgshard refused with 0A000.
    Refused,
    /// Both failed with the same SQLSTATE.
    SameError,
    /// Anything else: a wrong answer.
    Wrong(String),
}

fn judge(case: &Case, got: &Outcome, want: &Outcome) -> Verdict {
    match (got, want) {
        (Outcome::Error { code, message }, _)
            if code == "0A000"
                && case.category == Category::Correlated
                && message.starts_with("a subquery reads") =>
        {
            Verdict::Wrong("refused by rule 12, which answers it".into())
        }
        (Outcome::Error { code, .. }, _) if code == "0A000" => Verdict::Refused,
        (Outcome::Error { code: a, .. }, Outcome::Error { code: b, .. }) if a == b => {
            Verdict::SameError
        }
        (Outcome::Rows(got), Outcome::Rows(want)) => compare(case.ordered, got, want),
        (Outcome::Rows(_), Outcome::Error { .. }) => {
            Verdict::Wrong("rows where the reference fails".into())
        }
        (Outcome::Error { .. }, Outcome::Rows(_)) => {
            Verdict::Wrong("an error other than 0A000".into())
        }
        (Outcome::Error { .. }, Outcome::Error { .. }) => Verdict::Wrong("another SQLSTATE".into()),
        (Outcome::Broken(why), _) => Verdict::Wrong(format!("no answer from pgshard: {why}")),
        (_, Outcome::Broken(why)) => Verdict::Wrong(format!("no answer from the reference: {why}")),
    }
}

/// Compare in order when the statement fixes it, else as multisets.
fn compare(ordered: bool, got: &Answer, want: &Answer) -> Verdict {
    if got.columns != want.columns {
        return Verdict::Wrong(format!(
            "another RowDescription: {:?}, the reference {:?}",
            got.columns, want.columns
        ));
    }
    if got.rows.len() != want.rows.len() {
        return Verdict::Wrong(format!(
            "{} rows, the reference {}",
            got.rows.len(),
            want.rows.len()
        ));
    }
    if got.tag != want.tag {
        return Verdict::Wrong("another CommandComplete tag".into());
    }
    let Some(first) = got.rows.iter().zip(&want.rows).position(|(g, w)| g != w) else {
        return Verdict::Exact;
    };
    let sorted = |rows: &[Vec<Option<String>>]| {
        let mut rows = rows.to_vec();
        rows.sort();
        rows
    };
    match (ordered, sorted(&got.rows) == sorted(&want.rows)) {
        (false, true) => Verdict::Exact,
        (true, true) => Verdict::Wrong(format!(
            "the right rows in another order (from row {first})"
        )),
        (_, false) => Verdict::Wrong(format!("other rows (from row {first})")),
    }
}

/// Counts per category and protocol (or way of preparing), and the wrong
/// answers.
#[derive(Default)]
struct Tally {
    counts: BTreeMap<(Category, Protocol), [usize; 4]>,
    failures: Vec<String>,
    /// Statements both servers refused with the same SQLSTATE (a generator
    /// bug unless it is rare): shown once each.
    both_failed: Vec<String>,
}

impl Tally {
    fn count(&mut self, case: &Case, protocol: Protocol, verdict: &Verdict, want: &Outcome) {
        let slot = match verdict {
            Verdict::Exact => 0,
            Verdict::Refused => 1,
            Verdict::SameError => 2,
            Verdict::Wrong(_) => 3,
        };
        self.counts.entry((case.category, protocol)).or_default()[slot] += 1;
        if *verdict == Verdict::SameError && protocol == Protocol::Simple {
            self.both_failed
                .push(format!("{} -> {}", case.sql, show(want)));
        }
    }

    /// Note statement `index` as wrong if it was in any protocol, with the
    /// first wrong protocol's answers.
    fn fail(&mut self, index: usize, case: &Case, wrong: &[(Protocol, String, Outcome, Outcome)]) {
        let Some((_, why, got, want)) = wrong.first() else {
            return;
        };
        let protocols: Vec<&str> = wrong.iter().map(|(p, ..)| p.name()).collect();
        self.failures.push(format!(
            "#{index} [{}] in {} ({}): {why}\n    SQL: {}\n    pgshard:   {}\n    reference: {}",
            case.category.name(),
            protocols.join(", "),
            if case.ordered {
                "ordered"
            } else {
                "as a multiset"
            },
            match &case.setup {
                Some(setup) => format!("{setup}; {}", case.sql),
                None => case.sql.clone(),
            },
            show(got),
            show(want)
        ));
    }

    /// Print the failures shown in full and the table of counts; returns
    /// the number of statements answered wrongly.
    fn report(&self, n: usize, seed: u64) -> usize {
        let shown = std::env::var("PGSHARD_DIFF_SHOW")
            .ok()
            .and_then(|v| v.parse().ok());
        for failure in self.failures.iter().take(shown.unwrap_or(SHOWN_FAILURES)) {
            println!("[{n} shards, seed {seed}] WRONG {failure}");
        }
        for statement in self.both_failed.iter().take(5) {
            println!("[{n} shards] both servers failed: {statement}");
        }
        println!("[{n} shards, seed {seed}] runs (statements x protocols) by verdict:");
        println!(
            "[{n} shards, seed {seed}] {:<16} {:>7} {:>7} {:>8} {:>7}   exact share",
            "category", "exact", "refused", "both err", "WRONG"
        );
        let mut by_category: BTreeMap<Category, [usize; 4]> = BTreeMap::new();
        let mut by_protocol: BTreeMap<Protocol, [usize; 4]> = BTreeMap::new();
        for ((category, protocol), counts) in &self.counts {
            for (slot, count) in counts.iter().enumerate() {
                by_category.entry(*category).or_default()[slot] += count;
                by_protocol.entry(*protocol).or_default()[slot] += count;
            }
        }
        let rows = by_category.iter().map(|(c, counts)| (c.name(), counts));
        for (name, counts) in rows.chain(by_protocol.iter().map(|(p, counts)| (p.name(), counts))) {
            let total: usize = counts.iter().sum();
            println!(
                "[{n} shards, seed {seed}] {name:<16} {:>7} {:>7} {:>8} {:>7}   {:>5.1}%",
                counts[0],
                counts[1],
                counts[2],
                counts[3],
                100.0 * counts[0] as f64 / total.max(1) as f64
            );
        }
        self.failures.len()
    }
}

/// An outcome for a failure report, its rows cut short.
fn show(outcome: &Outcome) -> String {
    const ROWS: usize = 6;
    match outcome {
        Outcome::Error { code, message } => format!("ERROR {code} {message}"),
        Outcome::Broken(why) => format!("no answer: {why}"),
        Outcome::Rows(answer) => {
            let columns: Vec<String> = answer
                .columns
                .iter()
                .map(|c| format!("{}:{}", c.name, c.type_oid))
                .collect();
            let rows: Vec<String> = answer
                .rows
                .iter()
                .take(ROWS)
                .map(|row| {
                    let values: Vec<&str> =
                        row.iter().map(|v| v.as_deref().unwrap_or("NULL")).collect();
                    format!("({})", values.join(", "))
                })
                .collect();
            let more = answer.rows.len().saturating_sub(ROWS);
            let more = if more > 0 {
                format!(" +{more} more")
            } else {
                String::new()
            };
            format!(
                "{} [{}] {}{more}",
                answer.tag.as_deref().unwrap_or("-"),
                columns.join(" "),
                rows.join(" ")
            )
        }
    }
}
