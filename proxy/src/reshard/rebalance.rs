//! `REBALANCE [<database>] [PARALLEL <n>]`: the moves that even out each
//! placement group of a cluster over its databases (after a
//! `[[databases]]` entry was added and RELOAD), as
//! `router::rebalance::plan` chooses them (the fewest), checked one by one
//! as `MOVE SHARD` checks a move, in rounds (a group's rounds after the
//! group before it). The supervisor runs a round's moves together and
//! stops the job at the first move that fails.
//!
//! A round's moves touch disjoint databases (`PARALLEL n`: at most `n` of
//! them), so two moves never copy from or into one database at once, and
//! plain tables' replica identity, fences and cleanup stay one move's per
//! source table at a time. Moves that share a database run one after the
//! other (2 to 3 databases: every move goes to the new one), and
//! [`notes`] says so. Moves running together still cut over one at a time
//! (`Moves::cutover_turn`): the hold is the cluster's.

use std::num::NonZeroUsize;

use router::config::Config;

use super::moves::{new_id, Job};
use super::plan::{self, MoveError, Plan, Request};

/// The moves that balance `cluster` (the only sharded one when `None`).
pub fn plan(
    config: &Config,
    cluster: Option<&str>,
    parallel: NonZeroUsize,
) -> Result<Job, MoveError> {
    let request = Request {
        cluster,
        of: None,
        shard: 0,
        target: 0,
    };
    let name = plan::cluster_name(config, &request)?;
    let running = config
        .clusters
        .get(&name)
        .ok_or_else(|| MoveError::UnknownCluster(name.clone()))?;
    let sharding = &running.sharding;
    let mut job: Job = Vec::new();
    for group in sharding.groups() {
        let member = group
            .families
            .iter()
            .filter_map(|&i| sharding.families.get(i))
            .map(|f| f.prefix.clone())
            .chain(
                group
                    .tables
                    .iter()
                    .filter_map(|&i| sharding.tables.get(i))
                    .filter_map(|t| t.name.clone()),
            )
            .next();
        let moves = router::rebalance::plan(group.placement, sharding.databases, parallel)
            .map_err(|e| MoveError::Rebalance(format!("group {}: {e}", group.id)))?;
        let first = job.len();
        for m in moves {
            let request = Request {
                cluster: Some(&name),
                of: member.as_deref(),
                shard: m.shard,
                target: m.to,
            };
            let plan = plan::plan(config, &request, new_id())?;
            let round = first + m.round;
            while job.len() <= round {
                job.push(Vec::new());
            }
            if let Some(round) = job.get_mut(round) {
                round.push(plan);
            }
        }
    }
    Ok(job)
}

/// Why each move of `job` (in order) waits for the round before it:
/// empty for the first round; else the database it shares with a move of
/// that round, or the `PARALLEL` limit.
pub fn notes(job: &Job, parallel: NonZeroUsize) -> Vec<String> {
    let mut notes = Vec::new();
    let mut before: Option<&Vec<Plan>> = None;
    for (round, plans) in job.iter().enumerate() {
        for plan in plans {
            let shared = before.and_then(|earlier| {
                earlier.iter().find_map(|p| {
                    [p.source, p.target]
                        .into_iter()
                        .find(|d| *d == plan.source || *d == plan.target)
                })
            });
            notes.push(match (before, shared) {
                (None, _) => String::new(),
                (Some(_), Some(database)) => format!(
                    "after round {}: shares database {database} with a move of it",
                    round - 1
                ),
                (Some(_), None) => format!(
                    "after round {}: PARALLEL {parallel} moves at a time",
                    round - 1
                ),
            });
        }
        before = Some(plans);
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(databases: usize, placement: &str) -> Config {
        let dbs: String = (0..databases)
            .map(|i| {
                format!(
                    "[[databases]]\nname = \"prod\"\nhost = \"h\"\ndatabase_name = \"d{i}\"\nshard = {i}\n"
                )
            })
            .collect();
        let family = format!(
            "[[sharded_tables]]\ndatabase = \"prod\"\nname_prefix = \"events_p\"\n\
             data_type = \"bigint\"\nshard_count = 12\nplacement = {placement}\n"
        );
        let users = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"p\"\n";
        Config::from_toml(&format!("{dbs}{family}"), users).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn plans_a_rebalance() {
        let one = NonZeroUsize::MIN;
        let two_to_three = config(3, "[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]");
        let job = plan(&two_to_three, None, one).unwrap_or_else(|e| panic!("{e}"));
        let moves: Vec<(usize, usize, usize)> = job
            .iter()
            .flatten()
            .map(|p| (p.shard, p.source, p.target))
            .collect();
        assert_eq!(moves.len(), 4, "{moves:?}");
        assert!(moves.iter().all(|&(_, _, to)| to == 2), "{moves:?}");
        assert!(job.iter().all(|round| round.len() == 1));
        let balanced = config(2, "[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]");
        assert!(plan(&balanced, None, one).unwrap_or_default().is_empty());
        // Every move goes to database 2: one after the other, whatever
        // PARALLEL says.
        let two = NonZeroUsize::new(2).unwrap_or(one);
        let serial = plan(&two_to_three, None, two).unwrap_or_else(|e| panic!("{e}"));
        assert!(serial.iter().all(|round| round.len() == 1), "{serial:?}");
        let said = notes(&serial, two);
        assert_eq!(said[0], "");
        assert_eq!(
            said[1],
            "after round 0: shares database 2 with a move of it"
        );
        // 2 to 4 databases: two moves at a time, on disjoint databases.
        let two_to_four = config(4, "[0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]");
        let job = plan(&two_to_four, None, two).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(job.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 2]);
        for round in &job {
            let [x, y] = round.as_slice() else {
                panic!("{round:?}")
            };
            assert!(![x.source, x.target].contains(&y.source));
            assert!(![x.source, x.target].contains(&y.target));
        }
        let one_at_a_time = plan(&two_to_four, None, one).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(one_at_a_time.len(), 6);
        assert_eq!(
            notes(&one_at_a_time, one)[1],
            "after round 0: PARALLEL 1 moves at a time"
        );
    }
}
