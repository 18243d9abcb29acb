//! Key values and key conditions: literals, casts, text/binary/NULL parameters, bad values, IN / OR
//! / AND, `= ANY`, text, uuid, citus and list/range keys.

use super::*;

#[test]
#[rustfmt::skip]
fn bigint_literals() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id = 1", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 2", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 4", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 12", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 42", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 100", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = -1", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = -7", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 9223372036854775807", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = -9223372036854775808", &[], "1");
    c.check("SELECT * FROM orders WHERE 3 = tenant_id", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = '3'", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = ' 3 '", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = '+3'", &[], "1");
    c.check("SELECT id, amount FROM orders WHERE tenant_id = 3 ORDER BY id LIMIT 10", &[], "1");
    c.check("SELECT count(*) FROM orders WHERE tenant_id = 3 GROUP BY status", &[], "1");
    c.check("SELECT * FROM orders WHERE (tenant_id = 3)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND status = 'paid'", &[], "1");
    c.check("SELECT * FROM orders WHERE status = 'paid' AND tenant_id = 3 AND id > 5", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND (status = 'a' OR status = 'b')", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 LIMIT $1 OFFSET $2", &[T("10"), T("0")], "1");
    c.check("SELECT * FROM ORDERS WHERE TENANT_ID = 3", &[], "1");
    c.check("SELECT * FROM \"orders\" WHERE \"tenant_id\" = 3", &[], "1");
    c.check("SELECT * FROM \"Orders\" WHERE tenant_id = 3", &[], "all");
    c.check("/* pgdog_shard: 0 */ SELECT * FROM orders WHERE tenant_id = 3", &[], "1");
    c.check("SELECT * FROM orders, LATERAL (SELECT * FROM order_items i WHERE i.tenant_id = 3) x WHERE orders.tenant_id = 3", &[], "1");
    c.check("SELECT * FROM generate_series(1, 3)", &[], "any");
}

#[test]
#[rustfmt::skip]
fn casts() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id = 3::bigint", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = '3'::bigint", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = '3'::int8", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = CAST('3' AS bigint)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 3::int", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 3::smallint", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1::bigint", &[T("3")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1::int4", &[i4b(3)], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1::int2", &[i2b(3)], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1::int8", &[i8b(42)], "0");
    // Compared in another type: the key restricts nothing.
    c.check("SELECT * FROM orders WHERE tenant_id = 3::numeric", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = $1::numeric", &[T("3")], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = '3'::text", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id::text = '3'", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id + 0 = 3", &[], "all");
    c.check("SELECT * FROM accounts WHERE email = 'acme'::text", &[], "1");
    c.check("SELECT * FROM accounts WHERE email = 'acme'::varchar", &[], "1");
    c.check("SELECT * FROM accounts WHERE email = $1::text", &[T("acme")], "1");
    c.check("SELECT * FROM accounts WHERE email = $1::varchar(64)", &[T("foo")], "0");
    c.check("SELECT * FROM sessions WHERE session_id = $1::uuid", &[T("11111111-1111-1111-1111-111111111111")], "0");
    c.check("SELECT * FROM sessions WHERE session_id = '00000000-0000-0000-0000-000000000000'::uuid", &[], "1");
}

#[test]
#[rustfmt::skip]
fn parameters() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[T("3")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[T("42")], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[T("-1")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i8b(3)], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i8b(12)], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i8b(i64::MAX)], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i8b(i64::MIN)], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i4b(3)], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[i4b(-7)], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = $2", &[T("x"), T("3")], "1");
    c.check("SELECT * FROM orders WHERE status = $1 AND tenant_id = $2", &[T("paid"), i8b(100)], "1");
    // NULL and missing parameters restrict nothing (a Describe before Bind).
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[N], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = $2", &[T("3")], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = NULL", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id IS NULL", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = $1 AND id = $2", &[N, T("3")], "all");
    c.check("SELECT * FROM accounts WHERE email = $1", &[T("foo")], "0");
    c.check("SELECT * FROM accounts WHERE email = $1", &[T("")], "0");
    c.check("SELECT * FROM accounts WHERE email = $1", &[bytes(b"acme")], "1");
    c.check("SELECT * FROM accounts WHERE email = $1", &[bytes(b"e")], "1");
    c.check("SELECT * FROM sessions WHERE session_id = $1", &[bytes(&[0; 16])], "1");
    c.check("SELECT * FROM sessions WHERE session_id = $1", &[bytes(&[0x11; 16])], "0");
    c.check("SELECT * FROM sessions WHERE session_id = $1", &[T("00000000-0000-0000-0000-000000000000")], "1");
    c.check("SELECT * FROM sessions WHERE session_id = $1", &[T("{11111111-1111-1111-1111-111111111111}")], "0");
    c.check("SELECT * FROM sessions WHERE session_id = $1", &[T("11111111111111111111111111111111")], "0");
    c.check("SELECT * FROM stores WHERE region_id = $1", &[i4b(3)], "1");
    c.check("SELECT * FROM stores WHERE region_id = $1", &[i2b(1)], "0");
    c.check("SELECT * FROM stores WHERE region_id = $1", &[T("4")], "1");
}

#[test]
#[rustfmt::skip]
fn bad_key_values() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id = 'abc'", &[], "err: sharding key orders.tenant_id (bigint)");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[T("abc")], "err: orders.tenant_id (bigint)");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[T("")], "err: orders.tenant_id (bigint)");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[T("9223372036854775808")], "err: out of range");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[bytes(&[1, 2, 3])], "err: orders.tenant_id (bigint)");
    c.check("SELECT * FROM orders WHERE tenant_id = $1", &[bytes(&[0xff])], "err: orders.tenant_id");
    c.check("SELECT * FROM orders WHERE tenant_id = 4.5", &[], "err: orders.tenant_id (bigint)");
    c.check("SELECT * FROM stores WHERE region_id = $1", &[T("99999999999")], "err: stores.region_id (integer)");
    c.check("SELECT * FROM sessions WHERE session_id = 'not-a-uuid'", &[], "err: sessions.session_id (uuid)");
    c.check("SELECT * FROM sessions WHERE session_id = $1", &[bytes(&[0; 15])], "err: 16 bytes");
    c.check("SELECT * FROM accounts WHERE email = $1", &[bytes(&[0xc3, 0x28])], "err: accounts.email (text)");
    c.check("UPDATE orders SET amount = 1 WHERE tenant_id = 'x'", &[], "err: orders.tenant_id (bigint)");
    c.check("INSERT INTO orders (tenant_id) VALUES ('x')", &[], "err: orders.tenant_id (bigint)");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[T("{1,x}")], "err: orders.tenant_id (bigint)");
}

#[test]
#[rustfmt::skip]
fn in_lists_and_or() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 2)", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id IN (3, 4, 5)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 3)", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id IN (3)", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id IN ($1, $2)", &[T("3"), T("100")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id IN ($1, $2)", &[T("3"), T("42")], "all");
    c.check("SELECT * FROM orders WHERE tenant_id IN ($1, $2)", &[T("3"), N], "all");
    c.check("SELECT * FROM orders WHERE tenant_id NOT IN (3)", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id <> 3", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id > 3", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id BETWEEN 3 AND 4", &[], "all");
    c.check("SELECT * FROM orders WHERE NOT (tenant_id = 3)", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 OR tenant_id = 4", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = 1 OR tenant_id = 3", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 OR status = 'x'", &[], "all");
    c.check("SELECT * FROM orders WHERE (tenant_id = 1 OR tenant_id = 2) AND id = 5", &[], "0");
    c.check("SELECT * FROM orders WHERE (tenant_id = 3 AND id = 1) OR (tenant_id = 4 AND id = 2)", &[], "1");
    c.check("SELECT * FROM orders WHERE (tenant_id = 3 AND id = 1) OR id = 2", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id IN (1, 2) AND tenant_id IN (2, 12)", &[], "0");
    // A contradiction matches no row: the lowest database it names.
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND tenant_id = 1", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = 3 AND tenant_id = 4", &[], "1");
}

#[test]
#[rustfmt::skip]
fn any_arrays() {
    let c = prod();
    c.check("SELECT * FROM orders WHERE tenant_id = ANY('{1,2}')", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY('{3,4,100}')", &[], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY('{1,3}')", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY('{1,3}'::bigint[])", &[], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY(ARRAY[1, 2])", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY(ARRAY[3, $1])", &[T("4")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[T("{3,5}")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[T("{3,NULL}")], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[T("{1,3}")], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1::bigint[])", &[T("{42,12}")], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[arr8(&[Some(3), Some(4)])], "1");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[arr8(&[Some(1), None])], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[arr8(&[Some(1), Some(3)])], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[N], "all");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[], "all");
    // An empty array matches no row.
    c.check("SELECT * FROM orders WHERE tenant_id = ANY('{}')", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id = ANY($1)", &[T("{}")], "0");
    c.check("SELECT * FROM accounts WHERE email = ANY($1)", &[T("{acme,e}")], "1");
    c.check("SELECT * FROM accounts WHERE email = ANY($1)", &[arr_text(&["foo", "bar"])], "0");
    c.check("SELECT * FROM accounts WHERE email = ANY($1)", &[arr_text(&["foo", "acme"])], "all");
    c.check("SELECT * FROM accounts WHERE email = ANY('{foo,bar}')", &[], "0");
    c.check("SELECT * FROM orders WHERE tenant_id <> ALL('{1,2}')", &[], "all");
}

#[test]
#[rustfmt::skip]
fn text_uuid_and_mapped_keys() {
    let c = prod();
    c.check("SELECT * FROM accounts WHERE email = 'foo'", &[], "0");
    c.check("SELECT * FROM accounts WHERE email = 'acme'", &[], "1");
    c.check("SELECT * FROM accounts WHERE email = 'bar'", &[], "0");
    c.check("SELECT * FROM accounts WHERE email = ''", &[], "0");
    c.check("SELECT * FROM accounts WHERE email IN ('foo', 'acme')", &[], "all");
    c.check("SELECT * FROM accounts WHERE lower(email) = 'acme'", &[], "all");
    c.check("SELECT * FROM sessions WHERE session_id = '00000000-0000-0000-0000-000000000000'", &[], "1");
    c.check("SELECT * FROM sessions WHERE session_id = '11111111-1111-1111-1111-111111111111'", &[], "0");
    c.check("SELECT * FROM sessions WHERE session_id = '{00000000-0000-0000-0000-000000000000}'", &[], "1");
    // citus, 8 logical shards placed [0, 1, 1, 0, 0, 1, 1, 0].
    c.check("SELECT * FROM metrics WHERE device_id = 1", &[], "0");
    c.check("SELECT * FROM metrics WHERE device_id = 2", &[], "1");
    c.check("SELECT * FROM metrics WHERE device_id = 3", &[], "0");
    c.check("SELECT * FROM metrics WHERE device_id = 4", &[], "1");
    c.check("SELECT * FROM metrics WHERE device_id = 5", &[], "1");
    c.check("SELECT * FROM metrics WHERE device_id = 12", &[], "0");
    c.check("SELECT * FROM metrics WHERE device_id = 42", &[], "1");
    c.check("SELECT * FROM metrics WHERE device_id = 100", &[], "0");
    c.check("SELECT * FROM metrics WHERE device_id = -1", &[], "0");
    c.check("SELECT * FROM metrics WHERE device_id IN (1, 3, 12)", &[], "0");
    c.check("SELECT * FROM metrics WHERE device_id = $1", &[i8b(42)], "1");
    // list: 1, 2 -> 0; 3, 4 -> 1.
    c.check("SELECT * FROM stores WHERE region_id = 1", &[], "0");
    c.check("SELECT * FROM stores WHERE region_id = 2", &[], "0");
    c.check("SELECT * FROM stores WHERE region_id = 3", &[], "1");
    c.check("SELECT * FROM stores WHERE region_id IN (3, 4)", &[], "1");
    c.check("SELECT * FROM stores WHERE region_id = ANY('{1,4}')", &[], "all");
    c.check("SELECT * FROM stores WHERE region_id = 5", &[], "err: no shard for key 5");
    c.check("SELECT * FROM stores WHERE region_id IN (1, 5)", &[], "err: no shard for key 5 of stores.region_id");
    c.check("INSERT INTO stores (region_id, name) VALUES (9, 'x')", &[], "err: no shard for key 9");
    // range: [2000, 2010) -> 0, [2010, 2020) -> 1.
    c.check("SELECT * FROM archives WHERE year = 2000", &[], "0");
    c.check("SELECT * FROM archives WHERE year = 2009", &[], "0");
    c.check("SELECT * FROM archives WHERE year = 2010", &[], "1");
    c.check("SELECT * FROM archives WHERE year = $1", &[T("2019")], "1");
    c.check("SELECT * FROM archives WHERE year = 2020", &[], "err: no shard for key 2020 of archives.year");
    c.check("SELECT * FROM archives WHERE year = 1999", &[], "err: no shard for key 1999");
    c.check("SELECT * FROM archives WHERE year > 2020", &[], "all");
}
