//! The operator's side of shard moves (issue 33, step 9), against real
//! Postgres 15 servers with `wal_level = logical` and a table family:
//! - a moved shard stays moved: across RELOAD, in a second pgshard that
//!   did not run the move (it polls the databases), in an instance started
//!   afterwards, and in `pgdog.toml` with `cutover_save_config`; SHOW
//!   PLACEMENT says which move put it there;
//! - CANCEL MOVE rolls a move back before its switch and is refused after;
//! - a move interrupted by a crash of pgshard (after the slot, mid copy,
//!   mid catch-up, while holding statements, after the switch; pgshard in
//!   this process stopped at once, or in its own process killed with
//!   SIGKILL) is rolled back or finished by the next instance: no row lost
//!   or doubled, a held write never run, no slot, publication or
//!   subscription left;
//! - statements that reach the shard while the cutover holds it wait and
//!   then run on the target (a Describe before any Bind too);
//! - REBALANCE after a third database is added moves 4 of 12 logical
//!   shards to it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::moves::*;
use proxy::reshard::fault::Fault;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_moved_shard_stays_moved_across_reload_restart_and_instances() {
    let servers = logical_servers(2);
    create_tables(&servers, TABLES, SHARD_COUNT, &default_placement());
    let (shard, tables) = moving_shard();
    let config = common::moves_config(&servers, "cutover_save_config = true", &family(""));
    let first = start(&config);
    let second = start(&config);
    let (admin1, admin2) = (admin(&first).await, admin(&second).await);
    let id = common::rows(&admin1, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    let status = wait_move(&admin1, &id, |s| s == "done" || s == "failed").await;
    assert_eq!(status["step"], "done", "{status:?}");
    let from = format!("move {id}");
    assert_eq!(placement(&admin1).await[shard], (1, from.clone()));
    // The second instance learns it from the databases within a poll.
    let begun = Instant::now();
    while placement(&admin2).await[shard].0 != 1 {
        assert!(
            begun.elapsed() < Duration::from_secs(10),
            "the second instance polls"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(placement(&admin2).await[shard], (1, from.clone()));
    let t = tables[0];
    let insert = format!("INSERT INTO events_p{t} (k) VALUES (-1)");
    app(&second).await.simple_query(&insert).await.unwrap();
    let b = superuser(&servers[1], 1).await;
    assert_eq!(rows_of(&b, t).await, 101);
    // cutover_save_config wrote the placement, and kept the old file.
    let (pgdog, _) = first.state().config_paths.clone().unwrap();
    let written = std::fs::read_to_string(&pgdog).unwrap();
    let mut want = default_placement();
    want[shard] = 1;
    let line = format!("placement = {want:?}");
    assert!(written.contains(&line), "{written}");
    assert_eq!(
        std::fs::read_to_string(pgdog.with_file_name("pgdog.bak.toml")).unwrap(),
        config
    );
    // RELOAD of a file without the placement keeps the shard where it is.
    first.rewrite_config(&config, &users()).unwrap();
    common::rows(&admin1, "RELOAD").await;
    assert_eq!(placement(&admin1).await[shard], (1, from.clone()));
    app(&first).await.simple_query(&insert).await.unwrap();
    assert_eq!(rows_of(&b, t).await, 102);
    // An instance started afterwards reads it before serving.
    drop((admin1, admin2));
    drop((first, second));
    let third = start(&config);
    let admin3 = admin(&third).await;
    assert_eq!(placement(&admin3).await[shard], (1, from));
    let other = (0..SHARD_COUNT).find(|&s| s != shard).unwrap();
    assert_eq!(placement(&admin3).await[other].1, "file");
    app(&third).await.simple_query(&insert).await.unwrap();
    assert_eq!(rows_of(&b, t).await, 103);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_rolls_back_before_the_switch_and_is_refused_after() {
    let servers = logical_servers(2);
    create_tables(&servers, TABLES, SHARD_COUNT, &default_placement());
    let (shard, tables) = moving_shard();
    let config = common::moves_config(&servers, "", &family(""));
    let proxy = start(&config);
    let admin = admin(&proxy).await;
    proxy.state().moves.inject(Fault::MidCatchup);
    let id = common::rows(&admin, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    wait_move(&admin, &id, |s| s == "catchup").await;
    let cancelled = common::rows(&admin, "CANCEL MOVE").await;
    assert_eq!(cancelled[0]["id"], id);
    let status = wait_move(&admin, &id, |s| s == "failed").await;
    assert!(
        status["error"].contains("cancelled by CANCEL MOVE"),
        "{status:?}"
    );
    let (a, b) = (
        superuser(&servers[0], 0).await,
        superuser(&servers[1], 1).await,
    );
    no_stream_left(&a, &b).await;
    for &t in &tables {
        assert_eq!(rows_of(&a, t).await, 100, "events_p{t} stays on database 0");
        assert_eq!(rows_of(&b, t).await, -1, "events_p{t} is not on database 1");
    }
    let err = admin
        .simple_query(&format!("CANCEL MOVE {id}"))
        .await
        .unwrap_err();
    assert!(
        err.as_db_error()
            .unwrap()
            .message()
            .contains("has ended (failed)"),
        "{err:?}"
    );
    let err = admin.simple_query("CANCEL MOVE").await.unwrap_err();
    assert_eq!(err.as_db_error().unwrap().message(), "no move is under way");
    // After its switch, a move can only finish.
    proxy.state().moves.clear_fault(Fault::MidCatchup);
    proxy.state().moves.inject(Fault::AfterSwitch);
    let id = common::rows(&admin, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    wait_move(&admin, &id, |s| s == "switched").await;
    let err = admin
        .simple_query(&format!("CANCEL MOVE {id}"))
        .await
        .unwrap_err();
    assert_eq!(common::code(&err), Some("55000"));
    assert!(
        err.as_db_error()
            .unwrap()
            .message()
            .ends_with("it can only finish"),
        "{err:?}"
    );
}

/// Stop pgshard (crash, or SIGKILL with `sigkill`) with a move parked at
/// `fault`; the next instance rolls it back (or finishes it, after the
/// switch).
async fn crash_at(fault: Fault, parked: &str, sigkill: bool) {
    let servers = logical_servers(2);
    create_tables(&servers, TABLES, SHARD_COUNT, &default_placement());
    let (shard, tables) = moving_shard();
    let config = common::moves_config(&servers, "", &family(""));
    let (first, port) = First::start(&config, fault, sigkill).await;
    let admin1 = common::connect(port, "admin", "admin-pw", "admin")
        .await
        .unwrap();
    let id = common::rows(&admin1, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    wait_parked(&admin1, &id, parked).await;
    let b = superuser(&servers[1], 1).await;
    if fault == Fault::MidCopy {
        half_copied(&b, &tables).await;
    }
    let client = common::connect(port, "app", "app-pw", "prod")
        .await
        .unwrap();
    // While holding, a write to the shard waits when pgshard dies (and is
    // never run); at the other points, writes acknowledged before the
    // crash.
    let (held, written) = if fault == Fault::WhileHolding {
        let sql = format!("INSERT INTO events_p{} (k) VALUES (-3)", tables[0]);
        (Some(held_write(client, sql).await), 100)
    } else {
        for &t in &tables {
            let sql = format!("INSERT INTO events_p{t} (k) VALUES (-1), (-2)");
            client.simple_query(&sql).await.unwrap();
        }
        (None, 102)
    };
    drop(admin1);
    first.stop();
    if let Some(held) = held {
        never_answered(held).await;
    }
    let next = start(&config);
    if fault == Fault::WhileHolding {
        fenced_says_send_again(&next, tables[0]).await;
    }
    next.state().moves.set_lease(Duration::from_millis(300));
    let admin2 = admin(&next).await;
    let switched = fault == Fault::AfterSwitch;
    let status = wait_move(&admin2, &id, |s| s == "done" || s == "failed").await;
    let taken = next.state().moves.list();
    assert!(
        taken.iter().any(|m| m.id == id && m.taken_over),
        "{taken:?}"
    );
    let a = superuser(&servers[0], 0).await;
    no_stream_left(&a, &b).await;
    let (home, away) = if switched { (&b, &a) } else { (&a, &b) };
    if switched {
        assert_eq!(status["step"], "done", "{status:?}");
    } else {
        assert_eq!(status["step"], "failed", "{status:?}");
        assert!(status["error"].contains("interrupted"), "{status:?}");
    }
    for &t in &tables {
        assert_eq!(
            rows_of(home, t).await,
            written,
            "events_p{t}: every row, once"
        );
        assert_eq!(rows_of(away, t).await, -1, "events_p{t} is on one database");
        let distinct = count(home, &format!("SELECT count(DISTINCT id) FROM events_p{t}")).await;
        assert_eq!(distinct, written);
    }
    let moved = count(
        &a,
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'pgshard_moved'",
    )
    .await;
    assert_eq!(moved, 0);
    let owner = if switched { 1 } else { 0 };
    assert_eq!(placement(&admin2).await[shard].0, owner);
    // Routed where the rows are.
    let t = tables[0];
    let sql = format!("SELECT count(*) FROM events_p{t}");
    let through: i64 = app(&next).await.query_one(&sql, &[]).await.unwrap().get(0);
    assert_eq!(through, written);
}

/// Fenced, its owner gone, the move not taken over yet (the 30-second
/// lease): a statement on the family table routed to the source gets
/// 55P03 "send it again" from the table's stub there, not 42P01; an
/// UPDATE that matches no row too (nothing is read or written).
async fn fenced_says_send_again(next: &integration::TestProxy, t: i64) {
    let client = app(next).await;
    let statements = [
        format!("SELECT count(*) FROM events_p{t}"),
        format!("INSERT INTO events_p{t} (k) VALUES (-4)"),
        format!("UPDATE events_p{t} SET k = 0 WHERE id = -1"),
    ];
    for sql in &statements {
        let err = client.simple_query(sql).await.unwrap_err();
        assert_eq!(common::code(&err), Some("55P03"), "{sql}: {err:?}");
        let message = err.as_db_error().unwrap().message().to_owned();
        assert!(message.contains("send the statement again"), "{message}");
    }
    let err = client.query_one(&statements[0], &[]).await.unwrap_err();
    assert_eq!(common::code(&err), Some("55P03"), "{err:?}");
}

/// The copy stopped after the shard's first table (by name): that one is
/// whole on the target, the others made there but empty.
async fn half_copied(b: &tokio_postgres::Client, tables: &[i64]) {
    assert!(
        tables.len() >= 2,
        "the shard has several tables: {tables:?}"
    );
    let mut names: Vec<String> = tables.iter().map(|t| format!("events_p{t}")).collect();
    names.sort();
    for (n, name) in names.iter().enumerate() {
        let rows = count(b, &format!("SELECT count(*) FROM {name}")).await;
        assert_eq!(rows, if n == 0 { 100 } else { 0 }, "{name} on the target");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_slot_rolls_the_move_back() {
    crash_at(Fault::AfterSlot, "slot", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_mid_copy_rolls_the_move_back() {
    crash_at(Fault::MidCopy, "copy", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_mid_catch_up_rolls_the_move_back() {
    crash_at(Fault::MidCatchup, "catchup", false).await;
}

/// While the cutover holds the shard (its family tables moved aside on
/// the source, the switch not committed), a statement on one of its
/// tables waits, whatever its first message: a simple query, and a
/// Parse/Describe no Bind precedes (a driver preparing it: the consumer
/// of the messaging workload met 42P01 here when Describe skipped the
/// hold). Both then run on the target.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn statements_held_by_the_cutover_run_on_the_target_after_it() {
    let servers = logical_servers(2);
    create_tables(&servers, TABLES, SHARD_COUNT, &default_placement());
    let (shard, tables) = moving_shard();
    let config = common::moves_config(&servers, "", &family(""));
    let proxy = start(&config);
    proxy.state().moves.inject(Fault::WhileHolding);
    let admin = admin(&proxy).await;
    let id = common::rows(&admin, &format!("MOVE SHARD {shard} TO 1")).await[0]["id"].clone();
    wait_parked(&admin, &id, "fenced").await;
    let sql = format!("SELECT count(*) FROM events_p{}", tables[0]);
    let (prepared, simple) = (app(&proxy).await, app(&proxy).await);
    let statement = sql.clone();
    let prepared = tokio::spawn(async move {
        let statement = prepared.prepare(&statement).await?;
        let row = prepared.query_one(&statement, &[]).await?;
        Ok::<i64, tokio_postgres::Error>(row.get(0))
    });
    let simple = tokio::spawn(async move { simple.simple_query(&sql).await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!prepared.is_finished(), "the Describe waits for the hold");
    assert!(!simple.is_finished(), "the query waits for the hold");
    proxy.state().moves.clear_fault(Fault::WhileHolding);
    assert_eq!(prepared.await.unwrap().unwrap(), 100);
    simple.await.unwrap().unwrap();
    let status = wait_move(&admin, &id, |s| s == "done" || s == "failed").await;
    assert_eq!(status["step"], "done", "{status:?}");
    assert_eq!(placement(&admin).await[shard].0, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_while_holding_rolls_the_move_back() {
    crash_at(Fault::WhileHolding, "fenced", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crash_after_the_switch_finishes_the_move() {
    crash_at(Fault::AfterSwitch, "switched", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_after_the_slot_rolls_the_move_back() {
    crash_at(Fault::AfterSlot, "slot", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_mid_copy_rolls_the_move_back() {
    crash_at(Fault::MidCopy, "copy", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_mid_catch_up_rolls_the_move_back() {
    crash_at(Fault::MidCatchup, "catchup", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_while_holding_rolls_the_move_back() {
    crash_at(Fault::WhileHolding, "fenced", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_after_the_switch_finishes_the_move() {
    crash_at(Fault::AfterSwitch, "switched", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rebalance_moves_four_of_twelve_shards_to_a_new_database() {
    const COUNT: usize = 12;
    let servers = logical_servers(3);
    let two: Vec<usize> = (0..COUNT).map(|s| s % 2).collect();
    create_tables(&servers[..2], 24, COUNT, &two);
    let explicit =
        family(&format!("placement = {two:?}\n")).replace("shard_count = 8", "shard_count = 12");
    let before = common::moves_config(&servers[..2], "", &explicit);
    let proxy = start(&before);
    let admin = admin(&proxy).await;
    assert!(
        common::rows(&admin, "REBALANCE").await.is_empty(),
        "balanced already"
    );
    let after = common::moves_config(&servers, "", &explicit);
    proxy.rewrite_config(&after, &users()).unwrap();
    common::rows(&admin, "RELOAD").await;
    // Every move goes to database 2: one after the other, PARALLEL or not
    // (rebalance_parallel.rs runs moves together).
    let planned = common::rows(&admin, "REBALANCE prod PARALLEL 2").await;
    assert_eq!(planned.len(), 4, "{planned:?}");
    assert!(planned.iter().all(|m| m["target"] == "2"), "{planned:?}");
    assert_eq!(planned[3]["round"], "3", "{planned:?}");
    assert!(
        planned[3]["note"].contains("shares database 2"),
        "{planned:?}"
    );
    for m in &planned {
        let status = wait_move(&admin, &m["id"], |s| s == "done" || s == "failed").await;
        assert_eq!(status["step"], "done", "{status:?}");
    }
    let placed = placement(&admin).await;
    for database in 0..3 {
        let held = placed.iter().filter(|(d, _)| *d == database).count();
        assert_eq!(held, 4, "database {database}: {placed:?}");
    }
    let c = superuser(&servers[2], 2).await;
    for t in (0..24).filter(|&t| placed[shard_of(t, COUNT)].0 == 2) {
        assert_eq!(rows_of(&c, t).await, 100, "events_p{t} on database 2");
    }
    assert!(common::rows(&admin, "REBALANCE").await.is_empty());
}
