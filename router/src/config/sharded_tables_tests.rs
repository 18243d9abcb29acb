//! Tests of `[[sharded_tables]]` (tables and table families),
//! `[[omnisharded_tables]]` and the `[general]` sharding keys, loaded as whole
//! configs; the shared helpers for `mapping_tests.rs` (list/range mappings).

use crate::sharding::{
    DataType, Hasher, KeySpace, ParserEngine, ShardFunction, ShardedTable, Sharding, TableFamily,
};

use super::*;

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";

/// Cluster `prod` with two databases, cluster `dev` with one.
pub(super) const CLUSTERS: &str = r#"
[[databases]]
name = "prod"
host = "a"
[[databases]]
name = "prod"
host = "b"
shard = 1
[[databases]]
name = "dev"
host = "c"
"#;

pub(super) fn load(sections: &str) -> Result<Config, ConfigError> {
    Config::from_toml(&format!("{CLUSTERS}{sections}"), USERS)
}

pub(super) fn prod(sections: &str) -> Sharding {
    let config = load(sections).unwrap();
    Sharding::clone(&config.clusters["prod"].sharding)
}

/// The error's text, asserting it is at `pgdog.toml: path: `.
#[track_caller]
pub(super) fn error_at(sections: &str, path: &str) -> String {
    let text = load(sections).unwrap_err().to_string();
    assert!(
        text.starts_with(&format!("pgdog.toml: {path}: ")),
        "expected an error at {path}, got: {text}"
    );
    text
}

/// A `[[sharded_tables]]` entry of `prod` with these extra keys.
pub(super) fn table(keys: &str) -> String {
    format!("[[sharded_tables]]\ndatabase = \"prod\"\n{keys}\n")
}

pub(super) fn mapping(keys: &str) -> String {
    format!("[[sharded_tables.mapping]]\n{keys}\n")
}

fn hash_keys(data_type: DataType, shard_count: usize) -> KeySpace {
    KeySpace {
        data_type,
        function: ShardFunction::Hash {
            hasher: Hasher::Postgres,
            shard_count,
        },
        placement: (0..shard_count).map(|s| s % 2).collect(),
        moving: None,
    }
}

pub(super) fn function(sharding: &Sharding) -> &ShardFunction {
    &sharding.tables[0].keys.function
}

#[test]
fn clusters_without_entries_get_an_empty_sharding() {
    let config = load("").unwrap();
    for (name, databases) in [("prod", 2), ("dev", 1)] {
        let sharding = &config.clusters[name].sharding;
        assert_eq!(
            **sharding,
            Sharding {
                databases,
                unlisted_omnisharded: true,
                ..Sharding::default()
            }
        );
    }
    assert!(config.clusters["dev"].sharding.is_trivial());
    assert!(!config.clusters["prod"].sharding.is_trivial());
}

#[test]
fn unlisted_tables_are_omnisharded_unless_a_column_only_entry_or_the_config_says_not() {
    let omnisharded = |sections: &str| prod(sections).unlisted_omnisharded;
    let named =
        "[[sharded_tables]]\ndatabase = \"prod\"\nname = \"orders\"\ncolumn = \"tenant_id\"\n";
    let column_only = "[[sharded_tables]]\ndatabase = \"prod\"\ncolumn = \"user_id\"\n";
    assert!(omnisharded(""));
    assert!(omnisharded(named));
    // A column-only entry shards every table with that column: a table's
    // name does not tell whether it has one.
    assert!(!omnisharded(&format!("{named}{column_only}")));
    let config = load(&format!(
        "[general]\nunlisted_tables = \"sharded\"\n{named}"
    ))
    .unwrap();
    assert!(!config.clusters["prod"].sharding.unlisted_omnisharded);
    let err = load("[general]\nunlisted_tables = \"everywhere\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("general.unlisted_tables"), "{err}");
}

#[test]
fn the_demo_tables_load() {
    let config = load(
        r#"
        [[sharded_tables]]
        database = "prod"
        name = "orders"
        column = "tenant_id"
        data_type = "bigint"

        [[sharded_tables]]
        database = "prod"
        name_prefix = "events_p"
        column = "partition"

        [[omnisharded_tables]]
        database = "prod"
        tables = ["countries", "public.currencies"]
        "#,
    )
    .unwrap();
    assert_eq!(
        *config.clusters["prod"].sharding,
        Sharding {
            databases: 2,
            tables: vec![ShardedTable {
                name: Some("orders".to_owned()),
                schema: None,
                column: "tenant_id".to_owned(),
                keys: hash_keys(DataType::BigInt, 2),
            }],
            families: vec![TableFamily {
                prefix: "events_p".to_owned(),
                schema: None,
                keys: hash_keys(DataType::BigInt, 2),
            }],
            omnisharded: vec![
                (None, "countries".to_owned()),
                (Some("public".to_owned()), "currencies".to_owned()),
            ],
            cross_shard_disabled: false,
            unlisted_omnisharded: true,
            unlisted_by_columns: false,
            keyless: None,
            catalog: None,
            functions: Vec::new(),
        }
    );
    // Another cluster's sharding is untouched.
    assert!(config.clusters["dev"].sharding.tables.is_empty());
}

#[test]
fn general_sharding_keys() {
    let general = |keys: &str| {
        Config::from_toml(&format!("[general]\n{keys}\n{CLUSTERS}"), USERS).map(|c| c.general)
    };
    let g = general("").unwrap();
    assert!(!g.cross_shard_disabled);
    assert_eq!(g.query_parser_engine, ParserEngine::ZeroCopy);
    assert_eq!(
        (g.query_cache_limit, g.query_cache_max_bytes),
        (10_000, 64 << 20)
    );

    let g = general("query_cache_limit = 1\nquery_cache_max_bytes = 1024").unwrap();
    assert_eq!((g.query_cache_limit, g.query_cache_max_bytes), (1, 1024));
    let g = general("openmetrics_port = 9090\nopenmetrics_namespace = \"pgshard\"").unwrap();
    assert_eq!(g.openmetrics_port, Some(9090));
    assert_eq!(g.openmetrics_namespace.as_deref(), Some("pgshard"));
    assert!(general("openmetrics_namespace = \"9x\"").is_err());
    assert!(general("openmetrics_namespace = \"a-b\"").is_err());
    for (value, engine) in [
        ("zero_copy", ParserEngine::ZeroCopy),
        ("pg_query_raw", ParserEngine::ZeroCopy),
        ("pg_query_protobuf", ParserEngine::PgQueryProtobuf),
    ] {
        let g = general(&format!("query_parser_engine = {value:?}")).unwrap();
        assert_eq!(g.query_parser_engine, engine, "{value}");
    }

    // cross_shard_disabled reaches every cluster's sharding.
    let config = Config::from_toml(
        &format!(
            "[general]\ncross_shard_disabled = true\n{CLUSTERS}{}",
            table("column = \"tenant_id\"")
        ),
        USERS,
    )
    .unwrap();
    assert!(config.general.cross_shard_disabled);
    assert!(config
        .clusters
        .values()
        .all(|c| c.sharding.cross_shard_disabled));

    for (keys, path) in [
        ("query_cache_limit = 0", "general.query_cache_limit"),
        (
            "query_cache_max_bytes = 1023",
            "general.query_cache_max_bytes",
        ),
        (
            "query_parser_engine = \"pg_query\"",
            "general.query_parser_engine",
        ),
        ("cross_shard_disabled = 1", "general.cross_shard_disabled"),
    ] {
        let text = general(keys).unwrap_err().to_string();
        assert!(
            text.starts_with(&format!("pgdog.toml: {path}: ")),
            "{keys}: expected {path}, got {text}"
        );
    }
}

#[test]
fn every_table_key_parses() {
    let sharding = prod(&table(
        r#"
        name = "users"
        schema = "app"
        column = "id"
        data_type = "integer"
        hasher = "citus"
        shard_count = 4
        placement = [1, 1, 0, 0]
        primary = true
        "#,
    ));
    assert_eq!(
        sharding.tables,
        vec![ShardedTable {
            name: Some("users".to_owned()),
            schema: Some("app".to_owned()),
            column: "id".to_owned(),
            keys: KeySpace {
                data_type: DataType::Integer,
                function: ShardFunction::Hash {
                    hasher: Hasher::Citus,
                    shard_count: 4,
                },
                placement: vec![1, 1, 0, 0],
                moving: None,
            },
        }]
    );
}

#[test]
fn data_type_and_hasher_spellings() {
    for (value, data_type) in [
        ("bigint", DataType::BigInt),
        ("integer", DataType::Integer),
        ("smallint", DataType::SmallInt),
        ("text", DataType::Text),
        ("varchar", DataType::Varchar),
        ("uuid", DataType::Uuid),
    ] {
        let sharding = prod(&table(&format!("column = \"k\"\ndata_type = {value:?}")));
        assert_eq!(sharding.tables[0].keys.data_type, data_type, "{value}");
    }
    for (value, hasher) in [("postgres", Hasher::Postgres), ("citus", Hasher::Citus)] {
        let sharding = prod(&table(&format!("column = \"k\"\nhasher = {value:?}")));
        let expected = ShardFunction::Hash {
            hasher,
            shard_count: 2,
        };
        assert_eq!(*function(&sharding), expected, "{value}");
    }
    let text = error_at(
        &table("column = \"k\"\ndata_type = \"int8\""),
        "sharded_tables[0].data_type",
    );
    assert!(text.contains("bigint"), "{text}");
    error_at(
        &table("column = \"k\"\nhasher = \"sha1\""),
        "sharded_tables[0].hasher",
    );
}

#[test]
fn column_only_entries_shard_every_table_with_the_column() {
    let sharding = prod(&table("column = \"tenant_id\""));
    assert_eq!(sharding.tables[0].name, None);
    assert_eq!(sharding.tables[0].schema, None);
    assert_eq!(sharding.tables[0].keys, hash_keys(DataType::BigInt, 2));
}

#[test]
fn shard_count_and_placement() {
    // Default placement: logical shard s on database s % 2.
    let sharding = prod(&table("column = \"k\"\nshard_count = 5"));
    assert_eq!(sharding.tables[0].keys.placement, vec![0, 1, 0, 1, 0]);
    // One database: everything on it.
    let config =
        load("[[sharded_tables]]\ndatabase = \"dev\"\ncolumn = \"k\"\nshard_count = 3\n").unwrap();
    assert_eq!(
        config.clusters["dev"].sharding.tables[0].keys.placement,
        vec![0, 0, 0]
    );
    // shard_count may be below the number of databases.
    let sharding = prod(&table("column = \"k\"\nshard_count = 1"));
    assert_eq!(sharding.tables[0].keys.placement, vec![0]);

    error_at(
        &table("column = \"k\"\nshard_count = 0"),
        "sharded_tables[0].shard_count",
    );
    error_at(
        &table("column = \"k\"\nshard_count = 64001"),
        "sharded_tables[0].shard_count",
    );
    let text = error_at(
        &table("column = \"k\"\nplacement = [0]"),
        "sharded_tables[0].placement",
    );
    assert!(text.contains("shard_count is 2"), "{text}");
    let text = error_at(
        &table("column = \"k\"\nshard_count = 3\nplacement = [0, 1, 2]"),
        "sharded_tables[0].placement[2]",
    );
    assert!(text.contains("database 2 does not exist"), "{text}");
    error_at(
        &table("column = \"k\"\nplacement = [0, -1]"),
        "sharded_tables[0].placement[1]",
    );
}

#[test]
fn table_entry_errors() {
    let cases = [
        (
            "[[sharded_tables]]\ndatabase = \"nope\"\ncolumn = \"k\"\n".to_owned(),
            "sharded_tables[0].database",
        ),
        (
            "[[sharded_tables]]\ncolumn = \"k\"\n".to_owned(),
            "sharded_tables[0]",
        ),
        (table("name = \"orders\""), "sharded_tables[0].column"),
        (table("column = \"\""), "sharded_tables[0].column"),
        (
            table("column = \"k\"\nname = \"\""),
            "sharded_tables[0].name",
        ),
        (
            table("column = \"k\"\nschema = \"\""),
            "sharded_tables[0].schema",
        ),
        (
            table("column = \"k\"\nname = \"public.orders\""),
            "sharded_tables[0].name",
        ),
        (
            table("column = \"k\"\ncentroids = []"),
            "sharded_tables[0].centroids",
        ),
        (
            table("column = \"k\"\nprimary = \"yes\""),
            "sharded_tables[0].primary",
        ),
    ];
    for (sections, path) in &cases {
        error_at(sections, path);
    }
    // The second entry is blamed, with its index.
    error_at(
        &format!(
            "{}{}",
            table("column = \"k\""),
            table("column = \"k\"\nshard_count = 0")
        ),
        "sharded_tables[1].shard_count",
    );
}

#[test]
fn duplicate_table_and_column_fails() {
    let orders = table("name = \"orders\"\ncolumn = \"tenant_id\"");
    let text = error_at(&format!("{orders}{orders}"), "sharded_tables[1].column");
    assert!(text.contains("sharded_tables[0]"), "{text}");
    let tenant = table("column = \"tenant_id\"");
    error_at(&format!("{tenant}{tenant}"), "sharded_tables[1].column");
    let in_app = table("name = \"orders\"\nschema = \"app\"\ncolumn = \"tenant_id\"");
    error_at(&format!("{in_app}{in_app}"), "sharded_tables[1].column");

    // Another schema, column, table or cluster is another entry.
    let others = [
        table("name = \"orders\"\nschema = \"app\"\ncolumn = \"tenant_id\""),
        table("name = \"orders\"\ncolumn = \"id\""),
        table("name = \"items\"\ncolumn = \"tenant_id\""),
        tenant.clone(),
        "[[sharded_tables]]\ndatabase = \"dev\"\nname = \"orders\"\ncolumn = \"tenant_id\"\n"
            .to_owned(),
    ];
    let sharding = prod(&format!("{orders}{}", others.concat()));
    assert_eq!(sharding.tables.len(), 5);
}

#[test]
fn table_families() {
    let sharding = prod(&table(
        "name_prefix = \"events_p\"\nschema = \"kafka\"\ndata_type = \"integer\"\nshard_count = 4",
    ));
    assert!(sharding.tables.is_empty());
    assert_eq!(
        sharding.families,
        vec![TableFamily {
            prefix: "events_p".to_owned(),
            schema: Some("kafka".to_owned()),
            keys: hash_keys(DataType::Integer, 4),
        }]
    );
    // Families and tables whose names cannot collide live side by side.
    let sharding = prod(&format!(
        "{}{}{}",
        table("name_prefix = \"events_p\""),
        table("name_prefix = \"events_q\""),
        table("name = \"events_pending\"\ncolumn = \"id\""),
    ));
    assert_eq!((sharding.families.len(), sharding.tables.len()), (2, 1));

    let cases = [
        (
            table("name_prefix = \"events_p\"\nname = \"events\""),
            "sharded_tables[0].name_prefix",
        ),
        (table("name_prefix = \"\""), "sharded_tables[0].name_prefix"),
        (
            table("name_prefix = \"events_p\"\ndata_type = \"text\""),
            "sharded_tables[0].data_type",
        ),
        (
            table("name_prefix = \"events_p\"\ndata_type = \"uuid\""),
            "sharded_tables[0].data_type",
        ),
        (
            table("name_prefix = \"events_p\"\nshard_count = 0"),
            "sharded_tables[0].shard_count",
        ),
        (
            format!("{0}{0}", table("name_prefix = \"events_p\"")),
            "sharded_tables[1].name_prefix",
        ),
        // events_p12 would be both events_p + 12 and events_p1 + 2.
        (
            format!(
                "{}{}",
                table("name_prefix = \"events_p\""),
                table("name_prefix = \"events_p1\"")
            ),
            "sharded_tables[1].name_prefix",
        ),
        (
            format!(
                "{}{}",
                table("name_prefix = \"events_p\""),
                table("name = \"events_p7\"\ncolumn = \"id\"")
            ),
            "sharded_tables[1].name",
        ),
        (
            format!(
                "{}{}",
                table("name = \"events_p7\"\ncolumn = \"id\""),
                table("name_prefix = \"events_p\"")
            ),
            "sharded_tables[1].name_prefix",
        ),
    ];
    for (sections, path) in &cases {
        error_at(sections, path);
    }
    // Different schemas do not collide.
    prod(&format!(
        "{}{}",
        table("name_prefix = \"events_p\"\nschema = \"a\""),
        table("name_prefix = \"events_p\"\nschema = \"b\"")
    ));
}

#[test]
fn omnisharded_tables() {
    let sharding = prod(
        r#"
        [[omnisharded_tables]]
        database = "prod"
        tables = ["countries", "ref.currencies", "countries"]
        sticky = true

        [[omnisharded_tables]]
        database = "prod"
        tables = ["settings"]

        [[sharded_tables]]
        database = "prod"
        column = "countries"
        "#,
    );
    assert_eq!(
        sharding.omnisharded,
        vec![
            (None, "countries".to_owned()),
            (Some("ref".to_owned()), "currencies".to_owned()),
            (None, "settings".to_owned()),
        ]
    );

    let omni = |tables: &str| {
        format!("[[omnisharded_tables]]\ndatabase = \"prod\"\ntables = [{tables}]\n")
    };
    let orders = table("name = \"orders\"\nschema = \"app\"\ncolumn = \"tenant_id\"");
    let cases = [
        (
            "[[omnisharded_tables]]\ndatabase = \"nope\"\ntables = []\n".to_owned(),
            "omnisharded_tables[0].database",
        ),
        (omni("\"a\", \"\""), "omnisharded_tables[0].tables[1]"),
        (omni("\"a.b.c\""), "omnisharded_tables[0].tables[0]"),
        (omni("\".b\""), "omnisharded_tables[0].tables[0]"),
        (omni("\"a.\""), "omnisharded_tables[0].tables[0]"),
        (omni("1"), "omnisharded_tables[0].tables[0]"),
        (
            format!("{}sticky = \"yes\"\n", omni("\"a\"")),
            "omnisharded_tables[0].sticky",
        ),
        // Sharded by name and omnisharded: in the same schema, or either in every schema.
        (
            format!("{orders}{}", omni("\"x\", \"orders\"")),
            "omnisharded_tables[0].tables[1]",
        ),
        (
            format!("{orders}{}", omni("\"app.orders\"")),
            "omnisharded_tables[0].tables[0]",
        ),
        (
            format!(
                "{}{}",
                table("name = \"orders\"\ncolumn = \"tenant_id\""),
                omni("\"app.orders\"")
            ),
            "omnisharded_tables[0].tables[0]",
        ),
        (
            format!(
                "{}{}",
                table("name_prefix = \"events_p\""),
                omni("\"events_p3\"")
            ),
            "omnisharded_tables[0].tables[0]",
        ),
    ];
    for (sections, path) in &cases {
        error_at(sections, path);
    }
    // Another schema, or another cluster, is another table.
    prod(&format!(
        "{orders}{}",
        omni("\"other.orders\", \"events_px\"")
    ));
    load(&format!(
        "{orders}[[omnisharded_tables]]\ndatabase = \"dev\"\ntables = [\"orders\"]\n"
    ))
    .unwrap();
}

#[test]
fn sharding_is_shared_not_copied() {
    let config = load(&table("column = \"tenant_id\"")).unwrap();
    let copy = config.clone();
    assert!(std::sync::Arc::ptr_eq(
        &config.clusters["prod"].sharding,
        &copy.clusters["prod"].sharding
    ));
}

#[test]
fn sharded_functions() {
    let tables = format!(
        "{}{}",
        table("name = \"orders\"\ncolumn = \"tenant_id\""),
        table("schema = \"app\"\nname = \"users\"\ncolumn = \"id\"\ndata_type = \"text\"")
    );
    let function = |keys: &str| format!("{tables}[[sharded_functions]]\n{keys}\n");
    let sharding = prod(&function(
        "database = \"prod\"\nname = \"app.user_total\"\nargument = 2\ntable = \"app.users\"",
    ));
    assert_eq!(
        sharding.functions,
        vec![crate::sharding::ShardedFunction {
            schema: Some("app".into()),
            name: "user_total".into(),
            argument: 1,
            entry: 1,
        }]
    );
    for (keys, path) in [
        (
            "database = \"nope\"\nname = \"f\"\nargument = 1\ntable = \"orders\"",
            "sharded_functions[0].database",
        ),
        (
            "database = \"prod\"\nname = \"a.b.c\"\nargument = 1\ntable = \"orders\"",
            "sharded_functions[0].name",
        ),
        (
            "database = \"prod\"\nname = \"f\"\nargument = 0\ntable = \"orders\"",
            "sharded_functions[0].argument",
        ),
        (
            "database = \"prod\"\nname = \"f\"\nargument = 101\ntable = \"orders\"",
            "sharded_functions[0].argument",
        ),
        (
            "database = \"prod\"\nname = \"f\"\nargument = 1\ntable = \"nope\"",
            "sharded_functions[0].table",
        ),
        (
            "database = \"prod\"\nname = \"f\"\nargument = 1\ntable = \"other.users\"",
            "sharded_functions[0].table",
        ),
        (
            "database = \"prod\"\nname = \"f\"\nargument = 1\ntable = \"orders\"\ncolumn = \"x\"",
            "sharded_functions[0].column",
        ),
    ] {
        error_at(&function(keys), path);
    }
}

#[test]
fn one_placement_per_placement_group() {
    // Same hasher and shard_count: the placements must be equal.
    let text = error_at(
        &format!(
            "{}{}",
            table("name = \"t\"\ncolumn = \"k\"\nshard_count = 4\nplacement = [0, 1, 0, 1]"),
            table("name = \"u\"\ncolumn = \"k\"\nshard_count = 4\nplacement = [0, 1, 1, 0]"),
        ),
        "sharded_tables[1].placement",
    );
    assert!(
        text.contains(
            "logical shard 2 is on database 1 here but on database 0 in sharded_tables[0]"
        ) && text.contains("placement group postgres/4"),
        "{text}"
    );
    // A table family is in the group of its hasher and shard_count too; a
    // default placement counts as written.
    let text = error_at(
        &format!(
            "{}{}",
            table("name = \"t\"\ncolumn = \"k\"\nshard_count = 2"),
            table("name_prefix = \"f_\"\nshard_count = 2\nplacement = [1, 0]"),
        ),
        "sharded_tables[1].placement",
    );
    assert!(text.contains("logical shard 0 is on database 1"), "{text}");
    // Mapped entries of one shard_count are one group.
    error_at(
        &format!(
            "{}{}{}{}",
            table("name = \"t\"\ncolumn = \"k\"\nshard_count = 2\nplacement = [0, 1]"),
            mapping("values = [1]\nshard = 0"),
            table("name = \"u\"\ncolumn = \"k\"\nshard_count = 2\nplacement = [1, 0]"),
            mapping("values = [1]\nshard = 1"),
        ),
        "sharded_tables[1].placement",
    );
    // Other groups, other clusters: any placement.
    for ok in [
        // another shard_count
        format!(
            "{}{}",
            table("name = \"t\"\ncolumn = \"k\"\nshard_count = 2\nplacement = [0, 1]"),
            table("name = \"u\"\ncolumn = \"k\"\nshard_count = 3\nplacement = [1, 1, 0]"),
        ),
        // another hasher
        format!(
            "{}{}",
            table("name = \"t\"\ncolumn = \"k\"\nplacement = [0, 1]"),
            table("name = \"u\"\ncolumn = \"k\"\nhasher = \"citus\"\nplacement = [1, 0]"),
        ),
        // mapped and hashed
        format!(
            "{}{}{}",
            table("name = \"t\"\ncolumn = \"k\"\nplacement = [0, 1]"),
            table("name = \"u\"\ncolumn = \"k\"\nplacement = [1, 0]"),
            mapping("values = [1]\nshard = 1"),
        ),
        // another cluster
        format!(
            "{}[[sharded_tables]]\ndatabase = \"dev\"\ncolumn = \"k\"\nshard_count = 2\n",
            table("column = \"k\"\nplacement = [1, 0]"),
        ),
    ] {
        load(&ok).unwrap_or_else(|err| panic!("{err}\n{ok}"));
    }
}
