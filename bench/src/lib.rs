//! The query sets the benches share, so every bench measures the same statements.

#![forbid(unsafe_code)]

/// The parser bench's statements (DESIGN.md §6 and §5), as (name, SQL).
pub const PARSER_QUERIES: &[(&str, &str)] = &[
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
        "messaging_claim",
        "UPDATE consumer_offsets SET next_offset = LEAST(next_offset + $3, \
         (SELECT next_offset FROM log_counters WHERE partition_id = $2)) \
         WHERE group_id = $1 AND partition_id = $2 RETURNING next_offset",
    ),
    (
        "messaging_read",
        "SELECT \"offset\", payload, created_at FROM events_p7 \
         WHERE \"offset\" BETWEEN $1 AND $2 ORDER BY \"offset\"",
    ),
    (
        "queue_take",
        "SELECT id, payload FROM queue WHERE partition_id = $1 ORDER BY id \
         FOR UPDATE SKIP LOCKED LIMIT 1",
    ),
];
