//! The end-of-run checks, made through the endpoint under test once every
//! task has returned. Pub/sub: each (group, partition) read its partition
//! gapless and in order up to the counter tip, and the log table holds
//! exactly offsets `0..tip`. Queue: per partition, archived + still queued
//! = inserted, and no message is in both.

use std::collections::HashMap;

use anyhow::{Context, Result};
use serde::Serialize;
use tokio_postgres::Client;

use super::options::Options;
use super::schema::{archive_table, jobs_table, log_table, CONSUMERS, COUNTERS};
use super::stats::TaskOutcome;

/// Most problems listed in a report.
const KEPT_PROBLEMS: usize = 20;

/// What a check found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Check {
    pub passed: bool,
    /// What was checked, in a few words.
    pub checked: String,
    /// Everything wrong (the first [`KEPT_PROBLEMS`]), and how many in all.
    pub problems: Vec<String>,
    pub problem_count: u64,
}

impl Check {
    fn problem(&mut self, what: String) {
        self.problem_count += 1;
        if self.problems.len() < KEPT_PROBLEMS {
            self.problems.push(what);
        }
    }

    fn from_outcomes(checked: String, outcomes: &[TaskOutcome]) -> Check {
        let mut check = Check {
            checked,
            ..Check::default()
        };
        for outcome in outcomes {
            check.problem_count += outcome.violation_count;
            for violation in &outcome.violations {
                if check.problems.len() < KEPT_PROBLEMS {
                    check.problems.push(violation.clone());
                }
            }
            if let Some(failure) = &outcome.failure {
                check.problem(failure.clone());
            }
        }
        check
    }

    fn finish(mut self) -> Check {
        self.passed = self.problem_count == 0;
        self
    }
}

/// One row's bigint columns.
async fn numbers(
    client: &Client,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<i64>> {
    let row = client
        .query_one(sql, params)
        .await
        .with_context(|| format!("check: {sql}"))?;
    (0..row.len())
        .map(|i| row.try_get(i).map_err(anyhow::Error::from))
        .collect()
}

/// The pub/sub checks; `committed` is what writers saw committed per partition.
pub async fn pubsub(
    client: &Client,
    options: &Options,
    outcomes: &[TaskOutcome],
    committed: &[u64],
) -> Result<Check> {
    let checked = format!(
        "{} partitions x {} groups: every reader gapless and in order up to the counter tip; \
         each log holds exactly offsets 0..tip",
        options.partitions, options.groups
    );
    let mut check = Check::from_outcomes(checked, outcomes);
    let positions: HashMap<(i32, i64), i64> = outcomes
        .iter()
        .filter_map(|o| o.position)
        .map(|(g, p, next)| ((g, p), next))
        .collect();
    let tip_sql = format!("SELECT next FROM {COUNTERS} WHERE partition_id = $1");
    let consumer_sql =
        format!("SELECT off FROM {CONSUMERS} WHERE group_id = $1 AND partition_id = $2");
    for p in options.partition_ids() {
        let tip = numbers(client, &tip_sql, &[&p]).await?[0];
        let written = usize::try_from(p)
            .ok()
            .and_then(|i| committed.get(i))
            .copied();
        if written.and_then(|w| i64::try_from(w).ok()) != Some(tip) {
            check.problem(format!(
                "p{p}: counter tip {tip}, writers committed {written:?}"
            ));
        }
        let log = numbers(
            client,
            &format!(
                "SELECT count(*), coalesce(min(off), 0), coalesce(max(off), -1) FROM {}",
                log_table(p)
            ),
            &[],
        )
        .await?;
        if log != [tip, 0, tip - 1] && !(tip == 0 && log[0] == 0) {
            check.problem(format!(
                "p{p}: log holds (count, min, max) {log:?}, tip {tip}"
            ));
        }
        for g in 0..i32::try_from(options.groups)? {
            let consumer = numbers(client, &consumer_sql, &[&g, &p]).await?[0];
            let read = positions.get(&(g, p)).copied();
            if consumer != tip || read != Some(tip) {
                check.problem(format!(
                    "g{g}/p{p}: tip {tip}, consumer row at {consumer}, reader read up to {read:?}"
                ));
            }
        }
    }
    Ok(check.finish())
}

/// The queue checks; `inserted` is what writers inserted per partition.
pub async fn queue(
    client: &Client,
    options: &Options,
    outcomes: &[TaskOutcome],
    inserted: &[u64],
) -> Result<Check> {
    let checked = format!(
        "{} partitions: archived + queued = inserted, no message both archived and queued",
        options.partitions
    );
    let mut check = Check::from_outcomes(checked, outcomes);
    for p in options.partition_ids() {
        let (jobs, archive) = (jobs_table(p), archive_table(p));
        let counts = numbers(
            client,
            &format!(
                "SELECT (SELECT count(*) FROM {archive}), (SELECT count(*) FROM {jobs}), \
                 (SELECT count(*) FROM {jobs} JOIN {archive} USING (id))"
            ),
            &[],
        )
        .await?;
        let (archived, queued, both) = (counts[0], counts[1], counts[2]);
        let written = usize::try_from(p)
            .ok()
            .and_then(|i| inserted.get(i))
            .copied();
        if written.and_then(|w| i64::try_from(w).ok()) != Some(archived + queued) {
            check.problem(format!(
                "p{p}: {archived} archived + {queued} queued, writers inserted {written:?}"
            ));
        }
        if both != 0 {
            check.problem(format!(
                "p{p}: {both} messages both archived and still queued"
            ));
        }
    }
    Ok(check.finish())
}
