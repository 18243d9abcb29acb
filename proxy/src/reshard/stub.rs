//! What a family table's name on the source shows while the table itself
//! is fenced (moved to `pgshard_moved`, until the switch or the unfence,
//! and after the switch until the cleanup): a view of the same name and
//! columns whose every use fails with 55P03 "send it again", through
//! `pgshard.moving` (made by `store::CREATE`). A statement that another
//! instance routes there, because it has not read the move's switch yet
//! or because the instance that fenced was killed and the move waits to be
//! taken over, then gets an error that says to retry instead of 42P01
//! "relation does not exist".
//!
//! Every path through the view raises before a row is read or written:
//! the condition has no column and calls a STABLE function, so the
//! planner makes it a one-time filter, evaluated before any scan, for
//! reads, UPDATE and DELETE; `WITH CHECK OPTION` checks it on each
//! inserted row. COPY, TRUNCATE and ALTER refuse a view by themselves.

use super::mover::{Table, MOVED_SCHEMA};
use super::sql::{literal, qualified};

/// The statements that put the stub in `table`'s place (after its move
/// to `pgshard_moved`), for move `id`.
pub fn stub(table: &Table, id: &str) -> String {
    let name = table.sql();
    format!(
        "CREATE VIEW {name} AS SELECT * FROM {} WHERE pgshard.moving({}, {}) \
         WITH CASCADED CHECK OPTION; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON {name} TO PUBLIC",
        qualified(MOVED_SCHEMA, &table.name),
        literal(&name),
        literal(id)
    )
}

/// The statement that drops `table`'s stub if it is there (a table of
/// that name is left alone).
pub fn drop_stub(table: &Table) -> String {
    let name = table.sql();
    format!(
        "DO $pgshard$ BEGIN IF (SELECT relkind FROM pg_class WHERE oid = to_regclass({})) = 'v' \
         THEN DROP VIEW {name}; END IF; END $pgshard$",
        literal(&name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements() {
        let table = Table {
            schema: "public".to_owned(),
            name: "events_p7".to_owned(),
        };
        assert_eq!(
            stub(&table, "m1"),
            "CREATE VIEW \"public\".\"events_p7\" AS SELECT * FROM \"pgshard_moved\".\"events_p7\" \
             WHERE pgshard.moving('\"public\".\"events_p7\"', 'm1') WITH CASCADED CHECK OPTION; \
             GRANT SELECT, INSERT, UPDATE, DELETE ON \"public\".\"events_p7\" TO PUBLIC"
        );
        assert_eq!(
            drop_stub(&table),
            "DO $pgshard$ BEGIN IF (SELECT relkind FROM pg_class WHERE oid = \
             to_regclass('\"public\".\"events_p7\"')) = 'v' THEN DROP VIEW \"public\".\"events_p7\"; \
             END IF; END $pgshard$"
        );
    }
}
