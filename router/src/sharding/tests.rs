//! Tests of placement groups: which tables and families of a cluster form
//! one group, and how a group is named.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::config::Config;

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";

/// Cluster `prod` with three databases and these `[[sharded_tables]]`
/// entries, one a line: `name|column|hasher|shard_count|placement`, or
/// `prefix*|hasher|shard_count|placement` for a table family; an empty field
/// is left out (its default).
fn prod(entries: &[&str]) -> Sharding {
    let mut toml = String::new();
    for shard in 0..3 {
        toml.push_str(&format!(
            "[[databases]]\nname = \"prod\"\nhost = \"h{shard}\"\nshard = {shard}\n"
        ));
    }
    for entry in entries {
        let fields: Vec<&str> = entry.split('|').collect();
        toml.push_str("[[sharded_tables]]\ndatabase = \"prod\"\n");
        let keys: &[&str] = match fields[0].strip_suffix('*') {
            Some(prefix) => {
                toml.push_str(&format!("name_prefix = {prefix:?}\n"));
                &["hasher", "shard_count", "placement"]
            }
            None => &["name", "column", "hasher", "shard_count", "placement"],
        };
        let values = if fields[0].ends_with('*') {
            &fields[1..]
        } else {
            &fields[..]
        };
        for (key, value) in keys.iter().zip(values) {
            match (*key, *value) {
                (_, "") => {}
                ("name" | "column" | "hasher", value) => {
                    toml.push_str(&format!("{key} = {value:?}\n"))
                }
                (key, value) => toml.push_str(&format!("{key} = {value}\n")),
            }
        }
    }
    let config = Config::from_toml(&toml, USERS).unwrap_or_else(|err| panic!("{err}\n{toml}"));
    Sharding::clone(&config.clusters["prod"].sharding)
}

/// The groups as one line each: `id: placement tables=.. families=..`.
fn groups(sharding: &Sharding) -> Vec<String> {
    sharding
        .groups()
        .iter()
        .map(|g| {
            format!(
                "{}: {:?} tables={:?} families={:?}",
                g.id, g.placement, g.tables, g.families
            )
        })
        .collect()
}

#[test]
fn groups_of_a_cluster() {
    let cases: &[(&[&str], &[&str])] = &[
        (&[], &[]),
        // Default shard_count: the number of databases.
        (
            &["t|k|||"],
            &["postgres/3: [0, 1, 2] tables=[0] families=[]"],
        ),
        (
            &["t|k||12|", "u|k||12|", "events_p*||12|"],
            &["postgres/12: [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2] tables=[0, 1] families=[0]"],
        ),
        // A different shard_count or hasher is another group, even over
        // the same column.
        (
            &["t|k||4|", "u|k||6|", "v|k|citus|4|", "w|k||4|"],
            &[
                "postgres/4: [0, 1, 2, 0] tables=[0, 3] families=[]",
                "postgres/6: [0, 1, 2, 0, 1, 2] tables=[1] families=[]",
                "citus/4: [0, 1, 2, 0] tables=[2] families=[]",
            ],
        ),
        // Explicit placements, equal within the group.
        (
            &[
                "t|k||4|[2, 2, 1, 0]",
                "f_*||4|[2, 2, 1, 0]",
                "u|k||2|[1, 1]",
            ],
            &[
                "postgres/4: [2, 2, 1, 0] tables=[0] families=[0]",
                "postgres/2: [1, 1] tables=[1] families=[]",
            ],
        ),
        // A column-only entry belongs to its group like any other.
        (
            &["|tenant_id|citus|8|", "orders|tenant_id|citus|8|"],
            &["citus/8: [0, 1, 2, 0, 1, 2, 0, 1] tables=[0, 1] families=[]"],
        ),
    ];
    for (entries, expected) in cases {
        assert_eq!(groups(&prod(entries)), *expected, "{entries:?}");
    }
}

#[test]
fn mapped_tables_form_their_own_group() {
    let mut sharding = prod(&["t|k||3|"]);
    let mapped = KeySpace {
        data_type: DataType::BigInt,
        function: ShardFunction::List(vec![(Key::Int(7), 2)]),
        placement: vec![0, 1, 2],
        moving: None,
    };
    sharding.families.push(TableFamily {
        prefix: "m_".to_owned(),
        schema: None,
        keys: mapped.clone(),
    });
    assert_eq!(
        groups(&sharding),
        [
            "postgres/3: [0, 1, 2] tables=[0] families=[]",
            "mapping/3: [0, 1, 2] tables=[] families=[0]",
        ]
    );
    let id = mapped.group();
    assert_eq!((id.function, id.shard_count), (GroupFunction::Mapping, 3));
    assert_eq!(sharding.group(id).unwrap().families, [0]);
    let absent = GroupId {
        function: GroupFunction::Hash(Hasher::Citus),
        shard_count: 3,
    };
    assert_eq!(sharding.group(absent), None);
}

#[test]
fn a_move_marks_its_group_and_the_shadow_gives_its_shards_a_database() {
    let sharding = prod(&["t|k||4|", "f_*||4|", "u|k||6|"]);
    assert!(!sharding.moving() && sharding.shadow().is_none());
    let group = sharding.tables[0].keys.group();
    let marked = sharding.with_moving(group, &[3, 1, 3], true);
    assert!(marked.moving());
    let table = marked.tables[0].keys.moving.as_deref().unwrap();
    assert_eq!(
        (table.shards.as_slice(), table.refuse_keyless),
        (&[1, 3][..], true)
    );
    assert!(table.holds(3) && !table.holds(2));
    assert_eq!(table.shard_list(), "1, 3");
    // Families are held, never refused; other groups are not marked.
    let family = marked.families[0].keys.moving.as_deref().unwrap();
    assert!(!family.refuse_keyless);
    assert_eq!(marked.tables[1].keys.moving, None);
    // The shadow: moving shards on database 3 (one past the last).
    let shadow = marked.shadow().unwrap();
    assert_eq!(shadow.databases, 4);
    assert_eq!(shadow.tables[0].keys.placement, [0, 3, 2, 3]);
    assert_eq!(shadow.families[0].keys.placement, [0, 3, 2, 3]);
    assert_eq!(shadow.tables[1].keys.placement, [0, 1, 2, 0, 1, 2]);
    assert!(!shadow.moving());
    // No shards: the marker is cleared.
    assert_eq!(marked.with_moving(group, &[], false), sharding);
}
