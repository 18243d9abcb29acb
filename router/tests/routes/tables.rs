//! Table kinds: table families, the messaging workload built on them, omnisharded and catalog
//! tables, unknown and column-only-keyed tables.

use super::*;

#[test]
#[rustfmt::skip]
fn families() {
    let c = prod();
    c.check("SELECT * FROM events_p0", &[], "0");
    c.check("SELECT * FROM events_p1", &[], "0");
    c.check("SELECT * FROM events_p3", &[], "1");
    c.check("SELECT * FROM events_p42", &[], "0");
    c.check("SELECT * FROM events_p100", &[], "1");
    c.check("SELECT * FROM events_p003", &[], "1");
    c.check("SELECT * FROM public.events_p3", &[], "1");
    c.check("SELECT * FROM events_p3 e WHERE e.\"offset\" > 5", &[], "1");
    c.check("SELECT * FROM events_p3 JOIN events_p4 USING (id)", &[], "1");
    c.check("SELECT * FROM events_p1, events_p3", &[], "err: different shards");
    c.check("SELECT * FROM events_p3 e JOIN counters c ON c.partition_id = 3", &[], "1");
    c.check("SELECT * FROM events_p3, counters WHERE partition_id = 1", &[], "err: different shards");
    c.check("SELECT * FROM events_p3 WHERE id IN (SELECT id FROM events_p4)", &[], "1");
    c.check("INSERT INTO events_p3 (\"offset\", payload) VALUES (1, 'x')", &[], "w 1");
    c.check("INSERT INTO events_p3 VALUES (1, 'x')", &[], "w 1");
    c.check("UPDATE events_p12 SET payload = 'x'", &[], "w 0");
    c.check("DELETE FROM events_p12", &[], "w 0");
    c.check("COPY events_p3 FROM STDIN", &[], "w 1");
    c.check("COPY events_p3 TO STDOUT", &[], "1");
    c.check("COPY (SELECT * FROM events_p3) TO STDOUT", &[], "1");
    c.check("CREATE TABLE events_p3 (\"offset\" bigint PRIMARY KEY, payload bytea)", &[], "w 1");
    c.check("CREATE INDEX ON events_p3 (created_at)", &[], "w 1");
    // DROP names its tables without RangeVars: the summary has none, so the
    // DDL goes everywhere (harmless with IF EXISTS).
    c.check("DROP TABLE IF EXISTS events_p42", &[], "w all");
    c.check("TRUNCATE events_p3", &[], "w 1");
    // Not members: tables the config does not know.
    c.check("SELECT * FROM events_p", &[], "all");
    c.check("SELECT * FROM events_px", &[], "all");
    c.check("SELECT * FROM events_p3_old", &[], "all");
    c.check("SELECT * FROM events_p99999999999999999999", &[], "all");
    // A family in schema `log`: unqualified names match, other schemas do not.
    c.check("SELECT * FROM log.part_3", &[], "1");
    c.check("SELECT * FROM log.part_42", &[], "0");
    c.check("SELECT * FROM part_3", &[], "1");
    c.check("SELECT * FROM other.part_3", &[], "all");
    c.check("INSERT INTO log.part_3 (id) VALUES (1)", &[], "w 1");
}

#[test]
#[rustfmt::skip]
fn messaging_workload() {
    let c = prod();
    // Pub/sub writer: reserve offsets, insert the batch as one array parameter.
    c.check("UPDATE counters SET next_offset = next_offset + $2 WHERE partition_id = $1 RETURNING next_offset - $2", &[T("3"), T("100")], "w 1");
    c.check("UPDATE counters SET next_offset = next_offset + $2 WHERE partition_id = $1 RETURNING next_offset - $2", &[i8b(42), i8b(100)], "w 0");
    c.check("INSERT INTO events_p3 (\"offset\", payload, created_at) SELECT $1 + i - 1, p, now() FROM unnest($2::bytea[]) WITH ORDINALITY AS t(p, i)", &[T("0"), T("{\"\\\\x00\"}")], "w 1");
    c.check("BEGIN; UPDATE counters SET next_offset = next_offset + 100 WHERE partition_id = 3 RETURNING next_offset; INSERT INTO events_p3 (\"offset\", payload) SELECT o, p FROM unnest($1::bigint[], $2::bytea[]) AS t(o, p); COMMIT", &[T("{1}"), T("{x}")], "w 1");
    c.check("BEGIN; UPDATE counters SET next_offset = next_offset + 100 WHERE partition_id = 1; INSERT INTO events_p3 (\"offset\") VALUES (1); COMMIT", &[], "err: different shards");
    // Pub/sub reader: claim a range for (group, partition), read it in order.
    c.check("SELECT committed FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR UPDATE", &[T("g1"), T("3")], "w 1");
    c.check("UPDATE consumer_offsets SET committed = LEAST(committed + $3, (SELECT next_offset FROM counters WHERE partition_id = $2)) WHERE group_id = $1 AND partition_id = $2 RETURNING committed", &[T("g1"), T("3"), T("200")], "w 1");
    c.check("SELECT \"offset\", payload FROM events_p3 WHERE \"offset\" >= $1 AND \"offset\" < $2 ORDER BY \"offset\"", &[T("0"), T("100")], "1");
    c.check("INSERT INTO consumer_offsets (group_id, partition_id, committed) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING", &[T("g1"), T("3")], "w 1");
    c.check("INSERT INTO counters (partition_id, next_offset) VALUES ($1, 0) ON CONFLICT (partition_id) DO NOTHING", &[i8b(42)], "w 0");
    c.check("SELECT next_offset FROM counters WHERE partition_id = $1", &[T("100")], "1");
    c.check("CREATE TABLE IF NOT EXISTS events_p3 (\"offset\" bigint PRIMARY KEY, payload bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now())", &[], "w 1");
    c.check("CREATE TABLE IF NOT EXISTS counters (partition_id bigint PRIMARY KEY, next_offset bigint NOT NULL)", &[], "w all");
    // Queue: one message per INSERT; a reader takes the oldest, deletes and archives it.
    c.check("INSERT INTO queue_p2 (payload) VALUES ($1)", &[T("x")], "w 0");
    c.check("SELECT id, payload, created_at FROM queue_p2 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1", &[], "w 0");
    c.check("DELETE FROM queue_p2 WHERE id = $1", &[T("7")], "w 0");
    c.check("INSERT INTO done_p2 (id, payload, created_at) VALUES ($1, $2, $3)", &[T("7"), T("x"), T("now")], "w 0");
    c.check("WITH m AS (DELETE FROM queue_p5 WHERE id = (SELECT id FROM queue_p5 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING *) INSERT INTO done_p5 SELECT * FROM m", &[], "w 1");
    c.check("BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE", &[], "any");
    c.check("BEGIN; DELETE FROM queue_p3 WHERE id = 1; INSERT INTO done_p3 (id) VALUES (1); COMMIT", &[], "w 1");
    c.check("BEGIN; DELETE FROM queue_p3 WHERE id = 1; INSERT INTO done_p2 (id) VALUES (1); COMMIT", &[], "err: different shards");
}

#[test]
#[rustfmt::skip]
fn omnisharded_and_catalog() {
    let c = prod();
    c.check("SELECT * FROM countries", &[], "any");
    c.check("SELECT * FROM countries WHERE code = 'fr'", &[], "any");
    c.check("SELECT * FROM countries WHERE tenant_id = 3", &[], "any");
    c.check("SELECT * FROM public.countries", &[], "any");
    c.check("SELECT * FROM ref.currencies", &[], "any");
    c.check("SELECT * FROM currencies", &[], "any");
    c.check("SELECT * FROM other.currencies", &[], "all");
    c.check("SELECT * FROM countries c JOIN ref.currencies r ON r.code = c.currency", &[], "any");
    c.check("UPDATE countries SET name = 'x'", &[], "w all");
    c.check("COPY countries FROM STDIN", &[], "w all");
    c.check("COPY countries TO STDOUT", &[], "any");
    c.check("SELECT * FROM pg_catalog.pg_class", &[], "any");
    c.check("SELECT * FROM pg_class", &[], "any");
    c.check("SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'", &[], "any");
    c.check("SELECT * FROM information_schema.tables WHERE table_name = 'orders'", &[], "any");
    c.check("SELECT * FROM pg_stat_activity", &[], "any");
    c.check("SELECT * FROM orders o JOIN pg_class c ON c.relname = 'orders' WHERE o.tenant_id = 3", &[], "1");
    c.check("SELECT 1", &[], "any");
    c.check("SELECT now()", &[], "any");
    c.check("SELECT $1::int", &[T("1")], "any");
    c.check("SELECT version()", &[], "any");
    c.check("SELECT current_setting('server_version_num')", &[], "any");
    // A sequence the catalog has not shown to be a sharded table's own
    // draws on database 0 (rule 15; `behind_names.rs` has the rest).
    c.check("SELECT nextval('orders_id_seq')", &[], "0");
    c.check("VALUES (1), (2)", &[], "any");
}

#[test]
#[rustfmt::skip]
fn unknown_and_column_only_tables() {
    let c = prod();
    c.check("SELECT * FROM foo", &[], "all");
    c.check("SELECT * FROM foo WHERE id = 1", &[], "all");
    c.check("SELECT * FROM foo WHERE tenant_id = 3", &[], "all");
    // Rule 13: an unknown table's rows may be on any shard; joined off a key, they would be
    // missed.
    c.check("SELECT * FROM foo f JOIN orders o ON o.id = f.order_id WHERE o.tenant_id = 3", &[], "err: joins foo f, which is not in the sharding config (so is treated as sharded), with orders o");
    c.check("COPY foo TO STDOUT", &[], "all");
    // A column-only entry may key it: the proxy splits the COPY by the
    // entry's column when the table has it (`copy::plan_copy_into`).
    c.check("COPY foo FROM STDIN", &[], "err: COPY ... FROM into sharded table foo");
    c.check("SELECT * FROM invoices WHERE customer_id = 3", &[], "1");
    c.check("SELECT * FROM invoices WHERE customer_id = $1", &[T("42")], "0");
    c.check("SELECT * FROM invoices i WHERE i.customer_id IN (1, 2)", &[], "0");
    c.check("SELECT * FROM invoices i JOIN payments p ON p.invoice_id = i.id WHERE i.customer_id = 3", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM invoices i JOIN payments p ON p.customer_id = 3 AND p.invoice_id = i.id", &[], "err: but not on their sharding keys");
    c.check("SELECT * FROM invoices i JOIN payments p ON p.customer_id = i.customer_id AND p.invoice_id = i.id WHERE i.customer_id = 3", &[], "1");
    c.check("SELECT * FROM invoices", &[], "all");
    c.check("SELECT * FROM countries WHERE customer_id = 3", &[], "any");
    c.check("SELECT * FROM invoices WHERE customer_id = 'x'", &[], "err: sharding key customer_id (bigint)");
}
