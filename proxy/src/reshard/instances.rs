//! Every live pgshard instance marks a move before any row of a plain
//! table is copied (the `marking` step). Until an instance marks a move,
//! a keyless statement through it goes to every database, and would count
//! the copied rows twice. The exchange, on `pgshard.instances`:
//! - each instance, reading a pinned cluster (`overlay.rs`, every poll),
//!   first writes on every database `begun = now()` and the bound
//!   `fresh_ms` it will serve keyless statements for on this read (its
//!   `resharding_freshness_timeout`), then
//!   reads `pgshard.moves`, marks what is unfinished, and writes the moves
//!   it marked (`marked`). It refuses keyless statements on plain tables
//!   once its last complete read began more than `fresh_ms` ago
//!   (`pool::clusters::freshness`);
//! - the mover, on the source, waits until every other instance whose
//!   `begun` is within its `fresh_ms` (and [`SLACK`]) lists the move.
//!
//! Why that is exact: an instance serving a keyless statement unmarked
//! after the mover's last look at time `d` must hold a read begun after
//! `d - fresh_ms` whose look at `pgshard.moves` came before the move was
//! recorded (else it would have marked it). That read wrote `begun` on the
//! source before its look, so before `d`: the mover saw it fresh and not
//! listing the move, and waited. A read that writes `begun` after `d`
//! looks at `pgshard.moves` later still and marks the move.
//! An instance whose `begun` is older is gone or stalled, and refuses
//! keyless statements until its next read, which sees the move.
//!
//! Statements routed before the mark: an instance lists a move (and the
//! mover's own process, which the mover does not wait for, goes past its
//! mark: [`wait_marked`]) only once every session of the cluster counted
//! before the move's marker was installed has given its count back
//! (`pool::clusters::keyless`: [`Acks`] on a reader, the boundary in
//! [`wait_marked`]). A session is counted at the routing generation before
//! it looks at the installed sharding model (`Session::follow_config`,
//! which runs before every routing that does not happen while a count is
//! held), and keeps the count until its statements end (no reply or Sync
//! awaited from a server, no batch or COPY under way); once it routed a
//! statement to every database (a keyless one), until it is idle besides:
//! no transaction either. Whoever installs a
//! marker advances the generation after installing it; a session counted
//! after that loads a model with the marker, so its keyless statements on
//! the group are refused; one counted before is waited for. So when the
//! acknowledgement is written, every statement routed unmarked has ended
//! on every server it went to:
//! - a keyless statement inside a block, a portal read in parts, a cursor
//!   (`DECLARE`): all live in a transaction, which the count outlasts (an
//!   unnamed portal's implicit one lasts until its Sync); a cursor `WITH
//!   HOLD` outlives it, but Postgres computes its rows at the commit;
//! - a statement over several shards (`COPY TO` among them) and a gathered
//!   one the coordinator finishes: the session waits for every server's
//!   end before it replies, or cancels them and closes their connections
//!   when the client leaves;
//! - errors, cancels and a client that leaves: the count is the session's
//!   guard, given back when it is idle or dropped with it.
//!
//! The count is taken before any routing, keyed or not (so no statement
//! is routed twice), and a session whose statements were all keyed gives
//! it back between them: a transaction left open holds a mark back only
//! once it ran a keyless statement. A reader waits a poll interval for it
//! and acknowledges the move at a later read; the mover waits its mark
//! timeout and then fails, naming the instance (this one as
//! [`ROUTED_BEFORE`] says).
//!
//! Clusters no move has pinned yet have no `pgshard.instances`: their
//! readers look every second and serve keyless statements for the bound
//! (`resharding_freshness_timeout`) after a look began. The move that pins
//! a cluster first waits its own bound (and [`SLACK`]) after pinning
//! before it waits for marks: an instance's look that found the cluster
//! unpinned began before the pin, so by then every instance with the
//! same bound has looked again (found the cluster pinned, announced its
//! reads, and is waited for) or refuses keyless statements. That needs
//! every instance in front of the cluster to have a bound no larger than
//! the first mover's (the same config): one with a larger bound, stalled
//! through the wait, could serve keyless statements unmarked after rows
//! are copied. Nothing before the pin can tell the mover other
//! instances' bounds (the readers write nothing on an unpinned cluster).
//! A read counts from when it began, not when it ended, for the same
//! reason: a read that began in time but ended late may have looked at
//! the databases before the pin, and renews nothing past its start plus
//! the bound. An instance that has never read a
//! cluster (its databases did not answer it since start-up) refuses them
//! too, once its first statements waited `connect_timeout` for a read
//! (`pool::clusters::freshness`).
//!
//! Left open: `pgshard.instances` is written by every instance's reader
//! login (any login of the cluster), so a direct client with such rights
//! can fake a mark.

use std::time::{Duration, Instant};

use super::db::Db;
use super::plan::{MoveError, Plan};
use super::sql::literal;
use super::Moves;
use crate::pool::clusters::keyless::KeylessFlights;
use crate::session::Shared;

/// What the mover adds to an instance's bound: the read's own time, and
/// clocks that run at slightly different rates.
const SLACK: Duration = Duration::from_millis(500);

/// An instance's read begins: `begun` and its bound, on one database.
pub fn begin_read(instance: &str, cluster: &str, fresh: Duration) -> String {
    format!(
        "INSERT INTO pgshard.instances (instance, cluster, begun, fresh_ms) \
         VALUES ({}, {}, now(), {}) ON CONFLICT (instance, cluster) DO UPDATE \
         SET begun = EXCLUDED.begun, fresh_ms = EXCLUDED.fresh_ms",
        literal(instance),
        literal(cluster),
        fresh.as_millis()
    )
}

/// An instance's read ended: the moves it marks.
pub fn acknowledge(instance: &str, cluster: &str, marked: &[String]) -> String {
    let marked: Vec<String> = marked.iter().map(|id| literal(id.as_str())).collect();
    format!(
        "UPDATE pgshard.instances SET seen = now(), marked = ARRAY[{}]::text[] \
         WHERE instance = {} AND cluster = {}",
        marked.join(", "),
        literal(instance),
        literal(cluster)
    )
}

/// What a reader of one cluster acknowledged last, and the routing
/// generation that moves it marked since wait for.
#[derive(Debug, Default)]
pub struct Acks {
    acked: Vec<String>,
    /// The moves marked when the generation was advanced, and the boundary.
    waiting: Option<(Vec<String>, u64)>,
}

impl Acks {
    /// The moves of `marked` (their markers installed) this read
    /// acknowledges: those acknowledged before, and the others once every
    /// session of `cluster` counted before their markers were installed
    /// has given its count back (waited for at most `wait`; else at a
    /// later read).
    pub async fn acknowledgeable(
        &mut self,
        flights: &KeylessFlights,
        cluster: &str,
        marked: Vec<String>,
        wait: Duration,
    ) -> Vec<String> {
        let new: Vec<&String> = marked
            .iter()
            .filter(|id| !self.acked.contains(*id))
            .collect();
        if !new.is_empty() {
            let covered = self
                .waiting
                .as_ref()
                .is_some_and(|(ids, _)| new.iter().all(|id| ids.contains(*id)));
            let boundary = match &self.waiting {
                Some((_, boundary)) if covered => *boundary,
                _ => {
                    let boundary = flights.advance(cluster);
                    self.waiting = Some((marked.clone(), boundary));
                    boundary
                }
            };
            if !flights.drained(cluster, boundary, wait).await {
                self.acked.retain(|id| marked.contains(id));
                return self.acked.clone();
            }
        }
        self.waiting = None;
        self.acked.clone_from(&marked);
        marked
    }
}

/// How SHOW MOVES' `waiting_for` names this process while its own sessions
/// counted before the mark have not given their counts back.
pub const ROUTED_BEFORE: &str = "(this instance: sessions that began routing before the mark)";

/// Whether `pgshard.instances` exists (a cluster pinned by this version).
pub const EXISTS: &str = "SELECT to_regclass('pgshard.instances')::text";

/// The instances of `cluster`, as the mover of move `id` reads them: name,
/// age of its read (ms), its bound (ms), whether it lists the move.
fn listed(cluster: &str, id: &str) -> String {
    format!(
        "SELECT instance, (EXTRACT(EPOCH FROM now() - begun) * 1000)::bigint::text, \
         fresh_ms::text, ({} = ANY(marked))::text FROM pgshard.instances \
         WHERE cluster = {} ORDER BY instance",
        literal(id),
        literal(cluster)
    )
}

/// One instance as the mover sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    instance: String,
    age_ms: i64,
    fresh_ms: i64,
    marked: bool,
}

fn seen(row: &[Option<String>]) -> Option<Seen> {
    let [Some(instance), Some(age), Some(fresh), Some(marked)] = row else {
        return None;
    };
    Some(Seen {
        instance: instance.clone(),
        age_ms: age.parse().ok()?,
        fresh_ms: fresh.parse().ok()?,
        marked: marked == "true",
    })
}

/// The instances the mover (`me`) waits for: alive (their read within
/// its bound and the slack) and not listing the move.
fn pending(instances: &[Seen], me: &str) -> Vec<String> {
    let slack = i64::try_from(SLACK.as_millis()).unwrap_or(i64::MAX);
    instances
        .iter()
        .filter(|s| s.instance != me && !s.marked)
        .filter(|s| s.age_ms <= s.fresh_ms.saturating_add(slack))
        .map(|s| s.instance.clone())
        .collect()
}

/// Wait until every live instance of the plan's cluster marks the move
/// (shown in SHOW MOVES' `waiting_for`), and until this process's
/// sessions counted before the move was marked here gave their counts back;
/// after the cluster's first pin (`first_pin`), first until instances that
/// found it unpinned have looked again. Fails after the mark timeout
/// naming the instances.
pub async fn wait_marked(
    shared: &Shared,
    plan: &Plan,
    moves: &Moves,
    first_pin: Option<Instant>,
    a: &mut Db,
) -> Result<(), MoveError> {
    if let Some(pinned) = first_pin {
        let bound = shared.config().general.resharding_freshness_timeout();
        let until = pinned + bound + SLACK;
        moves.update(&plan.id, |s| {
            s.waiting_for = vec!["(instances that last found the cluster unpinned)".to_owned()]
        });
        while Instant::now() < until {
            moves.check(&plan.id)?;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let begun = Instant::now();
    let timeout = moves.mark_timeout();
    // The move is marked here (`marker::mark_moving`): sessions counted
    // from now on route with its marker.
    let flights = &shared.clusters.keyless;
    let boundary = flights.advance(&plan.cluster);
    loop {
        moves.check(&plan.id)?;
        let rows = a
            .rows(
                "read which instances mark the move",
                &listed(&plan.cluster, &plan.id),
            )
            .await?;
        let instances: Vec<Seen> = rows.iter().filter_map(|r| seen(r.as_slice())).collect();
        let mut waiting = pending(&instances, &moves.owner);
        if !flights.drained_now(&plan.cluster, boundary) {
            waiting.push(format!("{} {ROUTED_BEFORE}", moves.owner));
        }
        moves.update(&plan.id, |s| s.waiting_for = waiting.clone());
        if waiting.is_empty() {
            return Ok(());
        }
        if begun.elapsed() >= timeout {
            return Err(MoveError::Unmarked {
                instances: waiting.join(", "),
                cluster: plan.cluster.clone(),
                seconds: timeout.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(instance: &str, age_ms: i64, fresh_ms: i64, marked: bool) -> Seen {
        Seen {
            instance: instance.to_owned(),
            age_ms,
            fresh_ms,
            marked,
        }
    }

    #[test]
    fn who_the_mover_waits_for() {
        let cases: &[(&str, Vec<Seen>, &[&str])] = &[
            ("nobody else", vec![], &[]),
            ("itself", vec![s("me", 0, 4000, false)], &[]),
            ("marked", vec![s("p1", 100, 4000, true)], &[]),
            ("fresh, unmarked", vec![s("p1", 100, 4000, false)], &["p1"]),
            (
                "within the slack",
                vec![s("p1", 4499, 4000, false)],
                &["p1"],
            ),
            ("stale: gone", vec![s("p1", 4501, 4000, false)], &[]),
            (
                "its own bound",
                vec![s("p1", 2000, 1300, false), s("p2", 2000, 4000, false)],
                &["p2"],
            ),
            (
                "several",
                vec![
                    s("p1", 0, 4000, false),
                    s("p2", 0, 4000, true),
                    s("p3", 10, 4000, false),
                ],
                &["p1", "p3"],
            ),
        ];
        for (what, instances, want) in cases {
            assert_eq!(pending(instances, "me"), *want, "{what}");
        }
    }

    #[tokio::test]
    async fn a_new_mark_is_acknowledged_once_the_sessions_routing_before_it_are_idle() {
        let flights = KeylessFlights::default();
        let mut acks = Acks::default();
        let short = Duration::from_millis(10);
        let ids = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let mut ack = async |marked: &[&str]| {
            acks.acknowledgeable(&flights, "c", ids(marked), short)
                .await
        };
        assert_eq!(ack(&["m1"]).await, ids(&["m1"]), "no session");
        let before = flights.enter("c");
        assert_eq!(ack(&["m1"]).await, ids(&["m1"]), "nothing new");
        assert_eq!(ack(&["m1", "m2"]).await, ids(&["m1"]), "m2 waits");
        let after = flights.enter("c");
        assert_eq!(ack(&["m1", "m2"]).await, ids(&["m1"]), "same boundary");
        drop(before);
        assert_eq!(
            ack(&["m1", "m2"]).await,
            ids(&["m1", "m2"]),
            "a session counted after the mark does not hold it back"
        );
        assert_eq!(ack(&["m2", "m3"]).await, ids(&["m2"]), "m1 ended, m3 waits");
        drop(after);
        assert_eq!(ack(&["m2", "m3"]).await, ids(&["m2", "m3"]));
        assert_eq!(ack(&[]).await, ids(&[]));
    }

    #[test]
    fn rows_parse() {
        let row = |v: &[&str]| v.iter().map(|s| Some((*s).to_owned())).collect::<Vec<_>>();
        assert_eq!(
            seen(&row(&["p1", "12", "4000", "true"])),
            Some(s("p1", 12, 4000, true))
        );
        assert_eq!(seen(&row(&["p1", "x", "4000", "true"])), None);
        assert_eq!(seen(&[None, None, None, None]), None);
    }

    #[test]
    fn statements() {
        assert_eq!(
            begin_read("p1", "pr'od", Duration::from_millis(1300)),
            "INSERT INTO pgshard.instances (instance, cluster, begun, fresh_ms) \
             VALUES ('p1', 'pr''od', now(), 1300) ON CONFLICT (instance, cluster) DO UPDATE \
             SET begun = EXCLUDED.begun, fresh_ms = EXCLUDED.fresh_ms"
        );
        assert_eq!(
            acknowledge("p1", "prod", &["m1".to_owned(), "m2".to_owned()]),
            "UPDATE pgshard.instances SET seen = now(), marked = ARRAY['m1', 'm2']::text[] \
             WHERE instance = 'p1' AND cluster = 'prod'"
        );
    }
}
