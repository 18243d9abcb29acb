//! Tests of list and range mappings: `[[sharded_tables.mapping]]` and PgDog's
//! top-level `[[sharded_mappings]]`, typed against the column's data_type.

use crate::sharding::{Key, ShardFunction};

use super::sharded_tables_tests::{error_at, function, mapping, prod, table};

#[test]
fn list_mappings() {
    let sharding = prod(&format!(
        "{}{}{}",
        table("column = \"tenant_id\""),
        mapping("kind = \"list\"\nvalues = [1, 2, 3]\nshard = 0"),
        // `kind` may be left out; a value repeated for the same shard is harmless.
        mapping("values = [4, 5, 4]\nshard = 1"),
    ));
    let expected: Vec<(Key, usize)> = [(1, 0), (2, 0), (3, 0), (4, 1), (5, 1)]
        .into_iter()
        .map(|(v, s)| (Key::Int(v), s))
        .collect();
    assert_eq!(*function(&sharding), ShardFunction::List(expected));
    assert_eq!(sharding.tables[0].keys.placement, vec![0, 1]);

    let sharding = prod(&format!(
        "{}{}",
        table("column = \"region\"\ndata_type = \"text\""),
        mapping("values = [\"eu\", \"\"]\nshard = 1"),
    ));
    assert_eq!(
        *function(&sharding),
        ShardFunction::List(vec![
            (Key::Text("eu".to_owned()), 1),
            (Key::Text(String::new()), 1)
        ])
    );

    let base = table("column = \"tenant_id\"");
    let text = error_at(
        &format!(
            "{base}{}{}",
            mapping("values = [1, 2]\nshard = 0"),
            mapping("values = [3, 2]\nshard = 1")
        ),
        "sharded_tables[0].mapping[1].values[1]",
    );
    assert!(
        text.contains("sharded_tables[0].mapping[0].values[1]"),
        "{text}"
    );
    let text = error_at(
        &format!("{base}{}", mapping("values = [1]\nshard = 2")),
        "sharded_tables[0].mapping[0].shard",
    );
    assert!(text.contains("shard_count is 2"), "{text}");
    // With more logical shards than databases, the shard is a logical one.
    prod(&format!(
        "{}{}",
        table("column = \"k\"\nshard_count = 8"),
        mapping("values = [1]\nshard = 7")
    ));
    error_at(
        &format!("{base}{}", mapping("values = []\nshard = 0")),
        "sharded_tables[0].mapping[0].values",
    );
    error_at(
        &format!("{base}{}", mapping("kind = \"list\"\nshard = 0")),
        "sharded_tables[0].mapping[0].values",
    );
}

#[test]
fn range_mappings() {
    let sharding = prod(&format!(
        "{}{}{}{}",
        table("column = \"tenant_id\"\nshard_count = 3"),
        mapping("kind = \"range\"\nend = 100\nshard = 0"),
        mapping("start = 100\nend = 200\nshard = 1"),
        mapping("start = 200\nshard = 2"),
    ));
    assert_eq!(
        *function(&sharding),
        ShardFunction::Range(vec![
            (None, Some(Key::Int(100)), 0),
            (Some(Key::Int(100)), Some(Key::Int(200)), 1),
            (Some(Key::Int(200)), None, 2),
        ])
    );
    // One range open at both ends covers every key.
    let sharding = prod(&format!(
        "{}{}",
        table("column = \"k\""),
        mapping("kind = \"range\"\nshard = 1")
    ));
    assert_eq!(
        *function(&sharding),
        ShardFunction::Range(vec![(None, None, 1)])
    );
    // Text ranges compare as strings.
    let sharding = prod(&format!(
        "{}{}{}",
        table("column = \"name\"\ndata_type = \"varchar\""),
        mapping("end = \"m\"\nshard = 0"),
        mapping("start = \"m\"\nshard = 1"),
    ));
    assert_eq!(
        *function(&sharding),
        ShardFunction::Range(vec![
            (None, Some(Key::Text("m".to_owned())), 0),
            (Some(Key::Text("m".to_owned())), None, 1),
        ])
    );

    let base = table("column = \"tenant_id\"");
    let cases = [
        (
            mapping("start = 5\nend = 5\nshard = 0"),
            "sharded_tables[0].mapping[0].end",
        ),
        (
            mapping("start = 9\nend = 5\nshard = 0"),
            "sharded_tables[0].mapping[0].end",
        ),
        (
            format!(
                "{}{}",
                mapping("start = 0\nend = 10\nshard = 0"),
                mapping("start = 9\nshard = 1")
            ),
            "sharded_tables[0].mapping[1].start",
        ),
        // Written out of order: still the later mapping is blamed.
        (
            format!(
                "{}{}",
                mapping("start = 10\nshard = 0"),
                mapping("end = 11\nshard = 1")
            ),
            "sharded_tables[0].mapping[1].start",
        ),
        (
            format!(
                "{}{}",
                mapping("kind = \"range\"\nshard = 0"),
                mapping("start = 1\nend = 2\nshard = 1")
            ),
            "sharded_tables[0].mapping[1].start",
        ),
        (
            mapping("start = 1\nshard = 2"),
            "sharded_tables[0].mapping[0].shard",
        ),
    ];
    for (mappings, path) in &cases {
        error_at(&format!("{base}{mappings}"), path);
    }
    // Adjacent ranges do not overlap (end is exclusive).
    prod(&format!(
        "{base}{}{}",
        mapping("start = 5\nend = 10\nshard = 1"),
        mapping("start = 0\nend = 5\nshard = 0")
    ));
}

#[test]
fn mapping_kind_errors() {
    let base = table("column = \"tenant_id\"");
    let cases = [
        (
            format!(
                "{}{}",
                mapping("values = [1]\nshard = 0"),
                mapping("start = 5\nshard = 1")
            ),
            "sharded_tables[0].mapping[1].kind",
        ),
        (
            mapping("values = [1]\nstart = 5\nshard = 0"),
            "sharded_tables[0].mapping[0].values",
        ),
        (
            mapping("kind = \"list\"\nstart = 5\nshard = 0"),
            "sharded_tables[0].mapping[0].kind",
        ),
        (
            mapping("kind = \"range\"\nvalues = [1]\nshard = 0"),
            "sharded_tables[0].mapping[0].kind",
        ),
        (mapping("shard = 0"), "sharded_tables[0].mapping[0]"),
        (
            mapping("kind = \"hash\"\nshard = 0"),
            "sharded_tables[0].mapping[0].kind",
        ),
        (mapping("values = [1]"), "sharded_tables[0].mapping[0]"),
        (
            mapping("values = [1]\nshard = 0\nshards = 1"),
            "sharded_tables[0].mapping[0].shards",
        ),
    ];
    for (mappings, path) in &cases {
        error_at(&format!("{base}{mappings}"), path);
    }
}

#[test]
fn mapping_values_must_fit_the_data_type() {
    let with = |keys: &str, values: &str| {
        format!(
            "{}{}",
            table(&format!("column = \"k\"\n{keys}")),
            mapping(&format!("{values}\nshard = 0"))
        )
    };
    let path = "sharded_tables[0].mapping[0].values[1]";
    let cases = [
        (with("", "values = [1, \"2\"]"), path, "expected an integer"),
        (
            with("data_type = \"smallint\"", "values = [1, 32768]"),
            path,
            "out of range for data_type smallint",
        ),
        (
            with("data_type = \"smallint\"", "values = [1, -32769]"),
            path,
            "out of range",
        ),
        (
            with("data_type = \"integer\"", "values = [1, 2147483648]"),
            path,
            "out of range for data_type integer",
        ),
        (
            with("data_type = \"text\"", "values = [\"a\", 2]"),
            path,
            "expected a string",
        ),
        (
            with("data_type = \"varchar\"", "values = [\"a\", 2]"),
            path,
            "expected a string",
        ),
        (
            with("data_type = \"uuid\"", "values = [\"a\", 2]"),
            "sharded_tables[0].mapping[0].values[0]",
            "not a valid uuid",
        ),
        (
            with("data_type = \"text\"", "values = [\"a\", \"b\\u0000\"]"),
            path,
            "not a valid text",
        ),
        (
            with("", "values = [1, 2.5]"),
            path,
            "an integer or a string",
        ),
        (
            with("", "values = [1, true]"),
            path,
            "an integer or a string",
        ),
        (
            with("data_type = \"integer\"", "start = 2147483648"),
            "sharded_tables[0].mapping[0].start",
            "out of range",
        ),
        (
            with("data_type = \"text\"", "end = 3"),
            "sharded_tables[0].mapping[0].end",
            "expected a string",
        ),
    ];
    for (sections, path, needle) in &cases {
        let text = error_at(sections, path);
        assert!(text.contains(needle), "{text}");
    }
    // The edges fit.
    let sharding = prod(&with(
        "data_type = \"smallint\"",
        "values = [-32768, 32767]",
    ));
    assert_eq!(
        *function(&sharding),
        ShardFunction::List(vec![(Key::Int(-32768), 0), (Key::Int(32767), 0)])
    );
    prod(&with(
        "data_type = \"integer\"",
        "values = [-2147483648, 2147483647]",
    ));
    prod(&with(
        "",
        "values = [-9223372036854775808, 9223372036854775807]",
    ));
}

#[test]
fn uuid_mapping_values_parse() {
    let sharding = prod(&format!(
        "{}{}",
        table("column = \"id\"\ndata_type = \"uuid\""),
        mapping("values = [\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"]\nshard = 1")
    ));
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        let hex = "a0eebc999c0b4ef8bb6d6bb9bd380a11";
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    assert_eq!(
        *function(&sharding),
        ShardFunction::List(vec![(Key::Uuid(bytes), 1)])
    );
}

#[test]
fn top_level_sharded_mappings_attach_to_their_table() {
    let sharding = prod(
        r#"
        [[sharded_tables]]
        database = "prod"
        name = "orders"
        column = "tenant_id"

        [[sharded_tables]]
        database = "prod"
        column = "tenant_id"

        [[sharded_mappings]]
        database = "prod"
        table = "orders"
        column = "tenant_id"
        kind = "list"
        values = [1, 2]
        shard = 1

        [[sharded_mappings]]
        database = "prod"
        column = "tenant_id"
        kind = "range"
        start = 0
        end = 10
        shard = 0

        [[sharded_mappings]]
        database = "prod"
        table = "orders"
        column = "tenant_id"
        values = [3]
        shard = 0
        "#,
    );
    assert_eq!(
        sharding.tables[0].keys.function,
        ShardFunction::List(vec![(Key::Int(1), 1), (Key::Int(2), 1), (Key::Int(3), 0)])
    );
    assert_eq!(
        sharding.tables[1].keys.function,
        ShardFunction::Range(vec![(Some(Key::Int(0)), Some(Key::Int(10)), 0)])
    );

    // Nested and top-level mappings of one table combine; errors name the section.
    let orders = table("name = \"orders\"\ncolumn = \"tenant_id\"");
    let top = |keys: &str| {
        format!("[[sharded_mappings]]\ndatabase = \"prod\"\ntable = \"orders\"\ncolumn = \"tenant_id\"\n{keys}\n")
    };
    let text = error_at(
        &format!(
            "{orders}{}{}",
            mapping("values = [1]\nshard = 0"),
            top("values = [1]\nshard = 1")
        ),
        "sharded_mappings[0].values[0]",
    );
    assert!(
        text.contains("sharded_tables[0].mapping[0].values[0]"),
        "{text}"
    );
    error_at(
        &format!("{orders}{}", top("values = [\"x\"]\nshard = 0")),
        "sharded_mappings[0].values[0]",
    );
    error_at(
        &format!("{orders}{}", top("start = 1\nshard = 5")),
        "sharded_mappings[0].shard",
    );
    // Matching no entry, or several, is an error.
    let text = error_at(
        &format!(
            "{}{}",
            table("column = \"tenant_id\""),
            top("values = [1]\nshard = 0")
        ),
        "sharded_mappings[0]",
    );
    assert!(text.contains("name \"orders\""), "{text}");
    error_at(
        &format!("{orders}[[sharded_mappings]]\ndatabase = \"prod\"\ntable = \"orders\"\ncolumn = \"id\"\nvalues = [1]\nshard = 0\n"),
        "sharded_mappings[0]",
    );
    error_at(
        &format!("{orders}[[sharded_mappings]]\ndatabase = \"nope\"\ntable = \"orders\"\ncolumn = \"tenant_id\"\nvalues = [1]\nshard = 0\n"),
        "sharded_mappings[0].database",
    );
    let in_schemas = format!(
        "{}{}",
        table("name = \"orders\"\nschema = \"a\"\ncolumn = \"tenant_id\""),
        table("name = \"orders\"\nschema = \"b\"\ncolumn = \"tenant_id\"")
    );
    error_at(
        &format!("{in_schemas}{}", top("values = [1]\nshard = 0")),
        "sharded_mappings[0].schema",
    );
    let sharding = prod(&format!(
        "{in_schemas}{}",
        top("schema = \"b\"\nvalues = [1]\nshard = 0")
    ));
    assert!(matches!(
        sharding.tables[0].keys.function,
        ShardFunction::Hash { .. }
    ));
    assert!(matches!(
        sharding.tables[1].keys.function,
        ShardFunction::List(_)
    ));
    // Table families take nested mappings only.
    let family = table("name_prefix = \"events_p\"\ncolumn = \"p\"");
    error_at(
        &format!("{family}[[sharded_mappings]]\ndatabase = \"prod\"\ncolumn = \"p\"\nvalues = [1]\nshard = 0\n"),
        "sharded_mappings[0]",
    );
    let sharding = prod(&format!("{family}{}", mapping("values = [7]\nshard = 1")));
    assert_eq!(
        sharding.families[0].keys.function,
        ShardFunction::List(vec![(Key::Int(7), 1)])
    );
}
