//! What the benches share: the query sets (so every bench measures the same
//! statements) and the reference walk over the zero-copy tree.

#![forbid(unsafe_code)]

pub mod messaging;
pub mod timing;
pub mod walk;

/// The allocator pgshard's binary uses, so benches measure what ships. Every
/// variant in a bench runs under the same allocator.
pub type Allocator = mimalloc::MiMalloc;

/// The parser bench's statements (DESIGN.md §5 and §6), as (name, SQL).
pub fn parser_queries() -> Vec<(&'static str, String)> {
    let fixed: &[(&str, &str)] = &[
        ("point_select", "SELECT abalance FROM pgbench_accounts WHERE aid = $1"),
        (
            "pgbench_update",
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
        ),
        (
            "insert_5_rows",
            "INSERT INTO orders (tenant_id, id, amount, note) VALUES \
             (1, 1, 10.5, 'a'), (1, 2, 11.5, 'b'), (1, 3, 12.5, 'c'), (1, 4, 13.5, 'd'), (1, 5, 14.5, 'e')",
        ),
        (
            "join_group_order",
            "SELECT c.name, count(*) AS n, sum(o.amount) AS total FROM customers c \
             JOIN orders o ON o.customer_id = c.id AND o.tenant_id = c.tenant_id \
             WHERE c.tenant_id = $1 AND o.created_at > now() - interval '30 days' \
             GROUP BY c.name ORDER BY total DESC LIMIT 10",
        ),
        (
            "msg_reserve",
            "UPDATE log_counters SET next_offset = next_offset + $2 \
             WHERE partition_id = $1 RETURNING next_offset - $2 AS first_offset",
        ),
        (
            "msg_append",
            "INSERT INTO events_p7 (\"offset\", payload, created_at) \
             SELECT $1 + o.n - 1, o.payload, now() FROM unnest($2::bytea[]) WITH ORDINALITY AS o(payload, n)",
        ),
        (
            "msg_claim",
            "SELECT next_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR UPDATE",
        ),
        (
            "msg_read",
            "SELECT \"offset\", payload, created_at FROM events_p7 \
             WHERE \"offset\" BETWEEN $1 AND $2 ORDER BY \"offset\"",
        ),
        (
            "queue_take",
            "SELECT id, payload FROM queue WHERE partition_id = $1 ORDER BY id \
             FOR UPDATE SKIP LOCKED LIMIT 1",
        ),
    ];
    let mut queries: Vec<(&'static str, String)> = fixed
        .iter()
        .map(|(name, sql)| (*name, (*sql).to_owned()))
        .collect();
    queries.insert(4, ("orm_4kb", orm_query()));
    queries
}

/// A ~4 KB query in the shape ORMs emit: quoted, aliased columns, outer joins,
/// a tenant predicate and a long IN list of parameters.
pub fn orm_query() -> String {
    let mut columns = Vec::new();
    for (alias, table_columns) in [
        (
            "t0",
            &[
                "id",
                "tenant_id",
                "email",
                "display_name",
                "created_at",
                "updated_at",
                "status",
                "plan_id",
            ][..],
        ),
        (
            "t1",
            &[
                "id",
                "account_id",
                "street",
                "city",
                "postal_code",
                "country",
                "is_primary",
            ][..],
        ),
        (
            "t2",
            &[
                "id",
                "account_id",
                "name",
                "price_cents",
                "currency",
                "renews_at",
                "cancelled_at",
            ][..],
        ),
        (
            "t3",
            &[
                "id",
                "subscription_id",
                "amount_cents",
                "issued_at",
                "paid_at",
                "status",
            ][..],
        ),
        (
            "t4",
            &[
                "id",
                "account_id",
                "provider",
                "external_ref",
                "last_four",
                "expires_month",
                "expires_year",
                "is_default",
                "created_at",
                "updated_at",
            ][..],
        ),
        (
            "t5",
            &[
                "id",
                "account_id",
                "role",
                "invited_by",
                "accepted_at",
                "permissions",
                "last_seen_at",
                "locale",
                "timezone",
                "deleted_at",
            ][..],
        ),
    ] {
        for column in table_columns {
            columns.push(format!("\"{alias}\".\"{column}\" AS \"{alias}_{column}\""));
        }
    }
    let params: Vec<String> = (3..=300).map(|i| format!("${i}")).collect();
    format!(
        "SELECT {} FROM \"accounts\" AS \"t0\" \
         LEFT OUTER JOIN \"addresses\" AS \"t1\" ON (\"t1\".\"account_id\" = \"t0\".\"id\" AND \"t1\".\"is_primary\" = TRUE) \
         LEFT OUTER JOIN \"subscriptions\" AS \"t2\" ON (\"t2\".\"account_id\" = \"t0\".\"id\" AND \"t2\".\"cancelled_at\" IS NULL) \
         LEFT OUTER JOIN \"invoices\" AS \"t3\" ON (\"t3\".\"subscription_id\" = \"t2\".\"id\") \
         LEFT OUTER JOIN \"payment_methods\" AS \"t4\" ON (\"t4\".\"account_id\" = \"t0\".\"id\" AND \"t4\".\"is_default\") \
         LEFT OUTER JOIN \"memberships\" AS \"t5\" ON (\"t5\".\"account_id\" = \"t0\".\"id\" AND \"t5\".\"deleted_at\" IS NULL) \
         WHERE (\"t0\".\"tenant_id\" = $1 AND \"t0\".\"status\" = $2 AND \"t0\".\"id\" IN ({})) \
         AND (\"t3\".\"issued_at\" >= now() - interval '90 days' OR \"t3\".\"issued_at\" IS NULL) \
         AND NOT EXISTS (SELECT 1 FROM \"account_blocks\" AS \"b\" WHERE \"b\".\"account_id\" = \"t0\".\"id\" \
         AND \"b\".\"tenant_id\" = $1 AND \"b\".\"lifted_at\" IS NULL) \
         ORDER BY \"t0\".\"created_at\" DESC, \"t3\".\"issued_at\" DESC NULLS LAST LIMIT 100 OFFSET 0",
        columns.join(", "),
        params.join(", ")
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_query_parses_and_the_orm_one_is_about_4kb() {
        for (name, sql) in super::parser_queries() {
            assert!(parser_ffi::ParseTree::parse(&sql).is_ok(), "{name}");
        }
        let len = super::orm_query().len();
        assert!((3500..=4600).contains(&len), "{len}");
    }
}

/// parser-ffi's statement corpus loader, for the walk's tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "../../parser-ffi/tests/shared/corpus.rs"]
mod shared_corpus;
