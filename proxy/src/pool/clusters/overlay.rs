//! The placement overlay: where shard moves put logical shards, by cluster
//! and placement group, laid over the config file's `placement` whenever a
//! config is installed (start-up, RELOAD), so that a moved shard keeps
//! routing to its new database. The mover records a switch here; the
//! placement readers (`reshard/overlay.rs`) record what `pgshard.shards`
//! on the databases says, which also teaches other pgshard instances.
//! A moving marker (`router::sharding::Moving`) is carried the same way
//! across a RELOAD, so a move under way keeps its hold.
//!
//! The markers come from two places, kept apart here and installed as
//! their union ([`Overlay::mark_over`]): this process's moves (the mover
//! sets them: `Shared::set_moving`) and the moves the databases record
//! unfinished (`pgshard.moves`, read with the placement: any instance's,
//! so every instance refuses what a move makes inexact, running the move
//! or not, and from start-up on).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use router::sharding::{GroupId, Sharding};

/// Where one logical shard is, and since when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub database: usize,
    /// The move that put it there (`m` and 8 hex digits), or `config`
    /// when its database recorded the file's placement before any move.
    pub since: String,
}

impl Placed {
    /// The move that placed the shard, if one did.
    pub fn by_move(&self) -> Option<&str> {
        (self.since.starts_with('m') && self.since.len() == 9).then_some(self.since.as_str())
    }
}

/// A placement group's moving logical shards, and whether keyless
/// statements on its `[[sharded_tables]]` are refused meanwhile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marker {
    pub shards: Vec<usize>,
    pub refuse_keyless: bool,
}

/// Per (cluster, group): per logical shard, where it is (`None`: not known,
/// the file decides); and the moving markers.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    groups: HashMap<(String, GroupId), Vec<Option<Placed>>>,
    /// The markers this process's moves set.
    local: HashMap<(String, GroupId), Marker>,
    /// Per cluster, the moves its databases record unfinished (as last
    /// read).
    recorded: HashMap<String, Vec<Recorded>>,
    /// Moves this process has ended (recorded done or failed): no longer
    /// marked, whatever a read begun before says.
    ended: HashSet<String>,
    /// Clusters whose last complete read of the move records is too old
    /// (`freshness.rs`), with the reason: the tables of groups with
    /// `[[sharded_tables]]` are marked unread, keyless statements on them
    /// refused saying why.
    lapsed: HashMap<String, String>,
    /// How many shards this process's moves placed ([`Overlay::place`]):
    /// a read of the databases begun before one of them ([`Overlay::set`])
    /// may have seen the source still owning the shard, and is dropped.
    placed_here: u64,
}

/// A move the databases record unfinished, as it marks its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub id: String,
    pub group: GroupId,
    pub shard: usize,
    pub refuse_keyless: bool,
}

impl Overlay {
    /// What is known of `group` of `cluster`.
    pub fn get(&self, cluster: &str, group: GroupId) -> Option<&[Option<Placed>]> {
        self.groups
            .get(&(cluster.to_owned(), group))
            .map(Vec::as_slice)
    }

    /// The count of shards this process's moves placed: taken before a
    /// read of the databases and given back to [`Overlay::set`].
    pub fn epoch(&self) -> u64 {
        self.placed_here
    }

    /// Learn `placed` of `group` of `cluster`, read from the databases
    /// since [`Overlay::epoch`] was `read_from`: a shard placed there is
    /// placed so; one it does not know (`None`: a move between its fence
    /// and its switch, read on its way) stays where it was known to be.
    /// Nothing is learnt when one of this process's moves placed a shard
    /// since the read began (the read may predate that move's switch, and
    /// would put the shard back on its source); the next read will tell.
    /// Whether it was learnt.
    pub fn set(
        &mut self,
        cluster: &str,
        group: GroupId,
        placed: Vec<Option<Placed>>,
        read_from: u64,
    ) -> bool {
        if read_from != self.placed_here {
            return false;
        }
        let known = self
            .groups
            .entry((cluster.to_owned(), group))
            .or_insert_with(|| vec![None; placed.len()]);
        if known.len() != placed.len() {
            *known = vec![None; placed.len()];
        }
        for (known, placed) in known.iter_mut().zip(placed) {
            if placed.is_some() {
                *known = placed;
            }
        }
        true
    }

    /// Logical shard `shard` of `group` is on `database` since `since`.
    pub fn place(&mut self, cluster: &str, group: GroupId, shard: usize, placed: Placed) {
        let shards = self
            .groups
            .entry((cluster.to_owned(), group))
            .or_insert_with(|| vec![None; group.shard_count]);
        if let Some(slot) = shards.get_mut(shard) {
            *slot = Some(placed);
        }
        self.placed_here += 1;
    }

    /// This process's moves mark `marker` of `group` of `cluster`.
    pub fn mark(&mut self, cluster: &str, group: GroupId, marker: Marker) {
        self.local.insert((cluster.to_owned(), group), marker);
    }

    /// The databases of `cluster` record these moves unfinished (no
    /// other).
    pub fn set_recorded(&mut self, cluster: &str, moves: Vec<Recorded>) {
        self.recorded.insert(cluster.to_owned(), moves);
        let listed: HashSet<&String> = self.recorded.values().flatten().map(|r| &r.id).collect();
        self.ended.retain(|id| listed.contains(id));
    }

    /// Whether `cluster`'s read of the move records has lapsed, and why
    /// (`None`: fresh); whether that changed.
    pub fn set_lapsed(&mut self, cluster: &str, why: Option<String>) -> bool {
        match why {
            Some(why) => self.lapsed.insert(cluster.to_owned(), why.clone()) != Some(why),
            None => self.lapsed.remove(cluster).is_some(),
        }
    }

    /// This process recorded move `id` done or failed.
    pub fn end(&mut self, id: &str) {
        self.ended.insert(id.to_owned());
    }

    /// The marker of `group` of `cluster`: this process's and the
    /// databases' together.
    pub fn marker(&self, cluster: &str, group: GroupId) -> Marker {
        let local = self.local.get(&(cluster.to_owned(), group)).cloned();
        let recorded = self
            .recorded
            .get(cluster)
            .into_iter()
            .flatten()
            .filter(|r| r.group == group && !self.ended.contains(&r.id))
            .map(|r| Marker {
                shards: vec![r.shard],
                refuse_keyless: r.refuse_keyless,
            });
        let mut union = Marker::default();
        for marker in local.into_iter().chain(recorded) {
            if marker.shards.is_empty() {
                continue;
            }
            union.shards.extend(&marker.shards);
            union.refuse_keyless |= marker.refuse_keyless;
        }
        union.shards.sort_unstable();
        union.shards.dedup();
        union
    }

    /// `sharding` (of `cluster`) with each group's marker set to
    /// [`Overlay::marker`].
    pub fn mark_over(&self, cluster: &str, sharding: &Sharding) -> Sharding {
        let mut next = sharding.clone();
        let lapsed = self.lapsed.get(cluster);
        for group in sharding.groups() {
            let marker = self.marker(cluster, group.id);
            next = next.with_moving(group.id, &marker.shards, marker.refuse_keyless);
            if let Some(why) = lapsed.filter(|_| !group.tables.is_empty()) {
                // Any shard may be moving, unknown to this instance.
                next = next.with_unread(group.id, why);
            }
        }
        next
    }

    /// `sharding` (of `cluster`) with the known placements laid over it;
    /// `None` when that changes nothing. A placement naming a database the
    /// cluster does not have is skipped (the file decides there).
    pub fn apply(&self, cluster: &str, sharding: &Sharding) -> Option<Sharding> {
        let mut next = sharding.clone();
        let mut changed = false;
        let keys = next
            .tables
            .iter_mut()
            .map(|t| &mut t.keys)
            .chain(next.families.iter_mut().map(|f| &mut f.keys));
        for keys in keys {
            let Some(placed) = self.get(cluster, keys.group()) else {
                continue;
            };
            if placed.len() != keys.placement.len() {
                continue;
            }
            for (database, placed) in keys.placement.iter_mut().zip(placed) {
                match placed {
                    Some(p) if p.database < sharding.databases && p.database != *database => {
                        *database = p.database;
                        changed = true;
                    }
                    _ => {}
                }
            }
        }
        changed.then_some(next)
    }
}

/// `next` with the moving markers of `old` (same groups) carried over.
pub fn carry_moving(old: &Sharding, next: &Sharding) -> Option<Sharding> {
    let markers = old
        .tables
        .iter()
        .map(|t| (&t.keys, true))
        .chain(old.families.iter().map(|f| (&f.keys, false)));
    let mut carried: Option<Sharding> = None;
    for (keys, table) in markers {
        let Some(moving) = &keys.moving else {
            continue;
        };
        let current = carried.as_ref().unwrap_or(next);
        if current.group(keys.group()).is_none() {
            continue;
        }
        let refuse = table && moving.refuse_keyless;
        let mut next = current.with_moving(keys.group(), &moving.shards, refuse);
        if let Some(why) = moving.unread.as_deref().filter(|_| table) {
            next = next.with_unread(keys.group(), why);
        }
        carried = Some(next);
    }
    carried
}

/// `sharding` as installed: overlay, then markers.
pub fn lay_over(
    overlay: &Overlay,
    cluster: &str,
    old: Option<&Sharding>,
    sharding: &mut Arc<Sharding>,
) {
    if let Some(next) = overlay.apply(cluster, sharding) {
        *sharding = Arc::new(next);
    }
    if let Some(next) = old.and_then(|old| carry_moving(old, sharding)) {
        *sharding = Arc::new(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router::config::Config;

    fn sharding() -> Sharding {
        let databases: String = (0..3)
            .map(|i| {
                format!(
                    "[[databases]]\nname = \"prod\"\nhost = \"h\"\ndatabase_name = \"d{i}\"\nshard = {i}\n"
                )
            })
            .collect();
        let tables = "[[sharded_tables]]\ndatabase = \"prod\"\nname_prefix = \"events_p\"\n\
            data_type = \"bigint\"\nshard_count = 4\nplacement = [0, 1, 0, 1]\n";
        let users = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"p\"\n";
        let config = Config::from_toml(&format!("{databases}{tables}"), users)
            .unwrap_or_else(|e| panic!("{e}"));
        (*config.clusters["prod"].sharding).clone()
    }

    fn placed(database: usize, since: &str) -> Option<Placed> {
        Some(Placed {
            database,
            since: since.to_owned(),
        })
    }

    #[test]
    fn overlays() {
        let sharding = sharding();
        let group = sharding.families[0].keys.group();
        type Case = (&'static str, Vec<Option<Placed>>, Option<Vec<usize>>);
        let cases: &[Case] = &[
            ("nothing known", vec![None; 4], None),
            (
                "a move",
                vec![None, placed(2, "m00000001"), None, None],
                Some(vec![0, 2, 0, 1]),
            ),
            (
                "same as the file",
                vec![placed(0, "config"), placed(1, "config"), None, None],
                None,
            ),
            (
                "no such database",
                vec![placed(5, "m00000001"), None, None, None],
                None,
            ),
            ("wrong length", vec![placed(2, "m00000001")], None),
        ];
        for (what, known, want) in cases {
            let mut overlay = Overlay::default();
            assert!(overlay.set("prod", group, known.clone(), overlay.epoch()));
            let got = overlay
                .apply("prod", &sharding)
                .map(|s| s.families[0].keys.placement.clone());
            assert_eq!(&got, want, "{what}");
            assert!(overlay.apply("other", &sharding).is_none(), "{what}");
        }
    }

    /// A read of the databases begun before this process's move placed a
    /// shard (it saw the source still owning it) is not learnt.
    #[test]
    fn a_read_begun_before_a_switch_here_is_dropped() {
        let sharding = sharding();
        let group = sharding.families[0].keys.group();
        let mut overlay = Overlay::default();
        let read_from = overlay.epoch();
        let moved = Placed {
            database: 2,
            since: "m00000001".to_owned(),
        };
        overlay.place("prod", group, 1, moved);
        let stale = vec![placed(0, "config"), placed(1, "config"), None, None];
        assert!(!overlay.set("prod", group, stale.clone(), read_from));
        let placement = |o: &Overlay| {
            o.apply("prod", &sharding)
                .map(|s| s.families[0].keys.placement.clone())
        };
        assert_eq!(placement(&overlay), Some(vec![0, 2, 0, 1]));
        let fresh = vec![placed(0, "config"), placed(2, "m00000001"), None, None];
        assert!(overlay.set("prod", group, fresh, overlay.epoch()));
        assert_eq!(placement(&overlay), Some(vec![0, 2, 0, 1]));
    }

    #[test]
    fn markers_are_carried() {
        let sharding = sharding();
        let group = sharding.families[0].keys.group();
        let moving = sharding.with_moving(group, &[3], false);
        let carried = carry_moving(&moving, &sharding).map(|s| s.families[0].keys.moving.clone());
        assert_eq!(carried.flatten().map(|m| m.shards.clone()), Some(vec![3]));
        assert!(carry_moving(&sharding, &sharding).is_none());
        // What a read does not know stays as known.
        let mut overlay = Overlay::default();
        overlay.place(
            "prod",
            group,
            1,
            Placed {
                database: 2,
                since: "m00000001".to_owned(),
            },
        );
        let fresh = vec![placed(0, "config"), None, None, None];
        assert!(overlay.set("prod", group, fresh, overlay.epoch()));
        let known = overlay.get("prod", group).map(<[_]>::to_vec);
        assert_eq!(
            known,
            Some(vec![
                placed(0, "config"),
                placed(2, "m00000001"),
                None,
                None
            ])
        );
        assert_eq!(placed(1, "m0000000a").unwrap().by_move(), Some("m0000000a"));
    }

    #[test]
    fn markers_are_the_union_of_local_and_recorded() {
        let sharding = sharding();
        let group = sharding.families[0].keys.group();
        let marker = |shards: &[usize], refuse_keyless| Marker {
            shards: shards.to_vec(),
            refuse_keyless,
        };
        type Case = (&'static str, Option<Marker>, Option<Marker>, Marker);
        let cases: &[Case] = &[
            ("none", None, None, marker(&[], false)),
            ("local", Some(marker(&[3], true)), None, marker(&[3], true)),
            (
                "recorded",
                None,
                Some(marker(&[1], true)),
                marker(&[1], true),
            ),
            (
                "both",
                Some(marker(&[3, 1], false)),
                Some(marker(&[1], true)),
                marker(&[1, 3], true),
            ),
            (
                "an empty one refuses nothing",
                Some(marker(&[], true)),
                Some(marker(&[2], false)),
                marker(&[2], false),
            ),
        ];
        for (what, local, recorded, want) in cases {
            let mut overlay = Overlay::default();
            if let Some(local) = local {
                overlay.mark("prod", group, local.clone());
            }
            let recorded: Vec<Recorded> = recorded
                .iter()
                .flat_map(|m| &m.shards)
                .map(|&shard| Recorded {
                    id: format!("m{shard:08}"),
                    group,
                    shard,
                    refuse_keyless: recorded.as_ref().is_some_and(|m| m.refuse_keyless),
                })
                .collect();
            overlay.set_recorded("prod", recorded);
            assert_eq!(&overlay.marker("prod", group), want, "{what}");
            assert_eq!(overlay.marker("other", group), Marker::default(), "{what}");
            let marked = overlay.mark_over("prod", &sharding);
            let shards = marked.families[0]
                .keys
                .moving
                .as_ref()
                .map(|m| m.shards.clone());
            assert_eq!(shards.unwrap_or_default(), want.shards, "{what}");
        }
        // A move this process ended is not marked, whatever was read.
        let mut overlay = Overlay::default();
        let recorded = |id: &str, shard| Recorded {
            id: id.to_owned(),
            group,
            shard,
            refuse_keyless: true,
        };
        overlay.set_recorded("prod", vec![recorded("m1", 1), recorded("m2", 2)]);
        overlay.end("m1");
        assert_eq!(overlay.marker("prod", group), marker(&[2], true));
        overlay.set_recorded("prod", vec![recorded("m1", 1)]);
        assert_eq!(overlay.marker("prod", group), marker(&[], false));
        overlay.set_recorded("prod", Vec::new());
        assert!(overlay.ended.is_empty(), "forgotten once no read lists it");
        assert_eq!(placed(1, "config").unwrap().by_move(), None);
    }
}
