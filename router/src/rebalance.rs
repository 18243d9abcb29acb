//! Rebalancing a placement group over its cluster's databases (`REBALANCE`
//! after a `[[databases]]` entry is added): the fewest logical-shard moves
//! that leave every database with `shard_count / databases` logical shards
//! or one more, grouped in rounds whose moves touch disjoint databases.
//!
//! Which databases keep the one-more share decides how many moves are
//! needed: the ones that hold the most already keep it, so the number of
//! moves is the least possible, `sum(max(0, held - floor))` less one for
//! each of the `shard_count % databases` fullest databases above the floor.
//! A move never carries a logical shard twice, and never moves one that can
//! stay. Pure: the proxy runs the moves.

use std::num::NonZeroUsize;

/// One logical shard to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub shard: usize,
    /// The database it is on.
    pub from: usize,
    /// The database it goes to.
    pub to: usize,
    /// Moves of one round run together (each database in at most one of
    /// them); a round starts when the one before it has finished.
    pub round: usize,
}

/// Why there is no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the cluster has no database")]
    NoDatabases,
    #[error(
        "logical shard {shard} is on database {database}, but the cluster has {databases} \
         (0 to {}): rebalancing only moves shards between existing databases",
        databases.saturating_sub(1)
    )]
    NoSuchDatabase {
        shard: usize,
        database: usize,
        databases: usize,
    },
}

/// The moves that balance `placement` (`placement[s]` = database of logical
/// shard `s`) over `databases` databases, at most `parallel` in a round.
pub fn plan(
    placement: &[usize],
    databases: usize,
    parallel: NonZeroUsize,
) -> Result<Vec<Move>, PlanError> {
    if databases == 0 {
        return Err(PlanError::NoDatabases);
    }
    let mut held: Vec<Vec<usize>> = vec![Vec::new(); databases];
    for (shard, &database) in placement.iter().enumerate() {
        let Some(shards) = held.get_mut(database) else {
            return Err(PlanError::NoSuchDatabase {
                shard,
                database,
                databases,
            });
        };
        shards.push(shard);
    }
    let quotas = quotas(&held, placement.len());
    // What each database gives (its highest-numbered shards) and takes.
    let mut given: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut taken: Vec<Vec<usize>> = Vec::new();
    for (database, shards) in held.iter().enumerate() {
        let quota = quotas.get(database).copied().unwrap_or_default();
        let surplus = shards.get(quota..).unwrap_or_default();
        given.push(surplus.iter().rev().map(|&s| (s, database)).collect());
        taken.push(vec![database; quota.saturating_sub(shards.len())]);
    }
    // Alternate between givers and between takers, so that consecutive
    // moves touch different databases and can share a round.
    let moves = interleave(given)
        .into_iter()
        .zip(interleave(taken))
        .map(|((shard, from), to)| Move {
            shard,
            from,
            to,
            round: 0,
        })
        .collect();
    Ok(rounds(moves, parallel.get()))
}

/// How many logical shards each database should hold: `count / n`, and one
/// more for the `count % n` databases that hold the most (the lower number
/// first among equals).
fn quotas(held: &[Vec<usize>], count: usize) -> Vec<usize> {
    let n = held.len().max(1);
    let (base, extra) = (count / n, count % n);
    let mut fullest: Vec<usize> = (0..held.len()).collect();
    fullest.sort_by_key(|&d| (std::cmp::Reverse(held.get(d).map_or(0, Vec::len)), d));
    let mut quotas = vec![base; held.len()];
    for &d in fullest.iter().take(extra) {
        if let Some(quota) = quotas.get_mut(d) {
            *quota += 1;
        }
    }
    quotas
}

/// The items of the lists taken one from each list in turn.
fn interleave<T: Copy>(lists: Vec<Vec<T>>) -> Vec<T> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| lists.iter().filter_map(move |list| list.get(i).copied()))
        .collect()
}

/// Each move in the first round that has room (fewer than `parallel`
/// moves) and uses neither of its databases.
fn rounds(mut moves: Vec<Move>, parallel: usize) -> Vec<Move> {
    let mut busy: Vec<Vec<usize>> = Vec::new();
    for m in &mut moves {
        let free = |round: &Vec<usize>| {
            round.len() < 2 * parallel && !round.contains(&m.from) && !round.contains(&m.to)
        };
        m.round = match busy.iter().position(free) {
            Some(round) => round,
            None => {
                busy.push(Vec::new());
                busy.len() - 1
            }
        };
        if let Some(round) = busy.get_mut(m.round) {
            round.extend([m.from, m.to]);
        }
    }
    moves.sort_by_key(|m| m.round);
    moves
}

#[cfg(test)]
mod tests;
