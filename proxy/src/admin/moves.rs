//! The admin commands of shard moves: `MOVE SHARD <s> TO <n> [IN <db>]
//! [OF <table>]` and `REBALANCE [<db>] [PARALLEL <n>]` (checked at once,
//! run by the mover: `reshard`), `CANCEL MOVE [<id>]`, `SHOW MOVES`, and
//! `SHOW PLACEMENT` (each logical shard's database, and whether the config
//! file or a move put it there).

use std::num::NonZeroUsize;

use bytes::BytesMut;

use super::Rows;
use crate::errors::ClientError;
use crate::protocol::sqlstate;
use crate::reshard::plan::{MoveError, Request};
use crate::state::State;

const USAGE: &str = "MOVE SHARD <logical shard> TO <database number> [IN <database>] [OF <table>]";

/// `MOVE SHARD ...` (`rest` is what follows `SHARD`): the move's id.
pub fn move_shard(state: &State, rest: &str, out: &mut BytesMut) -> Result<(), ClientError> {
    let request = parse(rest)
        .ok_or_else(|| ClientError::new(sqlstate::SYNTAX_ERROR, format!("usage: {USAGE}")))?;
    let id = state
        .moves
        .submit(&state.config(), &request)
        .map_err(refusal)?;
    let mut rows = Rows::new(out, &["id"]);
    rows.row(&[id]);
    rows.done("MOVE");
    Ok(())
}

/// The request in `<s> TO <n> [IN <db>] [OF <table>]`.
fn parse(rest: &str) -> Option<Request<'_>> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (shard, to, target, options) = match words.as_slice() {
        [shard, to, target, options @ ..] => (shard, to, target, options),
        _ => return None,
    };
    if !to.eq_ignore_ascii_case("TO") {
        return None;
    }
    let mut request = Request {
        cluster: None,
        of: None,
        shard: shard.parse().ok()?,
        target: target.parse().ok()?,
    };
    for pair in options.chunks(2) {
        match pair {
            [word, name] if word.eq_ignore_ascii_case("IN") && request.cluster.is_none() => {
                request.cluster = Some(name.trim_matches('"'))
            }
            [word, name] if word.eq_ignore_ascii_case("OF") && request.of.is_none() => {
                request.of = Some(name.trim_matches('"'))
            }
            _ => return None,
        }
    }
    Some(request)
}

fn refusal(error: MoveError) -> ClientError {
    let code = match &error {
        MoveError::UnknownCluster(_) => sqlstate::INVALID_CATALOG_NAME,
        e if e.unsupported() => sqlstate::FEATURE_NOT_SUPPORTED,
        MoveError::NoShard { .. } | MoveError::NoDatabase { .. } => {
            sqlstate::INVALID_PARAMETER_VALUE
        }
        _ => sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
    };
    ClientError::new(code, error.to_string())
}

/// `CANCEL MOVE [<id>]`: the move stops and rolls back (refused once it
/// has switched); the id.
pub fn cancel(state: &State, rest: &str, out: &mut BytesMut) -> Result<(), ClientError> {
    let id = match rest.trim() {
        "" => None,
        id => Some(id.trim_matches('"')),
    };
    let id = state.moves.cancel(id).map_err(refusal)?;
    let mut rows = Rows::new(out, &["id"]);
    rows.row(&[id]);
    rows.done("CANCEL");
    Ok(())
}

/// `REBALANCE [<db>] [PARALLEL <n>]` (`what` is the word after
/// REBALANCE): the moves queued, one row each.
pub fn rebalance(
    state: &State,
    what: &str,
    rest: &str,
    out: &mut BytesMut,
) -> Result<(), ClientError> {
    let usage = || {
        ClientError::new(
            sqlstate::SYNTAX_ERROR,
            "usage: REBALANCE [<database>] [PARALLEL <n>]",
        )
    };
    let mut words: Vec<&str> = std::iter::once(what)
        .chain(rest.split_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let mut parallel = NonZeroUsize::MIN;
    if let [.., word, n] = words.as_slice() {
        if word.eq_ignore_ascii_case("PARALLEL") {
            parallel = n.parse().map_err(|_| usage())?;
            words.truncate(words.len() - 2);
        }
    }
    let cluster = match words.as_slice() {
        [] => None,
        [name] => Some(name.trim_matches('"')),
        _ => return Err(usage()),
    };
    let config = state.config();
    let job = crate::reshard::rebalance::plan(&config, cluster, parallel).map_err(refusal)?;
    let notes = crate::reshard::rebalance::notes(&job, parallel);
    let planned: Vec<_> = job
        .iter()
        .enumerate()
        .flat_map(|(round, plans)| plans.iter().map(move |p| (round, p.clone())))
        .zip(notes)
        .collect();
    if !job.is_empty() {
        state.moves.queue(job).map_err(refusal)?;
    }
    let columns = ["id", "group", "shard", "source", "target", "round", "note"];
    let mut rows = Rows::new(out, &columns);
    for ((round, plan), note) in planned {
        tracing::info!(
            id = plan.id,
            round,
            "REBALANCE: logical shard {} of group {} from database {} to {}{}",
            plan.shard,
            plan.group,
            plan.source,
            plan.target,
            if note.is_empty() {
                String::new()
            } else {
                format!(" ({note})")
            }
        );
        rows.row(&[
            plan.id,
            plan.group.to_string(),
            plan.shard.to_string(),
            plan.source.to_string(),
            plan.target.to_string(),
            round.to_string(),
            note,
        ]);
    }
    rows.done("REBALANCE");
    Ok(())
}

/// `SHOW PLACEMENT`: per sharded database and placement group, each
/// logical shard's database, and what put it there (`file`, or the move).
pub fn show_placement(state: &State, out: &mut BytesMut) {
    let config = state.config();
    let overlay = state.clusters.overlay();
    let mut rows = Rows::new(out, &["database", "group", "shard", "placed_on", "from"]);
    let mut clusters: Vec<_> = config.clusters.iter().collect();
    clusters.sort_by(|a, b| a.0.cmp(b.0));
    for (name, cluster) in clusters {
        for group in cluster.sharding.groups() {
            let known = overlay.get(name, group.id);
            for (shard, database) in group.placement.iter().enumerate() {
                let placed = known.and_then(|k| k.get(shard)).and_then(Option::as_ref);
                let from = match placed {
                    Some(p) if p.database == *database => p
                        .by_move()
                        .map_or("file".to_owned(), |id| format!("move {id}")),
                    _ => "file".to_owned(),
                };
                rows.row(&[
                    name.clone(),
                    group.id.to_string(),
                    shard.to_string(),
                    database.to_string(),
                    from,
                ]);
            }
        }
    }
    rows.done("SHOW");
}

/// `SHOW MOVES`: every move of this process.
pub fn show_moves(state: &State, out: &mut BytesMut) {
    let mut rows = Rows::new(
        out,
        &[
            "id",
            "database",
            "group",
            "shard",
            "source",
            "target",
            "step",
            "rows_copied",
            "lag_bytes",
            "elapsed_ms",
            "max_wait_ms",
            "error",
            "waiting_for",
        ],
    );
    for m in state.moves.list() {
        let elapsed = m.finished.unwrap_or_else(std::time::Instant::now) - m.started;
        rows.row(&[
            m.id,
            m.cluster,
            m.group,
            m.shard.to_string(),
            m.source.to_string(),
            m.target.to_string(),
            m.phase.to_string(),
            m.rows_copied.to_string(),
            m.lag_bytes.map(|b| b.to_string()).unwrap_or_default(),
            elapsed.as_millis().to_string(),
            m.max_wait
                .map(|w| w.as_millis().to_string())
                .unwrap_or_default(),
            m.error.unwrap_or_default(),
            m.waiting_for.join(", "),
        ]);
    }
    rows.done("SHOW");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        type Parsed<'a> = Option<(usize, usize, Option<&'a str>, Option<&'a str>)>;
        let cases: &[(&str, Parsed)] = &[
            ("3 TO 1", Some((3, 1, None, None))),
            ("3 to 1 IN prod", Some((3, 1, Some("prod"), None))),
            (
                "3 TO 1 OF events_p7 IN \"prod\"",
                Some((3, 1, Some("prod"), Some("events_p7"))),
            ),
            ("3 1", None),
            ("x TO 1", None),
            ("3 TO 1 IN", None),
            ("3 TO 1 IN a IN b", None),
        ];
        for (rest, want) in cases {
            let got = parse(rest).map(|r| (r.shard, r.target, r.cluster, r.of));
            assert_eq!(got, *want, "{rest}");
        }
    }
}
