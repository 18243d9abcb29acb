//! Moving a row whose sharding key an UPDATE changes: the statements the
//! proxy runs, and what is refused.

use super::*;
use crate::route::ParamValue::{Null, Text};
use crate::sharding::{DataType, KeySpace, ShardFunction};

/// 2 databases: `orders` by `user_id` (1, 3 -> 0; 2, 4 -> 1).
fn sharding() -> Sharding {
    let ints = |pairs: &[(i64, usize)]| pairs.iter().map(|&(k, s)| (Key::Int(k), s)).collect();
    Sharding {
        databases: 2,
        tables: vec![ShardedTable {
            name: Some("orders".into()),
            schema: None,
            column: "user_id".into(),
            keys: KeySpace {
                data_type: DataType::BigInt,
                function: ShardFunction::List(ints(&[(1, 0), (2, 1), (3, 0), (4, 1)])),
                placement: vec![0, 1],
                moving: None,
            },
        }],
        families: Vec::new(),
        omnisharded: vec![(None, "r".into())],
        cross_shard_disabled: false,
        unlisted_omnisharded: false,
        unlisted_by_columns: false,
        keyless: None,
        catalog: None,
        functions: Vec::new(),
    }
}

fn plan(sql: &str) -> Result<KeyMove, MoveError> {
    let tree = parser_ffi::ParseTree::parse(sql).unwrap();
    let summary = crate::extract::summarize(&tree).unwrap();
    KeyMove::plan(sql, &summary.statements[0], &sharding())
}

#[test]
fn the_row_is_deleted_where_it_is_and_inserted_where_its_key_goes() {
    let columns: Vec<String> = ["user_id", "id", "note"].map(String::from).to_vec();
    let moved =
        plan("UPDATE orders SET user_id = 2, note = note || '!' WHERE user_id = 1 AND id = 7")
            .unwrap();
    assert_eq!(moved.table(), "orders");
    assert_eq!(moved.target(&sharding(), &[]), Ok(1));
    assert!(!moved.returning());
    assert_eq!(
        moved.delete(&[]).unwrap().sql,
        "DELETE FROM orders WHERE user_id = 1 AND id = 7"
    );
    assert_eq!(
        moved.delete(&columns).unwrap().sql,
        "DELETE FROM orders WHERE user_id = 1 AND id = 7 RETURNING user_id, id, note"
    );
    let insert = moved.insert(&columns).unwrap();
    assert_eq!(
        insert.sql,
        "INSERT INTO orders (user_id, id, note) OVERRIDING SYSTEM VALUE SELECT 2, id, note || '!' \
         FROM (VALUES ($1, $2, $3)) orders(user_id, id, note)"
    );
    assert_eq!(insert.params, vec![0, 1, 2]);

    // Parameters: the WHERE's go to the DELETE, the SET's to the INSERT,
    // before the old row's.
    let moved =
        plan("UPDATE orders o SET note = $3, user_id = $1 WHERE o.user_id = $2 RETURNING o.id")
            .unwrap();
    assert!(moved.returning());
    assert_eq!(moved.parameters(), 3);
    assert_eq!(
        moved.target(&sharding(), &[Text(b"4"), Text(b"1"), Null]),
        Ok(1)
    );
    let delete = moved.delete(&columns).unwrap();
    assert_eq!(
        delete.sql,
        "DELETE FROM orders o WHERE o.user_id = $1 RETURNING user_id, id, note"
    );
    assert_eq!(delete.params, vec![1]);
    let insert = moved.insert(&columns).unwrap();
    assert_eq!(
        insert.sql,
        "INSERT INTO orders AS o (user_id, id, note) OVERRIDING SYSTEM VALUE SELECT $1, id, $2 \
         FROM (VALUES ($3, $4, $5)) o(user_id, id, note) RETURNING o.id"
    );
    assert_eq!(insert.params, vec![0, 2, 3, 4, 5]);
}

#[test]
fn what_cannot_move_says_why() {
    for (sql, says) in [
        (
            "UPDATE orders SET user_id = user_id + 1 WHERE id = 1",
            "a literal or a parameter",
        ),
        (
            "UPDATE orders SET user_id = 2 FROM r WHERE r.a = orders.id",
            "no WITH and no FROM",
        ),
        (
            "UPDATE orders SET user_id = 2 WHERE CURRENT OF c",
            "CURRENT OF",
        ),
        (
            "UPDATE orders SET (user_id, id) = (2, 3) WHERE id = 1",
            "one by one",
        ),
        (
            "UPDATE orders SET user_id = 2, note = DEFAULT WHERE id = 1",
            "DEFAULT",
        ),
        (
            "UPDATE orders SET user_id = 2, tags[1] = 'x' WHERE id = 1",
            "whole columns",
        ),
        (
            "UPDATE orders SET user_id = 2 WHERE id IN (SELECT id FROM r)",
            "subqueries",
        ),
        ("UPDATE r SET user_id = 2", "sharded by a key column"),
        ("UPDATE orders SET id = 2", "assigns the sharding key"),
    ] {
        let why = plan(sql).unwrap_err().to_string();
        assert!(why.contains(says), "{sql}: {why}");
    }
    let moved = plan("UPDATE orders SET user_id = $1 WHERE id = 1").unwrap();
    for (params, says) in [
        (vec![Null], "$1 is NULL"),
        (vec![Text(b"x")], "invalid input syntax"),
        (vec![Text(b"9")], "no shard is configured"),
        (vec![], "$1 has no value"),
    ] {
        let why = moved.target(&sharding(), &params).unwrap_err().to_string();
        assert!(why.contains(says), "{params:?}: {why}");
    }
}
