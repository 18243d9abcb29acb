//! `REBALANCE [<database>] [PARALLEL <n>]`: the moves that even out each
//! placement group of a cluster over its databases (after a
//! `[[databases]]` entry was added and RELOAD), as
//! `router::rebalance::plan` chooses them (the fewest), checked one by one
//! as `MOVE SHARD` checks a move, in rounds (a group's rounds after the
//! group before it). The supervisor runs a round's moves together and
//! stops the job at the first move that fails.

use std::num::NonZeroUsize;

use router::config::Config;

use super::moves::{new_id, Job};
use super::plan::{self, MoveError, Request};

/// The moves that balance `cluster` (the only sharded one when `None`).
pub fn plan(
    config: &Config,
    cluster: Option<&str>,
    parallel: NonZeroUsize,
) -> Result<Job, MoveError> {
    if parallel.get() > 1 {
        return Err(MoveError::Parallel(parallel.get()));
    }
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
        let parallel = NonZeroUsize::new(2).unwrap_or(one);
        assert_eq!(
            plan(&two_to_three, None, parallel).err(),
            Some(MoveError::Parallel(2))
        );
    }
}
