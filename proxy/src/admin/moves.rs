//! The admin commands of shard moves: `MOVE SHARD <s> TO <n> [IN <db>]
//! [OF <table>]` (checked at once, run by the mover: `reshard`), `SHOW
//! MOVES`, and `CANCEL MOVE` (refused: it comes in a later step).

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

/// `CANCEL MOVE`: not built yet.
pub fn cancel() -> ClientError {
    ClientError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        "CANCEL MOVE is not built yet (issue 33, step 9): a move before its switch is rolled back \
         when it fails; SHOW MOVES shows where each is",
    )
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
