SELECT CASE WHEN score >= 90 THEN 'A' WHEN score >= 80 THEN 'B' WHEN score >= 70 THEN 'C' ELSE 'F' END AS grade FROM exams
----
SELECT CASE status WHEN 1 THEN 'active' WHEN 2 THEN 'suspended' ELSE 'unknown' END FROM accounts
----
SELECT CASE WHEN a IS NULL THEN 0 END FROM t
----
SELECT CASE WHEN x > 0 THEN CASE WHEN y > 0 THEN 'Q1' ELSE 'Q4' END ELSE CASE WHEN y > 0 THEN 'Q2' ELSE 'Q3' END END FROM points
----
SELECT sum(CASE WHEN paid THEN amount ELSE 0 END) AS paid_total FROM invoices
----
SELECT COALESCE(nickname, first_name, 'anonymous') FROM users
----
SELECT COALESCE($1::text, '') || COALESCE($2, 'default')
----
SELECT NULLIF(divisor, 0), total / NULLIF(count, 0) AS ratio FROM stats
----
SELECT GREATEST(a, b, c), LEAST(a, b, c) FROM triples
----
SELECT GREATEST(updated_at, created_at, '1970-01-01'::timestamptz) FROM rows_table
----
SELECT '42'::int, '3.5'::numeric(10, 2), 'abc'::varchar(10), '2024-05-01'::date
----
SELECT CAST('42' AS integer), CAST(price AS numeric(12, 4)), CAST(NULL AS text)
----
SELECT id::text, created_at::date, payload::jsonb, flags::bit(8) FROM things
----
SELECT '{1,2,3}'::int[], '{{1,2},{3,4}}'::integer[][], '{"a","b"}'::text[]
----
SELECT x::double precision, y::character varying(255), z::timestamp(3) with time zone, w::time without time zone FROM t
----
SELECT 1::smallint, 2::bigint, 3::real, 4::float8, 5::float(24), 6::decimal, 7::dec(5,1), 8::boolean
----
SELECT 'x'::char, 'x'::character(5), 'x'::national character varying(3), 'x'::nchar(2)
----
SELECT interval '1 day'::interval day to second, '10:00'::interval hour to minute
----
SELECT ARRAY[1, 2, 3], ARRAY['a', 'b'], ARRAY[[1, 2], [3, 4]], ARRAY[]::int[]
----
SELECT arr[1], arr[2:3], arr[:2], arr[2:], arr[:], matrix[1][2] FROM arrays
----
SELECT (ARRAY[10, 20, 30])[2], (string_to_array('a,b,c', ','))[1:2]
----
SELECT tags[array_length(tags, 1)] AS last_tag FROM posts
----
SELECT ARRAY[1, 2] || ARRAY[3], 0 || ARRAY[1], ARRAY[1, 2] @> ARRAY[1], ARRAY[1] <@ ARRAY[1, 2], ARRAY[1, 2] && ARRAY[2, 3]
----
SELECT ARRAY(SELECT generate_series(1, 5))
----
SELECT ROW(1, 'a', true), (1, 2, 3), ROW()
----
SELECT ROW(a, b) = ROW(c, d), (a, b) < (c, d), (a, b) IS NULL FROM pairs
----
SELECT ROW(1, 2)::complex_pair, (ROW(1, 2)::complex_pair).r
----
SELECT * FROM t WHERE (a, b, c) > (1, 2, 3)
----
SELECT * FROM t WHERE (a, b) OVERLAPS (c, d)
----
SELECT (DATE '2001-02-16', DATE '2001-12-21') OVERLAPS (DATE '2001-10-30', DATE '2002-10-30')
----
SELECT * FROM t WHERE a IS DISTINCT FROM b
----
SELECT * FROM t WHERE a IS NOT DISTINCT FROM $1
----
SELECT * FROM t WHERE (a, b) IS DISTINCT FROM (1, NULL)
----
SELECT * FROM orders WHERE total BETWEEN 10 AND 100
----
SELECT * FROM orders WHERE total NOT BETWEEN 10 AND 100
----
SELECT * FROM orders WHERE total BETWEEN SYMMETRIC 100 AND 10
----
SELECT * FROM orders WHERE total NOT BETWEEN SYMMETRIC $2 AND $1
----
SELECT * FROM orders WHERE created_at BETWEEN ASYMMETRIC now() - interval '1 week' AND now()
----
SELECT * FROM users WHERE email LIKE '%@example.com'
----
SELECT * FROM users WHERE email NOT LIKE '%@test.%' ESCAPE '!'
----
SELECT * FROM users WHERE name ILIKE 'jo_n%'
----
SELECT * FROM users WHERE name NOT ILIKE '%bot%'
----
SELECT 'abc' SIMILAR TO 'a%', 'abc' NOT SIMILAR TO '(b|c)%', 'a_c' SIMILAR TO 'a#_c' ESCAPE '#'
----
SELECT 'abc' ~~ 'a%', 'abc' !~~ 'b%', 'ABC' ~~* 'a%', 'ABC' !~~* 'b%'
----
SELECT * FROM logs WHERE message ~ '^ERROR\s+\d+'
----
SELECT * FROM logs WHERE message ~* 'timeout' AND message !~ 'retry' AND message !~* 'ignored'
----
SELECT regexp_replace(phone, '[^0-9]', '', 'g'), regexp_matches(body, '#(\w+)', 'g') FROM contacts
----
SELECT substring('foobar' from 2 for 3), substring('foobar' from 'o+'), substring('foobar' similar '%#"o_b#"%' escape '#')
----
SELECT position('b' in 'abc'), overlay('Txxxxas' placing 'hom' from 2 for 4), trim(both 'x' from 'xxaxx'), trim(leading from '  a'), trim(trailing 'z' from 'azz')
----
SELECT extract(year from created_at), extract(epoch from now()), date_part('dow', created_at) FROM events
----
SELECT name COLLATE "C" FROM users ORDER BY name COLLATE "en_US"
----
SELECT * FROM users WHERE name COLLATE "de_DE" < 'M' COLLATE "de_DE"
----
SELECT lower(title) COLLATE pg_catalog."default" FROM books
----
SELECT created_at AT TIME ZONE 'UTC' FROM events
----
SELECT created_at AT TIME ZONE 'America/New_York' AT TIME ZONE 'Europe/Berlin' FROM events
----
SELECT now() AT LOCAL, ts AT TIME ZONE tz_name FROM schedules
----
SELECT timestamp '2024-03-10 02:30:00' AT TIME ZONE INTERVAL '-08:00'
----
SELECT interval '1 year 2 months 3 days', interval '4 hours 5 minutes', interval 'P1Y2M3DT4H5M6S'
----
SELECT INTERVAL '1' YEAR, INTERVAL '2' MONTH, INTERVAL '3' DAY, INTERVAL '4' HOUR, INTERVAL '5' MINUTE, INTERVAL '6' SECOND
----
SELECT INTERVAL '1-2' YEAR TO MONTH, INTERVAL '3 4:05' DAY TO MINUTE, INTERVAL '3 4:05:06.789' DAY TO SECOND(3)
----
SELECT now() - interval '15 minutes', current_date + 7, age(timestamp '2000-01-01')
----
SELECT DATE '2024-01-01', TIME '12:34:56', TIMESTAMP '2024-01-01 00:00:00', TIMESTAMPTZ '2024-01-01 00:00:00+02', TIME WITH TIME ZONE '04:05:06 PST'
----
SELECT timestamp(3) '2024-01-01 12:00:00.12345', time(0) without time zone '11:00'
----
SELECT int4 '7', float8 '1e10', numeric '1.50', bool 'yes', text 'hello', bytea '\xdeadbeef', uuid 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'
----
SELECT inet '192.168.0.1/24', cidr '10.0.0.0/8', macaddr '08:00:2b:01:02:03', point '(1,2)', jsonb '{"a":1}'
----
SELECT B'1010', B'', X'1F', X'DEADbeef', b'0001' | b'1000', B'1100' & B'1010', B'1100' # B'1010', ~ B'1111'
----
SELECT B'1010'::bit(4) << 1, X'FF'::bit(8) >> 2, B'101'::varbit
----
SELECT E'line1\nline2', E'tab\there', E'quote\'s', E'backslash\\', E'\x41\102\u00e9\U0001F600'
----
SELECT e'lowercase prefix \r\n', E'octal \101', 'it''s a standard string'
----
SELECT $$dollar quoted$$, $tag$ with $$ inside $tag$, $a$multi
line
string$a$
----
SELECT $fn$SELECT 'nested' || $x$inner$x$$fn$ AS body
----
SELECT U&'d\0061t\+000061', U&'\0441\043B\043E\043D', U&'d!0061t!+000061' UESCAPE '!'
----
SELECT U&"d\0061t\+000061" FROM U&"tbl"
----
SELECT 'foo'
'bar' AS continued_string
----
SELECT 42, -42, +7, 3.5, .5, 5., 1e10, 1.5e-3, 2E+4, 6.02e23
----
SELECT 1_000, 1_000_000.000_1, 0x1F, 0X1f, 0o17, 0O777, 0b1010, 0B1111_0000, 0xFFFF_FFFF
----
SELECT 9223372036854775807, -9223372036854775808, 123456789012345678901234567890, 1.0e-300
----
SELECT $1, $2, $3::int, $4::bigint[], $5::text[], $6::uuid, $7::timestamptz, $8::numeric(10,2)
----
SELECT * FROM users WHERE id = ANY($1)
----
SELECT * FROM users WHERE id = ANY($1::int[]) AND tenant_id = $2::bigint
----
SELECT * FROM users WHERE email = ANY(string_to_array($1, ','))
----
SELECT * FROM items WHERE sku <> ALL($1::varchar[]) AND category = $2
----
SELECT * FROM t WHERE c = $10 OR c = $11 OR c = $12
----
SELECT CAST($1 AS int) + CAST($2 AS int), $3::text || $4::text
----
SELECT 2 + 3 * 4 - 5 / 6 % 7, 2 ^ 10, |/ 16, ||/ 27, @ -5, (10 IS NULL)
----
SELECT factorial(5), 5 & 3, 5 | 3, 5 # 3, ~5, 1 << 4, 256 >> 2
----
SELECT 'abc' || 'def' || 123 || NULL
----
SELECT NOT true, true AND false, true OR false, NOT (a AND NOT b) FROM flags
----
SELECT a IS NULL, a IS NOT NULL, a ISNULL, a NOTNULL FROM t
----
SELECT a IS TRUE, a IS NOT TRUE, a IS FALSE, a IS NOT FALSE, a IS UNKNOWN, a IS NOT UNKNOWN FROM t
----
SELECT 'abc' IS NORMALIZED, 'abc' IS NFC NORMALIZED, 'abc' IS NOT NFKD NORMALIZED, normalize('abc', NFKC)
----
SELECT x OPERATOR(pg_catalog.+) y, OPERATOR(pg_catalog.-) z FROM t
----
SELECT * FROM t WHERE x OPERATOR(public.===) y
----
SELECT 1 < 2, 2 <= 2, 3 > 2, 3 >= 3, 1 = 1, 1 <> 2, 1 != 2
----
SELECT count(*), count(1), count(DISTINCT x), count(ALL x) FROM t
----
SELECT func(a => 1, b => 'two'), func(x := 3), concat_ws(',', VARIADIC ARRAY['a', 'b'])
----
SELECT make_interval(days => 10, hours => 5), format('%s-%s', VARIADIC ARRAY['x', 'y'])
----
SELECT pg_catalog.lower('ABC'), public.my_func(1, 2), "CamelFunc"()
----
SELECT coalesce(sum(amount), 0)::numeric(20, 2) AS total FROM payments WHERE user_id = $1
----
SELECT EXISTS (SELECT 1 FROM t WHERE a = 1) AS has_a, NOT EXISTS (SELECT 1 FROM t WHERE a = 2) AS no_b
----
SELECT x IN (1, 2, 3), x NOT IN ('a', 'b'), x = ANY ('{1,2,3}'::int[]) FROM t
----
SELECT 5 > ANY (ARRAY[1, 7]), 5 < ALL (SELECT n FROM nums), 5 = SOME ('{5}')
----
SELECT 'a' < ANY (ARRAY['b']), 'x' LIKE ANY (ARRAY['%x%', 'y%']), 'x' ILIKE ALL (ARRAY['%X', 'x%'])
----
SELECT CURRENT_TIMESTAMP(3), LOCALTIMESTAMP(0), CURRENT_TIME(2), LOCALTIME(1)
----
SELECT SYSTEM_USER, CURRENT_SCHEMA, CURRENT_CATALOG
----
SELECT xmlelement(name foo, xmlattributes('xyz' as bar), 'content'), xmlforest(a, b AS "B") FROM t
----
SELECT xmlparse(document '<a/>'), xmlserialize(content '<b/>'::xml AS text), xmlroot(xml '<x/>', version '1.0', standalone yes)
----
SELECT xmlconcat('<a/>', '<b/>'), xmlpi(name php, 'echo 1;'), xmlexists('//town' PASSING BY REF '<towns><town>T</town></towns>')
----
SELECT '<x/>'::xml IS DOCUMENT, xmlagg(x ORDER BY y) FROM docs
----
SELECT * FROM XMLTABLE('/rows/row' PASSING ('<rows><row id="1"/></rows>'::xml) COLUMNS id int PATH '@id', ord FOR ORDINALITY)
----
SELECT * FROM XMLTABLE(XMLNAMESPACES('http://example.com/ns' AS x), '/x:doc/x:item' PASSING BY VALUE doc COLUMNS name text PATH 'x:name' NOT NULL, price numeric DEFAULT 0) AS xt
----
SELECT '(1,2)'::point <-> '(3,4)'::point, circle '((0,0),1)' @> point '(0.5,0.5)', box '((0,0),(1,1))' && box '((0.5,0.5),(2,2))'
----
SELECT to_tsvector('english', body) @@ to_tsquery('english', 'fat & rat') FROM docs
----
SELECT ts_rank(tsv, plainto_tsquery($1)) AS rank FROM articles WHERE tsv @@ websearch_to_tsquery('english', $1) ORDER BY rank DESC
----
SELECT '192.168.1.5'::inet << '192.168.1.0/24'::inet, '10.0.0.0/8'::cidr >>= '10.1.0.0/16'
----
SELECT int4range(1, 10) @> 5, tstzrange(now(), now() + interval '1 day', '[)') && tstzrange($1, $2), daterange('2024-01-01', NULL) -|- daterange(NULL, '2024-01-01')
----
SELECT '[1,5)'::int4range * '[3,7)'::int4range, '{[1,3], [5,7]}'::int4multirange + '{[2,6]}'
----
SELECT lower(r), upper(r), isempty(r), lower_inf(r) FROM ranges
----
SELECT 'a'::text COLLATE "C" || 'b', ('x' || 'y') COLLATE "POSIX"
----
SELECT DISTINCT ON (lower(email)) lower(email) FROM users
----
SELECT 1 FROM t WHERE a = b AND b = c AND c = d AND d = e OR f = g AND NOT h
----
SELECT (((((1 + 2) * 3) - 4) / 5) % 6)
----
SELECT -(-(-1)), - - 2, +(+3)
----
SELECT 'infinity'::timestamp, '-infinity'::date, 'NaN'::float8, 'Infinity'::numeric
----
SELECT grouping_col, GROUPING(grouping_col) FROM t GROUP BY grouping_col
----
SELECT uuid_generate_v4(), gen_random_uuid(), md5('x'), sha256('x'::bytea), encode(digest('x', 'sha1'), 'hex')
----
SELECT nextval('orders_id_seq'), currval('orders_id_seq'::regclass), setval('s', 100, false)
----
SELECT 'users'::regclass, 'int4'::regtype, 'now'::regproc, 'pg_catalog'::regnamespace, 'postgres'::regrole, 'eq'::regoper
----
SELECT oid::regclass::text FROM pg_class LIMIT 1
----
SELECT a.b[1].c, (a.b).c[2], (foo(x)).field[1:2] FROM t a
----
SELECT (SELECT 1) + (SELECT 2), (SELECT max(id) FROM t) * 2
----
SELECT CASE WHEN EXISTS (SELECT 1 FROM admins WHERE user_id = $1) THEN 'admin' ELSE 'user' END
----
SELECT IF_NULL_FUNC(x) FROM t
----
SELECT json_col->'a' IS NULL, (json_col->>'n')::int + 1 FROM t
----
SELECT DEFAULT_VALUE, "default" FROM t
----
SELECT  length ( 'abc' ) ,  char_length('abc'), octet_length('abc'), bit_length('abc'), character_length('x')
----
SELECT upper('a'), initcap('hello world'), left('abcdef', 2), right('abcdef', 2), repeat('ab', 3), reverse('abc'), split_part('a.b.c', '.', 2)
----
SELECT round(3.14159, 2), ceil(1.2), floor(-1.2), abs(-3), mod(10, 3), power(2, 8), sqrt(2), ln(10), log(100), exp(1), sign(-5), trunc(4.7)
----
SELECT date_trunc('hour', ts), date_bin('15 minutes', ts, TIMESTAMP '2001-01-01'), to_char(ts, 'YYYY-MM-DD HH24:MI'), to_timestamp(1700000000) FROM t
----
SELECT x::int AS "integer", y::"varchar" AS v, z::"MyType" FROM t
----
SELECT ARRAY[ROW(1, 'a'), ROW(2, 'b')]::my_pair[]
----
SELECT cardinality(ARRAY[1, 2]), array_position(ARRAY['a', 'b'], 'b'), array_remove(ARRAY[1, 2, 1], 1), array_cat(ARRAY[1], ARRAY[2])
----
SELECT a[$1], a[$1:$2], a[1:$3::int] FROM t
----
SELECT '1 day'::interval * 3, '2 hours'::interval / 2, date '2024-02-28' + interval '1 day'
----
SELECT COLLATION FOR (name) FROM users
----
SELECT x FROM t WHERE x IS JSON
----
SELECT 1 AS a, 2 b, 3 AS "c d", 4 AS e_f
----
SELECT t.x AS "t0_x", t.y AS "t0_y" FROM t AS t
----
SELECT CASE WHEN $1::int IS NULL THEN true ELSE tenant_id = $1::int END FROM orgs
----
SELECT MERGE_ACTION(), 1 FROM t
