//! The parser bench's statement sets: OLTP and messaging statements, a long
//! ORM query, and the statement classes of issue 17. Shared by the benches,
//! `examples/parse_loop.rs`, and parser-ffi's `examples/parse_ratio.rs`
//! (included there by path, so it uses nothing outside `std`).

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
    queries.extend(class_queries());
    queries
}

/// Statements of the classes issue 17 measured beyond OLTP (our own, in the
/// shapes of PostgreSQL's regression suite): text equality, range literals,
/// point literals, CTEs with window and uuid functions, many joins, DDL with
/// constraints, long VALUES lists of bit strings, a 1,000-integer IN list.
pub fn class_queries() -> Vec<(&'static str, String)> {
    let fixed: &[(&str, &str)] = &[
        (
            "text_point_select",
            "SELECT id, display_name, created_at FROM accounts WHERE email = 'ada@example.org'",
        ),
        (
            "update_range_null",
            "UPDATE reservations SET during = '[2024-03-01 10:00, 2024-03-01 12:30)'::tstzrange, \
             released_by = NULL WHERE room_id = 42 AND cancelled_at IS NULL AND guest_note IS NOT NULL",
        ),
        (
            "cte_window_uuid",
            "WITH recent AS (SELECT s.id, s.tenant_id, s.user_uuid, gen_random_uuid() AS token, \
             row_number() OVER (PARTITION BY s.tenant_id ORDER BY s.started_at DESC) AS rn, \
             lag(s.started_at) OVER w AS previous_start, \
             count(*) OVER (PARTITION BY s.user_uuid ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS seen \
             FROM sessions s WHERE s.user_uuid <> '00000000-0000-0000-0000-000000000000'::uuid \
             WINDOW w AS (PARTITION BY s.user_uuid ORDER BY s.started_at)) \
             SELECT r.id, r.token::text, uuid_extract_version(r.user_uuid) AS v, r.previous_start \
             FROM recent r WHERE r.rn <= 3 ORDER BY r.tenant_id, r.rn",
        ),
        (
            "join_5way_left",
            "SELECT o.id, c.name, p.title, w.city, s.carrier, o.total \
             FROM orders o JOIN customers c ON c.id = o.customer_id \
             JOIN order_lines l ON l.order_id = o.id JOIN products p ON p.id = l.product_id \
             LEFT JOIN warehouses w ON w.id = l.warehouse_id \
             LEFT JOIN shipments s ON s.order_id = o.id AND s.state <> 'void' \
             WHERE o.tenant_id = 7 AND o.placed_at >= '2024-01-01' ORDER BY o.placed_at DESC LIMIT 50",
        ),
        (
            "create_table_ddl",
            "CREATE TABLE invoice_lines (\
             id bigint NOT NULL, tenant_id integer NOT NULL, \
             invoice_id bigint NOT NULL REFERENCES invoices (id) ON DELETE CASCADE, \
             sku varchar(32) NOT NULL CHECK (sku <> ''), \
             quantity integer NOT NULL DEFAULT 1 CHECK (quantity > 0), \
             unit_price numeric(12, 2) NOT NULL CHECK (unit_price >= 0), \
             currency char(3) NOT NULL DEFAULT 'EUR', \
             note text, created_at timestamptz NOT NULL DEFAULT now(), \
             PRIMARY KEY (tenant_id, id), \
             CONSTRAINT invoice_lines_tenant_fk FOREIGN KEY (tenant_id) REFERENCES tenants (id), \
             CONSTRAINT invoice_lines_total_ck CHECK (quantity * unit_price < 1000000))",
        ),
    ];
    let mut queries: Vec<(&'static str, String)> = fixed
        .iter()
        .map(|(name, sql)| (*name, (*sql).to_owned()))
        .collect();
    queries.insert(2, ("insert_10_points", insert_points()));
    queries.push(("values_bits_5kb", values_of_bits()));
    queries.push(("in_list_1000", in_list()));
    queries
}

/// A 10-row INSERT of point literals.
fn insert_points() -> String {
    let rows: Vec<String> = (0..10)
        .map(|i| {
            format!(
                "({i}, point '({}.5,{}.25)', '{{\"k\": {i}}}')",
                i * 3,
                100 - i
            )
        })
        .collect();
    format!(
        "INSERT INTO landmarks (id, location, tags) VALUES {}",
        rows.join(", ")
    )
}

/// A ~5 KB SELECT over a VALUES list whose rows hold bit-string literals.
fn values_of_bits() -> String {
    let rows: Vec<String> = (0..72u32)
        .map(|i| {
            format!(
                "({i}, B'{:016b}', X'{:04X}', B'{:08b}'::bit(8), 'row {i}')",
                i.wrapping_mul(2_654_435_761) & 0xffff,
                i * 37,
                i & 0xff
            )
        })
        .collect();
    format!(
        "SELECT v.id, v.flags & B'0000000011111111' AS low, v.mask, bit_count(v.flags) \
         FROM (VALUES {}) AS v(id, flags, mask, small, label) WHERE v.small <> B'00000000' ORDER BY v.id",
        rows.join(", ")
    )
}

/// A SELECT with an IN list of 1,000 integers.
fn in_list() -> String {
    let values: Vec<String> = (0..1000u32)
        .map(|i| (i * 7919 % 100_003).to_string())
        .collect();
    format!(
        "SELECT id, state FROM jobs WHERE queue_id = 3 AND id IN ({})",
        values.join(", ")
    )
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
        let len = super::values_of_bits().len();
        assert!((4500..=5500).contains(&len), "{len}");
    }

    /// The bench compares speeds: that is only fair if both sides build the
    /// same tree, for every statement the bench times.
    #[test]
    fn parse_raw_equals_protobuf_on_every_bench_query() {
        for (name, sql) in super::parser_queries() {
            assert_eq!(
                parser_ffi::parse_raw(&sql).unwrap(),
                parser_ffi::parse_protobuf(&sql).unwrap(),
                "{name}"
            );
        }
    }
}
